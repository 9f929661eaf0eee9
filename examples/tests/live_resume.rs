//! `resume_server` live against the real small model this machine runs, every gate
//! answered by the client written from `docs/resume-api.md`: the session completes or
//! stops with a stated reason within its token budget, asks no more questions than its
//! phase limits allow, and reports progress at least every 30 s while it works. The
//! protocol and the guards, never the model's judgement.
#![cfg(test)]

mod support;

use agent_backends::SqliteSessionStore;
use agent_runtime::sessions::SessionStore;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::examples::example;
use support::local_model::local_model;

/// Tokens a session may use: enough for several phases, bounded so the test is quick.
const BUDGET_TOKENS: &str = "9000";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_session_keeps_its_limits_reports_progress_and_ends_with_a_reason() {
    let model = local_model();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new(example("resume_server"))
        .args([
            "--port",
            &port.to_string(),
            "--max-tokens",
            BUDGET_TOKENS,
            "--db",
        ])
        .arg(&db)
        .envs(model.env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/resume");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/resume_client.py");
    let out = dir.path().join("resume.docx");
    // The client waits for the server, answers every gate, and ends with the session.
    let mut client = None;
    for _ in 0..50 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            client = Some(
                Command::new("timeout")
                    .arg("1500")
                    .arg("python3")
                    .arg(&script)
                    .arg(&base)
                    .arg(fixtures.join("resume.txt"))
                    .arg(fixtures.join("job.txt"))
                    .arg(&out)
                    .output()
                    .unwrap(),
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = server.kill();
    let _ = server.wait();
    let client = client.expect("the server listens");
    let printed = String::from_utf8_lossy(&client.stdout).into_owned();
    assert_ne!(
        client.status.code(),
        Some(124),
        "the session hung: {printed}"
    );
    let session = printed
        .lines()
        .find_map(|line| line.strip_prefix("session "))
        .unwrap_or_else(|| panic!("no session: {printed}"))
        .to_owned();

    let store = SqliteSessionStore::open(&db).await.unwrap();
    let events = store.events_after(&session, 0).await.unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e.event["type"].as_str().unwrap_or_default())
        .collect();
    // Numbered 1, 2, ... with nothing lost.
    assert!(
        events
            .iter()
            .enumerate()
            .all(|(i, e)| e.seq == i as u64 + 1)
    );
    // It completed with its DOCX, or failed with a stated reason.
    match *kinds.last().unwrap() {
        "session_complete" => {
            assert_eq!(client.status.code(), Some(0), "{printed}");
            assert!(std::fs::read(&out).unwrap().starts_with(b"PK"));
        }
        "session_failed" => {
            let error = events
                .iter()
                .rev()
                .find(|e| e.event["type"] == "pipeline_error")
                .map(|e| e.event["error"].as_str().unwrap().to_owned())
                .unwrap_or_default();
            assert!(!error.is_empty(), "{kinds:?}");
        }
        other => panic!("the session ended with {other}: {kinds:?}"),
    }
    // The phase limits held, whatever the model tried.
    let count = |kind: &str| kinds.iter().filter(|k| **k == kind).count();
    assert!(count("questionnaire") <= 1, "{kinds:?}");
    assert!(count("question") <= 3, "{kinds:?}");
    assert!(count("progress") > 0, "{kinds:?}");
    // While it works (no gate waiting for the client), it says something every 30 s.
    let mut waiting = false;
    for pair in events.windows(2) {
        match pair[0].event["type"].as_str() {
            Some("gate_open") => waiting = true,
            Some("gate_answered") => waiting = false,
            _ => {}
        }
        let silence = (pair[1].at - pair[0].at).to_std().unwrap_or_default();
        assert!(
            waiting || silence <= Duration::from_secs(30),
            "{silence:?} without an event after {}",
            pair[0].event
        );
    }
}
