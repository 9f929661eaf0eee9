//! A client written from `docs/resume-api.md` alone (`examples/clients/resume_client.py`,
//! Python's standard library only) completes a session against the `resume_server`
//! example, run as a user runs it (`--dry-run`, a SQLite file, any free port).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The example binary `cargo test` builds beside the test binaries.
fn example(name: &str) -> PathBuf {
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

/// The server, killed on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_python_client_completes_a_dry_run_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(example("resume_server"))
        .args(["--dry-run", "--port", "0", "--db"])
        .arg(dir.path().join("sessions.db"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.starts_with("DRY RUN:"), "{first}");
    let url = lines
        .by_ref()
        .map(Result::unwrap)
        .find_map(|line| line.strip_prefix("listening on ").map(str::to_owned))
        .expect("the server says where it listens");

    let fixtures = workspace().join("fixtures/resume");
    let out = dir.path().join("resume.docx");
    let client = Command::new("python3")
        .arg(workspace().join("examples/clients/resume_client.py"))
        .arg(&url)
        .arg(fixtures.join("resume.txt"))
        .arg(fixtures.join("job.txt"))
        .arg(&out)
        .output()
        .expect("python3 runs the client");
    let printed = String::from_utf8_lossy(&client.stdout);
    assert!(
        client.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&client.stderr)
    );
    assert!(
        printed.contains("gate_open") && printed.contains("session_complete"),
        "{printed}"
    );
    let docx = std::fs::read(&out).unwrap();
    assert!(docx.starts_with(b"PK"));
    drop(server);
}
