//! The dry run: the recorded model answers of `fixtures/job-agent-chat/model.json` (the
//! [`RecordedModel`] format) and SerpAPI bodies recorded in the documented shape under
//! `fixtures/job-agent-chat/serpapi/`, served by [`SerpApiReplay`], a local server that
//! answers `GET /search.json` as SerpAPI does, so the real [`SerpApiProvider`] client
//! reads them.
//!
//! [`SerpApiProvider`]: crate::providers::SerpApiProvider

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_llm::testing::{RecordedModel, RecordingError};
use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::{Value, json};

/// The dry-run fixtures could not be read or served.
#[derive(Debug, thiserror::Error)]
pub enum DryRunError {
    /// The recording.
    #[error("dry-run fixtures: {0}")]
    Recording(#[from] RecordingError),
    /// A body file.
    #[error("dry-run fixtures: {path}: {message}")]
    Body {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The replay server could not listen.
    #[error("the SerpAPI replay could not listen: {0}")]
    Listen(#[from] std::io::Error),
}

/// The recorded model of `fixtures_dir` (`fixtures/job-agent-chat`), with no request log.
///
/// ```
/// let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/job-agent-chat");
/// let model = job_agent_chat::dry_run::recorded_model(&fixtures).unwrap();
/// assert!(model.remaining("Route") > 0);
/// ```
pub fn recorded_model(fixtures_dir: &Path) -> Result<RecordedModel, DryRunError> {
    Ok(RecordedModel::from_file(fixtures_dir.join("model.json"))?
        .with_default_model("dry-run")
        .with_request_log(false))
}

/// The key the replay accepts; any other gets SerpAPI's invalid-key answer.
pub const REPLAY_KEY: &str = "dry-run";

#[derive(Clone)]
struct Replay {
    /// `(search_parameters, body)` of every recorded search.
    bodies: Arc<Vec<(Value, Value)>>,
    /// The body for a search nothing matches.
    empty: Arc<Value>,
    /// The body of a refused key.
    invalid_key: Arc<Value>,
    /// Every query received, in order.
    received: Arc<Mutex<Vec<HashMap<String, String>>>>,
}

/// SerpAPI's Google Jobs endpoint replayed from recorded bodies on a loopback port.
pub struct SerpApiReplay {
    /// `http://127.0.0.1:<port>`: the provider's base URL.
    pub base: String,
    received: Arc<Mutex<Vec<HashMap<String, String>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for SerpApiReplay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SerpApiReplay")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Drop for SerpApiReplay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn read_json(path: &Path) -> Result<Value, DryRunError> {
    let text = std::fs::read_to_string(path).map_err(|e| DryRunError::Body {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    serde_json::from_str(&text).map_err(|e| DryRunError::Body {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl SerpApiReplay {
    /// Serves the bodies of `dir` (`fixtures/job-agent-chat/serpapi`): a search gets the
    /// recorded body whose `q` shares the most words with its own, a `next_page_token` the body recorded for it, an unknown search
    /// `no-results.json`, a key other than [`REPLAY_KEY`] `invalid-key.json` with 401.
    pub async fn start(dir: &Path) -> Result<Self, DryRunError> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| DryRunError::Body {
                path: dir.to_path_buf(),
                message: e.to_string(),
            })?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        let mut bodies = Vec::new();
        let (mut empty, mut invalid_key) = (
            json!({"jobs_results": []}),
            json!({"error": "Invalid API key."}),
        );
        for file in files {
            let body = read_json(&file)?;
            match file.file_stem().and_then(|s| s.to_str()) {
                Some("no-results") => empty = body,
                Some("invalid-key") => invalid_key = body,
                _ => bodies.push((body["search_parameters"].clone(), body)),
            }
        }
        let received = Arc::new(Mutex::new(Vec::new()));
        let state = Replay {
            bodies: Arc::new(bodies),
            empty: Arc::new(empty),
            invalid_key: Arc::new(invalid_key),
            received: received.clone(),
        };
        let app = axum::Router::new()
            .route("/search.json", get(search))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let base = format!("http://{}", listener.local_addr()?);
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::error!(%error, "the SerpAPI replay stopped");
            }
        });
        Ok(SerpApiReplay {
            base,
            received,
            task,
        })
    }

    /// Every query received so far (parameters by name), oldest first.
    pub fn received(&self) -> Vec<HashMap<String, String>> {
        self.received
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

async fn search(
    State(replay): State<Replay>,
    Query(query): Query<HashMap<String, String>>,
) -> impl IntoResponse {
    replay
        .received
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(query.clone());
    if query.get("api_key").map(String::as_str) != Some(REPLAY_KEY) {
        return (
            StatusCode::UNAUTHORIZED,
            Json((*replay.invalid_key).clone()),
        );
    }
    if query.get("engine").map(String::as_str) != Some("google_jobs") {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "Unsupported `engine` parameter."})),
        );
    }
    if let Some(token) = query.get("next_page_token") {
        let page = replay
            .bodies
            .iter()
            .find(|(params, _)| params["next_page_token"] == token.as_str());
        return match page {
            Some((_, body)) => (StatusCode::OK, Json(body.clone())),
            None => (StatusCode::OK, Json((*replay.empty).clone())),
        };
    }
    let asked = words(query.get("q").map(String::as_str).unwrap_or(""));
    let best = replay
        .bodies
        .iter()
        .filter(|(params, _)| params.get("next_page_token").is_none())
        .map(|(params, body)| {
            let recorded = words(params["q"].as_str().unwrap_or(""));
            (asked.iter().filter(|w| recorded.contains(w)).count(), body)
        })
        .filter(|(shared, _)| *shared > 0)
        .max_by_key(|(shared, _)| *shared);
    match best {
        Some((_, body)) => (StatusCode::OK, Json(body.clone())),
        None => (StatusCode::OK, Json((*replay.empty).clone())),
    }
}
