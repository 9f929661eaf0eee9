//! [`TestModel`]: a model that exercises an agent's tools with no script at all.

use super::log::{RequestLog, estimate_tokens};
use super::schema_values::value_for_schema;
use crate::error::LlmError;
use crate::model::{ChatModel, StructuredOutputMode};
use crate::types::{
    ChatRequest, ChatResponse, ContentBlock, Message, ResponseFormat, Role, StopReason, ToolChoice,
    ToolDefinition, Usage,
};
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A [`ChatModel`] that calls the tools it is offered with arguments generated from their
/// schemas, then answers; after pydantic-ai's `TestModel`.
///
/// - If the request forces a tool ([`ToolChoice::Tool`], which is how
///   [`crate::structured`] asks for structured output in
///   [`StructuredOutputMode::ForcedTool`]), it calls just that tool.
/// - Else, if tools are offered, `tool_choice` is not [`ToolChoice::None`] and the last
///   message carries no tool result, it calls every offered tool (or those chosen with
///   [`with_call_tools`](Self::with_call_tools)) at once, ids `test_call_1`, `test_call_2`, ...,
///   arguments from [`value_for_schema`] or [`with_tool_arguments`](Self::with_tool_arguments)
///   ([`StopReason::ToolUse`]).
/// - Otherwise it answers ([`StopReason::EndTurn`]): a schema-valid JSON document when the
///   request asks for [`ResponseFormat::JsonSchema`]; else the text set with
///   [`with_final_text`](Self::with_final_text); else `{"tool_results":{"<tool>":<result>,..}}`
///   summarizing the results in the last message, or `success (no tool calls)`.
///
/// Usage is a deterministic estimate: a token per four characters of input and of output.
/// Requests are recorded; clones share the log.
///
/// ```
/// use agent_llm::{ChatModel, ChatRequest, ContentBlock, Message, Role, StopReason, ToolDefinition};
/// use agent_llm::testing::TestModel;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// #[derive(schemars::JsonSchema)]
/// struct GetTime { timezone: String }
/// let model = TestModel::new();
/// let mut request = ChatRequest::from_prompt("What time is it?")
///     .with_tool(ToolDefinition::for_type::<GetTime>("get_time", "Current time"));
///
/// let first = model.chat(&request.clone()).await.unwrap();
/// assert_eq!(first.stop_reason, StopReason::ToolUse);
/// let (id, name, input) = first.tool_calls()[0];
/// assert_eq!((id, name), ("test_call_1", "get_time"));
/// assert_eq!(input["timezone"], "a");
///
/// request.messages.push(first.to_message());
/// request.messages.push(Message::new(Role::User, vec![ContentBlock::tool_result("test_call_1", "12:00")]));
/// let second = model.chat(&request).await.unwrap();
/// assert_eq!(second.stop_reason, StopReason::EndTurn);
/// assert_eq!(second.text(), r#"{"tool_results":{"get_time":"12:00"}}"#);
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct TestModel {
    call_tools: Option<Vec<String>>,
    tool_arguments: BTreeMap<String, Value>,
    final_text: Option<String>,
    default_model: String,
    mode: StructuredOutputMode,
    log: RequestLog,
}

impl Default for TestModel {
    fn default() -> Self {
        TestModel {
            call_tools: None,
            tool_arguments: BTreeMap::new(),
            final_text: None,
            default_model: "test".to_owned(),
            mode: StructuredOutputMode::default(),
            log: RequestLog::default(),
        }
    }
}

impl TestModel {
    /// Calls every offered tool, then summarizes the results.
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls only the offered tools with these names (an empty list: no tool at all).
    /// A forced tool is called whatever this says.
    ///
    /// ```
    /// let model = agent_llm::testing::TestModel::new().with_call_tools(["search"]);
    /// # let _ = model;
    /// ```
    pub fn with_call_tools<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.call_tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Calls `tool` with these arguments instead of generated ones.
    pub fn with_tool_arguments(mut self, tool: impl Into<String>, arguments: Value) -> Self {
        self.tool_arguments.insert(tool.into(), arguments);
        self
    }

    /// The final answer's text when no JSON schema is asked for.
    ///
    /// ```
    /// let model = agent_llm::testing::TestModel::new().with_final_text("All done.");
    /// # let _ = model;
    /// ```
    pub fn with_final_text(mut self, text: impl Into<String>) -> Self {
        self.final_text = Some(text.into());
        self
    }

    /// The model named in responses to requests that name none, and reported by
    /// [`ChatModel::default_model`] (default `test`).
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.default_model = model.into();
        self
    }

    /// Sets what [`ChatModel::structured_output_mode`] reports (default
    /// [`StructuredOutputMode::ForcedTool`]); `JsonSchema` makes structured-output callers
    /// send a response format, answered with a generated JSON document.
    pub fn with_structured_output_mode(mut self, mode: StructuredOutputMode) -> Self {
        self.mode = mode;
        self
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.log.requests()
    }

    /// The most recent request, if any.
    pub fn last_request(&self) -> Option<ChatRequest> {
        self.log.last()
    }

    /// How many calls were made.
    pub fn call_count(&self) -> usize {
        self.log.len()
    }

    /// The tools to call for this request (empty: answer instead).
    fn tools_to_call<'r>(
        &self,
        request: &'r ChatRequest,
    ) -> Result<Vec<&'r ToolDefinition>, LlmError> {
        match &request.tool_choice {
            Some(ToolChoice::Tool { name }) => {
                match request.tools.iter().find(|tool| &tool.name == name) {
                    Some(tool) => Ok(vec![tool]),
                    None => Err(LlmError::InvalidRequest {
                        status: 400,
                        message: format!(
                            "TestModel: tool_choice names `{name}`, which is not offered"
                        ),
                    }),
                }
            }
            Some(ToolChoice::None) => Ok(Vec::new()),
            _ if last_tool_results(request).next().is_some() => Ok(Vec::new()),
            _ => Ok(request
                .tools
                .iter()
                .filter(|tool| {
                    self.call_tools
                        .as_ref()
                        .is_none_or(|names| names.contains(&tool.name))
                })
                .collect()),
        }
    }

    fn final_text(&self, request: &ChatRequest) -> String {
        if let Some(ResponseFormat::JsonSchema { schema, .. }) = &request.response_format {
            return value_for_schema(schema).to_string();
        }
        if let Some(text) = &self.final_text {
            return text.clone();
        }
        let mut results = Map::new();
        for (tool_use_id, content) in last_tool_results(request) {
            let key = tool_name(request, tool_use_id)
                .unwrap_or(tool_use_id)
                .to_owned();
            let value =
                serde_json::from_str(content).unwrap_or_else(|_| Value::String(content.to_owned()));
            match results.get_mut(&key) {
                Some(Value::Array(values)) => values.push(value),
                Some(previous) => *previous = Value::Array(vec![previous.take(), value]),
                None => {
                    results.insert(key, value);
                }
            }
        }
        if results.is_empty() {
            "success (no tool calls)".to_owned()
        } else {
            serde_json::json!({ "tool_results": results }).to_string()
        }
    }
}

/// The `(tool_use_id, content)` of the tool results in the last message, if it is the user's.
fn last_tool_results(request: &ChatRequest) -> impl Iterator<Item = (&str, &str)> {
    request
        .messages
        .last()
        .filter(|message| message.role == Role::User)
        .into_iter()
        .flat_map(|message| message.content.iter())
        .filter_map(|block| match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                ..
            } => Some((tool_use_id.as_str(), content.as_str())),
            _ => None,
        })
}

/// The name of the tool call with this id in the conversation.
fn tool_name<'r>(request: &'r ChatRequest, tool_use_id: &str) -> Option<&'r str> {
    request
        .messages
        .iter()
        .rev()
        .flat_map(|message| message.content.iter())
        .find_map(|block| match block {
            ContentBlock::ToolUse { id, name, .. } if id == tool_use_id => Some(name.as_str()),
            _ => None,
        })
}

fn message_chars(message: &Message) -> usize {
    message
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
            ContentBlock::ToolResult { content, .. } => content.len(),
            ContentBlock::Thinking { thinking, .. } => thinking.len(),
            ContentBlock::Opaque { raw } => raw.to_string().len(),
        })
        .sum()
}

fn input_chars(request: &ChatRequest) -> usize {
    let system = request.system.as_ref().map_or(0, String::len);
    let messages: usize = request.messages.iter().map(message_chars).sum();
    let tools: usize = request
        .tools
        .iter()
        .map(|tool| tool.name.len() + tool.description.len() + tool.input_schema.to_string().len())
        .sum();
    system + messages + tools
}

#[async_trait]
impl ChatModel for TestModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let call = self.log.record(request);
        let tools = self.tools_to_call(request)?;
        let (content, stop_reason) = if tools.is_empty() {
            (
                vec![ContentBlock::text(self.final_text(request))],
                StopReason::EndTurn,
            )
        } else {
            let calls = tools
                .iter()
                .enumerate()
                .map(|(index, tool)| ContentBlock::ToolUse {
                    id: format!("test_call_{}", index + 1),
                    name: tool.name.clone(),
                    input: self
                        .tool_arguments
                        .get(&tool.name)
                        .cloned()
                        .unwrap_or_else(|| value_for_schema(&tool.input_schema)),
                })
                .collect();
            (calls, StopReason::ToolUse)
        };
        let output = Message::new(Role::Assistant, content);
        let usage = Usage {
            input_tokens: estimate_tokens(input_chars(request)),
            output_tokens: estimate_tokens(message_chars(&output)),
            ..Usage::default()
        };
        tracing::debug!(call, ?stop_reason, "TestModel answered");
        Ok(ChatResponse {
            id: format!("test_msg_{call}"),
            model: request
                .model
                .clone()
                .unwrap_or_else(|| self.default_model.clone()),
            content: output.content,
            stop_reason,
            usage,
        })
    }

    fn structured_output_mode(&self) -> StructuredOutputMode {
        self.mode
    }

    fn default_model(&self) -> Option<String> {
        Some(self.default_model.clone())
    }
}
