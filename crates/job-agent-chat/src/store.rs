//! [`ChatStore`]: every user's jobs, profile, feedback, application packages and
//! notification journal, on the runtime's [`DocumentStore`] (SQLite by default,
//! PostgreSQL for a deployment; agent-backends implements both). Every call names its
//! user, and every record lives under a namespace of that user: there is no "current
//! profile" shared by the process, so two users chatting at once never see each other's
//! data.

use std::sync::Arc;

use agent_runtime::documents::DocumentStore;
use agent_runtime::sessions::StoreError;
use chrono::Utc;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::models::{ApplicationPackage, Feedback, Job, JobStatus, UserProfile};

/// The kinds of record, each a namespace per user.
const JOBS: &str = "jobchat.jobs";
const FEEDBACK: &str = "jobchat.feedback";
const PACKAGES: &str = "jobchat.packages";
const PROFILES: &str = "jobchat.profiles";
const SENT: &str = "jobchat.sent";

/// How long a claimed send may stay unsettled before it counts as abandoned (its turn
/// was dropped mid-send, say by a client that went away) and may be claimed again.
const CLAIM_ABANDONED_AFTER: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

/// The chat's records, scoped by user. Cheap to clone.
#[derive(Clone)]
pub struct ChatStore {
    documents: Arc<dyn DocumentStore>,
}

impl std::fmt::Debug for ChatStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatStore").finish_non_exhaustive()
    }
}

/// `kind`'s namespace for `user` (a fixed prefix, so no two users share one).
fn namespace(kind: &str, user: &str) -> String {
    format!("{kind}/{user}")
}

fn encode<T: Serialize>(value: &T) -> Result<Value, StoreError> {
    serde_json::to_value(value).map_err(|e| StoreError::Corrupt(format!("not JSON: {e}")))
}

fn decode<T: DeserializeOwned>(what: &str, value: Value) -> Result<T, StoreError> {
    serde_json::from_value(value).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// Whether a notification was sent before, or is being sent now by this turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This turn may send it; [`ChatStore::settle`] records how it went.
    Ours(String),
    /// It was sent (or is being sent) already, at this time.
    Taken(String),
}

/// Whether a journal record is a claim whose send never settled, long enough ago.
fn abandoned(claimed: &Value, now: chrono::DateTime<Utc>) -> bool {
    let unsettled = claimed["done"] == false;
    let at = claimed["at"]
        .as_str()
        .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok());
    unsettled && at.is_none_or(|at| now - at.with_timezone(&Utc) > CLAIM_ABANDONED_AFTER)
}

impl ChatStore {
    /// A store on `documents`.
    pub fn new(documents: Arc<dyn DocumentStore>) -> Self {
        ChatStore { documents }
    }

    async fn list<T: DeserializeOwned>(
        &self,
        kind: &str,
        user: &str,
    ) -> Result<Vec<T>, StoreError> {
        self.documents
            .list(&namespace(kind, user))
            .await?
            .into_iter()
            // A null is a record being removed (see `set_status`).
            .filter(|(_, value)| !value.is_null())
            .map(|(key, value)| decode(&format!("{kind} {key}"), value))
            .collect()
    }

    /// Stores jobs a search found. A job found again keeps its status and the time it
    /// was first found, and takes the newer text. Returns them as stored.
    pub async fn add_jobs(&self, user: &str, jobs: Vec<Job>) -> Result<Vec<Job>, StoreError> {
        let namespace = namespace(JOBS, user);
        let mut stored = Vec::with_capacity(jobs.len());
        for job in jobs {
            let id = job.id.clone();
            let fresh = encode(&job)?;
            let value = self
                .documents
                .update(
                    &namespace,
                    &id,
                    Box::new(move |before| match before {
                        Some(mut before) => {
                            let kept = (before["status"].clone(), before["found_at"].clone());
                            before = fresh;
                            (before["status"], before["found_at"]) = kept;
                            before
                        }
                        None => fresh,
                    }),
                )
                .await?;
            stored.push(decode(&format!("job {id}"), value)?);
        }
        Ok(stored)
    }

    /// The user's jobs, newest first (archived ones included; see [`JobStatus`]).
    pub async fn jobs(&self, user: &str) -> Result<Vec<Job>, StoreError> {
        let mut jobs: Vec<Job> = self.list(JOBS, user).await?;
        jobs.sort_by(|a, b| b.found_at.cmp(&a.found_at).then_with(|| a.id.cmp(&b.id)));
        Ok(jobs)
    }

    /// One of the user's jobs.
    pub async fn job(&self, user: &str, id: &str) -> Result<Option<Job>, StoreError> {
        match self.documents.get(&namespace(JOBS, user), id).await? {
            Some(value) if !value.is_null() => Ok(Some(decode(&format!("job {id}"), value)?)),
            _ => Ok(None),
        }
    }

    /// Sets a job's status; the job as it is now, `None` when the user has no such job.
    pub async fn set_status(
        &self,
        user: &str,
        id: &str,
        status: JobStatus,
    ) -> Result<Option<Job>, StoreError> {
        let namespace = namespace(JOBS, user);
        let value = self
            .documents
            .update(
                &namespace,
                id,
                // No job (none, or deleted meanwhile): a null marker, removed below.
                Box::new(move |before| match before {
                    Some(mut job) => {
                        job["status"] = json!(status);
                        job
                    }
                    None => Value::Null,
                }),
            )
            .await?;
        if value.is_null() {
            self.documents.delete(&namespace, id).await?;
            return Ok(None);
        }
        Ok(Some(decode(&format!("job {id}"), value)?))
    }

    /// Deletes a job; whether there was one.
    pub async fn delete_job(&self, user: &str, id: &str) -> Result<bool, StoreError> {
        self.documents.delete(&namespace(JOBS, user), id).await
    }

    /// The user's profile, if they set one.
    pub async fn profile(&self, user: &str) -> Result<Option<UserProfile>, StoreError> {
        match self.documents.get(PROFILES, user).await? {
            Some(value) => Ok(Some(decode(&format!("profile of {user}"), value)?)),
            None => Ok(None),
        }
    }

    /// Replaces the user's profile.
    pub async fn save_profile(&self, user: &str, profile: &UserProfile) -> Result<(), StoreError> {
        self.documents.put(PROFILES, user, &encode(profile)?).await
    }

    /// Records feedback (one per job: the newest replaces the older).
    pub async fn add_feedback(&self, user: &str, feedback: &Feedback) -> Result<(), StoreError> {
        self.documents
            .put(
                &namespace(FEEDBACK, user),
                &feedback.job_id,
                &encode(feedback)?,
            )
            .await
    }

    /// The user's feedback.
    pub async fn feedback(&self, user: &str) -> Result<Vec<Feedback>, StoreError> {
        self.list(FEEDBACK, user).await
    }

    /// Keeps an application package.
    pub async fn save_package(
        &self,
        user: &str,
        package: &ApplicationPackage,
    ) -> Result<(), StoreError> {
        self.documents
            .put(&namespace(PACKAGES, user), &package.id, &encode(package)?)
            .await
    }

    /// The user's application packages, newest first.
    pub async fn packages(&self, user: &str) -> Result<Vec<ApplicationPackage>, StoreError> {
        let mut packages: Vec<ApplicationPackage> = self.list(PACKAGES, user).await?;
        packages.sort_by_key(|p| std::cmp::Reverse(p.created_at));
        Ok(packages)
    }

    /// Claims the notification `key` for sending: [`Claim::Ours`] once, whoever asks
    /// again (a retried turn, a concurrent one) gets [`Claim::Taken`] until a failed send
    /// is [`settle`](Self::settle)d, or until a claim never settled is ten minutes old.
    pub async fn claim(&self, user: &str, key: &str) -> Result<Claim, StoreError> {
        let token = uuid::Uuid::new_v4().to_string();
        let mine = token.clone();
        let now = Utc::now();
        let value = self
            .documents
            .update(
                &namespace(SENT, user),
                key,
                Box::new(move |before| match before {
                    Some(claimed) if !abandoned(&claimed, now) => claimed,
                    _ => json!({"token": mine, "at": now.to_rfc3339(), "done": false}),
                }),
            )
            .await?;
        if value["token"] == token.as_str() {
            Ok(Claim::Ours(token))
        } else {
            Ok(Claim::Taken(value["at"].as_str().unwrap_or("").to_owned()))
        }
    }

    /// Records how a claimed send went: kept when it was delivered, released (so a retry
    /// may send) when it failed.
    pub async fn settle(&self, user: &str, key: &str, delivered: bool) -> Result<(), StoreError> {
        let namespace = namespace(SENT, user);
        if delivered {
            self.documents
                .update(
                    &namespace,
                    key,
                    Box::new(|before| {
                        let mut record = before.unwrap_or_else(|| json!({}));
                        record["done"] = json!(true);
                        record
                    }),
                )
                .await
                .map(drop)
        } else {
            self.documents.delete(&namespace, key).await.map(drop)
        }
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use agent_runtime::documents::InMemoryDocumentStore;

    /// A store whose reads still see job "ghost", deleted just before any update lands.
    struct DeletedMeanwhile(InMemoryDocumentStore);

    #[async_trait::async_trait]
    impl DocumentStore for DeletedMeanwhile {
        async fn get(&self, namespace: &str, key: &str) -> Result<Option<Value>, StoreError> {
            if key == "ghost" {
                return Ok(Some(json!({"id": "ghost", "status": "new"})));
            }
            self.0.get(namespace, key).await
        }
        async fn put(&self, namespace: &str, key: &str, value: &Value) -> Result<(), StoreError> {
            self.0.put(namespace, key, value).await
        }
        async fn list(&self, namespace: &str) -> Result<Vec<(String, Value)>, StoreError> {
            self.0.list(namespace).await
        }
        async fn delete(&self, namespace: &str, key: &str) -> Result<bool, StoreError> {
            self.0.delete(namespace, key).await
        }
        async fn update(
            &self,
            namespace: &str,
            key: &str,
            update: agent_runtime::documents::DocumentUpdate,
        ) -> Result<Value, StoreError> {
            self.0.update(namespace, key, update).await
        }
    }

    #[tokio::test]
    async fn a_job_deleted_while_its_status_is_set_stays_deleted() {
        let store = ChatStore::new(Arc::new(DeletedMeanwhile(InMemoryDocumentStore::default())));
        let set = store
            .set_status("ada", "ghost", JobStatus::Saved)
            .await
            .unwrap();
        assert!(set.is_none());
        // No status-only record is left to break the user's list.
        assert!(store.jobs("ada").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_claim_never_settled_is_free_again_after_ten_minutes_and_a_sent_one_never() {
        let documents = Arc::new(InMemoryDocumentStore::default());
        let store = ChatStore::new(documents.clone());
        let an_hour_ago = (Utc::now() - chrono::TimeDelta::hours(1)).to_rfc3339();
        let journal = namespace(SENT, "ada");
        let record = |done: bool| json!({"token": "t", "at": an_hour_ago, "done": done});
        documents
            .put(&journal, "dropped", &record(false))
            .await
            .unwrap();
        documents
            .put(&journal, "sent", &record(true))
            .await
            .unwrap();
        assert!(matches!(
            store.claim("ada", "dropped").await.unwrap(),
            Claim::Ours(_)
        ));
        assert!(matches!(
            store.claim("ada", "sent").await.unwrap(),
            Claim::Taken(_)
        ));
        // A fresh unsettled claim still holds.
        assert!(matches!(
            store.claim("ada", "dropped").await.unwrap(),
            Claim::Taken(_)
        ));
    }
}
