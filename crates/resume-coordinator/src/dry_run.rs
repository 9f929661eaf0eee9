//! The dry run: the recorded model answers of `fixtures/resume/model.json`, in the
//! [`RecordedModel`] format.
//!
//! The Strategist, Craftsman and Producer are routed by their system prompts ("You are
//! the Strategist ..."), the phase by the opening message's `Phase:` line, the round by the
//! request's turn; a section review answered `revise` makes the Craftsman revise and
//! present the section again (two recorded reactions). The tools' structured-output calls
//! are routed by schema name, per section by the prompt's `Section:` line, with bullets for
//! each set of interview answers (`A1..`) the prompt's evidence may hold.

use agent_llm::ModelRouter;
use agent_llm::testing::{RecordedModel, RecordingError};
use serde_json::{Map, Value, json};
use std::path::Path;

/// The recording could not be read.
///
/// ```
/// let error = resume_coordinator::ResumeProduct::dry_run("no/such/fixtures").unwrap_err();
/// assert!(error.to_string().starts_with("dry-run fixtures: reading the recording"));
/// ```
#[derive(Debug, thiserror::Error)]
#[error("dry-run fixtures: {0}")]
pub struct DryRunError(#[from] pub RecordingError);

/// The recorded model of `fixtures_dir` (`fixtures/resume`): its `model.json`, with no
/// request log (a dry-run server runs for long).
///
/// ```
/// let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/resume");
/// let model = resume_coordinator::dry_run::recorded_model(&fixtures).unwrap();
/// assert!(model.remaining("Strategist") > 0);
/// ```
pub fn recorded_model(fixtures_dir: &Path) -> Result<RecordedModel, DryRunError> {
    Ok(RecordedModel::from_file(fixtures_dir.join("model.json"))?
        .with_default_model("dry-run")
        .with_request_log(false))
}

/// The router a dry run uses: `dry-run-<tier>` model ids (they have no price).
///
/// ```
/// use agent_llm::ModelTier;
/// let router = resume_coordinator::dry_run::router();
/// assert_eq!(router.model(ModelTier::Primary), "dry-run-primary");
/// ```
pub fn router() -> ModelRouter {
    agent_llm::testing::dry_run_router()
}

/// The start body of the recorded sample in `fixtures_dir` (`fixtures/resume`): its
/// `resume.txt` and `job.txt`, for Northwind Freight, the session the recording answers.
///
/// ```
/// let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/resume");
/// let body = resume_coordinator::dry_run::sample_body(&fixtures).unwrap();
/// assert_eq!(body["company"], "Northwind Freight");
/// ```
pub fn sample_body(fixtures_dir: &Path) -> std::io::Result<Value> {
    let text = |name: &str| std::fs::read_to_string(fixtures_dir.join(name));
    Ok(json!({
        "resume_text": text("resume.txt")?,
        "job_description": text("job.txt")?,
        "company": "Northwind Freight",
    }))
}

/// The answer of a user who approves everything, to the gate `name` with `payload`: a
/// questionnaire's questions answered in turn, a positioning question answered, a section
/// approved, anything else `{"approved": true}`.
///
/// ```
/// use serde_json::json;
/// let answer = resume_coordinator::dry_run::approve_all("section_review_summary", &json!({}));
/// assert_eq!(answer, json!({"action": "approve"}));
/// ```
pub fn approve_all(name: &str, payload: &Value) -> Value {
    if name.starts_with("questionnaire_") {
        let answers: Map<String, Value> = payload["questions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|q| {
                let id = q["id"].as_str()?;
                let question = q["question"].as_str().unwrap_or_default();
                Some((id.to_owned(), json!(format!("My answer to: {question}"))))
            })
            .collect();
        json!({ "answers": answers })
    } else if name.starts_with("positioning_q_") {
        json!({"answer": "Yes: I built Prometheus alerting used by six teams."})
    } else if name.starts_with("section_review_") {
        json!({"action": "approve"})
    } else {
        json!({"approved": true})
    }
}
