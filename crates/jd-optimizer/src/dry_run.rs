//! The dry run: the recorded model answers of `fixtures/jd-optimizer/model.json` (the
//! [`RecordedModel`] format) and the fixture pairs of `fixtures/jd-optimizer/pairs/`,
//! one directory per pair holding `resume.txt` and `jd.txt`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_llm::testing::{RecordedModel, RecordingError, dry_run_pricing, dry_run_router};

use crate::{JdOptimizer, Optimization, OptimizeError, OptimizeRequest};

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
/// assert_eq!(model.remaining("AnalyzerAnswer"), 6);
/// ```
pub fn recorded_model(fixtures_dir: &Path) -> Result<RecordedModel, DryRunError> {
    Ok(RecordedModel::from_file(fixtures_dir.join("model.json"))?
        .with_default_model("dry-run")
        .with_request_log(false))
}

/// An optimizer answering from the recording of `fixtures_dir`, on `dry-run-<tier>`
/// model ids, priced free.
pub fn optimizer(fixtures_dir: &Path) -> Result<JdOptimizer, DryRunError> {
    let model = recorded_model(fixtures_dir)?;
    Ok(JdOptimizer::new(Arc::new(model), dry_run_router()).with_pricing(dry_run_pricing()))
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

/// Optimizes `pair` with `optimizer` in a session of its own named after the pair, its
/// events dropped.
pub async fn optimize_pair(
    optimizer: &JdOptimizer,
    pair: &FixturePair,
) -> Result<Optimization, OptimizeError> {
    let request = OptimizeRequest::new(&pair.resume, &pair.jd);
    let events = Arc::new(agent_runtime::CollectingSink::default());
    let cancel = tokio_util::sync::CancellationToken::new();
    optimizer
        .optimize(&request, &pair.name, events, cancel)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::rewriter::accept;

    fn fixtures() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/jd-optimizer")
    }

    async fn optimize(optimizer: &JdOptimizer, pair: &FixturePair) -> Optimization {
        optimize_pair(optimizer, pair)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", pair.name))
    }

    #[tokio::test]
    async fn the_staff_ml_rewrite_keeps_the_bullet_it_leaves_out_and_claims_only_what_a_cited_chunk_says()
     {
        let pairs = pairs(&fixtures()).unwrap();
        let pair = pairs.iter().find(|p| p.name == "staff-ml").unwrap();
        let optimizer = optimizer(&fixtures()).unwrap();
        let done = optimize(&optimizer, pair).await;
        let r = &done.result;
        assert_eq!(r.kept_attempt, 1);
        assert!(r.ats_score > r.baseline_score);
        // One rewrite per bullet it changed, each in place of the bullet it names.
        let replaced: Vec<&str> = r
            .optimized_bullets
            .iter()
            .map(|b| b.replaces.as_str())
            .collect();
        assert_eq!(replaced, ["C2.1", "C2.3", "C2.4", "C2.5", "C3.2"]);
        // The Datafirma recommendation bullet the rewrite left out keeps its own text.
        let markdown = crate::document::optimized_markdown(&pair.resume, &done.state).unwrap();
        assert!(markdown.contains(
            "- Built recommendation models in Python and scikit-learn for 2 million users"
        ));
        // "recommendation" for Vistaloop: refused citing only the Vistaloop chunk, which
        // never says it; accepted citing the summary, which does (the whole resume is what
        // the candidate says).
        let claim = "Led the technical direction for ranking and recommendation models across 3 teams and 11 engineers";
        let refused = accept(&done.state, claim, &["C2".to_owned()], Some("C2")).unwrap_err();
        assert!(
            refused.reason.contains("\"recommendation\""),
            "{}",
            refused.reason
        );
        accept(
            &done.state,
            claim,
            &["C2".to_owned(), "C1".to_owned()],
            Some("C2"),
        )
        .unwrap();
    }
}
