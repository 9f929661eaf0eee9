//! Application preparation: job fit read from the profile (no model), and an application
//! package written by the model (resume suggestions as before/after pairs tied to the
//! job's requirements, a cover letter, an intro email), every sentence of it checked by
//! job-capabilities' grounding against what the profile says. A text that claims what
//! the profile does not hold is asked again once with what was wrong; what still does
//! not hold is removed and listed.

use agent_llm::{ChatRequest, Message, ModelTier};
use agent_runtime::{AgentContext, Ask};
use chrono::Utc;
use job_capabilities::grounding::{Fabrication, check_claims};
use job_capabilities::text::{Found, find_keyword};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::models::{ApplicationPackage, Job, ResumeSuggestion, UserProfile};

/// A requirement the profile meets, with where it says so.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// The job's requirement.
    pub requirement: String,
    /// What in the profile meets it.
    pub evidence: String,
}

/// How a profile fits a job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitReport {
    /// Requirements met, with evidence.
    pub matched: Vec<Evidence>,
    /// Requirements the profile says nothing of.
    pub missing: Vec<String>,
    /// Share of requirements met, 0 to 100.
    pub score: u32,
}

/// The technology and skill names of a job's requirements: a requirement of one or two
/// words whole ("Rust", "React Native"), and the name-like words of longer ones
/// ("Kubernetes", "C++", "AWS"), not their opening capital ("Strong communication").
pub fn job_skills(job: &Job) -> Vec<String> {
    let mut skills = Vec::new();
    for requirement in &job.requirements {
        let words: Vec<&str> = requirement
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '(' | ')' | '.')))
            .filter(|w| w.chars().any(char::is_alphabetic))
            .collect();
        if (1..=2).contains(&words.len()) && words.iter().any(|w| w.chars().any(char::is_uppercase))
        {
            skills.push(words.join(" "));
            continue;
        }
        for (i, word) in words.iter().enumerate() {
            let capitals = word.chars().filter(char::is_ascii_uppercase).count();
            let name_like = (i > 0 && capitals > 0) || capitals >= 2 || word.contains(['+', '#']);
            if name_like && word.len() > 1 {
                skills.push((*word).to_owned());
            }
        }
    }
    skills.sort();
    skills.dedup();
    skills
}

/// The profile's lines: its resume's lines, skills, summary.
fn profile_lines(profile: &UserProfile) -> Vec<String> {
    let mut lines: Vec<String> = profile
        .resume_text
        .lines()
        .map(|l| {
            job_capabilities::documents::strip_bullet(l)
                .trim()
                .to_owned()
        })
        .filter(|l| l.len() > 2)
        .collect();
    lines.extend(profile.skills.iter().map(|s| format!("Skill: {s}")));
    if !profile.summary.trim().is_empty() {
        lines.push(profile.summary.clone());
    }
    lines
}

/// How `profile` meets `job`'s requirements: a requirement is met when the profile
/// mentions every skill it names (or, for a requirement naming none, most of its content
/// words); the evidence is the first profile line that does.
pub fn analyze_fit(job: &Job, profile: &UserProfile) -> FitReport {
    let lines = profile_lines(profile);
    let everything = lines.join("\n");
    let mut matched = Vec::new();
    let mut missing = Vec::new();
    for requirement in &job.requirements {
        let named = job_skills(&Job {
            requirements: vec![requirement.clone()],
            ..job.clone()
        });
        let met_by = |text: &str| {
            if named.is_empty() {
                let words = job_capabilities::text::content_stems(requirement);
                let have = job_capabilities::text::content_stems(text);
                !words.is_empty() && words.intersection(&have).count() * 2 >= words.len()
            } else {
                named
                    .iter()
                    .all(|skill| find_keyword(text, skill) != Found::No)
            }
        };
        if met_by(&everything) {
            let evidence = lines
                .iter()
                .find(|line| {
                    named.is_empty() && met_by(line)
                        || named.iter().any(|s| find_keyword(line, s) != Found::No)
                })
                .cloned()
                .unwrap_or_default();
            matched.push(Evidence {
                requirement: requirement.clone(),
                evidence,
            });
        } else {
            missing.push(requirement.clone());
        }
    }
    let total = matched.len() + missing.len();
    let score = (matched.len() * 100).checked_div(total).unwrap_or(0) as u32;
    FitReport {
        matched,
        missing,
        score,
    }
}

/// What the writer model answers.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
pub struct ApplicationDraft {
    /// Resume changes, each answering one requirement of the job.
    pub resume_suggestions: Vec<ResumeSuggestion>,
    /// A cover letter of 150 to 300 words.
    pub cover_letter: String,
    /// A short introduction email to the recruiter, under 120 words.
    pub intro_email: String,
}

/// The writer's system prompt.
pub const WRITER_PROMPT: &str = "You are the ApplicationWriter. You write application \
materials for one candidate and one job: resume suggestions as before/after pairs (each \
tied to one requirement of the job; \"before\" quotes a line of the resume, or is empty for a \
new line), a cover letter and a short intro email. Use only facts the candidate's profile \
states: never add a number, employer, title, certification or skill the profile does not \
hold. When the profile lacks a requirement, do not claim it.";

/// The writer's request for `job` and `profile`, with what was wrong last time.
pub fn writer_request(job: &Job, profile: &UserProfile, problems: &[String]) -> ChatRequest {
    let mut prompt = format!(
        "Job: {}\nRequirements:\n{}\n\nDescription:\n{}\n\nCandidate profile:\nName: {}\nSummary: {}\nSkills: {}\nResume:\n{}\n",
        job.headline(),
        job.requirements
            .iter()
            .map(|r| format!("- {r}"))
            .collect::<Vec<_>>()
            .join("\n"),
        job.description.chars().take(2500).collect::<String>(),
        profile.name,
        profile.summary,
        profile.skills.join(", "),
        profile.resume_text.chars().take(4000).collect::<String>(),
    );
    if !problems.is_empty() {
        prompt.push_str(&format!(
            "\nYour last draft claimed what the profile does not say. Fix these:\n- {}\n",
            problems.join("\n- ")
        ));
    }
    ChatRequest::new(vec![Message::user(prompt)])
        .with_system(WRITER_PROMPT)
        .with_temperature(0.3)
}

/// Why preparing failed.
#[derive(Debug, thiserror::Error)]
pub enum PrepError {
    /// The model did not give a usable draft.
    #[error("the application could not be written: {0}")]
    Model(#[from] agent_llm::structured::ExtractError),
    /// There is nothing to write from.
    #[error("{0}")]
    NoProfile(String),
}

/// The sentences of a text (cut after `.`, `!` or `?` followed by a space or line end).
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        current.push(c);
        let ends = matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace())
            || c == '\n';
        if ends {
            if !current.trim().is_empty() {
                out.push(current.clone());
            }
            current.clear();
        }
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

/// What in a draft is not grounded in `sources`, by place.
struct Checked {
    suggestions: Vec<ResumeSuggestion>,
    cover_letter: String,
    intro_email: String,
    problems: Vec<String>,
}

fn check_draft(draft: &ApplicationDraft, sources: &[String], skills: &[String]) -> Checked {
    let mut problems = Vec::new();
    let mut note = |place: &str, text: &str, why: Fabrication| {
        problems.push(format!("{place}: \"{}\" {why}", text.trim()));
    };
    // The "before" line is the model's too: it is checked like the rest, not taken as
    // evidence (an invented one would vouch for its own rewrite).
    let suggestions = draft
        .resume_suggestions
        .iter()
        .filter(|s| {
            let checked = check_claims(&s.before, sources, skills)
                .map_err(|why| ("resume line quoted", &s.before, why))
                .and_then(|()| {
                    check_claims(&s.after, sources, skills)
                        .map_err(|why| ("resume suggestion", &s.after, why))
                });
            match checked {
                Ok(()) => true,
                Err((place, text, why)) => {
                    note(place, text, why);
                    false
                }
            }
        })
        .cloned()
        .collect();
    let mut keep = |place: &str, text: &str| -> String {
        sentences(text)
            .into_iter()
            .filter(|sentence| match check_claims(sentence, sources, skills) {
                Ok(()) => true,
                Err(why) => {
                    note(place, sentence, why);
                    false
                }
            })
            .collect::<String>()
            .trim()
            .to_owned()
    };
    let cover_letter = keep("cover letter", &draft.cover_letter);
    let intro_email = keep("intro email", &draft.intro_email);
    Checked {
        suggestions,
        cover_letter,
        intro_email,
        problems,
    }
}

/// Writes and checks an application package for `job`: the session's model asked on the
/// primary tier (the runtime's one metered call, counted under `writer`), asked again
/// once with what the first draft claimed beyond the profile.
pub async fn prepare_application<S, E>(
    ctx: &AgentContext<S, E>,
    job: &Job,
    profile: &UserProfile,
) -> Result<ApplicationPackage, PrepError> {
    if profile.is_empty() {
        return Err(PrepError::NoProfile(
            "there is no profile to write from: set one, or upload a resume, first".into(),
        ));
    }
    // What the texts may say: the profile, and the job's own names (its company, title
    // and place); not its description, whose skills are exactly what must not be claimed.
    let mut sources = profile.evidence();
    sources.push(format!("{} {} {}", job.title, job.company, job.location));
    let skills: Vec<String> = job_skills(job)
        .into_iter()
        .filter(|s| find_keyword(&sources.join("\n"), s) == Found::No)
        .collect();

    let ask = |problems: &[String]| {
        Ask::from_request(writer_request(job, profile, problems))
            .tier(ModelTier::Primary)
            .step("writer")
            .attempts(2)
    };
    let first = ctx.extract::<ApplicationDraft>(ask(&[])).await?;
    let mut checked = check_draft(&first.value, &sources, &skills);
    if !checked.problems.is_empty() {
        tracing::info!(
            problems = checked.problems.len(),
            "the draft claimed too much; asking again"
        );
        let second = ctx
            .extract::<ApplicationDraft>(ask(&checked.problems))
            .await?;
        checked = check_draft(&second.value, &sources, &skills);
    }
    let package = ApplicationPackage {
        id: format!("p{}", &uuid::Uuid::new_v4().simple().to_string()[..10]),
        job_id: job.id.clone(),
        job_headline: job.headline(),
        resume_suggestions: checked.suggestions,
        cover_letter: checked.cover_letter,
        intro_email: checked.intro_email,
        removed: checked.problems,
        created_at: Utc::now(),
    };
    Ok(package)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Job {
        Job {
            id: "j1".into(),
            title: "Platform Engineer".into(),
            company: "Acme".into(),
            location: "Berlin".into(),
            remote: false,
            description: String::new(),
            requirements: vec![
                "Rust".into(),
                "5+ years running Kubernetes in production".into(),
                "Strong communication skills".into(),
            ],
            salary_text: String::new(),
            url: String::new(),
            source: "test".into(),
            posted: String::new(),
            status: Default::default(),
            found_at: Utc::now(),
        }
    }

    fn profile() -> UserProfile {
        UserProfile {
            skills: vec!["Rust".into(), "PostgreSQL".into()],
            resume_text: "- Built a Rust ingestion service handling 2M events a day\n- Gave clear communication to 3 teams about skills".into(),
            ..UserProfile::default()
        }
    }

    #[test]
    fn fit_names_evidence_and_what_is_missing() {
        let fit = analyze_fit(&job(), &profile());
        assert_eq!(fit.matched[0].requirement, "Rust");
        assert!(fit.matched[0].evidence.contains("Rust ingestion"));
        assert_eq!(fit.missing, ["5+ years running Kubernetes in production"]);
        assert_eq!(fit.score, 66);
    }

    #[test]
    fn skills_are_the_names_of_the_requirements() {
        assert_eq!(job_skills(&job()), ["Kubernetes", "Rust"]);
    }

    #[test]
    fn claims_the_profile_lacks_are_removed_sentence_by_sentence() {
        let draft = ApplicationDraft {
            resume_suggestions: vec![
                ResumeSuggestion {
                    requirement: "Rust".into(),
                    before: "Built a Rust ingestion service handling 2M events a day".into(),
                    after: "Built a Rust ingestion service that handles 2M events a day".into(),
                },
                ResumeSuggestion {
                    requirement: "Kubernetes".into(),
                    before: String::new(),
                    after: "Ran Kubernetes clusters for 5 years".into(),
                },
                // An invented "before" does not vouch for its rewrite.
                ResumeSuggestion {
                    requirement: "Kubernetes".into(),
                    before: "Ran Kubernetes for 5 years".into(),
                    after: "Ran Kubernetes clusters for 5 years".into(),
                },
            ],
            cover_letter: "I built a Rust ingestion service. I ran Kubernetes in production. I would like to join Acme.".into(),
            intro_email: "Hello, I am a Rust engineer.".into(),
        };
        let mut sources = profile().evidence();
        sources.push("Platform Engineer Acme Berlin".into());
        let skills = vec!["Kubernetes".to_owned(), "5+".to_owned()];
        let checked = check_draft(&draft, &sources, &skills);
        assert_eq!(checked.suggestions.len(), 1);
        assert_eq!(
            checked.cover_letter,
            "I built a Rust ingestion service. I would like to join Acme."
        );
        assert_eq!(checked.problems.len(), 3, "{:?}", checked.problems);
        assert!(checked.problems[0].contains("Kubernetes"));
        assert!(
            checked.problems[1].starts_with("resume line quoted: \"Ran Kubernetes for 5 years\""),
            "{:?}",
            checked.problems
        );
    }
}
