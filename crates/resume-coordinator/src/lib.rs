//! # resume-coordinator
//!
//! The resume product of spec 001 on the agent runtime, hosted by `agent-server` under
//! `/api/resume` (the contract is `docs/resume-api.md`).
//!
//! A coordinator runs the stages `intake → research → interview →
//! gap_analysis → blueprint → writing → production → complete`, with three agents:
//!
//! - the Strategist analyzes the job, interviews the candidate (gates
//!   `questionnaire_{n}` and `positioning_q_{n}`), finds the gaps and designs the blueprint;
//! - the Craftsman writes each section with evidence ids, checks it and presents it
//!   (gate `section_review_{section}`);
//! - the Producer assembles and reviews the resume and sends sections back to the
//!   Craftsman over the agent bus.
//!
//! The stages are the nodes of a checkpointed graph whose state is the session's, and the
//! agents run durably inside them: a restarted server continues a session at its last
//! stage boundary or agent round. The gates are declared once with their answer types;
//! the coordinator owns those between agents (`architect_review`, `quality_review`),
//! puts the approved sections into the candidate's own resume (contact lines, roles with
//! their dates, education and every other section stay), and writes the DOCX and reads
//! it back against that structure. [`ResumeProduct`] is the `agent-server`
//! product; [`dry_run`] answers from the recorded model answers in `fixtures/resume/`.

pub mod dry_run;
pub mod types;

mod coordinator;
mod craftsman;
mod document;
mod docx;
mod flags;
mod gates;
mod intake;
mod layout;
mod llm;
mod master;
mod messages;
mod producer;
mod product;
mod production;
mod strategist;

pub use product::ResumeProduct;
pub use types::{Flags, ResumeEvent, ResumeState, Stage, StartRequest};
