//! Which fetched jobs are what the candidate asked for, judged from the posting alone
//! before any model reads it: the title against the titles sought, the location and
//! remote scope against the places wanted. A job that clearly is not (an account
//! executive for a backend engineer; remote only from the US for someone in Europe) is
//! cut with the reason; the others get a relevance that orders them, so the per-company
//! and per-run caps keep the most relevant jobs, not the first ones a board lists.

use job_capabilities::RawJob;
use job_capabilities::ranking::{
    Place, is_level_word, is_title_filler, location_fit, read_place, role_fit,
};

use crate::grounding::{POSTING_NOUNS, meaningful_words, words};
use crate::models::{RemotePreference, SearchPreferences};

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
    "development",
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
        let (place, cut) = self.place_fit(job);
        Relevance {
            score: 0.6 * role + 0.4 * place,
            cut,
        }
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
        use crate::models::{RemotePreference, SearchPreferences};
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
    }
}
