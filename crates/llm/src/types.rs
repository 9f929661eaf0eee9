//! Provider-neutral chat types.
//!
//! Each provider maps these to its wire format and back. Usage follows Anthropic's
//! convention: `input_tokens` counts only input tokens that were neither read from nor
//! written to the prompt cache, so `input + cache_read + cache_creation` is the whole prompt.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::ops::{Add, AddAssign};
use std::sync::Arc;

/// Who wrote a message. The system prompt is not a message; see [`ChatRequest::system`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user, or the program speaking for it (tool results are sent as the user).
    User,
    /// The model.
    Assistant,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// The model asks to call a tool.
    ToolUse {
        /// Provider-assigned call id, echoed back in the [`ContentBlock::ToolResult`].
        id: String,
        /// Tool name.
        name: String,
        /// Arguments. An object normally; a JSON string holds arguments the provider sent
        /// that were not valid JSON, kept verbatim so the caller can report them.
        input: Value,
    },
    /// The result of a tool call, sent back in a user message.
    ToolResult {
        /// The id of the [`ContentBlock::ToolUse`] this answers.
        tool_use_id: String,
        /// The result, as text (JSON results are serialized).
        content: String,
        /// Whether the tool failed; the model sees the content as an error.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    /// Extended-thinking output (Anthropic). Sent back unchanged in later turns.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// Signature the provider requires when the block is sent back.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// A provider-specific block this crate does not model (server tool results,
    /// redacted thinking, ...), kept verbatim so nothing is lost. Providers that do not
    /// know it skip it when sending.
    Opaque {
        /// The block exactly as the provider sent it.
        raw: Value,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// A tool result block.
    pub fn tool_result(tool_use_id: impl Into<String>, content: impl Into<String>) -> Self {
        ContentBlock::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error: false,
        }
    }

    /// A tool result block reporting a failure.
    pub fn tool_error(tool_use_id: impl Into<String>, content: impl Into<String>) -> Self {
        ContentBlock::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error: true,
        }
    }
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its blocks, in order.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user message with one text block.
    ///
    /// ```
    /// use agent_llm::{Message, Role};
    /// let m = Message::user("hello");
    /// assert_eq!(m.role, Role::User);
    /// assert_eq!(m.text(), "hello");
    /// ```
    pub fn user(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![ContentBlock::text(text)],
        }
    }

    /// An assistant message with one text block.
    pub fn assistant(text: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::text(text)],
        }
    }

    /// A message made of the given blocks.
    pub fn new(role: Role, content: Vec<ContentBlock>) -> Self {
        Message { role, content }
    }

    /// The text blocks joined together.
    pub fn text(&self) -> String {
        join_text(&self.content)
    }
}

impl From<&str> for Message {
    /// A user message with this text.
    fn from(text: &str) -> Self {
        Message::user(text)
    }
}

impl From<String> for Message {
    /// A user message with this text.
    fn from(text: String) -> Self {
        Message::user(text)
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Name, `[a-zA-Z0-9_-]{1,64}`.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments (an object schema). Shared, so requests that offer
    /// the same tools round after round do not copy the schema.
    pub input_schema: Arc<Value>,
}

impl ToolDefinition {
    /// A tool definition.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: impl Into<Arc<Value>>,
    ) -> Self {
        ToolDefinition {
            name: name.into(),
            description: description.into(),
            input_schema: input_schema.into(),
        }
    }

    /// A tool whose argument schema is derived from a Rust type with schemars.
    ///
    /// ```
    /// #[derive(schemars::JsonSchema, serde::Deserialize)]
    /// struct GetTime { timezone: String }
    /// let tool = agent_llm::ToolDefinition::for_type::<GetTime>("get_time", "Current time");
    /// assert_eq!(tool.input_schema["required"][0], "timezone");
    /// ```
    pub fn for_type<T: schemars::JsonSchema>(
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        ToolDefinition::new(name, description, crate::structured::schema_of::<T>())
    }
}

/// Whether and how the model must call tools.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must call some tool (OpenAI: `required`).
    Any,
    /// The model must not call tools.
    None,
    /// The model must call this tool.
    Tool {
        /// Tool name.
        name: String,
    },
}

/// The shape the answer must take.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Free text.
    #[default]
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON that matches a schema.
    JsonSchema {
        /// Schema name, `[a-zA-Z0-9_-]{1,64}`.
        name: String,
        /// The schema.
        schema: Value,
        /// Whether the provider must enforce the schema exactly (OpenAI `strict`).
        strict: bool,
    },
}

fn no_tools(tools: &Arc<[ToolDefinition]>) -> bool {
    tools.is_empty()
}

/// A request to a chat model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Model id; `None` uses the provider's default model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// System prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Tools the model may call. Shared: an agent's every request holds the same
    /// definitions, and cloning a request copies none of them.
    #[serde(default, skip_serializing_if = "no_tools")]
    pub tools: Arc<[ToolDefinition]>,
    /// Tool choice; `None` lets the provider decide (auto when tools are given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Maximum output tokens; `None` uses the provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Answer format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// The conversation, oldest first. Written after everything that stays the same from
    /// one call of a loop to the next, so a saved run's text changes at its end (see
    /// `agent_runtime::checkpoint`).
    pub messages: Vec<Message>,
    /// Index in `messages` of the last message the next call repeats unchanged (an agent
    /// loop's whole conversation so far). Providers that cache by marks (Anthropic's
    /// `cache_control`) mark it, so the next call reads everything up to it from the cache;
    /// `None` for a one-off call, whose messages are not worth writing to a cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_breakpoint: Option<usize>,
}

impl ChatRequest {
    /// A request with the given conversation and nothing else set.
    ///
    /// ```
    /// use agent_llm::{ChatRequest, Message};
    /// let req = ChatRequest::new(vec![Message::user("hi")])
    ///     .with_system("Be brief.")
    ///     .with_max_tokens(100);
    /// assert_eq!(req.max_tokens, Some(100));
    /// ```
    pub fn new(messages: Vec<Message>) -> Self {
        ChatRequest {
            messages,
            ..ChatRequest::default()
        }
    }

    /// A request with one user message.
    pub fn from_prompt(prompt: impl Into<String>) -> Self {
        ChatRequest::new(vec![Message::user(prompt)])
    }

    /// Sets the model id.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the system prompt.
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Adds a tool.
    pub fn with_tool(mut self, tool: ToolDefinition) -> Self {
        self.add_tool(tool);
        self
    }

    /// Adds a tool to a request being built.
    ///
    /// ```
    /// use agent_llm::{ChatRequest, ToolDefinition};
    /// let mut req = ChatRequest::from_prompt("hi");
    /// req.add_tool(ToolDefinition::new("search", "Searches.", serde_json::json!({"type": "object"})));
    /// assert_eq!(req.tools[0].name, "search");
    /// ```
    pub fn add_tool(&mut self, tool: ToolDefinition) {
        self.tools = self.tools.iter().cloned().chain([tool]).collect();
    }

    /// Sets the tool choice.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Sets the maximum output tokens.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the temperature.
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the answer format.
    pub fn with_response_format(mut self, format: ResponseFormat) -> Self {
        self.response_format = Some(format);
        self
    }

    /// Marks the conversation as it stands as the prefix of the next call
    /// ([`cache_breakpoint`](Self::cache_breakpoint) on the last message).
    ///
    /// ```
    /// use agent_llm::{ChatRequest, Message};
    /// let req = ChatRequest::new(vec![Message::user("a"), Message::user("b")]).caching_conversation();
    /// assert_eq!(req.cache_breakpoint, Some(1));
    /// ```
    pub fn caching_conversation(mut self) -> Self {
        self.cache_breakpoint = self.messages.len().checked_sub(1);
        self
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It hit `max_tokens`.
    MaxTokens,
    /// It produced a stop sequence.
    StopSequence,
    /// It wants tool results.
    ToolUse,
    /// It declined to answer.
    Refusal,
    /// A content filter cut the answer (OpenAI `content_filter`).
    ContentFilter,
    /// A long-running server turn paused (Anthropic `pause_turn`); send the reply back to continue.
    PauseTurn,
    /// A reason this crate does not know, verbatim.
    Other(String),
}

/// Token counts of one or more calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens not read from or written to the cache.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens (reasoning included).
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
}

impl Usage {
    /// All input tokens, cached or not.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens
    }

    /// Input and output tokens together.
    ///
    /// ```
    /// let u = agent_llm::Usage { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 2, cache_creation_input_tokens: 0 };
    /// assert_eq!(u.total_tokens(), 17);
    /// assert_eq!((u + u).output_tokens, 10);
    /// ```
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens() + self.output_tokens
    }

    /// The tokens of `self` beyond `earlier`'s, each count at least zero.
    ///
    /// ```
    /// let later = agent_llm::Usage { input_tokens: 10, output_tokens: 5, ..Default::default() };
    /// let earlier = agent_llm::Usage { input_tokens: 4, output_tokens: 9, ..Default::default() };
    /// assert_eq!((later.saturating_sub(&earlier).input_tokens, later.saturating_sub(&earlier).output_tokens), (6, 0));
    /// ```
    pub fn saturating_sub(&self, earlier: &Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            cache_read_input_tokens: self
                .cache_read_input_tokens
                .saturating_sub(earlier.cache_read_input_tokens),
            cache_creation_input_tokens: self
                .cache_creation_input_tokens
                .saturating_sub(earlier.cache_creation_input_tokens),
        }
    }
}

impl Add for Usage {
    type Output = Usage;
    fn add(mut self, rhs: Usage) -> Usage {
        self += rhs;
        self
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.cache_read_input_tokens += rhs.cache_read_input_tokens;
        self.cache_creation_input_tokens += rhs.cache_creation_input_tokens;
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Usage>>(iter: I) -> Usage {
        iter.fold(Usage::default(), Add::add)
    }
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// Provider-assigned response id.
    #[serde(default)]
    pub id: String,
    /// The model that answered, as the provider named it.
    #[serde(default)]
    pub model: String,
    /// The answer's blocks.
    pub content: Vec<ContentBlock>,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Tokens used.
    #[serde(default)]
    pub usage: Usage,
}

impl ChatResponse {
    /// The text blocks joined together.
    pub fn text(&self) -> String {
        join_text(&self.content)
    }

    /// The tool calls, in order, as `(id, name, input)`.
    pub fn tool_calls(&self) -> Vec<(&str, &str, &Value)> {
        self.content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolUse { id, name, input } => {
                    Some((id.as_str(), name.as_str(), input))
                }
                _ => None,
            })
            .collect()
    }

    /// The answer as an assistant message, ready to append to the conversation.
    pub fn to_message(&self) -> Message {
        Message::new(Role::Assistant, self.content.clone())
    }
}

fn join_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}
