//! The job hunter (spec 000): resume and preferences in, ranked and scored jobs out.
//!
//! ```text
//! cargo run --release -p examples --example job_hunter -- run --resume FILE --prefs TEXT \
//!     [--output-dir DIR] [--run-id ID] [--dry-run] [--latency MS] [--max-cost USD]
//! cargo run --release -p examples --example job_hunter -- fetch-board URL
//! ```
//!
//! `run` exits 0 on success, 3 when the cost limit made the run partial, 1 when it
//! failed. Run it again with the same `--run-id` to resume a run that was interrupted.
//! Settings come from `JH_` variables (see `job_hunter::Settings`).

// A command-line program: its output is the point.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::HashMap;
use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use agent_runtime::graph::RunStatus;
use anyhow::{Context as _, bail};
use clap::{Parser, Subcommand};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use job_capabilities::ats::{AtsClient, AtsEndpoints, JobBoardClient as _, detect_ats};
use job_capabilities::http::{PoliteClient, PolitePolicy};
use job_hunter::models::CompanyOutcome;
use job_hunter::{Deps, HuntEvent, HuntResult, JobHunter, RunConfig, Settings};

/// Prints a line to stdout; a closed pipe (`| head`) is not an error.
macro_rules! say {
    () => {{
        let _ = writeln!(std::io::stdout());
    }};
    ($($arg:tt)+) => {{
        let _ = writeln!(std::io::stdout(), $($arg)+);
    }};
}

/// Find, score and rank jobs for a resume (spec 000).
#[derive(Debug, Parser)]
#[command(version)]
struct Cli {
    #[command(flatten)]
    log: examples::telemetry::LogArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run (or resume) the eight-step pipeline.
    Run(RunArgs),
    /// Print the jobs of one Greenhouse, Lever, Ashby or Workday board as JSON lines.
    FetchBoard {
        /// The board's URL (e.g. https://boards.greenhouse.io/acme).
        url: String,
        /// The company name to put on the jobs (default: the board token).
        #[arg(long)]
        company: Option<String>,
    },
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The resume: PDF, DOCX or TXT.
    #[arg(long)]
    resume: PathBuf,
    /// What you are looking for, in your own words.
    #[arg(long)]
    prefs: String,
    /// Where the CSV, XLSX and email go (default: JH_OUTPUT_DIR or ./output).
    #[arg(long)]
    output_dir: Option<PathBuf>,
    /// The run id; an existing run with this id is resumed.
    #[arg(long)]
    run_id: Option<String>,
    /// Use recorded fixtures for the model, search, job boards and careers pages.
    #[arg(long)]
    dry_run: bool,
    /// Where the dry-run fixtures are (relative to the current directory).
    #[arg(long, default_value = job_hunter::dry_run::DEFAULT_FIXTURES)]
    fixtures: PathBuf,
    /// Add this many milliseconds to every model call (dry run), to show concurrency.
    #[arg(long, value_name = "MS")]
    latency: Option<u64>,
    /// Hard cost limit in USD (overrides JH_MAX_COST_PER_RUN_USD).
    #[arg(long, value_name = "USD")]
    max_cost: Option<f64>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let _telemetry = match examples::telemetry::install("job_hunter", "error", cli.log.log_format) {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("error: {error:#}");
            return ExitCode::from(1);
        }
    };
    let outcome = match cli.command {
        Command::Run(args) => run(args).await,
        Command::FetchBoard { url, company } => fetch_board(&url, company).await.map(|()| 0),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

async fn fetch_board(url: &str, company: Option<String>) -> anyhow::Result<()> {
    let Some(board) = detect_ats(url) else {
        bail!("{url} is not a Greenhouse, Lever, Ashby or Workday job board URL");
    };
    let client = AtsClient::new(
        PoliteClient::new(PolitePolicy::default()),
        AtsEndpoints::from_env(),
    );
    let company = company.unwrap_or_else(|| board.token.clone());
    let jobs = client
        .fetch_jobs(&board, &company)
        .await
        .with_context(|| format!("fetching the {} board {:?}", board.kind, board.token))?;
    for job in &jobs {
        say!("{}", serde_json::to_string(job)?);
    }
    eprintln!(
        "{} jobs from the {} board {:?}",
        jobs.len(),
        board.kind,
        board.token
    );
    Ok(())
}

async fn run(args: RunArgs) -> anyhow::Result<u8> {
    let mut settings = Settings::from_env()?;
    if let Some(max) = args.max_cost {
        if !(max.is_finite() && max >= 0.0) {
            bail!("--max-cost must be a non-negative amount of USD");
        }
        settings.max_cost_per_run_usd = max;
        settings.warn_cost_threshold_usd = settings.warn_cost_threshold_usd.min(max);
    }
    if let Some(dir) = &args.output_dir {
        settings.output_dir = dir.clone();
    }
    let latency = args.latency.map(Duration::from_millis);
    let deps = if args.dry_run {
        let fixtures = examples::fixtures::locate(&args.fixtures)
            .context("the dry run's fixtures (run from the workspace, or pass --fixtures)")?;
        say!(
            "DRY RUN: model, web search, job boards and careers pages answer from recorded fixtures in {} (resume reading and ATS detection are real{}); no mail is sent, the summary is written as an .eml file{}",
            fixtures.display(),
            latency
                .map(|l| format!(", {} ms added to every model call", l.as_millis()))
                .unwrap_or_default(),
            if settings.smtp_url.is_some() {
                " (SMTP_URL is ignored)"
            } else {
                ""
            }
        );
        Deps::dry_run(&fixtures, &settings, latency)?
    } else {
        if latency.is_some() {
            bail!("--latency only applies to --dry-run");
        }
        let mut provider = job_hunter::deps::live_provider()?;
        // A local server says which model it serves: the tiers, the banner and the
        // prices then name the model that answers.
        provider
            .discover()
            .await
            .context("asking the model server which model it serves")?;
        settings.adopt_provider_models(&provider, |name| std::env::var(name).ok());
        say!(
            "LIVE: {}; fast model {}, quality model {}",
            provider.describe(),
            settings.haiku_model,
            settings.sonnet_model
        );
        Deps::from_provider(&provider, &settings)?
    };
    let run_id = args
        .run_id
        .unwrap_or_else(|| chrono::Local::now().format("run_%Y%m%d_%H%M%S").to_string());
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    let deps = deps.with_events(Arc::new(sender));
    let display = tokio::spawn(show_progress(receiver));
    let cancel = tokio_util::sync::CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("interrupted: stopping after saving what is done");
            on_interrupt.cancel();
        }
    });
    let hunter = JobHunter::new(deps, settings.clone()).with_cancellation(cancel);
    let outcome = hunter
        .run(RunConfig {
            run_id,
            resume_path: args.resume,
            preferences: args.prefs,
            output_dir: settings.output_dir.clone(),
        })
        .await;
    drop(hunter);
    let _ = display.await;
    let result = outcome?;
    print_summary(&result, &settings, latency);
    Ok(match result.status {
        RunStatus::Success => 0,
        RunStatus::Partial => 3,
        RunStatus::Failed => 1,
    })
}

/// Renders progress events: a line per step and per company, bars for jobs and batches.
async fn show_progress(mut events: tokio::sync::mpsc::UnboundedReceiver<HuntEvent>) {
    let terminal = std::io::stderr().is_terminal();
    let multi = MultiProgress::with_draw_target(if terminal {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    let line = |text: String| {
        if terminal {
            let _ = multi.println(text);
        } else {
            say!("{text}");
        }
    };
    let style = ProgressStyle::with_template("  {prefix:14} [{bar:30}] {pos}/{len} {elapsed}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    let mut bars: HashMap<String, ProgressBar> = HashMap::new();
    while let Some(event) = events.recv().await {
        match event {
            HuntEvent::StepStarted { step } => line(format!("> {step}")),
            HuntEvent::StepSkipped { step } => {
                line(format!("- {step}: done in an earlier run, skipped"))
            }
            HuntEvent::StepFinished { step, summary } => {
                if let Some(bar) = bars.remove(&step) {
                    bar.finish_and_clear();
                }
                line(format!("  {step}: {summary}"));
            }
            HuntEvent::CompanyFinished { company, outcome } => {
                line(format!("    {company}: {}", outcome.describe()))
            }
            HuntEvent::Progress { step, done, total } => {
                let bar = bars.entry(step.clone()).or_insert_with(|| {
                    let bar = multi.add(ProgressBar::new(total as u64));
                    bar.set_style(style.clone());
                    bar.set_prefix(step.clone());
                    bar
                });
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            }
            HuntEvent::CostWarning {
                spent_usd,
                threshold_usd,
            } => line(format!(
                "  ! cost ${spent_usd:.4} passed the warning threshold ${threshold_usd:.2}"
            )),
            HuntEvent::Notice { message } => line(format!("  note: {message}")),
        }
    }
    for bar in bars.into_values() {
        bar.finish_and_clear();
    }
}

/// `a, b, c`, or `(none)`.
fn listed(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".to_owned()
    } else {
        items.join(", ")
    }
}

fn print_summary(result: &HuntResult, settings: &Settings, latency: Option<Duration>) {
    let state = &result.state;
    say!();
    say!(
        "Run {}: {}",
        result.run_id,
        result.status.as_str().to_uppercase()
    );
    if let Some(reason) = &result.reason {
        say!("  reason: {reason}");
        if result.status != RunStatus::Success && state.profile.is_some() {
            say!(
                "  to resume: the same command with --run-id {}",
                result.run_id
            );
        }
    }
    if result.resumed {
        say!("  resumed: skipped {}", result.steps_skipped.join(", "));
    }
    say!(
        "  jobs: {}; {} processed, {} scored",
        state.job_counts.describe(),
        state.jobs.len(),
        state.scored.len()
    );
    if let Some(prefs) = &state.preferences {
        say!(
            "  search: {}; places: {}; remote: {:?}",
            listed(&prefs.target_titles),
            listed(&prefs.locations),
            prefs.remote
        );
    }
    if !state.exclusions.is_empty() {
        say!("  exclusions:");
        for exclusion in &state.exclusions {
            say!("    {}", exclusion.describe());
        }
    }
    say!("  companies:");
    for report in &state.company_reports {
        let counts = match report.outcome {
            CompanyOutcome::JobsFetched { .. } => format!(": {}", report.jobs.describe()),
            _ => String::new(),
        };
        say!(
            "    {:<24} {}{counts}",
            report.company,
            report.outcome.describe()
        );
    }
    if !state.scored.is_empty() {
        say!("  top {}:", state.scored.len().min(5));
        for (rank, s) in state.scored.iter().take(5).enumerate() {
            say!(
                "    {}. [{:>3}] {} at {} ({})",
                rank + 1,
                s.score,
                s.job.title,
                s.job.company,
                s.job.location.as_deref().unwrap_or("location not stated")
            );
        }
    }
    say!(
        "  {}",
        job_hunter::llm::describe_cost(
            &result.cost,
            settings.max_cost_per_run_usd,
            result.state.job_counts.fetched as u64
        )
    );
    let path = &result.critical_path;
    let mut timing = format!(
        "  wall time: {:.2} s; model calls: {} this run; critical path: {} sequential waves of calls (concurrency {})",
        result.duration.as_secs_f64(),
        path.calls,
        path.waves,
        settings.max_concurrency
    );
    if let Some(latency) = latency {
        let estimate = path.estimate(latency);
        timing.push_str(&format!(
            " = {:.2} s at {} ms per call; wall/critical = {:.2}",
            estimate.as_secs_f64(),
            latency.as_millis(),
            result.duration.as_secs_f64() / estimate.as_secs_f64().max(f64::EPSILON)
        ));
    }
    say!("{timing}");
    if !state.issues.is_empty() {
        say!("  issues: {}", state.issues.len());
        for issue in state.issues.iter().take(10) {
            say!("    {}", issue.describe());
        }
    }
    if let Some(note) = &state.search_note {
        say!("  note: {note}");
    }
    if !state.output_files.is_empty() {
        say!("  files:");
        for file in &state.output_files {
            say!("    {}", file.display());
        }
    }
    if let Some(n) = &state.notification {
        say!("  email: {} to {}", n.transport, n.to.join(", "));
    }
}
