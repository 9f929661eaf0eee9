//! Ranking a user's jobs against their profile: job-capabilities' composite ranker (50 %
//! embedding similarity, 25 % skills, 15 % location, 10 % pay, with justifications) on
//! the user's own index, then their feedback: a job they liked ranks a little higher, a
//! job they turned down ranks after the rest, and a company they turned down a job of
//! loses a little on its other jobs.

use job_capabilities::ranking::{
    CandidateProfile, JobPosting, JobRanker, RankedJob, SalaryFloor, Weights, mentions, score_job,
    sort_ranked,
};
use job_capabilities::retrieval::HybridRetriever;

use crate::models::{Feedback, FeedbackKind, Job, UserProfile};

/// The vector collection jobs are indexed in (tenant: the user).
pub const JOBS_COLLECTION: &str = "jobchat.jobs";

/// The most jobs of one user ranking reads from the index.
const MAX_INDEXED: usize = 1000;

/// A ranking and what the user should know about how it was made.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ranked {
    /// Best first.
    pub jobs: Vec<RankedJob>,
    /// Notes (embeddings unavailable, ...).
    pub notes: Vec<String>,
}

/// Indexes and ranks jobs per user.
#[derive(Debug, Clone)]
pub struct Ranking {
    ranker: Option<JobRanker>,
}

/// The ranker's view of a profile.
pub fn candidate(profile: &UserProfile) -> CandidateProfile {
    let mut summary = profile.summary.clone();
    if !profile.resume_text.is_empty() {
        summary.push(' ');
        summary.extend(profile.resume_text.chars().take(600));
    }
    CandidateProfile {
        summary,
        skills: profile.skills.clone(),
        titles: profile.titles.clone(),
        preferred_locations: profile.preferred_locations.clone(),
        remote_ok: profile.remote_ok,
        min_salary: profile.min_salary.map(|amount| SalaryFloor {
            amount: amount as f64,
            currency: profile
                .salary_currency
                .clone()
                .unwrap_or_else(|| "USD".to_owned()),
            interval: job_capabilities::PayInterval::Year,
        }),
        seniority: None,
    }
}

/// The ranker's view of a job: its short requirements are its skills, with every
/// profile skill its text mentions.
pub fn posting(job: &Job, profile: &UserProfile) -> JobPosting {
    let text = format!(
        "{} {} {}",
        job.title,
        job.description,
        job.requirements.join(" ")
    );
    let mut skills: Vec<String> = profile
        .skills
        .iter()
        .filter(|skill| mentions(&text, skill))
        .cloned()
        .collect();
    skills.extend(
        job.requirements
            .iter()
            .filter(|r| r.split_whitespace().count() <= 3)
            .cloned(),
    );
    JobPosting {
        id: job.id.clone(),
        title: job.title.clone(),
        company: job.company.clone(),
        location: job.location.clone(),
        remote: job.remote,
        salary_text: job.salary_text.clone(),
        skills,
        description: job.description.clone(),
    }
}

/// The postings embedded for similarity: the job's own words only.
fn indexed(jobs: &[Job]) -> Vec<JobPosting> {
    let nobody = UserProfile::default();
    jobs.iter().map(|job| posting(job, &nobody)).collect()
}

impl Ranking {
    /// Ranking on `retriever`'s embeddings and index; `None`: without embeddings (the
    /// similarity part left out, and said so).
    pub fn new(retriever: Option<HybridRetriever>) -> Self {
        Ranking {
            ranker: retriever.map(JobRanker::new),
        }
    }

    /// Indexes jobs for `user`, each as it reads (no profile is involved, so a profile set
    /// later needs no re-indexing); a failure is returned as a note (ranking still works).
    pub async fn index(&self, user: &str, jobs: &[Job]) -> Option<String> {
        let ranker = self.ranker.as_ref()?;
        match ranker.index(user, &indexed(jobs)).await {
            Ok(_) => None,
            Err(error) => {
                tracing::warn!(%error, "jobs could not be indexed");
                Some(format!(
                    "the jobs could not be indexed for ranking: {error}"
                ))
            }
        }
    }

    /// Takes a deleted job out of `user`'s index; a failure is returned as a note (the
    /// job is gone either way, and ranking reads only the jobs it is given).
    pub async fn forget(&self, user: &str, job_id: &str) -> Option<String> {
        let ranker = self.ranker.as_ref()?;
        match ranker.forget(user, &[job_id.to_owned()]).await {
            Ok(_) => None,
            Err(error) => {
                tracing::warn!(%error, job_id, "a deleted job stays in the ranking index");
                Some(format!("the job stays in the ranking index: {error}"))
            }
        }
    }

    /// `jobs` ranked for `profile` and `feedback`, best first, at most `top_k`.
    pub async fn rank(
        &self,
        user: &str,
        profile: &UserProfile,
        jobs: &[Job],
        feedback: &[Feedback],
        top_k: usize,
    ) -> Ranked {
        let candidate = candidate(profile);
        let postings: Vec<JobPosting> = jobs.iter().map(|j| posting(j, profile)).collect();
        let mut ranked = Ranked::default();
        let by_embedding = match &self.ranker {
            Some(ranker) => {
                // Hybrid retrieval ranks all the user's indexed jobs (searched ones too);
                // the candidates must reach past them to every job asked about.
                let ranker = ranker
                    .clone()
                    .with_candidates(postings.len().max(MAX_INDEXED));
                match ranker
                    .rank(user, &candidate, &postings, postings.len())
                    .await
                {
                    // Jobs missing from the index (indexing failed earlier) are indexed now.
                    Ok(found) if found.len() < postings.len() => {
                        if let Err(error) = ranker.index(user, &indexed(jobs)).await {
                            tracing::warn!(%error, "jobs could not be indexed");
                            ranked.notes.push(format!(
                                "the jobs could not be indexed for ranking: {error}"
                            ));
                        }
                        ranker
                            .rank(user, &candidate, &postings, postings.len())
                            .await
                            .map(|found| {
                                with_the_missing(found, &candidate, &postings, &mut ranked.notes)
                            })
                    }
                    other => other,
                }
            }
            None => Ok(Vec::new()),
        };
        ranked.jobs = match by_embedding {
            Ok(found) if !found.is_empty() || self.ranker.is_some() => found,
            Ok(_) => {
                ranked
                    .notes
                    .push("ranked without embeddings: similarity is left out".into());
                without_similarity(&candidate, &postings)
            }
            Err(error) => {
                tracing::warn!(%error, "ranking by embeddings failed");
                ranked.notes.push(format!(
                    "ranked without embeddings ({error}): similarity is left out"
                ));
                without_similarity(&candidate, &postings)
            }
        };
        apply_feedback(&mut ranked.jobs, jobs, feedback);
        ranked.jobs.truncate(top_k);
        ranked
    }
}

/// `found` and, scored without similarity (and said so), the postings retrieval did not
/// return: no job asked about is left out.
fn with_the_missing(
    mut found: Vec<RankedJob>,
    candidate: &CandidateProfile,
    postings: &[JobPosting],
    notes: &mut Vec<String>,
) -> Vec<RankedJob> {
    let missing: Vec<JobPosting> = postings
        .iter()
        .filter(|p| !found.iter().any(|f| f.job_id == p.id))
        .cloned()
        .collect();
    if !missing.is_empty() {
        notes.push(format!(
            "{} jobs were ranked without similarity: they are not in the index",
            missing.len()
        ));
        found.extend(without_similarity(candidate, &missing));
        sort_ranked(&mut found);
    }
    found
}

fn without_similarity(candidate: &CandidateProfile, postings: &[JobPosting]) -> Vec<RankedJob> {
    postings
        .iter()
        .map(|p| score_job(candidate, p, 0.0, Weights::default()))
        .collect()
}

/// The user's feedback on the ranking: see the module docs.
pub fn apply_feedback(ranked: &mut [RankedJob], jobs: &[Job], feedback: &[Feedback]) {
    let company_of = |id: &str| {
        jobs.iter()
            .find(|j| j.id == id)
            .map(|j| j.company.to_lowercase())
            .unwrap_or_default()
    };
    for job in ranked.iter_mut() {
        let company = company_of(&job.job_id);
        if let Some(said) = feedback.iter().find(|f| f.job_id == job.job_id) {
            match said.kind {
                FeedbackKind::Interested => {
                    job.score = (job.score * 1.1).min(1.0);
                    job.justification.push_str("; you marked it interesting");
                }
                other => job.deal_breakers.push(format!(
                    "you said: {}",
                    match other {
                        FeedbackKind::WrongLevel => "wrong level",
                        FeedbackKind::WrongLocation => "wrong location",
                        FeedbackKind::PayTooLow => "pay too low",
                        _ => "not interested",
                    }
                )),
            }
        } else if feedback
            .iter()
            .any(|f| f.kind == FeedbackKind::NotInterested && f.company.to_lowercase() == company)
        {
            job.score *= 0.9;
            job.justification
                .push_str("; you turned down another job at this company");
        }
    }
    sort_ranked(ranked);
}

#[cfg(test)]
mod tests {

    use super::*;
    use agent_llm::testing::HashedEmbeddings;
    use agent_runtime::vectors::{
        LexicalQuery, MetadataFilter, VectorHit, VectorQuery, VectorRecord, VectorStore,
        VectorStoreError,
    };
    use async_trait::async_trait;
    use std::sync::Arc;

    /// A vector store that keeps nothing: every write fails.
    struct Refusing;

    #[async_trait]
    impl VectorStore for Refusing {
        async fn upsert(&self, _: &str, _: &[VectorRecord]) -> Result<(), VectorStoreError> {
            Err(VectorStoreError::Invalid("the disk is full".into()))
        }
        async fn delete(&self, _: &str, _: &str, _: &[String]) -> Result<u64, VectorStoreError> {
            Ok(0)
        }
        async fn delete_matching(
            &self,
            _: &str,
            _: &str,
            _: &MetadataFilter,
        ) -> Result<u64, VectorStoreError> {
            Ok(0)
        }
        async fn query(
            &self,
            _: &str,
            _: &VectorQuery,
        ) -> Result<Vec<VectorHit>, VectorStoreError> {
            Ok(Vec::new())
        }
        async fn lexical(
            &self,
            _: &str,
            _: &LexicalQuery,
        ) -> Result<Vec<VectorHit>, VectorStoreError> {
            Ok(Vec::new())
        }
        async fn count(&self, _: &str, _: &str) -> Result<u64, VectorStoreError> {
            Ok(0)
        }
    }

    fn job(id: &str, title: &str) -> Job {
        Job {
            id: id.into(),
            title: title.into(),
            company: "Acme".into(),
            location: "Berlin".into(),
            remote: false,
            description: format!("{title} building Rust services"),
            requirements: vec!["Rust".into()],
            salary_text: String::new(),
            url: format!("https://acme.example/{id}"),
            source: "test".into(),
            posted: String::new(),
            status: crate::models::JobStatus::Saved,
            found_at: chrono::Utc::now(),
        }
    }

    #[tokio::test]
    async fn a_deleted_job_leaves_the_index() {
        let vectors: Arc<dyn VectorStore> = Arc::new(
            agent_backends::SqliteSessionStore::in_memory()
                .await
                .unwrap()
                .vectors(),
        );
        let retriever = HybridRetriever::new(
            Arc::new(HashedEmbeddings::new(64)),
            vectors.clone(),
            JOBS_COLLECTION,
        );
        let ranking = Ranking::new(Some(retriever));
        let jobs = [job("j1", "Backend Engineer"), job("j2", "Data Engineer")];
        assert_eq!(ranking.index("ada", &jobs).await, None);
        assert_eq!(vectors.count(JOBS_COLLECTION, "ada").await.unwrap(), 2);
        assert_eq!(ranking.forget("ada", "j1").await, None);
        assert_eq!(vectors.count(JOBS_COLLECTION, "ada").await.unwrap(), 1);
    }

    #[tokio::test]
    async fn jobs_the_index_cannot_hold_are_ranked_without_similarity_and_said_so() {
        let retriever = HybridRetriever::new(
            Arc::new(HashedEmbeddings::new(64)),
            Arc::new(Refusing),
            JOBS_COLLECTION,
        );
        let ranking = Ranking::new(Some(retriever));
        let profile = UserProfile {
            skills: vec!["Rust".into()],
            ..UserProfile::default()
        };
        let jobs = [job("j1", "Backend Engineer"), job("j2", "Data Engineer")];
        let ranked = ranking.rank("ada", &profile, &jobs, &[], 10).await;
        let mut ids: Vec<&str> = ranked.jobs.iter().map(|r| r.job_id.as_str()).collect();
        ids.sort_unstable();
        assert_eq!(ids, ["j1", "j2"]);
        assert!(
            ranked.notes.iter().any(|n| n.contains("the disk is full")),
            "{:?}",
            ranked.notes
        );
        assert!(
            ranked
                .notes
                .iter()
                .any(|n| n.contains("2 jobs were ranked without similarity")),
            "{:?}",
            ranked.notes
        );
    }
}
