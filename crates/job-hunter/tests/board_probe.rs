//! Without web search, a company's board is probed under its usual names on the four
//! vendors, through the real job-board client against a local server that replays the
//! vendors' recorded bodies: a board that fails does not end the search, and every
//! answer is recorded.
#![cfg(test)]

mod common;

use std::time::Duration;

use job_capabilities::ats::{AtsClient, AtsEndpoints, AtsKind};
use job_capabilities::http::{PoliteClient, PolitePolicy};
use job_hunter::models::CompanyOutcome;
use job_hunter::steps::board_probe::{board_tokens, probe};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The real client, every vendor's API at `server`.
fn client(server: &MockServer) -> AtsClient {
    let base = server.uri();
    let endpoints = AtsEndpoints::from_lookup(|name| match name {
        "GREENHOUSE_API_BASE" | "LEVER_API_BASE" | "ASHBY_API_BASE" | "WORKDAY_API_BASE" => {
            Some(base.clone())
        }
        _ => None,
    });
    let polite = PoliteClient::new(PolitePolicy {
        min_interval_per_host: Duration::ZERO,
        ..PolitePolicy::default()
    });
    AtsClient::new(polite, endpoints)
}

fn recorded(relative: &str) -> Vec<u8> {
    std::fs::read(common::fixtures().join(relative)).unwrap()
}

#[tokio::test]
async fn every_usual_name_is_tried_on_every_vendor_past_a_failing_board() {
    let server = MockServer::start().await;
    // Greenhouse refuses the run-together name; everything else under it is unknown.
    Mock::given(path("/v1/boards/quilllabs/jobs"))
        .respond_with(ResponseTemplate::new(403))
        .mount(&server)
        .await;
    // The hyphenated name is Quill's Ashby board.
    Mock::given(path("/posting-api/job-board/quill-labs"))
        .respond_with(
            ResponseTemplate::new(200).set_body_bytes(recorded("ats/ashby/quill-labs.json")),
        )
        .mount(&server)
        .await;

    let probed = probe(&client(&server), "Quill Labs", None).await;

    let answers: Vec<(String, String)> = probed
        .probes
        .iter()
        .map(|p| (p.board.clone(), p.outcome.clone()))
        .collect();
    let boards: Vec<&str> = answers.iter().map(|(b, _)| b.as_str()).collect();
    assert_eq!(
        boards,
        [
            "greenhouse/quilllabs",
            "lever/quilllabs",
            "ashby/quilllabs",
            "workday/quilllabs",
            "greenhouse/quill-labs",
            "lever/quill-labs",
            "ashby/quill-labs",
        ]
    );
    assert!(answers[0].1.starts_with("blocked: "), "{answers:?}");
    assert!(
        answers[1..6].iter().all(|(_, o)| o == "no such board"),
        "{answers:?}"
    );
    let (board, jobs) = probed.found.clone().unwrap();
    assert_eq!(
        (board.kind, board.token.as_str()),
        (AtsKind::Ashby, "quill-labs")
    );
    assert_eq!(answers[6].1, format!("{} jobs", jobs.len()));
    assert!(
        matches!(probed.outcome(), CompanyOutcome::JobsFetched { count, .. } if count == jobs.len())
    );
}

#[tokio::test]
async fn the_domain_names_a_board_and_a_workday_site_is_tried_at_its_usual_place() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/wday/cxs/tidewater/External/jobs"))
        .respond_with(
            ResponseTemplate::new(200).set_body_bytes(recorded("ats/workday/tidewater.json")),
        )
        .mount(&server)
        .await;

    assert_eq!(
        board_tokens(
            "Tidewater Energy GmbH",
            Some("https://www.tidewater.example")
        ),
        [
            "tidewaterenergy",
            "tidewater-energy",
            "tidewaterenergygmbh",
            "tidewater-energy-gmbh",
            "tidewater"
        ]
    );
    let probed = probe(
        &client(&server),
        "Tidewater Energy GmbH",
        Some("tidewater.example"),
    )
    .await;
    let (board, jobs) = probed.found.clone().unwrap();
    assert_eq!(
        (board.kind, board.token.as_str()),
        (AtsKind::Workday, "tidewater")
    );
    assert!(!jobs.is_empty());
    assert_eq!(probed.probes.len(), 4 * 4 + 4);
}

#[tokio::test]
async fn no_board_anywhere_says_so_and_failures_are_named() {
    let server = MockServer::start().await;
    Mock::given(path("/v0/postings/nowhere"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>not json</html>"))
        .mount(&server)
        .await;
    let probed = probe(&client(&server), "Nowhere", None).await;
    assert!(probed.found.is_none());
    assert_eq!(probed.probes.len(), 4);
    let CompanyOutcome::Error { reason } = probed.outcome() else {
        panic!("{:?}", probed.outcome());
    };
    assert!(reason.starts_with("lever/nowhere error: "), "{reason}");

    let nothing = probe(&client(&server), "Elsewhere Labs", None).await;
    assert_eq!(nothing.outcome(), CompanyOutcome::NoCareersPage);
    assert_eq!(nothing.probes.len(), 8);
}
