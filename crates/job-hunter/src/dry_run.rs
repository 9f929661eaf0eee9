//! Recorded stand-ins for the external services, for `--dry-run` and tests.
//!
//! They read `fixtures/job-hunter/`: model answers under `llm/`, job-board bodies in
//! each vendor's own format under `ats/` (parsed by the real clients' parsers), careers
//! pages under `pages/` and search hits under `search/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use agent_llm::testing::responses;
use agent_llm::{
    ChatModel, ChatRequest, ChatResponse, LlmError, StructuredOutputMode, ToolChoice, Usage,
};
use async_trait::async_trait;
use job_capabilities::RawJob;
use job_capabilities::ats::{
    AtsBoard, AtsEndpoints, AtsError, AtsKind, JobBoardClient, parse_ashby, parse_greenhouse,
    parse_lever, parse_workday_list,
};
use job_capabilities::fetch::{FetchError, FetchedPage, PageSource};
use job_capabilities::http::HttpError;
use job_capabilities::search::{SearchError, SearchHit, WebSearch};
use serde::Deserialize;
use serde_json::Value;

use crate::deps::DepsError;

fn read(path: &Path) -> Result<String, DepsError> {
    std::fs::read_to_string(path)
        .map_err(|e| DepsError::Fixtures(format!("cannot read {}: {e}", path.display())))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, DepsError> {
    serde_json::from_str(&read(path)?)
        .map_err(|e| DepsError::Fixtures(format!("{} is not valid: {e}", path.display())))
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct Meta {
    input_tokens: u64,
    output_tokens: u64,
}

/// One recorded answer file: `data` for a single answer, `by_url` for answers keyed by
/// the posting URLs found in the request.
#[derive(Debug, Clone, Deserialize)]
struct Recorded {
    #[serde(rename = "_meta")]
    meta: Meta,
    #[serde(default)]
    data: Option<Value>,
    #[serde(default)]
    by_url: Option<BTreeMap<String, Value>>,
}

/// A chat model that answers the pipeline's structured-output calls from recorded
/// answers, chosen by the schema asked for (`CandidateProfile.json`, ...). Answers kept
/// per posting (`ExtractedJob`, `BatchScoreResult`) are found by the `URL:` / `url:`
/// lines of the request, so every job gets its own recorded answer. Usage comes from
/// each file's `_meta`.
#[derive(Debug, Clone)]
pub struct DryRunModel {
    dir: PathBuf,
    answers: BTreeMap<String, Recorded>,
}

impl DryRunModel {
    /// Loads every `*.json` file in `dir`.
    pub fn load(dir: &Path) -> Result<Self, DepsError> {
        let entries = std::fs::read_dir(dir)
            .map_err(|e| DepsError::Fixtures(format!("cannot read {}: {e}", dir.display())))?;
        let mut answers = BTreeMap::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "json") {
                let name = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                answers.insert(name, read_json::<Recorded>(&path)?);
            }
        }
        Ok(DryRunModel {
            dir: dir.to_owned(),
            answers,
        })
    }

    fn answer(&self, schema: &str, request: &ChatRequest) -> Result<Value, LlmError> {
        let recorded = self.answers.get(schema).ok_or_else(|| {
            LlmError::InvalidResponse(format!(
                "dry run: no recorded answer {schema}.json in {}",
                self.dir.display()
            ))
        })?;
        if let Some(data) = &recorded.data {
            return Ok(data.clone());
        }
        let by_url = recorded.by_url.as_ref().ok_or_else(|| {
            LlmError::InvalidResponse(format!(
                "dry run: {schema}.json has neither data nor by_url"
            ))
        })?;
        let prompt = request
            .messages
            .first()
            .map(|m| m.text())
            .unwrap_or_default();
        let urls = posting_urls(&prompt);
        let lookup = |url: &str| {
            by_url.get(url).cloned().ok_or_else(|| {
                LlmError::InvalidResponse(format!("dry run: {schema}.json has no answer for {url}"))
            })
        };
        match (schema, urls.as_slice()) {
            ("BatchScoreResult", _) => {
                let ids = job_ids(&prompt);
                let mut scores = Vec::new();
                for (id, url) in ids.iter().zip(&urls) {
                    let mut score = lookup(url)?;
                    if let Some(fields) = score.as_object_mut() {
                        fields.insert("job_id".into(), Value::String(id.clone()));
                    }
                    scores.push(score);
                }
                Ok(serde_json::json!({ "scores": scores }))
            }
            (_, [url]) => lookup(url),
            _ => Err(LlmError::InvalidResponse(format!(
                "dry run: {schema} needs exactly one posting URL in the request, found {}",
                urls.len()
            ))),
        }
    }
}

/// The values of `URL:` and `url:` lines, in order, outside the posting's own
/// `<description>` (whose text may hold such lines).
fn posting_urls(prompt: &str) -> Vec<String> {
    let mut inside = false;
    prompt
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            if line.starts_with("<description>") {
                inside = true;
            } else if line.starts_with("</description>") {
                inside = false;
            }
            if inside {
                return None;
            }
            line.strip_prefix("URL: ")
                .or_else(|| line.strip_prefix("url: "))
                .map(|u| u.trim().to_owned())
        })
        .collect()
}

/// The values of `- id:` lines, in order.
fn job_ids(prompt: &str) -> Vec<String> {
    prompt
        .lines()
        .filter_map(|line| {
            line.trim_start()
                .strip_prefix("- id: ")
                .map(|id| id.trim().to_owned())
        })
        .collect()
}

impl DryRunModel {
    /// The recorded answer to `request`, as a forced tool call of the schema asked for,
    /// with the recorded usage. Fails for a request that is not a structured-output
    /// call, or whose answer was not recorded.
    pub fn respond(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let Some(ToolChoice::Tool { name }) = &request.tool_choice else {
            return Err(LlmError::InvalidResponse(
                "dry run: only structured-output calls are recorded".into(),
            ));
        };
        let input = self.answer(name, request)?;
        let meta = self.answers.get(name.as_str()).map(|r| r.meta);
        let mut response = responses::tool_call("toolu_dry_run", name.as_str(), input);
        response.model = request.model.clone().unwrap_or_else(|| "dry-run".into());
        response.usage = Usage {
            input_tokens: meta.map_or(0, |m| m.input_tokens),
            output_tokens: meta.map_or(0, |m| m.output_tokens),
            ..Usage::default()
        };
        Ok(response)
    }
}

#[async_trait]
impl ChatModel for DryRunModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.respond(request)
    }

    fn structured_output_mode(&self) -> StructuredOutputMode {
        StructuredOutputMode::ForcedTool
    }

    fn default_model(&self) -> Option<String> {
        Some("dry-run".into())
    }
}

/// Job boards answered from recorded bodies in each vendor's format:
/// `ats/greenhouse/<token>.json`, `ats/lever/<token>.json`, `ats/ashby/<token>.json`,
/// `ats/workday/<tenant>.json`; boards listed in `ats/blocked.json` (`"kind/token"`)
/// answer as a host that refuses us. A board with no file does not exist (404).
#[derive(Debug, Clone)]
pub struct FixtureBoards {
    dir: PathBuf,
    blocked: BTreeSet<String>,
}

impl FixtureBoards {
    /// Reads `dir/blocked.json` (optional) and serves `dir`.
    pub fn load(dir: &Path) -> Result<Self, DepsError> {
        let blocked_file = dir.join("blocked.json");
        let blocked = if blocked_file.exists() {
            read_json::<Vec<String>>(&blocked_file)?
                .into_iter()
                .collect()
        } else {
            BTreeSet::new()
        };
        Ok(FixtureBoards {
            dir: dir.to_owned(),
            blocked,
        })
    }
}

#[async_trait]
impl JobBoardClient for FixtureBoards {
    async fn fetch_jobs(&self, board: &AtsBoard, company: &str) -> Result<Vec<RawJob>, AtsError> {
        let key = format!("{}/{}", board.kind.as_str(), board.token);
        if self.blocked.contains(&key) {
            return Err(AtsError::Http(HttpError::Blocked {
                host: format!("{} (recorded)", board.kind),
                status: 429,
                retry_after: Some(std::time::Duration::from_secs(3600)),
            }));
        }
        let path = self.dir.join(format!("{key}.json"));
        let Ok(body) = std::fs::read(&path) else {
            return Err(AtsError::BoardNotFound {
                kind: board.kind,
                token: board.token.clone(),
            });
        };
        match board.kind {
            AtsKind::Greenhouse => parse_greenhouse(&body, company),
            AtsKind::Lever => parse_lever(&body, company),
            AtsKind::Ashby => parse_ashby(&body, company),
            AtsKind::Workday => match &board.workday {
                Some(site) => parse_workday_list(&body, site, company, &AtsEndpoints::default()),
                None => Err(AtsError::Parse {
                    kind: AtsKind::Workday,
                    message: "a Workday board needs its site".into(),
                }),
            },
        }
    }
}

/// Careers pages from `pages/index.json` (URL to file name) and the files beside it.
#[derive(Debug, Clone)]
pub struct FixturePages {
    dir: PathBuf,
    index: BTreeMap<String, String>,
}

impl FixturePages {
    /// Reads `dir/index.json`.
    pub fn load(dir: &Path) -> Result<Self, DepsError> {
        Ok(FixturePages {
            dir: dir.to_owned(),
            index: read_json(&dir.join("index.json"))?,
        })
    }
}

#[async_trait]
impl PageSource for FixturePages {
    async fn fetch_page(&self, url: &str) -> Result<FetchedPage, FetchError> {
        let Some(file) = self.index.get(url) else {
            return Err(FetchError::Http(HttpError::Status {
                url: url.to_owned(),
                status: 404,
            }));
        };
        let html = std::fs::read_to_string(self.dir.join(file)).map_err(|e| {
            FetchError::Http(HttpError::Transport {
                url: url.to_owned(),
                message: format!("recorded page {file}: {e}"),
            })
        })?;
        Ok(FetchedPage::from_html(url, html))
    }
}

/// Search hits from `search/hits.json`: company name to hits; a query gets the hits of
/// the companies it names.
#[derive(Debug, Clone)]
pub struct FixtureSearch {
    hits: BTreeMap<String, Vec<SearchHit>>,
}

impl FixtureSearch {
    /// Reads `dir/hits.json`.
    pub fn load(dir: &Path) -> Result<Self, DepsError> {
        Ok(FixtureSearch {
            hits: read_json(&dir.join("hits.json"))?,
        })
    }
}

#[async_trait]
impl WebSearch for FixtureSearch {
    fn provider(&self) -> &str {
        "recorded"
    }

    async fn search(&self, query: &str, count: usize) -> Result<Vec<SearchHit>, SearchError> {
        let query = query.to_lowercase();
        Ok(self
            .hits
            .iter()
            .filter(|(company, _)| query.contains(&company.to_lowercase()))
            .flat_map(|(_, hits)| hits.iter().cloned())
            .take(count)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posting_urls_skip_lines_inside_the_description() {
        let prompt = "Company: Acme\nURL: https://jobs.example/1\n\n<description>\nApply here:\nURL: https://elsewhere.example\n</description>";
        assert_eq!(posting_urls(prompt), ["https://jobs.example/1"]);
        let batch = "Score these.\n\n- id: a1\n  url: https://jobs.example/1\n\n- id: b2\n  url: https://jobs.example/2\n";
        assert_eq!(
            posting_urls(batch),
            ["https://jobs.example/1", "https://jobs.example/2"]
        );
        assert_eq!(job_ids(batch), ["a1", "b2"]);
    }
}
