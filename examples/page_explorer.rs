//! The page explorer (spec 002) from the command line: starts a headless Chromium, opens a
//! page and prints what the model would see of it.
//!
//! ```text
//! cargo run -p examples --example page_explorer -- observe http://127.0.0.1:8080/ --budget 2000
//! ```
//!
//! Needs Chromium (`apt-get install -y chromium`). Logs go to stderr (`RUST_LOG=debug`); chromiumoxide's
//! complaints about CDP messages it does not know are hidden unless asked for.
#![allow(clippy::print_stdout)]

use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use page_explorer::{Browser as _, ChromiumBrowser, DEFAULT_BUDGET_TOKENS, LaunchOptions, observe};

/// Drive a real headless browser the way the page explorer does.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Open URL and print the observation exactly as the model sees it.
    Observe {
        /// The page to open.
        url: String,
        /// The observation's budget, in tokens (about four characters each).
        #[arg(long, default_value_t = DEFAULT_BUDGET_TOKENS)]
        budget: usize,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,chromiumoxide=error")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Observe { url, budget } => {
            let browser = ChromiumBrowser::launch(LaunchOptions::default()).await?;
            let seen = async {
                browser.open(&url).await?;
                browser.wait_for_settle(Duration::from_secs(10)).await?;
                observe(&browser, None, budget).await
            }
            .await;
            browser.close().await;
            let seen = seen.with_context(|| format!("observing {url}"))?;
            print!("{}", seen.text);
        }
    }
    Ok(())
}
