//! Evaluates the job rankers on a labeled set: for every profile, the jobs ranked by
//! cosine similarity only, by full text only (BM25 / `ts_rank`), by both fused (hybrid,
//! reciprocal rank) and by the composite of spec 004 on top of hybrid retrieval; prints
//! NDCG@10 (gains `2^grade - 1`) and recall@20 (relevant: grade 2 or 3) per ranker.
//!
//! ```text
//! cargo run --release -p examples --features retrieval --example ranking_eval -- [--data fixtures/ranking]
//!     [--embeddings local|provider] [--postgres URL] [--per-profile]
//! ```
//!
//! The data directory holds `jobs.json`, `profiles.json` and `qrels.json` in the format
//! of `fixtures/ranking/README.md`. Embeddings come from the local model
//! (`LOCAL_EMBEDDING_MODEL_DIR`, all-MiniLM-L6-v2) or, with `--embeddings provider`, from
//! the configured provider's embedding model. The store is SQLite in memory, or
//! PostgreSQL + pgvector with `--postgres`.

// A command-line program: its output is the point.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use agent_backends::{PgVectorStore, SqliteSessionStore};
use agent_llm::{EmbeddingModel, LocalEmbeddingModel, ProviderConfig};
use agent_runtime::vectors::{LexicalQuery, MetadataFilter, VectorQuery, VectorStore};
use anyhow::Context as _;
use clap::Parser;
use job_capabilities::PayInterval;
use job_capabilities::ranking::{CandidateProfile, JobPosting, JobRanker, SalaryFloor, Seniority};
use job_capabilities::retrieval::{HybridRetriever, RetrievalOptions, fuse};
use serde::Deserialize;

/// Evaluates the job rankers on a labeled set.
#[derive(Debug, Parser)]
struct Args {
    #[command(flatten)]
    log: examples::telemetry::LogArgs,
    /// The labeled set: jobs.json, profiles.json, qrels.json.
    #[arg(long, default_value = "fixtures/ranking")]
    data: PathBuf,
    /// Where embeddings come from: `local` (all-MiniLM-L6-v2 in process) or `provider`.
    #[arg(long, default_value = "local")]
    embeddings: String,
    /// Keep the vectors in PostgreSQL + pgvector at this URL instead of SQLite.
    #[arg(long, value_name = "URL")]
    postgres: Option<String>,
    /// Print each profile's figures too.
    #[arg(long)]
    per_profile: bool,
    /// Print the composite's top 10 for this profile, with grades and justifications.
    #[arg(long, value_name = "PROFILE")]
    explain: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Job {
    id: String,
    title: String,
    company: String,
    location: String,
    remote: String,
    #[serde(default)]
    salary_text: String,
    #[serde(default)]
    skills: Vec<String>,
    description: String,
}

#[derive(Debug, Deserialize)]
struct Floor {
    amount: f64,
    currency: String,
    period: String,
}

#[derive(Debug, Deserialize)]
struct Profile {
    id: String,
    summary: String,
    #[serde(default)]
    skills: Vec<String>,
    #[serde(default)]
    titles: Vec<String>,
    #[serde(default)]
    preferred_locations: Vec<String>,
    #[serde(default)]
    remote_ok: bool,
    min_salary: Option<Floor>,
    #[serde(default)]
    seniority: Option<Seniority>,
}

/// Grades by profile, then job.
type Qrels = HashMap<String, HashMap<String, u8>>;

fn read<T: serde::de::DeserializeOwned>(dir: &Path, name: &str) -> anyhow::Result<T> {
    let path = dir.join(name);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

fn interval(period: &str) -> PayInterval {
    match period {
        "hour" => PayInterval::Hour,
        "day" => PayInterval::Day,
        "week" => PayInterval::Week,
        "month" => PayInterval::Month,
        _ => PayInterval::Year,
    }
}

fn posting(job: Job) -> JobPosting {
    JobPosting {
        id: job.id,
        title: job.title,
        company: job.company,
        location: job.location,
        remote: job.remote == "remote",
        salary_text: job.salary_text,
        skills: job.skills,
        description: job.description,
    }
}

fn candidate(profile: &Profile) -> CandidateProfile {
    CandidateProfile {
        summary: profile.summary.clone(),
        skills: profile.skills.clone(),
        titles: profile.titles.clone(),
        preferred_locations: profile.preferred_locations.clone(),
        remote_ok: profile.remote_ok,
        min_salary: profile.min_salary.as_ref().map(|floor| SalaryFloor {
            amount: floor.amount,
            currency: floor.currency.clone(),
            interval: interval(&floor.period),
        }),
        seniority: profile.seniority,
    }
}

/// NDCG@k with gains `2^grade - 1`.
fn ndcg(ranked: &[String], grades: &HashMap<String, u8>, k: usize) -> f64 {
    let gain = |grade: u8| f64::from((1u32 << grade) - 1);
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, id)| gain(grades.get(id).copied().unwrap_or(0)) / (i as f64 + 2.0).log2())
        .sum();
    let mut ideal: Vec<u8> = grades.values().copied().collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, &g)| gain(g) / (i as f64 + 2.0).log2())
        .sum();
    if idcg == 0.0 { 0.0 } else { dcg / idcg }
}

/// The share of the relevant jobs (grade 2 or 3) in the first `k`.
fn recall(ranked: &[String], grades: &HashMap<String, u8>, k: usize) -> f64 {
    let relevant = grades.values().filter(|&&g| g >= 2).count();
    if relevant == 0 {
        return 0.0;
    }
    let found = ranked
        .iter()
        .take(k)
        .filter(|id| grades.get(*id).is_some_and(|&g| g >= 2))
        .count();
    found as f64 / relevant as f64
}

const RANKERS: [&str; 4] = ["cosine", "lexical", "hybrid", "composite"];

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _telemetry = examples::telemetry::install("ranking_eval", "warn", args.log.log_format)?;
    let data = examples::fixtures::locate(&args.data)?;
    let jobs: Vec<Job> = read(&data, "jobs.json")?;
    let profiles: Vec<Profile> = read(&data, "profiles.json")?;
    let qrels: Qrels = read(&data, "qrels.json")?;
    let jobs: Vec<JobPosting> = jobs.into_iter().map(posting).collect();
    let embedder: Arc<dyn EmbeddingModel> = match args.embeddings.as_str() {
        "local" => Arc::new(LocalEmbeddingModel::from_env()?),
        "provider" => ProviderConfig::from_env()?
            .context("--embeddings provider needs an LLM provider (OPENAI_API_KEY, ...)")?
            .embedding_model()?,
        other => anyhow::bail!("--embeddings is local or provider, not {other}"),
    };
    let store: Arc<dyn VectorStore> = match &args.postgres {
        Some(url) => Arc::new(PgVectorStore::connect(url).await?),
        None => Arc::new(SqliteSessionStore::in_memory().await?.vectors()),
    };
    let collection = format!("ranking_eval_{}", std::process::id());
    let retriever = HybridRetriever::new(embedder, store.clone(), collection.clone());
    let ranker = JobRanker::new(retriever.clone());
    let tenant = "eval";
    let started = Instant::now();
    ranker.index(tenant, &jobs).await?;
    println!(
        "{} jobs, {} profiles from {}; {} embeddings, indexed in {:.1} s",
        jobs.len(),
        profiles.len(),
        args.data.display(),
        args.embeddings,
        started.elapsed().as_secs_f64()
    );
    let all = jobs.len();
    let mut totals: HashMap<&str, (f64, f64)> = HashMap::new();
    if args.per_profile {
        println!(
            "{:<8} {:>26} {:>26} {:>26} {:>26}",
            "profile", "cosine", "lexical", "hybrid", "composite"
        );
    }
    for profile in &profiles {
        let grades = qrels
            .get(&profile.id)
            .with_context(|| format!("qrels.json has no grades for {}", profile.id))?;
        let candidate = candidate(profile);
        let query = candidate.query_text();
        let vector = retriever
            .embed(std::slice::from_ref(&query))
            .await?
            .pop()
            .unwrap_or_default();
        let nearest = store
            .query(&collection, &VectorQuery::new(tenant, vector, all))
            .await?;
        let matching = store
            .lexical(
                &collection,
                &LexicalQuery {
                    tenant: tenant.to_owned(),
                    text: query,
                    top_k: all,
                    filter: MetadataFilter::new(),
                },
            )
            .await?;
        let options = RetrievalOptions {
            top_k: all,
            min_similarity: -1.0,
            candidates: all,
            filter: MetadataFilter::new(),
            duplicate_overlap: f32::INFINITY,
        };
        let ids = |hits: &[agent_runtime::vectors::VectorHit]| -> Vec<String> {
            hits.iter().map(|h| h.id.clone()).collect()
        };
        let hybrid: Vec<String> = fuse(&nearest, &matching, &options)
            .into_iter()
            .map(|r| r.id)
            .collect();
        let ranked = ranker.rank(tenant, &candidate, &jobs, all).await?;
        if args.explain.as_deref() == Some(profile.id.as_str()) {
            println!("{}: the composite's top 10", profile.id);
            for r in ranked.iter().take(10) {
                let grade = grades.get(&r.job_id).copied().unwrap_or(0);
                println!(
                    "  {} grade {grade} score {:.3}: {}",
                    r.job_id, r.score, r.justification
                );
            }
        }
        let composite: Vec<String> = ranked.into_iter().map(|r| r.job_id).collect();
        let rankings = [ids(&nearest), ids(&matching), hybrid, composite];
        let mut line = format!("{:<8}", profile.id);
        for (name, ranked) in RANKERS.iter().zip(&rankings) {
            let (n, r) = (ndcg(ranked, grades, 10), recall(ranked, grades, 20));
            let total = totals.entry(name).or_default();
            total.0 += n;
            total.1 += r;
            line.push_str(&format!(" {:>12.3} {:>12.3}", n, r));
        }
        if args.per_profile {
            println!("{line}");
        }
    }
    let count = profiles.len().max(1) as f64;
    println!("\n{:<10} {:>8} {:>10}", "ranker", "NDCG@10", "recall@20");
    for name in RANKERS {
        let (n, r) = totals.get(name).copied().unwrap_or_default();
        println!("{name:<10} {:>8.3} {:>10.3}", n / count, r / count);
    }
    let ids: Vec<String> = jobs.iter().map(|job| job.id.clone()).collect();
    store.delete(&collection, tenant, &ids).await?;
    Ok(())
}
