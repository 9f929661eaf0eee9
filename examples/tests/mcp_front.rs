//! The products served as MCP tools at `/mcp`, checked with the ecosystem's own clients:
//! the official MCP Python SDK optimizes a resume through `jd_optimizer serve` (a client
//! configured from docs/mcp.md alone, as a desktop assistant is), and the MCP Inspector's
//! CLI lists and calls `job_agent_chat serve`'s job tools. Both are installed by
//! `cargo xtask test` (PyPI `mcp`, npm `@modelcontextprotocol/inspector`).
#![cfg(test)]

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::examples::{jd_optimizer_server, job_chat_server, python_client};

fn pair(file: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/jd-optimizer/pairs/junior-frontend")
        .join(file)
}

#[test]
fn the_python_sdk_optimizes_a_resume_through_the_mcp_front() {
    let dir = tempfile::tempdir().unwrap();
    let server = jd_optimizer_server(&dir.path().join("jd.db"), &[]);
    let printed = python_client(
        "mcp_optimize.py",
        &[
            server.url.as_ref(),
            pair("resume.txt").as_ref(),
            pair("jd.txt").as_ref(),
        ],
    );
    assert!(printed.contains("server: jd-optimizer"), "{printed}");
    assert!(
        printed.contains("tools: optimize_resume, prepare_interview, write_cover_letter"),
        "{printed}"
    );
    assert!(
        printed.contains("optimize_resume needs: jd_text, resume_text"),
        "{printed}"
    );
    let notes: usize = printed
        .lines()
        .find_map(|line| line.strip_prefix("progress notifications: "))
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("{printed}"));
    assert!(notes >= 3, "{printed}");
    assert!(printed.contains("progress 1: session "), "{printed}");
    // The dry run's recorded answers raise this pair's score by rewriting bullets.
    let score = |line: &str| -> Vec<f64> {
        line.split(" -> ")
            .filter_map(|n| n.trim().parse().ok())
            .collect()
    };
    let scores = printed
        .lines()
        .find_map(|line| line.strip_prefix("ATS score: "))
        .map(score)
        .unwrap_or_else(|| panic!("{printed}"));
    assert!(scores.len() == 2 && scores[1] > scores[0], "{printed}");
    assert!(!printed.contains("rewritten bullets: 0"), "{printed}");
}

#[test]
fn the_mcp_front_answers_only_callers_with_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let server = jd_optimizer_server(
        &dir.path().join("jd.db"),
        &[("AGENT_API_KEYS", "sk-test-mcp:acme:ada")],
    );
    // Without the key: 401, and the client gets nothing.
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stranger","version":"1"}}}"#;
    let status = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"])
        .args(["-H", "content-type: application/json"])
        .args(["-H", "accept: application/json, text/event-stream"])
        .args(["-d", initialize])
        .arg(format!("{}/mcp", server.url))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "401");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/mcp_optimize.py");
    let refused = Command::new("python3")
        .arg(&script)
        .arg(&server.url)
        .arg(pair("resume.txt"))
        .arg(pair("jd.txt"))
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(!String::from_utf8_lossy(&refused.stdout).contains("ATS score"));
    // With it, the call is the key's tenant's.
    let printed = python_client(
        "mcp_optimize.py",
        &[
            server.url.as_ref(),
            pair("resume.txt").as_ref(),
            pair("jd.txt").as_ref(),
            "sk-test-mcp".as_ref(),
        ],
    );
    assert!(printed.contains("ATS score: "), "{printed}");
    assert!(printed.contains("tenant: acme"), "{printed}");
}

/// Runs the MCP Inspector's CLI against `url` with `args`; its JSON output.
fn inspector(url: &str, args: &[&str]) -> Value {
    let output = Command::new("mcp-inspector")
        .args(["--cli", url, "--transport", "http"])
        .args(args)
        .output()
        .expect("mcp-inspector runs (cargo xtask test installs it with npm)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn the_inspector_lists_and_calls_the_job_tools() {
    let server = job_chat_server();
    let base = server.url.trim_end_matches("/v1");
    let url = format!("{base}/mcp");
    let listed = inspector(&url, &["--method", "tools/list"]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    for expected in [
        "search_jobs",
        "save_job",
        "rank_saved_jobs",
        "prepare_application",
        "read_phase1_result",
    ] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    let search = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "search_jobs")
        .unwrap();
    assert_eq!(search["inputSchema"]["type"], "object", "{search}");

    let called = inspector(
        &url,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "search_jobs",
            "--tool-arg",
            "query=software engineer",
        ],
    );
    assert_ne!(called["isError"], true, "{called}");
    let text = called["content"][0]["text"].as_str().unwrap_or_default();
    assert!(!text.is_empty(), "{called}");

    let missing = inspector(
        &url,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "read_phase1_result",
            "--tool-arg",
            "site=acme",
        ],
    );
    assert_eq!(missing["isError"], true, "{missing}");
    assert!(
        missing["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("no Phase 1 result named \"acme\"")),
        "{missing}"
    );
}
