//! The JD optimizer (spec 003) from the command line.
//!
//! ```text
//! cargo run --release -p examples --example jd_optimizer -- optimize \
//!     --resume fixtures/jd-optimizer/pairs/senior-sre/resume.txt \
//!     --jd fixtures/jd-optimizer/pairs/senior-sre/jd.txt --dry-run
//! ```
//!
//! Subcommands: `optimize`, `interview` (optimize, then interview questions; `--letter`
//! adds a cover letter), `cover-letter` (optimize, then a letter; `--tone`) and `serve`
//! (`POST /api/optimize`, `/api/interview-prep`, `/api/cover-letter` on agent-server,
//! sessions in SQLite, `--daily-quota N` per tenant). Caches are in Redis when
//! `REDIS_URL` is set. The recorded answers hold interview questions and a letter for
//! every fixture pair.
//!
//! `optimize` reads a resume (PDF, DOCX or TXT) and a job description, runs the
//! optimization graph with a line per node as it goes, and ends with a summary: the score
//! of each attempt, tokens and calls against the budget, cost, wall time, cache lookups,
//! the bullets, what was dropped and why, and the gaps. `--docx OUT` writes the optimized
//! resume as a Word document, read back and scored again before it is written; `--json`
//! prints the result as JSON instead of the summary. `--dry-run` answers from the
//! recorded model answers of `fixtures/jd-optimizer` (the six fixture pairs); otherwise
//! the provider of the environment answers (`LLM_PROVIDER`, `OPENAI_BASE_URL`, ... as in
//! the README). Retrieval is hybrid on the local embedding model when
//! `LOCAL_EMBEDDING_MODEL_DIR` names all-MiniLM-L6-v2's files and the binary is built with
//! `--features retrieval` (`--embeddings auto`, the default, for `optimize` and `serve`),
//! or on the provider's embedding model with `--embeddings provider`; the resume is
//! indexed in an SQLite vector store (`--index FILE`, in memory by default; `serve`'s
//! `--db`), and retrievals are cached. With `--embeddings none` the resume's sections are
//! ranked by keywords. `--latency MS` adds that delay to every
//! model call (a simulated slow model, for timing).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_backends::{RedisCache, SqliteSessionStore};
use agent_llm::testing::LatencyModel;
use agent_llm::{ChatModel, ModelTier, PricingTable, ProviderConfig};
use agent_server::AgentServer;
use agent_server::mcp::McpFront;
use anyhow::Context;
use clap::{Parser, Subcommand};
use examples::deployment::{Listening, listen_behind_auth};
use jd_optimizer::cache::OptimizerCache;
use jd_optimizer::document::{CheckedDocx, optimized_docx};
use jd_optimizer::index::ResumeIndex;
use jd_optimizer::interview::cover_letter::Tone;
use jd_optimizer::interview::{InterviewPrep, InterviewRequest};
use jd_optimizer::product::OptimizeProduct;
use jd_optimizer::{JdOptimizer, Optimization, OptimizeError, OptimizeEvent, OptimizeRequest};
use job_capabilities::documents::read_resume_text;
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
#[command(about = "Tune a resume to a job description (spec 003).")]
struct Cli {
    #[command(flatten)]
    log: examples::telemetry::LogArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Optimize a resume for a job description.
    Optimize(OptimizeArgs),
    /// Optimize, then write interview questions (and a cover letter with --letter).
    Interview {
        #[command(flatten)]
        optimize: OptimizeArgs,
        /// A cover letter too.
        #[arg(long)]
        letter: bool,
        /// The letter's tone: formal, conversational or enthusiastic.
        #[arg(long, default_value = "formal")]
        tone: String,
    },
    /// Optimize, then write a cover letter.
    CoverLetter {
        #[command(flatten)]
        optimize: OptimizeArgs,
        /// The letter's tone: formal, conversational or enthusiastic.
        #[arg(long, default_value = "formal")]
        tone: String,
    },
    /// Serve POST /api/optimize, /api/interview-prep and /api/cover-letter on agent-server.
    Serve(ServeArgs),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// The port.
    #[arg(long, default_value_t = 8090)]
    port: u16,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The SQLite file of sessions, checkpoints and kept optimizations.
    #[arg(long, default_value = "jd-optimizer.db")]
    db: PathBuf,
    /// Optimizations a day per tenant (no limit when not given).
    #[arg(long)]
    daily_quota: Option<u64>,
    /// Answer from the recorded model answers of the fixtures.
    #[arg(long)]
    dry_run: bool,
    /// The dry run's fixtures.
    #[arg(long, default_value = "fixtures/jd-optimizer")]
    fixtures: PathBuf,
    /// Where embeddings come from: `auto` (the local model when
    /// `LOCAL_EMBEDDING_MODEL_DIR` is set, else none), `local`, `provider` or `none`
    /// (sections ranked by keywords). Resumes are indexed in the `--db` file.
    #[arg(long, default_value = "auto")]
    embeddings: String,
}

#[derive(clap::Args)]
struct OptimizeArgs {
    /// The resume: PDF, DOCX or TXT.
    #[arg(long)]
    resume: PathBuf,
    /// The job description, as text.
    #[arg(long)]
    jd: PathBuf,
    /// The tenant (cache keys and the vector index are scoped by it).
    #[arg(long, default_value = "default")]
    tenant: String,
    /// A fact the resume does not state that rewrites may use (repeatable).
    #[arg(long = "fact")]
    facts: Vec<String>,
    /// Answer from the recorded model answers of the fixtures.
    #[arg(long)]
    dry_run: bool,
    /// The dry run's fixtures.
    #[arg(long, default_value = "fixtures/jd-optimizer")]
    fixtures: PathBuf,
    /// Milliseconds added to every model call.
    #[arg(long)]
    latency: Option<u64>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
    /// Write the optimized resume as a DOCX here.
    #[arg(long)]
    docx: Option<PathBuf>,
    /// The wall-time budget in seconds (default 55; a small local model needs more).
    #[arg(long)]
    max_seconds: Option<u64>,
    /// The token budget (default 7,000).
    #[arg(long)]
    max_tokens: Option<u64>,
    /// The model-call budget (default 6).
    #[arg(long)]
    max_calls: Option<u64>,
    /// Where embeddings come from: `auto` (the local model when
    /// `LOCAL_EMBEDDING_MODEL_DIR` is set, else none), `local`, `provider` or `none`
    /// (sections ranked by keywords).
    #[arg(long, default_value = "auto")]
    embeddings: String,
    /// The SQLite file of the vector index (in memory when not given).
    #[arg(long)]
    index: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let _telemetry = match examples::telemetry::install("jd_optimizer", "warn", cli.log.log_format)
    {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("error: {error:#}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = match cli.command {
        Command::Optimize(args) => optimize(args, None).await,
        Command::Interview {
            optimize: args,
            letter,
            tone,
        } => match parse_tone(&tone) {
            Ok(tone) => {
                let request = InterviewRequest {
                    questions: true,
                    cover_letter: letter,
                    tone,
                };
                optimize(args, Some(request)).await
            }
            Err(error) => Err(error),
        },
        Command::CoverLetter {
            optimize: args,
            tone,
        } => match parse_tone(&tone) {
            Ok(tone) => {
                let request = InterviewRequest {
                    questions: false,
                    cover_letter: true,
                    tone,
                };
                optimize(args, Some(request)).await
            }
            Err(error) => Err(error),
        },
        Command::Serve(args) => serve(args).await.map(|()| ExitCode::SUCCESS),
    };
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn parse_tone(tone: &str) -> anyhow::Result<Tone> {
    Ok(match tone {
        "formal" => Tone::Formal,
        "conversational" => Tone::Conversational,
        "enthusiastic" => Tone::Enthusiastic,
        other => anyhow::bail!("--tone is formal, conversational or enthusiastic, not {other}"),
    })
}

/// The caches: in Redis when `REDIS_URL` is set, else in process.
async fn cache() -> anyhow::Result<OptimizerCache> {
    match std::env::var("REDIS_URL").ok().filter(|u| !u.is_empty()) {
        Some(url) => {
            let redis = RedisCache::connect(&url)
                .await
                .with_context(|| format!("REDIS_URL={url}"))?;
            eprintln!("caches in Redis at {url}");
            Ok(OptimizerCache::new(Arc::new(redis)))
        }
        None => Ok(OptimizerCache::default()),
    }
}

/// The optimizer on the recorded answers or the environment's provider, and that
/// provider.
async fn base_optimizer(
    dry_run: bool,
    fixtures: &Path,
) -> anyhow::Result<(JdOptimizer, Option<ProviderConfig>)> {
    let (optimizer, provider) = if dry_run {
        let fixtures = examples::fixtures::locate(fixtures)?;
        (jd_optimizer::dry_run::optimizer(&fixtures)?, None)
    } else {
        let mut provider = ProviderConfig::from_env()?.context(
            "no LLM provider configured: set LLM_PROVIDER and its key or base URL, or use --dry-run",
        )?;
        provider.discover().await?;
        eprintln!("{}", provider.describe());
        let model: Arc<dyn ChatModel> = provider.chat_model(ModelTier::Primary)?;
        let optimizer = JdOptimizer::new(model, provider.router.clone())
            .with_pricing(PricingTable::from_env()?);
        (optimizer, Some(provider))
    };
    Ok((optimizer.with_cache(cache().await?), provider))
}

async fn optimizer(args: &OptimizeArgs) -> anyhow::Result<JdOptimizer> {
    let (optimizer, provider) = base_optimizer(args.dry_run, &args.fixtures).await?;
    let optimizer = match args.latency {
        Some(ms) => optimizer
            .with_model(|model| Arc::new(LatencyModel::new(model, Duration::from_millis(ms)))),
        None => optimizer,
    };
    let store = match &args.index {
        Some(path) => SqliteSessionStore::open(path).await?,
        None => SqliteSessionStore::in_memory().await?,
    };
    with_embeddings(optimizer, &args.embeddings, provider.as_ref(), &store)
}

/// The local embedding model of `LOCAL_EMBEDDING_MODEL_DIR` (built with `--features
/// retrieval`).
#[cfg(feature = "retrieval")]
fn local_embeddings() -> anyhow::Result<Arc<dyn agent_llm::EmbeddingModel>> {
    Ok(Arc::new(agent_llm::LocalEmbeddingModel::from_env()?))
}

#[cfg(not(feature = "retrieval"))]
fn local_embeddings() -> anyhow::Result<Arc<dyn agent_llm::EmbeddingModel>> {
    anyhow::bail!(
        "this binary was built without the local embedding model: build it with `--features retrieval`"
    )
}

/// The optimizer retrieving from a hybrid index in `store` with the embeddings `choice`
/// names (`auto`, `local`, `provider`, `none`), as both `optimize` and `serve` do.
fn with_embeddings(
    optimizer: JdOptimizer,
    choice: &str,
    provider: Option<&ProviderConfig>,
    store: &SqliteSessionStore,
) -> anyhow::Result<JdOptimizer> {
    let local_configured =
        std::env::var_os("LOCAL_EMBEDDING_MODEL_DIR").is_some_and(|dir| !dir.is_empty());
    let embedder = match choice {
        "none" => None,
        "auto" if !local_configured => None,
        "auto" if cfg!(not(feature = "retrieval")) => {
            eprintln!(
                "LOCAL_EMBEDDING_MODEL_DIR is set, but this binary was built without the local embedding model (--features retrieval): sections are ranked by keywords"
            );
            None
        }
        "auto" | "local" => Some(("the local model's", local_embeddings()?)),
        "provider" => {
            let provider = provider.context("--embeddings provider needs a live provider")?;
            Some(("the provider's", provider.embedding_model()?))
        }
        other => anyhow::bail!("--embeddings is auto, local, provider or none, not {other}"),
    };
    Ok(match embedder {
        Some((whose, embedder)) => {
            eprintln!("retrieval: hybrid, on {whose} embeddings");
            optimizer.with_index(ResumeIndex::new(embedder, Arc::new(store.vectors())))
        }
        None => optimizer,
    })
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let (optimizer, provider) = base_optimizer(args.dry_run, &args.fixtures).await?;
    let store = SqliteSessionStore::open(&args.db)
        .await
        .with_context(|| format!("opening {}", args.db.display()))?;
    let optimizer = with_embeddings(optimizer, &args.embeddings, provider.as_ref(), &store)?;
    let product = OptimizeProduct::new(optimizer, Arc::new(store.documents()), args.daily_quota);
    // One database: sessions, their runs' checkpoints and the documents.
    // The optimizer for MCP clients too: a call runs a session like POST /api/optimize,
    // its events as progress, its result as the answer.
    let mcp = McpFront::new("jd-optimizer", env!("CARGO_PKG_VERSION"))
        .with_instructions(
            "Tailors a resume to a job description: give both as text; the answer is the \
             optimized resume, its scores and what changed.",
        )
        .with_product(
            "optimize",
            "optimize_resume",
            "Optimizes a resume for a job description: analyzes the description, rewrites \
             the resume's bullets where it scores better (never inventing experience), and \
             answers with the optimized resume, its ATS scores before and after, the gaps \
             left and every change. Progress is reported as it goes.",
        )
        .with_product(
            "interview-prep",
            "prepare_interview",
            "Optimizes the resume, then writes the interview questions to expect.",
        )
        .with_product(
            "cover-letter",
            "write_cover_letter",
            "Optimizes the resume, then writes a cover letter for the job.",
        );
    let server = AgentServer::new(Arc::new(store))
        .with_product(Arc::new(product.interview_product(false)))
        .with_product(Arc::new(product.interview_product(true)))
        .with_product(Arc::new(product))
        .with_mcp(mcp);
    let resumed = server.resume_unfinished().await?;
    if resumed > 0 {
        println!("resumed {resumed} unfinished session(s)");
    }
    let Listening {
        server,
        listener,
        open_notice,
    } = listen_behind_auth(server, &args.host, args.port).await?;
    if let Some(notice) = open_notice {
        println!("{notice}");
    }
    println!("sessions in {}", args.db.display());
    println!(
        "listening on http://{} (POST /api/optimize, /api/interview-prep, /api/cover-letter; MCP at /mcp)",
        listener.local_addr()?
    );
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    server.serve_until(listener, shutdown).await?;
    Ok(())
}

async fn optimize(
    args: OptimizeArgs,
    interview: Option<InterviewRequest>,
) -> anyhow::Result<ExitCode> {
    let resume = read_resume_text(&args.resume)?;
    let jd = std::fs::read_to_string(&args.jd)
        .with_context(|| format!("reading {}", args.jd.display()))?;
    let mut request = OptimizeRequest::new(resume.clone(), jd).for_tenant(&args.tenant);
    request.user_facts = args.facts.clone();
    let budget = &mut request.config.budget;
    if let Some(seconds) = args.max_seconds {
        budget.max_wall_ms = seconds.saturating_mul(1000);
    }
    if let Some(tokens) = args.max_tokens {
        budget.max_tokens = tokens;
    }
    if let Some(calls) = args.max_calls {
        budget.max_calls = calls;
    }
    let optimizer = optimizer(&args).await?;

    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<OptimizeEvent>();
    let printer = tokio::spawn(async move {
        while let Some(event) = receiver.recv().await {
            eprintln!("{}", event.line());
        }
    });
    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let started = Instant::now();
    let session = format!("cli-{}", std::process::id());
    let outcome = optimizer
        .optimize(&request, &session, Arc::new(sender), cancel)
        .await;
    let _ = printer.await;
    let done = match outcome {
        Ok(done) => done,
        Err(OptimizeError::Input(error)) => {
            eprintln!("refused: {error}");
            return Ok(ExitCode::from(2));
        }
        Err(OptimizeError::Failed { reason, spent, .. }) => {
            eprintln!(
                "the optimization failed: {reason} ({} tokens in {} calls were spent)",
                spent.total_tokens(),
                spent.calls
            );
            return Ok(ExitCode::FAILURE);
        }
        Err(error) => return Err(error.into()),
    };
    let wall = started.elapsed();
    let docx = match &args.docx {
        Some(path) => Some(write_docx(&resume, &done, path)?),
        None => None,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&done.result)?);
    } else {
        print_summary(&done, wall, optimizer.cache().stats(), docx);
    }
    if let Some(request) = interview {
        let prep = optimizer
            .interviewer(None)
            .prepare(&done.state, &request, &CancellationToken::new())
            .await?;
        print_interview(&prep, args.json)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print_interview(prep: &InterviewPrep, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(prep)?);
        return Ok(());
    }
    if !prep.questions.is_empty() {
        println!("\ninterview questions:");
    }
    for (n, question) in prep.questions.iter().enumerate() {
        println!(
            "{:2}. [{:?}, {:?}] {}\n    {}",
            n + 1,
            question.category,
            question.difficulty,
            question.question_text,
            question.suggested_answer
        );
    }
    if let Some(letter) = &prep.cover_letter {
        println!(
            "\ncover letter ({:?}, {} words):\n\n{}",
            letter.tone, letter.words, letter.text
        );
    }
    println!(
        "\ninterview: {} tokens in {} call(s){}",
        prep.total_tokens_used,
        prep.model_calls,
        if prep.memory_only {
            ", from the memory profile"
        } else {
            ""
        }
    );
    Ok(())
}

fn write_docx(resume: &str, done: &Optimization, path: &Path) -> anyhow::Result<CheckedDocx> {
    let docx = optimized_docx(resume, &done.state)?;
    std::fs::write(path, &docx.bytes).with_context(|| format!("writing {}", path.display()))?;
    Ok(docx)
}

fn print_summary(
    done: &Optimization,
    wall: Duration,
    cache: jd_optimizer::cache::CacheStats,
    docx: Option<CheckedDocx>,
) {
    let r = &done.result;
    println!();
    for attempt in &r.attempts {
        println!(
            "attempt {} ({:?}): {:.1} by {:?}, the resume's own bullets {:.1} on that scale ({:+.1}); by the rules alone {:.1}{}",
            attempt.attempt,
            attempt.kind,
            attempt.score * 100.0,
            attempt.lane,
            attempt.baseline * 100.0,
            attempt.gain() * 100.0,
            attempt.rules_score * 100.0,
            if attempt.attempt == r.kept_attempt {
                "  <- kept"
            } else {
                ""
            }
        );
    }
    println!(
        "score: {:.1} (the resume's own bullets: {:.1}, {:+.1} points); {}",
        r.ats_score * 100.0,
        r.baseline_score * 100.0,
        r.gain_points(),
        r.kept_reason
    );
    let b = &r.budget;
    println!(
        "budget: {} of {} tokens, {} of {} calls, {:.1} s of {:.1} s; wall {:.1} s",
        b.tokens_used,
        b.limits.max_tokens,
        b.model_calls,
        b.limits.max_calls,
        b.wall_ms as f64 / 1000.0,
        b.limits.max_wall_ms as f64 / 1000.0,
        wall.as_secs_f64()
    );
    println!("cost: {}", done.spent.per_unit("optimization", 1));
    if let Some(stop) = &b.stop {
        println!("stopped early: {}", stop.message);
    }
    for degrade in &b.degrades {
        println!("degraded: {degrade:?}");
    }
    let hit = |h: Option<bool>| match h {
        Some(true) => "hit",
        Some(false) => "miss",
        None => "not asked",
    };
    println!(
        "cache: JD analysis {}, retrieval {} (this process: {} JD hits of {})",
        hit(r.cache.jd_analysis),
        hit(r.cache.retrieval),
        cache.jd_hits,
        cache.jd_hits + cache.jd_misses
    );
    println!("\nbullets rewritten (the resume's other bullets stay as they are):");
    for bullet in &r.optimized_bullets {
        println!(
            "  {} replaces {} [{}] {}\n      was: {}",
            bullet.id,
            bullet.replaces,
            bullet.sources.join(", "),
            bullet.text,
            bullet.original
        );
    }
    for dropped in &r.dropped_bullets {
        println!("  dropped: {} ({})", dropped.text, dropped.reason);
    }
    println!("\ngaps ({:?}):", r.gap_source);
    for skill in &r.gap_report.missing_skills {
        let priority = r
            .gap_report
            .priority
            .get(skill)
            .map_or("?".to_owned(), |p| format!("{p:?}").to_lowercase());
        println!("  {skill} ({priority})");
    }
    for qualification in &r.gap_report.missing_qualifications {
        println!("  qualification: {qualification}");
    }
    for skill in &r.gap_report.missing_soft_skills {
        println!("  soft skill not shown: {skill}");
    }
    for recommendation in &r.gap_report.recommendations {
        println!("  - {recommendation}");
    }
    for warning in &r.warnings {
        println!("warning: {warning}");
    }
    if let Some(docx) = docx {
        println!(
            "docx: written and read back: all {} lines of the resume in place, {} of them rewritten; its bullets score {:.1} by the rules",
            docx.lines,
            docx.rewritten,
            docx.score * 100.0
        );
    }
}
