//! Step 2: parse the free-text preferences into a search (fast model).
//!
//! The answer is grounded in the text ([`ground_preferences`]): a company, title,
//! industry or location the text never mentions, a non-answer such as `any`, or an
//! exclusion the text does not state is dropped. When the first answer had any, the model
//! is asked once more, told which values were wrong; values of either answer that the
//! text supports are kept, and what was dropped is recorded as a `validation` issue.
//! The exclusions kept are then typed: companies by name, industries by kind
//! ([`type_exclusions`]).

use agent_runtime::graph::NodeError;

use super::{StepEnv, clip, essential};
use crate::exclusions::{Exclusions, type_exclusions};
use crate::grounding::{Dropped, ground_preferences};
use crate::llm::{LlmCallError, Quality};
use crate::models::SearchPreferences;
use crate::state::HuntState;

/// The system prompt of the preferences parser.
pub const SYSTEM: &str = "You turn a job seeker's free-text preferences into a structured \
search. Keep company names exactly as written. Do not add titles, companies or locations the \
text does not mention; use `any` for remote when the text does not say. Companies the text \
rules out by name go in excluded_companies; kinds of company or work it rules out (\"no crypto\") \
go in excluded_industries, as the text words them.";

/// The prompt for one preferences text.
pub fn prompt(preferences: &str) -> String {
    format!(
        "Parse these job-search preferences.\n\n<preferences>\n{}\n</preferences>",
        clip(preferences, 4_000)
    )
}

/// The prompt asking again after an answer with values the text does not support.
pub fn reask_prompt(preferences: &str, dropped: &[Dropped]) -> String {
    let list: Vec<String> = dropped
        .iter()
        .map(|d| format!("- {}", d.describe()))
        .collect();
    format!(
        "{}\n\nA previous answer had values the preferences do not support:\n{}\n\
         Answer again with only what the preferences say: company names as written, \
         exclusions only where the text excludes something, and an empty list where the \
         text names nothing (never `any` or `none` as a value).",
        prompt(preferences),
        list.join("\n")
    )
}

/// `first` then the values of `second` not in it, ignoring case.
fn union(first: Vec<String>, second: Vec<String>) -> Vec<String> {
    let mut merged = first;
    for value in second {
        if !merged.iter().any(|v| v.eq_ignore_ascii_case(&value)) {
            merged.push(value);
        }
    }
    merged
}

/// Asks for [`SearchPreferences`] and grounds them; see the module docs. Empty
/// preferences are fatal.
pub async fn run(state: &mut HuntState, env: &StepEnv<'_>) -> Result<(), NodeError> {
    let text = state.config.preferences.trim().to_owned();
    if text.is_empty() {
        return Err(NodeError::fatal("the preferences are empty"));
    }
    let answer: SearchPreferences = env
        .llm
        .extract(env.ctx, "parse_prefs", Quality::Fast, SYSTEM, prompt(&text))
        .await
        .map_err(|e| essential("parse the preferences", e))?;
    let (mut prefs, dropped) = ground_preferences(&text, answer);
    if !dropped.is_empty() {
        let first: Vec<String> = dropped.iter().map(Dropped::describe).collect();
        tracing::warn!(dropped = %first.join("; "), "the preferences answer has values the text does not support: asking again");
        let outcome = match env
            .llm
            .extract::<SearchPreferences>(
                env.ctx,
                "parse_prefs",
                Quality::Fast,
                SYSTEM,
                reask_prompt(&text, &dropped),
            )
            .await
        {
            Ok(again) => {
                let (again, still) = ground_preferences(&text, again);
                prefs = SearchPreferences {
                    target_titles: union(prefs.target_titles, again.target_titles),
                    target_companies: union(prefs.target_companies, again.target_companies),
                    industries: union(prefs.industries, again.industries),
                    locations: union(prefs.locations, again.locations),
                    excluded_companies: union(prefs.excluded_companies, again.excluded_companies),
                    excluded_industries: union(
                        prefs.excluded_industries,
                        again.excluded_industries,
                    ),
                    ..again
                };
                let still: Vec<String> = still.iter().map(Dropped::describe).collect();
                if still.is_empty() {
                    "asked again: the new answer is grounded".to_owned()
                } else if still == first {
                    "asked again: the new answer had the same values, dropped again".to_owned()
                } else {
                    format!("asked again, and dropped {}", still.join("; "))
                }
            }
            Err(LlmCallError::CostLimit(reason) | LlmCallError::Failed(reason)) => {
                format!("asking again failed ({reason})")
            }
        };
        state.record_issue(
            "parse_prefs",
            "validation",
            format!(
                "dropped values the preferences never state: {}; {outcome}",
                first.join("; ")
            ),
            None,
            None,
        );
    }
    let prefs = type_exclusions(&text, prefs);
    state.exclusions = Exclusions::new(&prefs, &[]).into_reports();
    state.preferences = Some(prefs);
    Ok(())
}
