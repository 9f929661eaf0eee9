//! The job-search agent's job tools: search, list, details, save, status, archive,
//! delete, rank, feedback, notify.

use std::sync::Arc;

use agent_runtime::{ToolError, tool};
use chrono::Utc;
use job_capabilities::ranking::RankedJob;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ChatTool, Ctx, Services, find_job, profile_of, store_failed};
use crate::models::{Feedback, FeedbackKind, Job, JobStatus, UserProfile};
use crate::notify::{JobMatch, Notice, UserWebhooks, job_match};
use crate::providers::SearchCriteria;

fn brief(job: &Job) -> Value {
    json!({"id": job.id, "job": job.headline(), "status": job.status.as_str(), "posted": job.posted, "url": job.url})
}

/// One job named by its id (or by words of its title and company).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct JobRef {
    /// The job's id (as `list_jobs` shows it).
    pub job_id: String,
}

pub(super) fn search_jobs(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "search_jobs",
        "Search for new job listings matching the criteria; they are stored as the user's jobs (status new).",
        move |criteria: SearchCriteria, ctx: Ctx| {
            let services = services.clone();
            async move {
                let user = ctx.user_id().to_owned();
                let found = services
                    .provider
                    .search(&criteria)
                    .await
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                let stored = services
                    .store
                    .add_jobs(&user, found.jobs)
                    .await
                    .map_err(store_failed)?;
                ctx.emit(format!("found {} jobs", stored.len()));
                let mut notes = found.notes;
                notes.extend(services.ranking.index(&user, &stored).await);
                Ok::<_, ToolError>(json!({
                    "found": stored.len(),
                    "source": services.provider.name(),
                    "jobs": stored.iter().map(brief).collect::<Vec<_>>(),
                    "notes": notes,
                }))
            }
        },
    ))
}

/// Which jobs to list.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListJobs {
    /// Only jobs with this status (all but archived ones when not given).
    #[serde(default)]
    pub status: Option<JobStatus>,
}

pub(super) fn list_jobs(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "list_jobs",
        "List the user's jobs with their ids and statuses, newest first.",
        move |input: ListJobs, ctx: Ctx| {
            let services = services.clone();
            async move {
                let jobs = services
                    .store
                    .jobs(ctx.user_id())
                    .await
                    .map_err(store_failed)?;
                let listed: Vec<Value> = jobs
                    .iter()
                    .filter(|j| match input.status {
                        Some(status) => j.status == status,
                        None => j.status != JobStatus::Archived,
                    })
                    .map(brief)
                    .collect();
                Ok::<_, ToolError>(json!({"count": listed.len(), "jobs": listed}))
            }
        },
    ))
}

pub(super) fn get_job_details(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "get_job_details",
        "Show one job in full: description, requirements, pay, where to apply.",
        move |input: JobRef, ctx: Ctx| {
            let services = services.clone();
            async move {
                let job = find_job(&services, ctx.user_id(), &input.job_id).await?;
                Ok::<_, ToolError>(json!({
                    "id": job.id, "title": job.title, "company": job.company,
                    "location": job.location, "remote": job.remote, "salary": job.salary_text,
                    "status": job.status.as_str(), "posted": job.posted, "source": job.source,
                    "url": job.url, "requirements": job.requirements,
                    "description": job.description.chars().take(1500).collect::<String>(),
                }))
            }
        },
    ))
}

async fn set_status(
    services: &Services,
    ctx: &Ctx,
    reference: &str,
    status: JobStatus,
) -> Result<Value, ToolError> {
    let job = find_job(services, ctx.user_id(), reference).await?;
    let job = services
        .store
        .set_status(ctx.user_id(), &job.id, status)
        .await
        .map_err(store_failed)?
        .ok_or_else(|| ToolError::failed(format!("job {} is gone", job.id)))?;
    Ok(json!({"updated": brief(&job)}))
}

pub(super) fn save_job(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "save_job",
        "Save a job to the user's list (status saved).",
        move |input: JobRef, ctx: Ctx| {
            let services = services.clone();
            async move { set_status(&services, &ctx, &input.job_id, JobStatus::Saved).await }
        },
    ))
}

/// A job's new status.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StatusChange {
    /// The job's id.
    pub job_id: String,
    /// Its new status.
    pub status: JobStatus,
}

pub(super) fn update_job_status(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "update_job_status",
        "Set a job's status: saved, applied, interviewing, offer, rejected or archived.",
        move |input: StatusChange, ctx: Ctx| {
            let services = services.clone();
            async move { set_status(&services, &ctx, &input.job_id, input.status).await }
        },
    ))
}

pub(super) fn archive_job(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "archive_job",
        "Archive a job: kept, but left out of lists and rankings.",
        move |input: JobRef, ctx: Ctx| {
            let services = services.clone();
            async move { set_status(&services, &ctx, &input.job_id, JobStatus::Archived).await }
        },
    ))
}

pub(super) fn delete_job(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "delete_job",
        "Delete a job for good.",
        move |input: JobRef, ctx: Ctx| {
            let services = services.clone();
            async move {
                let job = find_job(&services, ctx.user_id(), &input.job_id).await?;
                services
                    .store
                    .delete_job(ctx.user_id(), &job.id)
                    .await
                    .map_err(store_failed)?;
                let notes: Vec<String> = services
                    .ranking
                    .forget(ctx.user_id(), &job.id)
                    .await
                    .into_iter()
                    .collect();
                Ok::<_, ToolError>(
                    json!({"deleted": job.id, "job": job.headline(), "notes": notes}),
                )
            }
        },
    ))
}

/// How many ranked jobs to show.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RankInput {
    /// At most this many (5 when not given).
    #[serde(default)]
    pub top_k: Option<u32>,
    /// Rank new (unsaved) jobs too, not only saved ones.
    #[serde(default)]
    pub include_new: bool,
}

/// The user's profile, or a clear error saying how to set one.
async fn required_profile(services: &Services, user: &str) -> Result<UserProfile, ToolError> {
    match services.store.profile(user).await.map_err(store_failed)? {
        Some(profile) if !profile.is_empty() => Ok(profile),
        _ => Err(ToolError::failed(
            "the user has no profile yet: ask for their skills and what they look for \
             (set_user_profile), or for their resume (a file attached to their message, or \
             its text pasted)",
        )),
    }
}

/// The user's jobs ranked: saved ones (and new ones when asked), best first.
async fn ranked(
    services: &Services,
    user: &str,
    include_new: bool,
    top_k: usize,
) -> Result<(Vec<(Job, RankedJob)>, Vec<String>), ToolError> {
    let profile = required_profile(services, user).await?;
    let jobs: Vec<Job> = services
        .store
        .jobs(user)
        .await
        .map_err(store_failed)?
        .into_iter()
        .filter(|j| match j.status {
            JobStatus::Archived | JobStatus::Rejected => false,
            JobStatus::New => include_new,
            _ => true,
        })
        .collect();
    if jobs.is_empty() {
        return Err(ToolError::failed(if include_new {
            "the user has no jobs to rank: search first"
        } else {
            "the user has no saved jobs to rank: save some, or rank with include_new"
        }));
    }
    let feedback = services.store.feedback(user).await.map_err(store_failed)?;
    let ranking = services
        .ranking
        .rank(user, &profile, &jobs, &feedback, top_k)
        .await;
    let paired = ranking
        .jobs
        .into_iter()
        .filter_map(|r| Some((jobs.iter().find(|j| j.id == r.job_id)?.clone(), r)))
        .collect();
    Ok((paired, ranking.notes))
}

/// The four parts of a job's composite score, each out of 100.
fn part_scores(ranked: &RankedJob) -> Value {
    let percent = |v: f32| (v * 100.0).round();
    let parts = &ranked.breakdown;
    json!({
        "similarity": percent(parts.similarity),
        "skills": percent(parts.skills),
        "location": percent(parts.location),
        "salary": percent(parts.salary),
    })
}

pub(super) fn rank_saved_jobs(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "rank_saved_jobs",
        "Rank the user's saved jobs against their profile and feedback, with the reasons and each job's four part scores (similarity, skills, location, salary) beside its total.",
        move |input: RankInput, ctx: Ctx| {
            let services = services.clone();
            async move {
                let top_k = input.top_k.unwrap_or(5).clamp(1, 20) as usize;
                let (ranked, notes) =
                    ranked(&services, ctx.user_id(), input.include_new, top_k).await?;
                ctx.emit(format!("ranked {} jobs", ranked.len()));
                Ok::<_, ToolError>(json!({
                    "ranked": ranked.iter().enumerate().map(|(i, (job, r))| json!({
                        "rank": i + 1, "id": job.id, "job": job.headline(),
                        "score": (r.score * 100.0).round(),
                        "parts": part_scores(r),
                        "why": r.justification,
                        "missing_skills": r.missing_skills, "deal_breakers": r.deal_breakers,
                    })).collect::<Vec<_>>(),
                    "notes": notes,
                }))
            }
        },
    ))
}

/// Feedback on a job.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FeedbackInput {
    /// The job's id.
    pub job_id: String,
    /// What the user thinks of it.
    pub feedback: FeedbackKind,
    /// In their words.
    #[serde(default)]
    pub notes: String,
}

pub(super) fn provide_feedback(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "provide_feedback",
        "Record what the user thinks of a job; rankings use it from now on.",
        move |input: FeedbackInput, ctx: Ctx| {
            let services = services.clone();
            async move {
                let job = find_job(&services, ctx.user_id(), &input.job_id).await?;
                let feedback = Feedback {
                    job_id: job.id.clone(),
                    company: job.company.clone(),
                    kind: input.feedback,
                    notes: input.notes,
                    at: Utc::now(),
                };
                services
                    .store
                    .add_feedback(ctx.user_id(), &feedback)
                    .await
                    .map_err(store_failed)?;
                Ok::<_, ToolError>(json!({"recorded": input.feedback, "job": job.headline()}))
            }
        },
    ))
}

/// What to notify.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NotifyInput {
    /// The best this many jobs (3 when not given).
    #[serde(default)]
    pub top_k: Option<u32>,
    /// Only jobs scoring at least this, 0 to 100 (50 when not given).
    #[serde(default)]
    pub min_score: Option<u32>,
}

pub(super) fn notify_matches(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "notify_matches",
        "Send the user's best matching jobs to their notification channels (console, email, Slack, Teams); reports each channel.",
        move |input: NotifyInput, ctx: Ctx| {
            let services = services.clone();
            async move {
                let user = ctx.user_id().to_owned();
                let top_k = input.top_k.unwrap_or(3).clamp(1, 10) as usize;
                let floor = input.min_score.unwrap_or(50).min(100) as f32 / 100.0;
                let (ranked, _) = ranked(&services, &user, true, top_k).await?;
                let matches: Vec<JobMatch> = ranked
                    .into_iter()
                    .filter(|(_, r)| r.score >= floor && r.deal_breakers.is_empty())
                    .map(|(job, r)| job_match(&job, r.score, r.justification))
                    .collect();
                if matches.is_empty() {
                    return Err(ToolError::failed(format!(
                        "no job scores {:.0} or more: nothing was sent",
                        floor * 100.0
                    )));
                }
                let profile = profile_of(&services, &user).await?;
                let notice = Notice {
                    title: format!("{} job matches for you", matches.len()),
                    email_to: Some(profile.email.clone()).filter(|e| e.contains('@')),
                    matches,
                };
                let report = services
                    .notifications
                    .deliver(&services.store, &user, &notice, &UserWebhooks::of(&profile))
                    .await;
                Ok::<_, ToolError>(json!({"jobs": notice.matches.len(), "channels": report}))
            }
        },
    ))
}
