//! The ChangeAnalyzer: after every action, what did it do, and what kind of element was acted
//! on? The element type comes from the effect (a button that opens the filter dialog is a
//! `filter_button`, whatever its label), so Phase 2 knows what each selector is for.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use agent_llm::{ChatRequest, ExtractError, Extracted, ModelTier};
use agent_runtime::{Ask, Session};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::clip;
use crate::dom::{Changes, Element, Observation};

/// The ChangeAnalyzer's system prompt.
pub const CHANGE_ANALYZER_PROMPT: &str = include_str!("prompts/change_analyzer.md");

/// The `analyze_change` tool's description.
pub const ANALYZE_CHANGE_DESCRIPTION: &str =
    "Report what the action changed and classify the element acted on by that effect.";

/// At most this many lines of each list (elements added, removed, new text) are shown.
const LINES_SHOWN: usize = 40;

/// The ChangeAnalyzer's answer (its `analyze_change` tool).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChangeAnalysis {
    /// The element type, classified from the effect: `filter_button`, `apply_button`,
    /// `job_listing`, `close_button`, `pagination`, `search_input`, `filter_option` or
    /// `unknown`.
    pub element_type: String,
    /// `modal_opened`, `modal_closed`, `content_updated`, `content_loaded`, `navigation` or
    /// `none`.
    pub change_type: String,
    /// What happened, in a few words (e.g. "opens the filter dialog").
    pub description: String,
    /// Filters and their options, when a filter dialog or panel shows them.
    #[serde(default)]
    pub filter_options: BTreeMap<String, Vec<String>>,
}

/// The action the ChangeAnalyzer is asked about.
#[derive(Debug, Clone, Copy)]
pub struct ActionDescription<'a> {
    /// `click`, `type_text` or `scroll`.
    pub tool: &'a str,
    /// The selector acted on.
    pub selector: Option<&'a str>,
    /// The text typed, or the scroll direction.
    pub argument: Option<&'a str>,
    /// The Explorer's reason.
    pub reason: &'a str,
}

/// What changed between two observations, as the ChangeAnalyzer reads it: URL, dialog,
/// interactive elements added, removed and changed (state, value), and lines of text that
/// are new.
pub fn describe_change(before: &Observation, after: &Observation) -> String {
    let mut out = String::new();
    if before.url == after.url {
        out.push_str("URL: unchanged\n");
    } else {
        let _ = writeln!(out, "URL: changed from {} to {}", before.url, after.url);
    }
    if before.title != after.title {
        let _ = writeln!(out, "TITLE: {:?} → {:?}", before.title, after.title);
    }
    let dialog = match (before.modal, after.modal) {
        (false, true) => "opened",
        (true, false) => "closed",
        (true, true) => "still open",
        (false, false) => "none",
    };
    let _ = writeln!(out, "DIALOG: {dialog}");
    let changes = Changes::between(before, &after.url, &after.title, &after.elements);
    let added: Vec<String> = changes.added.iter().map(Element::render).collect();
    let removed: Vec<String> = changes.removed.iter().map(Element::render).collect();
    let key = |e: &Element| (e.selector.clone(), e.name.clone());
    let old_state: std::collections::HashMap<_, String> = before
        .elements
        .iter()
        .map(|e| (key(e), e.render()))
        .collect();
    let changed: Vec<String> = after
        .elements
        .iter()
        .filter_map(|e| {
            let was = old_state.get(&key(e))?;
            let now = e.render();
            (*was != now).then(|| format!("{was} → {now}"))
        })
        .collect();
    let old_lines: HashSet<&str> = before.text.lines().map(str::trim).collect();
    let new_text: Vec<String> = after
        .text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('[') && !old_lines.contains(l))
        .filter(|l| !l.starts_with("Changed since the last look"))
        .map(str::to_owned)
        .collect();
    for (title, lines) in [
        ("ELEMENTS ADDED", added),
        ("ELEMENTS REMOVED", removed),
        ("ELEMENTS CHANGED", changed),
        ("NEW TEXT", new_text),
    ] {
        if lines.is_empty() {
            let _ = writeln!(out, "{title}: none");
            continue;
        }
        let _ = writeln!(out, "{title} ({}):", lines.len());
        for line in lines.iter().take(LINES_SHOWN) {
            let _ = writeln!(out, "  {line}");
        }
        if lines.len() > LINES_SHOWN {
            let _ = writeln!(out, "  ... and {} more", lines.len() - LINES_SHOWN);
        }
    }
    out
}

/// The ChangeAnalyzer's request (before `extract` adds the `analyze_change` tool).
pub fn change_request(
    action: &ActionDescription<'_>,
    before: &Observation,
    after: &Observation,
) -> ChatRequest {
    let mut message = format!("ACTION: {}", action.tool);
    if let Some(selector) = action.selector {
        let _ = write!(message, " \"{selector}\"");
    }
    if let Some(argument) = action.argument {
        let _ = write!(message, " {argument:?}");
    }
    let _ = write!(
        message,
        "\nREASON: {}\n\nWHAT CHANGED:\n{}",
        action.reason,
        describe_change(before, after)
    );
    if after.modal {
        message.push_str("\n=== THE OPEN DIALOG ===\n");
        message.push_str(&clip(&after.text, 6_000));
    }
    let mut request = ChatRequest::from_prompt(message);
    request.system = Some(CHANGE_ANALYZER_PROMPT.to_owned());
    request.max_tokens = Some(1_024);
    request
}

/// Asks the ChangeAnalyzer (light tier, counted under `change_analyzer`) through
/// `session`; an answer that does not match the schema is re-asked once.
pub async fn analyze_change<S, E>(
    session: &Session<S, E>,
    action: &ActionDescription<'_>,
    before: &Observation,
    after: &Observation,
) -> Result<Extracted<ChangeAnalysis>, ExtractError> {
    let ask = Ask::from_request(change_request(action, before, after))
        .tier(ModelTier::Light)
        .step("change_analyzer")
        .tool("analyze_change", ANALYZE_CHANGE_DESCRIPTION)
        .attempts(2);
    session.extract(ask).await
}
