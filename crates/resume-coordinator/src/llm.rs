//! The tools' own LLM calls: structured output on the model of a tier, metered.

use agent_llm::{ChatModel, ChatRequest, ExtractOptions, ModelTier, extract_with};
use agent_runtime::ToolError;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use std::sync::Arc;

use crate::types::Ctx;

/// The chat model the tools call, shared by every agent of the product.
pub type Llm = Arc<dyn ChatModel>;

/// Asks `llm` for a `T` on the model of `tier` (from the session's router), with a
/// system prompt and a user prompt. Every call's usage is recorded on the session's
/// meter. The schema name (`T`'s type name) is what the dry run answers by.
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
    match extract_with::<T, _>(llm.as_ref(), request, ExtractOptions::default()).await {
        Ok(extracted) => {
            if let Some(meter) = ctx.meter() {
                for usage in &extracted.usage {
                    meter.record(&extracted.model, *usage);
                }
            }
            Ok(extracted.value)
        }
        Err(error) => {
            if let Some(meter) = ctx.meter() {
                for usage in &error.usage {
                    meter.record(&model_id, *usage);
                }
            }
            Err(ToolError::Llm(error.error))
        }
    }
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
