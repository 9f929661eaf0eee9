//! Mapping between the neutral types and the Messages API wire format.

use super::PromptCaching;
use crate::error::LlmError;
use crate::http::f32_to_json;
use crate::types::{
    ChatRequest, ChatResponse, ContentBlock, Message, ResponseFormat, Role, StopReason, ToolChoice,
    ToolDefinition, Usage,
};
use serde_json::{Map, Value, json};

/// Builds the JSON body of `POST /v1/messages`.
pub(crate) fn request_body(
    request: &ChatRequest,
    model: &str,
    max_tokens: u32,
    caching: &PromptCaching,
    stream: bool,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert(
        "max_tokens".into(),
        json!(request.max_tokens.unwrap_or(max_tokens)),
    );
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        let value = if caching.system {
            json!([{ "type": "text", "text": system, "cache_control": caching.cache_control() }])
        } else {
            json!(system)
        };
        body.insert("system".into(), value);
    }
    let breakpoint = request.cache_breakpoint.filter(|_| caching.messages);
    let messages: Vec<Value> = request
        .messages
        .iter()
        .enumerate()
        .filter_map(|(index, message)| {
            let mut wire = message_to_wire(message)?;
            if breakpoint == Some(index) {
                mark_last_block(&mut wire, caching.cache_control());
            }
            Some(wire)
        })
        .collect();
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let last = request.tools.len() - 1;
        let tools = request
            .tools
            .iter()
            .enumerate()
            .map(|(i, tool)| {
                tool_to_wire(
                    tool,
                    (caching.tools && i == last).then(|| caching.cache_control()),
                )
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = &request.tool_choice {
            body.insert("tool_choice".into(), tool_choice_to_wire(choice));
        }
    }
    if let Some(temperature) = request.temperature.and_then(f32_to_json) {
        body.insert("temperature".into(), temperature);
    }
    if !request.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(request.stop));
    }
    match &request.response_format {
        Some(ResponseFormat::JsonSchema { schema, .. }) => {
            body.insert(
                "output_config".into(),
                json!({ "format": { "type": "json_schema", "schema": schema } }),
            );
        }
        Some(ResponseFormat::JsonObject) => {
            tracing::debug!("Anthropic has no plain JSON mode; response_format json_object ignored")
        }
        Some(ResponseFormat::Text) | None => {}
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

fn message_to_wire(message: &Message) -> Option<Value> {
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let content: Vec<Value> = message.content.iter().filter_map(block_to_wire).collect();
    if content.is_empty() {
        tracing::debug!(role, "skipping a message with no content Anthropic accepts");
        return None;
    }
    Some(json!({ "role": role, "content": content }))
}

/// Marks the last block of a wire message that can carry `cache_control` (thinking
/// blocks cannot).
fn mark_last_block(message: &mut Value, cache_control: Value) {
    let Some(blocks) = message.get_mut("content").and_then(Value::as_array_mut) else {
        return;
    };
    let markable = blocks.iter_mut().rev().find(|block| {
        !matches!(
            block.get("type").and_then(Value::as_str),
            Some("thinking" | "redacted_thinking")
        )
    });
    if let Some(block) = markable {
        block["cache_control"] = cache_control;
    }
}

fn block_to_wire(block: &ContentBlock) -> Option<Value> {
    Some(match block {
        // The API rejects empty text blocks.
        ContentBlock::Text { text } if text.is_empty() => return None,
        ContentBlock::Text { text } => json!({ "type": "text", "text": text }),
        ContentBlock::ToolUse { id, name, input } => {
            let input = match input {
                Value::Object(_) => input.clone(),
                // Arguments another provider sent as invalid JSON: the API wants an object.
                other => json!({ "invalid_arguments": other }),
            };
            json!({ "type": "tool_use", "id": id, "name": name, "input": input })
        }
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            let mut value =
                json!({ "type": "tool_result", "tool_use_id": tool_use_id, "content": content });
            if *is_error {
                value["is_error"] = json!(true);
            }
            value
        }
        ContentBlock::Thinking {
            thinking,
            signature,
        } => {
            let mut value = json!({ "type": "thinking", "thinking": thinking });
            if let Some(signature) = signature {
                value["signature"] = json!(signature);
            }
            value
        }
        ContentBlock::Opaque { raw } => raw.clone(),
    })
}

fn tool_to_wire(tool: &ToolDefinition, cache_control: Option<Value>) -> Value {
    let mut value = json!({
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.input_schema,
    });
    if let Some(cache_control) = cache_control {
        value["cache_control"] = cache_control;
    }
    value
}

fn tool_choice_to_wire(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({ "type": "auto" }),
        ToolChoice::Any => json!({ "type": "any" }),
        ToolChoice::None => json!({ "type": "none" }),
        ToolChoice::Tool { name } => json!({ "type": "tool", "name": name }),
    }
}

/// Reads a Messages API response body.
pub(crate) fn response_from_wire(body: Value) -> Result<ChatResponse, LlmError> {
    let content = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| LlmError::InvalidResponse("message has no content array".into()))?
        .iter()
        .map(block_from_wire)
        .collect::<Result<Vec<_>, _>>()?;
    let stop_reason = body
        .get("stop_reason")
        .and_then(Value::as_str)
        .map(stop_reason_from_wire)
        .ok_or_else(|| LlmError::InvalidResponse("message has no stop_reason".into()))?;
    Ok(ChatResponse {
        id: string_field(&body, "id"),
        model: string_field(&body, "model"),
        content,
        stop_reason,
        usage: body.get("usage").map(usage_from_wire).unwrap_or_default(),
    })
}

/// Reads one content block of a response (or of `content_block_start`).
pub(crate) fn block_from_wire(block: &Value) -> Result<ContentBlock, LlmError> {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Ok(match kind {
        "text" => ContentBlock::Text {
            text: string_field(block, "text"),
        },
        "tool_use" => ContentBlock::ToolUse {
            id: required_string(block, "id")?,
            name: required_string(block, "name")?,
            input: block.get("input").cloned().unwrap_or_else(|| json!({})),
        },
        "thinking" => ContentBlock::Thinking {
            thinking: string_field(block, "thinking"),
            signature: block
                .get("signature")
                .and_then(Value::as_str)
                .map(str::to_owned),
        },
        _ => ContentBlock::Opaque { raw: block.clone() },
    })
}

/// Maps `stop_reason`.
pub(crate) fn stop_reason_from_wire(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "tool_use" => StopReason::ToolUse,
        "refusal" => StopReason::Refusal,
        "pause_turn" => StopReason::PauseTurn,
        other => StopReason::Other(other.to_owned()),
    }
}

/// Reads a `usage` object; absent fields stay zero.
pub(crate) fn usage_from_wire(usage: &Value) -> Usage {
    let count = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: count("input_tokens"),
        output_tokens: count("output_tokens"),
        cache_read_input_tokens: count("cache_read_input_tokens"),
        cache_creation_input_tokens: count("cache_creation_input_tokens"),
    }
}

pub(crate) fn string_field(value: &Value, name: &str) -> String {
    value
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn required_string(value: &Value, name: &str) -> Result<String, LlmError> {
    value
        .get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| LlmError::InvalidResponse(format!("tool_use block without {name}")))
}
