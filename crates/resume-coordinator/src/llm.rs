//! The tools' own LLM calls: structured output on the model of a tier, through the
//! session's model and meter.

use agent_llm::{ChatModel, ModelTier};
use agent_runtime::{Ask, ToolError};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use std::sync::Arc;

use crate::types::Ctx;

/// The chat model of the product's agents (their loops, and, as the session's model, the
/// tools' own calls).
pub type Llm = Arc<dyn ChatModel>;

/// Asks the session's model for a `T` on the model of `tier` (from the session's
/// router), with a system prompt and a user prompt: the runtime's one metered call
/// ([`Ask`]), so a reached limit refuses the call and every call's usage is recorded on
/// the session's meter. The schema name (`T`'s type name) is what the dry run answers by.
pub async fn ask<T>(
    ctx: &Ctx,
    tier: ModelTier,
    system: &str,
    prompt: String,
) -> Result<T, ToolError>
where
    T: JsonSchema + DeserializeOwned,
{
    tracing::debug!(tier = %tier, model = ?ctx.model_for(tier), "tool LLM call");
    ctx.extract::<T>(Ask::new(prompt).system(system).tier(tier))
        .await
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
