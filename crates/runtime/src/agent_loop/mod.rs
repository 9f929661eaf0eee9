//! The agent loop: [`AgentRun`] (the state machine) and [`AgentLoop`] (its driver).

mod compaction;
mod driver;
mod run;
mod text_calls;

pub use driver::{AgentLoop, RunSaver};
pub use run::{AgentRun, Next, ToolCall, ToolCalls};
