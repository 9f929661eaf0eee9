//! The ATS clients replaying real recorded job-board bodies (read in place from the
//! shared real-data checkout, see its INDEX.md §3) from a local mock server: the boards of
//! each vendor (`boards.rs`), then missing boards, refusals and odd bodies (`edges.rs`).
#![cfg(test)]

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use job_capabilities::ats::{
    AtsBoard, AtsClient, AtsEndpoints, AtsError, AtsKind, JobBoardClient, detect_ats, parse_ashby,
    parse_greenhouse, parse_lever, parse_workday_list,
};
use job_capabilities::http::{PoliteClient, PolitePolicy};
use job_capabilities::{JobSource, PayInterval, RawJob, SalaryOrigin};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A real recorded body, read in place (never copied into this repository).
fn realdata(relative: &str) -> Vec<u8> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/realdata/ats")
        .join(relative);
    std::fs::read(&file).unwrap_or_else(|error| {
        panic!(
            "real ATS body missing at {}: {error}. These tests replay the shared real-data \
             checkout (../shared/realdata next to the workspace, INDEX.md §3); it must be present.",
            file.display()
        )
    })
}

fn realdata_json(relative: &str) -> Value {
    serde_json::from_slice(&realdata(relative)).unwrap()
}

fn json_response(body: Vec<u8>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "application/json")
}

/// A client whose four API bases all point at `server`.
fn client_for(server: &MockServer) -> AtsClient {
    let base = server.uri();
    let endpoints =
        AtsEndpoints::from_lookup(|name| name.ends_with("_API_BASE").then(|| format!("{base}/")));
    assert_eq!(endpoints.workday.as_deref(), Some(base.as_str()));
    let http = PoliteClient::new(PolitePolicy {
        min_interval_per_host: Duration::from_millis(1),
        ..Default::default()
    });
    AtsClient::new(http, endpoints)
}

fn at(rfc3339: &str) -> Option<DateTime<Utc>> {
    Some(
        DateTime::parse_from_rfc3339(rfc3339)
            .unwrap()
            .with_timezone(&Utc),
    )
}

/// No markup and no entities left in a description.
fn assert_plain_text(job: &RawJob) {
    let text = &job.description;
    let tag = text
        .as_bytes()
        .windows(2)
        .any(|w| w[0] == b'<' && (w[1].is_ascii_alphabetic() || w[1] == b'/' || w[1] == b'!'));
    assert!(!tag, "HTML left in {:?}: {text}", job.title);
    for entity in [
        "&lt;", "&gt;", "&amp;", "&quot;", "&#39;", "&nbsp;", "&rsquo;",
    ] {
        assert!(
            !text.contains(entity),
            "{entity} left in {:?}: {text}",
            job.title
        );
    }
}

mod boards;
mod edges;
