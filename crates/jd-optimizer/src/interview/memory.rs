//! The compact memory profile (spec 003 section 7.6.2): a user's core skills, signature
//! achievements, preferred tone and accepted phrasing, kept per tenant and user in a
//! [`DocumentStore`] and read first by the interview agents, so they need far fewer
//! prompt tokens than the whole resume.

use std::sync::Arc;

use agent_runtime::documents::DocumentStore;
use agent_runtime::sessions::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bullets::current_bullets;
use crate::state::OptimizationState;
use crate::text::{Found, find_keyword, numbers, words};

use super::cover_letter::Tone;

/// Achievements kept.
const MAX_ACHIEVEMENTS: usize = 5;
/// Skills kept.
const MAX_SKILLS: usize = 12;

/// What the interview agents read first about a candidate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryProfile {
    /// Skills the job asked for that the resume shows.
    pub core_skills: Vec<String>,
    /// Bullets with a number in them: achievements to tell.
    pub signature_achievements: Vec<String>,
    /// The tone of the last cover letter asked for.
    pub preferred_tone: Option<Tone>,
    /// The verbs the accepted bullets start with.
    pub accepted_phrasing: Vec<String>,
}

impl MemoryProfile {
    /// The profile a completed optimization gives: the JD's hard skills the resume
    /// mentions, the rewritten bullets with numbers, their first verbs.
    pub fn from_optimization(state: &OptimizationState) -> Self {
        let resume = state.candidate_text();
        let core_skills = state
            .jd_analysis
            .as_ref()
            .map(|a| {
                a.hard_skills
                    .iter()
                    .filter(|s| find_keyword(&resume, s) == Found::Exactly)
                    .take(MAX_SKILLS)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let bullets = current_bullets(state);
        let signature_achievements = bullets
            .iter()
            .filter(|b| !numbers(b).is_empty())
            .take(MAX_ACHIEVEMENTS)
            .cloned()
            .collect();
        let mut accepted_phrasing: Vec<String> = Vec::new();
        for bullet in &state.optimized_bullets {
            if let Some(verb) = words(&bullet.text).into_iter().next()
                && !accepted_phrasing.contains(&verb)
            {
                accepted_phrasing.push(verb);
            }
        }
        MemoryProfile {
            core_skills,
            signature_achievements,
            preferred_tone: None,
            accepted_phrasing,
        }
    }

    /// `newer`'s values where it has some, this profile's elsewhere; lists merged
    /// without repeats, the newer first.
    pub fn merged_with(&self, newer: &MemoryProfile) -> MemoryProfile {
        let merge = |a: &[String], b: &[String], cap: usize| {
            let mut out: Vec<String> = Vec::new();
            for item in b.iter().chain(a) {
                if !out.iter().any(|o| o.eq_ignore_ascii_case(item)) {
                    out.push(item.clone());
                }
            }
            out.truncate(cap);
            out
        };
        MemoryProfile {
            core_skills: merge(&self.core_skills, &newer.core_skills, MAX_SKILLS),
            signature_achievements: merge(
                &self.signature_achievements,
                &newer.signature_achievements,
                MAX_ACHIEVEMENTS,
            ),
            preferred_tone: newer.preferred_tone.or(self.preferred_tone),
            accepted_phrasing: merge(&self.accepted_phrasing, &newer.accepted_phrasing, 12),
        }
    }

    /// Whether it has enough to write from without the resume: three achievements and
    /// three skills.
    pub fn is_sufficient(&self) -> bool {
        self.signature_achievements.len() >= 3 && self.core_skills.len() >= 3
    }
}

/// Memory profiles in a document store, namespace `jd_optimizer.memory`, key
/// `{tenant}:{user}`.
#[derive(Clone)]
pub struct MemoryStore {
    documents: Arc<dyn DocumentStore>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryStore")
    }
}

const NAMESPACE: &str = "jd_optimizer.memory";

impl MemoryStore {
    /// Profiles in `documents`.
    pub fn new(documents: Arc<dyn DocumentStore>) -> Self {
        MemoryStore { documents }
    }

    /// The user's profile, if one was recorded (an unreadable one reads as none).
    pub async fn read(
        &self,
        tenant: &str,
        user: &str,
    ) -> Result<Option<MemoryProfile>, StoreError> {
        let value = self
            .documents
            .get(NAMESPACE, &format!("{tenant}:{user}"))
            .await?;
        Ok(value.and_then(|v| serde_json::from_value(v).ok()))
    }

    /// Merges `profile` into the user's, atomically; returns the result.
    pub async fn record(
        &self,
        tenant: &str,
        user: &str,
        profile: &MemoryProfile,
    ) -> Result<MemoryProfile, StoreError> {
        let newer = profile.clone();
        let value = self
            .documents
            .update(
                NAMESPACE,
                &format!("{tenant}:{user}"),
                Box::new(move |now| {
                    let old: MemoryProfile = now
                        .and_then(|v| serde_json::from_value(v).ok())
                        .unwrap_or_default();
                    serde_json::to_value(old.merged_with(&newer)).unwrap_or_default()
                }),
            )
            .await?;
        Ok(serde_json::from_value(value).unwrap_or_default())
    }
}
