//! The Explorer: decides what to do next on the page, through its five tools (spec 002,
//! "Explorer Agent Tools"). The orchestrator runs its tool calls on the browser.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use agent_llm::structured::schema_of;
use agent_llm::{ChatRequest, ToolDefinition};
use agent_runtime::render_placeholders;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::dom::Observation;

/// The Explorer's system prompt; `{{task}}` is replaced by the task.
pub const EXPLORER_PROMPT: &str = include_str!("prompts/explorer.md");

/// `click`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClickArgs {
    /// CSS selector - copy exactly from [CLICK: "..."]
    pub selector: String,
    /// Why clicking this element
    #[serde(default)]
    pub reason: String,
}

/// Which way to scroll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ScrollDirection {
    /// Towards the end of the page.
    Down,
    /// Towards the top.
    Up,
}

/// `scroll`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ScrollArgs {
    /// Which way to scroll.
    pub direction: ScrollDirection,
    /// Why scrolling
    #[serde(default)]
    pub reason: String,
}

/// `type_text`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TypeTextArgs {
    /// CSS selector - copy exactly from [TYPE: "..."]
    pub selector: String,
    /// The text to type (replaces what the field holds)
    pub text: String,
    /// Why typing this
    #[serde(default)]
    pub reason: String,
}

/// `observe`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ObserveArgs {
    /// What to observe (e.g., "page", "modal")
    #[serde(default)]
    pub what: String,
}

/// The selectors `done` reports.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct DoneKeyElements {
    /// Selector that opens the filters
    #[serde(default)]
    pub filter_button: Option<String>,
    /// Selector of the apply button or link
    #[serde(default)]
    pub apply_button: Option<String>,
    /// Selectors of two or three job listings
    #[serde(default)]
    pub job_listings: Vec<String>,
    /// Selector of the search box
    #[serde(default)]
    pub search_input: Option<String>,
    /// Selector of the next-page or load-more control
    #[serde(default)]
    pub pagination: Option<String>,
}

impl DoneKeyElements {
    /// The selectors by purpose, as the memory store takes them.
    pub fn by_purpose(&self) -> BTreeMap<String, Vec<String>> {
        let mut map = BTreeMap::new();
        for (purpose, selector) in [
            ("filter_button", &self.filter_button),
            ("apply_button", &self.apply_button),
            ("search_input", &self.search_input),
            ("pagination", &self.pagination),
        ] {
            if let Some(s) = selector {
                map.insert(purpose.to_owned(), vec![s.clone()]);
            }
        }
        if !self.job_listings.is_empty() {
            map.insert("job_listing".to_owned(), self.job_listings.clone());
        }
        map
    }

    /// Every selector given.
    pub fn selectors(&self) -> impl Iterator<Item = &str> {
        [
            &self.filter_button,
            &self.apply_button,
            &self.search_input,
            &self.pagination,
        ]
        .into_iter()
        .flatten()
        .chain(self.job_listings.iter())
        .map(String::as_str)
    }
}

/// `done`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DoneArgs {
    /// Overall understanding of the site
    pub understanding: String,
    /// Type of current page
    pub page_type: String,
    /// The most important things learned
    #[serde(default)]
    pub key_findings: Vec<String>,
    /// Selectors of the key elements
    #[serde(default)]
    pub key_elements: DoneKeyElements,
}

/// One of the Explorer's tool calls, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExplorerCall {
    /// `click`.
    Click(ClickArgs),
    /// `scroll`.
    Scroll(ScrollArgs),
    /// `type_text`.
    TypeText(TypeTextArgs),
    /// `observe`.
    Observe(ObserveArgs),
    /// `done`.
    Done(DoneArgs),
}

/// Why an Explorer tool call could not be parsed; its text goes back to the model.
#[derive(Debug, thiserror::Error)]
pub enum ExplorerCallError {
    /// The tool is not one of the Explorer's five.
    #[error("unknown tool {0:?}")]
    UnknownTool(String),
    /// The arguments do not match the tool's schema.
    #[error("invalid arguments: {0}")]
    InvalidArguments(serde_json::Error),
}

impl ExplorerCall {
    /// Parses a call of tool `name` with `input`; the error goes back to the model.
    ///
    /// ```
    /// use page_explorer::agents::explorer::{ExplorerCall, ExplorerCallError};
    /// let call = ExplorerCall::parse("scroll", &serde_json::json!({ "direction": "down" }));
    /// assert!(matches!(call, Ok(ExplorerCall::Scroll(_))));
    /// let error = ExplorerCall::parse("jump", &serde_json::json!({})).unwrap_err();
    /// assert!(matches!(error, ExplorerCallError::UnknownTool(_)));
    /// assert_eq!(error.to_string(), r#"unknown tool "jump""#);
    /// ```
    pub fn parse(name: &str, input: &serde_json::Value) -> Result<Self, ExplorerCallError> {
        fn args<T: serde::de::DeserializeOwned>(
            input: &serde_json::Value,
        ) -> Result<T, ExplorerCallError> {
            T::deserialize(input).map_err(ExplorerCallError::InvalidArguments)
        }
        Ok(match name {
            "click" => Self::Click(args(input)?),
            "scroll" => Self::Scroll(args(input)?),
            "type_text" => Self::TypeText(args(input)?),
            "observe" => Self::Observe(args(input)?),
            "done" => Self::Done(args(input)?),
            other => return Err(ExplorerCallError::UnknownTool(other.to_owned())),
        })
    }
}

/// The Explorer's five tools, as the model sees them.
pub fn explorer_tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new(
            "click",
            "Click an element on the page. Returns { success, url_changed, new_url?, effect?, error? }.",
            schema_of::<ClickArgs>(),
        ),
        ToolDefinition::new(
            "scroll",
            "Scroll the page to see more content. Returns { success, new_content_loaded }.",
            schema_of::<ScrollArgs>(),
        ),
        ToolDefinition::new(
            "type_text",
            "Type text into an input field. Returns { success, error? }.",
            schema_of::<TypeTextArgs>(),
        ),
        ToolDefinition::new(
            "observe",
            "Get fresh DOM state of current page. Returns { dom, url, title }.",
            schema_of::<ObserveArgs>(),
        ),
        ToolDefinition::new(
            "done",
            "Signal exploration is complete. HANDOFF: Triggers summarization and finish.",
            schema_of::<DoneArgs>(),
        ),
    ]
}

/// The Explorer's system prompt for `task`.
pub fn explorer_prompt(task: &str) -> String {
    render_placeholders(EXPLORER_PROMPT, |name| {
        (name == "task").then(|| task.to_owned())
    })
    .unwrap_or_else(|_| EXPLORER_PROMPT.replace("{{task}}", task))
}

/// The Explorer's opening message on a page: the memory summary, its recent actions and the
/// page as it is now.
pub fn explorer_message(
    memory_summary: &str,
    recent_actions: &[String],
    page: &Observation,
) -> String {
    let mut message = format!("MEMORY:\n{memory_summary}\n");
    if !recent_actions.is_empty() {
        message.push_str("YOUR RECENT ACTIONS:\n");
        for action in recent_actions {
            let _ = writeln!(message, "- {action}");
        }
        message.push('\n');
    }
    message.push_str("THE PAGE NOW:\n");
    message.push_str(&page.text);
    message.push_str("\n\nChoose your next action, or call done.");
    message
}

/// The Explorer's opening request.
pub fn explorer_request(task: &str, opening: String) -> ChatRequest {
    let mut request = ChatRequest::from_prompt(opening);
    request.system = Some(explorer_prompt(task));
    request.tools = explorer_tools().into();
    request.max_tokens = Some(2_048);
    request
}
