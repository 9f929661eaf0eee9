//! The tools' own LLM calls: structured output on the model of a tier, metered.

use agent_llm::{ChatModel, ChatRequest, ExtractOptions, ModelTier, extract_with};
use agent_runtime::{MeteredModel, ToolError};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use std::sync::Arc;

use crate::types::Ctx;

/// The chat model the tools call, shared by every agent of the product.
pub type Llm = Arc<dyn ChatModel>;

/// Asks `llm` for a `T` on the model of `tier` (from the session's router), with a
/// system prompt and a user prompt, through the session's meter ([`MeteredModel`]): a
/// reached limit refuses the call, and every call's usage is recorded. The schema name
/// (`T`'s type name) is what the dry run answers by.
pub async fn ask<T>(
    ctx: &Ctx,
    llm: &Llm,
    tier: ModelTier,
    system: &str,
    prompt: String,
) -> Result<T, ToolError>
where
    T: JsonSchema + DeserializeOwned,
{
    let mut request = ChatRequest::from_prompt(prompt);
    request.system = Some(system.to_owned());
    request.model = ctx.model_for(tier).map(str::to_owned);
    let model_id = request
        .model
        .clone()
        .or_else(|| llm.default_model())
        .unwrap_or_else(|| "unknown".to_owned());
    tracing::debug!(tier = %tier, model = %model_id, "tool LLM call");
    // Through the session's meter, as the agents' own calls: limits are checked before
    // every attempt and every attempt's usage is recorded.
    let outcome = match ctx.meter() {
        Some(meter) => {
            let metered = MeteredModel::new(Arc::clone(llm), meter.clone());
            extract_with::<T, _>(&metered, request, ExtractOptions::default()).await
        }
        None => extract_with::<T, _>(llm.as_ref(), request, ExtractOptions::default()).await,
    };
    outcome
        .map(|extracted| extracted.value)
        .map_err(|error| ToolError::Llm(error.error))
}

/// The evidence library as prompt lines: `R1: text`.
pub fn evidence_lines(ctx: &Ctx) -> String {
    ctx.read_state(|s| {
        s.evidence
            .iter()
            .map(|e| format!("{}: {}", e.id, e.text))
            .collect::<Vec<_>>()
            .join("\n")
    })
}
