//! Which fetched jobs are what the candidate asked for, judged from the posting alone
//! before any model reads it: the title against the titles sought, the published pay
//! against the minimum asked, the location and remote scope against the places wanted. A job that clearly is not (an account
//! executive for a backend engineer; remote only from the US for someone in Europe) is
//! cut with the reason; the others get a relevance that orders them, so the per-company
//! and per-run caps keep the most relevant jobs, not the first ones a board lists.

use job_capabilities::RawJob;
use job_capabilities::ranking::{
    Place, is_level_word, is_title_filler, location_fit, read_place, role_fit,
};
use job_capabilities::salary::parse_salary_text;

use crate::grounding::{POSTING_NOUNS, meaningful_words, words};
use crate::models::{RemotePreference, SearchPreferences, WorkArrangement};

/// Words that say nothing of the field (levels and filler aside, [`is_level_word`],
/// [`is_title_filler`]): left out when telling a title's field.
const NOT_FIELD_WORDS: &[&str] = &["remote", "hybrid"];

/// Words that make a title an engineering one, whichever of them it uses.
const ENGINEERING_WORDS: &[&str] = &[
    "engineer",
    "engineers",
    "engineering",
    "developer",
    "developers",
    "programmer",
    "sre",
    "swe",
    "devops",
    "architect",
];

/// Why a job was cut before scoring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cut {
    /// Its title shares no field with the titles sought.
    OffTarget,
    /// It is somewhere the candidate cannot work from; the reason says why.
    Elsewhere(String),
    /// Its published pay, at its top, is under the minimum asked; the reason says how
    /// much.
    BelowPay(String),
}

/// How relevant a job is to the search.
#[derive(Debug, Clone, PartialEq)]
pub struct Relevance {
    /// From 0 to 1: how well the title names a role sought (0.6) and the place suits
    /// (0.4).
    pub score: f32,
    /// Why it is cut, when it is.
    pub cut: Option<Cut>,
}

/// The search's titles, places and remote wish, ready to judge postings.
#[derive(Debug, Clone)]
pub struct RelevanceFilter {
    titles: Vec<String>,
    title_fields: Vec<Vec<String>>,
    skills: Vec<String>,
    locations: Vec<Vec<String>>,
    places: Vec<Place>,
    remote: RemotePreference,
    /// The yearly minimum asked and its currency, when both are stated.
    min_pay: Option<(f64, String)>,
}

/// The words of `title` that say its field (`backend`, `engineer`), lower case.
fn field_words(title: &str) -> Vec<String> {
    words(title)
        .into_iter()
        .filter(|w| {
            !NOT_FIELD_WORDS.contains(&w.as_str())
                && !POSTING_NOUNS.contains(&w.as_str())
                && !is_level_word(w)
                && !is_title_filler(w)
        })
        .collect()
}

/// Whether two titles' field words meet: a word in common (allowing a short ending),
/// or both engineering titles.
fn same_field(job: &[String], sought: &[String]) -> bool {
    let engineering =
        |list: &[String]| list.iter().any(|w| ENGINEERING_WORDS.contains(&w.as_str()));
    (engineering(job) && engineering(sought))
        || job.iter().any(|j| {
            sought.iter().any(|s| {
                j == s
                    || (j.len() >= 5
                        && s.len() >= 5
                        && (j.starts_with(s.as_str()) || s.starts_with(j.as_str())))
            })
        })
}

impl RelevanceFilter {
    /// The filter of `prefs`; `skills` (the candidate's) count as half a title match
    /// ("Go Engineer" for a Go developer).
    pub fn new(prefs: &SearchPreferences, skills: &[String]) -> Self {
        RelevanceFilter {
            titles: prefs.target_titles.clone(),
            title_fields: prefs
                .target_titles
                .iter()
                .map(|t| field_words(t))
                .filter(|w| !w.is_empty())
                .collect(),
            skills: skills
                .iter()
                .map(|s| job_capabilities::ranking::normalize_skill(s))
                .collect(),
            locations: prefs
                .locations
                .iter()
                .map(|l| {
                    meaningful_words(l)
                        .into_iter()
                        .filter(|w| w != "remote" && w != "hybrid")
                        .collect::<Vec<_>>()
                })
                .filter(|w| !w.is_empty())
                .collect(),
            places: prefs.locations.iter().map(|l| read_place(l)).collect(),
            remote: prefs.remote,
            min_pay: prefs
                .min_salary
                .zip(prefs.salary_currency.as_deref())
                .map(|(min, currency)| (min as f64, currency.to_ascii_uppercase())),
        }
    }

    /// How relevant `job` is, and why it is cut when it is.
    pub fn judge(&self, job: &RawJob) -> Relevance {
        let role = role_fit(&job.title, &self.titles, &self.skills).score;
        if !self.title_fields.is_empty() {
            let fields = field_words(&job.title);
            if !fields.is_empty() && !self.title_fields.iter().any(|s| same_field(&fields, s)) {
                return Relevance {
                    score: 0.0,
                    cut: Some(Cut::OffTarget),
                };
            }
        }
        if let Some(why) = self.below_pay(job) {
            return Relevance {
                score: 0.0,
                cut: Some(Cut::BelowPay(why)),
            };
        }
        let (place, cut) = self.place_fit(job);
        Relevance {
            score: 0.6 * role + 0.4 * place,
            cut,
        }
    }

    /// Why a job, once read, is somewhere the candidate cannot work from (a cut as
    /// [`Cut::Elsewhere`]): on site or
    /// hybrid (as the posting says) at a place that is none of the places asked for, or
    /// anywhere when only remote work was asked for. A job whose place is not stated is
    /// kept.
    pub fn judge_arrangement(
        &self,
        location: Option<&str>,
        arrangement: WorkArrangement,
    ) -> Option<String> {
        if !matches!(
            arrangement,
            WorkArrangement::Onsite | WorkArrangement::Hybrid
        ) {
            return None;
        }
        let stated = location.map(str::trim).filter(|l| !l.is_empty())?;
        let how = arrangement.as_str();
        if self.remote == RemotePreference::Remote {
            return Some(format!(
                "{how} in {stated}, and only remote work was asked for"
            ));
        }
        let stated_words = words(stated);
        let named = self
            .locations
            .iter()
            .any(|wanted| wanted.iter().all(|w| stated_words.contains(w)));
        (!self.locations.is_empty() && !named)
            .then(|| format!("{how} in {stated}, not a place asked for"))
    }

    /// Why the job's published pay rules it out: its top (or its only figure), per year
    /// and in the currency asked, is under the minimum. Pay in another currency, or none
    /// published, rules nothing out.
    fn below_pay(&self, job: &RawJob) -> Option<String> {
        let (minimum, currency) = self.min_pay.as_ref()?;
        let salary = job
            .salary
            .clone()
            .or_else(|| parse_salary_text(&job.description))?;
        if !salary.currency.eq_ignore_ascii_case(currency) {
            return None;
        }
        let top = salary.annual_max().or_else(|| salary.annual_min())?;
        (top < *minimum).then(|| {
            format!("pays at most {top:.0} {currency} a year, under the {minimum:.0} asked")
        })
    }

    /// How well the job's place suits the places wanted, and why it is cut when it is
    /// somewhere the candidate cannot work from. A job whose place is not stated is kept.
    fn place_fit(&self, job: &RawJob) -> (f32, Option<Cut>) {
        let stated = job.location.as_deref().map(str::trim).unwrap_or_default();
        let remote_flag = job.remote == Some(true);
        if stated.is_empty() && !remote_flag {
            return (0.5, None);
        }
        let place = read_place(stated);
        if self.places.is_empty() {
            let on_site_only = place.remote.is_none() && job.remote == Some(false);
            return match self.remote {
                RemotePreference::Remote if on_site_only => (
                    0.0,
                    Some(Cut::Elsewhere(
                        "on site, and only remote work was asked for".into(),
                    )),
                ),
                _ => (1.0, None),
            };
        }
        let stated_words = words(stated);
        let named = self
            .locations
            .iter()
            .any(|wanted| wanted.iter().all(|w| stated_words.contains(w)));
        let remote_ok = self.remote != RemotePreference::Onsite;
        let (fit, why) = location_fit(&place, remote_flag, &self.places, remote_ok);
        if named {
            // "Hybrid - Berlin", "Berlin or Remote": a place the candidate named.
            (1.0, None)
        } else if fit > 0.0 {
            (fit, None)
        } else {
            (0.0, Some(Cut::Elsewhere(why)))
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_relevance_filter_keeps_the_titles_and_places_asked_for() {
        use crate::models::{RemotePreference, SearchPreferences, WorkArrangement};
        use crate::relevance::{Cut, RelevanceFilter};
        use job_capabilities::RawJob;
        let prefs = SearchPreferences {
            target_titles: vec!["Senior Backend Engineer".into()],
            target_companies: vec![],
            industries: vec![],
            locations: vec!["Berlin".into(), "Remote - Europe".into()],
            remote: RemotePreference::Any,
            min_salary: None,
            salary_currency: None,
            excluded_companies: vec![],
            excluded_industries: vec![],
        };
        let filter = RelevanceFilter::new(&prefs, &[]);
        let job = |title: &str, location: &str| RawJob {
            source: job_capabilities::JobSource::Greenhouse,
            external_id: None,
            company: "Acme".into(),
            title: title.into(),
            location: Some(location.into()),
            remote: None,
            department: None,
            employment_type: None,
            url: "https://jobs.example/1".into(),
            apply_url: None,
            description: String::new(),
            posted_at: None,
            salary: None,
        };
        assert_eq!(
            filter
                .judge(&job("Senior Backend Engineer", "Hybrid - Berlin"))
                .cut,
            None
        );
        assert_eq!(
            filter.judge(&job("Account Executive", "Berlin")).cut,
            Some(Cut::OffTarget)
        );
        assert!(matches!(
            filter.judge(&job("Backend Engineer", "Remote - US")).cut,
            Some(Cut::Elsewhere(_))
        ));
        assert_eq!(
            filter
                .judge(&job("Sales Development Representative", "Berlin"))
                .cut,
            Some(Cut::OffTarget)
        );
        // Pay rules a job out only against a minimum with its currency.
        let paying = |description: &str| RawJob {
            description: description.into(),
            ..job("Senior Backend Engineer", "Berlin")
        };
        let asking = RelevanceFilter::new(
            &SearchPreferences {
                min_salary: Some(90_000),
                salary_currency: Some("EUR".into()),
                ..prefs.clone()
            },
            &[],
        );
        assert_eq!(
            asking
                .judge(&paying("Salary: €70,000 - €88,000 per year."))
                .cut,
            Some(Cut::BelowPay(
                "pays at most 88000 EUR a year, under the 90000 asked".into()
            ))
        );
        for kept in [
            "Salary: €80,000 - €100,000 per year.",
            "Salary: $70,000 - $88,000 per year.",
            "Competitive pay.",
        ] {
            assert_eq!(asking.judge(&paying(kept)).cut, None, "{kept}");
        }
        assert_eq!(
            filter
                .judge(&paying("Salary: €70,000 - €88,000 per year."))
                .cut,
            None
        );
        // Once read: on site or hybrid only where the candidate can be.
        let on_site = |place: &str, how| filter.judge_arrangement(Some(place), how);
        assert_eq!(on_site("Berlin, Germany", WorkArrangement::Onsite), None);
        assert_eq!(
            on_site("Berlin or Amsterdam", WorkArrangement::Hybrid),
            None
        );
        assert_eq!(on_site("Amsterdam", WorkArrangement::Remote), None);
        assert_eq!(
            on_site("Amsterdam, Netherlands", WorkArrangement::Onsite),
            Some("onsite in Amsterdam, Netherlands, not a place asked for".to_owned())
        );
        assert_eq!(
            filter.judge_arrangement(None, WorkArrangement::Onsite),
            None
        );
    }
}
