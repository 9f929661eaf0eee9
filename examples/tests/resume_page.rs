//! The real resume product (`ResumeProduct::dry_run`, recorded model answers) completed
//! through its web page in a real headless Chromium: start, every gate answered in the
//! page, the finished resume shown and its DOCX downloaded.
#![cfg(test)]

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_server::{AgentServer, InMemorySessionStore};
use resume_coordinator::ResumeProduct;
use support::browser::{Canned, Chromium, StartInput};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_session_completes_in_the_browser_from_start_to_downloaded_resume() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/resume");
    let product = ResumeProduct::dry_run(&fixtures).unwrap();
    let server =
        AgentServer::new(Arc::new(InMemorySessionStore::new())).with_product(Arc::new(product));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(server.serve(listener));

    let chromium = Chromium::launch().await.expect("a browser");
    let page = chromium.open(&format!("{base}/")).await.unwrap();
    let input = StartInput {
        resume_text: std::fs::read_to_string(fixtures.join("resume.txt")).unwrap(),
        job_description: std::fs::read_to_string(fixtures.join("job.txt")).unwrap(),
        company: None,
        fast_draft: false,
    };
    let outcome =
        support::browser::run_session(&page, &input, &Canned::default(), Duration::from_secs(60))
            .await;
    chromium.close().await;
    let outcome = outcome.unwrap();

    let gates: Vec<&str> = outcome.answered.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        gates,
        [
            "research_validation",
            "questionnaire_1",
            "positioning_q_1",
            "positioning_q_2",
            "architect_review",
            "section_review_summary",
            "section_review_experience",
            "section_review_skills",
            // The Producer's revision of Experience, shown to the user again.
            "section_review_experience",
            "quality_review"
        ]
    );
    // The Producer's revision over the bus shows in the timeline and in the result.
    assert_eq!(outcome.events("revision_requested").len(), 1);
    assert_eq!(outcome.events("revision_complete").len(), 1);
    assert!(
        outcome.result_text.contains("Maya Okafor"),
        "{}",
        outcome.result_text
    );
    assert!(outcome.docx.starts_with(b"PK"));
}
