//! Writing a collection: JSON for programs, CSV for spreadsheets.

use std::path::Path;

use super::CollectedJob;

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

/// Writes the jobs as a pretty JSON array.
pub fn write_json(jobs: &[CollectedJob], path: &Path) -> Result<(), WriteError> {
    let text = serde_json::to_string_pretty(jobs)
        .map_err(|error| WriteError::Serialize(error.to_string()))?;
    std::fs::write(path, text).map_err(|source| WriteError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Writes the jobs as CSV with a header row. A cell that a spreadsheet would read as a
/// formula (starting with `=`, `+`, `-`, `@`) is written with a leading `'`.
pub fn write_csv(jobs: &[CollectedJob], path: &Path) -> Result<(), WriteError> {
    let io = |source: std::io::Error| WriteError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut writer = csv::Writer::from_path(path).map_err(|error| match error.into_kind() {
        csv::ErrorKind::Io(source) => io(source),
        other => WriteError::Serialize(format!("{other:?}")),
    })?;
    let safe = |cell: &str| {
        if cell.starts_with(['=', '+', '-', '@']) {
            format!("'{cell}")
        } else {
            cell.to_owned()
        }
    };
    let csv_error = |error: csv::Error| WriteError::Serialize(error.to_string());
    writer
        .write_record([
            "title",
            "company",
            "location",
            "salary_text",
            "apply_url",
            "apply_type",
            "posted_date",
            "source_page",
        ])
        .map_err(csv_error)?;
    for job in jobs {
        writer
            .write_record([
                safe(&job.title),
                safe(&job.company),
                safe(&job.location),
                safe(&job.salary_text),
                safe(&job.apply_url),
                job.apply_type.as_str().to_owned(),
                safe(job.posted_date.as_deref().unwrap_or("")),
                safe(&job.source_page),
            ])
            .map_err(csv_error)?;
    }
    writer.flush().map_err(io)
}
