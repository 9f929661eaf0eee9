//! The values an optimization records (spec 003 section 2.1's dictionaries): who it is
//! for, the resume's chunks, bullets, scores, gaps, errors, budget stops and routes.
//! They depend on nothing else in the crate, so the state, the result and the agents
//! all share them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who an optimization is for, and its ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Ids {
    /// The tenant.
    pub tenant_id: String,
    /// The user.
    pub user_id: String,
    /// The session.
    pub session_id: String,
    /// The resume (its text's hash when not given).
    pub resume_id: String,
}

/// How much more than the resume as it is (0 to 1) an attempt must score to be kept: a
/// rounding difference is no improvement.
pub const KEEP_MARGIN: f64 = 0.000_5;

/// A piece of the resume (`ResumeChunkDict`): its id is `C` and its place in the resume
/// (`C1` is the first), so the rewriter can cite it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResumeChunk {
    /// `C1`, `C2`, ... in resume order.
    pub id: String,
    /// `experience`, `projects`, `skills`, ...
    pub section_type: String,
    /// The chunk's text.
    pub content: String,
    /// How relevant retrieval found it, 0 to 1 (cosine similarity, or the share of the
    /// weighted keywords it contains when ranked without embeddings).
    pub relevance_score: f64,
}

/// A rewritten bullet, the resume's bullet it replaces, and the chunks it draws on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RewrittenBullet {
    /// `B1`, `B2`, ... in order.
    pub id: String,
    /// The resume's bullet it replaces ([`crate::bullets::BulletSlot`] `C3.2`).
    #[serde(default)]
    pub replaces: String,
    /// That bullet as the resume writes it.
    #[serde(default)]
    pub original: String,
    /// The bullet.
    pub text: String,
    /// Ids of the chunks it draws on (`C3`).
    pub sources: Vec<String>,
}

/// A rewritten bullet refused by the fabrication check: never shown as fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DroppedBullet {
    /// The bullet as the model wrote it.
    pub text: String,
    /// The chunks it named.
    pub sources: Vec<String>,
    /// What it introduced that neither its sources nor the user's answers say.
    pub reason: String,
}

/// Per-category scores, each 0 to 1 (`ScoreBreakdownDict`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScoreBreakdown {
    /// JD keywords found in the bullets, by weight.
    pub keywords: f64,
    /// Hard and soft skills the bullets show.
    pub skills: f64,
    /// JD responsibilities the bullets map to.
    pub experience: f64,
    /// Action verbs, numbers, length.
    pub formatting: f64,
}

/// The scoring weights of spec 003 section 3.5.
pub const WEIGHTS: ScoreBreakdown = ScoreBreakdown {
    keywords: 0.35,
    skills: 0.30,
    experience: 0.25,
    formatting: 0.10,
};

impl ScoreBreakdown {
    /// Every value clamped to 0..=1 (a non-number becomes 0.5).
    pub fn clamped(self) -> Self {
        let clamp = |v: f64| {
            if v.is_finite() {
                v.clamp(0.0, 1.0)
            } else {
                0.5
            }
        };
        ScoreBreakdown {
            keywords: clamp(self.keywords),
            skills: clamp(self.skills),
            experience: clamp(self.experience),
            formatting: clamp(self.formatting),
        }
    }

    /// The weighted overall score.
    ///
    /// ```
    /// use jd_optimizer::records::ScoreBreakdown;
    /// let all = ScoreBreakdown { keywords: 1.0, skills: 1.0, experience: 1.0, formatting: 1.0 };
    /// assert!((all.overall() - 1.0).abs() < 1e-9);
    /// ```
    pub fn overall(&self) -> f64 {
        let v = self.clamped();
        v.keywords * WEIGHTS.keywords
            + v.skills * WEIGHTS.skills
            + v.experience * WEIGHTS.experience
            + v.formatting * WEIGHTS.formatting
    }

    /// The value of `category`.
    pub fn get(&self, category: Category) -> f64 {
        match category {
            Category::Keywords => self.keywords,
            Category::Skills => self.skills,
            Category::Experience => self.experience,
            Category::Formatting => self.formatting,
        }
    }

    /// Sets the value of `category`.
    pub fn set(&mut self, category: Category, value: f64) {
        match category {
            Category::Keywords => self.keywords = value,
            Category::Skills => self.skills = value,
            Category::Experience => self.experience = value,
            Category::Formatting => self.formatting = value,
        }
    }
}

/// A scoring category.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Keyword coverage.
    Keywords,
    /// Skills alignment.
    Skills,
    /// Experience relevance.
    Experience,
    /// ATS formatting.
    Formatting,
}

impl Category {
    /// All four, in the spec's order.
    pub const ALL: [Category; 4] = [
        Category::Keywords,
        Category::Skills,
        Category::Experience,
        Category::Formatting,
    ];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Keywords => "keywords",
            Category::Skills => "skills",
            Category::Experience => "experience",
            Category::Formatting => "formatting",
        }
    }
}

/// Which lane gave a score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScoringLane {
    /// The deterministic scorer alone (confident, or degraded to it).
    Rules,
    /// The rules plus a compact model call on the weak categories.
    CompactModel,
    /// The full model scorer.
    FullModel,
}

/// What produced a set of bullets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttemptKind {
    /// The resume as it was, before any rewrite (the baseline).
    Original,
    /// A full rewrite.
    FullRewrite,
    /// A targeted repair of weak bullets.
    TargetedRepair,
}

/// One scoring of a set of bullets: every attempt scores the same slots (the resume's
/// own bullets, each replaced by the attempt's rewrite when it has one), and is compared
/// with the resume as it is scored the same way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AttemptScore {
    /// 0 for the resume as it is, then 1, 2, ...
    pub attempt: u32,
    /// What produced the bullets.
    pub kind: AttemptKind,
    /// The overall score, 0 to 1, by `lane`.
    pub score: f64,
    /// Per category.
    pub breakdown: ScoreBreakdown,
    /// Which lane scored it.
    pub lane: ScoringLane,
    /// The deterministic scorer's confidence, 0 to 1.
    pub confidence: f64,
    /// The rules' overall score alone, 0 to 1: the scale every attempt shares.
    pub rules_score: f64,
    /// The resume's own bullets scored the same way as this attempt (the same lane and
    /// categories), 0 to 1.
    pub baseline: f64,
    /// The attempt's rewrites (none for the resume as it is).
    pub bullets: Vec<RewrittenBullet>,
}

impl AttemptScore {
    /// Points (0 to 1) this attempt scores above the resume as it is, on its own scale.
    pub fn gain(&self) -> f64 {
        self.score - self.baseline
    }
}

/// How urgent a gap is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Central to the role.
    High,
    /// Asked for.
    Medium,
    /// Nice to have.
    Low,
}

/// The gaps rewording cannot close (`GapReportDict`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GapReport {
    /// Required skills the resume does not show.
    pub missing_skills: Vec<String>,
    /// Qualifications the resume does not show (years, degrees, certifications), each
    /// with what the resume shows instead.
    #[serde(default)]
    pub missing_qualifications: Vec<String>,
    /// Soft skills the description asks for that the resume never shows.
    #[serde(default)]
    pub missing_soft_skills: Vec<String>,
    /// What to do about them.
    pub recommendations: Vec<String>,
    /// Skills that partly cover a gap.
    pub transferable_skills: Vec<String>,
    /// Missing skill to urgency.
    pub priority: BTreeMap<String, Priority>,
}

/// Who wrote the gap report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GapSource {
    /// The gap analyzer model.
    Model,
    /// The deterministic diff of the description's skills and the resume.
    Deterministic,
}

/// A failure the run recorded (`AgentErrorDict`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentErrorRecord {
    /// The agent that failed (`jd_analyzer`, `ats_scorer`, ...).
    pub agent_name: String,
    /// What kind of failure (`invalid_output`, `model_error`, `store_unavailable`, ...).
    pub error_type: String,
    /// What happened.
    pub error_message: String,
    /// Whether the run went on.
    pub recoverable: bool,
}

/// A way the run was degraded under budget pressure (spec 4.6.3), in the order they apply.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Degrade {
    /// The gap report is the deterministic diff, not the model's.
    SkipGapModel,
    /// The rewrite asked for fewer, shorter bullets.
    ShortRewrite,
    /// Scores came from the rules alone.
    RuleScoringOnly,
}

/// Which budget limit stopped the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BudgetLimit {
    /// `max_tokens`.
    Tokens,
    /// `max_calls`.
    Calls,
    /// `max_wall_ms`.
    WallTime,
}

/// The run reached a budget limit and went straight to aggregation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BudgetStop {
    /// The limit reached.
    pub limit: BudgetLimit,
    /// The node that found it.
    pub at_node: String,
    /// In words.
    pub message: String,
}

/// Where the router sends the run after scoring (spec 4.6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RouteKey {
    /// Good enough, out of attempts, or on a plateau: on to the gap analysis.
    ProceedToGap,
    /// Patch the weak bullets for the weak categories.
    TargetedRepair,
    /// Rewrite everything again (only when configured).
    FullRewrite,
    /// A budget limit was reached: straight to aggregation.
    BudgetReached,
}

impl RouteKey {
    /// The branch key the graph routes on.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteKey::ProceedToGap => "proceed_to_gap",
            RouteKey::TargetedRepair => "targeted_repair",
            RouteKey::FullRewrite => "full_rewrite",
            RouteKey::BudgetReached => "budget_reached",
        }
    }
}

/// A routing decision with its reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Route {
    /// Where to.
    pub next: RouteKey,
    /// Why, in words.
    pub reason: String,
}

/// How the chunks were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RetrievalSource {
    /// Not retrieved yet.
    #[default]
    None,
    /// Hybrid search of the tenant's indexed resume.
    Hybrid,
    /// The cache of an earlier identical retrieval.
    Cache,
    /// The raw sections ranked by keywords (no embeddings, a store down or empty).
    RawSections,
}

/// Cache lookups made by this run: `true` a hit, `false` a miss.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CacheUse {
    /// The JD analysis.
    pub jd_analysis: Option<bool>,
    /// The retrieval.
    pub retrieval: Option<bool>,
}
