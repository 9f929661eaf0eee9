//! The page explorer (spec 002) from the command line, on a real headless Chromium:
//!
//! ```text
//! # Phase 1: explore a page with the models (or, with --dry-run, recorded answers for the
//! # fixture sites, which a directory argument serves on loopback)
//! cargo run --release -p examples --example page_explorer -- explore fixtures/sites/board-spa --dry-run
//! # Phase 2: collect the jobs with what Phase 1 found
//! cargo run --release -p examples --example page_explorer -- collect fixtures/sites/board-pages --phase1 explore-out/phase1.json
//! # What the model sees of a page
//! cargo run -p examples --example page_explorer -- observe http://127.0.0.1:8080/ --budget 2000
//! ```
//!
//! URL arguments may be a directory of static files, served on `127.0.0.1` for the run.
//! Needs Chromium (`apt-get install -y chromium`). Logs go to stderr (`RUST_LOG=debug`);
//! chromiumoxide's complaints about CDP messages it does not know are hidden unless asked for.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod collect_cmd;
mod explore_cmd;
mod fixtures;
mod target;

use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use page_explorer::{Browser as _, ChromiumBrowser, DEFAULT_BUDGET_TOKENS, LaunchOptions, observe};

/// Drive a real headless browser the way the page explorer does.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    #[command(flatten)]
    log: examples::telemetry::LogArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Phase 1: explore URL with the agents; write the Phase 1 output, the page graph and a
    /// screenshot per page.
    Explore(explore_cmd::ExploreArgs),
    /// Phase 2: collect the jobs listed at URL with a Phase 1 output; write JSON and CSV.
    Collect(collect_cmd::CollectArgs),
    /// Open URL and print the observation exactly as the model sees it.
    Observe {
        /// The page to open (or a directory to serve).
        url: String,
        /// The observation's budget, in tokens (about four characters each).
        #[arg(long, default_value_t = DEFAULT_BUDGET_TOKENS)]
        budget: usize,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<std::process::ExitCode> {
    let cli = Cli::parse();
    let _telemetry = examples::telemetry::install(
        "page_explorer",
        "warn,chromiumoxide=error",
        cli.log.log_format,
    )?;
    match cli.command {
        Command::Explore(args) => explore_cmd::run(args).await,
        Command::Collect(args) => collect_cmd::run(args).await,
        Command::Observe { url, budget } => {
            let target = target::Target::resolve(&url).await?;
            let browser = ChromiumBrowser::launch(LaunchOptions::default()).await?;
            let seen = async {
                browser.open(target.url()).await?;
                browser.wait_for_settle(Duration::from_secs(10)).await?;
                observe(&browser, None, budget).await
            }
            .await;
            browser.close().await;
            let seen = seen.with_context(|| format!("observing {url}"))?;
            print!("{}", seen.text);
            Ok(std::process::ExitCode::SUCCESS)
        }
    }
}
