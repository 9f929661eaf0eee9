//! The job-agent chat (spec 004): `serve` it behind the OpenAI-compatible endpoint, or
//! `chat` with it in the terminal.
//!
//! ```text
//! cargo run --release -p examples --example job_agent_chat -- serve [--port 8090] [--dry-run]
//! cargo run --release -p examples --example job_agent_chat -- chat [--dry-run] [--user NAME]
//! ```
//!
//! `--dry-run` answers from the recorded model of `fixtures/job-agent-chat/model.json`
//! and the recorded SerpAPI bodies of `fixtures/job-agent-chat/serpapi/` (served on a
//! loopback port to the real SerpAPI client), in an SQLite database in memory unless
//! `--db` names a file. Live, the model is the environment's provider (see the README);
//! jobs come from SerpAPI (`SERPAPI_API_KEY`, `SERPAPI_BASE_URL`) or, without a key, the
//! job boards of the companies the user names (`JOB_CHAT_BOARDS` for defaults); records
//! live in SQLite (`--db`, default `job-agent-chat.db`), or in PostgreSQL with pgvector
//! when `DATABASE_URL` is set; `--replay-search` answers searches from the recorded
//! SerpAPI bodies with a live model. Notifications: the console, email through
//! `SMTP_URL` to each user's own address, and the Slack and Teams webhooks each user sets
//! (`set_notification_channels`); `SLACK_WEBHOOK_URL` and `TEAMS_WEBHOOK_URL` serve the
//! terminal `chat` and `serve --single-user` only. A served chat takes resumes as
//! attached files (OpenAI `file` content parts) or pasted text; the terminal `chat`
//! also reads files from its `--resume-dir`. Keys for the endpoint: `CHAT_API_KEYS`
//! (comma-separated; `key:user` binds a key to one user); without any it listens on
//! loopback only.
//! User guide: `docs/job-agent-chat.md`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use examples::deployment::{Listening, listen_behind_auth};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use agent_backends::{PgSessionStore, PgVectorStore, SqliteSessionStore};
use agent_llm::testing::{HashedEmbeddings, dry_run_router};
use agent_llm::{ChatModel, EmbeddingModel, ModelRouter, ModelTier, ProviderConfig};
use agent_runtime::Session;
use agent_runtime::documents::DocumentStore;
use agent_runtime::sessions::SessionStore;
use agent_runtime::vectors::VectorStore;
use agent_server::AgentServer;
use agent_server::chat::{ChatAgent, ChatFront, ChatMessage, ChatProgress, ChatRole, ChatTurn};
use agent_server::mcp::{McpFront, agent_tools};
use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use job_agent_chat::dry_run::{REPLAY_KEY, SerpApiReplay, recorded_model};
use job_agent_chat::notify::{ConsoleNotifier, Notifications};
use job_agent_chat::providers::{BoardsProvider, JobProvider, SerpApiProvider};
use job_agent_chat::{ChatConfig, ChatStore, JobAgentChat, Services};
use job_agent_chat::{JOBS_COLLECTION, Ranking};
use job_capabilities::ats::{AtsClient, AtsEndpoints};
use job_capabilities::http::{PoliteClient, PolitePolicy};
use job_capabilities::retrieval::HybridRetriever;
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
#[command(about = "The job-agent chat: job search and application prep, OpenAI-compatible")]
struct Cli {
    #[command(flatten)]
    log: examples::telemetry::LogArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve POST /v1/chat/completions and GET /v1/models.
    Serve(ServeArgs),
    /// Chat in the terminal.
    Chat(ChatArgs),
}

#[derive(Args)]
struct Common {
    /// Answer from the recorded model and the recorded SerpAPI bodies.
    #[arg(long)]
    dry_run: bool,
    /// The dry run's fixtures.
    #[arg(long, default_value = "fixtures/job-agent-chat")]
    fixtures: PathBuf,
    /// The SQLite database (live default `job-agent-chat.db`; a dry run keeps memory).
    #[arg(long)]
    db: Option<PathBuf>,
    /// Where embeddings for ranking come from: provider, hashed (word hashing, no model)
    /// or none. Default: hashed in a dry run, provider live.
    #[arg(long)]
    embeddings: Option<String>,
    /// Live model, but searches answered from the recorded SerpAPI bodies (served to the
    /// real SerpAPI client on a loopback port): for machines that cannot reach SerpAPI.
    #[arg(long)]
    replay_search: bool,
    /// The longest one turn may work, in seconds.
    #[arg(long, default_value_t = 300)]
    turn_seconds: u64,
    /// Model calls per turn.
    #[arg(long, default_value_t = 8)]
    max_rounds: u32,
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    common: Common,
    /// Port.
    #[arg(long, default_value_t = 8090)]
    port: u16,
    /// Address (kept on loopback when no CHAT_API_KEYS are set).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// One user only: SLACK_WEBHOOK_URL and TEAMS_WEBHOOK_URL are theirs (otherwise each
    /// user sets their own and those variables are left unused).
    #[arg(long)]
    single_user: bool,
    /// The page explorer's Phase 1 results the MCP front's `read_phase1_result` reads:
    /// one folder per site (`page_explorer explore --out <this>/<site>`).
    #[arg(long, default_value = "explorer-results")]
    explorer_results: PathBuf,
}

#[derive(Args)]
struct ChatArgs {
    #[command(flatten)]
    common: Common,
    /// Who is chatting (records are kept per user).
    #[arg(long, default_value = "me")]
    user: String,
    /// The folder the upload_resume tool reads resume files from (nothing outside it).
    #[arg(long, default_value = ".")]
    resume_dir: PathBuf,
}

/// Everything a run is made of.
struct Built {
    chat: Arc<JobAgentChat>,
    sessions: Arc<dyn SessionStore>,
    documents: Arc<dyn DocumentStore>,
    /// Kept alive for the dry run's provider.
    _replay: Option<SerpApiReplay>,
    described: String,
}

/// The model and the outside world: recorded, or live.
struct Wiring {
    model: Arc<dyn ChatModel>,
    router: ModelRouter,
    provider_embeddings: Option<Arc<dyn EmbeddingModel>>,
    replay: Option<SerpApiReplay>,
    provider: Arc<dyn JobProvider>,
    notifications: Notifications,
}

/// The stores: sessions, documents, vectors, and where they are.
type Stores = (
    Arc<dyn SessionStore>,
    Arc<dyn DocumentStore>,
    Arc<dyn VectorStore>,
    String,
);

async fn stores(common: &Common) -> anyhow::Result<Stores> {
    if let Some(url) = std::env::var("DATABASE_URL").ok().filter(|u| !u.is_empty()) {
        let sessions = PgSessionStore::connect(&url)
            .await
            .context("connecting to DATABASE_URL")?;
        let vectors = PgVectorStore::connect(&url)
            .await
            .context("pgvector at DATABASE_URL (the vector extension must be available)")?;
        let documents = Arc::new(sessions.documents());
        return Ok((
            Arc::new(sessions),
            documents,
            Arc::new(vectors),
            "PostgreSQL + pgvector (DATABASE_URL)".into(),
        ));
    }
    let (store, where_) = match (&common.db, common.dry_run) {
        (Some(path), _) => (
            SqliteSessionStore::open(path).await?,
            path.display().to_string(),
        ),
        (None, true) => (SqliteSessionStore::in_memory().await?, "memory".to_owned()),
        (None, false) => {
            let path = PathBuf::from("job-agent-chat.db");
            (
                SqliteSessionStore::open(&path).await?,
                path.display().to_string(),
            )
        }
    };
    let documents = Arc::new(store.documents());
    let vectors = Arc::new(store.vectors());
    Ok((
        Arc::new(store),
        documents,
        vectors,
        format!("SQLite ({where_})"),
    ))
}

async fn build(
    common: &Common,
    upload_root: Option<PathBuf>,
    single_user: bool,
) -> anyhow::Result<Built> {
    let (sessions, documents, vectors, store_name) = stores(common).await?;
    let Wiring {
        model,
        router,
        provider_embeddings,
        replay,
        provider,
        notifications,
    } = if common.dry_run {
        let fixtures = examples::fixtures::locate(&common.fixtures)?;
        let replay = SerpApiReplay::start(&fixtures.join("serpapi")).await?;
        Wiring {
            model: Arc::new(recorded_model(&fixtures)?),
            router: dry_run_router(),
            provider_embeddings: None,
            provider: Arc::new(SerpApiProvider::new(replay.base.clone(), REPLAY_KEY)),
            replay: Some(replay),
            // Users' webhooks may be a local receiver in a dry run.
            notifications: Notifications::new()
                .with(Arc::new(ConsoleNotifier))
                .with_loopback_webhooks(),
        }
    } else {
        let mut config = ProviderConfig::from_env()?.context(
            "no LLM provider configured: set LLM_PROVIDER and its key or base URL, or use --dry-run",
        )?;
        config.discover().await?;
        eprintln!("{}", config.describe());
        let replay = if common.replay_search {
            let fixtures = examples::fixtures::locate(&common.fixtures)?;
            Some(SerpApiReplay::start(&fixtures.join("serpapi")).await?)
        } else {
            None
        };
        let provider: Arc<dyn JobProvider> = match (&replay, SerpApiProvider::from_env()) {
            (Some(replay), _) => Arc::new(SerpApiProvider::new(replay.base.clone(), REPLAY_KEY)),
            (None, Some(serp)) => Arc::new(serp),
            (None, None) => {
                let client = AtsClient::new(
                    PoliteClient::new(PolitePolicy::default()),
                    AtsEndpoints::from_env(),
                );
                let boards = std::env::var("JOB_CHAT_BOARDS").unwrap_or_default();
                Arc::new(BoardsProvider::new(Arc::new(client)).with_boards(&boards))
            }
        };
        Wiring {
            model: config.chat_model(ModelTier::Primary)?,
            router: config.router.clone(),
            provider_embeddings: config.embedding_model().ok(),
            replay,
            provider,
            notifications: Notifications::from_env(single_user),
        }
    };
    let embeddings = common
        .embeddings
        .clone()
        .unwrap_or_else(|| if common.dry_run { "hashed" } else { "provider" }.to_owned());
    let embedder: Option<Arc<dyn EmbeddingModel>> = match embeddings.as_str() {
        "hashed" => Some(Arc::new(HashedEmbeddings::new(256))),
        "provider" => Some(
            provider_embeddings
                .context("--embeddings provider needs a live provider with embeddings")?,
        ),
        "none" => None,
        other => anyhow::bail!("--embeddings is provider, hashed or none, not {other}"),
    };
    let ranking = Ranking::new(embedder.map(|e| HybridRetriever::new(e, vectors, JOBS_COLLECTION)));
    let described = format!(
        "records in {store_name}; jobs from {}; ranking embeddings: {embeddings}; notifications: {notifications:?}",
        provider.name()
    );
    let services = Arc::new(Services {
        store: ChatStore::new(documents.clone()),
        provider,
        ranking,
        notifications,
        upload_root,
    });
    let config = ChatConfig {
        turn_timeout: Duration::from_secs(common.turn_seconds),
        max_rounds: common.max_rounds,
        ..ChatConfig::default()
    };
    Ok(Built {
        chat: Arc::new(JobAgentChat::with_config(services, model, router, config)),
        sessions,
        documents,
        _replay: replay,
        described,
    })
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let built = build(&args.common, None, args.single_user).await?;
    let front = ChatFront::new(built.chat.clone(), built.documents.clone());
    // The job tools, and the explorer's results, for MCP clients: each call for the
    // caller's user, as its chat turns are.
    let explorer = agent_tools(
        vec![page_explorer::phase1_results_tool::<(), ()>(
            args.explorer_results.clone(),
        )],
        |_owner: &str| Session::new(uuid::Uuid::new_v4().to_string(), ()),
    );
    let mcp = McpFront::new("job-agent-chat", env!("CARGO_PKG_VERSION"))
        .with_instructions(
            "Job search tools: search jobs, keep the ones worth it, rank them against the \
             user's profile, prepare an application; and what the page explorer learned \
             about a job site.",
        )
        .with_capabilities(built.chat.mcp_capabilities())
        .with_capabilities(explorer);
    let tools = mcp.tool_names().join(", ");
    let server = AgentServer::new(built.sessions)
        .with_chat(front)
        .with_mcp(mcp);
    let Listening {
        server,
        listener,
        open_notice,
    } = listen_behind_auth(server, &args.host, args.port).await?;
    if let Some(notice) = open_notice {
        println!("{notice}");
    }
    println!("{}", built.described);
    println!(
        "POST /v1/chat/completions, GET /v1/models; model \"{}\"",
        built.chat.models().join("\", \"")
    );
    println!("MCP (streamable HTTP) at /mcp: {tools}");
    println!("listening on http://{}/v1", listener.local_addr()?);
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    server.serve_until(listener, shutdown).await?;
    Ok(())
}

async fn chat(args: ChatArgs) -> anyhow::Result<()> {
    let built = build(&args.common, Some(args.resume_dir.clone()), true).await?;
    println!("{}", built.described);
    println!(
        "Chatting as {:?}. Type your message; \"exit\" or Ctrl-D ends.",
        args.user
    );
    let mut messages: Vec<ChatMessage> = Vec::new();
    let stdin = std::io::stdin();
    loop {
        print!("\nyou> ");
        std::io::stdout().flush()?;
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if matches!(line, "exit" | "quit") {
            break;
        }
        messages.push(ChatMessage::new(ChatRole::User, line));
        let (progress, mut notes) = ChatProgress::channel();
        let printer = tokio::spawn(async move {
            while let Some(note) = notes.recv().await {
                println!("{note}");
            }
        });
        let cancellation = CancellationToken::new();
        let on_ctrl_c = cancellation.clone();
        let watcher = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_ctrl_c.cancel();
            }
        });
        let turn = ChatTurn {
            tenant: agent_server::auth::DEFAULT_TENANT.into(),
            user: args.user.clone(),
            conversation: Some("terminal".into()),
            model: built.chat.models().remove(0),
            messages: messages.clone(),
            cancellation,
        };
        let reply = built.chat.reply(turn, progress).await;
        watcher.abort();
        let _ = printer.await;
        match reply {
            Ok(reply) => {
                println!("\nagent> {}", reply.text);
                messages.push(ChatMessage::new(ChatRole::Assistant, reply.text));
            }
            Err(error) => {
                println!("\n(error: {error})");
                messages.pop();
            }
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let _telemetry = match examples::telemetry::install(
        "job_agent_chat",
        "warn,job_capabilities::notify::console=info",
        cli.log.log_format,
    ) {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("error: {error:#}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Serve(args) => serve(args).await,
        Command::Chat(args) => chat(args).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
