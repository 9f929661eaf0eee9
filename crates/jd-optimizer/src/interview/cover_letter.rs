//! The cover-letter generator (spec 003 section 6.4): a letter in one of three tones,
//! 250 to 400 words, checked deterministically for the banned generic openings and for
//! numbers the candidate's material does not hold.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::text::numbers;

/// The agent's name in token counts and errors.
pub const AGENT: &str = "cover_letter_generator";

/// A letter's tone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    /// Professional, a traditional business letter.
    #[default]
    Formal,
    /// Friendly but professional, with personality.
    Conversational,
    /// Energetic, keen on the role and the company.
    Enthusiastic,
}

impl Tone {
    /// `formal`, `conversational` or `enthusiastic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tone::Formal => "formal",
            Tone::Conversational => "conversational",
            Tone::Enthusiastic => "enthusiastic",
        }
    }
}

/// Openings and phrases a letter may not use: the generic ones every recruiter skips.
pub const BANNED_PHRASES: &[&str] = &[
    "i am writing to express my interest",
    "i am writing to apply",
    "i am writing in response to",
    "to whom it may concern",
    "dear sir or madam",
    "please accept this letter",
    "i would like to apply for",
    "i am excited to apply",
    "with this letter",
];

/// The fewest words a letter may have.
pub const MIN_WORDS: usize = 250;
/// The most.
pub const MAX_WORDS: usize = 400;

/// The system prompt.
pub const SYSTEM: &str = "You are the Cover Letter Writer. Write a tailored cover letter: address the job's key requirements with the candidate's strongest achievements, in the tone asked, 3 to 4 paragraphs, 250 to 400 words, a compelling opening and a confident close. Never use generic openings such as \"I am writing to express my interest\" or \"To whom it may concern\". Use only facts and numbers from the candidate's material. JSON only.";

/// The model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LetterDraft {
    /// The letter.
    pub cover_letter: String,
}

/// A checked cover letter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CoverLetter {
    /// The letter.
    pub text: String,
    /// Its tone.
    pub tone: Tone,
    /// Its words.
    pub words: usize,
}

/// What is wrong with a letter, empty when nothing: its length, a banned phrase, a
/// number `material` does not hold.
///
/// ```
/// use jd_optimizer::interview::cover_letter::check_letter;
/// let problems = check_letter("To whom it may concern, I cut costs 90%.", "cut costs 40%");
/// assert_eq!(problems.len(), 3, "{problems:?}");
/// ```
pub fn check_letter(text: &str, material: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let words = text.split_whitespace().count();
    if !(MIN_WORDS..=MAX_WORDS).contains(&words) {
        problems.push(format!(
            "it has {words} words; it must have {MIN_WORDS} to {MAX_WORDS}"
        ));
    }
    let lowered = text.to_lowercase().replace('’', "'");
    for phrase in BANNED_PHRASES {
        if lowered.contains(phrase) {
            problems.push(format!("it uses the generic phrase \"{phrase}\""));
        }
    }
    let known = numbers(material);
    for number in numbers(text) {
        if !known.contains(&number) {
            problems.push(format!(
                "it states the number {number}, which the candidate's material does not hold"
            ));
        }
    }
    problems
}
