//! Chat Completions wire format: requests built from [`ChatRequest`], answers read into
//! [`ChatResponse`], and the embeddings endpoint's bodies.

use super::MaxTokensField;
use crate::error::LlmError;
use crate::http::{Vendor, error_from_event, f32_to_json};
use crate::model::{EmbeddingRequest, EmbeddingResponse};
use crate::stream::parse_tool_arguments;
use crate::types::{
    ChatRequest, ChatResponse, ContentBlock, Message, ResponseFormat, Role, StopReason, ToolChoice,
    ToolDefinition, Usage,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// How a request is sent: the field `max_tokens` goes to, and whether it is streamed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyOptions {
    /// Where `ChatRequest::max_tokens` goes.
    pub(crate) max_tokens_field: MaxTokensField,
    /// `Some(include_usage)` for a streamed request.
    pub(crate) stream: Option<bool>,
    /// Whether the server accepts `required` and named tool choices (Z.AI does not).
    pub(crate) forced_tool_choice: bool,
}

/// The `CreateChatCompletionRequest` body for `request`, addressed to `model`.
pub(crate) fn chat_body(request: &ChatRequest, model: &str, options: BodyOptions) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::from(model));
    body.insert(
        "messages".into(),
        Value::Array(messages(request.system.as_deref(), &request.messages)),
    );
    let choice = match (&request.tool_choice, options.forced_tool_choice) {
        (Some(ToolChoice::Any | ToolChoice::Tool { .. }), false) => {
            tracing::debug!(
                "this server accepts only tool_choice auto; forced choice sent as auto"
            );
            Some(ToolChoice::Auto)
        }
        (choice, _) => choice.clone(),
    };
    // A server that knows only `auto` cannot be told `none`: leave the tools out instead.
    let tools_allowed = options.forced_tool_choice || choice != Some(ToolChoice::None);
    if !request.tools.is_empty() && tools_allowed {
        body.insert(
            "tools".into(),
            Value::Array(request.tools.iter().map(tool).collect()),
        );
        if let Some(choice) = &choice {
            body.insert("tool_choice".into(), tool_choice(choice));
        }
    }
    if let Some(max_tokens) = request.max_tokens {
        let field = match options.max_tokens_field {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        };
        body.insert(field.into(), Value::from(max_tokens));
    }
    if let Some(temperature) = request.temperature.and_then(f32_to_json) {
        body.insert("temperature".into(), temperature);
    }
    if !request.stop.is_empty() {
        body.insert("stop".into(), json!(request.stop));
    }
    if let Some(format) = request.response_format.as_ref().and_then(response_format) {
        body.insert("response_format".into(), format);
    }
    if let Some(include_usage) = options.stream {
        body.insert("stream".into(), Value::Bool(true));
        if include_usage {
            body.insert("stream_options".into(), json!({ "include_usage": true }));
        }
    }
    Value::Object(body)
}

/// The conversation as Chat Completions messages: the system prompt first, each tool
/// result as its own `tool` message, thinking and opaque blocks left out, empty messages
/// dropped.
pub(crate) fn messages(system: Option<&str>, conversation: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(conversation.len() + 1);
    if let Some(system) = system.filter(|s| !s.is_empty()) {
        out.push(json!({ "role": "system", "content": system }));
    }
    for message in conversation {
        match message.role {
            Role::User => push_user(&mut out, &message.content),
            Role::Assistant => push_assistant(&mut out, &message.content),
        }
    }
    out
}

fn push_user(out: &mut Vec<Value>, blocks: &[ContentBlock]) {
    let mut texts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let content = if *is_error {
                    format!("Error: {content}")
                } else {
                    content.clone()
                };
                out.push(
                    json!({ "role": "tool", "tool_call_id": tool_use_id, "content": content }),
                );
            }
            ContentBlock::Text { text } if !text.is_empty() => texts.push(text.as_str()),
            ContentBlock::Text { .. }
            | ContentBlock::Thinking { .. }
            | ContentBlock::Opaque { .. } => {}
            ContentBlock::ToolUse { name, .. } => {
                tracing::warn!(tool = %name, "a user message holds a tool call; not sent");
            }
        }
    }
    if !texts.is_empty() {
        out.push(json!({ "role": "user", "content": texts.join("\n") }));
    }
}

fn push_assistant(out: &mut Vec<Value>, blocks: &[ContentBlock]) {
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text { text } if !text.is_empty() => texts.push(text.as_str()),
            ContentBlock::ToolUse { id, name, input } => {
                let arguments = match input {
                    Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                };
                calls.push(json!({
                    "id": id,
                    "type": "function",
                    "function": { "name": name, "arguments": arguments },
                }));
            }
            ContentBlock::ToolResult { tool_use_id, .. } => {
                tracing::warn!(%tool_use_id, "an assistant message holds a tool result; not sent");
            }
            ContentBlock::Text { .. }
            | ContentBlock::Thinking { .. }
            | ContentBlock::Opaque { .. } => {}
        }
    }
    if texts.is_empty() && calls.is_empty() {
        return;
    }
    let mut message = Map::new();
    message.insert("role".into(), Value::from("assistant"));
    let content = if texts.is_empty() {
        Value::Null
    } else {
        Value::from(texts.join("\n"))
    };
    message.insert("content".into(), content);
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    out.push(Value::Object(message));
}

fn tool(tool: &ToolDefinition) -> Value {
    let mut function = Map::new();
    function.insert("name".into(), Value::from(tool.name.as_str()));
    if !tool.description.is_empty() {
        function.insert("description".into(), Value::from(tool.description.as_str()));
    }
    if !tool.input_schema.is_null() {
        function.insert("parameters".into(), Value::clone(&tool.input_schema));
    }
    json!({ "type": "function", "function": function })
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => Value::from("auto"),
        ToolChoice::Any => Value::from("required"),
        ToolChoice::None => Value::from("none"),
        ToolChoice::Tool { name } => json!({ "type": "function", "function": { "name": name } }),
    }
}

fn response_format(format: &ResponseFormat) -> Option<Value> {
    match format {
        ResponseFormat::Text => None,
        ResponseFormat::JsonObject => Some(json!({ "type": "json_object" })),
        ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        } => Some(json!({
            "type": "json_schema",
            "json_schema": { "name": name, "schema": schema, "strict": strict },
        })),
    }
}

/// `usage` as OpenAI-compatible servers send it (`CompletionUsage`, plus DeepSeek's
/// `prompt_cache_hit_tokens`).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl WireUsage {
    /// In this crate's convention: `input_tokens` excludes the tokens read from the cache.
    pub(crate) fn to_usage(&self) -> Usage {
        let prompt = self.prompt_tokens.unwrap_or(0);
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .or(self.prompt_cache_hit_tokens)
            .unwrap_or(0)
            .min(prompt);
        Usage {
            input_tokens: prompt - cached,
            output_tokens: self.completion_tokens.unwrap_or(0),
            cache_read_input_tokens: cached,
            cache_creation_input_tokens: 0,
        }
    }
}

/// Maps a `finish_reason`.
pub(crate) fn stop_reason(finish_reason: &str) -> StopReason {
    match finish_reason {
        "stop" => StopReason::EndTurn,
        "length" => StopReason::MaxTokens,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "content_filter" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_owned()),
    }
}

/// The stop reason to report: a refusal wins, and a plain stop that carries tool calls
/// (some compatible servers say `stop` there) is a tool-use stop.
pub(crate) fn adjust_stop(reason: StopReason, refused: bool, has_tool_calls: bool) -> StopReason {
    match reason {
        _ if refused => StopReason::Refusal,
        StopReason::EndTurn if has_tool_calls => StopReason::ToolUse,
        other => other,
    }
}

/// A call id for a tool call the server sent without one.
pub(crate) fn fallback_call_id(index: usize) -> String {
    format!("call_{index}")
}

#[derive(Debug, Deserialize)]
struct WireResponse {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct WireChoice {
    #[serde(default)]
    index: u32,
    message: WireMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    refusal: Option<String>,
    /// DeepSeek's and GLM's reasoning text.
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Debug, Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Debug, Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

/// Reads a `chat.completion` body. Only the first choice is used (this crate never asks
/// for more than one).
pub(crate) fn parse_chat_response(body: Value) -> Result<ChatResponse, LlmError> {
    if body.get("error").is_some_and(|e| !e.is_null()) && body.get("choices").is_none() {
        return Err(error_from_event(Vendor::OpenAi, &body.to_string()));
    }
    let wire: WireResponse = serde_path_to_error::deserialize(body)
        .map_err(|e| LlmError::InvalidResponse(format!("unexpected chat completion: {e}")))?;
    let choice = wire
        .choices
        .into_iter()
        .min_by_key(|c| c.index)
        .ok_or_else(|| LlmError::InvalidResponse("the chat completion has no choices".into()))?;
    let mut content = Vec::new();
    if let Some(thinking) = choice.message.reasoning_content.filter(|r| !r.is_empty()) {
        content.push(ContentBlock::Thinking {
            thinking,
            signature: None,
        });
    }
    let text = choice
        .message
        .content
        .as_ref()
        .map(content_text)
        .unwrap_or_default();
    if !text.is_empty() {
        content.push(ContentBlock::Text { text });
    }
    let refusal = choice.message.refusal.filter(|r| !r.is_empty());
    let refused = refusal.is_some();
    if let Some(refusal) = refusal {
        content.push(ContentBlock::Text { text: refusal });
    }
    let calls = choice.message.tool_calls.unwrap_or_default();
    let has_tool_calls = !calls.is_empty();
    for (index, call) in calls.into_iter().enumerate() {
        let input = match call.function.arguments {
            Some(Value::String(raw)) => parse_tool_arguments(&raw),
            Some(Value::Null) | None => parse_tool_arguments(""),
            Some(other) => other,
        };
        content.push(ContentBlock::ToolUse {
            id: call
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| fallback_call_id(index)),
            name: call.function.name.unwrap_or_default(),
            input,
        });
    }
    let reason = match choice.finish_reason.as_deref() {
        Some(reason) => stop_reason(reason),
        None if has_tool_calls => StopReason::ToolUse,
        None => StopReason::EndTurn,
    };
    Ok(ChatResponse {
        id: wire.id.unwrap_or_default(),
        model: wire.model.unwrap_or_default(),
        content,
        stop_reason: adjust_stop(reason, refused, has_tool_calls),
        usage: wire.usage.map(|u| u.to_usage()).unwrap_or_default(),
    })
}

/// Message content as text: a string, or the `text` of an array of content parts.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// The `CreateEmbeddingRequest` body.
pub(crate) fn embedding_body(request: &EmbeddingRequest, model: &str) -> Value {
    let mut body = json!({
        "model": model,
        "input": request.inputs,
        "encoding_format": "float",
    });
    if let (Some(dimensions), Value::Object(map)) = (request.dimensions, &mut body) {
        map.insert("dimensions".into(), Value::from(dimensions));
    }
    body
}

#[derive(Debug, Deserialize)]
struct WireEmbeddings {
    #[serde(default)]
    data: Vec<WireEmbedding>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct WireEmbedding {
    #[serde(default)]
    index: usize,
    embedding: EmbeddingData,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum EmbeddingData {
    Floats(Vec<f32>),
    Base64(String),
}

/// Reads an embeddings body; vectors come back in input order whatever order the server
/// used. Base64 vectors (little-endian `f32`s) are decoded too.
pub(crate) fn parse_embeddings(
    body: Value,
    expected: usize,
    requested_model: &str,
) -> Result<EmbeddingResponse, LlmError> {
    let wire: WireEmbeddings = serde_path_to_error::deserialize(body)
        .map_err(|e| LlmError::InvalidResponse(format!("unexpected embeddings body: {e}")))?;
    if wire.data.len() != expected {
        return Err(LlmError::InvalidResponse(format!(
            "asked for {expected} embeddings, got {}",
            wire.data.len()
        )));
    }
    let mut data = wire.data;
    data.sort_by_key(|d| d.index);
    let vectors = data
        .into_iter()
        .map(|d| match d.embedding {
            EmbeddingData::Floats(v) => Ok(v),
            EmbeddingData::Base64(text) => decode_base64_f32(&text),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(EmbeddingResponse {
        model: wire.model.unwrap_or_else(|| requested_model.to_owned()),
        vectors,
        usage: wire.usage.map(|u| u.to_usage()).unwrap_or_default(),
    })
}

/// Decodes standard base64 holding little-endian `f32`s.
fn decode_base64_f32(text: &str) -> Result<Vec<f32>, LlmError> {
    use base64::Engine as _;
    let invalid = || LlmError::InvalidResponse("embedding is not valid base64 f32 data".into());
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|_| invalid())?;
    if bytes.len() % 4 != 0 {
        return Err(invalid());
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

#[cfg(test)]
mod tests;
