//! Running the example binaries as a user does: found beside the test binaries, killed
//! when the test is done.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The example binary `cargo test` builds beside the test binaries.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let binary = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        binary.exists(),
        "{} is missing: run `cargo test --workspace` (which builds the examples)",
        binary.display()
    );
    binary
}

/// A server process, killed on drop.
pub struct Server {
    child: Child,
    /// Its base URL, as it printed it.
    pub url: String,
    /// The lines it printed before it said where it listens.
    pub banner: Vec<String>,
}

impl Server {
    /// Kills the process at once (SIGKILL), as a crash would, and waits until it is gone.
    pub fn kill(self) {
        drop(self);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `resume_server --dry-run` on any free port, its sessions in `db`.
pub fn resume_server(db: &Path) -> Server {
    resume_server_with(db, &[])
}

/// `resume_server --dry-run` on any free port, its sessions in `db`, with the variables
/// `env`.
pub fn resume_server_with(db: &Path, env: &[(&str, &str)]) -> Server {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/resume");
    let mut command = Command::new(example("resume_server"));
    command
        .args(["--dry-run", "--port", "0", "--db"])
        .arg(db)
        .arg("--fixtures")
        .arg(fixtures)
        .envs(env.iter().copied());
    server(command)
}

/// `embed_runtime` (the template product) on any free port, its sessions in `db`, each
/// model answer taking `latency_ms`.
pub fn embed_runtime_server(db: &Path, latency_ms: u64) -> Server {
    let mut command = Command::new(example("embed_runtime"));
    command
        .args([
            "--port",
            "0",
            "--latency-ms",
            &latency_ms.to_string(),
            "--db",
        ])
        .arg(db);
    server(command)
}

/// `jd_optimizer serve --dry-run` on any free port, its sessions in `db`, with the
/// variables `env`.
pub fn jd_optimizer_server(db: &Path, env: &[(&str, &str)]) -> Server {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/jd-optimizer");
    let mut command = Command::new(example("jd_optimizer"));
    command
        .args([
            "serve",
            "--dry-run",
            "--port",
            "0",
            "--embeddings",
            "none",
            "--db",
        ])
        .arg(db)
        .arg("--fixtures")
        .arg(fixtures)
        .envs(env.iter().copied());
    server(command)
}

/// `job_agent_chat serve --dry-run` on any free port.
pub fn job_chat_server() -> Server {
    job_chat_server_with(&["--dry-run"], &[])
}

/// `job_agent_chat serve` on any free port with more `args` and the variables `env`.
pub fn job_chat_server_with(args: &[&str], env: &[(String, String)]) -> Server {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/job-agent-chat");
    let mut command = Command::new(example("job_agent_chat"));
    command
        .args(["serve", "--port", "0", "--fixtures"])
        .arg(fixtures)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)));
    server(command)
}

/// Starts `command`, a server that prints `listening on <url>`, and reads its banner.
fn server(mut command: Command) -> Server {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut banner = Vec::new();
    let mut url = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(address) = line.strip_prefix("listening on ") {
            // `listening on <url>`, maybe followed by what it serves.
            url = address.split_whitespace().next().map(str::to_owned);
            break;
        }
        banner.push(line);
    }
    let url = url.expect("the server says where it listens");
    // Keep reading what it prints later: a closed pipe would fail its next line.
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    Server { child, url, banner }
}

/// Runs one of `examples/clients/*.py` with `args`; panics, showing its output, unless it
/// succeeds. Returns what it printed.
pub fn python_client(script: &str, args: &[&std::ffi::OsStr]) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("clients")
        .join(script);
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new("python3")
        .arg(path)
        .args(args)
        .output()
        .expect("python3 runs the client");
    let printed = String::from_utf8_lossy(&stdout).into_owned();
    assert!(
        status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&stderr)
    );
    printed
}

/// Runs a resume session of the dry run's fixtures to its end against the
/// `resume_server` at `url` with `examples/clients/resume_client.py`, the DOCX written to
/// `out`; what the client printed.
pub fn complete_resume_session(url: &str, out: &Path) -> String {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/resume");
    let (resume, job) = (fixtures.join("resume.txt"), fixtures.join("job.txt"));
    python_client(
        "resume_client.py",
        &[url.as_ref(), resume.as_ref(), job.as_ref(), out.as_ref()],
    )
}

/// What an example printed and how it ended.
pub struct Finished {
    /// Its exit code.
    pub code: Option<i32>,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

/// Runs the example `name` with `args` and the variables `env`; panics if it is still
/// running after `deadline` (a hang past its limits), killing it.
pub fn run_example(
    name: &str,
    args: &[&str],
    env: &[(String, String)],
    deadline: std::time::Duration,
) -> Finished {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = Command::new(example(name))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{name} {args:?} still ran after {deadline:?}\n{}\n{}",
                std::fs::read_to_string(&out).unwrap_or_default(),
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    Finished {
        code: status.code(),
        stdout: std::fs::read_to_string(&out).unwrap(),
        stderr: std::fs::read_to_string(&err).unwrap(),
    }
}
