//! Phase 1 survives a kill -9: `page_explorer explore --dry-run` on a fixture board is
//! killed with SIGKILL in the middle of exploring, started again with the same `--run-id`,
//! and finishes with the same Phase 1 output as an uninterrupted run, every model answer
//! given before the kill taken from the run's journal: no model call is made twice beyond
//! the one in flight.
#![cfg(test)]

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

fn explore(site: &str, out: &Path, run_id: &str, latency_ms: u64) -> Command {
    let site = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/sites")
        .join(site);
    let mut command = Command::new(support::examples::example("page_explorer"));
    command
        .args(["explore", site.to_str().unwrap(), "--dry-run"])
        .args(["--out", out.to_str().unwrap(), "--run-id", run_id])
        .args(["--latency", &latency_ms.to_string()])
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env("RUST_LOG", "warn,agent_llm::testing::recorded=info");
    command
}

/// How many answers the recorded model gave (each is logged once, when given).
fn answers_given(stderr: &str) -> usize {
    stderr.matches("recorded model answer").count()
}

/// The Phase 1 output without what differs between two runs (the loopback port).
fn phase1(out: &Path) -> Value {
    let text = std::fs::read_to_string(out.join("phase1.json")).unwrap();
    let mut phase1: Value = serde_json::from_str(&text).unwrap();
    phase1["startUrl"] = Value::Null;
    for page in phase1["pages"].as_array_mut().unwrap() {
        page["urls"] = Value::Null;
    }
    for check in phase1["selectorChecks"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        check["url"] = Value::Null;
    }
    phase1
}

#[test]
fn explore_killed_mid_phase_1_resumes_with_no_model_call_repeated() {
    let dir = tempfile::tempdir().unwrap();

    // The reference: the same board explored without interruption.
    let whole_out = dir.path().join("whole");
    let whole = explore("board-spa", &whole_out, "whole", 0)
        .output()
        .unwrap();
    assert_eq!(
        whole.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let total = answers_given(&String::from_utf8_lossy(&whole.stderr));
    assert!(total >= 10, "board-spa takes {total} model answers");

    // Killed after the third browser action, with the model slow enough that exploring is
    // well under way and not finished.
    let out = dir.path().join("killed");
    let stderr_path = dir.path().join("first.stderr");
    let mut first = explore("board-spa", &out, "board-1", 400)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let mut actions = 0;
    for line in BufReader::new(first.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.trim_start().starts_with("3. ") {
            actions = 3;
            break;
        }
    }
    assert_eq!(actions, 3, "the first run never reached its third action");
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    let before_kill = answers_given(&std::fs::read_to_string(&stderr_path).unwrap());
    assert!(
        before_kill > 0 && before_kill < total,
        "killed mid-run: {before_kill} of {total} answers given"
    );
    assert!(!out.join("phase1.json").exists(), "the first run finished");

    // Started again with the same run id: it finishes, answering from the journal first.
    let second = explore("board-spa", &out, "board-1", 0).output().unwrap();
    let stdout = String::from_utf8_lossy(&second.stdout);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(0), "{stdout}\n{stderr}");
    let after_restart = answers_given(&stderr);
    assert!(
        before_kill + after_restart <= total + 1,
        "{before_kill} answers before the kill and {after_restart} after it, of {total}: \
         a call was made twice beyond the one in flight"
    );
    assert!(
        stdout.contains(&format!(
            "({before_kill} replayed from the interrupted run's journal)"
        )),
        "{stdout}"
    );
    assert_eq!(phase1(&out), phase1(&whole_out));

    // Once more: the run has finished, nothing is explored and no model is asked.
    let third = explore("board-spa", &out, "board-1", 0).output().unwrap();
    let stdout = String::from_utf8_lossy(&third.stdout);
    assert_eq!(third.status.code(), Some(0), "{stdout}");
    assert_eq!(answers_given(&String::from_utf8_lossy(&third.stderr)), 0);
    assert!(stdout.contains("the run had finished"), "{stdout}");
    assert_eq!(phase1(&out), phase1(&whole_out));
}
