//! Sizing a request to a model's context window: the prompt and the answer must fit in it
//! together, and a small local model's window is small (8,192 tokens here).

use crate::error::LlmError;
use crate::types::{ChatRequest, ContentBlock, ResponseFormat};
use std::borrow::Cow;

/// The least room left for an answer when `max_tokens` is lowered to fit.
pub const MIN_ANSWER_TOKENS: u32 = 256;

/// A rough size of the prompt in tokens, as `(low, high)`: characters over 4 and over 3
/// (English prose runs about 4 characters a token, JSON and code nearer 3), with a few
/// tokens per message for the chat template.
pub fn estimate_prompt_tokens(request: &ChatRequest) -> (u32, u32) {
    let mut chars = request.system.as_deref().map_or(0, str::len);
    for message in &request.messages {
        chars += 16;
        for block in &message.content {
            chars += match block {
                ContentBlock::Text { text } => text.len(),
                ContentBlock::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
                ContentBlock::ToolResult { content, .. } => content.len(),
                other => serde_json::to_string(other).map_or(0, |s| s.len()),
            };
        }
    }
    for tool in request.tools.iter() {
        chars += tool.name.len() + tool.description.len() + tool.input_schema.to_string().len();
    }
    if let Some(ResponseFormat::JsonSchema { schema, .. }) = &request.response_format {
        chars += schema.to_string().len();
    }
    let tokens = |per_token: usize| u32::try_from(chars / per_token).unwrap_or(u32::MAX);
    (tokens(4), tokens(3))
}

/// `request` made to fit a context window of `window` tokens: its `max_tokens` lowered so
/// that the prompt (estimated high) and the answer fit, never below
/// [`MIN_ANSWER_TOKENS`]. A prompt that alone (estimated low) fills the window is
/// refused as [`LlmError::ContextTooLong`] before anything is sent.
///
/// ```
/// use agent_llm::ChatRequest;
/// use agent_llm::context_fit::fit_to_context;
/// let request = ChatRequest::from_prompt("x".repeat(15_000)).with_max_tokens(4096);
/// let fitted = fit_to_context(&request, 8192).unwrap();
/// assert_eq!(fitted.max_tokens, Some(8192 - 15_016 / 3));
/// assert_eq!(fit_to_context(&request, 32_768).unwrap().max_tokens, Some(4096));
/// assert!(fit_to_context(&ChatRequest::from_prompt("x".repeat(40_000)), 8192).is_err());
/// ```
pub fn fit_to_context(
    request: &ChatRequest,
    window: u32,
) -> Result<Cow<'_, ChatRequest>, LlmError> {
    let (low, high) = estimate_prompt_tokens(request);
    if low + MIN_ANSWER_TOKENS > window {
        return Err(LlmError::ContextTooLong(format!(
            "the prompt is about {low} tokens: with room for an answer it does not fit the model's context window of {window} tokens"
        )));
    }
    let room = window.saturating_sub(high).max(MIN_ANSWER_TOKENS);
    match request.max_tokens {
        Some(asked) if asked > room => {
            tracing::debug!(
                asked,
                room,
                window,
                "max_tokens lowered to fit the context window"
            );
            let mut fitted = request.clone();
            fitted.max_tokens = Some(room);
            Ok(Cow::Owned(fitted))
        }
        _ => Ok(Cow::Borrowed(request)),
    }
}
