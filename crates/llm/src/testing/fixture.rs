//! [`FixtureModel`]: a model that answers from recorded JSON files.

use super::conversation::called_tool;
use super::log::RequestLog;
use crate::error::LlmError;
use crate::model::{ChatModel, StructuredOutputMode};
use crate::types::{ChatRequest, ChatResponse, ContentBlock, ResponseFormat, ToolChoice};
use async_trait::async_trait;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A [`ChatModel`] that answers from JSON files in a directory, by convention
/// `fixtures/llm/` at the workspace root.
///
/// Each file `<key>.json` holds one serialized [`ChatResponse`], for example
/// `get_time.json`:
///
/// ```json
/// {"id":"fx_1","model":"fixture","content":[{"type":"tool_use","id":"toolu_1","name":"get_time",
///  "input":{"timezone":"UTC"}}],"stop_reason":"tool_use","usage":{"input_tokens":120,"output_tokens":18}}
/// ```
///
/// The keys tried for a request, in order, the first existing file winning
/// (see [`routing_keys`](Self::routing_keys)):
///
/// 1. the forced tool's name, when `tool_choice` is [`ToolChoice::Tool`];
/// 2. the schema name, when `response_format` is [`ResponseFormat::JsonSchema`];
/// 3. `<tool>.after` for each tool result in the last message, `<tool>` being the name
///    of the call it answers (so `get_time.after.json` is the answer once the time is known);
/// 4. the name of each offered tool, in order;
/// 5. `default`.
///
/// No matching file, or a file that is not a valid `ChatResponse`, fails the call with
/// [`LlmError::InvalidResponse`] naming the directory and keys tried, or the file and the
/// parse error. Files are read at each call, so a test may write them as it goes. Empty
/// `model` fields become the request's model, else `fixture`. Requests are recorded as in
/// [`ScriptedModel`](super::ScriptedModel); clones share the log.
///
/// ```
/// use agent_llm::{ChatModel, ChatRequest, testing::FixtureModel};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = std::env::temp_dir().join(format!("fixture-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(
///     dir.join("default.json"),
///     r#"{"content":[{"type":"text","text":"Hello from disk"}],"stop_reason":"end_turn"}"#,
/// ).unwrap();
/// let model = FixtureModel::new(&dir);
/// let answer = model.chat(&ChatRequest::from_prompt("hi")).await.unwrap();
/// assert_eq!(answer.text(), "Hello from disk");
/// assert_eq!(model.served_keys(), ["default"]);
/// std::fs::remove_dir_all(&dir).unwrap();
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct FixtureModel {
    dir: PathBuf,
    log: RequestLog,
    served: Arc<Mutex<Vec<String>>>,
    default_model: Option<String>,
    mode: StructuredOutputMode,
}

impl FixtureModel {
    /// A model answering from the files in `dir` (which need not exist yet).
    pub fn new(dir: impl AsRef<Path>) -> Self {
        FixtureModel {
            dir: dir.as_ref().to_path_buf(),
            log: RequestLog::default(),
            served: Arc::default(),
            default_model: None,
            mode: StructuredOutputMode::default(),
        }
    }

    /// A model answering from `fixtures/llm/`: the first such directory found walking up
    /// from the current directory (a test's current directory is its crate), else the one
    /// at the root of the workspace this crate was built in.
    ///
    /// ```
    /// let model = agent_llm::testing::FixtureModel::workspace_default();
    /// assert!(model.dir().ends_with("fixtures/llm"));
    /// ```
    pub fn workspace_default() -> Self {
        let found = std::env::current_dir().ok().and_then(|cwd| {
            cwd.ancestors()
                .map(|dir| dir.join("fixtures").join("llm"))
                .find(|dir| dir.is_dir())
        });
        let dir = found.unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("..")
                .join("fixtures")
                .join("llm")
        });
        Self::new(dir)
    }

    /// Sets the model reported by [`ChatModel::default_model`].
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.default_model = Some(model.into());
        self
    }

    /// Sets what [`ChatModel::structured_output_mode`] reports (default
    /// [`StructuredOutputMode::ForcedTool`]).
    pub fn with_structured_output_mode(mut self, mode: StructuredOutputMode) -> Self {
        self.mode = mode;
        self
    }

    /// The fixture directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file keys tried for `request`, in order, without duplicates.
    ///
    /// ```
    /// use agent_llm::{ChatRequest, ToolDefinition, testing::FixtureModel};
    /// let request = ChatRequest::from_prompt("time?")
    ///     .with_tool(ToolDefinition::new("get_time", "Current time", serde_json::json!({"type": "object"})));
    /// assert_eq!(FixtureModel::routing_keys(&request), ["get_time", "default"]);
    /// ```
    pub fn routing_keys(request: &ChatRequest) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        let mut add = |key: String| {
            if !keys.contains(&key) {
                keys.push(key);
            }
        };
        if let Some(ToolChoice::Tool { name }) = &request.tool_choice {
            add(name.clone());
        }
        if let Some(ResponseFormat::JsonSchema { name, .. }) = &request.response_format {
            add(name.clone());
        }
        for tool in answered_tools(request) {
            add(format!("{tool}.after"));
        }
        for tool in request.tools.iter() {
            add(tool.name.clone());
        }
        add("default".to_owned());
        keys
    }

    /// The key of the file that answered each successful call, oldest first.
    pub fn served_keys(&self) -> Vec<String> {
        self.served
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.log.requests()
    }

    /// The most recent request, if any.
    pub fn last_request(&self) -> Option<ChatRequest> {
        self.log.last()
    }

    /// How many calls were made (including those that failed).
    pub fn call_count(&self) -> usize {
        self.log.len()
    }

    /// Finds and parses the fixture for `request`, returning its key and response.
    fn load(&self, request: &ChatRequest) -> Result<(String, ChatResponse), LlmError> {
        let keys = Self::routing_keys(request);
        for key in keys.iter().filter(|key| is_safe_key(key)) {
            let path = self.dir.join(format!("{key}.json"));
            let body = match std::fs::read_to_string(&path) {
                Ok(body) => body,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => {
                    return Err(LlmError::InvalidResponse(format!(
                        "FixtureModel: cannot read {}: {error}",
                        path.display()
                    )));
                }
            };
            let deserializer = &mut serde_json::Deserializer::from_str(&body);
            let response: ChatResponse =
                serde_path_to_error::deserialize(deserializer).map_err(|error| {
                    LlmError::InvalidResponse(format!(
                        "FixtureModel: {} is not a valid ChatResponse: {error}",
                        path.display()
                    ))
                })?;
            return Ok((key.clone(), response));
        }
        let tried: Vec<String> = keys.iter().map(|key| format!("{key}.json")).collect();
        Err(LlmError::InvalidResponse(format!(
            "FixtureModel: no fixture in {} for this request; tried {}",
            self.dir.display(),
            tried.join(", ")
        )))
    }
}

/// Keys become file names: refuse anything that could leave the directory.
fn is_safe_key(key: &str) -> bool {
    !key.is_empty()
        && !key.starts_with('.')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The names of the tools whose results the last message carries, in order. A result whose
/// call cannot be found in an earlier assistant message is skipped.
fn answered_tools(request: &ChatRequest) -> Vec<String> {
    let Some((last, earlier)) = request.messages.split_last() else {
        return Vec::new();
    };
    last.content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id),
            _ => None,
        })
        .filter_map(|wanted| called_tool(earlier, wanted).map(str::to_owned))
        .collect()
}

#[async_trait]
impl ChatModel for FixtureModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.log.record(request);
        let (key, mut response) = self.load(request)?;
        tracing::debug!(key = %key, dir = %self.dir.display(), "FixtureModel answered");
        if response.model.is_empty() {
            response.model = request
                .model
                .clone()
                .or_else(|| self.default_model.clone())
                .unwrap_or_else(|| "fixture".to_owned());
        }
        self.served
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(key);
        Ok(response)
    }

    fn structured_output_mode(&self) -> StructuredOutputMode {
        self.mode
    }

    fn default_model(&self) -> Option<String> {
        self.default_model.clone()
    }
}
