//! Shared job-domain capabilities for the job products: resume text from documents, one
//! job model, ATS job-board clients, web search, career-page fetching with an address
//! guard, polite per-host HTTP, SMTP mail, deterministic salary parsing, table export
//! (CSV and XLSX), and retrieval (section-typed chunks, hybrid vector and full-text
//! search over agent-runtime's `VectorStore`).
//!
//! Every external service sits behind a trait or a client with a configurable base URL,
//! so a product can swap in a named fake for a dry run, and tests point clients at a
//! local server.

pub mod ats;
pub mod documents;
pub mod export;
pub mod fetch;
pub mod grounding;
pub mod html;
pub mod http;
pub mod job;
pub mod mail;
pub mod notify;
pub mod posting;
pub mod ranking;
pub mod retrieval;
pub mod salary;
pub mod search;
pub mod text;

pub use job::{JobSource, PayInterval, RawJob, Salary, SalaryOrigin};
