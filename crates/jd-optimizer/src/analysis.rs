//! The job description: checked before any model call, cut to what an analysis needs,
//! and its analysis (spec 003 section 2.1, `JDAnalysisDict`).

use std::collections::BTreeMap;

use job_capabilities::retrieval::{SectionKind, chunk_document};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The shortest job description analysed, in characters (spec 003 section 7.3).
pub const MIN_JD_CHARS: usize = 50;

/// Why a job description is refused before any model call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JdRefused {
    /// Fewer than [`MIN_JD_CHARS`] characters once trimmed.
    #[error("the job description is too short: {chars} characters, at least {MIN_JD_CHARS} needed")]
    TooShort {
        /// Characters given.
        chars: usize,
    },
    /// No words: digits, symbols or repeated characters only.
    #[error("the job description has no words to analyse")]
    NoWords,
}

/// Checks a job description: at least [`MIN_JD_CHARS`] characters and at least five
/// words of two letters or more.
pub fn check_jd(text: &str) -> Result<(), JdRefused> {
    let chars = text.trim().chars().count();
    if chars < MIN_JD_CHARS {
        return Err(JdRefused::TooShort { chars });
    }
    let words = text
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| w.chars().count() >= 2)
        .filter(|w| {
            let mut letters = w.chars();
            let first = letters.next();
            letters.any(|c| Some(c) != first)
        })
        .count();
    if words < 5 {
        return Err(JdRefused::NoWords);
    }
    Ok(())
}

/// A short, stable digest of a text: the first 16 hex digits of its SHA-256, over its
/// words (case and spacing do not change it). Cache keys and resume ids use it.
pub fn text_hash(text: &str) -> String {
    let canonical = text
        .split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ");
    let digest = Sha256::digest(canonical.as_bytes());
    hex::encode(&digest[..8])
}

/// What the analyzer reads of a job description: its title lines, responsibilities,
/// requirements and unrecognized sections, without the "about us", benefits and legal
/// boilerplate that carry no requirement (spec 7.6.3: send only what matters). A
/// description with no recognizable sections is kept whole.
pub fn analysis_text(jd: &str) -> String {
    let chunks = chunk_document("jd", jd);
    let kept: Vec<&str> = chunks
        .iter()
        .filter(|c| !matches!(c.section, SectionKind::About | SectionKind::Benefits))
        .map(|c| c.text.as_str())
        .collect();
    if kept.is_empty() {
        return jd.trim().to_owned();
    }
    kept.join("\n")
}

/// Whether a job description is long enough to give the rewriter more chunks: over 600
/// words or more than 12 hard skills.
pub fn is_long_jd(jd: &str, analysis: &JdAnalysis) -> bool {
    jd.split_whitespace().count() > 600 || analysis.hard_skills.len() > 12
}

/// The requirements of a job description (spec 003 `JDAnalysisDict`): the analyzer's
/// structured output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JdAnalysis {
    /// Technical skills.
    pub hard_skills: Vec<String>,
    /// Interpersonal skills.
    pub soft_skills: Vec<String>,
    /// Key duties.
    pub responsibilities: Vec<String>,
    /// Education, certifications, years.
    pub qualifications: Vec<String>,
    /// Keyword to importance, 0 to 1.
    pub keyword_weights: BTreeMap<String, f64>,
}

impl JdAnalysis {
    /// Keeps weights within 0 to 1, drops empty entries and duplicates (case-blind), and
    /// gives every hard skill without a weight 0.5, so scoring can rely on the map.
    pub fn normalized(mut self) -> Self {
        let clean = |items: &mut Vec<String>| {
            let mut seen = std::collections::BTreeSet::new();
            items.retain(|item| {
                let key = item.trim().to_lowercase();
                !key.is_empty() && seen.insert(key)
            });
            for item in items.iter_mut() {
                *item = item.trim().to_owned();
            }
        };
        clean(&mut self.hard_skills);
        clean(&mut self.soft_skills);
        clean(&mut self.responsibilities);
        clean(&mut self.qualifications);
        let mut weights = BTreeMap::new();
        for (keyword, weight) in std::mem::take(&mut self.keyword_weights) {
            let keyword = keyword.trim().to_owned();
            if keyword.is_empty() {
                continue;
            }
            let weight = if weight.is_finite() {
                weight.clamp(0.0, 1.0)
            } else {
                0.5
            };
            weights.insert(keyword, weight);
        }
        for skill in &self.hard_skills {
            let known = weights.keys().any(|k| k.eq_ignore_ascii_case(skill));
            if !known {
                weights.insert(skill.clone(), 0.5);
            }
        }
        self.keyword_weights = weights;
        self
    }

    /// The keywords by weight, heaviest first (ties by name, so prompts are stable).
    pub fn ranked_keywords(&self) -> Vec<(&str, f64)> {
        let mut ranked: Vec<(&str, f64)> = self
            .keyword_weights
            .iter()
            .map(|(k, w)| (k.as_str(), *w))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        ranked
    }

    /// The `n` heaviest keywords.
    pub fn top_keywords(&self, n: usize) -> Vec<&str> {
        self.ranked_keywords()
            .into_iter()
            .take(n)
            .map(|(k, _)| k)
            .collect()
    }

    /// The `n` heaviest keywords, then a line of the hard skills they leave out (none:
    /// no line), so a prompt names each skill once.
    pub fn keywords_and_other_skills(&self, n: usize) -> String {
        let keywords = self.top_keywords(n);
        let mut others: Vec<&str> = self
            .hard_skills
            .iter()
            .map(String::as_str)
            .filter(|skill| !keywords.iter().any(|k| k.eq_ignore_ascii_case(skill)))
            .collect();
        others.sort_by_key(|s| s.to_lowercase());
        let mut lines = format!("Keywords (heaviest first): {}\n", keywords.join(", "));
        if !others.is_empty() {
            lines.push_str(&format!("Other hard skills: {}\n", others.join(", ")));
        }
        lines
    }

    /// Whether `keyword` is one of the soft skills (case-blind).
    pub fn is_soft_skill(&self, keyword: &str) -> bool {
        self.soft_skills
            .iter()
            .any(|s| s.eq_ignore_ascii_case(keyword))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_names_each_skill_once() {
        let analysis = JdAnalysis {
            hard_skills: vec!["Rust".into(), "Kafka".into(), "SQL".into()],
            keyword_weights: [("Rust".to_owned(), 0.9), ("Kafka".to_owned(), 0.6)].into(),
            ..JdAnalysis::default()
        };
        assert_eq!(
            analysis.keywords_and_other_skills(5),
            "Keywords (heaviest first): Rust, Kafka\nOther hard skills: SQL\n"
        );
        assert_eq!(
            analysis.keywords_and_other_skills(1),
            "Keywords (heaviest first): Rust\nOther hard skills: Kafka, SQL\n"
        );
    }

    #[test]
    fn check_jd_refuses_what_cannot_be_analysed() {
        use crate::analysis::{JdRefused, check_jd};
        assert_eq!(
            check_jd("Rust engineer"),
            Err(JdRefused::TooShort { chars: 13 })
        );
        assert_eq!(check_jd(&"#$%& 1234 ".repeat(10)), Err(JdRefused::NoWords));
        assert!(
            check_jd("Senior Rust engineer to build our payment services on AWS with Kafka.")
                .is_ok()
        );
    }

    #[test]
    fn the_text_hash_ignores_case_and_spacing() {
        use crate::analysis::text_hash;
        assert_eq!(text_hash("Rust  Engineer\n"), text_hash("rust engineer"));
        assert_eq!(text_hash("x").len(), 16);
    }

    #[test]
    fn analysis_text_keeps_the_role_and_requirements_and_drops_the_rest() {
        let jd = "Backend Engineer\n\nAbout us\nWe are a friendly fintech.\n\nRequirements\n- 5+ years of Rust\n- Kafka\n\nBenefits\n- Free lunch\n";
        let compact = crate::analysis::analysis_text(jd);
        assert!(compact.contains("5+ years of Rust") && compact.contains("Backend Engineer"));
        assert!(!compact.contains("Free lunch") && !compact.contains("fintech"));
    }

    #[test]
    fn normalizing_clamps_weights_and_weighs_every_hard_skill() {
        let analysis = JdAnalysis {
            hard_skills: vec!["Rust".into(), " rust ".into(), "Kafka".into()],
            keyword_weights: BTreeMap::from([("Rust".into(), 1.7), ("".into(), 0.3)]),
            ..JdAnalysis::default()
        }
        .normalized();
        assert_eq!(analysis.hard_skills, ["Rust", "Kafka"]);
        assert_eq!(analysis.keyword_weights["Rust"], 1.0);
        assert_eq!(analysis.keyword_weights["Kafka"], 0.5);
        assert_eq!(analysis.top_keywords(1), ["Rust"]);
    }

    #[test]
    fn a_description_of_one_repeated_word_has_no_words() {
        assert_eq!(check_jd(&"aaaa ".repeat(20)), Err(JdRefused::NoWords));
    }
}
