//! The one job model every job source maps to, and the salary it may carry.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a job posting came from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum JobSource {
    /// The Greenhouse job-board API.
    Greenhouse,
    /// The Lever postings API.
    Lever,
    /// The Ashby posting API.
    Ashby,
    /// A Workday career site's JSON endpoint.
    Workday,
    /// A company's own careers page, read as HTML.
    CareerPage,
}

impl JobSource {
    /// The lower-case name: `greenhouse`, `lever`, `ashby`, `workday`, `career_page`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobSource::Greenhouse => "greenhouse",
            JobSource::Lever => "lever",
            JobSource::Ashby => "ashby",
            JobSource::Workday => "workday",
            JobSource::CareerPage => "career_page",
        }
    }
}

impl std::fmt::Display for JobSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A job posting as a source published it, before any model has read it.
///
/// Every ATS client and the career-page reader produce this one shape; fields a source
/// does not publish are `None` (never guessed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawJob {
    /// Where it came from.
    pub source: JobSource,
    /// The source's own id for the posting, when it has one.
    pub external_id: Option<String>,
    /// The hiring company's name.
    pub company: String,
    /// The job title as published.
    pub title: String,
    /// The location text as published (may list several places).
    pub location: Option<String>,
    /// Whether the source marks the job remote (`None`: not stated).
    pub remote: Option<bool>,
    /// Department or team.
    pub department: Option<String>,
    /// Employment type as published ("Full-time", "FullTime", "Intern", ...).
    pub employment_type: Option<String>,
    /// The posting's own page.
    pub url: String,
    /// Where to apply, when the source gives a separate address.
    pub apply_url: Option<String>,
    /// The description as plain text.
    pub description: String,
    /// When the posting was published or last updated, when the source says.
    pub posted_at: Option<DateTime<Utc>>,
    /// Pay the source publishes as structured fields (not parsed from prose).
    pub salary: Option<Salary>,
}

/// The period a pay figure is quoted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PayInterval {
    /// Per hour.
    Hour,
    /// Per day.
    Day,
    /// Per week.
    Week,
    /// Per month.
    Month,
    /// Per year.
    Year,
}

impl PayInterval {
    /// How many of this period make a year (2,080 working hours, 260 days, 52 weeks,
    /// 12 months).
    pub fn per_year(self) -> f64 {
        match self {
            PayInterval::Hour => 2080.0,
            PayInterval::Day => 260.0,
            PayInterval::Week => 52.0,
            PayInterval::Month => 12.0,
            PayInterval::Year => 1.0,
        }
    }

    /// The lower-case name: `hour`, `day`, `week`, `month`, `year`.
    pub fn as_str(self) -> &'static str {
        match self {
            PayInterval::Hour => "hour",
            PayInterval::Day => "day",
            PayInterval::Week => "week",
            PayInterval::Month => "month",
            PayInterval::Year => "year",
        }
    }
}

/// Where a [`Salary`] was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SalaryOrigin {
    /// Structured fields of the source's API.
    Structured,
    /// A pay range found in the description text.
    Description,
}

/// A pay range, read deterministically (never produced by a model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Salary {
    /// Lower bound, in `currency` per `interval`.
    pub min: Option<f64>,
    /// Upper bound, in `currency` per `interval`.
    pub max: Option<f64>,
    /// ISO 4217 code (`USD`, `EUR`, `GBP`, ...).
    pub currency: String,
    /// The period the figures are quoted for.
    pub interval: PayInterval,
    /// Where the figures were read.
    pub origin: SalaryOrigin,
}

impl Salary {
    /// The lower bound per year.
    pub fn annual_min(&self) -> Option<f64> {
        self.min.map(|v| v * self.interval.per_year())
    }

    /// The upper bound per year.
    pub fn annual_max(&self) -> Option<f64> {
        self.max.map(|v| v * self.interval.per_year())
    }
}
