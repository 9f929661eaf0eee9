//! What the candidate said no to, kept as typed exclusions and applied to companies and
//! jobs: a company by name ("not Acme") or a kind of company or work ("no crypto or
//! gambling"). Each exclusion is reported with what it removed.
//!
//! A kind is found where it is affirmed: in a company's name, in why the company was
//! suggested, in a job's title, department or description; a text that negates it ("a
//! payments company, not crypto") does not count. The usual words for the same kind
//! count too (`crypto`: `blockchain`, `web3`; `gambling`: `betting`, `casino`).

use job_capabilities::RawJob;
use serde::{Deserialize, Serialize};

use crate::grounding::{SourceText, has_name, meaningful_words, name_words, names_a_kind, words};
use crate::models::SearchPreferences;

/// Words that name the same kind of company as the kind the candidate wrote.
const KIND_SYNONYMS: &[(&str, &[&str])] = &[
    (
        "crypto",
        &[
            "cryptocurrency",
            "cryptocurrencies",
            "blockchain",
            "web3",
            "defi",
            "bitcoin",
            "ethereum",
            "nft",
        ],
    ),
    (
        "gambling",
        &[
            "betting",
            "casino",
            "casinos",
            "igaming",
            "sportsbook",
            "wagering",
        ],
    ),
    ("defense", &["defence", "military", "weapons"]),
    ("defence", &["defense", "military", "weapons"]),
    ("tobacco", &["cigarettes", "vaping", "nicotine"]),
    ("adtech", &["advertising technology", "ad tech"]),
];

/// Whether an exclusion names one company or a kind of company.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExclusionKind {
    /// A company by name.
    Company,
    /// An industry, sector or domain.
    Industry,
}

/// One exclusion and what it removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExclusionReport {
    /// Company or industry.
    pub kind: ExclusionKind,
    /// As the candidate's preferences give it (`crypto`, `Acme`).
    pub value: String,
    /// The companies it kept from being searched.
    pub companies: Vec<String>,
    /// The jobs it removed before scoring.
    pub jobs: usize,
}

impl ExclusionReport {
    /// The exclusion itself: `industry "crypto"`, `company "Acme"`.
    pub fn describe_rule(&self) -> String {
        let kind = match self.kind {
            ExclusionKind::Company => "company",
            ExclusionKind::Industry => "industry",
        };
        format!("{kind} {:?}", self.value)
    }

    /// One line for people: `industry "crypto": removed 1 company (Coinly) and 3 jobs`.
    pub fn describe(&self) -> String {
        let companies = match self.companies.len() {
            0 => None,
            1 => Some(format!("1 company ({})", self.companies[0])),
            n => Some(format!("{n} companies ({})", self.companies.join(", "))),
        };
        let jobs = match self.jobs {
            0 => None,
            1 => Some("1 job".to_owned()),
            n => Some(format!("{n} jobs")),
        };
        let removed = match (companies, jobs) {
            (None, None) => "removed nothing found in this run".to_owned(),
            (Some(c), None) => format!("removed {c}"),
            (None, Some(j)) => format!("removed {j}"),
            (Some(c), Some(j)) => format!("removed {c} and {j}"),
        };
        format!("{}: {removed}", self.describe_rule())
    }
}

/// Sorts the grounded exclusions of `prefs` by kind: an "excluded company" that names
/// a kind ("crypto companies") or that the text writes in lower case ("no crypto") is an
/// industry; industries are kept as their meaningful words (`crypto`). Duplicates go.
pub fn type_exclusions(text: &str, prefs: SearchPreferences) -> SearchPreferences {
    let mut companies: Vec<String> = Vec::new();
    let mut industries: Vec<String> = Vec::new();
    let add = |list: &mut Vec<String>, value: String| {
        if !value.is_empty() && !list.iter().any(|v| v.eq_ignore_ascii_case(&value)) {
            list.push(value);
        }
    };
    for value in prefs.excluded_companies {
        if names_a_kind(&value) || !written_as_a_name(text, &value) {
            add(&mut industries, meaningful_words(&value).join(" "));
        } else {
            add(&mut companies, value.trim().to_owned());
        }
    }
    for value in prefs.excluded_industries {
        add(&mut industries, meaningful_words(&value).join(" "));
    }
    SearchPreferences {
        excluded_companies: companies,
        excluded_industries: industries,
        ..prefs
    }
}

/// Whether `text` writes a word of `value` capitalized where a sentence does not start
/// (`Acme` in "not Acme"), as names are written.
fn written_as_a_name(text: &str, value: &str) -> bool {
    let wanted = words(value);
    let mut sentence_start = true;
    let mut word = String::new();
    let mut verdict = false;
    for c in text.chars().chain(std::iter::once(' ')) {
        if c.is_alphanumeric() || c == '\'' || c == '\u{2019}' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            let capitalized = word.chars().next().is_some_and(char::is_uppercase);
            let lowered: String = words(&word).concat();
            if capitalized && !sentence_start && wanted.contains(&lowered) {
                verdict = true;
            }
            sentence_start = false;
            word.clear();
        }
        if matches!(c, '.' | '!' | '?' | '\n' | ';' | ':') {
            sentence_start = true;
        }
    }
    verdict
}

/// One exclusion, ready to be matched.
#[derive(Debug, Clone)]
struct Rule {
    kind: ExclusionKind,
    value: String,
    /// The company's name words, or the kind's terms (the value and its synonyms).
    terms: Vec<Vec<String>>,
}

impl Rule {
    fn company(value: &str) -> Self {
        Rule {
            kind: ExclusionKind::Company,
            value: value.to_owned(),
            terms: vec![name_words(value)],
        }
    }

    fn industry(value: &str) -> Self {
        let mut terms = vec![value.to_owned()];
        let key = words(value).concat();
        if let Some((_, synonyms)) = KIND_SYNONYMS.iter().find(|(kind, _)| *kind == key) {
            terms.extend(synonyms.iter().map(|s| (*s).to_owned()));
        }
        Rule {
            kind: ExclusionKind::Industry,
            value: value.to_owned(),
            terms: terms.iter().map(|t| meaningful_words(t)).collect(),
        }
    }

    /// Whether the rule rules out the company whose name has the words `name`,
    /// described by the texts `about`.
    fn hits(&self, name: &[String], about: &[SourceText]) -> bool {
        let named = self
            .terms
            .iter()
            .any(|term| !term.is_empty() && has_name(name, term));
        match self.kind {
            ExclusionKind::Company => named,
            ExclusionKind::Industry => {
                named
                    || about.iter().any(|source| {
                        self.terms
                            .iter()
                            .any(|term| !term.is_empty() && source.affirms(&term.join(" ")))
                    })
            }
        }
    }
}

/// The exclusions of a search, applied to companies and jobs, counting what each
/// removed.
#[derive(Debug, Clone)]
pub struct Exclusions {
    rules: Vec<Rule>,
    reports: Vec<ExclusionReport>,
}

impl Exclusions {
    /// The exclusions of `prefs`, with the counts of `reports` carried on (a step after
    /// the one that made them adds to them).
    pub fn new(prefs: &SearchPreferences, reports: &[ExclusionReport]) -> Self {
        let rules: Vec<Rule> = prefs
            .excluded_companies
            .iter()
            .map(|v| Rule::company(v))
            .chain(prefs.excluded_industries.iter().map(|v| Rule::industry(v)))
            .collect();
        let reports = rules
            .iter()
            .map(|rule| {
                reports
                    .iter()
                    .find(|r| r.kind == rule.kind && r.value == rule.value)
                    .cloned()
                    .unwrap_or_else(|| ExclusionReport {
                        kind: rule.kind,
                        value: rule.value.clone(),
                        companies: Vec::new(),
                        jobs: 0,
                    })
            })
            .collect();
        Exclusions { rules, reports }
    }

    /// Whether the company `name` (suggested because of `reason`, when it was) is
    /// excluded; counts it against the first exclusion that rules it out.
    pub fn remove_company(&mut self, name: &str, reason: Option<&str>) -> bool {
        let about: Vec<SourceText> = reason.into_iter().map(SourceText::new).collect();
        let words = name_words(name);
        let Some(at) = self.rules.iter().position(|rule| rule.hits(&words, &about)) else {
            return false;
        };
        if let Some(report) = self.reports.get_mut(at) {
            report.companies.push(name.to_owned());
        }
        true
    }

    /// Whether the job is excluded (its company by name or kind; its title, department
    /// or description by kind); counts it against the first exclusion that rules it out.
    pub fn remove_job(&mut self, job: &RawJob) -> bool {
        if self.rules.is_empty() {
            return false;
        }
        let about: Vec<SourceText> = [
            Some(job.title.as_str()),
            job.department.as_deref(),
            Some(job.description.as_str()),
        ]
        .into_iter()
        .flatten()
        .map(SourceText::new)
        .collect();
        let company = name_words(&job.company);
        let Some(at) = self
            .rules
            .iter()
            .position(|rule| rule.hits(&company, &about))
        else {
            return false;
        };
        if let Some(report) = self.reports.get_mut(at) {
            report.jobs += 1;
        }
        true
    }

    /// Each exclusion with what it removed so far.
    pub fn reports(&self) -> &[ExclusionReport] {
        &self.reports
    }

    /// The reports, to keep in the state.
    pub fn into_reports(self) -> Vec<ExclusionReport> {
        self.reports
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::RemotePreference;
    use job_capabilities::JobSource;

    #[test]
    fn the_report_describes_what_was_cut_and_why() {
        use crate::exclusions::{ExclusionKind, ExclusionReport};
        let report = ExclusionReport {
            kind: ExclusionKind::Industry,
            value: "crypto".into(),
            companies: vec!["Coinly".into()],
            jobs: 3,
        };
        assert_eq!(
            report.describe(),
            r#"industry "crypto": removed 1 company (Coinly) and 3 jobs"#
        );
    }

    #[test]
    fn type_exclusions_read_the_kinds_of_work_refused() {
        let prefs = prefs(
            &["crypto companies", "Acme", "gambling"],
            &["the gambling industry"],
        );
        let typed = type_exclusions("Backend roles; not Acme, no crypto or gambling.", prefs);
        assert_eq!(typed.excluded_companies, ["Acme"]);
        assert_eq!(typed.excluded_industries, ["crypto", "gambling"]);
    }

    #[test]
    fn a_company_is_removed_by_its_name_or_by_an_excluded_industry_it_states() {
        let prefs = prefs(&["Acme"], &["crypto"]);
        let mut exclusions = Exclusions::new(&prefs, &[]);
        assert!(exclusions.remove_company("Acme Robotics GmbH", None));
        assert!(exclusions.remove_company("Coinly", Some("A crypto exchange in Berlin.")));
        assert!(!exclusions.remove_company(
            "Meridian Payments",
            Some("A payments company (not crypto).")
        ));
        assert_eq!(exclusions.reports()[1].companies, ["Coinly"]);
    }

    fn prefs(companies: &[&str], industries: &[&str]) -> SearchPreferences {
        let list = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        SearchPreferences {
            target_titles: Vec::new(),
            target_companies: Vec::new(),
            industries: Vec::new(),
            locations: Vec::new(),
            remote: RemotePreference::Any,
            min_salary: None,
            salary_currency: None,
            excluded_companies: list(companies),
            excluded_industries: list(industries),
        }
    }

    fn job(company: &str, title: &str, description: &str) -> RawJob {
        RawJob {
            source: JobSource::Greenhouse,
            external_id: None,
            company: company.into(),
            title: title.into(),
            location: None,
            remote: None,
            department: None,
            employment_type: None,
            url: format!("https://jobs.example/{title}"),
            apply_url: None,
            description: description.into(),
            posted_at: None,
            salary: None,
        }
    }

    #[test]
    fn jobs_are_removed_by_company_and_by_kind_and_each_exclusion_counts_its_own() {
        let mut exclusions = Exclusions::new(&prefs(&["Acme"], &["crypto", "gambling"]), &[]);
        let removed: Vec<bool> = [
            job("Acme GmbH", "Backend Engineer", "Payments in Rust."),
            job(
                "Coinly",
                "Backend Engineer",
                "Build our blockchain settlement engine.",
            ),
            job(
                "Lucky Labs",
                "Platform Engineer",
                "Run the sportsbook's odds service.",
            ),
            job(
                "Meridian",
                "Backend Engineer",
                "A payments company, not crypto.",
            ),
            job(
                "Bettercloud",
                "Backend Engineer",
                "Better tools for IT teams.",
            ),
            job("Quill", "Backend Engineer", "Define APIs for our editor."),
        ]
        .iter()
        .map(|j| exclusions.remove_job(j))
        .collect();
        assert_eq!(removed, [true, true, true, false, false, false]);
        let counts: Vec<(String, usize)> = exclusions
            .reports()
            .iter()
            .map(|r| (r.describe_rule(), r.jobs))
            .collect();
        assert_eq!(
            counts,
            [
                (r#"company "Acme""#.to_owned(), 1),
                (r#"industry "crypto""#.to_owned(), 1),
                (r#"industry "gambling""#.to_owned(), 1)
            ]
        );
    }

    #[test]
    fn counts_carry_on_from_an_earlier_step() {
        let prefs = prefs(&[], &["crypto"]);
        let mut first = Exclusions::new(&prefs, &[]);
        assert!(first.remove_company("Coinly", Some("A crypto exchange.")));
        let mut later = Exclusions::new(&prefs, &first.into_reports());
        assert!(later.remove_job(&job("Chainly", "Engineer", "Crypto wallets.")));
        let report = &later.reports()[0];
        assert_eq!(
            (report.companies.as_slice(), report.jobs),
            (&["Coinly".to_owned()][..], 1)
        );
    }
}
