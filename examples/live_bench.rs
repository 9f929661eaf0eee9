//! Runs each product live against an OpenAI-compatible model server (the local model of
//! `../shared/tools/local-llm`, or any other) and prints, per run, the model calls, the
//! tokens, the share of input that repeated an earlier prompt of the run byte for byte
//! from its start (what a server's prefix cache can serve: each prompt is compared with
//! the earlier one it shares the longest prefix with, a loop's previous round), the wall
//! time and how it ended.
//!
//! ```text
//! eval "$(../shared/tools/local-llm/local-llm start)"
//! cargo build --release -p examples --examples
//! cargo run --release -p examples --example live_bench -- [--only llm_chat,job_hunter,resume,page_explorer,chat]
//!     [--runs N] [--prefs TEXT] [--any-board]
//! ```
//!
//! Every product runs as its example binary, as a user runs it. Its model calls go
//! through a metering proxy this program puts in front of `OPENAI_BASE_URL`, so the
//! figures are counted the same way for every product, whatever it reports itself. The
//! job hunter's job boards are the recorded boards of `fixtures/job-hunter/ats`, served
//! here in the vendors' formats; the resume session is answered by
//! `examples/clients/resume_client.py`; the page explorer explores
//! `fixtures/sites/board-spa`; the job-agent chat (`chat`) is given three turns in the
//! terminal, its searches answered from the recorded SerpAPI bodies. Run it from the workspace root.

// A command-line program: its output is the point.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use clap::Parser;
use serde_json::Value;
use tokio::io::AsyncBufReadExt as _;
use tokio::process::Command;

/// Runs each product live and prints calls, tokens, wall time and outcome per run.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    #[command(flatten)]
    log: examples::telemetry::LogArgs,
    /// The products to run, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "llm_chat,job_hunter,resume,page_explorer,chat"
    )]
    only: Vec<String>,
    /// Tokens a resume session may use (it fails with the reason when it reaches them).
    #[arg(long, default_value_t = 200_000)]
    resume_max_tokens: u64,
    /// Longest a run may take before it is stopped and reported as a hang.
    #[arg(long, default_value_t = 1800)]
    deadline_secs: u64,
    /// Runs of each product, one after another.
    #[arg(long, default_value_t = 1)]
    runs: u32,
    /// The job hunter's preferences (the default names two companies with recorded boards).
    #[arg(
        long,
        default_value = "Backend engineering roles, remote within Europe, at Northwind Robotics or Quill Labs."
    )]
    prefs: String,
    /// Answer every board token with one of the vendor's recorded boards (picked by the
    /// token), so that companies the model suggests have boards here too; otherwise only
    /// the recorded tokens have one and the rest are the vendor's 404.
    #[arg(long)]
    any_board: bool,
}

/// What the model server was asked during one run.
#[derive(Debug, Default, Clone)]
struct Meter {
    calls: u64,
    input_tokens: u64,
    output_tokens: u64,
    /// Input tokens that repeated, from its start, the earlier prompt of the run they
    /// continue (the one sharing the longest prefix: a loop's previous round).
    repeated_tokens: u64,
    /// The prompts of the run so far ([`prompt_text`]).
    prompts: Vec<String>,
}

impl Meter {
    /// The share of input that repeated an earlier prompt's start, in percent.
    fn repeated_percent(&self) -> String {
        if self.input_tokens == 0 {
            return "-".into();
        }
        format!(
            "{:.0}%",
            100.0 * self.repeated_tokens as f64 / self.input_tokens as f64
        )
    }
}

/// A Chat Completions request's prompt as one text, in the order a server reads and
/// caches it: the tools, then each message's role, content and tool calls.
fn prompt_text(request: &Value) -> String {
    let mut text = String::new();
    for tool in request["tools"].as_array().into_iter().flatten() {
        text.push_str(&tool.to_string());
    }
    for message in request["messages"].as_array().into_iter().flatten() {
        text.push_str(&message["role"].to_string());
        text.push_str(&message["content"].to_string());
        if let Some(calls) = message.get("tool_calls") {
            text.push_str(&calls.to_string());
        }
    }
    text
}

/// Of `prompt`'s bytes, how many from the start are the same as in the earlier prompt
/// that shares the most with it: what a server's prefix cache (llama.cpp's slot, an
/// OpenAI-compatible provider's automatic caching) can serve.
fn repeated_bytes(prompt: &str, earlier: &[String]) -> usize {
    earlier
        .iter()
        .map(|before| {
            prompt
                .bytes()
                .zip(before.bytes())
                .take_while(|(now, then)| now == then)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[derive(Clone)]
struct Proxy {
    upstream: String,
    client: reqwest::Client,
    meter: Arc<Mutex<Meter>>,
    boards: PathBuf,
    any_board: bool,
}

impl Proxy {
    fn take(&self) -> Meter {
        std::mem::take(&mut *self.meter.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Forwards `/v1/...` to the model server, counting chat completions and their usage.
async fn forward(
    State(proxy): State<Proxy>,
    uri: Uri,
    headers: HeaderMap,
    method: axum::http::Method,
    body: Bytes,
) -> Response {
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    // `/v1/...` goes under the upstream's base URL; the rest (llama.cpp's `/props`, where
    // the slots are read) under its origin.
    let origin = proxy
        .upstream
        .strip_suffix("/v1")
        .unwrap_or(&proxy.upstream);
    let url = match path.strip_prefix("/v1") {
        Some(rest) => format!("{}{rest}", proxy.upstream),
        None => format!("{origin}{path}"),
    };
    let prompt = path
        .ends_with("/chat/completions")
        .then(|| serde_json::from_slice::<Value>(&body).ok())
        .flatten()
        .map(|request| prompt_text(&request));
    let mut request = proxy.client.request(method, &url).body(body);
    for name in ["authorization", "content-type", "accept"] {
        if let Some(value) = headers.get(name) {
            request = request.header(name, value);
        }
    }
    let answer = match request.send().await {
        Ok(answer) => answer,
        Err(error) => return (StatusCode::BAD_GATEWAY, error.to_string()).into_response(),
    };
    let status = answer.status();
    let content_type = answer.headers().get("content-type").cloned();
    let bytes = answer.bytes().await.unwrap_or_default();
    if url.ends_with("/chat/completions") {
        let usage = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .map(|body| body["usage"].clone())
            .unwrap_or(Value::Null);
        let prompt_tokens = usage["prompt_tokens"].as_u64().unwrap_or(0);
        let mut meter = proxy.meter.lock().unwrap_or_else(PoisonError::into_inner);
        meter.calls += 1;
        meter.input_tokens += prompt_tokens;
        meter.output_tokens += usage["completion_tokens"].as_u64().unwrap_or(0);
        if let Some(text) = prompt {
            let repeated = repeated_bytes(&text, &meter.prompts);
            if !text.is_empty() {
                meter.repeated_tokens +=
                    (prompt_tokens as f64 * repeated as f64 / text.len() as f64).round() as u64;
            }
            meter.prompts.push(text);
        }
    }
    let mut response = (status, bytes).into_response();
    if let Some(content_type) = content_type {
        response.headers_mut().insert("content-type", content_type);
    }
    response
}

/// A recorded job board, or the vendor's 404 (with `--any-board`, one of the vendor's
/// recorded boards for any token).
async fn board(proxy: &Proxy, vendor: &str, token: &str) -> Response {
    let mut file = proxy.boards.join(vendor).join(format!("{token}.json"));
    if proxy.any_board && !file.is_file() {
        let mut recorded: Vec<PathBuf> = std::fs::read_dir(proxy.boards.join(vendor))
            .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        recorded.sort();
        let pick = token.bytes().map(usize::from).sum::<usize>();
        if let Some(chosen) = recorded.get(pick % recorded.len().max(1)) {
            file = chosen.clone();
        }
    }
    match tokio::fs::read(&file).await {
        Ok(bytes) => ([("content-type", "application/json")], bytes).into_response(),
        Err(_) => (StatusCode::NOT_FOUND, "{\"error\": \"not found\"}").into_response(),
    }
}

async fn proxy_server(proxy: Proxy) -> anyhow::Result<String> {
    let app = Router::new()
        .route(
            "/greenhouse/v1/boards/{token}/jobs",
            get(
                |State(p): State<Proxy>, UrlPath(t): UrlPath<String>| async move {
                    board(&p, "greenhouse", &t).await
                },
            ),
        )
        .route(
            "/lever/v0/postings/{token}",
            get(
                |State(p): State<Proxy>, UrlPath(t): UrlPath<String>| async move {
                    board(&p, "lever", &t).await
                },
            ),
        )
        .route(
            "/ashby/posting-api/job-board/{token}",
            get(
                |State(p): State<Proxy>, UrlPath(t): UrlPath<String>| async move {
                    board(&p, "ashby", &t).await
                },
            ),
        )
        .route("/v1/{*rest}", any(forward))
        .route("/props", any(forward))
        .with_state(proxy);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            eprintln!("the metering proxy stopped: {error}");
        }
    });
    Ok(address)
}

/// One product's run: how it ended.
struct Outcome {
    ended: String,
    wall: Duration,
}

/// The example binary `name`, beside this one.
fn example(name: &str) -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe()?;
    let path = me
        .parent()
        .context("this program has no directory")?
        .join(name);
    anyhow::ensure!(
        path.exists(),
        "{} is missing: build the examples first (cargo build --release -p examples --examples)",
        path.display()
    );
    Ok(path)
}

/// Runs `command` to its end or `deadline`, `input` written to its standard input; its
/// output is kept in `log`, and `describe` says how it ended from what it printed.
async fn run_to_end(
    mut command: Command,
    input: &str,
    describe: fn(&str) -> String,
    deadline: Duration,
    log: &Path,
) -> anyhow::Result<Outcome> {
    use tokio::io::AsyncWriteExt as _;
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes()).await?;
    }
    let output = tokio::time::timeout(deadline, child.wait_with_output()).await;
    let wall = started.elapsed();
    let ended = match output {
        Err(_) => format!("still running after {deadline:?}: stopped"),
        Ok(output) => {
            let output = output?;
            let stdout = String::from_utf8_lossy(&output.stdout);
            let stderr = String::from_utf8_lossy(&output.stderr);
            std::fs::write(log, format!("{stdout}\n--- stderr ---\n{stderr}"))
                .with_context(|| format!("writing {}", log.display()))?;
            format!(
                "exit {}: {}",
                output.status.code().unwrap_or(-1),
                describe(&stdout)
            )
        }
    };
    Ok(Outcome { ended, wall })
}

/// The stated reason of a failure, else the last line printed.
fn last_line(stdout: &str) -> String {
    stdout
        .lines()
        .find(|line| line.trim_start().starts_with("reason: "))
        .or_else(|| stdout.lines().rev().find(|line| !line.trim().is_empty()))
        .unwrap_or_default()
        .trim()
        .chars()
        .take(100)
        .collect()
}

/// Runs `command` (nothing on its standard input) to its end or `deadline`.
async fn finish(command: Command, deadline: Duration, log: &Path) -> anyhow::Result<Outcome> {
    run_to_end(command, "", last_line, deadline, log).await
}

async fn run_llm_chat(
    env: &[(String, String)],
    deadline: Duration,
    log: &Path,
) -> anyhow::Result<Outcome> {
    let mut command = Command::new(example("llm_chat")?);
    command
        .arg("What time is it in Tokyo? Use the tool.")
        .envs(env.iter().cloned());
    finish(command, deadline, log).await
}

/// The chat's turns in the terminal: a search, a save, a question on what was saved (each
/// turn a loop over the conversation so far).
const CHAT_TURNS: &str = "Find remote backend engineering jobs in Europe that use Rust.\n\
Save the first one you found.\n\
Which of my saved jobs fits a Rust backend engineer best, and why?\n";

async fn run_job_agent_chat(
    env: &[(String, String)],
    work: &Path,
    deadline: Duration,
    log: &Path,
) -> anyhow::Result<Outcome> {
    let mut command = Command::new(example("job_agent_chat")?);
    command
        // The local model server has no embeddings: ranking goes by the rules alone.
        .args([
            "chat",
            "--replay-search",
            "--embeddings",
            "none",
            "--user",
            "bench",
        ])
        .arg("--db")
        .arg(work.join("job-agent-chat.db"))
        .envs(env.iter().cloned());
    let turns = |stdout: &str| {
        let answered = stdout.matches("\nagent> ").count();
        format!("{answered} turns answered")
    };
    run_to_end(command, CHAT_TURNS, turns, deadline, log).await
}

async fn run_job_hunter(
    env: &[(String, String)],
    proxy: &str,
    work: &Path,
    prefs: &str,
    deadline: Duration,
    log: &Path,
) -> anyhow::Result<Outcome> {
    let mut command = Command::new(example("job_hunter")?);
    command
        .args([
            "run",
            "--resume",
            "fixtures/job-hunter/resume.txt",
            "--prefs",
        ])
        .arg(prefs)
        .arg("--output-dir")
        .arg(work)
        .args(["--run-id", "bench"])
        .envs(env.iter().cloned())
        .env("GREENHOUSE_API_BASE", format!("{proxy}/greenhouse"))
        .env("LEVER_API_BASE", format!("{proxy}/lever"))
        .env("ASHBY_API_BASE", format!("{proxy}/ashby"))
        .env("JH_CHECKPOINT_DIR", work.join("checkpoints"))
        .env("JH_MAX_COMPANIES", "3")
        .env("JH_MAX_JOBS", "6")
        .env("JH_HOST_INTERVAL_MS", "0")
        .env("BRAVE_API_KEY", "")
        .env("SMTP_URL", "");
    finish(command, deadline, log).await
}

async fn run_resume(
    env: &[(String, String)],
    work: &Path,
    max_tokens: u64,
    deadline: Duration,
    log: &Path,
) -> anyhow::Result<Outcome> {
    let mut server = Command::new(example("resume_server")?)
        .args([
            "--port",
            "0",
            "--max-tokens",
            &max_tokens.to_string(),
            // A whole resume written by a small model on a CPU takes longer than the
            // runtime's default ten minutes an agent; the run's own deadline bounds it.
            "--agent-timeout",
            &format!("{}s", deadline.as_secs().max(1)),
            "--db",
        ])
        .arg(work.join("resume.db"))
        .envs(env.iter().cloned())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = server.stdout.take().context("the server's output")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut base = None;
    while let Some(line) = lines.next_line().await? {
        if let Some(address) = line.strip_prefix("listening on ") {
            base = Some(address.to_owned());
            break;
        }
    }
    let base = base.context("resume_server did not say where it listens")?;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let mut client = Command::new("python3");
    client
        .arg("examples/clients/resume_client.py")
        .arg(&base)
        .args(["fixtures/resume/resume.txt", "fixtures/resume/job.txt"])
        .arg(work.join("resume.docx"));
    let outcome = finish(client, deadline, log).await;
    server.kill().await.ok();
    outcome
}

async fn run_page_explorer(
    env: &[(String, String)],
    work: &Path,
    deadline: Duration,
    log: &Path,
) -> anyhow::Result<Outcome> {
    let mut command = Command::new(example("page_explorer")?);
    command
        .args([
            "explore",
            "fixtures/sites/board-spa",
            "--max-actions",
            "12",
            "--out",
        ])
        .arg(work.join("page-explorer"))
        .envs(env.iter().cloned());
    finish(command, deadline, log).await
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _telemetry = examples::telemetry::install("live_bench", "warn", args.log.log_format)?;
    let upstream = std::env::var("OPENAI_BASE_URL")
        .ok()
        .filter(|url| !url.trim().is_empty())
        .context("set OPENAI_BASE_URL (and LLM_PROVIDER=openai) to an OpenAI-compatible server, e.g. eval \"$(../shared/tools/local-llm/local-llm start)\"")?;
    if !Path::new("fixtures/job-hunter").is_dir() {
        bail!("run this from the workspace root (fixtures/ is not here)");
    }
    let proxy = Proxy {
        upstream: upstream.trim_end_matches('/').to_owned(),
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(900))
            .build()?,
        meter: Arc::default(),
        boards: PathBuf::from("fixtures/job-hunter/ats"),
        any_board: args.any_board,
    };
    let address = proxy_server(proxy.clone()).await?;
    let env = vec![
        ("LLM_PROVIDER".to_owned(), "openai".to_owned()),
        ("OPENAI_BASE_URL".to_owned(), format!("{address}/v1")),
        (
            "OPENAI_API_KEY".to_owned(),
            std::env::var("OPENAI_API_KEY").unwrap_or_else(|_| "local".into()),
        ),
    ];
    let work = tempfile_dir()?;
    let deadline = Duration::from_secs(args.deadline_secs);
    println!("model server: {upstream} (metered through {address})");
    println!(
        "{:<14} {:>6} {:>10} {:>10} {:>9} {:>9}  outcome",
        "product", "calls", "tokens in", "tokens out", "repeated", "wall s"
    );
    let runs = (1..=args.runs.max(1)).flat_map(|run| args.only.iter().map(move |p| (p, run)));
    for (product, run) in runs {
        proxy.take();
        let log = work.join(format!("{product}-{run}.log"));
        let outcome = match product.as_str() {
            "llm_chat" => run_llm_chat(&env, deadline, &log).await,
            "job_hunter" => {
                let out = work.join(format!("job-hunter-{run}"));
                run_job_hunter(&env, &address, &out, &args.prefs, deadline, &log).await
            }
            "resume" => run_resume(&env, &work, args.resume_max_tokens, deadline, &log).await,
            "page_explorer" => run_page_explorer(&env, &work, deadline, &log).await,
            "chat" => run_job_agent_chat(&env, &work, deadline, &log).await,
            other => {
                bail!("unknown product {other} (llm_chat, job_hunter, resume, page_explorer, chat)")
            }
        };
        let meter = proxy.take();
        let (ended, wall) = match outcome {
            Ok(outcome) => (outcome.ended, outcome.wall),
            Err(error) => (format!("could not run: {error:#}"), Duration::ZERO),
        };
        let label = if args.runs > 1 {
            format!("{product} #{run}")
        } else {
            product.clone()
        };
        println!(
            "{label:<14} {:>6} {:>10} {:>10} {:>9} {:>9.1}  {ended}",
            meter.calls,
            meter.input_tokens,
            meter.output_tokens,
            meter.repeated_percent(),
            wall.as_secs_f64()
        );
    }
    println!("outputs in {}", work.display());
    Ok(())
}

/// A fresh directory for the runs' outputs, kept for reading afterwards.
fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "live-bench-{}",
        chrono::Utc::now().format("%Y%m%d-%H%M%S")
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}
