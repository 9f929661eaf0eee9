//! `explore URL`: Phase 1 with the four agents, the live report on stdout, and the Phase 1
//! output, the page graph and a screenshot per page written to `--out`.
//!
//! Exploring is a durable run (`page_explorer::durable`): its checkpoints and the journal
//! of model answers are kept in `<out>/checkpoints`. Started again with the same
//! `--run-id` after a crash or a kill, it replays the answers already paid for and goes on
//! from there; a finished run's outputs are written again without exploring.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use agent_llm::testing::{LatencyModel, RECORDED_MODEL, RecordedModel};
use agent_llm::{ChatModel, ModelPrice, PricingTable, ProviderConfig};
use agent_runtime::checkpoint::FileCheckpointStore;
use agent_runtime::{CostLimits, CostMeter, EventSink, MeterLabels};
use anyhow::Context as _;
use page_explorer::agents::ExplorerModels;
use page_explorer::durable::{DurableExplore, explore_durable};
use page_explorer::{
    Breakers, ChromiumBrowser, DEFAULT_BUDGET_TOKENS, Exploration, ExploreEvent, ExploreOptions,
    LaunchOptions,
};
use tokio_util::sync::CancellationToken;

use crate::target::Target;

/// Arguments of `explore`.
#[derive(Debug, clap::Args)]
pub struct ExploreArgs {
    /// The page to explore, or a directory of static files to serve on loopback.
    url: String,
    /// What the Explorer should find out.
    #[arg(
        long,
        default_value = "Find out how this job site lists, filters and paginates jobs, and how to apply."
    )]
    task: String,
    /// Where to write phase1.json, graph.mmd, memory.json and screenshots/ (and the run's
    /// checkpoints/).
    #[arg(long, default_value = "explore-out")]
    out: PathBuf,
    /// The run's id: give the id of an interrupted run to resume it (it is printed at the
    /// start). Default: a new run.
    #[arg(long)]
    run_id: Option<String>,
    /// Answer with recorded model responses instead of a provider (for the fixture sites:
    /// fixtures/page-explorer/dry-run/<site>.json).
    #[arg(long)]
    dry_run: bool,
    /// The recording to answer from with --dry-run.
    #[arg(long, requires = "dry_run")]
    responses: Option<PathBuf>,
    /// With --dry-run: wait this many milliseconds before every recorded answer, as a real
    /// model would.
    #[arg(long, value_name = "MS", requires = "dry_run")]
    latency: Option<u64>,
    /// Circuit breaker: browser actions.
    #[arg(long, default_value_t = 50)]
    max_actions: usize,
    /// Circuit breaker: distinct pages.
    #[arg(long, default_value_t = 10)]
    max_pages: usize,
    /// Circuit breaker: wall time, in seconds.
    #[arg(long, default_value_t = 600)]
    max_seconds: u64,
    /// Stop when the model calls have cost this many USD.
    #[arg(long)]
    max_usd: Option<f64>,
    /// Stop when the model calls have used this many tokens (input and output).
    #[arg(long)]
    max_tokens: Option<u64>,
    /// Each observation's token budget.
    #[arg(long, default_value_t = DEFAULT_BUDGET_TOKENS)]
    budget: usize,
    /// Print the report as JSON lines instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `explore`: exit 0 when the Explorer finished, 3 when a breaker or Ctrl-C stopped it
/// (the output is still written), 1 on an error.
pub async fn run(args: ExploreArgs) -> anyhow::Result<ExitCode> {
    let target = Target::resolve(&args.url).await?;
    let limits = CostLimits {
        max_usd: args.max_usd,
        max_tokens: args.max_tokens,
        ..CostLimits::default()
    };
    let models = if args.dry_run {
        let meter = recorded_meter(limits);
        let path = match args.responses.clone() {
            Some(path) => path,
            None => crate::fixtures::recording(&format!("{}.json", target.name())).context(
                "finding the recorded answers (give --responses, or run inside the workspace)",
            )?,
        };
        let model = recorded_model(&path, args.latency)?;
        println!("dry run: model answers from {}", path.display());
        ExplorerModels::single(model, meter)
    } else {
        let mut provider = ProviderConfig::from_env()?.context(
            "no LLM provider is configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or use --dry-run",
        )?;
        // A local server says which model it serves, its context window and its slots:
        // the tiers then name the model that answers.
        provider
            .discover()
            .await
            .context("asking the model server which model it serves")?;
        println!("LIVE: {}", provider.describe());
        let meter = CostMeter::from_env(limits)?.with_labels(page_explorer_labels());
        ExplorerModels::from_provider(&provider, meter)?
    };
    let mut options = ExploreOptions::new(args.task.clone());
    options.budget_tokens = args.budget;
    options.breakers = Breakers {
        max_actions: args.max_actions,
        max_pages: args.max_pages,
        max_duration: Duration::from_secs(args.max_seconds),
        ..Breakers::default()
    };
    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("stopping: Ctrl-C (what was learned is kept)");
            on_ctrl_c.cancel();
        }
    });
    let json = args.json;
    let print = move |event: ExploreEvent| {
        if json {
            println!("{}", serde_json::to_string(&event).unwrap_or_default());
        } else {
            println!("{event}");
        }
    };
    let run_id = args
        .run_id
        .clone()
        .unwrap_or_else(|| format!("explore-{}", chrono::Utc::now().format("%Y%m%d-%H%M%S%3f")));
    let checkpoints = args.out.join("checkpoints");
    if !json {
        println!(
            "run {run_id} (checkpoints in {}; after an interruption, resume with --run-id {run_id})",
            checkpoints.display()
        );
    }
    let run = DurableExplore {
        run_id,
        store: Arc::new(FileCheckpointStore::new(&checkpoints)),
        report: Arc::new(print) as Arc<dyn EventSink<ExploreEvent>>,
        cancel,
    };
    let browser = Arc::new(ChromiumBrowser::launch(LaunchOptions::default()).await?);
    let explored = explore_durable(browser.clone(), models, target.url(), options, run).await;
    // The run is over: this is the last handle on the browser.
    if let Some(browser) = Arc::into_inner(browser) {
        browser.close().await;
    }
    let explored = explored?;
    let exploration = explored.exploration;
    let written = write_outputs(&exploration, &args.out)?;
    if !json {
        if explored.already_finished {
            println!("\nthe run had finished: its outputs are written again, nothing explored");
        }
        println!("\nwrote:");
        for path in written {
            println!("  {}", path.display());
        }
        let cost = &exploration.cost;
        println!(
            "model calls: {} ({} replayed from the interrupted run's journal), tokens: {} in / {} out, cost: ${:.4}{}",
            cost.calls,
            explored.replayed,
            cost.usage.input_tokens,
            cost.usage.output_tokens,
            cost.usd,
            if cost.unpriced_models.is_empty() {
                String::new()
            } else {
                format!(" (no price for {})", cost.unpriced_models.join(", "))
            }
        );
    }
    Ok(
        if exploration.completed && exploration.output.stopped.is_none() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(3)
        },
    )
}

/// Writes `phase1.json`, `graph.mmd`, `memory.json` and `screenshots/NN-<page>.png`.
fn write_outputs(exploration: &Exploration, out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let shots = out.join("screenshots");
    std::fs::create_dir_all(&shots).with_context(|| format!("creating {}", shots.display()))?;
    let mut written = Vec::new();
    let mut write = |path: PathBuf, bytes: &[u8]| -> anyhow::Result<()> {
        std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
        Ok(())
    };
    write(
        out.join("phase1.json"),
        serde_json::to_string_pretty(&exploration.output)?.as_bytes(),
    )?;
    write(
        out.join("graph.mmd"),
        exploration.memory.to_mermaid().as_bytes(),
    )?;
    write(
        out.join("memory.json"),
        serde_json::to_string_pretty(&exploration.memory)?.as_bytes(),
    )?;
    for (i, shot) in exploration.screenshots.iter().enumerate() {
        write(
            shots.join(format!("{:02}-{}.png", i + 1, shot.page_id)),
            &shot.png,
        )?;
    }
    Ok(written)
}

/// The model of a dry run: the recorded answers in `path` (the [`RecordedModel`] format),
/// each given after `latency_ms` when that is set.
pub fn recorded_model(path: &Path, latency_ms: Option<u64>) -> anyhow::Result<Arc<dyn ChatModel>> {
    let model = RecordedModel::from_file(path)?;
    Ok(match latency_ms.filter(|ms| *ms > 0) {
        Some(ms) => Arc::new(LatencyModel::new(model, Duration::from_millis(ms))),
        None => Arc::new(model),
    })
}

/// A meter on which recorded answers cost nothing (their tokens are still counted).
pub fn recorded_meter(limits: CostLimits) -> CostMeter {
    let pricing = PricingTable::default().with_price(RECORDED_MODEL, ModelPrice::FREE);
    CostMeter::with_pricing(limits, pricing).with_labels(page_explorer_labels())
}

/// What the explorer's model calls are counted under in the process metrics.
pub fn page_explorer_labels() -> MeterLabels {
    MeterLabels::product("page_explorer")
}
