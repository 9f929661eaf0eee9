//! The deterministic scorer (spec 003 section 3.7.1): keyword coverage with stems and
//! aliases, responsibility mapping, formatting checks, and how confident it is.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::analysis::JdAnalysis;
use crate::records::{Category, ScoreBreakdown};
use crate::text::{Found, content_stems, find_keyword, numbers, starts_with_action_verb, words};

/// A keyword found only by stem counts this much of a full match.
const STEM_CREDIT: f64 = 0.7;
/// A duty whose content words a bullet shares at least this much counts as mapped.
const MAPPED_OVERLAP: f64 = 0.5;
/// Below this share a duty is clearly not mapped; between the two it is ambiguous.
const UNMAPPED_OVERLAP: f64 = 0.2;
/// A bullet of this many words, or between this and [`MAX_WORDS`], reads well.
const MIN_WORDS: usize = 8;
/// Longer bullets are hard to scan.
const MAX_WORDS: usize = 32;

/// What a bullet lacks, for a targeted repair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulletIssues {
    /// The bullet's index among those scored.
    pub index: usize,
    /// `no action verb`, `no number`, `too long (41 words)`, `too short (5 words)`.
    pub formatting: Vec<String>,
    /// Whether it contains none of the description's keywords.
    pub no_keyword: bool,
}

/// The deterministic scorer's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleScore {
    /// Per category, 0 to 1.
    pub breakdown: ScoreBreakdown,
    /// How sure the rules are of it, 0 to 1.
    pub confidence: f64,
    /// Keywords found in no bullet, heaviest first.
    pub missing_keywords: Vec<String>,
    /// Responsibilities no bullet maps to.
    pub unmapped_responsibilities: Vec<String>,
    /// Per bullet, the bullets with something to fix.
    pub bullet_issues: Vec<BulletIssues>,
}

impl RuleScore {
    /// The weighted overall score.
    pub fn overall(&self) -> f64 {
        self.breakdown.overall()
    }

    /// Categories under `threshold`, weakest first.
    pub fn weak_categories(&self, threshold: f64) -> Vec<Category> {
        let mut weak: Vec<Category> = Category::ALL
            .into_iter()
            .filter(|c| self.breakdown.get(*c) < threshold)
            .collect();
        weak.sort_by(|a, b| self.breakdown.get(*a).total_cmp(&self.breakdown.get(*b)));
        weak
    }
}

fn credit(found: Found) -> f64 {
    match found {
        Found::Exactly => 1.0,
        Found::ByStem => STEM_CREDIT,
        Found::No => 0.0,
    }
}

/// Scores `bullets` against `analysis`; `threshold` is the score the router compares
/// with (a result close to it lowers the confidence: that decision is borderline).
pub fn score_by_rules<S: AsRef<str>>(
    analysis: &JdAnalysis,
    bullets: &[S],
    threshold: f64,
) -> RuleScore {
    let bullets: Vec<&str> = bullets.iter().map(AsRef::as_ref).collect();
    let all_text = bullets.join("\n");
    let mut ambiguous = 0usize;
    let mut items = 0usize;

    // Keywords, by weight.
    let mut weighted = 0.0;
    let mut total_weight = 0.0;
    let mut missing_keywords = Vec::new();
    for (keyword, weight) in analysis.ranked_keywords() {
        let found = find_keyword(&all_text, keyword);
        items += 1;
        if found == Found::ByStem {
            ambiguous += 1;
        }
        if found == Found::No {
            missing_keywords.push(keyword.to_owned());
        }
        weighted += weight * credit(found);
        total_weight += weight;
    }
    let keywords = if total_weight > 0.0 {
        weighted / total_weight
    } else {
        0.5
    };

    // Skills: hard skills carry 80 %, soft skills 20 %.
    let coverage = |skills: &[String]| -> Option<f64> {
        (!skills.is_empty()).then(|| {
            skills
                .iter()
                .map(|s| credit(find_keyword(&all_text, s)))
                .sum::<f64>()
                / skills.len() as f64
        })
    };
    let skills = match (
        coverage(&analysis.hard_skills),
        coverage(&analysis.soft_skills),
    ) {
        (Some(hard), Some(soft)) => 0.8 * hard + 0.2 * soft,
        (Some(hard), None) => hard,
        (None, Some(soft)) => soft,
        (None, None) => 0.5,
    };

    // Experience: each responsibility mapped to its best bullet.
    let bullet_stems: Vec<BTreeSet<String>> = bullets.iter().map(|b| content_stems(b)).collect();
    let mut unmapped_responsibilities = Vec::new();
    let mut mapped_sum = 0.0;
    for duty in &analysis.responsibilities {
        let duty_stems = content_stems(duty);
        if duty_stems.is_empty() {
            continue;
        }
        let best = bullet_stems
            .iter()
            .map(|b| duty_stems.intersection(b).count() as f64 / duty_stems.len() as f64)
            .fold(0.0, f64::max);
        items += 1;
        if best > UNMAPPED_OVERLAP && best < MAPPED_OVERLAP {
            ambiguous += 1;
        }
        if best <= UNMAPPED_OVERLAP {
            unmapped_responsibilities.push(duty.clone());
        }
        mapped_sum += (best / MAPPED_OVERLAP).min(1.0);
    }
    let duties = analysis
        .responsibilities
        .iter()
        .filter(|d| !content_stems(d).is_empty())
        .count();
    let experience = if duties > 0 {
        mapped_sum / duties as f64
    } else {
        0.5
    };

    // Formatting, per bullet.
    let mut bullet_issues = Vec::new();
    let mut formatting_sum = 0.0;
    for (index, bullet) in bullets.iter().enumerate() {
        let mut issues = Vec::new();
        let mut points = 0.0;
        if starts_with_action_verb(bullet) {
            points += 0.4;
        } else {
            issues.push("no action verb".to_owned());
        }
        if numbers(bullet).is_empty() {
            issues.push("no number".to_owned());
        } else {
            points += 0.3;
        }
        let length = words(bullet).len();
        if length > MAX_WORDS {
            issues.push(format!("too long ({length} words)"));
        } else if length < MIN_WORDS {
            issues.push(format!("too short ({length} words)"));
        } else {
            points += 0.3;
        }
        formatting_sum += points;
        let no_keyword = !analysis
            .keyword_weights
            .keys()
            .any(|k| find_keyword(bullet, k) != Found::No);
        if !issues.is_empty() || no_keyword {
            bullet_issues.push(BulletIssues {
                index,
                formatting: issues,
                no_keyword,
            });
        }
    }
    let formatting = if bullets.is_empty() {
        0.0
    } else {
        formatting_sum / bullets.len() as f64
    };

    let breakdown = ScoreBreakdown {
        keywords,
        skills,
        experience,
        formatting,
    }
    .clamped();

    // Confidence: enough evidence, few ambiguous matches, enough bullets, a clear margin.
    let evidence = (items as f64 / 6.0).min(1.0);
    let ambiguous_share = if items == 0 {
        1.0
    } else {
        ambiguous as f64 / items as f64
    };
    let enough_bullets = (bullets.len() as f64 / 3.0).min(1.0);
    let margin = (breakdown.overall() - threshold).abs();
    let clear_margin = if margin < 0.05 {
        0.85 + 3.0 * margin
    } else {
        1.0
    };
    let confidence =
        (evidence * enough_bullets * (1.0 - 0.5 * ambiguous_share) * clear_margin).clamp(0.0, 1.0);

    RuleScore {
        breakdown,
        confidence,
        missing_keywords,
        unmapped_responsibilities,
        bullet_issues,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_rules_score_keywords_and_duties_found() {
        use crate::analysis::JdAnalysis;
        use crate::scoring::score_by_rules;
        let jd = JdAnalysis {
            hard_skills: vec!["Rust".into(), "Kafka".into()],
            responsibilities: vec!["Build payment services".into()],
            ..Default::default()
        }
        .normalized();
        let good = score_by_rules(
            &jd,
            &["Built payment services in Rust on Kafka, cutting latency 40%"],
            0.75,
        );
        let poor = score_by_rules(&jd, &["Answered phones"], 0.75);
        assert!(good.overall() > 0.9 && poor.overall() < 0.2);
        assert_eq!(poor.missing_keywords, ["Kafka", "Rust"]);
    }

    fn analysis() -> JdAnalysis {
        JdAnalysis {
            hard_skills: vec!["Python".into(), "AWS".into(), "Docker".into()],
            soft_skills: vec!["leadership".into()],
            responsibilities: vec![
                "Design and maintain microservices".into(),
                "Lead code reviews".into(),
            ],
            qualifications: vec!["5+ years backend experience".into()],
            keyword_weights: BTreeMap::from([
                ("Python".into(), 0.95),
                ("AWS".into(), 0.85),
                ("Docker".into(), 0.7),
                ("microservices".into(), 0.6),
            ]),
        }
        .normalized()
    }

    #[test]
    fn keywords_found_by_stem_count_less_than_exact_ones() {
        let exact = score_by_rules(&analysis(), &["Built microservices"], 0.75);
        let stem = score_by_rules(&analysis(), &["Built a microservice"], 0.75);
        assert!(exact.breakdown.keywords > stem.breakdown.keywords);
        assert!(stem.breakdown.keywords > 0.0);
    }

    #[test]
    fn formatting_names_what_each_bullet_lacks() {
        let score = score_by_rules(
            &analysis(),
            &[
                "Responsible for the build system of the company and its many teams",
                "Cut AWS costs 30% by moving Python jobs to Docker on spot instances",
            ],
            0.75,
        );
        assert_eq!(score.bullet_issues.len(), 1);
        assert_eq!(score.bullet_issues[0].index, 0);
        assert_eq!(
            score.bullet_issues[0].formatting,
            ["no action verb", "no number"]
        );
        assert!(score.bullet_issues[0].no_keyword);
    }

    #[test]
    fn clear_strong_bullets_are_scored_with_confidence() {
        let score = score_by_rules(
            &analysis(),
            &[
                "Designed and maintained 12 Python microservices on AWS, serving 3M requests a day",
                "Led code reviews for 6 engineers, showing leadership in Docker migration of 40 services",
                "Packaged 20 Python services as Docker images deployed on AWS ECS in 2 regions",
            ],
            0.75,
        );
        assert!(score.overall() > 0.85, "{score:?}");
        assert!(score.confidence >= 0.85, "{score:?}");
        assert!(score.missing_keywords.is_empty());
    }

    #[test]
    fn few_bullets_and_little_evidence_lower_the_confidence() {
        let thin = JdAnalysis {
            hard_skills: vec!["Go".into()],
            ..JdAnalysis::default()
        }
        .normalized();
        let score = score_by_rules(&thin, &["Built Go services for 3 teams"], 0.75);
        assert!(score.confidence < 0.6, "{score:?}");
    }
}
