//! A SQLite database on a file system that fills up under a running session (a 4 MiB
//! tmpfs mounted for the test: it needs root, as CI and our machines run it, and fails
//! without): the session parks instead of failing or running on past what was not
//! stored, and completes, every event once, once there is room again.
#![cfg(test)]

mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use agent_backends::SqliteSessionStore;
use agent_server::AgentServer;
use common::{Echo, PATIENCE, TestServer, assert_replays_once, wait_for_gate};
use serde_json::json;

const FIRST: &str = "coordinator:approve:1";
const SECOND: &str = "coordinator:approve:2";

/// A tmpfs of `size` mounted on a fresh directory, unmounted on drop.
struct SmallDisk {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> SmallDisk {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("mount runs");
        assert!(
            mounted.success(),
            "mounting a tmpfs failed: this test needs root (CI runs it as root)"
        );
        SmallDisk {
            path: dir.path().to_owned(),
            _dir: dir,
        }
    }

    /// Fills the disk with a file of zeros until no byte more fits.
    fn fill(&self) -> PathBuf {
        let filler = self.path.join("filler");
        let mut file = std::fs::File::create(&filler).unwrap();
        let chunk = vec![0u8; 16 * 1024];
        while file.write_all(&chunk).is_ok() {}
        while file.write_all(&[0]).is_ok() {}
        let _ = file.sync_all();
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// Answers `gate` until the server takes the answer (it refuses with 503 while the disk
/// is full, and with 409 while the parked session waits to be taken up again).
async fn answer(server: &TestServer, started: &common::Started, gate: &str) {
    tokio::time::timeout(PATIENCE, async {
        loop {
            let (status, body) = server.respond(started, gate, json!("yes")).await;
            if status == 200 || body["error"]["code"] == "already_answered" {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the answer was never taken");
}

fn database(disk: &Path) -> PathBuf {
    disk.join("sessions.db")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_parks_the_session_which_completes_once_there_is_room() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let disk = SmallDisk::mount("4m");
    let store = SqliteSessionStore::open(&database(&disk.path))
        .await
        .unwrap();
    let server = AgentServer::new(Arc::new(store)).with_product(Arc::new(Echo::new("coordinator")));
    let server = TestServer::spawn(server).await;
    let started = server.start("coordinator", json!({"text": "hi"})).await;
    wait_for_gate(&server, &started, FIRST).await;

    let filler = disk.fill();
    // The answer, and what the run writes after it, cannot all be stored now.
    let (status, _) = server.respond(&started, FIRST, json!("yes")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let during = server.status(&started).await;
    assert!(
        matches!(during["status"].as_str(), Some("running" | "waiting")),
        "the session ended on a full disk (answer {status}): {during}"
    );

    std::fs::remove_file(filler).unwrap();
    if status != 200 {
        answer(&server, &started, FIRST).await;
    }
    wait_for_gate(&server, &started, SECOND).await;
    answer(&server, &started, SECOND).await;

    assert_replays_once(&server, &started).await;
}
