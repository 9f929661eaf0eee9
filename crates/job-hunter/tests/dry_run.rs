//! The whole pipeline on the recorded fixtures: every step, every company's outcome,
//! the files read back, the email.
#![cfg(test)]

mod common;

use std::collections::BTreeMap;

use agent_runtime::graph::RunStatus;
use calamine::{Data, Reader, Xlsx, open_workbook};
use job_capabilities::SalaryOrigin;
use job_hunter::{HuntEvent, JobHunter};

#[tokio::test]
async fn a_dry_run_scores_every_job_and_accounts_for_every_company() {
    let dir = tempfile::tempdir().unwrap();
    let settings = common::settings(dir.path());
    let (deps, events) = common::dry_deps(&settings);
    let result = JobHunter::new(deps, settings.clone())
        .run(common::config("dry-1", &settings))
        .await
        .unwrap();
    assert_eq!(result.status, RunStatus::Success, "{:?}", result.reason);
    let state = &result.state;

    // Every company ends in exactly one typed outcome.
    let outcomes: BTreeMap<&str, &str> = state
        .company_reports
        .iter()
        .map(|r| (r.company.as_str(), r.outcome.label()))
        .collect();
    assert_eq!(state.company_reports.len(), 11);
    for company in [
        "Northwind Robotics",
        "Quill Labs",
        "Lumen Health",
        "Tidewater Energy",
        "Brightline Data",
        "Copperleaf Games",
        "Halcyon Bio",
        "Meridian Payments",
        // No job board: its four jobs are read off its careers page by the model.
        "Old Mill Analytics",
    ] {
        assert_eq!(outcomes[company], "jobs_fetched", "{company}");
    }
    let old_mill = state
        .company_reports
        .iter()
        .find(|r| r.company == "Old Mill Analytics")
        .unwrap();
    assert_eq!(
        old_mill.outcome,
        job_hunter::models::CompanyOutcome::JobsFetched {
            count: 4,
            source: job_capabilities::JobSource::CareerPage
        }
    );
    assert_eq!(
        state
            .raw_jobs
            .iter()
            .filter(|j| j.company == "Old Mill Analytics"
                && j.url.starts_with("https://oldmill.example/careers/"))
            .count(),
        old_mill.jobs.kept
    );
    assert_eq!(old_mill.jobs.fetched, 4);
    assert_eq!(outcomes["Stonewall Security"], "blocked");
    assert_eq!(outcomes["Nowhere Systems"], "no_careers_page");
    // The blocked company is reported as a non-fatal issue.
    assert!(
        state.issues.iter().any(|i| i.kind == "blocked"
            && i.company.as_deref() == Some("Stonewall Security")
            && !i.fatal),
        "{:#?}",
        state.issues
    );

    // Every job fetched is kept or counted under why it was cut, per company and in all:
    // two duplicates, and the titles and places the search rules out; the exclusions
    // (crypto, gambling) are kept and reported, and remove nothing here.
    let counts = state.job_counts;
    assert_eq!(counts.duplicates, 2);
    assert_eq!(counts.fetched, 52);
    assert_eq!(counts.kept, state.raw_jobs.len());
    assert_eq!(counts.kept + counts.cut(), counts.fetched);
    assert!(counts.off_target > 0 && counts.elsewhere > 0, "{counts:?}");
    for report in &state.company_reports {
        if let job_hunter::models::CompanyOutcome::JobsFetched { count, .. } = report.outcome {
            assert_eq!(report.jobs.fetched, count, "{}", report.company);
            let kept = state
                .raw_jobs
                .iter()
                .filter(|j| j.company == report.company)
                .count();
            assert_eq!(report.jobs.kept, kept, "{}", report.company);
        }
    }
    let exclusions: Vec<String> = state.exclusions.iter().map(|e| e.describe_rule()).collect();
    assert_eq!(
        exclusions,
        [r#"industry "crypto""#, r#"industry "gambling""#]
    );
    assert!(
        !state
            .raw_jobs
            .iter()
            .any(|j| j.title == "Technical Recruiter"
                || j.location.as_deref() == Some("Remote - US")),
        "an off-target title or a place elsewhere was kept"
    );
    assert_eq!(state.jobs.len(), state.raw_jobs.len());
    assert_eq!(state.scored.len(), state.jobs.len());
    assert!(state.scored.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(state.scored.iter().all(|s| !s.reason.is_empty()));
    assert!(
        state
            .scored
            .iter()
            .filter(|s| s.score >= 50)
            .all(|s| !s.job_evidence.is_empty() && !s.profile_evidence.is_empty())
    );
    // The blocked company, and one line per company that had jobs cut.
    let kinds: Vec<&str> = state.issues.iter().map(|i| i.kind.as_str()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "blocked").count(),
        1,
        "{kinds:?}"
    );
    // Jobs cut once read (on site or hybrid elsewhere) are said one by one, after the
    // line of their company's cuts made before any model read them.
    let cut_once_read = state
        .issues
        .iter()
        .filter(|i| i.step == "process_jobs" && i.kind == "filter")
        .count();
    assert_eq!(cut_once_read, 3, "{:#?}", state.issues);
    let cut_companies = state
        .company_reports
        .iter()
        .filter(|r| r.jobs.cut() > 0)
        .count();
    assert_eq!(
        kinds.iter().filter(|k| **k == "filter").count(),
        cut_companies + cut_once_read
    );
    assert_eq!(
        state.issues.len(),
        1 + cut_companies + cut_once_read,
        "{:#?}",
        state.issues
    );

    // Pay comes from structured fields or the description, never from the model.
    let structured = state
        .jobs
        .iter()
        .filter(|j| {
            j.salary
                .as_ref()
                .is_some_and(|s| s.origin == SalaryOrigin::Structured)
        })
        .count();
    let described = state
        .jobs
        .iter()
        .filter(|j| {
            j.salary
                .as_ref()
                .is_some_and(|s| s.origin == SalaryOrigin::Description)
        })
        .count();
    assert!(
        structured > 0 && described > 0,
        "{structured} structured, {described} from text"
    );

    // One model call for the resume, preferences and companies each, one for Old Mill's
    // careers page, one per job read, one per batch of jobs scored.
    let batches = state.jobs.len().div_ceil(settings.score_batch_size) as u64;
    let read = (state.jobs.len() + cut_once_read) as u64;
    assert_eq!(result.cost.calls, 4 + read + batches);
    assert_eq!(result.cost.calls_by_step.get("scrape_jobs"), Some(&1));
    assert!(result.cost.usd > 0.0);
    assert_eq!(
        result.critical_path.waves,
        4 + read.div_ceil(8) + batches.div_ceil(8)
    );

    // Progress: every step started and finished, every company reported.
    let events = events.events();
    let finished = events
        .iter()
        .filter(|e| matches!(e, HuntEvent::StepFinished { .. }))
        .count();
    assert_eq!(finished, 8);
    let companies = events
        .iter()
        .filter(|e| matches!(e, HuntEvent::CompanyFinished { .. }))
        .count();
    assert_eq!(companies, 11);

    // The files: CSV, XLSX (read back) and the companies CSV.
    let [csv_path, xlsx_path, companies_path] = state.output_files.as_slice() else {
        panic!("{:?}", state.output_files);
    };
    let mut csv = csv::Reader::from_path(csv_path).unwrap();
    assert_eq!(&csv.headers().unwrap()[1], "Score");
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), state.scored.len());
    assert_eq!(rows[0][2], state.scored[0].job.title);
    assert_eq!(rows[0][13], state.scored[0].job.apply_url);

    let mut book: Xlsx<_> = open_workbook(xlsx_path).unwrap();
    let sheet = book.worksheet_range("Jobs").unwrap();
    assert_eq!(sheet.height(), state.scored.len() + 1);
    assert_eq!(sheet.get((0, 0)), Some(&Data::String("Rank".into())));
    for (row, scored) in state.scored.iter().enumerate() {
        assert_eq!(
            sheet.get((row + 1, 1)),
            Some(&Data::Float(f64::from(scored.score))),
            "row {row}: the score is a number"
        );
        assert_eq!(
            sheet.get((row + 1, 2)),
            Some(&Data::String(scored.job.title.clone()))
        );
    }
    let outcomes_sheet = book.worksheet_range("Companies").unwrap();
    assert_eq!(outcomes_sheet.height(), 12);
    assert!(
        outcomes_sheet
            .rows()
            .any(|row| row[0] == Data::String("Stonewall Security".into())
                && row[1] == Data::String("blocked".into()))
    );
    let companies_csv = std::fs::read_to_string(companies_path).unwrap();
    assert!(
        companies_csv.contains("Stonewall Security,blocked"),
        "{companies_csv}"
    );
    // Fetched, kept and cut per company, with what was cut.
    assert!(
        companies_csv.starts_with("Company,Outcome,Fetched,Kept,Cut,Details"),
        "{companies_csv}"
    );
    let northwind = state
        .company_reports
        .iter()
        .find(|r| r.company == "Northwind Robotics")
        .unwrap()
        .jobs;
    let row = format!(
        "Northwind Robotics,jobs_fetched,{},{},{},",
        northwind.fetched,
        northwind.kept,
        northwind.cut()
    );
    assert!(companies_csv.contains(&row), "{row} not in {companies_csv}");
    assert!(
        outcomes_sheet
            .rows()
            .any(|r| r[0] == Data::String("Northwind Robotics".into())
                && r[2] == Data::Float(northwind.fetched as f64)
                && r[3] == Data::Float(northwind.kept as f64)),
        "the Companies sheet has Northwind's counts"
    );

    // Without SMTP_URL the summary is an .eml beside the files, with both attached.
    let emls = common::eml_files(&settings.output_dir);
    assert_eq!(emls.len(), 1);
    let eml = std::fs::read_to_string(&emls[0]).unwrap();
    assert!(
        eml.contains("Subject: Job hunt dry-1:"),
        "{}",
        &eml[..eml.len().min(600)]
    );
    assert!(eml.contains("dry-1-jobs.xlsx") && eml.contains("dry-1-jobs.csv"));
    assert!(eml.contains("To: maya.okafor@mail.example"));
    // The exclusions and the counts are in the email too.
    let body = eml.replace("=\r\n", "").replace("=\n", "");
    assert!(body.contains("Your exclusions:"), "{body}");
    assert!(
        body.contains(r#"industry "crypto""#) || body.contains("industry =22crypto=22"),
        "{body}"
    );
    assert!(
        body.contains(&format!("{} fetched, {} kept", counts.fetched, counts.kept)),
        "{body}"
    );
}

#[tokio::test]
async fn without_web_search_only_named_companies_are_searched_and_the_run_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let settings = common::settings(dir.path());
    let (deps, events) = common::dry_deps(&settings);
    let result = JobHunter::new(deps.with_search(None), settings.clone())
        .run(common::config("no-search", &settings))
        .await
        .unwrap();
    assert_eq!(result.status, RunStatus::Success, "{:?}", result.reason);
    let state = &result.state;
    assert!(
        state
            .search_note
            .as_deref()
            .unwrap()
            .contains("BRAVE_API_KEY")
    );
    let names: Vec<&str> = state.companies.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["Northwind Robotics", "Quill Labs"]);
    // Both boards are found by probing the names' usual board names on the four
    // vendors: Northwind's as `northwindrobotics`, Quill's (Ashby) as `quill-labs`;
    // every probe is recorded.
    let labels: Vec<&str> = state
        .company_reports
        .iter()
        .map(|r| r.outcome.label())
        .collect();
    assert_eq!(labels, ["jobs_fetched", "jobs_fetched"]);
    let quill: Vec<String> = state.company_reports[1]
        .probes
        .iter()
        .map(|p| format!("{} {}", p.board, p.outcome))
        .collect();
    assert_eq!(
        quill,
        [
            "greenhouse/quilllabs no such board",
            "lever/quilllabs no such board",
            "ashby/quilllabs no such board",
            "workday/quilllabs no such board",
            "greenhouse/quill-labs no such board",
            "lever/quill-labs no such board",
            "ashby/quill-labs 6 jobs",
        ]
    );
    assert!(!state.scored.is_empty());
    // No model call to suggest companies.
    assert!(!result.cost.calls_by_step.contains_key("find_companies"));
    assert!(
        events.events().iter().any(
            |e| matches!(e, HuntEvent::Notice { message } if message.contains("not configured"))
        )
    );
}
