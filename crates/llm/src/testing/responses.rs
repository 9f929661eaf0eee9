//! Canned [`ChatResponse`]s for scripts and mocks.
//!
//! Each helper fills in a small, plausible, non-zero [`Usage`] (a fixed
//! [`SCRIPTED_INPUT_TOKENS`] for the prompt and about one token per four characters of
//! output) so code that adds up usage or prices calls sees real numbers. Override it with
//! [`with_usage`] or by setting the public `usage` field. `id` and `model` are left empty;
//! [`ScriptedModel`](super::ScriptedModel) fills them in when it returns the response.

use super::log::estimate_tokens;
use crate::types::{ChatResponse, ContentBlock, StopReason, Usage};
use serde_json::Value;

/// The input token count the helpers put in their [`Usage`].
pub const SCRIPTED_INPUT_TOKENS: u64 = 20;

fn usage_for(content: &[ContentBlock]) -> Usage {
    let chars: usize = content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.chars().count(),
            ContentBlock::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
            _ => 0,
        })
        .sum();
    Usage {
        input_tokens: SCRIPTED_INPUT_TOKENS,
        output_tokens: estimate_tokens(chars),
        ..Usage::default()
    }
}

fn response(content: Vec<ContentBlock>, stop_reason: StopReason) -> ChatResponse {
    let usage = usage_for(&content);
    ChatResponse {
        id: String::new(),
        model: String::new(),
        content,
        stop_reason,
        usage,
    }
}

/// A final text answer ([`StopReason::EndTurn`]).
///
/// ```
/// use agent_llm::{StopReason, testing::responses};
/// let r = responses::text("Paris.");
/// assert_eq!(r.text(), "Paris.");
/// assert_eq!(r.stop_reason, StopReason::EndTurn);
/// assert!(r.usage.output_tokens > 0);
/// ```
pub fn text(text: impl Into<String>) -> ChatResponse {
    response(vec![ContentBlock::text(text)], StopReason::EndTurn)
}

/// A final answer whose text is the given JSON document (what a model returns for a
/// `json_schema` response format).
///
/// ```
/// let r = agent_llm::testing::responses::json(&serde_json::json!({"answer": 42}));
/// assert_eq!(r.text(), r#"{"answer":42}"#);
/// ```
pub fn json(value: &Value) -> ChatResponse {
    text(value.to_string())
}

/// One tool call ([`StopReason::ToolUse`]).
///
/// ```
/// use agent_llm::testing::responses;
/// let r = responses::tool_call("call_1", "get_time", serde_json::json!({"timezone": "UTC"}));
/// assert_eq!(r.tool_calls()[0].1, "get_time");
/// ```
pub fn tool_call(id: impl Into<String>, name: impl Into<String>, input: Value) -> ChatResponse {
    tool_calls([(id.into(), name.into(), input)])
}

/// Several parallel tool calls, as `(id, name, input)`, in one answer ([`StopReason::ToolUse`]).
///
/// ```
/// use agent_llm::testing::responses;
/// use serde_json::json;
/// let r = responses::tool_calls([
///     ("call_1", "get_time", json!({"timezone": "UTC"})),
///     ("call_2", "get_weather", json!({"city": "Oslo"})),
/// ]);
/// assert_eq!(r.tool_calls().len(), 2);
/// ```
pub fn tool_calls<I, S, N>(calls: I) -> ChatResponse
where
    I: IntoIterator<Item = (S, N, Value)>,
    S: Into<String>,
    N: Into<String>,
{
    let content = calls
        .into_iter()
        .map(|(id, name, input)| ContentBlock::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
        })
        .collect();
    response(content, StopReason::ToolUse)
}

/// The response with its usage replaced.
///
/// ```
/// use agent_llm::{Usage, testing::responses};
/// let usage = Usage { input_tokens: 1000, output_tokens: 50, ..Usage::default() };
/// let r = responses::with_usage(responses::text("hi"), usage);
/// assert_eq!(r.usage.input_tokens, 1000);
/// ```
pub fn with_usage(mut response: ChatResponse, usage: Usage) -> ChatResponse {
    response.usage = usage;
    response
}
