//! `page_explorer explore` live against the real small model this machine runs (see
//! `support::local_model`), on both fixture boards, bounded by its own limits (actions,
//! pages, seconds, a token budget) and a test deadline. It asserts the protocol and the
//! guards, never the model's judgement: the run ends with success or a typed reason, the
//! Phase 1 JSON is readable, the Explorer acted before its `done` was taken (or the output
//! says why it stopped), and every selector reported is one that was checked and observed.
#![cfg(test)]

mod support;

use std::time::Duration;

use serde_json::Value;
use support::examples::run_example;
use support::local_model::local_model;

/// The stop kinds the explorer reports (`ExploreStop::kind`).
const KINDS: [&str; 7] = [
    "cancelled",
    "breaker",
    "cost_limit",
    "model_failed",
    "out_of_rounds",
    "unreadable",
    "done_refused",
];

fn explore_live(site: &str) {
    let model = local_model();
    let out = tempfile::tempdir().unwrap();
    let run = run_example(
        "page_explorer",
        &[
            "explore",
            &format!("fixtures/sites/{site}"),
            "--out",
            out.path().to_str().unwrap(),
            "--max-actions",
            "4",
            "--max-pages",
            "3",
            "--max-seconds",
            "70",
            "--max-tokens",
            "40000",
            "--budget",
            "1500",
        ],
        &model.env,
        Duration::from_secs(115),
    );
    let said = format!("{}\n{}", run.stdout, run.stderr);
    // Success, or exit 3 with a typed reason; never an error.
    assert!(matches!(run.code, Some(0 | 3)), "{said}");
    assert!(run.stdout.starts_with("LIVE: "), "{said}");
    let phase1: Value =
        serde_json::from_slice(&std::fs::read(out.path().join("phase1.json")).unwrap())
            .unwrap_or_else(|e| panic!("phase1.json: {e}\n{said}"));
    assert!(phase1["pageType"].is_string(), "{phase1}");
    if run.code == Some(3) {
        let kind = phase1["stopKind"]
            .as_str()
            .unwrap_or_else(|| panic!("{phase1}"));
        assert!(KINDS.contains(&kind), "{phase1}");
        assert!(phase1["stopped"].as_str().is_some_and(|s| !s.is_empty()));
    } else {
        // Done was taken only after acting: the finish line counts the actions.
        let finished = run
            .stdout
            .lines()
            .find(|l| l.contains("✔ finished"))
            .unwrap_or_else(|| panic!("{said}"));
        assert!(!finished.contains(" 0 action(s)"), "{finished}");
    }
    // Every key selector reported was checked and observed (or came from an action the
    // ChangeAnalyzer saw); nothing unverified is among them.
    let checks = phase1["selectorChecks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let unverified: Vec<&str> = phase1["unverified"]
        .as_array()
        .map(|u| u.iter().filter_map(|v| v["value"].as_str()).collect())
        .unwrap_or_default();
    let memory = std::fs::read_to_string(out.path().join("memory.json")).unwrap();
    let keys = &phase1["keyElements"];
    let mut reported: Vec<&str> = ["filterButton", "applyButton", "searchInput", "pagination"]
        .iter()
        .filter_map(|k| keys[k].as_str())
        .collect();
    reported.extend(
        keys["jobListings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str),
    );
    for selector in reported {
        assert!(!unverified.contains(&selector), "{selector}: {phase1}");
        let checked = checks.iter().any(|c| {
            c["selector"] == selector
                && (c["matches"].as_i64().unwrap_or(0) > 0 || c["actedOn"] == true)
        });
        let acted = memory.contains(&serde_json::to_string(selector).unwrap());
        assert!(checked || acted, "{selector} was never observed: {phase1}");
    }
    // Behaviours come only from actions the run saw.
    if phase1["behaviors"]
        .as_object()
        .is_some_and(|b| !b.is_empty())
    {
        assert!(!run.stdout.contains(" 0 action(s)"), "{said}");
    }
}

#[test]
fn board_spa_explored_live_within_its_limits() {
    explore_live("board-spa");
}

#[test]
fn board_pages_explored_live_within_its_limits() {
    explore_live("board-pages");
}
