//! The Summarizer: condenses what was observed on one page before the explorer leaves it,
//! and every page at the end (spec: "Bounded context - Summarizer compresses").

use std::fmt::Write as _;

use agent_llm::{ChatRequest, ExtractError, Extracted, ModelTier};
use agent_runtime::{Ask, Session};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::memory::{MemoryStore, PageNode};

/// The Summarizer's system prompt.
pub const SUMMARIZER_PROMPT: &str = include_str!("prompts/summarizer.md");

/// The `summarize` tool's description.
pub const SUMMARIZE_DESCRIPTION: &str =
    "Provide condensed summary of a page. HANDOFF: Returns to orchestrator.";

/// The Summarizer's answer (its `summarize` tool).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    /// Which page this summary is for.
    pub page_id: String,
    /// Condensed understanding of the page.
    pub summary: String,
}

/// The message the Summarizer gets for `page`: its understanding so far, its observations,
/// the edges in and out.
pub fn summarizer_message(memory: &MemoryStore, page: &PageNode) -> String {
    let mut message = format!(
        "PAGE: [{}]\nURLS: {}\nUNDERSTANDING SO FAR: {}\n",
        page.id,
        page.urls.join(", "),
        page.best_understanding()
    );
    if let Some(title) = &page.title {
        let _ = writeln!(message, "TITLE: {title}");
    }
    message.push_str("\nOBSERVATIONS:\n");
    if page.observations.is_empty() {
        message.push_str("(none beyond the understanding)\n");
    }
    for o in &page.observations {
        let _ = writeln!(message, "- {o}");
    }
    for e in memory.edges().iter().filter(|e| e.from == page.id) {
        let _ = writeln!(message, "→ leads to [{}] via \"{}\"", e.to, e.description);
    }
    for e in memory.edges().iter().filter(|e| e.to == page.id) {
        let _ = writeln!(message, "← from [{}] via \"{}\"", e.from, e.description);
    }
    message
}

/// Asks the Summarizer about `page` (light tier, counted under `summarizer`) through
/// `session`; an invalid answer is re-asked once.
pub async fn summarize<S, E>(
    session: &Session<S, E>,
    memory: &MemoryStore,
    page: &PageNode,
) -> Result<Extracted<Summary>, ExtractError> {
    let mut request = ChatRequest::from_prompt(summarizer_message(memory, page));
    request.system = Some(SUMMARIZER_PROMPT.to_owned());
    request.max_tokens = Some(1_024);
    let ask = Ask::from_request(request)
        .tier(ModelTier::Light)
        .step("summarizer")
        .tool("summarize", SUMMARIZE_DESCRIPTION)
        .attempts(2);
    session.extract(ask).await
}
