//! The words the grounding checks compare: how a text is cut into words, which words
//! carry a value's meaning, and the small vocabularies (negations, legal forms, kinds,
//! technologies) the checks need.

/// Words that carry no meaning of their own in a value.
pub(super) const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "of", "in", "at", "for", "to", "with", "on", "within", "from",
    "by",
];

/// Words that, alone, say nothing: a value made only of them is a non-answer (`any`,
/// `n/a`, `none specified`, `all companies`).
pub(super) const EMPTY_WORDS: &[&str] = &[
    "any",
    "all",
    "none",
    "no",
    "n",
    "na",
    "not",
    "specified",
    "stated",
    "mentioned",
    "given",
    "unknown",
    "unspecified",
    "various",
    "anything",
    "anywhere",
    "null",
    "nil",
    "other",
    "others",
    "tbd",
    "preference",
    "company",
    "companies",
];

/// Words that name a kind of thing rather than the thing: "crypto companies" excludes
/// crypto, "the gambling industry" gambling. A value is judged by its other words.
pub(super) const KIND_WORDS: &[&str] = &[
    "company",
    "companies",
    "firm",
    "firms",
    "business",
    "businesses",
    "industry",
    "industries",
    "sector",
    "sectors",
    "employer",
    "employers",
    "organisation",
    "organisations",
    "organization",
    "organizations",
];

/// Nouns that name a posting, not what it is for ("backend roles").
pub(crate) const POSTING_NOUNS: &[&str] = &[
    "role",
    "roles",
    "position",
    "positions",
    "job",
    "jobs",
    "opportunity",
    "opportunities",
];

/// Role nouns a title may add to what the text says (`backend roles` asked as
/// `Backend Engineer`), besides the [`POSTING_NOUNS`].
pub(super) const ROLE_NOUNS: &[&str] = &["engineer", "engineers", "developer", "developers"];

/// Legal forms a company name may carry that the text leaves out.
pub(super) const LEGAL_FORMS: &[&str] = &[
    "inc",
    "incorporated",
    "gmbh",
    "ltd",
    "limited",
    "llc",
    "corp",
    "corporation",
    "co",
    "ag",
    "sa",
    "plc",
    "bv",
    "se",
];

/// Words that turn what follows them in a clause into an exclusion.
pub(super) const NEGATIONS: &[&str] = &[
    "no",
    "not",
    "never",
    "except",
    "excepting",
    "without",
    "nothing",
    "dont",
    "doesnt",
    "isnt",
    "arent",
    "wont",
    "cant",
    "neither",
    "nor",
    "hate",
    "dislike",
    "skip",
    "against",
];

/// Words that end a clause: what follows no longer falls under an earlier negation.
pub(super) const CLAUSE_BREAKS: &[&str] = &["but", "however", "although", "though", "whereas"];

/// The words of `text`: lower case, letters and digits, apostrophes removed.
pub fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace(['\'', '\u{2019}', '\u{2018}'], "")
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The same word, allowing a short ending (`engineer` / `engineering`, `company` /
/// `companies`); words under four letters must be equal.
pub(super) fn same_word(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let (la, lb) = (a.chars().count(), b.chars().count());
    common >= 4 && la.min(lb) - common <= 2 && la.max(lb) - common <= 4
}

/// The same word, or its plural (`casino`, `casinos`; `industry`, `industries`).
pub(super) fn same_or_plural(text_word: &str, word: &str) -> bool {
    text_word == word
        || text_word.strip_suffix('s') == Some(word)
        || text_word.strip_suffix("es") == Some(word)
        || (word.ends_with('y') && text_word.strip_suffix("ies") == word.strip_suffix('y'))
}

pub(super) fn is_negation(word: &str) -> bool {
    NEGATIONS.contains(&word) || word.starts_with("avoid") || word.starts_with("exclud")
}

/// The words of `value` that must be found in the text.
pub(super) fn content_words(value: &str) -> Vec<String> {
    words(value)
        .into_iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect()
}

/// The words of `value` that carry its meaning: not small words, not words that alone
/// say nothing (`any`, `company`), not words naming a kind (`industry`): `crypto` of
/// "crypto companies".
pub fn meaningful_words(value: &str) -> Vec<String> {
    content_words(value)
        .into_iter()
        .filter(|w| !EMPTY_WORDS.contains(&w.as_str()) && !KIND_WORDS.contains(&w.as_str()))
        .collect()
}

/// Whether `value` has a word naming a kind (`companies`, `industry`, `sector`).
pub fn names_a_kind(value: &str) -> bool {
    words(value)
        .iter()
        .any(|w| KIND_WORDS.contains(&w.as_str()))
}

/// Whether `value` says nothing (`any`, `N/A`, `none specified`, empty).
pub fn says_nothing(value: &str) -> bool {
    content_words(value)
        .iter()
        .all(|w| EMPTY_WORDS.contains(&w.as_str()))
}

/// Languages and technologies a small model puts among the companies ("roles in Rust or
/// Go" read as the companies Rust and Go).
pub(super) const TECHNOLOGIES: &[&str] = &[
    "rust",
    "go",
    "golang",
    "python",
    "java",
    "javascript",
    "typescript",
    "kotlin",
    "scala",
    "c",
    "c++",
    "c#",
    "ruby",
    "php",
    "swift",
    "elixir",
    "erlang",
    "haskell",
    "clojure",
    "sql",
    "postgresql",
    "postgres",
    "mysql",
    "kafka",
    "kubernetes",
    "k8s",
    "docker",
    "aws",
    "gcp",
    "azure",
    "terraform",
    "linux",
    "react",
    "node",
    "nodejs",
    "node.js",
    "graphql",
    "spark",
    "backend",
    "frontend",
    "platform",
    "devops",
    "remote",
    "hybrid",
];

/// Whether `value` is a language or technology rather than a company name.
pub fn is_technology(value: &str) -> bool {
    TECHNOLOGIES.contains(&value.trim().to_lowercase().as_str())
}

/// Where `needle` starts in `haystack`, word by word, using `eq` for each word.
pub(super) fn find_phrase(
    haystack: &[String],
    needle: &[String],
    eq: fn(&str, &str) -> bool,
) -> bool {
    !needle.is_empty()
        && haystack.len() >= needle.len()
        && haystack
            .windows(needle.len())
            .any(|window| window.iter().zip(needle).all(|(h, n)| eq(h, n)))
}

/// Whether `quote` occurs in the text whose words are `text_words`, word for word; a
/// quote cut with `...` or `…` must have each of its pieces in the text.
pub fn quotes(text_words: &[String], quote: &str) -> bool {
    let pieces: Vec<Vec<String>> = quote
        .split("...")
        .flat_map(|piece| piece.split('\u{2026}'))
        .map(words)
        .filter(|piece| !piece.is_empty())
        .collect();
    !pieces.is_empty()
        && pieces
            .iter()
            .all(|piece| find_phrase(text_words, piece, |a, b| a == b))
}

/// The words of a company's name that name it: a leading `the`, and a trailing legal
/// form (`GmbH`) or kind (`company`), left out.
pub fn name_words(company: &str) -> Vec<String> {
    let mut name = words(company);
    if name.len() > 1 && name[0] == "the" {
        name.remove(0);
    }
    while name.len() > 1
        && name
            .last()
            .is_some_and(|w| LEGAL_FORMS.contains(&w.as_str()) || KIND_WORDS.contains(&w.as_str()))
    {
        name.pop();
    }
    name
}

/// Whether the words `name` (as [`name_words`] gives them) occur in `text_words`, in a
/// row, each as it is or as a plural.
pub fn has_name(text_words: &[String], name: &[String]) -> bool {
    find_phrase(text_words, name, same_or_plural)
}

#[cfg(test)]
mod tests {
    #[test]
    fn words_split_on_what_is_not_a_letter_or_digit() {
        use crate::grounding::words;
        assert_eq!(
            words("Don't: Rust/Go, (Berlin)!"),
            ["dont", "rust", "go", "berlin"]
        );
    }

    #[test]
    fn meaningful_words_leave_out_the_filler() {
        use crate::grounding::meaningful_words;
        assert_eq!(meaningful_words("the crypto companies"), ["crypto"]);
        assert_eq!(meaningful_words("Remote - Europe"), ["remote", "europe"]);
    }

    #[test]
    fn names_a_kind_finds_the_kind_in_a_phrase() {
        use crate::grounding::names_a_kind;
        assert!(names_a_kind("gambling companies") && !names_a_kind("Acme"));
    }

    #[test]
    fn is_technology_knows_tools_from_words() {
        use crate::grounding::is_technology;
        assert!(is_technology(" Go ") && is_technology("Rust"));
        assert!(!is_technology("Northwind Robotics"));
    }

    #[test]
    fn quotes_finds_a_quote_in_the_text() {
        use crate::grounding::{quotes, words};
        let posting = words("Experience with Kafka or similar event-streaming systems.");
        assert!(quotes(&posting, "experience with kafka"));
        assert!(quotes(
            &posting,
            "Experience with ... event streaming systems"
        ));
        assert!(!quotes(&posting, "5 years of Kafka"));
        assert!(!quotes(&posting, "..."));
    }

    #[test]
    fn name_words_are_a_names_own_words() {
        use crate::grounding::name_words;
        assert_eq!(name_words("The Acme Company GmbH"), ["acme"]);
        assert_eq!(name_words("Quill Labs"), ["quill", "labs"]);
    }
}
