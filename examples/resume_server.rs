//! The resume coordinator (spec 001) served over HTTP with live streaming and gates.
//!
//! ```text
//! cargo run --release -p examples --example resume_server -- [--port 8080] [--db FILE] [--dry-run]
//! ```
//!
//! Open `http://127.0.0.1:8080/` for the web page, or follow `docs/resume-api.md` with
//! curl. Sessions, events and gates are kept in SQLite (`--db`, default
//! `./output/resume-sessions.db`); a restarted server resumes waiting sessions at their
//! pending gate. `--dry-run` answers from the recorded model responses in
//! `fixtures/resume/` and says so on its first line; otherwise the LLM provider comes from
//! the environment (`ANTHROPIC_API_KEY`, `LLM_PROVIDER`, ... as in the README). The
//! feature flags `FF_INTAKE_QUIZ`, `FF_RESEARCH_VALIDATION`, `FF_GAP_ANALYSIS_QUIZ`,
//! `FF_QUALITY_REVIEW_APPROVAL` and `FF_BLUEPRINT_APPROVAL` (default true) set which
//! gates a session may open; its start request can turn them off.

// A command-line program: its output is the point.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_backends::SqliteSessionStore;
use agent_llm::{ModelTier, PricingTable, ProviderConfig};
use agent_runtime::CostLimits;
use agent_server::AgentServer;
use anyhow::Context as _;
use clap::Parser;
use resume_coordinator::{Flags, ResumeProduct};

/// Serve the resume coordinator.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
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
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let product = if args.dry_run {
        let fixtures = std::fs::canonicalize(&args.fixtures).with_context(|| {
            format!(
                "the fixtures directory {} (run from the workspace root, or pass --fixtures)",
                args.fixtures.display()
            )
        })?;
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
    let store = SqliteSessionStore::open(&args.db)
        .await
        .with_context(|| format!("opening the session store {}", args.db.display()))?;
    // One database: sessions, events and gates, the runs' checkpoints and the users'
    // master resumes beside them.
    let product = product
        .with_flags(Flags::from_env()?)
        .with_limits(limits)
        .with_documents(Arc::new(store.documents()));
    let checkpoints = store.checkpoints();
    let server = AgentServer::new(Arc::new(store))
        .with_checkpoints(Arc::new(checkpoints))
        .with_product(Arc::new(product));
    let resumed = server.resume_unfinished().await?;
    if resumed > 0 {
        println!("resumed {resumed} unfinished session(s)");
    }
    let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
        .await
        .with_context(|| format!("binding {}:{}", args.host, args.port))?;
    println!("sessions in {}", args.db.display());
    println!("listening on http://{}", listener.local_addr()?);
    // Ctrl-C parks the running sessions at their next checkpoint; the next start resumes them.
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    server.serve_until(listener, shutdown).await?;
    Ok(())
}
