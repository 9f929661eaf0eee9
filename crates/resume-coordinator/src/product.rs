//! [`ResumeProduct`]: the resume pipeline as an `agent-server` product (`/api/resume`).

use agent_llm::testing::{LatencyModel, dry_run_pricing};
use agent_llm::{ChatModel, ModelRouter, PricingTable};
use agent_runtime::documents::DocumentStore;
use agent_runtime::{AnswerError, CostLimits, CostMeter, GateSpec, MeterLabels};
use agent_server::{Product, SessionHandle};
use async_trait::async_trait;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::coordinator;
use crate::dry_run::{self, DryRunError};
use crate::gates;
use crate::llm::Llm;
use crate::master::MasterResumes;
use crate::types::{Flags, PipelineError, ResumeEvent, ResumeOutput, StartRequest};

/// The longest `resume_text` and `job_description`, in characters.
pub const MAX_TEXT_CHARS: usize = 100_000;

/// How long a session waits at a gate for its user by default: 24 hours.
pub const DEFAULT_GATE_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// The resume product: a chat model (every tier's calls go to it, with the tier's model id
/// from the router) and the router.
#[derive(Clone)]
pub struct ResumeProduct {
    llm: Llm,
    router: ModelRouter,
    pricing: PricingTable,
    limits: CostLimits,
    flags: Flags,
    masters: Option<MasterResumes>,
    gate_timeout: Duration,
    agent_timeout: Option<Duration>,
}

impl std::fmt::Debug for ResumeProduct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumeProduct")
            .field("router", &self.router)
            .finish_non_exhaustive()
    }
}

impl ResumeProduct {
    /// A product calling `model`, with the tiers' model ids from `router`, its calls
    /// priced by the built-in list.
    pub fn new(model: Arc<dyn ChatModel>, router: ModelRouter) -> Self {
        ResumeProduct {
            llm: model,
            router,
            pricing: PricingTable::default(),
            limits: CostLimits::default(),
            flags: Flags::default(),
            masters: None,
            gate_timeout: DEFAULT_GATE_TIMEOUT,
            agent_timeout: None,
        }
    }

    /// How long a session waits at any gate for its user ([`DEFAULT_GATE_TIMEOUT`]
    /// unless set): a gate nobody answered in that time closes (`gate_closed`, reason
    /// `expired`), the session stops and ends `expired` (`session_expired`), and its run
    /// slot is free. The time counts from when the gate opened (again after a restart).
    pub fn with_gate_timeout(mut self, timeout: Duration) -> Self {
        self.gate_timeout = timeout;
        self
    }

    /// How long one invocation of an agent (the Strategist in one phase, the Craftsman
    /// writing every section, the Producer) may work before it stops and fails the
    /// session with `the <agent> timed out`: the runtime's ten minutes
    /// ([`AgentConfig::new`](agent_runtime::AgentConfig::new)) unless set. Time at a gate
    /// waiting for the user does not count. A small model on a CPU writing a whole resume
    /// needs more.
    pub fn with_agent_timeout(mut self, timeout: Duration) -> Self {
        self.agent_timeout = Some(timeout);
        self
    }

    /// Keeps users' master resumes in `documents` (the deployment's database, e.g.
    /// `SqliteSessionStore::documents`): a start request naming a `user_id` gets that
    /// user's evidence from their finished sessions, and adds its own when it finishes.
    /// Without it, `user_id` is accepted and not used.
    pub fn with_documents(mut self, documents: Arc<dyn DocumentStore>) -> Self {
        self.masters = Some(MasterResumes::new(documents));
        self
    }

    /// Limits every session's spending: a session that reaches one fails with a
    /// `pipeline_error` naming it, keeping what it did.
    pub fn with_limits(mut self, limits: CostLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The deployment's feature flags ([`Flags::from_env`]); each session's start request
    /// may turn them off, not on.
    pub fn with_flags(mut self, flags: Flags) -> Self {
        self.flags = flags;
        self
    }

    /// Prices the calls by `pricing` (for instance [`PricingTable::from_env`]).
    pub fn with_pricing(mut self, pricing: PricingTable) -> Self {
        self.pricing = pricing;
        self
    }

    /// A product answering from the recorded model answers in `fixtures_dir`
    /// (`fixtures/resume`, see [`dry_run`]).
    pub fn dry_run(fixtures_dir: impl AsRef<Path>) -> Result<Self, DryRunError> {
        Self::dry_run_with_latency(fixtures_dir, Duration::ZERO)
    }

    /// Like [`dry_run`](Self::dry_run), every recorded answer given after `latency` (so
    /// that durability and concurrency can be seen, as with a real model).
    pub fn dry_run_with_latency(
        fixtures_dir: impl AsRef<Path>,
        latency: Duration,
    ) -> Result<Self, DryRunError> {
        let model = dry_run::recorded_model(fixtures_dir.as_ref())?;
        let model: Arc<dyn ChatModel> = if latency.is_zero() {
            Arc::new(model)
        } else {
            Arc::new(LatencyModel::new(model, latency))
        };
        Ok(ResumeProduct::new(model, dry_run::router()).with_pricing(dry_run_pricing()))
    }
}

/// Checks a start request beyond its type: text lengths, a job description that says
/// something. An empty or unreadable `resume_text` passes here: the run refuses it at
/// intake, before any model call.
pub fn check_start(start: &StartRequest) -> Result<(), AnswerError> {
    let refuse = |path: &str, message: String| AnswerError {
        path: path.to_owned(),
        message,
    };
    for (path, text) in [
        ("resume_text", &start.resume_text),
        ("job_description", &start.job_description),
    ] {
        if text.chars().count() > MAX_TEXT_CHARS {
            return Err(refuse(
                path,
                format!("longer than {MAX_TEXT_CHARS} characters"),
            ));
        }
    }
    if start.job_description.trim().is_empty() {
        return Err(refuse("job_description", "must not be empty".to_owned()));
    }
    if let Some(user) = &start.user_id {
        let allowed = |c: char| c.is_ascii_alphanumeric() || "._@+-".contains(c);
        if user.is_empty() || user.chars().count() > 128 || !user.chars().all(allowed) {
            return Err(refuse(
                "user_id",
                "must be 1 to 128 letters, digits and ._@+-".to_owned(),
            ));
        }
    }
    Ok(())
}

/// Reads and checks a start body as the server does.
#[cfg(test)]
pub(crate) fn parse_start(body: &serde_json::Value) -> Result<StartRequest, AnswerError> {
    let start: StartRequest = agent_runtime::read_as(body)?;
    check_start(&start)?;
    Ok(start)
}

#[async_trait]
impl Product for ResumeProduct {
    type Start = StartRequest;
    type Event = ResumeEvent;
    type Output = ResumeOutput;
    type Error = PipelineError;

    fn name(&self) -> &str {
        "resume"
    }

    fn check_start(&self, start: &StartRequest) -> Result<(), AnswerError> {
        check_start(start)
    }

    async fn run(
        &self,
        session: SessionHandle<ResumeEvent>,
        mut start: StartRequest,
    ) -> Result<ResumeOutput, PipelineError> {
        start.flags = start.flags.narrowed_by(self.flags);
        session.gates().set_default_timeout(Some(self.gate_timeout));
        let meter = CostMeter::with_pricing(self.limits.clone(), self.pricing.clone())
            .with_labels(MeterLabels::product("resume").with_router(&self.router));
        let stages = coordinator::Stages {
            llm: self.llm.clone(),
            router: self.router.clone(),
            handle: session,
            agent_timeout: self.agent_timeout,
        };
        coordinator::run(stages, meter, start, self.masters.clone()).await
    }

    fn gates(&self) -> Vec<GateSpec> {
        gates::all()
    }

    fn page(&self) -> Option<String> {
        Some(include_str!("../assets/index.html").to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_unanswered_gate_waits_a_day_by_default() {
        assert_eq!(
            DEFAULT_GATE_TIMEOUT,
            std::time::Duration::from_secs(24 * 3600)
        );
    }

    #[test]
    fn start_bodies_are_checked_naming_the_field() {
        let ok =
            json!({"resume_text": "x", "job_description": "y", "company": null, "flags": null});
        assert!(parse_start(&ok).is_ok());
        let cases = [
            (
                json!({"job_description": "y"}),
                ".",
                "missing field `resume_text`",
            ),
            (
                json!({"resume_text": 3, "job_description": "y"}),
                "resume_text",
                "invalid type",
            ),
            (
                json!({"resume_text": "x", "job_description": " "}),
                "job_description",
                "must not be empty",
            ),
            (
                json!({"resume_text": "x", "job_description": "y", "fast_draft": "yes"}),
                "fast_draft",
                "invalid type",
            ),
            (
                json!({"resume_text": "x", "job_description": "y", "flags": {"nope": true}}),
                "flags.nope",
                "unknown field",
            ),
            (
                json!({"resume_text": "x", "job_description": "y", "flags": {"intake_quiz": 1}}),
                "flags.intake_quiz",
                "invalid type",
            ),
            (
                json!({"resume_text": "x", "job_description": "y", "user_id": "../etc"}),
                "user_id",
                "letters, digits",
            ),
            (
                json!({"resume_text": "x", "job_description": "y", "user_id": ""}),
                "user_id",
                "1 to 128",
            ),
        ];
        for (body, path, message) in cases {
            let error = parse_start(&body).unwrap_err();
            assert_eq!(error.path, path, "{body}: {error}");
            assert!(error.message.contains(message), "{body}: {error}");
        }
        let parsed = parse_start(&json!({"resume_text": "x", "job_description": "y", "flags": {"section_review": false}})).unwrap();
        assert!(!parsed.flags.section_review);
        assert!(parsed.flags.intake_quiz);
    }
}
