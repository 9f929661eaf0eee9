//! The optimization's typed state (spec 003 section 2.1, `OptimizationState`): the graph
//! routes on it, every node reads and writes it, checkpoints save it. The values it
//! holds are [`crate::records`]'.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::analysis::JdAnalysis;
use crate::config::OptimizeConfig;
use crate::records::{
    AgentErrorRecord, AttemptKind, AttemptScore, BudgetStop, CacheUse, Category, Degrade,
    DroppedBullet, GapReport, GapSource, Ids, KEEP_MARGIN, ResumeChunk, RetrievalSource,
    RewrittenBullet, Route, ScoreBreakdown,
};
use crate::result::OptimizationResult;

/// The state every node of the optimization shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptimizationState {
    /// The tenant (every cache key and vector query is scoped by it).
    pub tenant_id: String,
    /// The user.
    pub user_id: String,
    /// The session.
    pub session_id: String,
    /// The resume's id (its text's hash unless given).
    pub resume_id: String,
    /// The job description.
    pub jd_text: String,
    /// Facts the user added (answers); a rewrite may use them as it uses the resume.
    pub user_facts: Vec<String>,
    /// The resume cut into chunks, `C1..` in order.
    pub resume_sections: Vec<ResumeChunk>,
    /// The settings.
    pub config: OptimizeConfig,
    /// When the optimization started (the wall-time budget counts from here).
    pub started_at: DateTime<Utc>,
    /// The JD analysis.
    pub jd_analysis: Option<JdAnalysis>,
    /// The chunks retrieved for the rewriter.
    pub relevant_chunks: Vec<ResumeChunk>,
    /// How they were found.
    pub retrieval_source: RetrievalSource,
    /// The bullets of the attempt kept so far (each accepted by the fabrication check;
    /// none while the resume as it is scores best), or of the attempt being scored.
    pub optimized_bullets: Vec<RewrittenBullet>,
    /// Bullets the fabrication check refused, every attempt's.
    pub dropped_bullets: Vec<DroppedBullet>,
    /// What produced the current bullets.
    pub bullets_from: Option<AttemptKind>,
    /// Full rewrites made.
    pub rewrite_attempts: u32,
    /// Targeted repairs made.
    pub repair_attempts: u32,
    /// The kept attempt's overall score.
    pub ats_score: Option<f64>,
    /// The kept attempt's breakdown.
    pub score_breakdown: Option<ScoreBreakdown>,
    /// Every scoring: the baseline (attempt 0) and each attempt's.
    pub attempts: Vec<AttemptScore>,
    /// The model scorer's values for the resume's own bullets, per category asked: given
    /// once, so every attempt is compared with the same baseline.
    #[serde(default)]
    pub original_model_scores: BTreeMap<Category, f64>,
    /// The router's latest decision.
    pub route: Option<Route>,
    /// The gap report.
    pub gap_report: Option<GapReport>,
    /// Who wrote it.
    pub gap_source: Option<GapSource>,
    /// The node running.
    pub current_node: String,
    /// Failures recorded.
    pub errors: Vec<AgentErrorRecord>,
    /// Things the user should know (a fallback taken, a budget reached).
    pub warnings: Vec<String>,
    /// Degrade modes applied.
    pub degrades: BTreeSet<Degrade>,
    /// The budget limit that stopped the run, if one did.
    pub budget_stop: Option<BudgetStop>,
    /// Cache lookups.
    pub cache: CacheUse,
    /// The aggregated result.
    pub final_result: Option<OptimizationResult>,
}

impl OptimizationState {
    /// A new optimization's state: the inputs, nothing computed yet.
    pub fn new(
        ids: Ids,
        jd_text: String,
        resume_sections: Vec<ResumeChunk>,
        user_facts: Vec<String>,
        config: OptimizeConfig,
    ) -> Self {
        OptimizationState {
            tenant_id: ids.tenant_id,
            user_id: ids.user_id,
            session_id: ids.session_id,
            resume_id: ids.resume_id,
            jd_text,
            user_facts,
            resume_sections,
            config,
            started_at: Utc::now(),
            jd_analysis: None,
            relevant_chunks: Vec::new(),
            retrieval_source: RetrievalSource::None,
            optimized_bullets: Vec::new(),
            dropped_bullets: Vec::new(),
            bullets_from: None,
            rewrite_attempts: 0,
            repair_attempts: 0,
            ats_score: None,
            score_breakdown: None,
            attempts: Vec::new(),
            original_model_scores: BTreeMap::new(),
            route: None,
            gap_report: None,
            gap_source: None,
            current_node: String::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
            degrades: BTreeSet::new(),
            budget_stop: None,
            cache: CacheUse::default(),
            final_result: None,
        }
    }

    /// Records a failure.
    pub fn record_error(
        &mut self,
        agent: &str,
        error_type: &str,
        message: impl Into<String>,
        recoverable: bool,
    ) {
        self.errors.push(AgentErrorRecord {
            agent_name: agent.to_owned(),
            error_type: error_type.to_owned(),
            error_message: message.into(),
            recoverable,
        });
    }

    /// Milliseconds since the optimization started.
    pub fn elapsed_ms(&self) -> u64 {
        let elapsed = Utc::now().signed_duration_since(self.started_at);
        u64::try_from(elapsed.num_milliseconds()).unwrap_or(0)
    }

    /// The attempt kept: the one scoring most above the resume as it is, each on its own
    /// scale (the earlier on a tie); the resume as it is (attempt 0) when none scores
    /// above it. `None` before any scoring.
    pub fn kept_attempt(&self) -> Option<&AttemptScore> {
        let original = self.attempts.iter().find(|a| a.attempt == 0);
        let best = self
            .attempts
            .iter()
            .filter(|a| a.attempt > 0 && a.gain() > KEEP_MARGIN)
            .fold(None::<&AttemptScore>, |best, a| match best {
                Some(b) if b.gain() + KEEP_MARGIN >= a.gain() => Some(b),
                _ => Some(a),
            });
        best.or(original)
    }

    /// Everything the candidate's material says: the resume's sections, the rewritten
    /// bullets (checked against them) and the user's own facts, a line each. What gap
    /// checks and interview checks read.
    pub fn candidate_text(&self) -> String {
        self.resume_sections
            .iter()
            .map(|c| c.content.as_str())
            .chain(self.optimized_bullets.iter().map(|b| b.text.as_str()))
            .chain(self.user_facts.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The chunks a rewrite may draw on: those retrieved, or every section when
    /// retrieval gave none.
    pub fn rewrite_sources(&self) -> &[ResumeChunk] {
        if self.relevant_chunks.is_empty() {
            &self.resume_sections
        } else {
            &self.relevant_chunks
        }
    }
}

#[cfg(test)]
impl OptimizationState {
    /// A test's state: `resume` read into its chunks, no JD, the default configuration.
    pub(crate) fn of_resume(resume: &str) -> Self {
        let ids = Ids {
            tenant_id: "t".into(),
            user_id: "u".into(),
            session_id: "s".into(),
            resume_id: "r".into(),
        };
        let chunks = crate::input::resume_chunks(resume);
        OptimizationState::new(ids, String::new(), chunks, Vec::new(), Default::default())
    }
}
