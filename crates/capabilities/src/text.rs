//! Reading resume and job text as an ATS does: keywords found by alias or by stem,
//! content words, numbers, action verbs. Shared by the products that score or check
//! generated text (the JD optimizer, the job-agent chat).

use std::collections::BTreeSet;
use std::sync::OnceLock;

use crate::ranking::{mentions, normalize_skill};
use rust_stemmers::{Algorithm, Stemmer};

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// Words that carry no meaning of their own in a bullet or a duty.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it",
    "its", "of", "on", "or", "our", "the", "their", "to", "we", "with", "you", "your", "will",
    "across", "within", "using", "via", "per", "that", "this", "who", "all", "other", "etc",
];

/// The words of `text`, lowercased: runs of letters and digits, with `+`, `#`, `.` and `/`
/// kept inside ("c++", "node.js", "ci/cd").
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '+' | '#' | '.' | '/')))
        .map(|w| w.trim_matches(|c| matches!(c, '.' | '/')).to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The English stem of a lowercased word ("microservices" and "microservice" meet).
pub fn stem(word: &str) -> String {
    stemmer().stem(word).into_owned()
}

/// The stems of `text`'s content words (stop words and one-letter words left out).
///
/// ```
/// let stems = job_capabilities::text::content_stems("Designing the payment services");
/// assert!(stems.contains("design") && stems.contains("servic") && !stems.contains("the"));
/// ```
pub fn content_stems(text: &str) -> BTreeSet<String> {
    words(text)
        .into_iter()
        .filter(|w| w.chars().count() > 1 && !STOP_WORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect()
}

/// How a keyword was found in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Found {
    /// Not there.
    No,
    /// Every word of it by stem only ("deployed" for "deployment"): a weaker match.
    ByStem,
    /// As written or as one of its aliases ("k8s" for "Kubernetes").
    Exactly,
}

/// Whether `text` contains `keyword`: as written or by alias (whole words), else by the
/// stems of all its words.
///
/// ```
/// use job_capabilities::text::{Found, find_keyword};
/// assert_eq!(find_keyword("Ran k8s clusters", "Kubernetes"), Found::Exactly);
/// assert_eq!(find_keyword("Deployed services weekly", "service deployment"), Found::ByStem);
/// assert_eq!(find_keyword("A good engineer", "Go"), Found::No);
/// ```
pub fn find_keyword(text: &str, keyword: &str) -> Found {
    let canonical = normalize_skill(keyword);
    if canonical.is_empty() {
        return Found::No;
    }
    if mentions(text, &canonical) || mentions(text, &keyword.trim().to_lowercase()) {
        return Found::Exactly;
    }
    let wanted = content_stems(keyword);
    if wanted.is_empty() {
        return Found::No;
    }
    let have = content_stems(text);
    if wanted.iter().all(|s| have.contains(s)) {
        Found::ByStem
    } else {
        Found::No
    }
}

/// The numbers in `text`, as digits only ("40%" → "40", "$1,200" → "1200", "3.5x" → "3.5").
///
/// ```
/// assert_eq!(job_capabilities::text::numbers("Cut 40% of $1,200 costs in 3.5 weeks"), ["40", "1200", "3.5"]);
/// ```
pub fn numbers(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let next_is_digit = chars.get(i + 1).is_some_and(char::is_ascii_digit);
        if c.is_ascii_digit() {
            current.push(c);
        } else if !current.is_empty() && c == ',' && next_is_digit {
            // a thousands separator
        } else if !current.is_empty() && c == '.' && next_is_digit {
            current.push(c);
        } else if !current.is_empty() {
            found.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        found.push(current);
    }
    found
}

/// Verbs a strong bullet starts with (past tense; present tense forms are accepted too,
/// by stem).
const ACTION_VERBS: &[&str] = &[
    "achieved",
    "added",
    "analyzed",
    "architected",
    "automated",
    "built",
    "championed",
    "coached",
    "collaborated",
    "configured",
    "consolidated",
    "created",
    "cut",
    "debugged",
    "decreased",
    "defined",
    "delivered",
    "deployed",
    "designed",
    "developed",
    "directed",
    "drove",
    "eliminated",
    "enabled",
    "engineered",
    "established",
    "expanded",
    "fixed",
    "grew",
    "guided",
    "handled",
    "implemented",
    "improved",
    "increased",
    "instrumented",
    "integrated",
    "introduced",
    "launched",
    "led",
    "maintained",
    "managed",
    "mentored",
    "migrated",
    "modernized",
    "monitored",
    "moved",
    "operated",
    "optimized",
    "orchestrated",
    "organized",
    "owned",
    "packaged",
    "partnered",
    "planned",
    "presented",
    "prototyped",
    "raised",
    "ran",
    "rebuilt",
    "redesigned",
    "reduced",
    "refactored",
    "replaced",
    "resolved",
    "restructured",
    "retired",
    "saved",
    "scaled",
    "secured",
    "served",
    "shipped",
    "simplified",
    "spearheaded",
    "standardized",
    "streamed",
    "streamlined",
    "supported",
    "taught",
    "tested",
    "trained",
    "transformed",
    "tuned",
    "upgraded",
    "wrote",
];

/// Whether a bullet starts with an action verb ("Built", "Led", "Optimize").
///
/// ```
/// use job_capabilities::text::starts_with_action_verb;
/// assert!(starts_with_action_verb("• Led a team of 5"));
/// assert!(starts_with_action_verb("Optimize queries"));
/// assert!(!starts_with_action_verb("Responsible for queries"));
/// ```
pub fn starts_with_action_verb(bullet: &str) -> bool {
    let Some(first) = words(bullet).into_iter().next() else {
        return false;
    };
    if ACTION_VERBS.contains(&first.as_str()) {
        return true;
    }
    let first_stem = stem(&first);
    ACTION_VERBS.iter().any(|verb| stem(verb) == first_stem)
}

/// Whether a line is a list item: it starts with "-", "*", "•", "–" or "·".
pub fn is_bullet(line: &str) -> bool {
    line.trim_start().starts_with(['-', '*', '•', '–', '·'])
}

/// The months as a date writes them, by their first three letters.
pub const MONTHS: &[&str] = &[
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// Whether a line carries dates as a role or a degree does: a range of years ("2019 -
/// 2024", "2020–present"), a month and year, a year in brackets, or a year at its end;
/// not a sentence (a line of more than two words ending with a full stop).
///
/// ```
/// use job_capabilities::text::is_dated;
/// assert!(is_dated("Senior Engineer, Acme (2019-2024)"));
/// assert!(is_dated("Acme — Berlin, Jan 2020 – Present"));
/// assert!(is_dated("BSc Computer Science, University of Porto, 2017"));
/// assert!(!is_dated("Shipped the 2021 redesign used by 2 million people"));
/// assert!(!is_dated("Backend engineer building payment systems since 2015."));
/// ```
pub fn is_dated(text: &str) -> bool {
    // A sentence is not a heading, whatever dates it names.
    if text.trim_end().ends_with('.') && text.split_whitespace().count() > 2 {
        return false;
    }
    let lower = text.to_lowercase();
    let tokens: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .collect();
    let is_year = |t: &str| {
        t.len() == 4
            && t.chars().all(|c| c.is_ascii_digit())
            && (t.starts_with("19") || t.starts_with("20"))
    };
    let ongoing = |t: &str| matches!(t, "present" | "current" | "now" | "today");
    for (i, token) in tokens.iter().enumerate() {
        if !is_year(token) {
            continue;
        }
        let before = i.checked_sub(1).map(|j| tokens[j]);
        let after = tokens.get(i + 1).copied();
        if before.is_some_and(|t| is_year(t) || MONTHS.iter().any(|m| t.starts_with(m)))
            || after.is_some_and(|t| is_year(t) || ongoing(t))
            || (before == Some("to") || after == Some("to"))
            || after.is_none()
        {
            return true;
        }
    }
    // A year in brackets: "(2017)".
    lower
        .match_indices('(')
        .any(|(i, _)| lower[i..].split(')').next().is_some_and(tokens_have_year))
}

fn tokens_have_year(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_digit())
        .any(|t| t.len() == 4 && (t.starts_with("19") || t.starts_with("20")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_technical_punctuation() {
        assert_eq!(
            words("Used C++, Node.js and CI/CD."),
            ["used", "c++", "node.js", "and", "ci/cd"]
        );
    }

    #[test]
    fn numbers_end_at_sentence_periods() {
        assert_eq!(numbers("Served 5. Then 12"), ["5", "12"]);
    }
}
