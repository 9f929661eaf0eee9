//! The question generator (spec 003 section 6.3): at least 10 questions, 4 behavioural
//! with STAR answers built from the candidate's own material, 4 technical and 2
//! situational, each with a difficulty; checked deterministically.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::text::numbers;

/// The agent's name in token counts and errors.
pub const AGENT: &str = "question_generator";

/// The system prompt.
pub const SYSTEM: &str = "You are the Interview Coach. Write at least 10 interview questions for this job: at least 4 behavioral, 4 technical and 2 situational, each with a difficulty (easy, medium, hard) and a suggested answer from the candidate's ACTUAL material. Behavioral answers use STAR: \"Situation: ... Task: ... Action: ... Result: ...\". Technical answers name technologies the candidate used. Use only facts and numbers from the material. JSON only.";

/// A question's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QuestionCategory {
    /// About past behaviour (STAR answers).
    Behavioral,
    /// About skills and technologies.
    Technical,
    /// About a hypothetical situation.
    Situational,
}

/// How hard a question is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Difficulty {
    /// Easy.
    Easy,
    /// Medium.
    Medium,
    /// Hard.
    Hard,
}

/// One question with its suggested answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InterviewQuestion {
    /// Its kind.
    pub category: QuestionCategory,
    /// The question.
    pub question_text: String,
    /// An answer from the candidate's material (STAR for behavioural questions).
    pub suggested_answer: String,
    /// How hard it is.
    pub difficulty: Difficulty,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionSet {
    /// The questions.
    pub questions: Vec<InterviewQuestion>,
}

/// Whether an answer follows STAR: it names the situation, task, action and result.
///
/// ```
/// use jd_optimizer::interview::questions::is_star;
/// assert!(is_star("Situation: a slow API. Task: fix it. Action: added indexes. Result: 60% faster."));
/// assert!(!is_star("I added indexes."));
/// ```
pub fn is_star(answer: &str) -> bool {
    let lowered = answer.to_lowercase();
    ["situation", "task", "action", "result"]
        .iter()
        .all(|part| lowered.contains(part))
}

/// What is wrong with a question set, empty when nothing: too few questions of a kind,
/// a behavioural answer not in STAR form, a number `material` does not hold.
pub fn check_questions(set: &QuestionSet, material: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let count = |category| {
        set.questions
            .iter()
            .filter(|q| q.category == category)
            .count()
    };
    if set.questions.len() < 10 {
        problems.push(format!(
            "{} questions; at least 10 are needed",
            set.questions.len()
        ));
    }
    for (category, least, name) in [
        (QuestionCategory::Behavioral, 4, "behavioral"),
        (QuestionCategory::Technical, 4, "technical"),
        (QuestionCategory::Situational, 2, "situational"),
    ] {
        if count(category) < least {
            problems.push(format!(
                "{} {name} questions; at least {least} are needed",
                count(category)
            ));
        }
    }
    let known = numbers(material);
    for (i, question) in set.questions.iter().enumerate() {
        if question.category == QuestionCategory::Behavioral && !is_star(&question.suggested_answer)
        {
            problems.push(format!(
                "question {}: the answer is not in STAR form",
                i + 1
            ));
        }
        for number in numbers(&question.suggested_answer) {
            if !known.contains(&number) {
                problems.push(format!(
                    "question {}: the answer states {number}, which the candidate's material does not hold",
                    i + 1
                ));
            }
        }
    }
    problems
}
