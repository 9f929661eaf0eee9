//! aggregate and notify, each run on a hand-built state: the files written and the
//! summary sent.
#![cfg(test)]

mod common;

use common::rig::Rig;
use common::steps::*;

use std::sync::Arc;

use agent_llm::testing::ScriptedModel;
use calamine::{Reader, Xlsx, open_workbook};
use job_hunter::HuntState;
use job_hunter::steps::{self};

// ---------------------------------------------------------------------------------------
// 7. aggregate

#[tokio::test]
async fn aggregate_writes_the_ranked_jobs_and_every_company_outcome() {
    let rig = Rig::new(&ScriptedModel::new(Vec::new()));
    let mut state = ranked_state(&rig);
    steps::aggregate::run(&mut state, &rig.env()).await.unwrap();

    let dir = rig.output_dir();
    assert_eq!(
        state.output_files,
        [
            dir.join("steps-jobs.csv"),
            dir.join("steps-jobs.xlsx"),
            dir.join("steps-companies.csv"),
        ]
    );
    assert!(state.output_files.iter().all(|f| f.is_file()));

    let mut jobs = csv::Reader::from_path(&state.output_files[0]).unwrap();
    let headers = jobs.headers().unwrap().clone();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (rank, score, title, apply) = (
        column("Rank"),
        column("Score"),
        column("Title"),
        column("Apply"),
    );
    let (annual_min, annual_max) = (column("Salary min (annual)"), column("Salary max (annual)"));
    let rows: Vec<csv::StringRecord> = jobs.records().map(Result::unwrap).collect();
    let cells: Vec<[&str; 4]> = rows
        .iter()
        .map(|r| [&r[rank], &r[score], &r[title], &r[apply]])
        .collect();
    assert_eq!(
        cells,
        [
            [
                "1",
                "91",
                "Staff Rust Engineer",
                "https://jobs.example/1/apply"
            ],
            [
                "2",
                "74",
                "Platform Engineer",
                "https://jobs.example/2/apply"
            ],
            ["3", "20", "Data Analyst", "https://jobs.example/3/apply"],
        ]
    );
    // Hourly pay is shown per year.
    assert_eq!(
        (&rows[0][annual_min], &rows[0][annual_max]),
        ("104000", "124800")
    );
    assert_eq!(&rows[1][annual_min], "");

    let mut workbook: Xlsx<_> = open_workbook(&state.output_files[1]).unwrap();
    let sheet = workbook.worksheet_range("Jobs").unwrap();
    assert_eq!(sheet.height(), 1 + state.scored.len());

    let mut companies = csv::Reader::from_path(&state.output_files[2]).unwrap();
    assert_eq!(
        companies.headers().unwrap(),
        vec!["Company", "Outcome", "Fetched", "Kept", "Cut", "Details"]
    );
    let rows: Vec<Vec<String>> = companies
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect();
    let row = |cells: &[&str]| cells.iter().map(|c| (*c).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        rows,
        [
            row(&[
                "Northwind Robotics",
                "jobs_fetched",
                "1",
                "1",
                "0",
                "1 jobs (greenhouse)"
            ]),
            row(&[
                "Quill Labs",
                "jobs_fetched",
                "3",
                "2",
                "1",
                "3 jobs (lever); cut: 1 off-target titles"
            ]),
            row(&[
                "Old Mill Analytics",
                "unsupported_ats",
                "0",
                "0",
                "0",
                "unsupported job board at https://oldmill.example/careers"
            ]),
            row(&[
                "Stonewall Security",
                "blocked",
                "0",
                "0",
                "0",
                "blocked: greenhouse board: blocked by boards-api.greenhouse.io: HTTP 403"
            ]),
        ]
    );
}

// ---------------------------------------------------------------------------------------
// 8. notify

/// A ranked state with its output files written.
fn notified_state(rig: &Rig) -> HuntState {
    let mut state = ranked_state(rig);
    state.output_files =
        steps::aggregate::write_outputs(&state, &state.config.output_dir.clone()).unwrap();
    state
}

#[tokio::test]
async fn notify_writes_one_eml_once_per_run_to_the_candidate() {
    let rig = Rig::new(&ScriptedModel::new(Vec::new()));
    let fresh = notified_state(&rig);
    let mut state = fresh.clone();
    steps::notify::run(&mut state, &rig.env()).await.unwrap();

    let emls = common::eml_files(&rig.output_dir());
    let [eml] = &emls[..] else { panic!("{emls:?}") };
    let message = std::fs::read_to_string(eml).unwrap();
    assert!(
        message.contains("To: maya.okafor@mail.example"),
        "{message}"
    );
    assert!(message.contains("From: job-hunter@localhost"), "{message}");
    for file in &state.output_files {
        let name = file.file_name().unwrap().to_string_lossy();
        assert!(message.contains(&format!("filename=\"{name}\"")), "{name}");
    }
    let notification = state.notification.clone().unwrap();
    assert_eq!(notification.to, ["maya.okafor@mail.example"]);
    assert_eq!(notification.eml_path.as_ref(), Some(eml));
    assert_eq!(notification.transport, eml.display().to_string());
    assert!(state.issues.is_empty(), "{:#?}", state.issues);

    // The same run again (same journal), even with another address on the resume:
    // nothing new is written, and the recorded delivery is reported.
    let mut again = fresh;
    again.profile.as_mut().unwrap().email = Some("someone.else@mail.example".into());
    steps::notify::run(&mut again, &rig.env()).await.unwrap();
    assert_eq!(common::eml_files(&rig.output_dir()), emls);
    assert_eq!(again.notification, state.notification);
}

#[tokio::test]
async fn notify_writes_the_eml_when_the_smtp_server_is_down_and_says_so() {
    let mut rig = Rig::new(&ScriptedModel::new(Vec::new()));
    // Nothing listens on port 1.
    let dead = job_capabilities::mail::SmtpMailer::from_url("smtp://127.0.0.1:1").unwrap();
    rig.deps.mailer = Some(Arc::new(dead));
    let mut state = notified_state(&rig);
    steps::notify::run(&mut state, &rig.env()).await.unwrap();

    let [issue] = &state.issues[..] else {
        panic!("{:#?}", state.issues)
    };
    assert_eq!(
        (issue.step.as_str(), issue.kind.as_str()),
        ("notify", "mail")
    );
    assert!(
        issue.message.contains("smtp://127.0.0.1:1"),
        "{}",
        issue.message
    );
    assert!(issue.message.contains(".eml"), "{}", issue.message);
    let emls = common::eml_files(&rig.output_dir());
    assert_eq!(emls.len(), 1);
    let notification = state.notification.unwrap();
    assert_eq!(notification.eml_path.as_ref(), Some(&emls[0]));
    assert_eq!(notification.to, ["maya.okafor@mail.example"]);
}

#[tokio::test]
async fn notify_prefers_the_configured_recipient() {
    let rig = Rig::with(&ScriptedModel::new(Vec::new()), |s| {
        s.email_to = Some("hunt@example.org".into());
    });
    let mut state = notified_state(&rig);
    steps::notify::run(&mut state, &rig.env()).await.unwrap();

    let emls = common::eml_files(&rig.output_dir());
    assert_eq!(emls.len(), 1);
    let message = std::fs::read_to_string(&emls[0]).unwrap();
    assert!(message.contains("To: hunt@example.org"), "{message}");
    assert!(!message.contains("maya.okafor@mail.example"), "{message}");
    assert_eq!(state.notification.unwrap().to, ["hunt@example.org"]);
}

#[tokio::test]
async fn notify_without_any_recipient_records_an_issue() {
    let rig = Rig::new(&ScriptedModel::new(Vec::new()));
    let mut state = notified_state(&rig);
    state.profile.as_mut().unwrap().email = None;
    steps::notify::run(&mut state, &rig.env()).await.unwrap();

    let [issue] = &state.issues[..] else {
        panic!("{:#?}", state.issues)
    };
    assert_eq!(
        (issue.step.as_str(), issue.kind.as_str()),
        ("notify", "mail")
    );
    assert!(issue.message.contains("no recipient"), "{}", issue.message);
    assert!(!issue.fatal);
    // Still written, to the sender.
    assert_eq!(common::eml_files(&rig.output_dir()).len(), 1);
    assert_eq!(
        state.notification.unwrap().to,
        [rig.settings.email_from.as_str()]
    );
}

#[tokio::test]
async fn notify_compose_lists_the_top_jobs_and_every_company() {
    let rig = Rig::new(&ScriptedModel::new(Vec::new()));
    let state = notified_state(&rig);
    let email =
        steps::notify::compose(&state, "from@example.org", vec!["to@example.org".into()], 2);

    assert_eq!(
        email.subject,
        "Job hunt steps: 3 jobs scored, best Staff Rust Engineer at Northwind Robotics (91)"
    );
    let body = &email.text_body;
    assert!(body.contains("Top 2:"), "{body}");
    for (rank, s) in state.scored.iter().take(2).enumerate() {
        let entry = format!(
            "{}. [{}] {} at {} (Berlin)\n   {}\n   Apply: {}",
            rank + 1,
            s.score,
            s.job.title,
            s.job.company,
            s.reason,
            s.job.apply_url
        );
        assert!(body.contains(&entry), "{entry}\n---\n{body}");
    }
    assert!(!body.contains("Data Analyst"), "{body}");
    for report in &state.company_reports {
        let line = format!("- {}: {}", report.company, report.outcome.describe());
        assert!(body.contains(&line), "{line}\n---\n{body}");
    }
    let attached: Vec<&str> = email
        .attachments
        .iter()
        .map(|a| a.filename.as_str())
        .collect();
    assert_eq!(
        attached,
        ["steps-jobs.csv", "steps-jobs.xlsx", "steps-companies.csv"]
    );
    assert_eq!(email.to, ["to@example.org"]);
}
