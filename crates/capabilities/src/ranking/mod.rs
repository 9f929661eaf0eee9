//! Job ranking (spec 004's `RankingService`): saved jobs ranked for a candidate by a
//! composite score, on top of hybrid retrieval. The jobs are indexed once per tenant
//! ([`JobRanker::index`]); a ranking takes the jobs hybrid retrieval finds for the
//! profile (vector similarity and full text fused by rank), then scores each
//!
//! - **similarity** (50 %): cosine similarity of the profile's and the job's embeddings;
//! - **skills** (25 %): the share of the job's skills the profile has (aliases and case
//!   folded; a profile skill named in the description counts too);
//! - **location** (15 %): the job's place or remote scope against the places the
//!   candidate wants ([`location_fit`]);
//! - **salary** (10 %): the job's pay (parsed from its text) against the candidate's
//!   floor, converted to yearly euros; unstated pay scores 0.5,
//!
//! and says what matched in a justification. Two fit factors then scale the composite the
//! way a recruiter discounts a job: a title that names none of the roles the candidate
//! seeks keeps 80 % of it ([`role_fit`]: "Senior SRE" for a backend engineer who shares
//! its skills), and a level one step from theirs keeps 90 % ("Staff" for a senior).
//! What the profile rules out (a place the
//! candidate cannot work from, pay well below the floor, a level two or more steps away)
//! is named as a deal breaker, and such jobs rank after the others whatever their score:
//! a recruiter does not put a job the candidate said no to above one they can take.

mod location;
mod role;
mod seniority;
mod skills;

use std::collections::{BTreeMap, HashMap};

use agent_runtime::vectors::MetadataFilter;
use serde::{Deserialize, Serialize};
use serde_json::json;

pub use location::{Place, Region, location_fit, read_place};
pub use role::{RoleFit, is_level_word, is_title_filler, role_fit, role_words};
pub use seniority::Seniority;
pub use skills::{mentions, normalize_skill, skill_set};

use crate::job::{PayInterval, Salary};
use crate::retrieval::{HybridRetriever, RetrievalError, RetrievalOptions};

/// The composite's weights (spec 004: 0.50, 0.25, 0.15, 0.10).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Weights {
    /// Embedding similarity.
    pub similarity: f32,
    /// Skill overlap.
    pub skills: f32,
    /// Location fit.
    pub location: f32,
    /// Salary fit.
    pub salary: f32,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            similarity: 0.50,
            skills: 0.25,
            location: 0.15,
            salary: 0.10,
        }
    }
}

/// A pay floor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SalaryFloor {
    /// The least acceptable pay.
    pub amount: f64,
    /// Its currency (ISO 4217).
    pub currency: String,
    /// Per what.
    pub interval: PayInterval,
}

/// The candidate a ranking is for.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CandidateProfile {
    /// The profile in prose (a summary, or the resume's first lines).
    pub summary: String,
    /// Skills.
    pub skills: Vec<String>,
    /// Titles sought.
    pub titles: Vec<String>,
    /// Where they want to work: cities ("Lisbon, Portugal") or remote scopes ("Remote
    /// (Europe)").
    pub preferred_locations: Vec<String>,
    /// Whether remote jobs suit them.
    pub remote_ok: bool,
    /// Their pay floor.
    pub min_salary: Option<SalaryFloor>,
    /// Their level; read from `titles` when not given.
    #[serde(default)]
    pub seniority: Option<Seniority>,
}

impl CandidateProfile {
    /// The text embedded and searched for the profile: titles, skills, then the summary.
    pub fn query_text(&self) -> String {
        format!(
            "{}. Skills: {}. {}",
            self.titles.join(", "),
            self.skills.join(", "),
            self.summary
        )
    }
}

/// A job to rank.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct JobPosting {
    /// Its id among the tenant's jobs.
    pub id: String,
    /// The title.
    pub title: String,
    /// The company.
    pub company: String,
    /// Where, as written ("Berlin, Germany", "Remote (Europe)").
    pub location: String,
    /// Whether it is fully remote.
    pub remote: bool,
    /// The pay as written (parsed with the salary parser).
    pub salary_text: String,
    /// The skills it lists.
    pub skills: Vec<String>,
    /// The description.
    pub description: String,
}

impl JobPosting {
    /// The text embedded and indexed for the job: title and company, skills, then the
    /// description (the embedding model reads its first 256 tokens).
    pub fn text(&self) -> String {
        format!(
            "{} at {}. {}. Skills: {}. {}",
            self.title,
            self.company,
            self.location,
            self.skills.join(", "),
            self.description
        )
    }
}

/// The composite's parts, each from 0 to 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScoreBreakdown {
    /// Embedding similarity.
    pub similarity: f32,
    /// Skill overlap.
    pub skills: f32,
    /// Location fit.
    pub location: f32,
    /// Salary fit.
    pub salary: f32,
    /// How well the job's title names a role the candidate seeks ([`role_fit`]); it
    /// scales the composite (a role not sought keeps [`ROLE_FLOOR`] of it).
    pub role: f32,
}

/// The share of its composite a job keeps when its title names no role the candidate
/// seeks.
pub const ROLE_FLOOR: f32 = 0.8;

/// The share of its composite a job keeps when its level is one step from the
/// candidate's (two or more steps is a deal breaker).
pub const NEAR_LEVEL: f32 = 0.9;

/// A job ranked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankedJob {
    /// The job's id.
    pub job_id: String,
    /// The composite score, from 0 to 1.
    pub score: f32,
    /// Its parts.
    pub breakdown: ScoreBreakdown,
    /// The profile's skills the job asks for, as the job names them.
    pub matched_skills: Vec<String>,
    /// The job's skills the profile lacks.
    pub missing_skills: Vec<String>,
    /// What rules the job out as the profile states it (a place the candidate cannot
    /// work from, pay well below the floor, a level two or more steps away); jobs with
    /// any rank after those without.
    pub deal_breakers: Vec<String>,
    /// What matched, in a sentence.
    pub justification: String,
}

/// Rough yearly euros per unit of a currency, for comparing pay (rates of late 2026,
/// good to a few percent: enough for a floor).
fn to_euros(amount: f64, currency: &str) -> Option<f64> {
    let rate = match currency.to_uppercase().as_str() {
        "EUR" => 1.0,
        "USD" => 0.93,
        "GBP" => 1.17,
        "CHF" => 1.05,
        "CAD" => 0.68,
        "AUD" => 0.61,
        "INR" => 0.011,
        "SEK" => 0.088,
        "NOK" => 0.086,
        "DKK" => 0.134,
        "PLN" => 0.23,
        "JPY" => 0.0062,
        "SGD" => 0.69,
        "BRL" => 0.17,
        "MXN" => 0.051,
        _ => return None,
    };
    Some(amount * rate)
}

/// How the job's pay meets the floor: 1 at or above it; 0.5 when the pay is not stated or
/// not comparable (it may meet the floor); below the floor under that, falling from 0.5
/// to 0 at 70 % of it (pay known to be short is worse than pay unknown); with why.
fn salary_fit(job: Option<&Salary>, floor: Option<&SalaryFloor>, written: &str) -> (f32, String) {
    let Some(floor) = floor else {
        return (1.0, String::new());
    };
    let Some(wanted) = to_euros(floor.amount * floor.interval.per_year(), &floor.currency) else {
        return (
            0.5,
            format!("your floor's currency {} is not known", floor.currency),
        );
    };
    let Some(salary) = job else {
        return (0.5, "pay not stated".into());
    };
    let best = salary.annual_max().or(salary.annual_min());
    let Some(offered) = best.and_then(|v| to_euros(v, &salary.currency)) else {
        return (0.5, "pay not comparable".into());
    };
    let ratio = offered / wanted.max(1.0);
    let score = if ratio >= 1.0 {
        1.0
    } else {
        0.5 * ((ratio - 0.7) / 0.3).clamp(0.0, 1.0) as f32
    };
    let verdict = if ratio >= 1.0 { "meets" } else { "is below" };
    (score, format!("{} {verdict} your floor", written.trim()))
}

/// Ranks saved jobs for candidates: indexes them in a [`HybridRetriever`]'s collection,
/// per tenant, and ranks them by the composite.
#[derive(Debug, Clone)]
pub struct JobRanker {
    retriever: HybridRetriever,
    weights: Weights,
    /// Candidates taken from hybrid retrieval before scoring.
    candidates: usize,
}

impl JobRanker {
    /// A ranker over `retriever`'s collection, with spec 004's weights and 50 candidates.
    pub fn new(retriever: HybridRetriever) -> Self {
        JobRanker {
            retriever,
            weights: Weights::default(),
            candidates: 50,
        }
    }

    /// Other weights.
    pub fn with_weights(mut self, weights: Weights) -> Self {
        self.weights = weights;
        self
    }

    /// How many jobs hybrid retrieval hands to the composite (50 by default).
    pub fn with_candidates(mut self, candidates: usize) -> Self {
        self.candidates = candidates.max(1);
        self
    }

    /// Indexes (or re-indexes) the tenant's jobs, one embedding each.
    pub async fn index(&self, tenant: &str, jobs: &[JobPosting]) -> Result<usize, RetrievalError> {
        let texts: Vec<String> = jobs.iter().map(JobPosting::text).collect();
        let vectors = self.retriever.embed(&texts).await?;
        let records = jobs
            .iter()
            .zip(vectors)
            .map(|(job, vector)| agent_runtime::vectors::VectorRecord {
                tenant: tenant.to_owned(),
                id: job.id.clone(),
                vector,
                text: job.text(),
                metadata: BTreeMap::from([("document".to_owned(), json!(job.id))]),
            })
            .collect::<Vec<_>>();
        self.retriever
            .store()
            .upsert(self.retriever.collection(), &records)
            .await?;
        Ok(records.len())
    }

    /// Removes the tenant's jobs with these ids from the index (a deleted job); returns
    /// how many were there.
    pub async fn forget(&self, tenant: &str, ids: &[String]) -> Result<u64, RetrievalError> {
        Ok(self
            .retriever
            .store()
            .delete(self.retriever.collection(), tenant, ids)
            .await?)
    }

    /// The tenant's jobs (of `jobs`, by id) best for `profile`, best first, at most
    /// `top_k`: the candidates hybrid retrieval finds, scored by the composite.
    pub async fn rank(
        &self,
        tenant: &str,
        profile: &CandidateProfile,
        jobs: &[JobPosting],
        top_k: usize,
    ) -> Result<Vec<RankedJob>, RetrievalError> {
        // Every candidate keeps its similarity (no floor), and distinct jobs that read
        // alike all stay (overlap never exceeds 1).
        let options = RetrievalOptions {
            top_k: self.candidates,
            min_similarity: -1.0,
            candidates: self.candidates,
            filter: MetadataFilter::new(),
            duplicate_overlap: f32::INFINITY,
        };
        let found = self
            .retriever
            .search(tenant, &profile.query_text(), &options)
            .await?;
        let by_id: HashMap<&str, &JobPosting> = jobs.iter().map(|j| (j.id.as_str(), j)).collect();
        let mut ranked: Vec<RankedJob> = found
            .iter()
            .filter_map(|hit| {
                let job = by_id.get(hit.id.as_str())?;
                Some(score_job(
                    profile,
                    job,
                    hit.similarity.unwrap_or(0.0),
                    self.weights,
                ))
            })
            .collect();
        sort_ranked(&mut ranked);
        ranked.truncate(top_k);
        Ok(ranked)
    }
}

/// Puts ranked jobs in their order: those without a deal breaker first, then by score,
/// best first, then by id (so equal scores keep one order).
pub fn sort_ranked(ranked: &mut [RankedJob]) {
    ranked.sort_by(|a, b| {
        a.deal_breakers
            .is_empty()
            .cmp(&b.deal_breakers.is_empty())
            .reverse()
            .then_with(|| b.score.total_cmp(&a.score))
            .then_with(|| a.job_id.cmp(&b.job_id))
    });
}

/// The composite of one job for `profile`, given its embedding similarity to the profile.
///
/// ```
/// use job_capabilities::ranking::{CandidateProfile, JobPosting, Weights, score_job};
/// let profile = CandidateProfile { skills: vec!["Kubernetes".into(), "Go".into()], ..Default::default() };
/// let job = JobPosting { skills: vec!["k8s".into(), "Golang".into()], ..Default::default() };
/// let ranked = score_job(&profile, &job, 0.5, Weights::default());
/// assert_eq!(ranked.breakdown.skills, 1.0);
/// assert_eq!(ranked.matched_skills, ["k8s", "Golang"]);
/// ```
pub fn score_job(
    profile: &CandidateProfile,
    job: &JobPosting,
    similarity: f32,
    weights: Weights,
) -> RankedJob {
    let similarity = similarity.clamp(0.0, 1.0);
    let fit = SkillFit::of(profile, job);
    let skills = fit.score;
    let places: Vec<Place> = profile
        .preferred_locations
        .iter()
        .map(|p| read_place(p))
        .collect();
    let (location, where_) = location_fit(
        &read_place(&job.location),
        job.remote,
        &places,
        profile.remote_ok,
    );
    let salary_parsed = crate::salary::parse_salary_text(&job.salary_text);
    let (salary, pay) = salary_fit(
        salary_parsed.as_ref(),
        profile.min_salary.as_ref(),
        &job.salary_text,
    );
    let level = profile
        .seniority
        .or_else(|| profile.titles.iter().map(|t| Seniority::of_title(t)).max());
    let job_level = Seniority::of_title(&job.title);
    let steps = level.map(|level| level.distance(job_level));
    // One step away only counts when the title says so: "Data Scientist" may be hired
    // at the candidate's level.
    let near_level = level
        .zip(Seniority::stated_in(&job.title))
        .is_some_and(|(level, stated)| level.distance(stated) == 1);
    let wanted_skills: Vec<String> = skill_set(&profile.skills).into_iter().collect();
    let role = role_fit(&job.title, &profile.titles, &wanted_skills);
    let w = weights;
    let parts =
        w.similarity * similarity + w.skills * skills + w.location * location + w.salary * salary;
    let level_factor = if near_level { NEAR_LEVEL } else { 1.0 };
    let score = parts * (ROLE_FLOOR + (1.0 - ROLE_FLOOR) * role.score) * level_factor;
    let mut reasons = Vec::new();
    match &role.matched {
        Some(sought) if role.score >= 1.0 => reasons.push(format!("role: {sought}")),
        Some(sought) => reasons.push(format!("role: partly {sought}")),
        None if !profile.titles.is_empty() => {
            reasons.push("role: not one you named".to_owned());
        }
        None => {}
    }
    if fit.matched.is_empty() {
        reasons.push("no listed skill in common".to_owned());
    } else {
        reasons.push(format!(
            "skills {} ({} of {} asked)",
            fit.matched.join(", "),
            fit.matched_listed,
            job.skills.len()
        ));
    }
    reasons.push(format!("location: {where_}"));
    if !pay.is_empty() {
        reasons.push(format!("pay: {pay}"));
    }
    reasons.push(format!("similarity {similarity:.2}"));
    if let Some(level) = level.filter(|_| near_level) {
        reasons.push(format!("level: {job_level:?} for a {level:?} candidate").to_lowercase());
    }
    let mut deal_breakers = Vec::new();
    if location == 0.0 && !places.is_empty() {
        deal_breakers.push(where_.clone());
    }
    if salary < SALARY_DEAL_BREAKER {
        deal_breakers.push("pay well below your floor".to_owned());
    }
    if let Some(level) = level
        && steps.is_some_and(|steps| steps >= 2)
    {
        deal_breakers
            .push(format!("a {job_level:?} role for a {level:?} candidate").to_lowercase());
    }
    if !deal_breakers.is_empty() {
        reasons.push(format!("ranked lower: {}", deal_breakers.join(", ")));
    }
    RankedJob {
        job_id: job.id.clone(),
        score,
        breakdown: ScoreBreakdown {
            similarity,
            skills,
            location,
            salary,
            role: role.score,
        },
        matched_skills: fit.matched,
        missing_skills: fit.missing,
        deal_breakers,
        justification: reasons.join("; "),
    }
}

/// How a job's skills meet a profile's.
struct SkillFit {
    /// The share of the job's skills the profile has (counting profile skills the job's
    /// description names), from 0 to 1.
    score: f32,
    /// The profile's skills the job asks for, as the job names them, then those its
    /// description names.
    matched: Vec<String>,
    /// How many of the job's listed skills matched.
    matched_listed: usize,
    /// The job's listed skills the profile lacks.
    missing: Vec<String>,
}

impl SkillFit {
    fn of(profile: &CandidateProfile, job: &JobPosting) -> SkillFit {
        let wanted = skill_set(&profile.skills);
        let has = |canonical: &str| wanted.iter().any(|skill| same_skill(skill, canonical));
        let (matched, missing): (Vec<&String>, Vec<&String>) =
            job.skills.iter().partition(|s| has(&normalize_skill(s)));
        let listed: Vec<String> = job.skills.iter().map(|s| normalize_skill(s)).collect();
        let named_in_text: Vec<&String> = wanted
            .iter()
            .filter(|skill| !listed.contains(skill) && mentions(&job.description, skill))
            .collect();
        let score = if listed.is_empty() {
            named_in_text.len() as f32 / wanted.len().max(1) as f32
        } else {
            (matched.len() + named_in_text.len()) as f32
                / (listed.len() + named_in_text.len()) as f32
        };
        SkillFit {
            score: score.min(1.0),
            matched_listed: matched.len(),
            matched: matched.into_iter().chain(named_in_text).cloned().collect(),
            missing: missing.into_iter().cloned().collect(),
        }
    }
}

/// Whether two canonical skills name the same thing: equal, or one is the other with
/// words added ("owasp" and "owasp top 10", "aws" and "aws iam").
fn same_skill(a: &str, b: &str) -> bool {
    let contains = |long: &str, short: &str| {
        short.len() >= 2 && format!(" {long} ").contains(&format!(" {short} "))
    };
    a == b || contains(a, b) || contains(b, a)
}

/// A salary score below this (pay under 76 % of the floor) rules the job out.
const SALARY_DEAL_BREAKER: f32 = 0.1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_with_words_added_is_the_same_skill() {
        assert!(same_skill("owasp", "owasp top 10"));
        assert!(same_skill("aws iam", "aws"));
        assert!(same_skill("go", "go"));
        assert!(!same_skill("go", "google cloud"), "whole words only");
        assert!(!same_skill("java", "javascript"));
    }
}
