//! How an optimization runs: the score it aims for, the repairs it may make and the
//! budget it must stay in (spec 003 sections 3.7 and 4.6, the V2 profile).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most an optimization may spend (spec 4.6.2). When one limit is reached the run
/// goes straight to aggregation with a warning; before that, budget pressure degrades it
/// (skip the gap model, shorten the rewrite, score by rules only).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Budget {
    /// Input and output tokens of every model call together (default 7,000).
    pub max_tokens: u64,
    /// Model calls, re-asks included (default 6).
    pub max_calls: u64,
    /// Wall time of the whole optimization, in milliseconds (default 55,000).
    pub max_wall_ms: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_tokens: 7_000,
            max_calls: 6,
            max_wall_ms: 55_000,
        }
    }
}

impl Budget {
    /// The wall-time limit.
    pub fn max_wall(&self) -> Duration {
        Duration::from_millis(self.max_wall_ms)
    }

    /// This budget, each limit no higher than `ceiling`'s: what a request may ask for
    /// where a deployment sets the most it pays for.
    ///
    /// ```
    /// use jd_optimizer::Budget;
    /// let asked = Budget { max_tokens: 1_000_000, max_calls: 3, max_wall_ms: 10_000 };
    /// let allowed = asked.within(&Budget::default());
    /// assert_eq!((allowed.max_tokens, allowed.max_calls, allowed.max_wall_ms), (7_000, 3, 10_000));
    /// ```
    pub fn within(&self, ceiling: &Budget) -> Budget {
        Budget {
            max_tokens: self.max_tokens.min(ceiling.max_tokens),
            max_calls: self.max_calls.min(ceiling.max_calls),
            max_wall_ms: self.max_wall_ms.min(ceiling.max_wall_ms),
        }
    }
}

/// The optimization's settings; the defaults are spec 003's V2 profile.
///
/// ```
/// let config = jd_optimizer::OptimizeConfig::default();
/// assert_eq!((config.score_threshold, config.max_repair_attempts), (0.75, 1));
/// assert!(!config.second_full_rewrite);
/// assert_eq!(config.budget.max_calls, 6);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct OptimizeConfig {
    /// The score (0 to 1) at which the bullets are good enough (default 0.75).
    pub score_threshold: f64,
    /// Targeted repairs after the first rewrite (default 1).
    pub max_repair_attempts: u32,
    /// Whether a second full rewrite may follow when repairs are spent (default no: the
    /// V2 profile repairs instead).
    pub second_full_rewrite: bool,
    /// Chunks given to the rewriter (default 6; [`OptimizeConfig::long_jd_top_k`] for a
    /// long job description).
    pub top_k: usize,
    /// Chunks for a long job description (default 8).
    pub long_jd_top_k: usize,
    /// The retriever's cosine floor (default 0.3).
    pub relevance_floor: f32,
    /// The rewriter's input cap in estimated tokens (default 2,200).
    pub max_rewriter_input_tokens: usize,
    /// Characters kept of each chunk in the rewriter's prompt (default 900).
    pub max_chunk_chars: usize,
    /// Weighted keywords shown to the rewriter (default 10).
    pub prompt_keywords: usize,
    /// Rule-based confidence at or above which no model scores (default 0.85).
    pub rules_only_confidence: f64,
    /// Rule-based confidence below which the full model scorer runs (default 0.60).
    pub full_model_confidence: f64,
    /// A repair that gains fewer points than this (on 0 to 100) is a plateau (default 1).
    pub plateau_points: f64,
    /// The spending limits.
    pub budget: Budget,
}

impl Default for OptimizeConfig {
    fn default() -> Self {
        OptimizeConfig {
            score_threshold: 0.75,
            max_repair_attempts: 1,
            second_full_rewrite: false,
            top_k: 6,
            long_jd_top_k: 8,
            relevance_floor: 0.3,
            max_rewriter_input_tokens: 2_200,
            max_chunk_chars: 900,
            prompt_keywords: 10,
            rules_only_confidence: 0.85,
            full_model_confidence: 0.60,
            plateau_points: 1.0,
            budget: Budget::default(),
        }
    }
}
