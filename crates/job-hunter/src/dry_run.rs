//! Recorded stand-ins for the external services, for `--dry-run` and tests.
//!
//! They read `fixtures/job-hunter/`: the model's answers in `model.json` (the
//! [`RecordedModel`] format: structured-output calls by schema name, per-posting answers
//! keyed by the posting's `URL:` line, scoring batches assembled from each job's recorded
//! score), job-board bodies in each vendor's own format under `ats/` (parsed by the real
//! clients' parsers), careers pages under `pages/` and search hits under `search/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use agent_llm::testing::{RecordedModel, RecordingError};
use async_trait::async_trait;
use job_capabilities::RawJob;
use job_capabilities::ats::{
    AtsBoard, AtsEndpoints, AtsError, AtsKind, JobBoardClient, parse_ashby, parse_greenhouse,
    parse_lever, parse_workday_list,
};
use job_capabilities::fetch::{FetchError, FetchedPage, PageSource};
use job_capabilities::http::HttpError;
use job_capabilities::search::{SearchError, SearchHit, WebSearch};

/// The dry-run fixtures are missing or malformed.
///
/// ```
/// use job_hunter::dry_run::{FixtureError, recorded_model};
/// let error = recorded_model(std::path::Path::new("no/such/fixtures")).unwrap_err();
/// assert!(matches!(error, FixtureError::Recording(_)));
/// assert!(error.to_string().contains("model.json"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// A fixture file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A fixture file is not what it should hold.
    #[error("{path} is not valid: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The model's recording could not be read.
    #[error(transparent)]
    Recording(#[from] RecordingError),
}

/// Where the dry-run fixtures are by default, relative to the current directory (the
/// workspace root, or a directory inside it).
pub const DEFAULT_FIXTURES: &str = "fixtures/job-hunter";

fn read(path: &Path) -> Result<String, FixtureError> {
    std::fs::read_to_string(path).map_err(|source| FixtureError::Read {
        path: path.to_owned(),
        source,
    })
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, FixtureError> {
    serde_json::from_str(&read(path)?).map_err(|source| FixtureError::Parse {
        path: path.to_owned(),
        source,
    })
}

/// The recorded model of a dry run: `fixtures/model.json` (`fixtures` being normally
/// `fixtures/job-hunter/`), answering under the model name `dry-run` when a request names
/// none.
///
/// ```
/// let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/job-hunter");
/// let model = job_hunter::dry_run::recorded_model(&fixtures).unwrap();
/// assert_eq!(model.remaining("CandidateProfile"), 1);
/// ```
pub fn recorded_model(fixtures: &Path) -> Result<RecordedModel, FixtureError> {
    Ok(RecordedModel::from_file(fixtures.join("model.json"))?.with_default_model("dry-run"))
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
    pub fn load(dir: &Path) -> Result<Self, FixtureError> {
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
    pub fn load(dir: &Path) -> Result<Self, FixtureError> {
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
    pub fn load(dir: &Path) -> Result<Self, FixtureError> {
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
