//! # agent-runtime
//!
//! The domain-agnostic core every product runs on, generic over the product's state type
//! `S` and event type `E`: typed tools, the agent loop, the per-invocation context, gates,
//! the bus, the state graph with checkpoints, cost and budget guards, and tracing.
//!
//! It depends on `agent-llm` and on no product, web framework or database.

pub mod bus;
pub mod cache;
pub mod checkpoint;
pub mod documents;
pub mod graph;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "otel")]
pub mod otel;
pub mod process_metrics;
pub mod sessions;
pub mod vectors;

mod events;
mod gates;
mod identity;
mod invocation_calls;
mod json_len;
mod node_failure;

pub use events::{CollectingSink, EventSink, LoopEvent, LoopObserver};
pub use gates::{GateError, GateListener, GateRegistry, GateRequest, PendingGate};
pub use identity::AgentIdentity;
pub use json_len::json_len;

mod agent_loop;
mod ask;
mod chat_span;
mod config;
mod context;
mod cost;
mod cost_summary;
mod metered;
mod outage;
mod prefix_reuse;
mod progress;
mod result;
mod session;
mod session_parts;
mod state;
mod tool;
mod typed_gate;

pub use agent_loop::{AgentLoop, AgentRun, Next, RunSaver, ToolCall, ToolCalls};
pub use ask::Ask;
pub use config::{AgentConfig, Compaction, PromptError, render_placeholders};
pub use context::AgentContext;
pub use cost::{
    CostLimits, CostMeter, CostSnapshot, UNPRICED_TOKENS_PER_USD, unpriced_token_limit,
};
pub use cost_summary::CostSummary;
pub use metered::MeteredModel;
pub use outage::ModelOutages;
pub use prefix_reuse::PrefixReuse;
pub use process_metrics::MeterLabels;
pub use progress::ModelProgress;
pub use result::{AgentResult, StopCause};
pub use session::{Session, SessionMarks};
pub use state::{Scratchpad, SharedState};
pub use tool::{AgentTool, ToolError, TypedTool, tool};
pub use typed_gate::{AnswerError, Gate, GateSpec, read_as};
