//! Step 6: score the jobs against the candidate in batches, concurrently (quality
//! model). Every score must cite the job and the profile.
//!
//! Job evidence must quote the job's text ([`job_texts`]: the posting as fetched and the
//! job as the scorer is shown it; case, whitespace and punctuation aside). A batch whose
//! answer cites evidence that is not there is asked once more, for those jobs only,
//! naming the quotes that were not found. Evidence still not found is dropped and
//! recorded as a `validation` issue; a fit (a score from [`EVIDENCE_FROM_SCORE`]) left
//! with no quote of the job is refused, as one that cited none.

use std::collections::HashMap;
use std::fmt::Write as _;

use agent_runtime::graph::NodeError;
use job_capabilities::RawJob;

use super::{StepEnv, essential, run_each, stable_key};
use crate::grounding::{quotes, words};
use crate::llm::{LlmCallError, Quality};
use crate::models::{
    BatchScoreResult, CandidateProfile, Job, JobScore, ScoredJob, SearchPreferences,
};
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
        text.push_str(&job_block(job));
    }
    text
}

/// How one job is shown to the scorer: its `- id:` line, its `url:` line and its facts
/// (those the posting states).
pub fn job_block(job: &Job) -> String {
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
    let mut block = format!(
        "\n- id: {id}\n  url: {url}\n  title: {title} at {company} ({seniority})\n  location: {location} ({arrangement})\n  pay: {pay}\n  requires: {required}\n",
        id = job.id,
        url = job.url,
        title = job.title,
        company = job.company,
        seniority = e.seniority,
        location = job.location.as_deref().unwrap_or("not stated"),
        arrangement = e.work_arrangement.as_str(),
        required = e.required_skills.join(", "),
    );
    // Lines that would say nothing are left out.
    if !e.preferred_skills.is_empty() {
        let _ = writeln!(block, "  nice to have: {}", e.preferred_skills.join(", "));
    }
    if let Some(years) = e.min_years_experience {
        let _ = writeln!(block, "  min years: {years}");
    }
    let _ = writeln!(block, "  summary: {}", e.summary);
    block
}

/// The words of each job's text, by job id: the posting as fetched (title, location,
/// description; from `raw_jobs`, by URL) and the job as the scorer is shown it
/// ([`job_block`]).
pub fn job_texts(jobs: &[Job], raw_jobs: &[RawJob]) -> HashMap<String, Vec<String>> {
    let raw_by_url: HashMap<&str, &RawJob> = raw_jobs.iter().map(|r| (r.url.as_str(), r)).collect();
    jobs.iter()
        .map(|job| {
            let mut text = job_block(job);
            if let Some(raw) = raw_by_url.get(job.url.as_str()) {
                let _ = write!(
                    text,
                    "\n{}\n{}\n{}",
                    raw.title,
                    raw.location.as_deref().unwrap_or_default(),
                    raw.description
                );
            }
            (job.id.clone(), words(&text))
        })
        .collect()
}

/// The job evidence of `score` that its job's text does not contain.
fn unquoted(score: &JobScore, texts: &HashMap<String, Vec<String>>) -> Vec<String> {
    let text = texts
        .get(&score.job_id)
        .map(Vec::as_slice)
        .unwrap_or_default();
    score
        .job_evidence
        .iter()
        .filter(|quote| !quotes(text, quote))
        .cloned()
        .collect()
}

/// The prompt asking again for the jobs whose evidence was not found in their text.
pub fn requote_prompt(
    profile: &CandidateProfile,
    prefs: &SearchPreferences,
    faulty: &[(&Job, Vec<String>)],
) -> String {
    let jobs: Vec<&Job> = faulty.iter().map(|(job, _)| *job).collect();
    let mut text = prompt(profile, prefs, &jobs);
    text.push_str("\nA previous answer cited job evidence that is not in the job's text:\n");
    for (job, quotes) in faulty {
        let quotes: Vec<String> = quotes.iter().map(|q| format!("{q:?}")).collect();
        let _ = writeln!(text, "- id {}: {}", job.id, quotes.join("; "));
    }
    text.push_str(
        "Score these jobs again. Copy job evidence word for word from the job as given above; \
         give none rather than paraphrase.\n",
    );
    text
}

/// Scores from this value up claim a fit, and must quote the job requirements and the
/// profile facts they rest on; lower scores need only their reason.
pub const EVIDENCE_FROM_SCORE: u8 = 50;

/// Checks one batch's answer: every score in range and with a reason, a fit (from
/// [`EVIDENCE_FROM_SCORE`]) with evidence on both sides and at least one quote of the
/// job, job evidence not in the job's text dropped (and said), every job of the batch
/// scored once.
fn accept(
    batch: &[&Job],
    result: BatchScoreResult,
    texts: &HashMap<String, Vec<String>>,
) -> (Vec<ScoredJob>, Vec<(String, String)>) {
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
        let not_found = unquoted(&score, texts);
        let quoted: Vec<String> = score
            .job_evidence
            .iter()
            .filter(|q| !not_found.contains(q))
            .cloned()
            .collect();
        let listed = || {
            not_found
                .iter()
                .map(|q| format!("{q:?}"))
                .collect::<Vec<_>>()
                .join("; ")
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
        } else if score.score >= EVIDENCE_FROM_SCORE && quoted.is_empty() {
            Some(format!(
                "a score of {} must quote the job, and none of its evidence is in the job's text: {}",
                score.score,
                listed()
            ))
        } else {
            None
        };
        if let Some(fault) = fault {
            problems.push((job.url.clone(), fault));
            continue;
        }
        if !not_found.is_empty() {
            problems.push((
                job.url.clone(),
                format!(
                    "job evidence not in the job's text was dropped (the score of {} is kept): {}",
                    score.score,
                    listed()
                ),
            ));
        }
        scored.push(ScoredJob {
            job: job.clone(),
            score: score.score,
            reason: score.reason.trim().to_owned(),
            job_evidence: quoted,
            profile_evidence: score.profile_evidence,
        });
    }
    for job in by_id.into_values() {
        problems.push((
            job.url.clone(),
            "the model returned no score for this job".into(),
        ));
    }
    (scored, problems)
}

/// What scoring one batch came to.
#[derive(Default)]
struct BatchOutcome {
    scored: Vec<ScoredJob>,
    problems: Vec<(String, String)>,
    limit: Option<String>,
}

/// Scores one batch: asks, asks once more for the jobs whose evidence is not in their
/// text, and checks the answer. Both calls are journaled.
async fn score_batch(
    env: &StepEnv<'_>,
    profile: &CandidateProfile,
    prefs: &SearchPreferences,
    batch: &[&Job],
    texts: &HashMap<String, Vec<String>>,
) -> BatchOutcome {
    let ids: Vec<&str> = batch.iter().map(|j| j.id.as_str()).collect();
    let key = format!("score_jobs:{}", stable_key(&ids.join(",")));
    let ask = |key: String, prompt: String| async move {
        env.llm
            .extract_once::<BatchScoreResult>(
                env.ctx,
                &key,
                "score_jobs",
                Quality::Best,
                SYSTEM,
                prompt,
            )
            .await
    };
    let mut answer = match ask(key.clone(), prompt(profile, prefs, batch)).await {
        Ok(answer) => answer,
        Err(LlmCallError::CostLimit(reason)) => {
            return BatchOutcome {
                limit: Some(reason),
                ..BatchOutcome::default()
            };
        }
        Err(LlmCallError::Failed(reason)) => {
            return BatchOutcome {
                problems: batch
                    .iter()
                    .map(|j| (j.url.clone(), format!("scoring failed: {reason}")))
                    .collect(),
                ..BatchOutcome::default()
            };
        }
    };
    let mut first_of: HashMap<String, usize> = HashMap::new();
    for (at, score) in answer.scores.iter().enumerate() {
        first_of.entry(score.job_id.clone()).or_insert(at);
    }
    let faulty: Vec<(&Job, Vec<String>)> = batch
        .iter()
        .filter_map(|job| {
            let score = answer.scores.get(*first_of.get(&job.id)?)?;
            let not_found = unquoted(score, texts);
            (!not_found.is_empty()).then_some((*job, not_found))
        })
        .collect();
    let mut limit = None;
    if !faulty.is_empty() {
        tracing::warn!(
            jobs = faulty.len(),
            "score evidence is not in the job's text: asking again for those jobs"
        );
        match ask(
            format!("{key}:requote"),
            requote_prompt(profile, prefs, &faulty),
        )
        .await
        {
            Ok(again) => {
                let mut replaced = std::collections::HashSet::new();
                for score in again.scores {
                    let asked = faulty.iter().any(|(job, _)| job.id == score.job_id);
                    if let Some(&at) = first_of.get(&score.job_id)
                        && asked
                        && replaced.insert(score.job_id.clone())
                        && let Some(slot) = answer.scores.get_mut(at)
                    {
                        *slot = score;
                    }
                }
            }
            Err(LlmCallError::CostLimit(reason)) => limit = Some(reason),
            Err(LlmCallError::Failed(reason)) => {
                tracing::warn!(%reason, "asking again for quoted evidence failed");
            }
        }
    }
    let (scored, problems) = accept(batch, answer, texts);
    BatchOutcome {
        scored,
        problems,
        limit,
    }
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
    let texts = job_texts(&all_jobs, &state.raw_jobs);
    let jobs: Vec<&Job> = all_jobs.iter().collect();
    let batches: Vec<&[&Job]> = jobs.chunks(env.settings.score_batch_size.max(1)).collect();
    let (batches, profile, prefs, texts) = (&batches, &profile, &prefs, &texts);
    let outcomes = run_each(env, "score_jobs", batches.len(), |index| async move {
        score_batch(env, profile, prefs, batches[index], texts).await
    })
    .await;
    let mut scored = Vec::new();
    let mut problems = Vec::new();
    let mut limit = None;
    for outcome in outcomes.into_iter().flatten() {
        scored.extend(outcome.scored);
        problems.extend(outcome.problems);
        limit = limit.or(outcome.limit);
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
            job_evidence: vec!["Engineer".into()],
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
        let texts = job_texts(&[a.clone(), b.clone()], &[]);
        let (scored, problems) = accept(&batch, answer, &texts);
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
