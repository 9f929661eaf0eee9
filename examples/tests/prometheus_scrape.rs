//! The real Prometheus server scrapes a dry-run server's `GET /metrics` while a session
//! runs to its end, and finds what the session did: its model calls, tokens and cost by
//! product, model and tier, its tool calls, its gates' waits, its events; `promtool check
//! metrics` finds nothing to complain about in what the server serves.
//!
//! Needs `prometheus` and `promtool` on the PATH (`cargo xtask test` installs Debian's
//! `prometheus` package).
#![cfg(test)]

mod support;

use std::io::Write as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::examples::{complete_resume_session, resume_server};

/// A Prometheus server, killed on drop.
struct Prometheus {
    child: Child,
    url: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Prometheus scraping `target` (`host:port`) every second, its data in `dir`.
fn prometheus(dir: &Path, target: &str) -> Prometheus {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: resume\n    metrics_path: /metrics\n    \
             static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus runs (cargo xtask test installs it)");
    Prometheus {
        child,
        url: format!("http://127.0.0.1:{port}"),
    }
}

/// The samples of an instant query, as (labels, value).
async fn query(prometheus: &Prometheus, promql: &str) -> Vec<(Value, f64)> {
    let answer: Value = match reqwest::Client::new()
        .get(format!("{}/api/v1/query", prometheus.url))
        .query(&[("query", promql)])
        .send()
        .await
    {
        Ok(response) => response.json().await.unwrap_or(Value::Null),
        // Prometheus is still starting.
        Err(_) => return Vec::new(),
    };
    answer["data"]["result"]
        .as_array()
        .map(|samples| {
            samples
                .iter()
                .map(|sample| {
                    let value = sample["value"][1].as_str().unwrap_or("nan");
                    (sample["metric"].clone(), value.parse().unwrap_or(f64::NAN))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until `promql` answers samples `accept` takes; panics after 60 s.
async fn eventually(
    prometheus: &Prometheus,
    promql: &str,
    accept: impl Fn(&[(Value, f64)]) -> bool,
) -> Vec<(Value, f64)> {
    let started = Instant::now();
    loop {
        let samples = query(prometheus, promql).await;
        if accept(&samples) {
            return samples;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{promql}: still {samples:?} after 60 s"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn prometheus_scrapes_what_a_dry_run_session_did() {
    let dir = tempfile::tempdir().unwrap();
    let server = resume_server(&dir.path().join("sessions.db"));
    let target = server.url.trim_start_matches("http://").to_owned();
    let prometheus = prometheus(dir.path(), &target);
    eventually(&prometheus, "up{job=\"resume\"}", |samples| {
        samples.iter().any(|(_, value)| *value == 1.0)
    })
    .await;

    let url = server.url.clone();
    let out = dir.path().join("resume.docx");
    let printed = tokio::task::spawn_blocking(move || complete_resume_session(&url, &out))
        .await
        .unwrap();
    assert!(printed.contains("session_complete"), "{printed}");

    let ended = eventually(&prometheus, "agent_sessions_ended_total", |samples| {
        !samples.is_empty()
    })
    .await;
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert_eq!(ended[0].0["product"], "resume");
    assert_eq!(ended[0].0["status"], "complete");
    assert_eq!(ended[0].1, 1.0);

    // Every model call is counted under its product, model and tier.
    let calls = query(&prometheus, "agent_model_calls_total").await;
    assert!(!calls.is_empty());
    for (labels, count) in &calls {
        assert_eq!(labels["product"], "resume", "{labels}");
        let (model, tier) = (
            labels["model"].as_str().unwrap(),
            labels["tier"].as_str().unwrap(),
        );
        // The dry run names each tier's model after it.
        assert_eq!(model, format!("dry-run-{tier}"), "{labels}");
        assert!(*count >= 1.0);
    }
    let input = query(&prometheus, "sum(agent_model_tokens_total{kind=\"input\"})").await;
    assert!(input[0].1 > 0.0, "{input:?}");
    let cost = query(&prometheus, "agent_model_cost_usd").await;
    assert!(
        !cost.is_empty(),
        "the cost is reported (0 USD: the dry run is free)"
    );

    let tools = query(&prometheus, "sum by (outcome) (agent_tool_calls_total)").await;
    assert!(
        tools
            .iter()
            .any(|(labels, n)| labels["outcome"] == "ok" && *n > 0.0),
        "{tools:?}"
    );
    let waits = query(
        &prometheus,
        "sum(agent_gate_wait_seconds_count{outcome=\"answered\"})",
    )
    .await;
    assert!(waits[0].1 >= 1.0, "{waits:?}");
    let waiting = query(&prometheus, "sum(agent_gates_waiting)").await;
    assert_eq!(waiting[0].1, 0.0, "no gate waits once the session ended");
    let events = query(
        &prometheus,
        "agent_session_events_total{product=\"resume\"}",
    )
    .await;
    assert!(events[0].1 > 10.0, "{events:?}");
    let started = query(
        &prometheus,
        "agent_sessions_started_total{product=\"resume\"}",
    )
    .await;
    assert_eq!(started[0].1, 1.0);
    // The session's run was counted while it lasted: the scrape that saw it ended saw it
    // no longer running (the two change together).
    let running = query(&prometheus, "agent_sessions_running{product=\"resume\"}").await;
    assert_eq!(running.len(), 1, "{running:?}");
    assert_eq!(running[0].1, 0.0, "{running:?}");
    // So was its SSE client, which may have read the last event a moment before the
    // server's stream ended, a scrape falling in between.
    eventually(
        &prometheus,
        "agent_sse_clients{product=\"resume\"}",
        |now| now.len() == 1 && now[0].1 == 0.0,
    )
    .await;

    // What the server serves passes Prometheus's own linter.
    let exposition = reqwest::get(format!("{}/metrics", server.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs (cargo xtask test installs it)");
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(exposition.as_bytes())
        .unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert!(
        checked.status.success() && checked.stdout.is_empty() && checked.stderr.is_empty(),
        "promtool: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
}
