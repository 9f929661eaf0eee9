//! Where a job is and where a candidate can work, in the few terms a match needs: a city,
//! a country, a region, and whether the job is remote and from where.

/// Countries and their regions (lowercase names and the usual abbreviations).
const COUNTRIES: &[(&str, &str, Region)] = &[
    ("germany", "de", Region::Europe),
    ("deutschland", "de", Region::Europe),
    ("portugal", "pt", Region::Europe),
    ("spain", "es", Region::Europe),
    ("france", "fr", Region::Europe),
    ("netherlands", "nl", Region::Europe),
    ("the netherlands", "nl", Region::Europe),
    ("belgium", "be", Region::Europe),
    ("austria", "at", Region::Europe),
    ("switzerland", "ch", Region::Europe),
    ("italy", "it", Region::Europe),
    ("ireland", "ie", Region::Europe),
    ("poland", "pl", Region::Europe),
    ("sweden", "se", Region::Europe),
    ("denmark", "dk", Region::Europe),
    ("norway", "no", Region::Europe),
    ("finland", "fi", Region::Europe),
    ("czech republic", "cz", Region::Europe),
    ("czechia", "cz", Region::Europe),
    ("estonia", "ee", Region::Europe),
    ("romania", "ro", Region::Europe),
    ("greece", "gr", Region::Europe),
    ("uk", "gb", Region::Europe),
    ("united kingdom", "gb", Region::Europe),
    ("england", "gb", Region::Europe),
    ("scotland", "gb", Region::Europe),
    ("usa", "us", Region::NorthAmerica),
    ("us", "us", Region::NorthAmerica),
    ("united states", "us", Region::NorthAmerica),
    ("canada", "ca", Region::NorthAmerica),
    ("mexico", "mx", Region::Latam),
    ("brazil", "br", Region::Latam),
    ("argentina", "ar", Region::Latam),
    ("colombia", "co", Region::Latam),
    ("chile", "cl", Region::Latam),
    ("india", "in", Region::Asia),
    ("singapore", "sg", Region::Asia),
    ("japan", "jp", Region::Asia),
    ("china", "cn", Region::Asia),
    ("australia", "au", Region::Oceania),
    ("new zealand", "nz", Region::Oceania),
    ("israel", "il", Region::Europe),
    ("uae", "ae", Region::Asia),
];

/// US state abbreviations seen after a city ("Austin, TX").
const US_STATES: &[&str] = &[
    "al", "ak", "az", "ar", "ca", "co", "ct", "dc", "de", "fl", "ga", "hi", "id", "il", "in", "ia",
    "ks", "ky", "la", "me", "md", "ma", "mi", "mn", "ms", "mo", "mt", "ne", "nv", "nh", "nj", "nm",
    "ny", "nc", "nd", "oh", "ok", "or", "pa", "ri", "sc", "sd", "tn", "tx", "ut", "vt", "va", "wa",
    "wv", "wi", "wy",
];

/// Canadian province abbreviations.
const CA_PROVINCES: &[&str] = &["on", "bc", "qc", "ab", "mb", "ns", "nb", "sk", "nl", "pe"];

/// Part of the world, as remote jobs scope themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    /// Europe (with the UK).
    Europe,
    /// The US and Canada.
    NorthAmerica,
    /// Latin America.
    Latam,
    /// Asia.
    Asia,
    /// Australia and New Zealand.
    Oceania,
}

/// A place read from a location text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Place {
    /// The city, lowercase (empty when none).
    pub city: String,
    /// The country code (`de`, `us`, ...), when known.
    pub country: Option<&'static str>,
    /// The region, when known.
    pub region: Option<Region>,
    /// Remote, and from where: `Some(None)` anywhere, `Some(Some(region))` within it,
    /// `Some(Some(..))` with a country-only scope reads as that country's region.
    pub remote: Option<Option<Region>>,
    /// A remote scope limited to one country ("Remote (US only)").
    pub remote_country: Option<&'static str>,
}

fn country(word: &str) -> Option<(&'static str, Region)> {
    let word = word.trim().trim_matches('.').to_lowercase();
    if let Some((_, code, region)) = COUNTRIES.iter().find(|(name, _, _)| *name == word) {
        return Some((code, *region));
    }
    if US_STATES.contains(&word.as_str()) {
        return Some(("us", Region::NorthAmerica));
    }
    if CA_PROVINCES.contains(&word.as_str()) {
        return Some(("ca", Region::NorthAmerica));
    }
    None
}

fn region(word: &str) -> Option<Region> {
    let word = word.to_lowercase();
    if word.contains("europe") || word.contains("emea") || word.contains("eu ") || word == "eu" {
        Some(Region::Europe)
    } else if word.contains("north america") || word.contains("americas") {
        Some(Region::NorthAmerica)
    } else if word.contains("latam") || word.contains("latin america") {
        Some(Region::Latam)
    } else if word.contains("apac") || word.contains("asia") {
        Some(Region::Asia)
    } else {
        None
    }
}

/// Reads a location text: "Berlin, Germany", "Austin, TX", "Remote (Europe)", "Remote
/// (US only)", "Remote (worldwide)", "London, UK (hybrid)".
///
/// ```
/// use job_capabilities::ranking::{Region, read_place};
/// let berlin = read_place("Berlin, Germany");
/// assert_eq!((berlin.city.as_str(), berlin.region), ("berlin", Some(Region::Europe)));
/// assert_eq!(read_place("Remote (Europe)").remote, Some(Some(Region::Europe)));
/// assert_eq!(read_place("Remote (worldwide)").remote, Some(None));
/// assert_eq!(read_place("Remote (US only)").remote_country, Some("us"));
/// ```
pub fn read_place(text: &str) -> Place {
    let lowered = text.to_lowercase();
    let mut place = Place::default();
    if lowered.contains("remote") || lowered.contains("anywhere") {
        let scope = lowered
            .split_once('(')
            .map(|(_, rest)| rest.trim_end_matches(')').to_owned())
            .or_else(|| {
                lowered
                    .split_once(['-', '–', ','])
                    .map(|(_, rest)| rest.to_owned())
            })
            .unwrap_or_default();
        let scope = scope.replace("only", "").trim().to_owned();
        if scope.is_empty()
            || scope.contains("worldwide")
            || scope.contains("global")
            || scope.contains("anywhere")
        {
            place.remote = Some(None);
        } else if let Some(region) = region(&scope) {
            place.remote = Some(Some(region));
        } else if let Some((code, region)) = scope.split([',', '/', ' ']).find_map(country) {
            place.remote = Some(Some(region));
            place.remote_country = Some(code);
        } else {
            place.remote = Some(None);
        }
        return place;
    }
    let cleaned = lowered.split('(').next().unwrap_or_default();
    let mut parts = cleaned.split(',').map(str::trim).filter(|p| !p.is_empty());
    place.city = parts.next().unwrap_or_default().to_owned();
    for part in parts {
        if let Some((code, region)) = country(part) {
            place.country = Some(code);
            place.region = Some(region);
        }
    }
    if place.country.is_none()
        && let Some((code, region)) = country(&place.city)
    {
        place.city.clear();
        place.country = Some(code);
        place.region = Some(region);
    }
    place
}

/// How well a job's place suits a candidate's: 1 when they can work there as it is
/// (their city, or remote from where they are), 0.5 in their country (a move or a
/// commute), 0.3 in their region, 0 otherwise; with why.
pub fn location_fit(
    job: &Place,
    job_remote: bool,
    wanted: &[Place],
    remote_ok: bool,
) -> (f32, String) {
    let home_regions: Vec<Region> = wanted
        .iter()
        .filter_map(|p| p.region.or(p.remote.flatten()))
        .collect();
    let home_countries: Vec<&str> = wanted
        .iter()
        .filter_map(|p| p.country.or(p.remote_country))
        .collect();
    if let Some(scope) = job.remote.or(job_remote.then_some(None)) {
        if !remote_ok && !wanted.iter().any(|p| p.remote.is_some()) {
            return (0.3, "remote, but a remote job was not asked for".into());
        }
        if let Some(country) = job.remote_country
            && !home_countries.is_empty()
            && !home_countries.contains(&country)
        {
            return (0.0, format!("remote only from {}", country.to_uppercase()));
        }
        return match scope {
            None => (1.0, "remote from anywhere".into()),
            Some(region) if home_regions.is_empty() || home_regions.contains(&region) => {
                (1.0, "remote from your region".into())
            }
            Some(_) => (0.0, "remote only from another region".into()),
        };
    }
    if !job.city.is_empty() && wanted.iter().any(|p| p.city == job.city) {
        return (1.0, format!("in {}", job.city));
    }
    if job.country.is_some_and(|c| home_countries.contains(&c)) {
        return (0.5, "in your country, another city".into());
    }
    if job.region.is_some_and(|r| home_regions.contains(&r)) {
        return (0.3, "in your region, another country".into());
    }
    (0.0, "on site far from where you want to work".into())
}
