//! Step 2: parse the free-text preferences into a search (fast model).

use agent_runtime::graph::NodeError;

use super::{StepEnv, clip, essential};
use crate::llm::Quality;
use crate::models::SearchPreferences;
use crate::state::HuntState;

/// The system prompt of the preferences parser.
pub const SYSTEM: &str = "You turn a job seeker's free-text preferences into a structured \
search. Keep company names exactly as written. Do not add titles, companies or locations the \
text does not mention; use `any` for remote when the text does not say.";

/// The prompt for one preferences text.
pub fn prompt(preferences: &str) -> String {
    format!(
        "Parse these job-search preferences.\n\n<preferences>\n{}\n</preferences>",
        clip(preferences, 4_000)
    )
}

/// Asks for [`SearchPreferences`]; empty preferences are fatal. Company names are
/// trimmed and de-duplicated.
pub async fn run(state: &mut HuntState, env: &StepEnv<'_>) -> Result<(), NodeError> {
    let text = state.config.preferences.trim().to_owned();
    if text.is_empty() {
        return Err(NodeError::fatal("the preferences are empty"));
    }
    let mut prefs: SearchPreferences = env
        .llm
        .extract("parse_prefs", Quality::Fast, SYSTEM, prompt(&text))
        .await
        .map_err(|e| essential("parse the preferences", e))?;
    let mut seen = std::collections::BTreeSet::new();
    prefs.target_companies = prefs
        .target_companies
        .into_iter()
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty() && seen.insert(c.to_lowercase()))
        .collect();
    state.preferences = Some(prefs);
    Ok(())
}
