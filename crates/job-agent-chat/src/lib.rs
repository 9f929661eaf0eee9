//! # job-agent-chat
//!
//! Spec 004 on the runtime: a chat service where each message is routed by a light-tier
//! classifier ([`router`]) to a job-search agent or an application-prep agent, each a
//! full tool loop ([`agent`], [`tools`]) over the user's own records ([`store`]),
//! served through agent-server's OpenAI-compatible front so the chat clients people
//! already use work with it unchanged.
//!
//! - Jobs come from SerpAPI's Google Jobs, or named companies' job boards
//!   ([`providers`]); they are ranked by job-capabilities' composite ranker and the
//!   user's feedback ([`ranking`]); matches go out on the console, email, Slack and
//!   Teams ([`notify`]).
//! - Application packages are written by the model and every sentence is checked
//!   against the profile ([`prep`]): nothing the profile does not say is claimed.
//! - Everything is scoped by the user of the conversation: there is no process-wide
//!   "current profile" (spec 004's module-level global).
//!
//! User guide: `docs/job-agent-chat.md`.

pub mod agent;
pub mod dry_run;
pub mod models;
pub mod notify;
pub mod prep;
pub mod providers;
pub mod ranking;
pub mod resume;
pub mod router;
pub mod store;
pub mod tools;

pub use agent::{ChatConfig, JobAgentChat};
pub use store::ChatStore;
pub use tools::Services;
