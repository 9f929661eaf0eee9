//! How an agent is set up: [`AgentConfig`].

use crate::identity::AgentIdentity;
use crate::tool::AgentTool;
use agent_llm::RetryPolicy;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// When the loop compacts the transcript (spec 001 section 3: past 30 messages, keep the
/// opening instruction and the last 20).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compaction {
    /// Compact when the transcript has more messages than this.
    pub threshold: usize,
    /// Messages to keep at the end (rounded so no tool result loses its call).
    pub keep_recent: usize,
}

impl Default for Compaction {
    fn default() -> Self {
        Compaction {
            threshold: 30,
            keep_recent: 20,
        }
    }
}

/// A `{{placeholder}}` in a prompt had no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("prompt placeholders without a value: {}", missing.join(", "))]
pub struct PromptError {
    /// The names with no value.
    pub missing: Vec<String>,
}

/// An agent: identity, prompt, tools, model and limits.
pub struct AgentConfig<S, E> {
    /// Who it is.
    pub identity: AgentIdentity,
    /// The system prompt (render `{{placeholders}}` with [`AgentConfig::render_prompt`]).
    pub system_prompt: String,
    /// Its tools.
    pub tools: Vec<Arc<dyn AgentTool<S, E>>>,
    /// Model for the main loop; `None` uses the chat model's default.
    pub model: Option<String>,
    /// Most model calls per invocation.
    pub max_rounds: u32,
    /// Per tool call limit, in working time (time waiting at a gate or for a model slot
    /// does not count).
    pub round_timeout: Duration,
    /// Whole-invocation limit.
    pub overall_timeout: Duration,
    /// Output tokens per model call.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Transcript compaction; `None` never compacts.
    pub compaction: Option<Compaction>,
    /// Most tool calls run from one answer; the model is told to make the others in its
    /// next turn. `None`: no limit.
    pub max_calls_per_turn: Option<usize>,
    /// Whether the last model call `max_rounds` allows is made without tools, the model
    /// told to answer from what it has (see [`AgentConfig::with_answer_at_last_round`]).
    pub answer_at_last_round: bool,
    /// Whether the calls of one answer run one after the other, each seeing what the one
    /// before did, instead of at once (see [`AgentConfig::with_sequential_tools`]).
    pub sequential_tools: bool,
    /// Whether a call that repeats one of the previous turn is refused (the default) or
    /// run again (see [`AgentConfig::with_repeated_calls`]).
    pub refuse_repeated_calls: bool,
    /// Retries of failed model calls made by the loop itself. None by default: the
    /// provider clients (`AnthropicModel`, `OpenAiModel`) already retry every call with
    /// agent-llm's `RetryPolicy` (3 attempts, spec 001), and two layers would multiply the
    /// attempts. Set it for models that do not retry on their own (custom models, test
    /// doubles with injected faults).
    pub retry: RetryPolicy,
}

impl<S, E> Clone for AgentConfig<S, E> {
    fn clone(&self) -> Self {
        AgentConfig {
            identity: self.identity.clone(),
            system_prompt: self.system_prompt.clone(),
            tools: self.tools.clone(),
            model: self.model.clone(),
            max_rounds: self.max_rounds,
            round_timeout: self.round_timeout,
            overall_timeout: self.overall_timeout,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            compaction: self.compaction,
            max_calls_per_turn: self.max_calls_per_turn,
            answer_at_last_round: self.answer_at_last_round,
            sequential_tools: self.sequential_tools,
            refuse_repeated_calls: self.refuse_repeated_calls,
            retry: self.retry.clone(),
        }
    }
}

impl<S, E> std::fmt::Debug for AgentConfig<S, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        f.debug_struct("AgentConfig")
            .field("identity", &self.identity)
            .field("tools", &tools)
            .field("model", &self.model)
            .field("max_rounds", &self.max_rounds)
            .finish_non_exhaustive()
    }
}

impl<S, E> AgentConfig<S, E> {
    /// An agent with no tools, 10 rounds, 2-minute tool calls, a 10-minute invocation,
    /// default compaction, and no retries of its own (the provider clients retry).
    ///
    /// ```
    /// use agent_runtime::{AgentConfig, AgentIdentity};
    /// let config: AgentConfig<(), ()> = AgentConfig::new(AgentIdentity::new("writer", "demo"), "You write.")
    ///     .with_max_rounds(5);
    /// assert_eq!(config.max_rounds, 5);
    /// ```
    pub fn new(identity: AgentIdentity, system_prompt: impl Into<String>) -> Self {
        AgentConfig {
            identity,
            system_prompt: system_prompt.into(),
            tools: Vec::new(),
            model: None,
            max_rounds: 10,
            round_timeout: Duration::from_secs(120),
            overall_timeout: Duration::from_secs(600),
            max_tokens: Some(4096),
            temperature: None,
            compaction: Some(Compaction::default()),
            max_calls_per_turn: None,
            answer_at_last_round: false,
            sequential_tools: false,
            refuse_repeated_calls: true,
            retry: RetryPolicy::none(),
        }
    }

    /// Adds a tool.
    pub fn with_tool(mut self, tool: impl AgentTool<S, E> + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Adds tools already shared, such as an MCP server's (`McpClient::tools`, feature
    /// `mcp`).
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = Arc<dyn AgentTool<S, E>>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Sets the main-loop model.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the round limit.
    pub fn with_max_rounds(mut self, rounds: u32) -> Self {
        self.max_rounds = rounds;
        self
    }

    /// Sets the per-tool-call timeout.
    pub fn with_round_timeout(mut self, timeout: Duration) -> Self {
        self.round_timeout = timeout;
        self
    }

    /// Sets the whole-invocation timeout.
    pub fn with_overall_timeout(mut self, timeout: Duration) -> Self {
        self.overall_timeout = timeout;
        self
    }

    /// Sets or disables compaction.
    pub fn with_compaction(mut self, compaction: Option<Compaction>) -> Self {
        self.compaction = compaction;
        self
    }

    /// Runs at most `calls` tool calls from one answer (a model that asks for a dozen at
    /// once is told to make the rest in its next turn).
    pub fn with_max_calls_per_turn(mut self, calls: usize) -> Self {
        self.max_calls_per_turn = Some(calls.max(1));
        self
    }

    /// Makes the last model call `max_rounds` allows without tools, telling the model it
    /// is the last step: a model that keeps calling tools (small ones do) answers from
    /// what they returned instead of the run stopping with no answer. For agents whose
    /// answer a person reads, such as a chat.
    pub fn with_answer_at_last_round(mut self) -> Self {
        self.answer_at_last_round = true;
        self
    }

    /// Runs the calls of one answer one after the other, in the order the model wrote
    /// them, each seeing what the one before did: for tools that act on one thing
    /// (a browser, a document) where order matters. A call that ends the run
    /// ([`AgentContext::end_run`](crate::AgentContext::end_run)) leaves the calls after it
    /// unrun; the model's transcript says so.
    pub fn with_sequential_tools(mut self) -> Self {
        self.sequential_tools = true;
        self
    }

    /// Runs a call that repeats one of the previous turn, instead of refusing it with a
    /// note: for tools whose result changes from one call to the next (clicking "next
    /// page" again), or whose repeats a tool of the product's own judges.
    pub fn with_repeated_calls(mut self) -> Self {
        self.refuse_repeated_calls = false;
        self
    }

    /// Sets the retry policy for model calls.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The config with its system prompt rendered (see [`AgentConfig::render_prompt`]).
    /// An agent whose prompt still has `{{placeholders}}` when it runs gets a warning in
    /// the log, and the model sees them as they are.
    ///
    /// ```
    /// use agent_runtime::{AgentConfig, AgentIdentity};
    /// let config: AgentConfig<(), ()> = AgentConfig::new(AgentIdentity::new("w", "d"), "Hello {{name}}.")
    ///     .rendered(|_| Some("Ada".to_string()))
    ///     .unwrap();
    /// assert_eq!(config.system_prompt, "Hello Ada.");
    /// ```
    pub fn rendered(mut self, vars: impl Fn(&str) -> Option<String>) -> Result<Self, PromptError> {
        self.system_prompt = self.render_prompt(vars)?;
        Ok(self)
    }

    /// Replaces the `{{name}}` placeholders of the system prompt with values from `vars`.
    /// A placeholder with no value is an error naming it.
    ///
    /// ```
    /// use agent_runtime::{AgentConfig, AgentIdentity};
    /// let config: AgentConfig<(), ()> = AgentConfig::new(AgentIdentity::new("w", "d"), "Write for {{audience}} in {{tone}}.");
    /// let vars = |name: &str| match name { "audience" => Some("engineers".to_string()), "tone" => Some("plain words".to_string()), _ => None };
    /// assert_eq!(config.render_prompt(vars).unwrap(), "Write for engineers in plain words.");
    /// assert!(config.render_prompt(|_| None).unwrap_err().missing.contains(&"tone".to_string()));
    /// ```
    pub fn render_prompt(
        &self,
        vars: impl Fn(&str) -> Option<String>,
    ) -> Result<String, PromptError> {
        render_placeholders(&self.system_prompt, vars)
    }
}

/// Replaces `{{name}}` (whitespace inside the braces allowed) with `vars(name)`.
pub fn render_placeholders(
    template: &str,
    vars: impl Fn(&str) -> Option<String>,
) -> Result<String, PromptError> {
    let mut out = String::with_capacity(template.len());
    let mut missing = BTreeSet::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start + 2..].find("}}") else {
            break;
        };
        out.push_str(&rest[..start]);
        let name = rest[start + 2..start + 2 + len].trim();
        match vars(name) {
            Some(value) => out.push_str(&value),
            None => {
                missing.insert(name.to_owned());
            }
        }
        rest = &rest[start + 2 + len + 2..];
    }
    out.push_str(rest);
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(PromptError {
            missing: missing.into_iter().collect(),
        })
    }
}
