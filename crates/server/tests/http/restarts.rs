//! A server restarted under a waiting session resumes it, over the same store in memory
//! or a SQLite file opened anew.

use super::*;

/// Runs a session to its second gate on one server, stops it, resumes on a new server over
/// the same store, and answers the second gate there. `answer_before_reopen`: answer while
/// the rerun is still on its way to the gate (a slow rerun), else after it waits again.
/// Where the sessions are kept across the restart: one in-memory store shared by both
/// servers, or a SQLite file that the second server opens anew.
enum Backing {
    Memory(Arc<InMemorySessionStore>),
    SqliteFile(tempfile::TempDir),
}

impl Backing {
    /// A server on the sessions and the run checkpoints kept here.
    async fn open(&self) -> (Arc<dyn SessionStore>, AgentServer) {
        let (store, checkpoints): (Arc<dyn SessionStore>, Arc<dyn CheckpointStore>) = match self {
            Backing::Memory(store) => (store.clone(), store.checkpoints()),
            Backing::SqliteFile(dir) => {
                let store =
                    agent_backends::SqliteSessionStore::open(dir.path().join("sessions.db"))
                        .await
                        .unwrap();
                let checkpoints = Arc::new(store.checkpoints());
                (Arc::new(store), checkpoints)
            }
        };
        let server = AgentServer::new(store.clone()).with_checkpoints(checkpoints);
        (store, server)
    }
}

async fn restart_at_the_second_gate(backing: Backing, answer_before_reopen: bool) {
    let (store, server) = backing.open().await;
    let first_echo = Arc::new(Echo::new("echo"));
    let first = TestServer::spawn(server.with_product(first_echo.clone())).await;
    let session = first.start("echo", json!({"text": "persist"})).await;
    let mut stream = first.stream(&session, None).await;
    stream.until("gate_open").await;
    assert_eq!(first.respond(&session, FIRST, json!("yes")).await.0, 200);
    let events = stream.until("gate_open").await;
    assert_eq!(events.last().unwrap().data["gate_id"], SECOND);
    drop(stream);
    let record = store.get(&session.id).await.unwrap().unwrap();
    assert_eq!(record.status, SessionStatus::Waiting);
    assert_eq!(record.stage.as_deref(), Some("approved"));

    // Stop the first server.
    first.task.abort();
    let _ = first.task.await;
    drop(first.client);

    let mut second_echo = Echo::new("echo");
    if answer_before_reopen {
        second_echo.resume_delay = Duration::from_millis(500);
    }
    let second_echo = Arc::new(second_echo);
    let (store, server) = backing.open().await;
    let server = server.with_product(second_echo.clone());
    assert_eq!(server.resume_unfinished().await.unwrap(), 1);
    // Already running: not resumed twice.
    assert_eq!(server.resume_unfinished().await.unwrap(), 0);
    let second = TestServer::spawn(server).await;

    let status = second.status(&session).await;
    assert_eq!(status["status"], "waiting");
    assert_eq!(status["stage"], "approved");
    let pending = status["pending_gates"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{status}");
    assert_eq!(pending[0]["id"], SECOND);
    assert_eq!(pending[0]["payload"]["question"], "confirm?");

    let mut live = second.stream(&session, Some(5)).await;
    if !answer_before_reopen {
        // Wait until the rerun waits at the second gate again.
        let gates = loop {
            if let Some(gates) = second_echo.gates.lock().unwrap().clone() {
                break gates;
            }
            tokio::task::yield_now().await;
        };
        tokio::time::timeout(common::PATIENCE, gates.next_pending())
            .await
            .unwrap();
        assert_eq!(gates.pending()[0].id, SECOND);
    }
    assert_eq!(
        second.respond(&session, SECOND, json!("sure")).await,
        (200, json!({"ok": true}))
    );
    let (code, body) = second.respond(&session, SECOND, json!("again")).await;
    assert_eq!(code, 409);
    // Refused as answered, or as finished if the run ended in between.
    let refused = body["error"]["code"].as_str().unwrap();
    assert!(
        ["already_answered", "session_not_running"].contains(&refused),
        "{body}"
    );
    let rest = live.rest().await;
    assert_eq!(
        names(&rest),
        [
            (6, "gate_answered"),
            (7, "confirmed"),
            (8, "session_complete")
        ]
    );
    let result = json!({"text": "persist", "first": "yes", "second": "sure"});
    assert_eq!(rest[2].data["result"], result);

    // The rerun resumed the graph at its second node, and the first gate was not asked
    // again.
    assert_eq!(*second_echo.runs.lock().unwrap(), [Some(json!("yes"))]);
    let all = second.stream(&session, None).await.rest().await;
    assert_eq!(
        all.iter().map(|e| e.id).collect::<Vec<_>>(),
        (1..=8).collect::<Vec<_>>()
    );
    let opened: Vec<&Value> = all
        .iter()
        .filter(|e| e.event == "gate_open")
        .map(|e| &e.data["gate_id"])
        .collect();
    assert_eq!(opened, [FIRST, SECOND]);
    assert_eq!(all.iter().filter(|e| e.event == "started").count(), 1);
    let status = second.status(&session).await;
    assert_eq!(status["status"], "complete");
    assert_eq!(status["result"], result);
    assert_eq!(status["events"], 8);
    let gates = store.gates(&session.id).await.unwrap();
    assert_eq!(gates.len(), 2, "no duplicate gate rows");
    assert_eq!(gates[1].answer, Some(json!("sure")));
    // Nothing left to resume.
    let third = AgentServer::new(store).with_product(Arc::new(Echo::new("echo")));
    assert_eq!(third.resume_unfinished().await.unwrap(), 0);
}

fn memory() -> Backing {
    Backing::Memory(Arc::new(InMemorySessionStore::new()))
}

fn sqlite_file() -> Backing {
    Backing::SqliteFile(tempfile::tempdir().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_resumes_a_waiting_session() {
    restart_at_the_second_gate(memory(), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_pending_at_a_restart_can_be_answered_before_the_rerun_reaches_it() {
    restart_at_the_second_gate(memory(), true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_resumes_from_the_sqlite_file() {
    restart_at_the_second_gate(sqlite_file(), false).await;
}
