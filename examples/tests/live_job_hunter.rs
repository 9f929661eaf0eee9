//! `job_hunter run` live against the real small model this machine runs, its job boards
//! on a local server replaying the boards' bodies (Greenhouse, Lever, Ashby wire formats),
//! no web search, mail written as an `.eml`: the run ends by its status with its files, or
//! fails saying why. The protocol and the guards, never the model's judgement.
#![cfg(test)]

mod support;

use std::path::Path;
use std::time::Duration;
use support::examples::run_example;
use support::local_model::local_model;
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/job-hunter")
}

/// Greenhouse `northwindrobotics`, Lever `lumenhealth` and Ashby `quill-labs`; every
/// other board is a 404, as the vendors answer.
async fn job_boards() -> MockServer {
    let server = MockServer::start().await;
    for (route, body) in [
        (
            "/v1/boards/northwindrobotics/jobs",
            "greenhouse/northwindrobotics.json",
        ),
        ("/v0/postings/lumenhealth", "lever/lumenhealth.json"),
        ("/posting-api/job-board/quill-labs", "ashby/quill-labs.json"),
    ] {
        let bytes = std::fs::read(fixtures().join("ats").join(body)).unwrap();
        Mock::given(path(route))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(bytes))
            .mount(&server)
            .await;
    }
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_run_ends_by_its_status_with_its_files_or_says_why() {
    let model = local_model();
    let boards = job_boards().await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut env = model.env.clone();
    for (name, value) in [
        ("GREENHOUSE_API_BASE", boards.uri()),
        ("LEVER_API_BASE", boards.uri()),
        ("ASHBY_API_BASE", boards.uri()),
        (
            "JH_CHECKPOINT_DIR",
            dir.path().join("cp").display().to_string(),
        ),
        ("JH_MAX_COMPANIES", "2".into()),
        ("JH_MAX_JOBS", "1".into()),
        ("JH_SCORE_BATCH_SIZE", "2".into()),
        ("JH_MAX_CONCURRENCY", "2".into()),
        ("JH_HOST_INTERVAL_MS", "0".into()),
        ("JH_AGENT_TIMEOUT_SECONDS", "600".into()),
        ("BRAVE_API_KEY", String::new()),
        ("SMTP_URL", String::new()),
    ] {
        env.push((name.to_owned(), value));
    }
    let resume = fixtures().join("resume.txt");
    let prefs =
        "Backend engineering roles, remote within Europe, at Northwind Robotics or Quill Labs.";
    let args: Vec<String> = [
        "run",
        "--resume",
        resume.to_str().unwrap(),
        "--prefs",
        prefs,
        "--output-dir",
        out.to_str().unwrap(),
        "--run-id",
        "live",
    ]
    .map(String::from)
    .to_vec();
    let run = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_example("job_hunter", &args, &env, Duration::from_secs(900))
    })
    .await
    .unwrap();
    let printed = format!("{}\n{}", run.stdout, run.stderr);
    // The banner names the model that serves, read from the server.
    assert!(run.stdout.contains(model.model_id()), "{printed}");
    assert!(run.stdout.contains("Run live: "), "{printed}");
    match run.code {
        // Success, or partial (a limit): the files are written from what was gathered.
        Some(0) | Some(3) => {
            let names: Vec<String> = std::fs::read_dir(&out)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            for ext in [".csv", ".xlsx", ".eml"] {
                assert!(
                    names.iter().any(|n| n.ends_with(ext)),
                    "{names:?}\n{printed}"
                );
            }
            // The jobs' CSV reads back with its header (beside the companies' report).
            let headers: Vec<String> = names
                .iter()
                .filter(|n| n.ends_with(".csv"))
                .map(|n| {
                    let text = std::fs::read_to_string(out.join(n)).unwrap();
                    text.lines().next().unwrap_or_default().to_lowercase()
                })
                .collect();
            assert!(
                headers.iter().any(|h| h.contains("title")),
                "{headers:?}\n{printed}"
            );
        }
        // Failed: it says why.
        Some(1) => assert!(run.stdout.contains("reason: "), "{printed}"),
        other => panic!("exit {other:?}: {printed}"),
    }
    // An unpriced local model: its cost is reported as unknown, with the stand-in limit.
    assert!(
        run.stdout.contains("cost unknown (no price for"),
        "{printed}"
    );
}
