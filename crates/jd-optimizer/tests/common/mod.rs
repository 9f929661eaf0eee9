//! Scripted agents for the optimizer's tests: each agent (told apart by its system
//! prompt) answers from its own queue, with a fixed usage per answer.
#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_llm::testing::{ScriptedModel, dry_run_router, responses};
use agent_llm::{ChatRequest, LlmError, Usage};
use agent_runtime::CollectingSink;
use jd_optimizer::{
    JdOptimizer, Optimization, OptimizeError, OptimizeEvent, OptimizeRequest, dry_run,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Tokens reported per scripted answer (input, output).
pub const USAGE: (u64, u64) = (300, 100);

/// Which agent sent a request, by its system prompt.
pub fn agent_of(request: &ChatRequest) -> &'static str {
    let system = request.system.as_deref().unwrap_or_default();
    for (prefix, agent) in [
        ("You are the JD Analyzer", "analyzer"),
        ("You are the Resume Rewriter, repairing", "repair"),
        ("You are the Resume Rewriter", "rewriter"),
        ("You are the ATS Scorer", "scorer"),
        ("You are the Gap Analyzer", "gap"),
        ("You are the Interview Coach", "questions"),
        ("You are the Cover Letter Writer", "letter"),
    ] {
        if system.starts_with(prefix) {
            return agent;
        }
    }
    "unknown"
}

/// Answers by agent, in order; an agent with no answer left fails the call.
#[derive(Clone, Default)]
pub struct Script {
    queues: Arc<Mutex<BTreeMap<&'static str, VecDeque<String>>>>,
}

impl Script {
    pub fn new() -> Self {
        Script::default()
    }

    /// Queues `answer` (JSON or any text) for `agent`.
    pub fn answer(self, agent: &'static str, answer: impl Into<String>) -> Self {
        self.queues
            .lock()
            .unwrap()
            .entry(agent)
            .or_default()
            .push_back(answer.into());
        self
    }

    pub fn json(self, agent: &'static str, value: Value) -> Self {
        self.answer(agent, value.to_string())
    }

    pub fn model(&self) -> ScriptedModel {
        let queues = Arc::clone(&self.queues);
        ScriptedModel::from_fn(move |request| {
            let agent = agent_of(request);
            let next = queues
                .lock()
                .unwrap()
                .get_mut(agent)
                .and_then(VecDeque::pop_front);
            match next {
                Some(text) => Ok(responses::with_usage(
                    responses::text(text),
                    Usage {
                        input_tokens: USAGE.0,
                        output_tokens: USAGE.1,
                        ..Usage::default()
                    },
                )),
                None => Err(LlmError::Server {
                    status: 500,
                    message: format!("no scripted answer for {agent}"),
                    retry_after: None,
                }),
            }
        })
    }
}

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/jd-optimizer")
}

/// The fixture pair `name`.
pub fn pair(name: &str) -> OptimizeRequest {
    let pair = dry_run::pairs(&fixtures())
        .unwrap()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap();
    OptimizeRequest::new(pair.resume, pair.jd)
}

/// The SRE pair's analysis.
pub fn sre_analysis() -> Value {
    json!({
        "hard_skills": {"Kubernetes": 0.95, "AWS": 0.85, "Terraform": 0.85, "Prometheus": 0.7, "Go": 0.65},
        "soft_skills": ["calm leadership"],
        "responsibilities": ["Run the Kubernetes platform on AWS", "Manage infrastructure with Terraform", "Lead incident response"],
        "qualifications": ["5+ years in SRE"]
    })
}

/// Strong, honest bullets for the SRE pair (all facts from its chunk C2).
pub fn sre_rewrite() -> Value {
    json!({"bullets": [
        {"replaces": "C2.1", "text": "Operated the Kubernetes platform on AWS: 14 clusters serving 2,500 pods across 3 regions", "sources": ["C2"]},
        {"replaces": "C2.2", "text": "Managed infrastructure with Terraform modules for 60 AWS accounts, replacing hand-made console setups", "sources": ["C2"]},
        {"replaces": "C2.3", "text": "Built Prometheus and Grafana alerting for the Kubernetes platform that cut mean time to detect from 25 to 4 minutes", "sources": ["C2"]},
        {"replaces": "C2.4", "text": "Led incident response as on-call lead and wrote 30 blameless postmortems on the platform", "sources": ["C2"]}
    ]})
}

/// The SRE analysis weighing Helm and Ansible, which only the resume's skills name: a
/// rewrite citing them gains over the resume as it is.
pub fn helm_analysis() -> Value {
    let mut analysis = sre_analysis();
    analysis["hard_skills"]["Helm"] = json!(0.9);
    analysis["hard_skills"]["Ansible"] = json!(0.9);
    analysis
}

/// A rewrite for [`helm_analysis`] better than the resume as it is, but for one thin
/// bullet (`B3`, which lost Prometheus): the one a repair targets.
pub fn rewrite_with_a_thin_bullet() -> Value {
    let mut rewrite = sre_rewrite();
    rewrite["bullets"][0] = json!({"replaces": "C2.1", "text": "Operated 14 Kubernetes clusters on AWS with Helm, serving 2,500 pods across 3 regions", "sources": ["C2", "C4"]});
    rewrite["bullets"][1] = json!({"replaces": "C2.2", "text": "Managed infrastructure with Terraform modules and Ansible for 60 AWS accounts, replacing hand-made console setups", "sources": ["C2", "C4"]});
    rewrite["bullets"][2] = json!({"replaces": "C2.3", "text": "Built alerting for the Kubernetes platform that cut mean time to detect from 25 to 4 minutes", "sources": ["C2"]});
    rewrite
}

pub fn gap_answer() -> Value {
    json!({"missing_skills": ["Go"], "transferable_skills": ["Python (related to Go)"],
           "recommendations": ["Write a small tool in Go."]})
}

pub async fn run(
    optimizer: &JdOptimizer,
    request: &OptimizeRequest,
) -> (Result<Optimization, OptimizeError>, Vec<OptimizeEvent>) {
    let events = Arc::new(CollectingSink::<OptimizeEvent>::default());
    let outcome = optimizer
        .optimize(
            request,
            "session-1",
            events.clone(),
            CancellationToken::new(),
        )
        .await;
    (outcome, events.events())
}

pub fn optimizer(script: &Script) -> (JdOptimizer, ScriptedModel) {
    let model = script.model();
    (
        JdOptimizer::new(Arc::new(model.clone()), dry_run_router()),
        model,
    )
}
