//! # job-agent-chat
//!
//! Spec 004 on the runtime: a chat service where each message is routed by a light-tier
//! classifier to a job-search agent or an application-prep agent, each a full tool loop
//! ([`JobAgentChat`], [`Services`]) over the user's own records ([`ChatStore`]),
//! served through agent-server's OpenAI-compatible front so the chat clients people
//! already use work with it unchanged.
//!
//! - Jobs come from SerpAPI's Google Jobs, or named companies' job boards
//!   ([`providers`]); they are ranked by job-capabilities' composite ranker and the
//!   user's feedback ([`Ranking`]); matches go out on the console, email, Slack and
//!   Teams ([`notify`]).
//! - Application packages are written by the model and every sentence is checked
//!   against the profile: nothing the profile does not say is claimed.
//! - Everything is scoped by the user of the conversation: there is no process-wide
//!   "current profile" (spec 004's module-level global).
//!
//! User guide: `docs/job-agent-chat.md`.

mod agent;
pub mod dry_run;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod models;
pub mod notify;
mod prep;
pub mod providers;
mod ranking;
mod resume;
mod router;
mod store;
mod tools;

pub use agent::{ChatConfig, JobAgentChat};
pub use ranking::{JOBS_COLLECTION, Ranking};
pub use resume::take_resume;
pub use store::{ChatStore, Claim};
pub use tools::Services;

/// The requests the chat sends a model: the router's and the application writer's, for
/// reuse and for pinning them in tests.
pub mod prompts {
    pub use crate::prep::writer_request;
    pub use crate::router::route_request;
}
