//! Step 7: write the ranked jobs as CSV and XLSX, and every company's outcome and job
//! counts (fetched, kept, cut) beside them. No model calls.

use std::path::{Path, PathBuf};

use agent_runtime::graph::NodeError;
use job_capabilities::export::{Cell, Column, ExportError, Table, write_csv, write_xlsx_sheets};

use super::StepEnv;
use crate::models::{CompanyOutcome, CompanyReport, ScoredJob};
use crate::state::HuntState;

/// The ranked jobs as a table: rank, score, title, company, location, arrangement,
/// seniority, pay, source, posted date, apply link, reason and evidence.
pub fn jobs_table(scored: &[ScoredJob]) -> Table {
    let columns = [
        ("Rank", 6.0),
        ("Score", 7.0),
        ("Title", 40.0),
        ("Company", 22.0),
        ("Location", 24.0),
        ("Arrangement", 12.0),
        ("Seniority", 11.0),
        ("Salary min (annual)", 14.0),
        ("Salary max (annual)", 14.0),
        ("Currency", 9.0),
        ("Salary as published", 26.0),
        ("Source", 12.0),
        ("Posted", 12.0),
        ("Apply", 40.0),
        ("Reason", 70.0),
        ("Job evidence", 50.0),
        ("Profile evidence", 50.0),
    ];
    let mut table = Table::new(
        columns
            .iter()
            .map(|(header, width)| Column {
                header: (*header).to_owned(),
                width: *width,
            })
            .collect(),
    );
    for (rank, s) in scored.iter().enumerate() {
        let job = &s.job;
        let salary = job.salary.as_ref();
        let number = |v: Option<f64>| v.map_or(Cell::Empty, |v| Cell::Number(v.round()));
        let row = vec![
            Cell::Integer(rank as i64 + 1),
            Cell::Integer(i64::from(s.score)),
            Cell::Text(job.title.clone()),
            Cell::Text(job.company.clone()),
            job.location.clone().map_or(Cell::Empty, Cell::Text),
            Cell::Text(job.extracted.work_arrangement.as_str().to_owned()),
            Cell::Text(job.extracted.seniority.clone()),
            number(salary.and_then(|s| s.annual_min())),
            number(salary.and_then(|s| s.annual_max())),
            salary.map_or(Cell::Empty, |s| Cell::Text(s.currency.clone())),
            salary.map_or(Cell::Empty, |s| {
                Cell::Text(format!(
                    "{}-{} per {}",
                    s.min.map_or("?".into(), |v| format!("{v:.0}")),
                    s.max.map_or("?".into(), |v| format!("{v:.0}")),
                    s.interval.as_str()
                ))
            }),
            Cell::Text(job.source.as_str().to_owned()),
            job.posted_at
                .map_or(Cell::Empty, |at| Cell::Date(at.date_naive())),
            Cell::Link {
                url: job.apply_url.clone(),
                text: "Apply".to_owned(),
            },
            Cell::Text(s.reason.clone()),
            Cell::Text(s.job_evidence.join("; ")),
            Cell::Text(s.profile_evidence.join("; ")),
        ];
        // Rows have exactly as many cells as columns.
        let _ = table.push_row(row);
    }
    table
}

/// Every company with its outcome and its jobs: fetched, kept for scoring, cut before
/// scoring (and why, in the details with the outcome and the boards tried).
pub fn companies_table(reports: &[CompanyReport]) -> Table {
    let column = |header: &str, width: f64| Column {
        header: header.into(),
        width,
    };
    let mut table = Table::new(vec![
        column("Company", 26.0),
        column("Outcome", 18.0),
        column("Fetched", 9.0),
        column("Kept", 8.0),
        column("Cut", 8.0),
        column("Details", 90.0),
    ]);
    for report in reports {
        let counts = &report.jobs;
        let searched = !matches!(report.outcome, CompanyOutcome::Excluded { .. });
        let count = |n: usize| {
            if searched {
                Cell::Integer(n as i64)
            } else {
                Cell::Empty
            }
        };
        let mut details = report.outcome.describe();
        if counts.cut() > 0 {
            details.push_str(&format!("; cut: {}", counts.describe_cuts()));
        }
        if !report.probes.is_empty() {
            let tried: Vec<String> = report
                .probes
                .iter()
                .map(|p| format!("{} {}", p.board, p.outcome))
                .collect();
            details.push_str(&format!("; boards tried: {}", tried.join(", ")));
        }
        let _ = table.push_row(vec![
            Cell::Text(report.company.clone()),
            Cell::Text(report.outcome.label().to_owned()),
            count(counts.fetched),
            count(counts.kept),
            count(counts.cut()),
            Cell::Text(details),
        ]);
    }
    table
}

/// Writes `<run_id>-jobs.csv`, `<run_id>-jobs.xlsx` (sheets `Jobs` and `Companies`)
/// and `<run_id>-companies.csv` into `dir` and returns their paths.
pub fn write_outputs(state: &HuntState, dir: &Path) -> Result<Vec<PathBuf>, ExportError> {
    std::fs::create_dir_all(dir).map_err(|source| ExportError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let run_id = &state.config.run_id;
    let jobs = jobs_table(&state.scored);
    let companies = companies_table(&state.company_reports);
    let jobs_csv = dir.join(format!("{run_id}-jobs.csv"));
    let xlsx = dir.join(format!("{run_id}-jobs.xlsx"));
    let companies_csv = dir.join(format!("{run_id}-companies.csv"));
    write_csv(&jobs, &jobs_csv)?;
    write_xlsx_sheets(&[("Jobs", &jobs), ("Companies", &companies)], &xlsx)?;
    write_csv(&companies, &companies_csv)?;
    Ok(vec![jobs_csv, xlsx, companies_csv])
}

/// Writes the output files (on a blocking thread: building a workbook is CPU work);
/// failing to write them is fatal.
pub async fn run(state: &mut HuntState, _env: &StepEnv<'_>) -> Result<(), NodeError> {
    let dir = state.config.output_dir.clone();
    let snapshot = state.clone();
    let files = tokio::task::spawn_blocking(move || write_outputs(&snapshot, &dir))
        .await
        .map_err(|e| NodeError::fatal(format!("writing the output files stopped: {e}")))?
        .map_err(|e| NodeError::fatal(e.to_string()))?;
    for file in &files {
        tracing::info!(path = %file.display(), "output written");
    }
    state.output_files = files;
    Ok(())
}
