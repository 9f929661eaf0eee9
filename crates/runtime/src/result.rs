//! What an agent invocation returns: [`AgentResult`].

use crate::bus::AgentMessage;
use agent_llm::{Limit, LlmError, Message, Usage};
use serde_json::{Map, Value};
use std::time::Duration;

/// Why the loop stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum StopCause {
    /// The model answered without calling tools.
    Completed,
    /// `max_rounds` model calls were made.
    MaxRounds,
    /// The overall timeout passed.
    Timeout(Duration),
    /// The session was cancelled.
    Cancelled,
    /// A model call failed after its retries.
    ModelError(LlmError),
    /// A cost or budget limit refused the next model call.
    LimitExceeded(Limit),
    /// The run's progress could not be saved (a durable run in a graph node); the reason.
    Checkpoint(String),
    /// The model's answers kept running into the output-token limit (`max_tokens`, if the
    /// request set one), after being asked to answer shorter.
    CutOff {
        /// The limit of the requests.
        max_tokens: Option<u32>,
    },
    /// Asked to answer in words (its tools withheld after it repeated its calls), the
    /// model kept writing tool calls as text instead, also after being told why.
    NoAnswer,
    /// A tool ended the run ([`AgentContext::end_run`](crate::AgentContext::end_run)):
    /// its work is done, or it hands the work on (the page changed, a person takes
    /// over). The reason it gave, for the caller to route on.
    Ended(String),
}

/// The outcome of one agent invocation. Whatever stopped it, everything gathered so far
/// is here: scratchpad, transcript, messages sent and usage.
#[derive(Debug, Clone)]
pub struct AgentResult {
    /// The scratchpad as the invocation left it.
    pub scratchpad: Map<String, Value>,
    /// Messages the agent sent.
    pub messages_out: Vec<AgentMessage>,
    /// Tokens used by all model calls.
    pub usage: Usage,
    /// Tokens used by each round's model call.
    pub round_usage: Vec<Usage>,
    /// Model calls made.
    pub rounds_used: u32,
    /// The model's final answer, when it gave one.
    pub final_text: Option<String>,
    /// Why it stopped.
    pub stop: StopCause,
    /// The transcript (after any compaction).
    pub transcript: Vec<Message>,
}

impl AgentResult {
    /// Whether the model finished on its own.
    pub fn is_complete(&self) -> bool {
        self.stop == StopCause::Completed
    }
}
