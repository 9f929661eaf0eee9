//! Load on the resume product's deployments: one `resume_server` on SQLite against two
//! `resume_server --backend postgres+nats` instances on one PostgreSQL and NATS.
//!
//! ```text
//! cargo build --release -p examples --example resume_server --example load_bench
//! target/release/examples/load_bench [--sessions 1000] [--deployment both|sqlite|two-instances]
//! ```
//!
//! Each session is a client doing what a user's browser does: `POST /api/resume/start`,
//! then the session's SSE stream, read until the pipeline stops at its first gate
//! (`gate_open`, the dry run's research validation). All clients start at once, so with
//! `--sessions 1000` there are 1,000 concurrent SSE clients. On the two-instance
//! deployment sessions are started round-robin and every stream is read from the
//! *other* instance than the one the session was started on, so every event crosses
//! NATS. Printed, as `name value unit` lines and a Markdown row:
//!
//! - `sessions_per_s`: sessions started (201 received) per second of the start burst;
//! - `events_per_s`: events delivered to clients per second, first start to last gate;
//! - `first_event_ms{p50,p99}`: from sending the start request to the first event read.
//!
//! Needs the servers `cargo xtask setup` starts (`POSTGRES_URL`, `NATS_URL`). The
//! two-instance deployment runs in a PostgreSQL schema and under a NATS prefix of its
//! own, both removed at the end. Figures are in `docs/BENCHMARKS.md`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_backends::{JetStreamRunQueue, NatsCoordination};
use agent_server::testing::SseReader;
use anyhow::{Context, bail};
use clap::Parser;
use serde_json::{Value, json};

#[derive(Parser)]
#[command(about = "Sessions/s, events/s and start-to-first-event latency: SQLite vs two instances")]
struct Args {
    /// Sessions started at once (each with its own SSE client).
    #[arg(long, default_value_t = 1000)]
    sessions: usize,
    /// Which deployment: sqlite, two-instances or both.
    #[arg(long, default_value = "both")]
    deployment: String,
    /// The resume dry run's fixtures.
    #[arg(long, default_value = "fixtures/resume")]
    fixtures: PathBuf,
    /// How long one client may wait for its session's first gate, in seconds.
    #[arg(long, default_value_t = 300)]
    patience: u64,
    /// The `resume_server` binary to load (default: the one built beside this bench), so
    /// one sitting can measure another build side by side.
    #[arg(long)]
    server: Option<PathBuf>,
}

/// A server process, killed on drop.
struct Server {
    child: Child,
    url: String,
}

/// What the kernel says a process has used so far.
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    /// User and system CPU time, in seconds.
    cpu_s: f64,
    /// Resident memory, in KiB.
    rss_kib: f64,
}

impl std::ops::Add for Usage {
    type Output = Usage;
    fn add(self, other: Usage) -> Usage {
        Usage {
            cpu_s: self.cpu_s + other.cpu_s,
            rss_kib: self.rss_kib + other.rss_kib,
        }
    }
}

impl Server {
    /// The process's CPU time (`/proc/<pid>/stat`, at 100 ticks a second) and resident
    /// memory (`/proc/<pid>/status`).
    fn usage(&self) -> anyhow::Result<Usage> {
        let pid = self.child.id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        // The fields after the command name (which may hold spaces), from field 3 on.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .context("an unreadable /proc stat")?
            .1
            .split_whitespace()
            .collect();
        let ticks = |n: usize| -> anyhow::Result<f64> {
            Ok(fields
                .get(n - 3)
                .context("a short /proc stat")?
                .parse::<f64>()?)
        };
        let cpu_s = (ticks(14)? + ticks(15)?) / 100.0;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let rss_kib = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.split_whitespace().next())
            .context("no VmRSS")?
            .parse()?;
        Ok(Usage { cpu_s, rss_kib })
    }
}

/// What `servers` used together.
fn usage(servers: &[&Server]) -> anyhow::Result<Usage> {
    servers
        .iter()
        .map(|server| server.usage())
        .try_fold(Usage::default(), |sum, one| Ok(sum + one?))
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn resume_server_binary(chosen: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(chosen) = chosen {
        return Ok(chosen.to_path_buf());
    }
    let here = std::env::current_exe()?;
    let binary = here
        .parent()
        .context("the bench's folder")?
        .join("resume_server");
    if !binary.exists() {
        bail!(
            "{} is missing: cargo build --release -p examples --example resume_server",
            binary.display()
        );
    }
    Ok(binary)
}

fn spawn(binary: &Path, args: &[String], env: &[(&str, String)]) -> anyhow::Result<Server> {
    let mut child = Command::new(binary)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting resume_server")?;
    let stdout = child.stdout.take().context("the server's output")?;
    let mut lines = BufReader::new(stdout).lines();
    let mut url = None;
    for line in lines.by_ref() {
        let line = line?;
        if let Some(address) = line.strip_prefix("listening on ") {
            url = Some(address.trim().to_owned());
            break;
        }
    }
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    let url = url.context("resume_server did not say where it listens")?;
    Ok(Server { child, url })
}

/// What one client saw, and its stream, kept open until every client is at its gate.
struct Seen {
    started: Duration,
    first_event: Option<Duration>,
    gate: Option<Duration>,
    events: usize,
    stream: Option<SseReader>,
}

async fn client(
    http: reqwest::Client,
    start_at: String,
    stream_from: String,
    body: Arc<Value>,
    zero: Instant,
    patience: Duration,
) -> anyhow::Result<Seen> {
    let response = http
        .post(format!("{start_at}/api/resume/start"))
        .json(body.as_ref())
        .send()
        .await?;
    if response.status() != 201 {
        bail!("start answered {}", response.status());
    }
    let started = zero.elapsed();
    let session: Value = response.json().await?;
    let stream_url = session["stream_url"].as_str().context("stream_url")?;
    let token = session["token"].as_str().context("token")?;
    let stream = http
        .get(format!("{stream_from}{stream_url}"))
        .bearer_auth(token)
        .send()
        .await?;
    if stream.status() != 200 {
        bail!("the stream answered {}", stream.status());
    }
    let mut reader = SseReader::new(stream).with_patience(patience);
    let mut seen = Seen {
        started,
        first_event: None,
        gate: None,
        events: 0,
        stream: None,
    };
    while let Some(event) = reader.next().await {
        seen.events += 1;
        seen.first_event.get_or_insert_with(|| zero.elapsed());
        match event.event.as_str() {
            "gate_open" => {
                seen.gate = Some(zero.elapsed());
                break;
            }
            "session_failed" | "session_cancelled" | "session_expired" => {
                bail!("the session ended: {}", event.data)
            }
            _ => {}
        }
    }
    seen.stream = Some(reader);
    Ok(seen)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// Runs `sessions` clients against `servers` and prints the figures of `name`.
async fn measure(name: &str, servers: &[&Server], args: &Args) -> anyhow::Result<()> {
    let urls: Vec<String> = servers.iter().map(|server| server.url.clone()).collect();
    let before = usage(servers)?;
    let fixtures = examples::fixtures::locate(&args.fixtures)?;
    let resume = std::fs::read_to_string(fixtures.join("resume.txt"))?;
    let job = std::fs::read_to_string(fixtures.join("job.txt"))?;
    let body = Arc::new(json!({"resume_text": resume, "job_description": job}));
    // One instance: a stream reuses its start's connection. Two: the start's connection
    // to one instance waits idle while the stream reads the other, so fewer are kept.
    let idle = if urls.len() == 1 { args.sessions } else { 256 };
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(idle)
        .build()?;
    let zero = Instant::now();
    let patience = Duration::from_secs(args.patience);
    let clients: Vec<_> = (0..args.sessions)
        .map(|i| {
            let start_at = urls[i % urls.len()].clone();
            let stream_from = urls[(i + 1) % urls.len()].clone();
            tokio::spawn(client(
                http.clone(),
                start_at,
                stream_from,
                body.clone(),
                zero,
                patience,
            ))
        })
        .collect();
    let mut seen = Vec::with_capacity(clients.len());
    let mut failures = Vec::new();
    for task in clients {
        match task.await? {
            Ok(one) => seen.push(one),
            Err(error) => failures.push(error.to_string()),
        }
    }
    if seen.is_empty() {
        bail!("{name}: every client failed: {:?}", failures.first());
    }
    // Every session is live (at its gate) with its stream open.
    let during = usage(servers)?;
    seen.iter_mut().for_each(|s| s.stream = None);
    let last_start = seen.iter().map(|s| s.started).max().unwrap_or_default();
    let last_gate = seen.iter().filter_map(|s| s.gate).max().unwrap_or_default();
    let events: usize = seen.iter().map(|s| s.events).sum();
    let mut latencies: Vec<f64> = seen
        .iter()
        .filter_map(|s| s.first_event)
        .map(|d| d.as_secs_f64() * 1000.0)
        .collect();
    latencies.sort_by(f64::total_cmp);
    let sessions_per_s = seen.len() as f64 / last_start.as_secs_f64().max(1e-9);
    let events_per_s = events as f64 / last_gate.as_secs_f64().max(1e-9);
    let (p50, p99) = (percentile(&latencies, 50.0), percentile(&latencies, 99.0));
    let gates = seen.iter().filter(|s| s.gate.is_some()).count();
    println!("sessions{{{name}}} {} sessions", seen.len());
    println!("failed{{{name}}} {} sessions", failures.len());
    println!("reached_gate{{{name}}} {gates} sessions");
    println!("sessions_per_s{{{name}}} {sessions_per_s:.1} 1/s");
    println!("events{{{name}}} {events} events");
    println!("events_per_s{{{name}}} {events_per_s:.1} 1/s");
    println!("first_event_ms{{{name},p50}} {p50:.0} ms");
    println!("first_event_ms{{{name},p99}} {p99:.0} ms");
    println!("wall_s{{{name}}} {:.2} s", last_gate.as_secs_f64());
    let cpu_per_1000 = (during.cpu_s - before.cpu_s) / events.max(1) as f64 * 1000.0;
    let kib_per_session = (during.rss_kib - before.rss_kib) / seen.len() as f64;
    println!("server_cpu_s_per_1000_events{{{name}}} {cpu_per_1000:.3} s");
    println!("server_memory_per_live_session{{{name}}} {kib_per_session:.1} KiB");
    println!("server_rss{{{name}}} {:.0} KiB", during.rss_kib);
    println!(
        "| {name} | {} | {sessions_per_s:.0} | {events_per_s:.0} | {p50:.0} ms | {p99:.0} ms | {cpu_per_1000:.2} s | {kib_per_session:.0} KiB | {} |",
        seen.len(),
        failures.len()
    );
    if let Some(first) = failures.first() {
        eprintln!(
            "{name}: {} clients failed, the first: {first}",
            failures.len()
        );
    }
    Ok(())
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_owned())
}

async fn sqlite(args: &Args, work: &Path) -> anyhow::Result<()> {
    let binary = resume_server_binary(args.server.as_deref())?;
    let server = spawn(
        &binary,
        &[
            "--dry-run".into(),
            "--port".into(),
            "0".into(),
            "--db".into(),
            work.join("sessions.db").display().to_string(),
            "--fixtures".into(),
            args.fixtures.display().to_string(),
        ],
        &[],
    )?;
    measure("sqlite", &[&server], args).await
}

async fn two_instances(args: &Args) -> anyhow::Result<()> {
    let database = env_or("POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test");
    let nats = env_or("NATS_URL", "nats://127.0.0.1:4222");
    let tag = format!("load_{}", std::process::id());
    let binary = resume_server_binary(args.server.as_deref())?;
    let instance = || {
        spawn(
            &binary,
            &[
                "--dry-run".into(),
                "--port".into(),
                "0".into(),
                "--backend".into(),
                "postgres+nats".into(),
                "--schema".into(),
                tag.clone(),
                "--nats-prefix".into(),
                tag.clone(),
                "--fixtures".into(),
                args.fixtures.display().to_string(),
            ],
            &[
                ("DATABASE_URL", database.clone()),
                ("NATS_URL", nats.clone()),
            ],
        )
    };
    let (first, second) = (instance()?, instance()?);
    let measured = measure("two-instances", &[&first, &second], args).await;
    drop((first, second));
    // Leave nothing behind: the deployment's streams and schema.
    let coordination = NatsCoordination::connect_with_prefix(&nats, &tag).await?;
    JetStreamRunQueue::new(&coordination, Duration::from_secs(30))
        .await?
        .delete_streams()
        .await?;
    let mut connection = <sqlx::PgConnection as sqlx::Connection>::connect(&database).await?;
    sqlx::query(&format!("DROP SCHEMA IF EXISTS \"{tag}\" CASCADE"))
        .execute(&mut connection)
        .await?;
    measured
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let work = tempfile::tempdir()?;
    println!(
        "| deployment | sessions | sessions/s | events/s | first event p50 | p99 | server CPU per 1,000 events | server memory per live session | failed |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    if matches!(args.deployment.as_str(), "sqlite" | "both") {
        sqlite(&args, work.path()).await?;
    }
    if matches!(args.deployment.as_str(), "two-instances" | "both") {
        two_instances(&args).await?;
    }
    Ok(())
}
