//! Writing a collection: JSON for programs, CSV for spreadsheets.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{ApplyType, CollectedJob};

/// What can go wrong writing a collection.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The file could not be written.
    #[error("writing {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The jobs could not be serialized.
    #[error("serializing the jobs: {0}")]
    Serialize(String),
}

/// One job as written: spec 002's `JobData` under the spec's names (`title`, `company`,
/// `location`, `salary`, `applyUrl`, `applyType`, `postedDate`, `description`), with the
/// job's own page (`url`) beside its apply URL and the listing page it was found on
/// (`sourcePage`). A value the page did not show is `null`, never an empty string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobRecord {
    /// The job title.
    pub title: String,
    /// The hiring company.
    pub company: Option<String>,
    /// Where the job is.
    pub location: Option<String>,
    /// The pay, as written.
    pub salary: Option<String>,
    /// The job's own page.
    pub url: Option<String>,
    /// Where to apply.
    pub apply_url: Option<String>,
    /// `easy_apply`, `external` or `unknown`.
    pub apply_type: ApplyType,
    /// When it was posted, as written.
    pub posted_date: Option<String>,
    /// What the job is.
    pub description: Option<String>,
    /// The listing page it was found on.
    pub source_page: String,
}

impl From<&CollectedJob> for JobRecord {
    fn from(job: &CollectedJob) -> Self {
        let given = |value: &str| {
            let value = value.trim();
            (!value.is_empty()).then(|| value.to_owned())
        };
        JobRecord {
            title: job.title.trim().to_owned(),
            company: given(&job.company),
            location: given(&job.location),
            salary: given(&job.salary_text),
            url: given(&job.url),
            apply_url: given(&job.apply_url),
            apply_type: job.apply_type,
            posted_date: job.posted_date.as_deref().and_then(given),
            description: job.description.as_deref().and_then(given),
            source_page: job.source_page.clone(),
        }
    }
}

/// The CSV header: the JSON names, in the same order.
const CSV_HEADER: [&str; 10] = [
    "title",
    "company",
    "location",
    "salary",
    "url",
    "applyUrl",
    "applyType",
    "postedDate",
    "description",
    "sourcePage",
];

/// Writes the jobs as a pretty JSON array of [`JobRecord`]s.
pub fn write_json(jobs: &[CollectedJob], path: &Path) -> Result<(), WriteError> {
    let records: Vec<JobRecord> = jobs.iter().map(JobRecord::from).collect();
    let text = serde_json::to_string_pretty(&records)
        .map_err(|error| WriteError::Serialize(error.to_string()))?;
    std::fs::write(path, text).map_err(|source| WriteError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Writes the jobs as CSV: a header row of the [`JobRecord`] names, then one row per
/// job, a value the page did not show left empty. A cell that a spreadsheet would read
/// as a formula (starting with `=`, `+`, `-`, `@`) is written with a leading `'`.
pub fn write_csv(jobs: &[CollectedJob], path: &Path) -> Result<(), WriteError> {
    let io = |source: std::io::Error| WriteError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut writer = csv::Writer::from_path(path).map_err(|error| match error.into_kind() {
        csv::ErrorKind::Io(source) => io(source),
        other => WriteError::Serialize(format!("{other:?}")),
    })?;
    let safe = |cell: Option<&str>| {
        let cell = cell.unwrap_or_default();
        if cell.starts_with(['=', '+', '-', '@']) {
            format!("'{cell}")
        } else {
            cell.to_owned()
        }
    };
    let csv_error = |error: csv::Error| WriteError::Serialize(error.to_string());
    writer.write_record(CSV_HEADER).map_err(csv_error)?;
    for job in jobs {
        let record = JobRecord::from(job);
        writer
            .write_record([
                safe(Some(&record.title)),
                safe(record.company.as_deref()),
                safe(record.location.as_deref()),
                safe(record.salary.as_deref()),
                safe(record.url.as_deref()),
                safe(record.apply_url.as_deref()),
                record.apply_type.as_str().to_owned(),
                safe(record.posted_date.as_deref()),
                safe(record.description.as_deref()),
                safe(Some(&record.source_page)),
            ])
            .map_err(csv_error)?;
    }
    writer.flush().map_err(io)
}
