//! Which bullets a targeted repair can honestly improve (spec 003 section 3.7.3): those
//! whose sources (or the skills the candidate lists) hold keywords no bullet uses yet, or whose form can be fixed (no action
//! verb, too long or short, a number the sources give but the bullet left out).

use serde::{Deserialize, Serialize};

use crate::bullets::bullet_slots;
use crate::records::Category;
use crate::scoring::RuleScore;
use crate::state::OptimizationState;
use crate::text::{Found, find_keyword, numbers};

/// Bullets patched by one repair at most.
pub const MAX_TARGETS: usize = 3;

/// A bullet to repair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairTarget {
    /// The bullet (`B2`).
    pub bullet_id: String,
    /// What is wrong with its form.
    pub issues: Vec<String>,
    /// Missing keywords its sources contain, heaviest first.
    pub keywords: Vec<String>,
    /// The categories under the threshold.
    pub weak_categories: Vec<Category>,
}

/// The bullets worth repairing, most promising first, at most [`MAX_TARGETS`]; empty
/// when nothing a repair could honestly change would raise the weak categories.
pub fn repair_targets(state: &OptimizationState, rules: &RuleScore) -> Vec<RepairTarget> {
    let threshold = state.config.score_threshold;
    let weak = rules.weak_categories(threshold);
    if weak.is_empty() {
        return Vec::new();
    }
    let wants_keywords = weak.iter().any(|c| {
        matches!(
            c,
            Category::Keywords | Category::Skills | Category::Experience
        )
    });
    let wants_form = weak.contains(&Category::Formatting);
    let weights = state
        .jd_analysis
        .as_ref()
        .map(|a| a.keyword_weights.clone())
        .unwrap_or_default();

    // The rules scored every slot: a bullet's issues are those of the slot it replaces.
    let slots = bullet_slots(state);
    let mut targets: Vec<(f64, RepairTarget)> = Vec::new();
    for bullet in &state.optimized_bullets {
        let Some(index) = slots.iter().position(|s| s.id == bullet.replaces) else {
            continue;
        };
        // Its own sources, and the skills the candidate lists: a patch may cite those too.
        let source_text: String = state
            .rewrite_sources()
            .iter()
            .filter(|c| bullet.sources.contains(&c.id) || c.section_type == "skills")
            .map(|c| c.content.as_str())
            .chain(state.user_facts.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        let keywords: Vec<String> = if wants_keywords {
            rules
                .missing_keywords
                .iter()
                .filter(|k| find_keyword(&source_text, k) != Found::No)
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        let issues: Vec<String> = if wants_form {
            rules
                .bullet_issues
                .iter()
                .find(|i| i.index == index)
                .map(|i| {
                    i.formatting
                        .iter()
                        .filter(|issue| {
                            issue.as_str() != "no number" || !numbers(&source_text).is_empty()
                        })
                        .cloned()
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        if keywords.is_empty() && issues.is_empty() {
            continue;
        }
        let gain = keywords
            .iter()
            .map(|k| weights.get(k).copied().unwrap_or(0.5))
            .sum::<f64>()
            + 0.2 * issues.len() as f64;
        targets.push((
            gain,
            RepairTarget {
                bullet_id: bullet.id.clone(),
                issues,
                keywords,
                weak_categories: weak.clone(),
            },
        ));
    }
    targets.sort_by(|a, b| b.0.total_cmp(&a.0));
    targets
        .into_iter()
        .take(MAX_TARGETS)
        .map(|(_, t)| t)
        .collect()
}
