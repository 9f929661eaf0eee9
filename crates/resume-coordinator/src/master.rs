//! A returning user's master resume (spec 001 section 5, "master resume evidence (if
//! returning user)"): the evidence of a user's finished sessions, kept in the deployment's
//! [`DocumentStore`] under the user id a start request names, and handed to their next
//! session as evidence `M1..`, beside the new resume's `R*` lines.
//!
//! Interview answers are what a new resume cannot give again, so they come first; resume
//! lines are kept too (a later resume may leave them out). Texts are kept once (compared
//! without case or spacing), the newest first, at most [`MAX_ITEMS`].

use std::sync::Arc;

use agent_runtime::documents::DocumentStore;
use agent_runtime::sessions::StoreError;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::types::{Evidence, ResumeState};

/// The document namespace of master resumes.
pub const NAMESPACE: &str = "resume.master";

/// The most evidence items a master resume keeps.
pub const MAX_ITEMS: usize = 200;

/// The most earlier items a session is given (its prompts stay small).
pub const MAX_SESSION_ITEMS: usize = 40;

/// How many session ids a master resume remembers, so recording a session twice (a retry)
/// changes nothing.
const MAX_SESSIONS: usize = 100;

/// Where a piece of earlier evidence came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceSource {
    /// A line of a resume the user gave.
    Resume,
    /// The user's answer to an interview question.
    Interview,
}

/// One piece of a user's earlier evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MasterEvidence {
    /// The text, as the user gave it.
    pub text: String,
    /// Where it came from.
    pub source: EvidenceSource,
    /// The question it answered (interview answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The session it came from.
    pub session_id: String,
}

/// A user's evidence across their finished sessions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MasterResume {
    /// The evidence, newest first.
    pub evidence: Vec<MasterEvidence>,
    /// The sessions recorded, newest first.
    pub sessions: Vec<String>,
    /// When a session was last recorded.
    pub updated_at: Option<DateTime<Utc>>,
}

/// Text compared without case or spacing.
fn normalized(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

impl MasterResume {
    /// Adds what the finished session `session_id` gathered (its interview answers, then
    /// its resume lines past the first, the candidate's name) ahead of what was kept;
    /// a session recorded already changes nothing.
    pub fn record(&mut self, session_id: &str, state: &ResumeState) {
        if self.sessions.iter().any(|s| s == session_id) {
            return;
        }
        let answers = state.interview.iter().map(|a| MasterEvidence {
            text: a.answer.trim().to_owned(),
            source: EvidenceSource::Interview,
            question: Some(a.question.clone()),
            session_id: session_id.to_owned(),
        });
        let lines = state
            .evidence
            .iter()
            .filter(|e| e.id.starts_with('R') && e.id != "R1")
            .map(|e| MasterEvidence {
                text: e.text.trim().to_owned(),
                source: EvidenceSource::Resume,
                question: None,
                session_id: session_id.to_owned(),
            });
        let mut merged: Vec<MasterEvidence> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for item in answers.chain(lines).chain(self.evidence.drain(..)) {
            if !item.text.is_empty() && seen.insert(normalized(&item.text)) {
                merged.push(item);
            }
        }
        merged.truncate(MAX_ITEMS);
        self.evidence = merged;
        self.sessions.insert(0, session_id.to_owned());
        self.sessions.truncate(MAX_SESSIONS);
        self.updated_at = Some(Utc::now());
    }

    /// The earlier evidence a new session is given, as items `M1..`: interview answers
    /// first, then resume lines, leaving out texts the new resume (`current`) already has,
    /// at most [`MAX_SESSION_ITEMS`].
    pub fn session_evidence(&self, current: &[Evidence]) -> Vec<Evidence> {
        let have: std::collections::HashSet<String> =
            current.iter().map(|e| normalized(&e.text)).collect();
        let answers = self
            .evidence
            .iter()
            .filter(|e| e.source == EvidenceSource::Interview);
        let lines = self
            .evidence
            .iter()
            .filter(|e| e.source == EvidenceSource::Resume);
        answers
            .chain(lines)
            .filter(|e| !have.contains(&normalized(&e.text)))
            .take(MAX_SESSION_ITEMS)
            .enumerate()
            .map(|(i, e)| Evidence {
                id: format!("M{}", i + 1),
                text: match &e.question {
                    Some(question) => format!("{} (asked: {question})", e.text),
                    None => e.text.clone(),
                },
            })
            .collect()
    }
}

/// Why a master resume could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum MasterResumeError {
    /// The document store failed.
    #[error("the master resumes' store: {0}")]
    Store(#[from] StoreError),
    /// The stored document is not a master resume.
    #[error("the master resume of {user:?} is unreadable: {reason}")]
    Unreadable {
        /// The user.
        user: String,
        /// What did not read.
        reason: String,
    },
}

/// The users' master resumes in a [`DocumentStore`].
#[derive(Clone)]
pub struct MasterResumes {
    store: Arc<dyn DocumentStore>,
}

impl std::fmt::Debug for MasterResumes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MasterResumes").finish_non_exhaustive()
    }
}

impl MasterResumes {
    /// Master resumes kept in `store` (namespace [`NAMESPACE`], keyed by user id).
    pub fn new(store: Arc<dyn DocumentStore>) -> Self {
        MasterResumes { store }
    }

    /// The user's master resume, if they finished a session before.
    pub async fn load(&self, user: &str) -> Result<Option<MasterResume>, MasterResumeError> {
        self.store
            .get(NAMESPACE, user)
            .await?
            .map(|value| read(user, value))
            .transpose()
    }

    /// Adds the finished session to the user's master resume, atomically (two sessions of
    /// one user finishing at once both land); returns the master resume as stored.
    pub async fn record(
        &self,
        user: &str,
        session_id: &str,
        state: &ResumeState,
    ) -> Result<MasterResume, MasterResumeError> {
        let session_id = session_id.to_owned();
        let state = state.clone();
        // An unreadable document is reported, not overwritten: the update hands it back.
        let unreadable = Arc::new(std::sync::Mutex::new(None));
        let seen = unreadable.clone();
        let stored = self
            .store
            .update(
                NAMESPACE,
                user,
                Box::new(move |now: Option<Value>| {
                    let kept = now.clone().map(serde_json::from_value::<MasterResume>);
                    let recorded = kept.transpose().and_then(|master| {
                        let mut master = master.unwrap_or_default();
                        master.record(&session_id, &state);
                        serde_json::to_value(&master)
                    });
                    match recorded {
                        Ok(value) => value,
                        Err(error) => {
                            if let Ok(mut slot) = seen.lock() {
                                *slot = Some(error.to_string());
                            }
                            now.unwrap_or(Value::Null)
                        }
                    }
                }),
            )
            .await?;
        if let Some(reason) = unreadable.lock().ok().and_then(|mut slot| slot.take()) {
            return Err(MasterResumeError::Unreadable {
                user: user.to_owned(),
                reason,
            });
        }
        read(user, stored)
    }
}

fn read(user: &str, value: Value) -> Result<MasterResume, MasterResumeError> {
    serde_json::from_value(value).map_err(|error| MasterResumeError::Unreadable {
        user: user.to_owned(),
        reason: error.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::InterviewAnswer;

    #[tokio::test]
    async fn a_user_without_a_finished_session_has_no_master_resume() {
        use agent_runtime::documents::InMemoryDocumentStore;
        let masters = MasterResumes::new(Arc::new(InMemoryDocumentStore::default()));
        assert!(masters.load("ada").await.unwrap().is_none());
    }

    fn state(lines: &[&str], answers: &[(&str, &str)]) -> ResumeState {
        ResumeState {
            evidence: lines
                .iter()
                .enumerate()
                .map(|(i, text)| Evidence {
                    id: format!("R{}", i + 1),
                    text: (*text).to_owned(),
                })
                .collect(),
            interview: answers
                .iter()
                .enumerate()
                .map(|(i, (question, answer))| InterviewAnswer {
                    evidence_id: format!("A{}", i + 1),
                    question: (*question).to_owned(),
                    answer: (*answer).to_owned(),
                })
                .collect(),
            ..ResumeState::default()
        }
    }

    #[test]
    fn sessions_merge_newest_first_once_each() {
        let mut master = MasterResume::default();
        master.record(
            "s1",
            &state(
                &["Ada Lovelace", "Built the billing service"],
                &[("Team size?", "Led 4 engineers")],
            ),
        );
        assert_eq!(master.evidence.len(), 2, "the name is not evidence");
        master.record(
            "s2",
            &state(
                &[
                    "Ada Lovelace",
                    "built the  billing service",
                    "Cut costs 30%",
                ],
                &[("Scale?", "2M requests a day")],
            ),
        );
        let texts: Vec<&str> = master.evidence.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "2M requests a day",
                "built the  billing service",
                "Cut costs 30%",
                "Led 4 engineers"
            ]
        );
        let before = master.clone();
        master.record("s2", &state(&["x", "Something new"], &[]));
        assert_eq!(master, before, "a session is recorded once");
        assert_eq!(master.sessions, ["s2", "s1"]);
    }

    #[test]
    fn a_master_resume_keeps_at_most_its_limit() {
        let mut master = MasterResume::default();
        let lines: Vec<String> = (0..MAX_ITEMS + 50).map(|i| format!("line {i}")).collect();
        let mut with_name = vec!["Name"];
        with_name.extend(lines.iter().map(String::as_str));
        master.record("s1", &state(&with_name, &[]));
        assert_eq!(master.evidence.len(), MAX_ITEMS);
    }

    #[test]
    fn a_session_gets_answers_first_and_nothing_its_resume_says() {
        let mut master = MasterResume::default();
        master.record(
            "s1",
            &state(
                &[
                    "Ada",
                    "Built the billing service",
                    "Wrote the on-call guide",
                ],
                &[("Team size?", "Led 4 engineers")],
            ),
        );
        let current = state(&["Ada", "Wrote the on-call guide"], &[]).evidence;
        let given = master.session_evidence(&current);
        assert_eq!(
            given,
            [
                Evidence {
                    id: "M1".into(),
                    text: "Led 4 engineers (asked: Team size?)".into()
                },
                Evidence {
                    id: "M2".into(),
                    text: "Built the billing service".into()
                },
            ]
        );
    }
}
