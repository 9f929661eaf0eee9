//! The Classifier: on every URL change, is this a new page type or a known one? It compares
//! the old and new pages' structure (spec: "Classifier receives BOTH old and new DOMs").

use agent_llm::{ChatRequest, ExtractError, Extracted, ModelTier};
use agent_runtime::{Ask, Session};

use super::clip;
use crate::memory::Classification;

/// The Classifier's system prompt.
pub const CLASSIFIER_PROMPT: &str = include_str!("prompts/classifier.md");

/// The `classify` tool's description.
pub const CLASSIFY_DESCRIPTION: &str = "Classify whether this is a new page or same page with different data. HANDOFF: Returns control to Explorer.";

/// Each page's serialization is cut to this many characters for the Classifier.
const PAGE_CHARS: usize = 12_000;

/// What the Classifier is shown.
#[derive(Debug, Clone, Copy)]
pub struct ClassifierInput<'a> {
    /// The URL before (none for the starting page).
    pub old_url: Option<&'a str>,
    /// The URL now.
    pub new_url: &'a str,
    /// The page before, serialized.
    pub old_page: Option<&'a str>,
    /// The page now, serialized.
    pub new_page: &'a str,
    /// Page ids already known.
    pub known_pages: &'a [&'a str],
    /// The page id the browser was on.
    pub current_page: Option<&'a str>,
    /// The action that changed the URL, e.g. `click "a#jobs"`.
    pub action: Option<&'a str>,
}

/// The message the Classifier gets.
pub fn classifier_message(input: &ClassifierInput<'_>) -> String {
    let known = if input.known_pages.is_empty() {
        "(none: this is the starting page)".to_owned()
    } else {
        input.known_pages.join(", ")
    };
    let mut message = format!(
        "OLD URL: {}\nNEW URL: {}\nKNOWN PAGES: {known}\nCURRENT PAGE: {}\nACTION: {}\n",
        input.old_url.unwrap_or("(none)"),
        input.new_url,
        input.current_page.unwrap_or("(none)"),
        input.action.unwrap_or("(opened directly)"),
    );
    if let Some(old) = input.old_page {
        message.push_str("\n=== OLD PAGE ===\n");
        message.push_str(&clip(old, PAGE_CHARS));
        message.push('\n');
    }
    message.push_str("\n=== NEW PAGE ===\n");
    message.push_str(&clip(input.new_page, PAGE_CHARS));
    message
}

/// The Classifier's request (before `extract` adds the `classify` tool).
pub fn classifier_request(input: &ClassifierInput<'_>) -> ChatRequest {
    let mut request = ChatRequest::from_prompt(classifier_message(input));
    request.system = Some(CLASSIFIER_PROMPT.to_owned());
    request.max_tokens = Some(1_024);
    request
}

/// Asks the Classifier (light tier, counted under `classifier`) through `session`; an
/// answer that does not match `classify`'s schema is re-asked once.
pub async fn classify<S, E>(
    session: &Session<S, E>,
    input: &ClassifierInput<'_>,
) -> Result<Extracted<Classification>, ExtractError> {
    let ask = Ask::from_request(classifier_request(input))
        .tier(ModelTier::Light)
        .step("classifier")
        .tool("classify", CLASSIFY_DESCRIPTION)
        .attempts(2);
    session.extract(ask).await
}
