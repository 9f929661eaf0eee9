//! The JD optimizer's benchmark over the fixture pairs (`fixtures/jd-optimizer/pairs`).
//!
//! ```text
//! cargo run --release -p examples --example jd_bench -- [--latency-ms 2000] [--live]
//! ```
//!
//! Prints, per pair and over all: tokens and model calls per optimization (median, p95),
//! cold (a new optimizer: nothing cached) and warm (the same JD again: its analysis
//! cached); the deterministic scorer's latency; wall time with every model call delayed
//! by `--latency-ms` (a simulated model, 2 s by default; the pairs run at once, as
//! independent users would); and the score's spread when each pair is optimized three
//! times. `--dry-run` answers (the default) come from the recorded answers, so their
//! spread is 0 by construction; `--live` asks the environment's provider, where the
//! spread measures the model.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_llm::testing::LatencyModel;
use agent_llm::{ModelTier, ProviderConfig};
use anyhow::Context;
use clap::Parser;
use jd_optimizer::dry_run::{FixturePair, pairs};
use jd_optimizer::scoring::score_by_rules;
use jd_optimizer::{JdOptimizer, Optimization, OptimizeRequest};
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
#[command(about = "Tokens, calls, latency and stability of the JD optimizer on the fixture pairs.")]
struct Args {
    #[command(flatten)]
    log: examples::telemetry::LogArgs,
    /// Delay added to every model call, in milliseconds.
    #[arg(long, default_value_t = 2_000)]
    latency_ms: u64,
    /// Optimizations of each pair for the stability figure.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Ask the environment's provider instead of the recorded answers.
    #[arg(long)]
    live: bool,
    /// The fixtures.
    #[arg(long, default_value = "fixtures/jd-optimizer")]
    fixtures: PathBuf,
}

fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

async fn optimizer(args: &Args) -> anyhow::Result<JdOptimizer> {
    let optimizer = if args.live {
        let mut provider = ProviderConfig::from_env()?
            .context("--live needs an LLM provider in the environment")?;
        provider.discover().await?;
        JdOptimizer::new(
            provider.chat_model(ModelTier::Primary)?,
            provider.router.clone(),
        )
    } else {
        jd_optimizer::dry_run::optimizer(&args.fixtures)?
    };
    let latency = Duration::from_millis(args.latency_ms);
    Ok(optimizer.with_model(|model| Arc::new(LatencyModel::new(model, latency))))
}

async fn run(
    optimizer: &JdOptimizer,
    pair: &FixturePair,
    run: usize,
) -> anyhow::Result<(Optimization, Duration)> {
    let started = Instant::now();
    let done = optimizer
        .optimize(
            &OptimizeRequest::new(&pair.resume, &pair.jd),
            &format!("{}-{run}", pair.name),
            Arc::new(agent_runtime::CollectingSink::default()),
            CancellationToken::new(),
        )
        .await
        .with_context(|| format!("{} run {run}", pair.name))?;
    Ok((done, started.elapsed()))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = Args::parse();
    let _telemetry = examples::telemetry::install("jd_bench", "warn", args.log.log_format)?;
    args.fixtures = examples::fixtures::locate(&args.fixtures)?;
    let pairs = pairs(&args.fixtures)?;
    println!(
        "{} pairs, model calls delayed {} ms, {} runs each, {}",
        pairs.len(),
        args.latency_ms,
        args.runs,
        if args.live {
            "live provider"
        } else {
            "recorded answers"
        }
    );

    // One optimizer per pair, so each pair's first run is cold and the rest warm; the
    // pairs run at once.
    let mut tasks = Vec::new();
    for pair in pairs.clone() {
        let optimizer = optimizer(&args).await?;
        let runs = args.runs;
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            for n in 0..runs {
                out.push(run(&optimizer, &pair, n).await);
            }
            (pair.name, out)
        }));
    }
    let (mut cold_tokens, mut cold_calls, mut warm_tokens, mut warm_calls, mut walls) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut spreads = Vec::new();
    println!(
        "\n| pair | kept score (the resume's own) | tokens cold / warm | calls cold / warm | wall cold (s) | spread (points) |\n|---|---|---|---|---|---|"
    );
    for task in tasks {
        let (name, runs) = task.await?;
        let runs: Vec<(Optimization, Duration)> =
            runs.into_iter().collect::<anyhow::Result<_>>()?;
        let scores: Vec<f64> = runs
            .iter()
            .map(|(d, _)| d.result.ats_score * 100.0)
            .collect();
        let spread = percentile(&scores, 1.0) - percentile(&scores, 0.0);
        spreads.push(spread);
        let (cold, cold_wall) = &runs[0];
        cold_tokens.push(cold.result.total_tokens_used as f64);
        cold_calls.push(cold.result.model_calls as f64);
        walls.push(cold_wall.as_secs_f64());
        for (warm, _) in &runs[1..] {
            warm_tokens.push(warm.result.total_tokens_used as f64);
            warm_calls.push(warm.result.model_calls as f64);
        }
        let warm = runs.get(1).map(|(d, _)| d);
        println!(
            "| {name} | {:.1} ({:.1}) | {} / {} | {} / {} | {:.1} | {spread:.1} |",
            cold.result.ats_score * 100.0,
            cold.result.baseline_score * 100.0,
            cold.result.total_tokens_used,
            warm.map_or("-".into(), |d| d.result.total_tokens_used.to_string()),
            cold.result.model_calls,
            warm.map_or("-".into(), |d| d.result.model_calls.to_string()),
            cold_wall.as_secs_f64(),
        );
    }

    // The deterministic scorer alone, on every pair's kept bullets (the resume's own with
    // the kept rewrites in place).
    let optimizer = jd_optimizer::dry_run::optimizer(&args.fixtures)?;
    let mut scorer_us = Vec::new();
    for pair in &pairs {
        let (done, _) = run(&optimizer, pair, 99).await?;
        let analysis = done.state.jd_analysis.clone().unwrap_or_default();
        let bullets = jd_optimizer::bullets::current_bullets(&done.state);
        for _ in 0..200 {
            let started = Instant::now();
            std::hint::black_box(score_by_rules(&analysis, &bullets, 0.75));
            scorer_us.push(started.elapsed().as_secs_f64() * 1e6);
        }
    }

    println!("\n| figure | median | p95 | target |\n|---|---|---|---|");
    println!(
        "| tokens per optimization, cold | {:.0} | {:.0} | median ≤ 2,000 (spec V2: 2,400-4,800) |",
        percentile(&cold_tokens, 0.5),
        percentile(&cold_tokens, 0.95)
    );
    println!(
        "| tokens per optimization, warm | {:.0} | {:.0} | median ≤ 1,400 |",
        percentile(&warm_tokens, 0.5),
        percentile(&warm_tokens, 0.95)
    );
    println!(
        "| model calls, cold | {:.0} | {:.0} | median ≤ 4 |",
        percentile(&cold_calls, 0.5),
        percentile(&cold_calls, 0.95)
    );
    println!(
        "| model calls, warm | {:.0} | {:.0} | |",
        percentile(&warm_calls, 0.5),
        percentile(&warm_calls, 0.95)
    );
    println!(
        "| wall time, cold, {} ms a call (s) | {:.1} | {:.1} | median < 22, p95 < 40 |",
        args.latency_ms,
        percentile(&walls, 0.5),
        percentile(&walls, 0.95)
    );
    println!(
        "| deterministic scorer (µs) | {:.0} | {:.0} | < 50,000 |",
        percentile(&scorer_us, 0.5),
        percentile(&scorer_us, 0.95)
    );
    println!(
        "| score spread over {} runs (points) | {:.1} | {:.1} | ≤ 2 |",
        args.runs,
        percentile(&spreads, 0.5),
        percentile(&spreads, 1.0)
    );
    Ok(())
}
