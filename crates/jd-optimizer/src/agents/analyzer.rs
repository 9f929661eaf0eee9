//! The JD analyzer (spec 003 section 3.2): the description's requirements as structured
//! output, on the light tier at temperature 0, re-asked once on invalid output; cached
//! per tenant and JD hash.

use std::collections::BTreeMap;

use agent_llm::ModelTier;
use agent_runtime::graph::NodeError;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::analysis::{JdAnalysis, analysis_text, text_hash};
use crate::cache::{CacheKind, JD_TTL, jd_key};
use crate::deps::Deps;
use crate::events::OptimizeEvent;
use crate::llm::{Ask, CallError, Node};

/// The agent's name in token counts and errors.
pub const AGENT: &str = "jd_analyzer";

/// The system prompt.
pub const SYSTEM: &str = "You are the JD Analyzer. Extract the job's requirements in its own words: hard_skills (at most 12) and other key_terms, each with its weight 0 to 1 (required and early = heavy); soft_skills (at most 5); responsibilities (the duties, at most 6); qualifications (education, certifications, years).";

/// The analyzer's answer: a [`JdAnalysis`] that names each term once, its weight beside
/// it (the analysis's `hard_skills` and `keyword_weights` would name every hard skill
/// twice).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
pub struct AnalyzerAnswer {
    /// Technical skills, each with its weight.
    pub hard_skills: BTreeMap<String, f64>,
    /// Other key terms than the hard skills, each with its weight.
    #[serde(default)]
    pub key_terms: BTreeMap<String, f64>,
    /// Interpersonal skills.
    pub soft_skills: Vec<String>,
    /// Key duties.
    pub responsibilities: Vec<String>,
    /// Education, certifications, years.
    pub qualifications: Vec<String>,
}

impl From<AnalyzerAnswer> for JdAnalysis {
    /// The hard skills heaviest first (ties by name); every term's weight in
    /// `keyword_weights`, a hard skill's over a key term's of the same name.
    fn from(answer: AnalyzerAnswer) -> Self {
        let mut skills: Vec<(&String, f64)> =
            answer.hard_skills.iter().map(|(s, w)| (s, *w)).collect();
        skills.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let hard_skills = skills.into_iter().map(|(s, _)| s.clone()).collect();
        let mut keyword_weights = answer.key_terms;
        keyword_weights.extend(answer.hard_skills);
        JdAnalysis {
            hard_skills,
            soft_skills: answer.soft_skills,
            responsibilities: answer.responsibilities,
            qualifications: answer.qualifications,
            keyword_weights,
        }
        .normalized()
    }
}

/// The user prompt: the description without its boilerplate.
pub fn prompt(jd_text: &str) -> String {
    format!("Job description:\n{}", analysis_text(jd_text))
}

/// Runs the analyzer: from the cache when the tenant analysed this description within
/// 24 hours, else by the model. An analysis that cannot be had fails the run: nothing
/// else can be done without it.
pub async fn run(ctx: &Node, deps: &Deps) -> Result<(), NodeError> {
    let (tenant, jd_text) = ctx.read(|s| (s.tenant_id.clone(), s.jd_text.clone()));
    let key = jd_key(&tenant, &text_hash(&jd_text));
    if let Some(analysis) = deps
        .cache
        .get::<JdAnalysis>(CacheKind::JdAnalysis, &key)
        .await
    {
        ctx.update(|s| {
            s.jd_analysis = Some(analysis);
            s.cache.jd_analysis = Some(true);
        });
        ctx.emit(OptimizeEvent::Cache {
            what: "jd_analysis".into(),
            hit: true,
        });
        return Ok(());
    }
    ctx.update(|s| s.cache.jd_analysis = Some(false));
    ctx.emit(OptimizeEvent::Cache {
        what: "jd_analysis".into(),
        hit: false,
    });
    let ask = Ask {
        agent: AGENT,
        tier: ModelTier::Light,
        system: SYSTEM.to_owned(),
        prompt: prompt(&jd_text),
        temperature: 0.0,
        max_tokens: 700,
        fields_in_system: true,
    };
    match deps.caller.ask::<AnalyzerAnswer>(ctx, ask).await {
        Ok(answer) => {
            let analysis = JdAnalysis::from(answer);
            if analysis.hard_skills.is_empty() && analysis.responsibilities.is_empty() {
                let message =
                    "the analysis found no skill and no responsibility in the job description";
                ctx.update(|s| s.record_error(AGENT, "empty_analysis", message, false));
                return Err(NodeError::fatal(message));
            }
            deps.cache.put(&key, &analysis, JD_TTL).await;
            ctx.update(|s| s.jd_analysis = Some(analysis));
            Ok(())
        }
        Err(CallError::Budget { limit, message }) => {
            // Nothing can be rewritten without an analysis: the run ends partial.
            crate::guards::stop_for_budget(ctx, limit, message.clone());
            Err(NodeError::limit(message))
        }
        Err(error) => {
            ctx.update(|s| s.record_error(AGENT, error.kind(), error.to_string(), false));
            Err(NodeError::fatal(format!("the JD analysis failed: {error}")))
        }
    }
}
