//! # resume-coordinator
//!
//! The resume product of spec 001 on the agent runtime, hosted by `agent-server` under
//! `/api/resume` (the contract is `docs/resume-api.md`).
//!
//! A coordinator ([`coordinator`]) runs the stages `intake → research → interview →
//! gap_analysis → blueprint → writing → production → complete`, with three agents:
//!
//! - the [`strategist`] analyzes the job, interviews the candidate (gates
//!   `questionnaire_{n}` and `positioning_q_{n}`), finds the gaps and designs the blueprint;
//! - the [`craftsman`] writes each section with evidence ids, checks it and presents it
//!   (gate `section_review_{section}`);
//! - the [`producer`] assembles and reviews the resume and sends sections back to the
//!   Craftsman over the agent bus.
//!
//! The stages are the nodes of a checkpointed graph whose state is the session's, and the
//! agents run durably inside them: a restarted server continues a session at its last
//! stage boundary or agent round. The gates are declared once with their answer types
//! ([`gates`]); the coordinator owns those between agents (`architect_review`,
//! `quality_review`),
//! puts the approved sections into the candidate's own resume ([`layout`], [`document`]:
//! contact lines, roles with their dates, education and every other section stay), and
//! writes the DOCX ([`docx`]) and reads it back against that structure. [`ResumeProduct`] is the `agent-server`
//! product; [`dry_run`] answers from the recorded model answers in `fixtures/resume/`.

pub mod coordinator;
pub mod craftsman;
pub mod document;
pub mod docx;
pub mod dry_run;
pub mod flags;
pub mod gates;
pub mod intake;
pub mod layout;
pub mod llm;
pub mod master;
pub mod messages;
pub mod producer;
pub mod product;
pub mod production;
pub mod strategist;
pub mod types;

pub use product::ResumeProduct;
pub use types::{Flags, ResumeEvent, ResumeState, Stage, StartRequest};
