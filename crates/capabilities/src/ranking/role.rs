//! Whether a job is the role a candidate seeks, read from titles as a recruiter reads
//! them: "Senior SRE" is a site reliability role, not a backend one, whatever skills the
//! two share; "Staff Software Engineer, Storage Engine (Rust)" is a software engineer's.
//!
//! A title's role words are what is left once its level ("Senior", "Staff", "II"), the
//! words every engineering title has ("Engineer", "Developer") and small words are taken
//! out, with the usual abbreviations spelled out ("SRE", "ML", "QA").

/// Words that say a level, not a role.
const LEVEL_WORDS: &[&str] = &[
    "senior",
    "sr",
    "junior",
    "jr",
    "staff",
    "principal",
    "lead",
    "head",
    "associate",
    "intern",
    "graduate",
    "entry",
    "level",
    "mid",
    "i",
    "ii",
    "iii",
    "iv",
];

/// Words nearly every title in the field has, which say nothing of the role.
const GENERIC_WORDS: &[&str] = &[
    "engineer",
    "engineers",
    "developer",
    "dev",
    "specialist",
    "professional",
    "team",
];

/// The small words of a title and the gender markers job ads add ("(m/w/d)").
const FILLER_WORDS: &[&str] = &[
    "a", "an", "the", "of", "and", "or", "for", "with", "in", "at", "to", "m", "w", "d", "f", "x",
    "h",
];

/// Abbreviations spelled out, so either form meets the other.
const ROLE_ABBREVIATIONS: &[(&str, &str)] = &[
    ("sre", "site reliability"),
    ("ml", "machine learning"),
    ("ai", "artificial intelligence"),
    ("qa", "quality assurance"),
    ("sdet", "test automation"),
    ("ux", "user experience"),
    ("ui", "user interface"),
    ("appsec", "application security"),
    ("devops", "devops"),
    ("frontend", "frontend"),
    ("fullstack", "full stack"),
];

/// Whether `word` (lowercase) says a level, not a role: `senior`, `staff`, `ii`, ...
///
/// ```
/// use job_capabilities::ranking::is_level_word;
/// assert!(is_level_word("senior") && is_level_word("ii"));
/// assert!(!is_level_word("backend"));
/// ```
pub fn is_level_word(word: &str) -> bool {
    LEVEL_WORDS.contains(&word)
}

/// Whether a lowercase title word is filler: a small word, or one of the gender markers
/// job ads add ("Engineer (m/w/d)").
///
/// ```
/// use job_capabilities::ranking::is_title_filler;
/// assert!(is_title_filler("of") && is_title_filler("m"));
/// assert!(!is_title_filler("backend"));
/// ```
pub fn is_title_filler(word: &str) -> bool {
    FILLER_WORDS.contains(&word)
}

/// The role words of a title, lowercase, abbreviations spelled out.
///
/// ```
/// use job_capabilities::ranking::role_words;
/// assert_eq!(role_words("Senior SRE"), ["site", "reliability"]);
/// assert_eq!(role_words("Front-End Developer (React)"), ["frontend", "react"]);
/// assert_eq!(role_words("Junior UI Engineer"), ["frontend"]);
/// assert_eq!(role_words("Engineering Manager, Platform"), ["engineering", "manager", "platform"]);
/// ```
pub fn role_words(title: &str) -> Vec<String> {
    let joined = title
        .to_lowercase()
        .replace("front-end", "frontend")
        .replace("back-end", "backend")
        .replace("full-stack", "fullstack")
        .replace("ui engineer", "frontend engineer")
        .replace("ui developer", "frontend developer");
    let mut words: Vec<String> = Vec::new();
    for word in joined
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if is_level_word(word) || is_title_filler(word) || GENERIC_WORDS.contains(&word) {
            continue;
        }
        let spelled = ROLE_ABBREVIATIONS
            .iter()
            .find(|(short, _)| *short == word)
            .map_or(word, |(_, long)| long);
        for part in spelled.split(' ') {
            if !words.iter().any(|w| w == part) {
                words.push(part.to_owned());
            }
        }
    }
    words
}

/// How well a job's title names a role the candidate seeks, from 0 to 1, with the title
/// it matched.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleFit {
    /// The largest share of one sought title's role words the job's title has (a
    /// candidate's skill in the title, "Go Engineer", counts as half a match).
    pub score: f32,
    /// The sought title (or skill) it matched best, when any word matched.
    pub matched: Option<String>,
}

/// How well `job_title` names one of `sought_titles`; `skills` (canonical, as
/// [`super::normalize_skill`] gives them) named in the title count as half a match.
/// Without sought titles every job fits.
///
/// ```
/// use job_capabilities::ranking::role_fit;
/// let sought = ["Senior Backend Engineer".to_owned(), "Rust Engineer".to_owned()];
/// assert_eq!(role_fit("Backend Engineer (Go)", &sought, &[]).score, 1.0);
/// assert_eq!(role_fit("Senior SRE", &sought, &[]).score, 0.0);
/// assert_eq!(role_fit("Senior Go Engineer", &sought, &["go".to_owned()]).score, 0.5);
/// ```
pub fn role_fit(job_title: &str, sought_titles: &[String], skills: &[String]) -> RoleFit {
    if sought_titles.is_empty() {
        return RoleFit {
            score: 1.0,
            matched: None,
        };
    }
    let job_words = role_words(job_title);
    let mut best = RoleFit {
        score: 0.0,
        matched: None,
    };
    for sought in sought_titles {
        let words = role_words(sought);
        if words.is_empty() {
            continue;
        }
        let shared = words.iter().filter(|w| job_words.contains(w)).count();
        let score = shared as f32 / words.len() as f32;
        if score > best.score {
            best = RoleFit {
                score,
                matched: Some(sought.clone()),
            };
        }
    }
    if best.score < 0.5
        && let Some(skill) = skills
            .iter()
            .find(|skill| !skill.is_empty() && super::mentions(job_title, skill))
    {
        best = RoleFit {
            score: 0.5,
            matched: Some(skill.clone()),
        };
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn titles(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_data_engineer_is_half_a_data_scientist() {
        let sought = titles(&["Senior Data Scientist", "Data Scientist"]);
        assert_eq!(
            role_fit("Data Scientist – Pricing", &sought, &[]).score,
            1.0
        );
        assert_eq!(role_fit("Senior Data Engineer", &sought, &[]).score, 0.5);
        assert_eq!(role_fit("Data Entry Clerk", &sought, &[]).score, 0.5);
        assert_eq!(role_fit("Product Designer", &sought, &[]).score, 0.0);
    }

    #[test]
    fn abbreviations_meet_their_long_forms() {
        let sought = titles(&["Senior Site Reliability Engineer"]);
        assert_eq!(role_fit("Senior SRE", &sought, &[]).score, 1.0);
        let sought = titles(&["Machine Learning Engineer"]);
        assert_eq!(role_fit("Senior ML Engineer", &sought, &[]).score, 1.0);
    }

    #[test]
    fn the_best_sought_title_counts_and_is_named() {
        let sought = titles(&["Senior Backend Engineer", "Senior Software Engineer"]);
        let fit = role_fit("Staff Software Engineer, Storage Engine", &sought, &[]);
        assert_eq!(fit.score, 1.0);
        assert_eq!(fit.matched.as_deref(), Some("Senior Software Engineer"));
    }

    #[test]
    fn no_sought_title_means_any_role() {
        assert_eq!(role_fit("Barista", &[], &[]).score, 1.0);
    }
}
