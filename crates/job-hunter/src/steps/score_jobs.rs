//! Step 6: score the jobs against the candidate in batches, concurrently (quality
//! model). Every score must cite the job and the profile.

use std::collections::HashMap;
use std::fmt::Write as _;

use agent_runtime::graph::NodeError;

use super::{StepEnv, essential, extract_each, stable_key};
use crate::llm::{LlmCallError, Quality};
use crate::models::{BatchScoreResult, CandidateProfile, Job, ScoredJob, SearchPreferences};
use crate::state::HuntState;

/// The system prompt of the scorer.
pub const SYSTEM: &str = "You score how well jobs fit a candidate, from 0 (no fit) to 100 \
(ideal). Weigh required skills and seniority against the profile, then location, work \
arrangement and pay against the preferences. For every job give a reason of one or two \
sentences that names what in the job and what in the profile the score rests on, and quote \
that evidence. Score every job given, using its id exactly.";

/// The prompt for one batch. Each job starts with an `id:` line followed by a `url:`
/// line.
pub fn prompt(profile: &CandidateProfile, prefs: &SearchPreferences, jobs: &[&Job]) -> String {
    let mut text = format!(
        "Candidate: {name}, {title}, {years} years.\nSummary: {summary}\nSkills: {skills}\nExperience: {experience}\n\n\
         Wants: {titles}; locations: {locations}; remote: {remote:?}; minimum salary: {salary}.\n\n\
         Score these {n} jobs.\n",
        name = profile.name,
        title = profile.current_title.as_deref().unwrap_or("(no title)"),
        years = profile
            .years_of_experience
            .map_or_else(|| "unknown".to_owned(), |y| y.to_string()),
        summary = profile.summary,
        skills = profile.skills.join(", "),
        experience = profile.experience.join("; "),
        titles = prefs.target_titles.join(", "),
        locations = prefs.locations.join(", "),
        remote = prefs.remote,
        salary = match (prefs.min_salary, &prefs.salary_currency) {
            (Some(min), Some(cur)) => format!("{min} {cur}"),
            (Some(min), None) => min.to_string(),
            _ => "not stated".to_owned(),
        },
        n = jobs.len(),
    );
    for job in jobs {
        let e = &job.extracted;
        let pay = job.salary.as_ref().map_or_else(
            || "not published".to_owned(),
            |s| {
                format!(
                    "{}-{} {} per {}",
                    s.min.map_or("?".into(), |v| format!("{v:.0}")),
                    s.max.map_or("?".into(), |v| format!("{v:.0}")),
                    s.currency,
                    s.interval.as_str()
                )
            },
        );
        // Writing to a String cannot fail.
        let _ = write!(
            text,
            "\n- id: {id}\n  url: {url}\n  title: {title} at {company} ({seniority})\n  location: {location} ({arrangement})\n  pay: {pay}\n  requires: {required}\n  nice to have: {preferred}\n  min years: {years}\n  summary: {summary}\n",
            id = job.id,
            url = job.url,
            title = job.title,
            company = job.company,
            seniority = e.seniority,
            location = job.location.as_deref().unwrap_or("not stated"),
            arrangement = e.work_arrangement.as_str(),
            required = e.required_skills.join(", "),
            preferred = e.preferred_skills.join(", "),
            years = e
                .min_years_experience
                .map_or_else(|| "not stated".to_owned(), |y| y.to_string()),
            summary = e.summary,
        );
    }
    text
}

/// Scores from this value up claim a fit, and must quote the job requirements and the
/// profile facts they rest on; lower scores need only their reason.
pub const EVIDENCE_FROM_SCORE: u8 = 50;

/// Checks one batch's answer: every score in range and with a reason, a fit (from
/// [`EVIDENCE_FROM_SCORE`]) with evidence on both sides, every job of the batch scored
/// once.
fn accept(batch: &[&Job], result: BatchScoreResult) -> (Vec<ScoredJob>, Vec<(String, String)>) {
    let mut by_id: HashMap<&str, &Job> = batch.iter().map(|j| (j.id.as_str(), *j)).collect();
    let mut scored = Vec::new();
    let mut problems = Vec::new();
    for score in result.scores {
        let Some(job) = by_id.remove(score.job_id.as_str()) else {
            let message = match batch.iter().find(|j| j.id == score.job_id) {
                Some(job) => {
                    problems.push((
                        job.url.clone(),
                        "the job was scored twice; the first score is kept".into(),
                    ));
                    continue;
                }
                None => format!("score for unknown job id {:?}", score.job_id),
            };
            problems.push((String::new(), message));
            continue;
        };
        let fault = if score.score > 100 {
            Some(format!("score {} is out of range", score.score))
        } else if score.reason.trim().is_empty() {
            Some("the score has no reason".to_owned())
        } else if score.score >= EVIDENCE_FROM_SCORE
            && (score.job_evidence.is_empty() || score.profile_evidence.is_empty())
        {
            Some(format!(
                "a score of {} must quote what in the job and in the profile it rests on",
                score.score
            ))
        } else {
            None
        };
        match fault {
            Some(fault) => problems.push((job.url.clone(), fault)),
            None => scored.push(ScoredJob {
                job: job.clone(),
                score: score.score,
                reason: score.reason.trim().to_owned(),
                job_evidence: score.job_evidence,
                profile_evidence: score.profile_evidence,
            }),
        }
    }
    for job in by_id.into_values() {
        problems.push((
            job.url.clone(),
            "the model returned no score for this job".into(),
        ));
    }
    (scored, problems)
}

/// Ranks jobs best first: score, then the newest posting, then title.
pub fn rank(scored: &mut [ScoredJob]) {
    scored.sort_by(|a, b| {
        b.score
            .cmp(&a.score)
            .then(b.job.posted_at.cmp(&a.job.posted_at))
            .then(a.job.title.cmp(&b.job.title))
            .then(a.job.url.cmp(&b.job.url))
    });
}

/// Scores every job; see the module docs.
pub async fn run(state: &mut HuntState, env: &StepEnv<'_>) -> Result<(), NodeError> {
    let (Some(profile), Some(prefs)) = (state.profile.clone(), state.preferences.clone()) else {
        return Err(NodeError::fatal("the profile and preferences are missing"));
    };
    let all_jobs = state.jobs.clone();
    let jobs: Vec<&Job> = all_jobs.iter().collect();
    let batches: Vec<&[&Job]> = jobs.chunks(env.settings.score_batch_size.max(1)).collect();
    let calls = batches
        .iter()
        .map(|batch| {
            let ids: Vec<&str> = batch.iter().map(|j| j.id.as_str()).collect();
            (stable_key(&ids.join(",")), prompt(&profile, &prefs, batch))
        })
        .collect();
    let results =
        extract_each::<BatchScoreResult>(env, "score_jobs", Quality::Best, SYSTEM, calls).await;
    let mut scored = Vec::new();
    let mut problems = Vec::new();
    let mut limit = None;
    for (batch, result) in batches.iter().zip(results) {
        match result {
            Ok(answer) => {
                let (ok, bad) = accept(batch, answer);
                scored.extend(ok);
                problems.extend(bad);
            }
            Err(LlmCallError::CostLimit(reason)) => limit = Some(reason),
            Err(LlmCallError::Failed(reason)) => problems.extend(
                batch
                    .iter()
                    .map(|j| (j.url.clone(), format!("scoring failed: {reason}"))),
            ),
        }
    }
    rank(&mut scored);
    state.scored = scored;
    problems.sort();
    for (url, message) in problems {
        let company = state
            .jobs
            .iter()
            .find(|j| j.url == url)
            .map(|j| j.company.clone());
        let url = (!url.is_empty()).then_some(url);
        state.record_issue(
            "score_jobs",
            "validation",
            message,
            company.as_deref(),
            url.as_deref(),
        );
    }
    if let Some(reason) = limit {
        return Err(essential(
            "score every job",
            LlmCallError::CostLimit(format!("{reason} ({} jobs scored)", state.scored.len())),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::models::{ExtractedJob, JobScore, WorkArrangement};
    use job_capabilities::JobSource;

    fn job(id: &str) -> Job {
        Job {
            id: id.into(),
            company: "Acme".into(),
            title: format!("Engineer {id}"),
            location: None,
            url: format!("https://jobs.example/{id}"),
            apply_url: format!("https://jobs.example/{id}"),
            source: JobSource::Lever,
            posted_at: None,
            salary: None,
            extracted: ExtractedJob {
                title: "Engineer".into(),
                seniority: "senior".into(),
                location: None,
                work_arrangement: WorkArrangement::Unknown,
                required_skills: Vec::new(),
                preferred_skills: Vec::new(),
                min_years_experience: None,
                summary: String::new(),
            },
        }
    }

    fn score(id: &str, score: u8) -> JobScore {
        JobScore {
            job_id: id.into(),
            score,
            reason: "Rust backend work she has done for years.".into(),
            job_evidence: vec!["Rust".into()],
            profile_evidence: vec!["8 years of Rust".into()],
        }
    }

    #[test]
    fn a_job_scored_twice_keeps_its_first_score_and_says_so() {
        let (a, b) = (job("a"), job("b"));
        let batch = [&a, &b];
        let answer = BatchScoreResult {
            scores: vec![score("a", 80), score("a", 20), score("b", 60)],
        };
        let (scored, problems) = accept(&batch, answer);
        let kept: Vec<(&str, u8)> = scored
            .iter()
            .map(|s| (s.job.id.as_str(), s.score))
            .collect();
        assert_eq!(kept, [("a", 80), ("b", 60)]);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].0, "https://jobs.example/a");
        assert!(problems[0].1.contains("scored twice"), "{}", problems[0].1);
    }
}
