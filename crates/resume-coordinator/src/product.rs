//! [`ResumeProduct`]: the resume pipeline as an `agent-server` product (`/api/resume`).

use agent_llm::{ChatModel, ModelRouter};
use agent_server::{Product, SessionHandle};
use async_trait::async_trait;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

use crate::coordinator;
use crate::dry_run::{DryRunError, DryRunModel};
use crate::llm::Llm;
use crate::types::StartRequest;

/// The longest `resume_text` and `job_description`, in characters.
pub const MAX_TEXT_CHARS: usize = 100_000;

const FLAG_NAMES: [&str; 5] = [
    "intake_quiz",
    "gap_analysis_quiz",
    "blueprint_approval",
    "section_review",
    "quality_review_approval",
];

/// The resume product: a chat model (every tier's calls go to it, with the tier's model id
/// from the router) and the router.
#[derive(Clone)]
pub struct ResumeProduct {
    llm: Llm,
    router: ModelRouter,
}

impl std::fmt::Debug for ResumeProduct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumeProduct")
            .field("router", &self.router)
            .finish_non_exhaustive()
    }
}

impl ResumeProduct {
    /// A product calling `model`, with the tiers' model ids from `router`.
    pub fn new(model: Arc<dyn ChatModel>, router: ModelRouter) -> Self {
        ResumeProduct { llm: model, router }
    }

    /// A product answering from the recordings in `fixtures_dir` (`fixtures/resume`).
    pub fn dry_run(fixtures_dir: impl AsRef<Path>) -> Result<Self, DryRunError> {
        let model = DryRunModel::load(fixtures_dir)?;
        Ok(ResumeProduct::new(Arc::new(model), DryRunModel::router()))
    }
}

fn text_field(body: &serde_json::Map<String, Value>, name: &str) -> Result<(), String> {
    match body.get(name) {
        None | Some(Value::Null) => Err(format!("\"{name}\" is required (a string)")),
        Some(Value::String(text)) if text.chars().count() > MAX_TEXT_CHARS => Err(format!(
            "\"{name}\" is longer than {MAX_TEXT_CHARS} characters"
        )),
        Some(Value::String(_)) => Ok(()),
        Some(_) => Err(format!("\"{name}\" must be a string")),
    }
}

/// Checks a start body against the contract and reads it. An empty or unreadable
/// `resume_text` passes here: the run refuses it at intake, before any model call.
pub fn parse_start(body: &Value) -> Result<StartRequest, String> {
    let object = body
        .as_object()
        .ok_or_else(|| "the start body must be a JSON object".to_owned())?;
    text_field(object, "resume_text")?;
    text_field(object, "job_description")?;
    if object["job_description"]
        .as_str()
        .is_some_and(|t| t.trim().is_empty())
    {
        return Err("\"job_description\" must not be empty".to_owned());
    }
    if !matches!(
        object.get("company"),
        None | Some(Value::Null | Value::String(_))
    ) {
        return Err("\"company\" must be a string".to_owned());
    }
    if !matches!(object.get("fast_draft"), None | Some(Value::Bool(_))) {
        return Err("\"fast_draft\" must be true or false".to_owned());
    }
    match object.get("flags") {
        None | Some(Value::Null) => {}
        Some(Value::Object(flags)) => {
            for (name, value) in flags {
                if !FLAG_NAMES.contains(&name.as_str()) {
                    return Err(format!(
                        "unknown flag \"{name}\" (known: {})",
                        FLAG_NAMES.join(", ")
                    ));
                }
                if !value.is_boolean() {
                    return Err(format!("flag \"{name}\" must be true or false"));
                }
            }
        }
        Some(_) => return Err("\"flags\" must be an object of true/false values".to_owned()),
    }
    let mut body = body.clone();
    if let Some(object) = body.as_object_mut() {
        object.retain(|_, v| !v.is_null());
    }
    serde_json::from_value(body).map_err(|e| format!("invalid start request: {e}"))
}

#[async_trait]
impl Product for ResumeProduct {
    fn name(&self) -> &str {
        "resume"
    }

    fn validate_start(&self, body: &Value) -> Result<(), String> {
        parse_start(body).map(|_| ())
    }

    async fn run(&self, session: SessionHandle) -> Result<Value, String> {
        coordinator::run(self.llm.clone(), self.router.clone(), session).await
    }

    fn validate_answer(&self, gate: &str, answer: &Value) -> Result<(), String> {
        fn fits<T: serde::de::DeserializeOwned>(answer: &Value) -> Result<(), String> {
            serde_json::from_value::<T>(answer.clone())
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        if gate.starts_with("questionnaire_") {
            fits::<crate::strategist::tools::QuestionnaireAnswer>(answer)
        } else if gate.starts_with("positioning_q_") {
            fits::<crate::strategist::tools::PositioningAnswer>(answer)
        } else if gate.starts_with("section_review_") {
            fits::<crate::craftsman::tools::SectionReview>(answer)
        } else if gate == "architect_review" || gate == "quality_review" {
            fits::<coordinator::Approval>(answer)
        } else {
            Ok(())
        }
    }

    fn page(&self) -> Option<String> {
        Some(include_str!("../assets/index.html").to_owned())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn start_bodies_are_checked_with_clear_messages() {
        let ok = json!({"resume_text": "x", "job_description": "y", "company": null});
        assert!(parse_start(&ok).is_ok());
        let cases = [
            (json!([]), "JSON object"),
            (
                json!({"job_description": "y"}),
                "\"resume_text\" is required",
            ),
            (
                json!({"resume_text": 3, "job_description": "y"}),
                "must be a string",
            ),
            (
                json!({"resume_text": "x", "job_description": " "}),
                "must not be empty",
            ),
            (
                json!({"resume_text": "x", "job_description": "y", "fast_draft": "yes"}),
                "fast_draft",
            ),
            (
                json!({"resume_text": "x", "job_description": "y", "flags": {"nope": true}}),
                "unknown flag",
            ),
            (
                json!({"resume_text": "x", "job_description": "y", "flags": {"intake_quiz": 1}}),
                "true or false",
            ),
        ];
        for (body, message) in cases {
            let error = parse_start(&body).unwrap_err();
            assert!(error.contains(message), "{body}: {error}");
        }
        let parsed = parse_start(&json!({"resume_text": "x", "job_description": "y", "flags": {"section_review": false}})).unwrap();
        assert!(!parsed.flags.section_review);
        assert!(parsed.flags.intake_quiz);
    }
}
