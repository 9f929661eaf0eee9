//! What the chat keeps per user: jobs with their status, the profile, feedback on jobs and
//! application packages.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Where a job stands for the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Found by a search, not acted on.
    #[default]
    New,
    /// Saved by the user.
    Saved,
    /// Applied to.
    Applied,
    /// In interviews.
    Interviewing,
    /// An offer came.
    Offer,
    /// Rejected, by either side.
    Rejected,
    /// Put away: kept, but left out of lists and rankings.
    Archived,
}

impl JobStatus {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::New => "new",
            JobStatus::Saved => "saved",
            JobStatus::Applied => "applied",
            JobStatus::Interviewing => "interviewing",
            JobStatus::Offer => "offer",
            JobStatus::Rejected => "rejected",
            JobStatus::Archived => "archived",
        }
    }
}

/// A job the user found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// A short stable id, from the job's source and its own id or address.
    pub id: String,
    /// The title.
    pub title: String,
    /// The hiring company.
    pub company: String,
    /// Where, as published.
    pub location: String,
    /// Whether it is remote.
    pub remote: bool,
    /// The description, as plain text.
    pub description: String,
    /// Requirements and skills the posting lists (its qualifications).
    pub requirements: Vec<String>,
    /// The pay as published ("120K–150K a year"), empty when not stated.
    pub salary_text: String,
    /// Where to read or apply.
    pub url: String,
    /// Where it was found (`serpapi`, `greenhouse`, ...).
    pub source: String,
    /// When it was posted, as the source says ("3 days ago", a date).
    pub posted: String,
    /// Where it stands.
    pub status: JobStatus,
    /// When it was first found.
    pub found_at: DateTime<Utc>,
}

impl Job {
    /// The id for a job of `source` known there as `key` (its id, else its address):
    /// `j` and 10 hex digits of their hash, so a job found twice is stored once.
    pub fn id_for(source: &str, key: &str) -> String {
        let digest = Sha256::digest(format!("{source}\n{key}").as_bytes());
        format!("j{}", hex::encode(&digest[..5]))
    }

    /// One line: title, company, place and pay.
    pub fn headline(&self) -> String {
        let mut line = format!("{} at {} ({})", self.title, self.company, self.location);
        if self.remote && !self.location.to_lowercase().contains("remote") {
            line.push_str(", remote");
        }
        if !self.salary_text.is_empty() {
            line.push_str(&format!(", {}", self.salary_text));
        }
        line
    }
}

/// The user's profile: who they are and what they look for.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct UserProfile {
    /// Their name.
    #[serde(default)]
    pub name: String,
    /// Their email address (where email notifications go).
    #[serde(default)]
    pub email: String,
    /// A summary in their words.
    #[serde(default)]
    pub summary: String,
    /// Their skills.
    #[serde(default)]
    pub skills: Vec<String>,
    /// The titles they seek.
    #[serde(default)]
    pub titles: Vec<String>,
    /// Where they want to work.
    #[serde(default)]
    pub preferred_locations: Vec<String>,
    /// Whether remote jobs suit them.
    #[serde(default)]
    pub remote_ok: bool,
    /// Their yearly pay floor.
    #[serde(default)]
    pub min_salary: Option<u64>,
    /// The floor's currency (ISO 4217; USD when not said).
    #[serde(default)]
    pub salary_currency: Option<String>,
    /// Years of experience, when stated.
    #[serde(default)]
    pub years_experience: Option<u32>,
    /// Their resume's text, when they gave one: the evidence generated text must keep to.
    #[serde(default)]
    pub resume_text: String,
    /// Where the resume came from: the file's name, or `pasted text`.
    #[serde(default)]
    pub resume_source: String,
    /// The SHA-256 of the resume's text, so the same file sent again (clients resend the
    /// whole conversation) is not read again.
    #[serde(default)]
    pub resume_digest: String,
    /// Their Slack incoming webhook, where their matches go (empty: none).
    #[serde(default)]
    pub slack_webhook: String,
    /// Their Microsoft Teams incoming webhook, where their matches go (empty: none).
    #[serde(default)]
    pub teams_webhook: String,
}

impl UserProfile {
    /// Everything the profile says, as the sources generated text is checked against.
    pub fn evidence(&self) -> Vec<String> {
        let mut evidence = vec![
            self.name.clone(),
            self.summary.clone(),
            self.skills.join(", "),
            self.titles.join(", "),
            self.preferred_locations.join(", "),
            self.resume_text.clone(),
        ];
        if let Some(years) = self.years_experience {
            evidence.push(format!("{years} years of experience"));
        }
        evidence.retain(|e| !e.trim().is_empty());
        evidence
    }

    /// Whether it says anything to rank or write from.
    pub fn is_empty(&self) -> bool {
        self.summary.trim().is_empty() && self.skills.is_empty() && self.resume_text.is_empty()
    }
}

/// What the user thought of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackKind {
    /// A good match: similar jobs rank higher.
    Interested,
    /// Not for them: the job, and the company's other jobs a little, rank lower.
    NotInterested,
    /// Wrong level (too junior or too senior).
    WrongLevel,
    /// Wrong place.
    WrongLocation,
    /// Pay too low.
    PayTooLow,
}

/// One piece of feedback.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Feedback {
    /// The job.
    pub job_id: String,
    /// The job's company, kept for company-wide effects.
    pub company: String,
    /// What they thought.
    pub kind: FeedbackKind,
    /// In their words.
    pub notes: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// A resume change tied to a requirement of the job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResumeSuggestion {
    /// The job's requirement it answers.
    pub requirement: String,
    /// The line as the resume has it now (empty for a new line).
    pub before: String,
    /// The line suggested.
    pub after: String,
}

/// An application prepared for a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApplicationPackage {
    /// Its id.
    pub id: String,
    /// The job.
    pub job_id: String,
    /// The job's headline, for lists.
    pub job_headline: String,
    /// Resume changes, each grounded in the profile.
    pub resume_suggestions: Vec<ResumeSuggestion>,
    /// The cover letter.
    pub cover_letter: String,
    /// A short email to a recruiter or hiring manager.
    pub intro_email: String,
    /// What the grounding check removed, and why.
    pub removed: Vec<String>,
    /// When it was made.
    pub created_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_found_twice_keeps_one_id() {
        let a = Job::id_for("serpapi", "eyJqb2JfdGl0bGUi");
        assert_eq!(a, Job::id_for("serpapi", "eyJqb2JfdGl0bGUi"));
        assert_ne!(a, Job::id_for("greenhouse", "eyJqb2JfdGl0bGUi"));
        assert_eq!(a.len(), 11);
    }
}
