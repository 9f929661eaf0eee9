//! Measures the retrieval parts: the local embedding model on 1,000 short texts, and a
//! top-10 query over 50,000 stored 384-dimension vectors in SQLite (exact search) and in
//! PostgreSQL + pgvector (HNSW). Prints the figures `docs/BENCHMARKS.md` records.
//!
//! ```text
//! cargo run --release -p examples --features retrieval --example vector_bench -- [--vectors 50000] [--postgres URL]
//! ```
//!
//! Needs `LOCAL_EMBEDDING_MODEL_DIR` (`cargo xtask setup` prints it); without
//! `--postgres` only SQLite is measured.

// A command-line program: its output is the point.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_backends::{PgVectorStore, SqliteSessionStore};
use agent_llm::{EmbeddingModel, EmbeddingRequest, LocalEmbeddingModel};
use agent_runtime::vectors::{VectorQuery, VectorRecord, VectorStore};
use clap::Parser;

/// Measures embedding and vector search.
#[derive(Debug, Parser)]
struct Args {
    #[command(flatten)]
    log: examples::telemetry::LogArgs,
    /// Vectors stored before querying.
    #[arg(long, default_value_t = 50_000)]
    vectors: usize,
    /// Queries timed per store.
    #[arg(long, default_value_t = 50)]
    queries: usize,
    /// Also measure PostgreSQL + pgvector at this URL.
    #[arg(long, value_name = "URL")]
    postgres: Option<String>,
}

const DIMENSIONS: usize = 384;

/// A random unit vector.
fn random_unit(rng: &mut fastrand::Rng) -> Vec<f32> {
    let v: Vec<f32> = (0..DIMENSIONS).map(|_| rng.f32() * 2.0 - 1.0).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
    v.into_iter().map(|x| x / norm).collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(at).copied().unwrap_or_default()
}

async fn measure(name: &str, store: Arc<dyn VectorStore>, args: &Args) -> anyhow::Result<()> {
    let mut rng = fastrand::Rng::with_seed(7);
    let collection = format!("bench_{}", std::process::id());
    let started = Instant::now();
    for start in (0..args.vectors).step_by(1_000) {
        let records: Vec<VectorRecord> = (start..(start + 1_000).min(args.vectors))
            .map(|i| VectorRecord {
                tenant: "bench".into(),
                id: format!("v{i}"),
                vector: random_unit(&mut rng),
                text: format!("record {i}"),
                metadata: BTreeMap::new(),
            })
            .collect();
        store.upsert(&collection, &records).await?;
    }
    let stored = started.elapsed();
    // One query to warm caches, then the timed ones.
    let warm = VectorQuery::new("bench", random_unit(&mut rng), 10);
    store.query(&collection, &warm).await?;
    let mut times = Vec::with_capacity(args.queries);
    for _ in 0..args.queries {
        let query = VectorQuery::new("bench", random_unit(&mut rng), 10);
        let started = Instant::now();
        let hits = store.query(&collection, &query).await?;
        times.push(started.elapsed());
        anyhow::ensure!(hits.len() == 10, "{name}: {} hits", hits.len());
    }
    times.sort();
    println!(
        "{name:<22} stored {} vectors in {:.1} s; top-10 query p50 {:.1} ms, p95 {:.1} ms",
        args.vectors,
        stored.as_secs_f64(),
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.95).as_secs_f64() * 1e3,
    );
    let ids: Vec<String> = (0..args.vectors).map(|i| format!("v{i}")).collect();
    for batch in ids.chunks(5_000) {
        store.delete(&collection, "bench", batch).await?;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _telemetry = examples::telemetry::install("vector_bench", "warn", args.log.log_format)?;
    let model = LocalEmbeddingModel::from_env()?;
    let words = [
        "senior",
        "backend",
        "engineer",
        "remote",
        "Europe",
        "Rust",
        "Kubernetes",
        "data",
        "pipelines",
        "team",
        "lead",
        "product",
        "design",
        "Berlin",
        "salary",
        "platform",
    ];
    let mut rng = fastrand::Rng::with_seed(1);
    let texts: Vec<String> = (0..1_000)
        .map(|_| {
            (0..rng.usize(6..14))
                .map(|_| words[rng.usize(..words.len())])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    model
        .embed(EmbeddingRequest {
            inputs: texts[..8].to_vec(),
            ..EmbeddingRequest::default()
        })
        .await?;
    let started = Instant::now();
    let answer = model
        .embed(EmbeddingRequest {
            inputs: texts.clone(),
            ..EmbeddingRequest::default()
        })
        .await?;
    let took = started.elapsed();
    println!(
        "local embeddings         {} short texts ({} tokens) in {:.2} s: {:.0} texts/s",
        answer.vectors.len(),
        answer.usage.input_tokens,
        took.as_secs_f64(),
        answer.vectors.len() as f64 / took.as_secs_f64()
    );
    let dir = tempfile_dir()?;
    let sqlite = SqliteSessionStore::open(dir.join("bench.db"))
        .await?
        .vectors();
    measure("SQLite (exact)", Arc::new(sqlite), &args).await?;
    if let Some(url) = &args.postgres {
        let pg = PgVectorStore::connect(url).await?;
        measure("PostgreSQL (HNSW)", Arc::new(pg), &args).await?;
    }
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("vector-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
