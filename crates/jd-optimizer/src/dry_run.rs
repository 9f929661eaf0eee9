//! The dry run: the recorded model answers of `fixtures/jd-optimizer/model.json` (the
//! [`RecordedModel`] format) and the fixture pairs of `fixtures/jd-optimizer/pairs/`,
//! one directory per pair holding `resume.txt` and `jd.txt`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_llm::testing::{RecordedModel, RecordingError, dry_run_router};

use crate::JdOptimizer;

/// The dry-run fixtures could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DryRunError {
    /// The recording.
    #[error("dry-run fixtures: {0}")]
    Recording(#[from] RecordingError),
    /// A pair's directory or file.
    #[error("dry-run fixtures: {path}: {source}")]
    Pair {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The recorded model of `fixtures_dir` (`fixtures/jd-optimizer`), with no request log.
///
/// ```
/// let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/jd-optimizer");
/// let model = jd_optimizer::dry_run::recorded_model(&fixtures).unwrap();
/// assert_eq!(model.remaining("JdAnalysis"), 6);
/// ```
pub fn recorded_model(fixtures_dir: &Path) -> Result<RecordedModel, DryRunError> {
    Ok(RecordedModel::from_file(fixtures_dir.join("model.json"))?
        .with_default_model("dry-run")
        .with_request_log(false))
}

/// An optimizer answering from the recording of `fixtures_dir`, on `dry-run-<tier>`
/// model ids.
pub fn optimizer(fixtures_dir: &Path) -> Result<JdOptimizer, DryRunError> {
    let model = recorded_model(fixtures_dir)?;
    Ok(JdOptimizer::new(Arc::new(model), dry_run_router()))
}

/// A resume and a job description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixturePair {
    /// The directory's name (`junior-frontend`).
    pub name: String,
    /// The resume.
    pub resume: String,
    /// The job description.
    pub jd: String,
}

/// The pairs under `fixtures_dir/pairs`, by name.
pub fn pairs(fixtures_dir: &Path) -> Result<Vec<FixturePair>, DryRunError> {
    let dir = fixtures_dir.join("pairs");
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| DryRunError::Pair { path, source }
    };
    let mut pairs = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(io(&dir))? {
        let path = entry.map_err(io(&dir))?.path();
        if !path.is_dir() {
            continue;
        }
        let read = |file: &str| {
            let file = path.join(file);
            std::fs::read_to_string(&file).map_err(io(&file))
        };
        pairs.push(FixturePair {
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            resume: read("resume.txt")?,
            jd: read("jd.txt")?,
        });
    }
    pairs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(pairs)
}
