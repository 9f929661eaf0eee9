//! Scoring in two lanes: the deterministic scorer ([`score_by_rules`]) answers first;
//! its confidence picks the lane (spec 003 section 3.7.1):
//!
//! | confidence | lane |
//! |---|---|
//! | ≥ 0.85 | the rules alone, no model call |
//! | 0.60 to 0.85 | a compact model call on the weak categories only |
//! | < 0.60 | the full model scorer |
//!
//! Model values are clamped to 0..=1 and weighed 0.35 / 0.30 / 0.25 / 0.10.

mod rules;

pub use rules::{BulletIssues, RuleScore, score_by_rules};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::OptimizeConfig;
use crate::records::{Category, ScoreBreakdown, ScoringLane};

/// The lane a rule score calls for.
///
/// ```
/// use jd_optimizer::{OptimizeConfig, scoring::lane_for, records::ScoringLane};
/// let config = OptimizeConfig::default();
/// assert_eq!(lane_for(0.9, &config), ScoringLane::Rules);
/// assert_eq!(lane_for(0.7, &config), ScoringLane::CompactModel);
/// assert_eq!(lane_for(0.4, &config), ScoringLane::FullModel);
/// ```
pub fn lane_for(confidence: f64, config: &OptimizeConfig) -> ScoringLane {
    if confidence >= config.rules_only_confidence {
        ScoringLane::Rules
    } else if confidence >= config.full_model_confidence {
        ScoringLane::CompactModel
    } else {
        ScoringLane::FullModel
    }
}

/// The model scorer's answer: a value per category it was asked about, 0 to 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelScores {
    /// Keyword coverage.
    #[serde(default)]
    pub keywords: Option<f64>,
    /// Skills alignment.
    #[serde(default)]
    pub skills: Option<f64>,
    /// Experience relevance.
    #[serde(default)]
    pub experience: Option<f64>,
    /// Formatting.
    #[serde(default)]
    pub formatting: Option<f64>,
}

impl ModelScores {
    /// The value given for `category`.
    pub fn get(&self, category: Category) -> Option<f64> {
        match category {
            Category::Keywords => self.keywords,
            Category::Skills => self.skills,
            Category::Experience => self.experience,
            Category::Formatting => self.formatting,
        }
    }
}

/// The breakdown with the model's values for `categories` in place of the rules' (a
/// category the model left out keeps the rules' value); everything clamped.
///
/// ```
/// use jd_optimizer::scoring::{ModelScores, merge_scores};
/// use jd_optimizer::records::{Category, ScoreBreakdown};
/// let rules = ScoreBreakdown { keywords: 0.9, skills: 0.9, experience: 0.4, formatting: 1.0 };
/// let model = ModelScores { experience: Some(1.4), keywords: Some(0.1), ..Default::default() };
/// let merged = merge_scores(rules, &model, &[Category::Experience]);
/// assert_eq!((merged.keywords, merged.experience), (0.9, 1.0));
/// ```
pub fn merge_scores(
    rules: ScoreBreakdown,
    model: &ModelScores,
    categories: &[Category],
) -> ScoreBreakdown {
    let mut merged = rules;
    for &category in categories {
        if let Some(value) = model.get(category) {
            merged.set(category, value);
        }
    }
    merged.clamped()
}
