//! The resume coordinator (spec 001) served over HTTP with live streaming and gates.
//!
//! ```text
//! cargo run --release -p examples --example resume_server -- [--port 8080] [--db FILE] [--dry-run]
//!     [--backend sqlite|postgres+nats] [--schema NAME] [--nats-prefix PREFIX] [--lease-secs 30]
//!     [--max-runs N] [--gate-timeout 24h]
//! ```
//!
//! `--backend postgres+nats` runs one of several instances of a deployment
//! (`docs/deployment.md`): sessions, events, gates, checkpoints and leases in PostgreSQL
//! (`DATABASE_URL`), live events, requests between instances and the queue of runs on
//! NATS with JetStream (`NATS_URL`). Start as many as you like on the same two; any of
//! them serves any session, and a run whose instance dies goes on in another.
//!
//! Open `http://127.0.0.1:8080/` for the web page, or follow `docs/resume-api.md` with
//! curl. Sessions, events and gates are kept in SQLite (`--db`, default
//! `./output/resume-sessions.db`); a restarted server resumes waiting sessions at their
//! pending gate. `--dry-run` answers from the recorded model responses in
//! `fixtures/resume/` and says so on its first line; otherwise the LLM provider comes from
//! the environment (`ANTHROPIC_API_KEY`, `LLM_PROVIDER`, ... as in the README). The
//! feature flags `FF_INTAKE_QUIZ`, `FF_RESEARCH_VALIDATION`, `FF_GAP_ANALYSIS_QUIZ`,
//! `FF_QUALITY_REVIEW_APPROVAL` and `FF_BLUEPRINT_APPROVAL` (default true) set which
//! gates a session may open; its start request can turn them off. `--gate-timeout` is how
//! long a session waits at a gate for its user (default 24 h): then the gate closes, the
//! session ends `expired` and frees its run slot.

// A command-line program: its output is the point.
#![allow(clippy::print_stdout, clippy::print_stderr)]

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_llm::{ModelTier, PricingTable, ProviderConfig};
use agent_runtime::CostLimits;
use anyhow::Context as _;
use clap::{Parser, ValueEnum};
use examples::deployment::{Listening, ScaleOut, listen_behind_auth};
use resume_coordinator::{Flags, ResumeProduct};

/// Serve the resume coordinator.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    #[command(flatten)]
    log: examples::telemetry::LogArgs,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to listen on (0: any free port; the one chosen is printed).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// The SQLite file for sessions, events, gates and run checkpoints.
    #[arg(long, default_value = "output/resume-sessions.db")]
    db: PathBuf,
    /// Answer from the recorded model responses instead of an LLM provider.
    #[arg(long)]
    dry_run: bool,
    /// With --dry-run: wait this many milliseconds before every recorded answer, as a real
    /// model would (to see a restart resume mid-stage).
    #[arg(long, default_value_t = 0, value_name = "MS")]
    latency: u64,
    /// Where the dry-run recordings are (relative paths from the current directory).
    #[arg(long, default_value = "fixtures/resume")]
    fixtures: PathBuf,
    /// Refuse further model calls of a session once it spent this many USD (an unpriced
    /// model: a million tokens per USD stand in).
    #[arg(long, value_name = "USD")]
    max_usd: Option<f64>,
    /// Refuse further model calls of a session once it used this many tokens.
    #[arg(long, value_name = "TOKENS")]
    max_tokens: Option<u64>,
    /// Where sessions live: one process on a SQLite file, or one of several instances on
    /// PostgreSQL (`DATABASE_URL`) and NATS JetStream (`NATS_URL`).
    #[arg(long, value_enum, default_value_t = Backend::Sqlite)]
    backend: Backend,
    /// With postgres+nats: the PostgreSQL schema of the deployment (created if missing;
    /// default: the connection's).
    #[arg(long, value_name = "NAME")]
    schema: Option<String>,
    /// With postgres+nats: the NATS subject prefix of the deployment.
    #[arg(long, default_value = "agent", value_name = "PREFIX")]
    nats_prefix: String,
    /// With postgres+nats: how long an instance that stops answering keeps its sessions
    /// (their lease, and the queue's ack wait) before another takes them over.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    lease_secs: u64,
    /// With postgres+nats: the most sessions this instance runs at once (one waiting at a
    /// gate counts); more stay queued for the other instances. Default: no limit.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_runs: Option<u32>,
    /// How long a session waits at a gate for its user before it ends `expired` (and frees
    /// its run slot): a number with a unit, `ms`, `s`, `m`, `h` or `d` (`90s`, `30m`,
    /// `24h`; a bare number is seconds).
    #[arg(long, default_value = "24h", value_name = "DURATION", value_parser = parse_duration)]
    gate_timeout: Duration,
    /// How long one agent's invocation (the Strategist in one phase, the Craftsman writing
    /// every section, the Producer) may work before the session fails with its timeout;
    /// waiting at a gate does not count. Default: the runtime's 10 minutes. A small
    /// local model on a CPU needs more (`45m`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    agent_timeout: Option<Duration>,
}

/// `500ms`, `90s`, `30m`, `24h`, `2d`, or a number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 90s, 30m or 24h"))?;
    let seconds = match unit.trim() {
        "ms" => number / 1000.0,
        "" | "s" => number,
        "m" => number * 60.0,
        "h" => number * 3600.0,
        "d" => number * 86_400.0,
        other => return Err(format!("unknown unit {other:?}: use ms, s, m, h or d")),
    };
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(format!("{text:?}: the timeout must be more than zero"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Where sessions live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Backend {
    /// One process, a SQLite file (`--db`).
    Sqlite,
    /// Several instances on PostgreSQL and NATS JetStream.
    #[value(name = "postgres+nats")]
    PostgresNats,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _telemetry = examples::telemetry::install("resume_server", "warn", args.log.log_format)?;
    let product = if args.dry_run {
        let fixtures = examples::fixtures::locate(&args.fixtures)
            .context("the dry run's fixtures (run from the workspace, or pass --fixtures)")?;
        println!(
            "DRY RUN: the model answers from recorded responses in {}",
            fixtures.display()
        );
        ResumeProduct::dry_run_with_latency(&fixtures, Duration::from_millis(args.latency))?
    } else {
        let mut provider = ProviderConfig::from_env()?.context(
            "no LLM provider configured: set ANTHROPIC_API_KEY (or LLM_PROVIDER and its key), or use --dry-run",
        )?;
        // A local server says which model it serves, its context window and its slots.
        provider.discover().await?;
        println!("LIVE: {}", provider.describe());
        let model = provider.chat_model(ModelTier::Orchestrator)?;
        ResumeProduct::new(model, provider.router.clone()).with_pricing(PricingTable::from_env()?)
    };
    // The deployment's feature flags (FF_*); a start request may turn them off.
    let limits = CostLimits {
        max_usd: args.max_usd,
        max_tokens: args.max_tokens,
        ..CostLimits::default()
    };
    let mut product = product
        .with_flags(Flags::from_env()?)
        .with_limits(limits)
        .with_gate_timeout(args.gate_timeout);
    if let Some(timeout) = args.agent_timeout {
        product = product.with_agent_timeout(timeout);
    }
    let (server, location) = match args.backend {
        Backend::Sqlite => {
            let (server, store) = examples::deployment::single_process(&args.db).await?;
            // One database: sessions, events and gates, the runs' checkpoints and the
            // users' master resumes beside them.
            let product = product.with_documents(Arc::new(store.documents()));
            let server = server.with_product(Arc::new(product));
            let resumed = server.resume_unfinished().await?;
            if resumed > 0 {
                println!("resumed {resumed} unfinished session(s)");
            }
            (server, args.db.display().to_string())
        }
        // Unfinished runs wait in the queue: this instance's worker takes its share.
        Backend::PostgresNats => {
            let deployment = ScaleOut {
                schema: args.schema.clone(),
                nats_prefix: args.nats_prefix.clone(),
                lease: Duration::from_secs(args.lease_secs),
                max_runs: args.max_runs.map(|n| n as usize),
                ..ScaleOut::from_env()?
            };
            let (server, store) = deployment.server().await?;
            let product = product.with_documents(Arc::new(store.documents()));
            (
                server.with_product(Arc::new(product)),
                deployment.describe(),
            )
        }
    };
    let Listening {
        server,
        listener,
        open_notice,
    } = listen_behind_auth(server, &args.host, args.port).await?;
    if let Some(notice) = open_notice {
        println!("{notice}");
    }
    println!("sessions in {location}");
    println!("listening on http://{}", listener.local_addr()?);
    // Ctrl-C parks the running sessions at their next checkpoint; the next start resumes them.
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    server.serve_until(listener, shutdown).await?;
    Ok(())
}
