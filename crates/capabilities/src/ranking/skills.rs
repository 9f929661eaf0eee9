//! Skills compared as a recruiter would: case, punctuation and the usual aliases
//! ("JS"/"JavaScript", "k8s"/"Kubernetes", "Golang"/"Go", "Postgres"/"PostgreSQL") do not
//! make two skills different.

use std::collections::BTreeSet;

/// Aliases and their canonical names (both sides already lowercased and trimmed).
const ALIASES: &[(&str, &str)] = &[
    ("js", "javascript"),
    ("ecmascript", "javascript"),
    ("ts", "typescript"),
    ("k8s", "kubernetes"),
    ("kube", "kubernetes"),
    ("golang", "go"),
    ("postgres", "postgresql"),
    ("psql", "postgresql"),
    ("pg", "postgresql"),
    ("ml", "machine learning"),
    ("dl", "deep learning"),
    ("ai", "artificial intelligence"),
    ("nlp", "natural language processing"),
    ("react.js", "react"),
    ("reactjs", "react"),
    ("react native", "react native"),
    ("vue.js", "vue"),
    ("vuejs", "vue"),
    ("angular.js", "angular"),
    ("angularjs", "angular"),
    ("node", "node.js"),
    ("nodejs", "node.js"),
    ("next", "next.js"),
    ("nextjs", "next.js"),
    ("gcp", "google cloud"),
    ("google cloud platform", "google cloud"),
    ("amazon web services", "aws"),
    ("azure cloud", "azure"),
    ("ci/cd", "ci/cd"),
    ("cicd", "ci/cd"),
    ("ci", "ci/cd"),
    ("py", "python"),
    ("python3", "python"),
    ("sklearn", "scikit-learn"),
    ("scikit learn", "scikit-learn"),
    ("torch", "pytorch"),
    ("tf", "tensorflow"),
    ("c sharp", "c#"),
    ("csharp", "c#"),
    ("cpp", "c++"),
    ("objective c", "objective-c"),
    ("swiftui", "swiftui"),
    ("mongo", "mongodb"),
    ("es", "elasticsearch"),
    ("elastic", "elasticsearch"),
    ("tf/terraform", "terraform"),
    ("gh actions", "github actions"),
    ("rest", "rest apis"),
    ("restful apis", "rest apis"),
    ("rest api", "rest apis"),
    ("sre", "site reliability engineering"),
    ("mlops", "mlops"),
    ("ux", "user experience"),
    ("ui", "user interface"),
];

/// A skill's canonical form: lowercase, spaces collapsed, an alias replaced by its name.
///
/// ```
/// use job_capabilities::ranking::normalize_skill;
/// assert_eq!(normalize_skill(" K8s "), "kubernetes");
/// assert_eq!(normalize_skill("Golang"), "go");
/// assert_eq!(normalize_skill("React.js"), "react");
/// assert_eq!(normalize_skill("Rust"), "rust");
/// ```
pub fn normalize_skill(skill: &str) -> String {
    let lowered = skill
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let trimmed = lowered.trim_matches(|c: char| matches!(c, '.' | ',' | ';' | ':'));
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == trimmed)
        .map_or_else(|| trimmed.to_owned(), |(_, name)| (*name).to_owned())
}

/// The canonical forms of `skills`.
pub fn skill_set<S: AsRef<str>>(skills: &[S]) -> BTreeSet<String> {
    skills
        .iter()
        .map(|s| normalize_skill(s.as_ref()))
        .filter(|s| !s.is_empty())
        .collect()
}

/// Whether `text` mentions `skill` (canonical) or one of its aliases as whole words.
pub fn mentions(text: &str, skill: &str) -> bool {
    let lowered = format!(" {} ", text.to_lowercase());
    let bounded = |name: &str| {
        lowered.match_indices(name).any(|(at, _)| {
            let before = lowered[..at].chars().next_back();
            let after = lowered[at + name.len()..].chars().next();
            let edge =
                |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric() && c != '+' && c != '#');
            edge(before) && edge(after)
        })
    };
    bounded(skill)
        || ALIASES
            .iter()
            .filter(|(alias, name)| *name == skill && alias.len() > 2)
            .any(|(alias, _)| bounded(alias))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_meet() {
        let job = skill_set(&["k8s", "JS", "Postgres", "Golang", "TS"]);
        let profile = skill_set(&["Kubernetes", "JavaScript", "PostgreSQL", "Go", "TypeScript"]);
        assert_eq!(job, profile);
    }

    #[test]
    fn mentions_are_whole_words() {
        assert!(mentions("Experience with Go and gRPC", "go"));
        assert!(!mentions("A good engineer", "go"));
        assert!(
            mentions("We run k8s clusters", "kubernetes"),
            "an alias in the text"
        );
        assert!(!mentions("C# and .NET", "c"));
        assert!(mentions("Modern C++ (C++20)", "c++"));
    }
}
