//! The `page_explorer` example as a user runs it, in real headless Chromium on the fixture
//! sites: `explore --dry-run` writes the Phase 1 output, the graph and screenshots; `collect
//! --phase1` reads that output and collects every job once; `observe` prints the page as the
//! model sees it; no provider and no `--dry-run` is a clear error.
#![cfg(test)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn site(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/sites")
        .join(name)
        .display()
        .to_string()
}

async fn run(args: Vec<String>) -> Output {
    run_in(Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf(), args).await
}

/// Runs the example in `dir` as its current directory.
async fn run_in(dir: PathBuf, args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(support::examples::example("page_explorer"))
            .current_dir(dir)
            .args(args)
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Explores `name` with its recording, then collects with the Phase 1 output; returns the
/// explore output, the Phase 1 output and the jobs.
async fn explore_then_collect(name: &str, extra: &[&str]) -> (String, Value, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("explore");
    let explored = run(args(&[
        "explore",
        &site(name),
        "--dry-run",
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    let stdout = text(&explored.stdout);
    assert_eq!(
        explored.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&explored.stderr)
    );
    let phase1: Value =
        serde_json::from_slice(&std::fs::read(out.join("phase1.json")).unwrap()).unwrap();
    let graph = std::fs::read_to_string(out.join("graph.mmd")).unwrap();
    assert!(graph.starts_with("flowchart LR\n"), "{graph}");
    let shots: Vec<_> = std::fs::read_dir(out.join("screenshots"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(shots.len(), phase1["pages"].as_array().unwrap().len());
    for shot in shots {
        assert!(
            std::fs::read(&shot).unwrap().starts_with(b"\x89PNG"),
            "{}",
            shot.display()
        );
    }

    let jobs_dir = dir.path().join("jobs");
    let phase1_path = out.join("phase1.json");
    let mut collect = args(&[
        "collect",
        &site(name),
        "--phase1",
        phase1_path.to_str().unwrap(),
        "--out",
        jobs_dir.to_str().unwrap(),
    ]);
    collect.extend(extra.iter().map(|a| (*a).to_owned()));
    let collected = run(collect).await;
    assert_eq!(
        collected.status.code(),
        Some(0),
        "{}\n{}",
        text(&collected.stdout),
        text(&collected.stderr)
    );
    let jobs: Vec<Value> =
        serde_json::from_slice(&std::fs::read(jobs_dir.join("jobs.json")).unwrap()).unwrap();
    let csv = std::fs::read_to_string(jobs_dir.join("jobs.csv")).unwrap();
    assert_eq!(csv.lines().count(), jobs.len() + 1, "{csv}");
    (stdout, phase1, jobs)
}

/// Every job has a company, and a title that does not carry it (spec 002's `JobData`,
/// read without a model).
fn assert_titles_apart_from_companies(jobs: &[Value]) {
    for job in jobs {
        let company = job["company"].as_str();
        let title = job["title"].as_str().unwrap();
        assert!(company.is_some_and(|c| !c.is_empty()), "{job:#}");
        let company = company.unwrap_or_default();
        assert!(
            !title.contains(&format!(" — {company}")) && !title.contains(&format!(" at {company}")),
            "{job:#}"
        );
    }
}

fn titles(jobs: &[Value]) -> Vec<String> {
    let mut titles: Vec<String> = jobs
        .iter()
        .map(|j| j["title"].as_str().unwrap().to_owned())
        .collect();
    titles.sort();
    titles
}

#[tokio::test(flavor = "multi_thread")]
async fn board_pages_explored_then_every_job_collected_once() {
    let (report, phase1, jobs) = explore_then_collect("board-pages", &[]).await;
    assert!(
        report.starts_with("dry run: model answers from "),
        "{report}"
    );
    assert!(report.contains("◆ new page [job_details]"), "{report}");
    assert!(report.contains("◆ same page [job_search]"), "{report}");
    assert!(
        report.contains("✔ finished: job_search; 2 page(s), 3 action(s)"),
        "{report}"
    );
    assert_eq!(phase1["pageType"], "job_search");
    assert_eq!(
        phase1["keyElements"]["jobListings"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(jobs.len(), 12, "{jobs:#?}");
    let mut unique = titles(&jobs);
    unique.dedup();
    assert_eq!(unique.len(), 12);
    assert!(
        jobs.iter()
            .all(|j| j["applyUrl"].as_str().unwrap().starts_with("mailto:")),
        "{jobs:#?}"
    );
    // The job's own page beside its apply link.
    assert!(
        jobs.iter()
            .all(|j| j["url"].as_str().unwrap().contains("/jobs/")),
        "{jobs:#?}"
    );
    assert_titles_apart_from_companies(&jobs);
}

#[tokio::test(flavor = "multi_thread")]
async fn board_spa_explored_then_every_job_collected_through_the_panel() {
    let (report, phase1, jobs) = explore_then_collect("board-spa", &[]).await;
    assert!(
        report.contains("↳ filter_button: opens the filter dialog [modal_opened]"),
        "{report}"
    );
    assert!(
        report.contains("★ filter level: Senior, Junior"),
        "{report}"
    );
    assert_eq!(phase1["keyElements"]["filterButton"], "#open-filters");
    assert_eq!(phase1["behaviors"]["job_listing"]["confirmed"], true);
    assert_eq!(jobs.len(), 12, "{jobs:#?}");
    let mut unique = titles(&jobs);
    unique.dedup();
    assert_eq!(unique.len(), 12);
    assert!(
        jobs.iter()
            .all(|j| j["applyUrl"].as_str().unwrap().contains("#apply-")),
        "{jobs:#?}"
    );
    // The listing reads "Rust Engineer — Acme", the panel "Rust Engineer at Acme":
    // without a model, the title and the company are told apart, and the panel's words
    // give the description; a listing without a link has no page of its own (null).
    assert_titles_apart_from_companies(&jobs);
    let rust = jobs.iter().find(|j| j["title"] == "Rust Engineer").unwrap();
    assert_eq!(rust["company"], "Acme");
    assert_eq!(rust["description"], "Build the billing platform in Rust.");
    assert_eq!(rust["url"], Value::Null);
    assert_eq!(rust["location"], Value::Null);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_extractor_splits_title_and_company_from_the_panel_text() {
    let (_, _, jobs) = explore_then_collect("board-spa", &["--extract", "--dry-run"]).await;
    assert_eq!(jobs.len(), 12);
    let first = &jobs[0];
    assert_eq!(first["title"], "Rust Engineer");
    assert_eq!(first["company"], "Acme");
    assert_eq!(first["applyType"], "easy_apply");
    assert_eq!(first["description"], "Build the billing platform in Rust.");
    assert!(
        jobs.iter()
            .all(|j| !j["company"].as_str().unwrap().is_empty()),
        "{jobs:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn observe_prints_the_page_as_the_model_sees_it() {
    let seen = run(args(&["observe", &site("board-spa")])).await;
    assert_eq!(seen.status.code(), Some(0), "{}", text(&seen.stderr));
    let page = text(&seen.stdout);
    assert!(
        page.starts_with("Page: Job Board\nURL: http://127.0.0.1:"),
        "{page}"
    );
    assert!(
        page.contains("[CLICK: \"#open-filters\"] button \"Filters\""),
        "{page}"
    );
    assert!(page.contains("[TYPE: \"#search\"] searchbox"), "{page}");
}

#[tokio::test(flavor = "multi_thread")]
async fn exploring_without_a_provider_says_what_to_do() {
    let failed = run(args(&["explore", &site("board-spa")])).await;
    assert_eq!(failed.status.code(), Some(1));
    let stderr = text(&failed.stderr);
    assert!(stderr.contains("no LLM provider is configured"), "{stderr}");
    assert!(stderr.contains("--dry-run"), "{stderr}");
    let missing = run(args(&[
        "collect",
        &site("board-spa"),
        "--phase1",
        "/nonexistent/phase1.json",
    ]))
    .await;
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing.stderr).contains("/nonexistent/phase1.json"),
        "{}",
        text(&missing.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn fixtures_are_found_from_the_current_directory_and_its_parents_not_the_build_clone() {
    // From a directory inside the workspace, relative fixture paths resolve upwards.
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = tempfile::tempdir().unwrap();
    let explored = run_in(
        workspace.join("crates"),
        args(&[
            "explore",
            "fixtures/sites/board-spa",
            "--dry-run",
            "--out",
            out.path().to_str().unwrap(),
        ]),
    )
    .await;
    let stdout = text(&explored.stdout);
    assert_eq!(
        explored.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&explored.stderr)
    );
    let recording = workspace
        .join("crates/../fixtures/page-explorer/dry-run/board-spa.json")
        .canonicalize()
        .unwrap();
    let said = stdout
        .lines()
        .find_map(|l| l.strip_prefix("dry run: model answers from "))
        .unwrap();
    assert_eq!(
        Path::new(said).canonicalize().unwrap(),
        recording,
        "{stdout}"
    );

    // Outside any clone, the recording is not found, and the error says where it looked.
    let elsewhere = tempfile::tempdir().unwrap();
    let lost = run_in(
        elsewhere.path().to_path_buf(),
        args(&["explore", &site("board-spa"), "--dry-run"]),
    )
    .await;
    assert_eq!(lost.status.code(), Some(1));
    let stderr = text(&lost.stderr);
    assert!(
        stderr.contains("fixtures/page-explorer/dry-run/board-spa.json was not found"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&elsewhere.path().join("fixtures").display().to_string()),
        "{stderr}"
    );
    // A relative site that exists nowhere up the tree is named too.
    let no_site = run_in(
        elsewhere.path().to_path_buf(),
        args(&["observe", "fixtures/sites/board-spa"]),
    )
    .await;
    assert_eq!(no_site.status.code(), Some(1));
    let stderr = text(&no_site.stderr);
    assert!(
        stderr.contains("fixtures/sites/board-spa was not found"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn collect_searches_first_when_asked() {
    let (_, _, jobs) =
        explore_then_collect("board-spa", &["--search", "rust", "--no-details"]).await;
    let titles = titles(&jobs);
    assert_eq!(titles, ["Embedded Engineer", "Rust Engineer"], "{jobs:#?}");
    assert_titles_apart_from_companies(&jobs);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_finished_collection_resumed_is_written_again_without_browsing_anew() {
    let dir = tempfile::tempdir().unwrap();
    let phase1 = dir.path().join("phase1.json");
    std::fs::write(
        &phase1,
        serde_json::json!({
            "pageType": "job_search",
            "keyElements": {},
            "understanding": "A paged list of jobs.",
            "listing": { "item": "li.job", "title": "a", "link": "a" },
        })
        .to_string(),
    )
    .unwrap();
    let out = dir.path().join("jobs");
    let collect = |resume: bool| {
        let mut list = args(&[
            "collect",
            &site("board-pages"),
            "--phase1",
            phase1.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--no-details",
        ]);
        if resume {
            list.push("--resume".into());
        }
        list
    };
    let first = run(collect(false)).await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert!(out.join("checkpoints").is_dir());
    std::fs::remove_file(out.join("jobs.json")).unwrap();
    let again = run(collect(true)).await;
    let stdout = text(&again.stdout);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&again.stderr)
    );
    assert!(
        stdout.contains("resumed:    12 job(s) from the checkpoint"),
        "{stdout}"
    );
    let jobs: Vec<Value> =
        serde_json::from_slice(&std::fs::read(out.join("jobs.json")).unwrap()).unwrap();
    assert_eq!(jobs.len(), 12);
}
