//! The `chat` span of a model call, with the OpenTelemetry GenAI attributes: one shape
//! for the agent loop's calls and for the metered calls of tools and steps.

use agent_llm::{ChatRequest, ChatResponse};

/// A `chat` span for `request`; [`record_response`] fills in what the answer tells.
pub(crate) fn chat_span(request: &ChatRequest) -> tracing::Span {
    tracing::info_span!(
        "chat",
        gen_ai.operation.name = "chat",
        gen_ai.request.model = request.model.as_deref().unwrap_or_default(),
        gen_ai.response.model = tracing::field::Empty,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        gen_ai.response.finish_reasons = tracing::field::Empty,
    )
}

/// Records the served model, the tokens and the stop reason of `response` on `span`.
pub(crate) fn record_response(span: &tracing::Span, response: &ChatResponse) {
    // Recorded only where a subscriber listens: the stop reason's wire name costs an
    // allocation.
    if span.is_disabled() {
        return;
    }
    span.record("gen_ai.response.model", response.model.as_str());
    span.record("gen_ai.usage.input_tokens", response.usage.input_tokens);
    span.record("gen_ai.usage.output_tokens", response.usage.output_tokens);
    // The wire name (`end_turn`, `tool_use`, ...), as the GenAI conventions report it.
    if let Ok(serde_json::Value::String(reason)) = serde_json::to_value(&response.stop_reason) {
        span.record("gen_ai.response.finish_reasons", reason.as_str());
    }
}
