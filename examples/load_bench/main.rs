//! Load on the hosted runtime's two deployments: one server on SQLite against two
//! instances on one PostgreSQL and NATS JetStream.
//!
//! ```text
//! cargo build --release -p examples --example resume_server --example load_bench
//! target/release/examples/load_bench [--sessions 1000] [--deployment both|sqlite|two-instances]
//!     [--workload burst|steady] [--seconds 60] [--every-ms 100] [--server PATH]
//! ```
//!
//! Each session is a client doing what a user's browser does: start a session, then read
//! its SSE stream. All clients start at once, so `--sessions 1000` means 1,000 concurrent
//! SSE clients. On the two-instance deployment sessions are started round-robin and
//! every stream is read from the *other* instance than the one the session was started
//! on, so every event crosses NATS. The workloads:
//!
//! - **burst** (default): `resume_server --dry-run` sessions (`POST /api/resume/start`),
//!   each read until the pipeline stops at its first gate (`gate_open`, the dry run's
//!   research validation): 7 events a session. `--server` loads another build of
//!   `resume_server`, to measure two builds side by side in one sitting.
//! - **steady**: sessions of a ticker product (served by this bench itself) that emit an
//!   event every `--every-ms` for `--seconds`, each stamped when it was emitted; each
//!   client reads its session to the end and measures every event's delivery.
//!
//! A client that reads an event out of order, a gap or a repeat (by the SSE ids, numbered
//! from 1) fails. Printed as `name{deployment} value unit` lines and a Markdown row:
//!
//! - `sessions_per_s`: sessions started (201 received) per second of the start burst;
//! - `events_per_s`: events delivered to clients per second, first start to last event;
//! - `first_event_ms{p50,p99}`: from sending the start request to the first event read;
//! - `delivery_ms{p50,p99,max}` (steady): from an event's emit to its client reading it;
//! - `server_cpu_s_per_1000_events`: the server processes' CPU time (user + system) over
//!   the run, per 1,000 events delivered;
//! - `server_memory_per_live_session`: the growth of the servers' resident memory from
//!   before the run to when every session is live with its stream open (burst: all at
//!   their gate; steady: half-way through), per session.
//!
//! Needs the servers `cargo xtask setup` starts (`POSTGRES_URL`, `NATS_URL`). The
//! two-instance deployment runs in a PostgreSQL schema and under a NATS prefix of its
//! own, both removed at the end. Figures are in `docs/BENCHMARKS.md`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod processes;
mod ticker;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_backends::{JetStreamRunQueue, NatsCoordination};
use agent_server::testing::SseReader;
use anyhow::{Context, bail};
use clap::{Parser, ValueEnum};
use examples::deployment::ScaleOut;
use processes::{Server, spawn, usage};
use serde_json::{Value, json};
use ticker::TickerBackend;

#[derive(Parser)]
#[command(about = "Sessions/s, events/s, latencies, CPU and memory: SQLite vs two instances")]
struct Args {
    #[command(flatten)]
    log: examples::telemetry::LogArgs,
    /// Sessions started at once (each with its own SSE client).
    #[arg(long, default_value_t = 1000)]
    sessions: usize,
    /// Which deployment: sqlite, two-instances or both.
    #[arg(long, default_value = "both")]
    deployment: String,
    /// What the sessions do.
    #[arg(long, value_enum, default_value_t = Workload::Burst)]
    workload: Workload,
    /// Steady: how long each session emits, in seconds.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Steady: milliseconds between two events of a session.
    #[arg(long, default_value_t = 100)]
    every_ms: u64,
    /// Burst: the resume dry run's fixtures.
    #[arg(long, default_value = "fixtures/resume")]
    fixtures: PathBuf,
    /// How long one client may wait for an event, in seconds.
    #[arg(long, default_value_t = 300)]
    patience: u64,
    /// Burst: the `resume_server` binary to load (default: the one built beside this
    /// bench), so one sitting can measure another build side by side.
    #[arg(long)]
    server: Option<PathBuf>,
    /// Run as the steady workload's server instead; the bench starts itself so, with
    /// `resume_server`'s flags for where sessions live.
    #[arg(long, hide = true)]
    serve_ticker: bool,
    /// With `--serve-ticker`: the SQLite file.
    #[arg(long, hide = true)]
    db: Option<PathBuf>,
    /// With `--serve-ticker`: `postgres+nats` for an instance of that deployment.
    #[arg(long, hide = true)]
    backend: Option<String>,
    /// With `--serve-ticker --backend postgres+nats`: the deployment's schema.
    #[arg(long, hide = true)]
    schema: Option<String>,
    /// With `--serve-ticker --backend postgres+nats`: the deployment's NATS prefix.
    #[arg(long, hide = true)]
    nats_prefix: Option<String>,
}

/// What the sessions do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Workload {
    /// Resume dry runs, read to their first gate.
    Burst,
    /// Tickers emitting every `--every-ms` for `--seconds`.
    Steady,
}

impl Workload {
    /// The product the sessions are started on.
    fn product(self) -> &'static str {
        match self {
            Workload::Burst => "resume",
            Workload::Steady => "ticker",
        }
    }
}

/// What one client saw, and its stream, kept open until the figures are taken.
struct Seen {
    started: Duration,
    first_event: Option<Duration>,
    /// When the client read its last event.
    done: Option<Duration>,
    events: usize,
    /// Steady: each event's delivery, in milliseconds.
    delays_ms: Vec<f32>,
    stream: Option<SseReader>,
}

/// One client's session.
struct Client {
    http: reqwest::Client,
    workload: Workload,
    start_at: String,
    stream_from: String,
    body: Arc<Value>,
    zero: Instant,
    patience: Duration,
}

impl Client {
    async fn run(self) -> anyhow::Result<Seen> {
        let product = self.workload.product();
        let response = self
            .http
            .post(format!("{}/api/{product}/start", self.start_at))
            .json(self.body.as_ref())
            .send()
            .await?;
        if response.status() != 201 {
            bail!("start answered {}", response.status());
        }
        let started = self.zero.elapsed();
        let session: Value = response.json().await?;
        let stream_url = session["stream_url"].as_str().context("stream_url")?;
        let token = session["token"].as_str().context("token")?;
        let stream = self
            .http
            .get(format!("{}{stream_url}", self.stream_from))
            .bearer_auth(token)
            .send()
            .await?;
        if stream.status() != 200 {
            bail!("the stream answered {}", stream.status());
        }
        let mut reader = SseReader::new(stream).with_patience(self.patience);
        let mut seen = Seen {
            started,
            first_event: None,
            done: None,
            events: 0,
            delays_ms: Vec::new(),
            stream: None,
        };
        while let Some(event) = reader.next().await {
            let read_us = ticker::now_us();
            // Events are numbered from 1 without gaps: one missing or repeated fails.
            if event.id != seen.events as u64 + 1 {
                bail!("event {} read after event {}", event.id, seen.events);
            }
            seen.events += 1;
            seen.first_event.get_or_insert_with(|| self.zero.elapsed());
            match (self.workload, event.event.as_str()) {
                (Workload::Burst, "gate_open") | (Workload::Steady, "session_complete") => {
                    seen.done = Some(self.zero.elapsed());
                    break;
                }
                (Workload::Steady, "tick") => {
                    let emitted = event.data["at_us"]
                        .as_u64()
                        .context("a tick without at_us")?;
                    seen.delays_ms
                        .push(read_us.saturating_sub(emitted) as f32 / 1000.0);
                }
                (_, "session_failed" | "session_cancelled" | "session_expired") => {
                    bail!("the session ended: {}", event.data)
                }
                _ => {}
            }
        }
        if seen.done.is_none() {
            bail!("the stream ended after {} events", seen.events);
        }
        seen.stream = Some(reader);
        Ok(seen)
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// The start request of every session.
fn start_body(args: &Args) -> anyhow::Result<Value> {
    Ok(match args.workload {
        Workload::Burst => {
            let fixtures = examples::fixtures::locate(&args.fixtures)?;
            let resume = std::fs::read_to_string(fixtures.join("resume.txt"))?;
            let job = std::fs::read_to_string(fixtures.join("job.txt"))?;
            json!({"resume_text": resume, "job_description": job})
        }
        Workload::Steady => {
            let ticks = (args.seconds * 1000 / args.every_ms.max(1)).max(1);
            json!({"ticks": ticks, "every_ms": args.every_ms})
        }
    })
}

/// Runs `sessions` clients against `servers` and prints the figures of `name`.
async fn measure(name: &str, servers: &[&Server], args: &Args) -> anyhow::Result<()> {
    let urls: Vec<String> = servers.iter().map(|server| server.url.clone()).collect();
    let body = Arc::new(start_body(args)?);
    // One instance: a stream reuses its start's connection. Two: the start's connection
    // to one instance waits idle while the stream reads the other, so fewer are kept.
    let idle = if urls.len() == 1 { args.sessions } else { 256 };
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(idle)
        .build()?;
    let before = usage(servers)?;
    let zero = Instant::now();
    let clients: Vec<_> = (0..args.sessions)
        .map(|i| {
            tokio::spawn(
                Client {
                    http: http.clone(),
                    workload: args.workload,
                    start_at: urls[i % urls.len()].clone(),
                    stream_from: urls[(i + 1) % urls.len()].clone(),
                    body: body.clone(),
                    zero,
                    patience: Duration::from_secs(args.patience),
                }
                .run(),
            )
        })
        .collect();
    // Steady: every session is live, its stream open, half-way through.
    let halfway = match args.workload {
        Workload::Steady => {
            tokio::time::sleep(Duration::from_secs(args.seconds.div_ceil(2))).await;
            Some(usage(servers)?)
        }
        Workload::Burst => None,
    };
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
    // Burst: every session is live at its gate with its stream open.
    let after = usage(servers)?;
    let live = halfway.unwrap_or(after);
    seen.iter_mut().for_each(|s| s.stream = None);

    let last_start = seen.iter().map(|s| s.started).max().unwrap_or_default();
    let last_event = seen.iter().filter_map(|s| s.done).max().unwrap_or_default();
    let events: usize = seen.iter().map(|s| s.events).sum();
    let sorted = |values: Vec<f64>| {
        let mut values = values;
        values.sort_by(f64::total_cmp);
        values
    };
    let first = sorted(
        seen.iter()
            .filter_map(|s| s.first_event)
            .map(|d| d.as_secs_f64() * 1000.0)
            .collect(),
    );
    let sessions_per_s = seen.len() as f64 / last_start.as_secs_f64().max(1e-9);
    let events_per_s = events as f64 / last_event.as_secs_f64().max(1e-9);
    let (p50, p99) = (percentile(&first, 50.0), percentile(&first, 99.0));
    let cpu_per_1000 = (after.cpu_s - before.cpu_s) / events.max(1) as f64 * 1000.0;
    let kib_per_session = (live.rss_kib - before.rss_kib) / seen.len() as f64;
    println!("sessions{{{name}}} {} sessions", seen.len());
    println!("failed{{{name}}} {} sessions", failures.len());
    println!("sessions_per_s{{{name}}} {sessions_per_s:.1} 1/s");
    println!("events{{{name}}} {events} events");
    println!("events_per_s{{{name}}} {events_per_s:.1} 1/s");
    println!("first_event_ms{{{name},p50}} {p50:.0} ms");
    println!("first_event_ms{{{name},p99}} {p99:.0} ms");
    println!("wall_s{{{name}}} {:.2} s", last_event.as_secs_f64());
    println!("server_cpu_s_per_1000_events{{{name}}} {cpu_per_1000:.3} s");
    println!("server_memory_per_live_session{{{name}}} {kib_per_session:.1} KiB");
    println!("server_rss{{{name}}} {:.0} KiB", live.rss_kib);
    let mut delivery = String::from("-");
    if args.workload == Workload::Steady {
        let delays = sorted(
            seen.iter()
                .flat_map(|s| s.delays_ms.iter().map(|d| f64::from(*d)))
                .collect(),
        );
        let (d50, d99) = (percentile(&delays, 50.0), percentile(&delays, 99.0));
        let max = delays.last().copied().unwrap_or(f64::NAN);
        println!("delivery_ms{{{name},p50}} {d50:.1} ms");
        println!("delivery_ms{{{name},p99}} {d99:.1} ms");
        println!("delivery_ms{{{name},max}} {max:.1} ms");
        delivery = format!("{d50:.1} / {d99:.1} ms");
    }
    println!(
        "| {name} | {} | {sessions_per_s:.0} | {events_per_s:.0} | {p50:.0} ms | {p99:.0} ms | {delivery} | {cpu_per_1000:.2} s | {kib_per_session:.0} KiB | {} |",
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

/// Where the two-instance deployment's PostgreSQL and NATS are: `POSTGRES_URL` and
/// `NATS_URL`, else the machine's servers.
fn services() -> (String, String) {
    let env_or = |name: &str, default: &str| {
        std::env::var(name)
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| default.to_owned())
    };
    (
        env_or("POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test"),
        env_or("NATS_URL", "nats://127.0.0.1:4222"),
    )
}

/// The `resume_server` binary: `chosen`, or the one built beside this bench.
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

/// Where a server keeps its sessions.
enum Place<'a> {
    /// One process on this SQLite file.
    Sqlite(&'a Path),
    /// An instance of the PostgreSQL + NATS deployment with this schema and NATS prefix.
    Instance(&'a str),
}

/// Starts one server of the workload at `place`: `resume_server` for the burst, this
/// bench serving its ticker for the steady workload, with the same flags for the place.
fn launch(args: &Args, place: Place<'_>) -> anyhow::Result<Server> {
    let (binary, mut flags) = match args.workload {
        Workload::Burst => (
            resume_server_binary(args.server.as_deref())?,
            vec![
                "--dry-run".to_owned(),
                "--port".to_owned(),
                "0".to_owned(),
                "--fixtures".to_owned(),
                args.fixtures.display().to_string(),
            ],
        ),
        Workload::Steady => (std::env::current_exe()?, vec!["--serve-ticker".to_owned()]),
    };
    let env = match place {
        Place::Sqlite(db) => {
            flags.extend(["--db".to_owned(), db.display().to_string()]);
            Vec::new()
        }
        Place::Instance(tag) => {
            let place = [
                "--backend",
                "postgres+nats",
                "--schema",
                tag,
                "--nats-prefix",
                tag,
            ];
            flags.extend(place.map(String::from));
            let (database, nats) = services();
            vec![("DATABASE_URL", database), ("NATS_URL", nats)]
        }
    };
    spawn(&binary, &flags, &env)
}

async fn sqlite(args: &Args, work: &Path) -> anyhow::Result<()> {
    let server = launch(args, Place::Sqlite(&work.join("sessions.db")))?;
    measure("sqlite", &[&server], args).await
}

async fn two_instances(args: &Args) -> anyhow::Result<()> {
    let tag = format!("load_{}", std::process::id());
    let first = launch(args, Place::Instance(&tag))?;
    let second = launch(args, Place::Instance(&tag))?;
    let measured = measure("two-instances", &[&first, &second], args).await;
    drop((first, second));
    // Leave nothing behind: the deployment's streams and schema.
    let (database, nats) = services();
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

/// Serves the steady workload's product where `--db` or `--backend` say
/// (`--serve-ticker`).
async fn serve_ticker(args: &Args) -> anyhow::Result<()> {
    let backend = match args.backend.as_deref() {
        None | Some("sqlite") => TickerBackend::Sqlite(args.db.clone().context("--db")?),
        Some("postgres+nats") => TickerBackend::ScaleOut(ScaleOut {
            schema: args.schema.clone(),
            nats_prefix: args.nats_prefix.clone().context("--nats-prefix")?,
            ..ScaleOut::from_env()?
        }),
        Some(other) => bail!("unknown backend {other:?}"),
    };
    ticker::serve(backend).await
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _telemetry = examples::telemetry::install("load_bench", "warn", args.log.log_format)?;
    if args.serve_ticker {
        return serve_ticker(&args).await;
    }
    let work = tempfile::tempdir()?;
    println!(
        "| deployment | sessions | sessions/s | events/s | first event p50 | p99 | delivery p50 / p99 | server CPU per 1,000 events | server memory per live session | failed |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    if matches!(args.deployment.as_str(), "sqlite" | "both") {
        sqlite(&args, work.path()).await?;
    }
    if matches!(args.deployment.as_str(), "two-instances" | "both") {
        two_instances(&args).await?;
    }
    Ok(())
}
