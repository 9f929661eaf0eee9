//! Checks a model's answers against the text they came from: the values of the
//! preferences must be mentioned by the preferences text, and score evidence must be
//! quoted from the job's text.
//!
//! Texts are compared as words: lower case, letters and digits, apostrophes removed
//! (`don't` is `dont`), everything else a separator; so case, whitespace and
//! punctuation never matter.

use crate::models::SearchPreferences;

mod vocabulary;

pub(crate) use vocabulary::POSTING_NOUNS;
use vocabulary::{
    CLAUSE_BREAKS, KIND_WORDS, ROLE_NOUNS, content_words, find_phrase, is_negation, same_or_plural,
    same_word,
};
pub use vocabulary::{
    has_name, is_technology, meaningful_words, name_words, names_a_kind, quotes, says_nothing,
    words,
};
/// Drops the companies of `list` that are technologies, recording why.
fn without_technologies(
    list: Vec<String>,
    field: &'static str,
    dropped: &mut Vec<Dropped>,
) -> Vec<String> {
    let (technologies, companies): (Vec<String>, Vec<String>) =
        list.into_iter().partition(|value| is_technology(value));
    dropped.extend(technologies.into_iter().map(|value| Dropped {
        field,
        value,
        reason: "a programming language or technology, not a company",
    }));
    companies
}

/// A text that a model's answer must be grounded in.
#[derive(Debug, Clone)]
pub struct SourceText {
    words: Vec<String>,
    clauses: Vec<Vec<String>>,
}

impl SourceText {
    /// Splits `text` into words and clauses (at `.`, `;`, `!`, `?`, line ends and words
    /// such as `but`).
    pub fn new(text: &str) -> Self {
        let mut clauses = Vec::new();
        for sentence in text.split(['.', ';', '!', '?', '\n']) {
            let mut clause = Vec::new();
            for word in words(sentence) {
                if CLAUSE_BREAKS.contains(&word.as_str()) {
                    clauses.push(std::mem::take(&mut clause));
                } else {
                    clause.push(word);
                }
            }
            clauses.push(clause);
        }
        clauses.retain(|c| !c.is_empty());
        SourceText {
            words: words(text),
            clauses,
        }
    }

    fn has_word(&self, word: &str) -> bool {
        self.words.iter().any(|w| same_word(w, word))
    }

    /// Whether the text names `company`: its words in a row (a legal form such as `GmbH`
    /// may be left out), and not a non-answer.
    pub fn names(&self, company: &str) -> bool {
        if says_nothing(company) {
            return false;
        }
        find_phrase(&self.words, &name_words(company), same_word)
    }

    /// Whether the text mentions every meaningful word of `value` (a location, an
    /// industry), in any order: "fintech companies" is mentioned by "fintech".
    pub fn mentions(&self, value: &str) -> bool {
        let meaningful = meaningful_words(value);
        !meaningful.is_empty() && meaningful.iter().all(|w| self.has_word(w))
    }

    /// Whether the text mentions the title `value`: every meaningful word, except role
    /// nouns such as `engineer` when the title has other words the text mentions.
    pub fn mentions_title(&self, value: &str) -> bool {
        if says_nothing(value) {
            return false;
        }
        let content: Vec<String> = content_words(value)
            .into_iter()
            .filter(|w| !KIND_WORDS.contains(&w.as_str()))
            .collect();
        let specific: Vec<&String> = content
            .iter()
            .filter(|w| !ROLE_NOUNS.contains(&w.as_str()) && !POSTING_NOUNS.contains(&w.as_str()))
            .collect();
        if specific.is_empty() {
            return content.iter().all(|w| self.has_word(w));
        }
        specific.iter().all(|w| self.has_word(w))
    }

    /// Whether the text excludes `value`: a clause mentions every meaningful word of it
    /// (so "crypto companies" is excluded by "no crypto"), after a word such as `no`,
    /// `not`, `avoid` or `except`.
    pub fn excludes(&self, value: &str) -> bool {
        self.clause_with(value, same_word)
            .any(|(clause, start)| clause[..start].iter().any(|w| is_negation(w)))
    }

    /// Whether the text says `value` without negating it: a clause has every meaningful
    /// word of it (as it is, or as a plural: `casinos` for `casino`, never `better` for
    /// `betting`) with no `no`, `not`, ... before them ("a payments company, not crypto"
    /// does not affirm crypto).
    pub fn affirms(&self, value: &str) -> bool {
        self.clause_with(value, same_or_plural)
            .any(|(clause, start)| !clause[..start].iter().any(|w| is_negation(w)))
    }

    /// The clauses that mention every meaningful word of `value` (as `eq` compares
    /// words), each with where the first of them is.
    fn clause_with<'a>(
        &'a self,
        value: &str,
        eq: fn(&str, &str) -> bool,
    ) -> impl Iterator<Item = (&'a [String], usize)> {
        let meaningful = meaningful_words(value);
        self.clauses.iter().filter_map(move |clause| {
            if meaningful.is_empty() {
                return None;
            }
            let firsts: Option<Vec<usize>> = meaningful
                .iter()
                .map(|w| clause.iter().position(|c| eq(c, w)))
                .collect();
            let start = firsts?.into_iter().min()?;
            Some((clause.as_slice(), start))
        })
    }
}

/// A value of a model's answer that its source text does not support.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The field it was in (`target_companies`, ...).
    pub field: &'static str,
    /// The value.
    pub value: String,
    /// Why it was dropped.
    pub reason: &'static str,
}

impl Dropped {
    /// `field "value" (reason)`.
    pub fn describe(&self) -> String {
        format!("{} {:?} ({})", self.field, self.value, self.reason)
    }
}

/// The values of `list` that `keep` accepts, trimmed and de-duplicated (ignoring case);
/// the others are added to `dropped`.
fn keep_grounded(
    list: Vec<String>,
    field: &'static str,
    reason: &'static str,
    keep: impl Fn(&str) -> bool,
    dropped: &mut Vec<Dropped>,
) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut kept = Vec::new();
    for value in list {
        let value = value.trim().to_owned();
        if value.is_empty() || !seen.insert(value.to_lowercase()) {
            continue;
        }
        if keep(&value) {
            kept.push(value);
        } else {
            dropped.push(Dropped {
                field,
                value,
                reason,
            });
        }
    }
    kept
}

/// Keeps the values of `prefs` that `text` supports: companies it names (never a
/// non-answer such as `any`), titles, industries and locations it mentions, and
/// exclusions it states as such (a company the text only names as wanted is not
/// excluded). Returns the grounded preferences and what was dropped.
pub fn ground_preferences(
    text: &str,
    prefs: SearchPreferences,
) -> (SearchPreferences, Vec<Dropped>) {
    let source = SourceText::new(text);
    let mut dropped = Vec::new();
    let not_in_text = "the text never mentions it";
    let companies = without_technologies(prefs.target_companies, "target_companies", &mut dropped);
    let target_companies = keep_grounded(
        companies,
        "target_companies",
        "the text never names it",
        |v| source.names(v),
        &mut dropped,
    );
    let target_titles = keep_grounded(
        prefs.target_titles,
        "target_titles",
        not_in_text,
        |v| source.mentions_title(v),
        &mut dropped,
    );
    let industries = keep_grounded(
        prefs.industries,
        "industries",
        not_in_text,
        |v| source.mentions(v),
        &mut dropped,
    );
    let locations = keep_grounded(
        prefs.locations,
        "locations",
        not_in_text,
        |v| source.mentions(v),
        &mut dropped,
    );
    let excluded =
        without_technologies(prefs.excluded_companies, "excluded_companies", &mut dropped);
    let excluded_companies = keep_grounded(
        excluded,
        "excluded_companies",
        "the text does not exclude it",
        |v| source.excludes(v),
        &mut dropped,
    );
    let excluded_industries = keep_grounded(
        prefs.excluded_industries,
        "excluded_industries",
        "the text does not exclude it",
        |v| source.excludes(v),
        &mut dropped,
    );
    (
        SearchPreferences {
            target_titles,
            target_companies,
            industries,
            locations,
            excluded_companies,
            excluded_industries,
            ..prefs
        },
        dropped,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preferences_the_text_never_states_are_dropped() {
        use crate::grounding::ground_preferences;
        use crate::models::{RemotePreference, SearchPreferences};
        let answer = SearchPreferences {
            target_titles: vec!["Backend Engineer".into()],
            target_companies: vec!["any".into(), "Northwind Robotics".into()],
            industries: vec![],
            locations: vec!["Berlin".into(), "London".into()],
            remote: RemotePreference::Any,
            min_salary: None,
            salary_currency: None,
            excluded_companies: vec!["Northwind Robotics".into(), "crypto companies".into()],
            excluded_industries: vec!["gambling".into()],
        };
        let (kept, dropped) = ground_preferences(
            "Backend roles in Berlin, ideally at Northwind Robotics. No crypto.",
            answer,
        );
        assert_eq!(kept.target_companies, ["Northwind Robotics"]);
        assert_eq!(kept.locations, ["Berlin"]);
        assert_eq!(kept.excluded_companies, ["crypto companies"]);
        assert_eq!(dropped.len(), 4);
    }

    const PREFS: &str = "Senior or staff backend / platform engineering roles, remote within Europe or on site / hybrid in Berlin, working mainly in Rust or Go, at least 90k EUR a year. I'm especially interested in Northwind Robotics and Quill Labs; no crypto or gambling companies.";

    #[test]
    fn the_recorded_answer_is_grounded_in_the_recorded_text() {
        let text = SourceText::new(PREFS);
        for title in [
            "Senior Backend Engineer",
            "Staff Backend Engineer",
            "Senior Platform Engineer",
            "Staff Platform Engineer",
        ] {
            assert!(text.mentions_title(title), "{title}");
        }
        assert!(text.mentions("Remote - Europe") && text.mentions("Berlin"));
        assert!(text.names("Northwind Robotics") && text.names("quill labs."));
        assert!(text.names("Quill Labs GmbH"));
        assert!(text.excludes("crypto companies") && text.excludes("Gambling"));
    }

    #[test]
    fn what_the_text_does_not_say_is_not_grounded() {
        let text = SourceText::new(PREFS);
        assert!(!text.names("any"));
        assert!(!text.names("N/A"));
        assert!(!text.names("Northwind Logistics"));
        assert!(!text.mentions_title("Data Scientist"));
        assert!(!text.mentions_title("any"));
        assert!(!text.mentions("London"));
        assert!(!text.mentions("Berlin, Germany"));
        // Named as wanted, not excluded.
        assert!(!text.excludes("Northwind Robotics"));
        assert!(!text.excludes("Quill Labs"));
        assert!(!text.excludes("fintech"));
    }

    #[test]
    fn languages_read_as_companies_are_dropped_with_the_reason() {
        // Seen live: "roles in Rust or Go" answered with the companies Rust and Go.
        let prefs = SearchPreferences {
            target_titles: Vec::new(),
            target_companies: vec!["Rust".into(), "Go".into()],
            industries: Vec::new(),
            locations: Vec::new(),
            remote: crate::models::RemotePreference::Any,
            min_salary: None,
            salary_currency: None,
            excluded_companies: Vec::new(),
            excluded_industries: Vec::new(),
        };
        let (kept, dropped) = ground_preferences(
            "Senior backend roles in Rust or Go, remote in Europe.",
            prefs,
        );
        assert!(kept.target_companies.is_empty());
        let reasons: Vec<(&str, &str)> = dropped
            .iter()
            .map(|d| (d.value.as_str(), d.reason))
            .collect();
        assert_eq!(
            reasons,
            [
                (
                    "Rust",
                    "a programming language or technology, not a company"
                ),
                ("Go", "a programming language or technology, not a company")
            ]
        );
    }

    #[test]
    fn an_exclusion_is_a_clause_after_a_negation() {
        let text = SourceText::new(
            "I want Northwind Robotics, not Acme Corp. Please avoid agencies, but Quill Labs is fine.",
        );
        assert!(text.excludes("Acme Corp"));
        assert!(text.excludes("agencies"));
        assert!(!text.excludes("Quill Labs"), "`but` ends the clause");
        assert!(
            !text.excludes("Northwind Robotics"),
            "it comes before `not`"
        );
    }

    #[test]
    fn words_match_with_short_endings_only() {
        assert!(same_word("engineer", "engineering"));
        assert!(same_word("company", "companies"));
        assert!(!same_word("go", "google"));
        assert!(!same_word("java", "javascript"));
    }
}
