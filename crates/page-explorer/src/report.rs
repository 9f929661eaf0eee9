//! The live report (spec 002, "Report Streaming"): one event for each action, classification,
//! finding and summary, sent as it happens to an [`EventSink`](agent_runtime::EventSink) and
//! printable one line each.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::memory::PageChange;

/// Something the explorer did or learned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExploreEvent {
    /// Exploring started.
    Started {
        /// The starting URL.
        url: String,
        /// The task.
        task: String,
    },
    /// The Classifier classified the page shown.
    Classified {
        /// The page id.
        page_id: String,
        /// The URL.
        url: String,
        /// What it did to the page graph.
        change: PageChange,
        /// The Classifier's understanding.
        understanding: String,
    },
    /// A browser action ran.
    Action {
        /// The action's number (1-based).
        step: usize,
        /// The tool: `click`, `scroll`, `type_text`.
        tool: String,
        /// The selector or direction.
        target: String,
        /// The Explorer's reason.
        reason: String,
        /// Whether it worked.
        ok: bool,
        /// Whether the URL changed.
        url_changed: bool,
        /// The error, when it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The ChangeAnalyzer classified an action's effect.
    Change {
        /// The selector acted on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selector: Option<String>,
        /// The element type.
        element_type: String,
        /// The kind of change.
        change_type: String,
        /// What happened.
        effect: String,
        /// Whether this behavior has now been seen twice.
        confirmed: bool,
    },
    /// A finding: the Explorer's, or filter options discovered.
    Finding {
        /// The finding.
        text: String,
    },
    /// The Summarizer summarized a page.
    Summarized {
        /// The page id.
        page_id: String,
        /// The summary.
        summary: String,
    },
    /// Something went wrong and exploring went on (an agent's invalid answer, a selector
    /// that matches nothing).
    Warning {
        /// What went wrong.
        message: String,
    },
    /// Exploring stopped before the Explorer called `done`.
    Stopped {
        /// Why.
        reason: String,
    },
    /// Exploring finished; the Phase 1 output is ready.
    Finished {
        /// The page type found.
        page_type: String,
        /// Pages in the graph.
        pages: usize,
        /// Browser actions taken.
        actions: usize,
        /// Model calls made.
        model_calls: u64,
        /// Input tokens.
        input_tokens: u64,
        /// Output tokens.
        output_tokens: u64,
    },
}

impl fmt::Display for ExploreEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Started { url, task } => write!(f, "▶ exploring {url} — task: {task}"),
            Self::Classified {
                page_id,
                url,
                change,
                understanding,
            } => {
                let what = match change {
                    PageChange::NewPage => "new page",
                    PageChange::Revisit => "back on",
                    PageChange::SamePage => "same page",
                };
                write!(f, "  ◆ {what} [{page_id}] {url} — {understanding}")
            }
            Self::Action {
                step,
                tool,
                target,
                reason,
                ok,
                url_changed,
                error,
            } => {
                write!(f, "  {step:>3}. {tool} {target}")?;
                if !reason.is_empty() {
                    write!(f, " ({reason})")?;
                }
                match (ok, error) {
                    (false, Some(e)) => write!(f, " ✗ {e}"),
                    (false, None) => write!(f, " ✗"),
                    (true, _) if *url_changed => write!(f, " → URL changed"),
                    (true, _) => Ok(()),
                }
            }
            Self::Change {
                element_type,
                change_type,
                effect,
                confirmed,
                ..
            } => {
                let mark = if *confirmed { " (confirmed)" } else { "" };
                write!(f, "       ↳ {element_type}: {effect} [{change_type}]{mark}")
            }
            Self::Finding { text } => write!(f, "  ★ {text}"),
            Self::Summarized { page_id, summary } => write!(f, "  ≡ [{page_id}] {summary}"),
            Self::Warning { message } => write!(f, "  ! {message}"),
            Self::Stopped { reason } => write!(f, "■ stopped: {reason}"),
            Self::Finished {
                page_type,
                pages,
                actions,
                model_calls,
                input_tokens,
                output_tokens,
            } => write!(
                f,
                "✔ finished: {page_type}; {pages} page(s), {actions} action(s), {model_calls} model call(s), {input_tokens} in / {output_tokens} out tokens"
            ),
        }
    }
}
