//! Recorded model responses for dry runs: a [`ChatModel`] that answers each agent from its own
//! queue in a JSON file, so the real orchestrator, browser and memory run end to end on a
//! fixture site without a provider.
//!
//! The file holds one list per agent; each entry is one model answer, either tool calls or
//! text:
//!
//! ```json
//! {
//!   "explorer": [{"calls": [{"name": "click", "input": {"selector": "#open-filters", "reason": "..."}}]}],
//!   "classifier": [{"page_id": "job_search", "is_new_page": true, "understanding": "..."}],
//!   "change_analyzer": [{"element_type": "filter_button", "change_type": "modal_opened", "description": "..."}],
//!   "summarizer": [{"page_id": "job_search", "summary": "..."}]
//! }
//! ```
//!
//! The Classifier, ChangeAnalyzer, Summarizer and (Phase 2) Extractor entries (`"extractor"`)
//! are the arguments of their one tool. A request is routed by the tool it forces
//! (`classify`, `analyze_change`, `summarize`, `extract_job`) or,
//! for the Explorer, by the `click` tool it offers. A queue that runs out fails the call with
//! a clear [`LlmError::InvalidResponse`]. Usage is estimated at four characters a token, so
//! the report's figures have the right order of magnitude.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::Mutex;

use agent_llm::{
    ChatModel, ChatRequest, ChatResponse, ContentBlock, LlmError, StopReason, StructuredOutputMode,
    ToolChoice, Usage,
};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

/// One recorded Explorer answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum ExplorerAnswer {
    Calls { calls: Vec<RecordedCall> },
    Text { text: String },
}

#[derive(Debug, Clone, Deserialize)]
struct RecordedCall {
    name: String,
    input: Value,
}

#[derive(Debug, Deserialize)]
struct Recording {
    #[serde(default)]
    explorer: Vec<ExplorerAnswer>,
    #[serde(default)]
    classifier: Vec<Value>,
    #[serde(default)]
    change_analyzer: Vec<Value>,
    #[serde(default)]
    summarizer: Vec<Value>,
    #[serde(default)]
    extractor: Vec<Value>,
}

/// The agents a recording answers for, by the tool that identifies their requests.
const ROUTES: [(&str, &str); 4] = [
    ("classify", "classifier"),
    ("analyze_change", "change_analyzer"),
    ("summarize", "summarizer"),
    ("extract_job", "extractor"),
];

#[derive(Debug, Default)]
struct Queues {
    explorer: VecDeque<ExplorerAnswer>,
    tools: BTreeMap<&'static str, VecDeque<Value>>,
    served: BTreeMap<&'static str, usize>,
    requests: Vec<(&'static str, ChatRequest)>,
}

/// A model answering from recorded responses (see the module docs).
#[derive(Debug)]
pub struct RecordedModel {
    queues: Mutex<Queues>,
    source: String,
}

/// A recording could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a recording.
    #[error("{path} is not a recording of model responses: {source}")]
    Parse {
        /// The file.
        path: String,
        /// Why.
        source: serde_json::Error,
    },
}

impl RecordedModel {
    /// Reads a recording.
    pub fn from_file(path: &Path) -> Result<Self, RecordingError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| RecordingError::Read {
            path: name.clone(),
            source,
        })?;
        Self::from_json(&text, &name)
    }

    /// Parses a recording; `source` names it in errors.
    ///
    /// ```
    /// use page_explorer::dry_run::RecordedModel;
    /// let model = RecordedModel::from_json(r#"{"explorer": [{"text": "Nothing to do."}]}"#, "inline").unwrap();
    /// assert_eq!(model.remaining("explorer"), 1);
    /// ```
    pub fn from_json(text: &str, source: &str) -> Result<Self, RecordingError> {
        let recording: Recording =
            serde_json::from_str(text).map_err(|source_error| RecordingError::Parse {
                path: source.to_owned(),
                source: source_error,
            })?;
        let mut queues = Queues {
            explorer: recording.explorer.into(),
            ..Queues::default()
        };
        queues
            .tools
            .insert("classifier", recording.classifier.into());
        queues
            .tools
            .insert("change_analyzer", recording.change_analyzer.into());
        queues
            .tools
            .insert("summarizer", recording.summarizer.into());
        queues.tools.insert("extractor", recording.extractor.into());
        Ok(RecordedModel {
            queues: Mutex::new(queues),
            source: source.to_owned(),
        })
    }

    /// Answers left for `agent` (`explorer`, `classifier`, `change_analyzer`, `summarizer`, `extractor`).
    pub fn remaining(&self, agent: &str) -> usize {
        let queues = self.lock();
        match agent {
            "explorer" => queues.explorer.len(),
            other => queues.tools.get(other).map_or(0, VecDeque::len),
        }
    }

    /// The requests answered for `agent`, oldest first.
    pub fn requests(&self, agent: &str) -> Vec<ChatRequest> {
        self.lock()
            .requests
            .iter()
            .filter(|(a, _)| *a == agent)
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// Answers given to `agent` so far.
    pub fn served(&self, agent: &str) -> usize {
        self.lock().served.get(agent).copied().unwrap_or(0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queues> {
        self.queues
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn ran_out(&self, agent: &str, served: usize) -> LlmError {
        LlmError::InvalidResponse(format!(
            "the recorded responses in {} for the {agent} ran out after {served}",
            self.source
        ))
    }
}

/// Roughly four characters a token.
fn tokens(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}

#[async_trait]
impl ChatModel for RecordedModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let forced = match &request.tool_choice {
            Some(ToolChoice::Tool { name }) => Some(name.as_str()),
            _ => None,
        };
        let mut queues = self.lock();
        let (agent, content, stop_reason) = match ROUTES
            .iter()
            .find(|(tool, _)| forced == Some(*tool))
        {
            Some((tool, agent)) => {
                let served = queues.served.get(agent).copied().unwrap_or(0);
                let input = queues
                    .tools
                    .get_mut(agent)
                    .and_then(VecDeque::pop_front)
                    .ok_or_else(|| self.ran_out(agent, served))?;
                let id = format!("rec_{agent}_{served}");
                (
                    *agent,
                    vec![ContentBlock::ToolUse {
                        id,
                        name: (*tool).to_owned(),
                        input,
                    }],
                    StopReason::ToolUse,
                )
            }
            None if request.tools.iter().any(|t| t.name == "click") => {
                let served = queues.served.get("explorer").copied().unwrap_or(0);
                let answer = queues
                    .explorer
                    .pop_front()
                    .ok_or_else(|| self.ran_out("explorer", served))?;
                match answer {
                    ExplorerAnswer::Text { text } => (
                        "explorer",
                        vec![ContentBlock::text(text)],
                        StopReason::EndTurn,
                    ),
                    ExplorerAnswer::Calls { calls } => {
                        let blocks = calls
                            .into_iter()
                            .enumerate()
                            .map(|(i, call)| ContentBlock::ToolUse {
                                id: format!("rec_explorer_{served}_{i}"),
                                name: call.name,
                                input: call.input,
                            })
                            .collect();
                        ("explorer", blocks, StopReason::ToolUse)
                    }
                }
            }
            None => {
                return Err(LlmError::InvalidResponse(format!(
                    "the recording {} has no answers for a request without the explorer's or another agent's tool",
                    self.source
                )));
            }
        };
        *queues.served.entry(agent).or_default() += 1;
        queues.requests.push((agent, request.clone()));
        let asked = serde_json::to_string(request).map_or(0, |s| s.len());
        let answered = serde_json::to_string(&content).map_or(0, |s| s.len());
        Ok(ChatResponse {
            id: format!("rec_{}", queues.served.values().sum::<usize>()),
            model: "recorded".to_owned(),
            content,
            stop_reason,
            usage: Usage {
                input_tokens: tokens(asked),
                output_tokens: tokens(answered),
                ..Usage::default()
            },
        })
    }

    fn structured_output_mode(&self) -> StructuredOutputMode {
        StructuredOutputMode::ForcedTool
    }

    fn default_model(&self) -> Option<String> {
        Some("recorded".to_owned())
    }
}
