//! The scripted models of the orchestrator tests: the Explorer answers from a list, the
//! other agents plausibly; a run on a fixture site in real Chromium.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_llm::testing::{ScriptedModel, responses};
use agent_llm::{ChatModel, ChatRequest, ChatResponse, ContentBlock, LlmError, ToolChoice};
use agent_runtime::{CollectingSink, CostLimits, CostMeter};
use page_explorer::agents::ExplorerModels;
use page_explorer::{ChromiumBrowser, Exploration, ExploreEvent, ExploreOptions, explore};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// What the Explorer answers next (`None`: the model fails).
pub type Answer = Option<ChatResponse>;

pub fn click(selector: &str) -> ChatResponse {
    responses::tool_call(
        "c",
        "click",
        json!({ "selector": selector, "reason": "test" }),
    )
}

pub fn done() -> ChatResponse {
    responses::tool_call(
        "d",
        "done",
        json!({ "understanding": "Seen enough.", "page_type": "job_search", "key_findings": ["found"] }),
    )
}

/// A model for all four agents: the Explorer answers from `explorer` (then `done` forever,
/// or `repeat` forever when given); the others answer plausibly, the Classifier by URL.
pub struct Script {
    pub model: Arc<ScriptedModel>,
}

impl Script {
    pub fn new(
        explorer: Vec<Answer>,
        repeat: Option<ChatResponse>,
        classify: Option<Value>,
    ) -> Self {
        let queue = Mutex::new(VecDeque::from(explorer));
        let model = ScriptedModel::from_fn(move |request: &ChatRequest| {
            let forced = match &request.tool_choice {
                Some(ToolChoice::Tool { name }) => name.clone(),
                _ => String::new(),
            };
            let text = request.messages[0].text();
            match forced.as_str() {
                "classify" => {
                    let url = text
                        .lines()
                        .find_map(|l| l.strip_prefix("NEW URL: "))
                        .unwrap_or("");
                    let page = if url.contains("/jobs/") {
                        "job_details"
                    } else {
                        "job_search"
                    };
                    let input = classify.clone().unwrap_or_else(|| {
                        json!({ "page_id": page, "is_new_page": true, "understanding": format!("{page} at {url}") })
                    });
                    Ok(responses::tool_call("k", "classify", input))
                }
                "analyze_change" => Ok(responses::tool_call(
                    "a",
                    "analyze_change",
                    json!({ "element_type": "job listing", "change_type": "content_updated", "description": "shows a job" }),
                )),
                "summarize" => {
                    let page = text
                        .lines()
                        .next()
                        .unwrap_or("")
                        .trim_start_matches("PAGE: [")
                        .trim_end_matches(']')
                        .to_owned();
                    Ok(responses::tool_call(
                        "s",
                        "summarize",
                        json!({ "page_id": page, "summary": "summarized" }),
                    ))
                }
                _ => match queue.lock().unwrap().pop_front() {
                    Some(Some(answer)) => Ok(answer),
                    Some(None) => Err(LlmError::InvalidResponse("the model broke".into())),
                    None => Ok(repeat.clone().unwrap_or_else(done)),
                },
            }
        });
        Script {
            model: Arc::new(model),
        }
    }

    pub fn models(&self) -> ExplorerModels {
        self.models_within(CostLimits::default())
    }

    pub fn models_within(&self, limits: CostLimits) -> ExplorerModels {
        let model: Arc<dyn ChatModel> = self.model.clone();
        ExplorerModels::single(model, CostMeter::new(limits))
    }

    /// Requests made with `tool` forced (`""`: the Explorer's).
    pub fn requests(&self, tool: &str) -> Vec<ChatRequest> {
        self.model
            .requests()
            .into_iter()
            .filter(|r| match &r.tool_choice {
                Some(ToolChoice::Tool { name }) => name == tool,
                _ => tool.is_empty(),
            })
            .collect()
    }
}

pub struct Run {
    pub exploration: Exploration,
    pub events: Vec<ExploreEvent>,
    pub browser: ChromiumBrowser,
}

pub async fn explore_site(
    site_page: &str,
    script: &Script,
    options: ExploreOptions,
    cancel: CancellationToken,
) -> Run {
    let (site, page) = site_page.split_once('/').unwrap();
    let base = super::serve(super::site(site)).await;
    let browser = super::launch().await;
    let sink = CollectingSink::default();
    let exploration = explore(
        &browser,
        &script.models(),
        &format!("{base}{page}"),
        &options,
        &sink,
        &cancel,
    )
    .await
    .unwrap();
    Run {
        exploration,
        events: sink.events(),
        browser,
    }
}

pub fn options() -> ExploreOptions {
    let mut options = ExploreOptions::new("test");
    options.settle = Duration::from_secs(2);
    options.screenshots = false;
    options
}

/// The tool results the Explorer was sent, parsed, in order.
pub fn results(script: &Script) -> Vec<(bool, String)> {
    let mut seen = Vec::new();
    for request in script.requests("") {
        if let Some(last) = request.messages.last() {
            for block in &last.content {
                if let ContentBlock::ToolResult {
                    content, is_error, ..
                } = block
                {
                    seen.push((*is_error, content.clone()));
                }
            }
        }
    }
    // Each request repeats the earlier turns; the last message is the newest results.
    seen
}
