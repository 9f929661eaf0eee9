//! The `job_hunter` example as a user runs it: `fetch-board` against a local server
//! replaying real job-board bodies, and `run --dry-run` with its first line, files and
//! exit codes (0 success, 3 partial, 1 failed).
#![cfg(test)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The example binary `cargo test` builds beside the test binaries.
fn binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(Path::parent).unwrap();
    let binary = dir.join("examples").join("job_hunter");
    assert!(
        binary.exists(),
        "{} is missing: run `cargo test --workspace` (which builds the examples) or `cargo build -p examples --examples`",
        binary.display()
    );
    binary
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn realdata(file: &str) -> Vec<u8> {
    let path = workspace().join("../shared/realdata/ats/hunt").join(file);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; the recorded bodies of ../shared/realdata must sit beside the checkout",
            path.display()
        )
    })
}

async fn run(args: Vec<String>, env: Vec<(&'static str, String)>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(binary())
            .args(args)
            .envs(env)
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("SMTP_URL")
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn fetch_board_prints_every_job_of_real_board_bodies() {
    let server = MockServer::start().await;
    for (route, file) in [
        ("/v1/boards/vercel/jobs", "greenhouse.json"),
        ("/v0/postings/spotify", "lever.json"),
        ("/posting-api/job-board/linear", "ashby.json"),
    ] {
        Mock::given(path(route))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(realdata(file)))
            .mount(&server)
            .await;
    }
    for (url, file, source) in [
        (
            "https://boards.greenhouse.io/vercel",
            "greenhouse.json",
            "greenhouse",
        ),
        ("https://jobs.lever.co/spotify", "lever.json", "lever"),
        ("https://jobs.ashbyhq.com/linear", "ashby.json", "ashby"),
    ] {
        let env = ["GREENHOUSE_API_BASE", "LEVER_API_BASE", "ASHBY_API_BASE"]
            .map(|name| (name, server.uri()))
            .to_vec();
        let out = run(vec!["fetch-board".into(), url.into()], env).await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let jobs: Vec<Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        // Every job of the recorded body, with its title, in order.
        let body: Value = serde_json::from_slice(&realdata(file)).unwrap();
        let titles: Vec<&str> = match source {
            "greenhouse" => body["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|j| j["title"].as_str().unwrap())
                .collect(),
            "lever" => body
                .as_array()
                .unwrap()
                .iter()
                .map(|j| j["text"].as_str().unwrap())
                .collect(),
            _ => body["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|j| j["title"].as_str().unwrap())
                .collect(),
        };
        let printed: Vec<&str> = jobs.iter().map(|j| j["title"].as_str().unwrap()).collect();
        assert_eq!(printed, titles, "{url}");
        assert!(
            jobs.iter()
                .all(|j| j["source"] == source && !j["url"].as_str().unwrap().is_empty())
        );
    }

    let out = run(
        vec!["fetch-board".into(), "https://example.com/careers".into()],
        Vec::new(),
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("is not a Greenhouse, Lever, Ashby or Workday job board URL")
    );
}

fn dry_run_args(dir: &Path, run_id: &str) -> Vec<String> {
    let resume = workspace().join("fixtures/job-hunter/resume.txt");
    // The preferences the recorded answers were made from: every value the recorded
    // extraction gives is grounded in this text.
    let prefs = std::fs::read_to_string(workspace().join("fixtures/job-hunter/prefs.txt")).unwrap();
    [
        "run",
        "--dry-run",
        "--resume",
        resume.to_str().unwrap(),
        "--prefs",
        prefs.trim(),
        "--output-dir",
        dir.to_str().unwrap(),
        "--run-id",
        run_id,
    ]
    .map(String::from)
    .to_vec()
}

/// The README's main job, word for word: the exclusions it states are kept and
/// reported, no preference is dropped.
#[tokio::test(flavor = "multi_thread")]
async fn the_readme_main_job_keeps_what_the_user_said() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let prefs = readme
        .split("--prefs \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the README's main job passes --prefs");
    assert!(prefs.contains("no crypto or gambling"), "{prefs}");
    let dir = tempfile::tempdir().unwrap();
    let mut args = dry_run_args(dir.path(), "readme");
    let at = args.iter().position(|a| a == "--prefs").unwrap();
    args[at + 1] = prefs.to_owned();
    let checkpoints = (
        "JH_CHECKPOINT_DIR",
        dir.path().join("cp").display().to_string(),
    );
    let out = run(args, vec![checkpoints]).await;
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("exclusions:\n    industry \"crypto\": ")
            && stdout.contains("    industry \"gambling\": "),
        "{stdout}"
    );
    assert!(
        !stdout.contains("dropped values") && !stderr.contains("dropped values"),
        "{stdout}{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dry_run_says_so_writes_its_files_and_exits_by_status() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoints = (
        "JH_CHECKPOINT_DIR",
        dir.path().join("cp").display().to_string(),
    );

    let out = run(
        dry_run_args(dir.path(), "cli-ok"),
        vec![checkpoints.clone()],
    )
    .await;
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.lines().next().unwrap().starts_with("DRY RUN:"),
        "{stdout}"
    );
    assert!(stdout.contains("Run cli-ok: SUCCESS"));
    // 52 jobs fetched; 2 duplicates and those the search rules out (by title, place or
    // pay) cut before any model reads them, 3 more once read (on site elsewhere): 20
    // scored.
    assert!(
        stdout.contains("jobs: 52 fetched, 20 kept, 32 cut (2 duplicates,"),
        "{stdout}"
    );
    assert!(
        stdout.contains("1 paying under the minimum asked"),
        "{stdout}"
    );
    assert!(stdout.contains("20 scored"), "{stdout}");
    assert!(
        stdout.contains("critical path: 8 sequential waves"),
        "{stdout}"
    );
    // What it cost, per job fetched, with the share of input a repeated prefix.
    let cost = stdout
        .lines()
        .find(|line| line.trim_start().starts_with("cost: "))
        .unwrap_or_else(|| panic!("no cost line: {stdout}"));
    assert!(
        cost.contains("of input a repeated prefix") && cost.contains("per job fetched"),
        "{cost}"
    );
    for file in [
        "cli-ok-jobs.csv",
        "cli-ok-jobs.xlsx",
        "cli-ok-companies.csv",
    ] {
        assert!(dir.path().join(file).exists(), "{file}");
    }

    // A cost limit the run passes mid-way: partial, exit code 3.
    let mut args = dry_run_args(dir.path(), "cli-partial");
    args.extend(["--max-cost".into(), "0.05".into()]);
    let out = run(args, vec![checkpoints.clone()]).await;
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("PARTIAL"));

    // An unreadable resume: failed, exit code 1, the reason names the file.
    let mut args = dry_run_args(dir.path(), "cli-failed");
    args[3] = dir.path().join("missing.pdf").display().to_string();
    let out = run(args, vec![checkpoints]).await;
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("FAILED") && stdout.contains("missing.pdf"),
        "{stdout}"
    );
}

/// `--log-format json` writes every log line as one JSON object, with its level, target,
/// fields and the spans it was written in.
#[tokio::test(flavor = "multi_thread")]
async fn log_format_json_writes_one_object_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = dry_run_args(dir.path(), "json-logs");
    args.extend(["--log-format".into(), "json".into()]);
    let env = vec![
        (
            "JH_CHECKPOINT_DIR",
            dir.path().join("cp").display().to_string(),
        ),
        ("RUST_LOG", "info".to_owned()),
    ];
    let out = run(args, env).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    assert!(lines.len() > 5, "{stderr}");
    for line in &lines {
        assert!(
            line["timestamp"].is_string() && line["level"].is_string(),
            "{line}"
        );
        assert!(
            line["fields"].is_object() && line["target"].is_string(),
            "{line}"
        );
    }
    // Lines written in a span carry it.
    assert!(
        lines
            .iter()
            .any(|line| line["spans"].as_array().is_some_and(|s| !s.is_empty())),
        "{stderr}"
    );
}
