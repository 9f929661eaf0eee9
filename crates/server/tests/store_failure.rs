//! A session whose store refuses a write parks instead of running on past it, and is
//! taken up again from the store once the store answers: the refused answer is asked for
//! again, and the session ends with every event stored once, in order. And a status or
//! stage change reaches the store together with the write it belongs to.
#![cfg(test)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agent_runtime::checkpoint::testing::InterceptedStore;
use agent_runtime::checkpoint::{CheckpointError, CheckpointStore, InMemoryCheckpointStore};
use agent_runtime::sessions::{
    GateAnswer, InMemorySessionStore, InProcessControl, InProcessFanout, InProcessLeases,
    NewSession, OpenGate, SessionOutcome, SessionRecord, SessionStatus, SessionStore, StoreError,
    StoredEvent, StoredGate,
};
use agent_server::AgentServer;
use common::{Echo, TestServer, assert_replays_once, names, wait_for_gate};
use serde_json::{Value, json};

const FIRST: &str = "coordinator:approve:1";
const SECOND: &str = "coordinator:approve:2";

/// A store whose writes fail while its [`Switches`] say so, as a full disk or a
/// database that went away makes them; reads go on.
struct Flaky {
    inner: InMemorySessionStore,
    checkpoints: Arc<InMemoryCheckpointStore>,
    switches: Arc<Switches>,
}

/// What a [`Flaky`] store does now; all off at first.
#[derive(Default)]
struct Switches {
    /// Every write fails.
    all: AtomicBool,
    /// Checkpoints and journal entries fail.
    checkpoints: AtomicBool,
    /// Appending events (and so gates' changes and endings, stored with theirs) fails.
    events: AtomicBool,
    /// Ending a session fails.
    endings: AtomicBool,
    /// Answers and endings are stored, then reported failed, as when the connection is
    /// lost at their commit.
    lost: AtomicBool,
    /// Counting a relaunch waits while this is set: a relaunch that reads the store
    /// before it holds the session is caught between its reads.
    resumes_held: AtomicBool,
    /// A status or stage change waits for another write to reach the store while it
    /// waits (and fails after 2 s): one handed over alone, its write awaited after it,
    /// is refused.
    statuses_wait: AtomicBool,
    /// Woken by every write of events or gates.
    written: tokio::sync::Notify,
}

impl Switches {
    fn on(switch: &AtomicBool) -> bool {
        switch.load(Ordering::SeqCst)
    }
}

impl Flaky {
    fn check(&self) -> Result<(), StoreError> {
        match Switches::on(&self.switches.all) {
            true => Err(StoreError::Backend("disk full".into())),
            false => Ok(()),
        }
    }

    /// `stored`, or the error of a commit whose connection was lost after it applied.
    fn after_commit<T>(&self, stored: Result<T, StoreError>) -> Result<T, StoreError> {
        match Switches::on(&self.switches.lost) {
            true => stored.and(Err(StoreError::Backend(
                "the connection was lost at the commit, which may or may not have been applied"
                    .into(),
            ))),
            false => stored,
        }
    }

    /// As [`check`](Self::check), failing also while the events table is locked.
    fn check_events(&self) -> Result<(), StoreError> {
        self.switches.written.notify_waiters();
        self.check()?;
        match Switches::on(&self.switches.events) {
            true => Err(StoreError::Backend("the events table is locked".into())),
            false => Ok(()),
        }
    }
}

#[async_trait::async_trait]
impl SessionStore for Flaky {
    async fn create(&self, session: NewSession) -> Result<SessionRecord, StoreError> {
        self.check()?;
        self.inner.create(session).await
    }
    async fn get(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        self.inner.get(id).await
    }
    async fn set_status(
        &self,
        id: &str,
        status: SessionStatus,
        stage: Option<&str>,
    ) -> Result<(), StoreError> {
        self.check()?;
        if Switches::on(&self.switches.statuses_wait) {
            tokio::time::timeout(Duration::from_secs(2), self.switches.written.notified())
                .await
                .map_err(|_| StoreError::Backend("no write came with the status".into()))?;
        }
        self.inner.set_status(id, status, stage).await
    }
    async fn finish(
        &self,
        id: &str,
        outcome: SessionOutcome,
        terminal: &Value,
    ) -> Result<Option<u64>, StoreError> {
        self.check_events()?;
        if Switches::on(&self.switches.endings) {
            return Err(StoreError::Backend("the sessions table is locked".into()));
        }
        let stored = self.inner.finish(id, outcome, terminal).await;
        self.after_commit(stored)
    }
    async fn append_event(&self, id: &str, event: &Value) -> Result<u64, StoreError> {
        self.check_events()?;
        self.inner.append_event(id, event).await
    }
    async fn events_after(&self, id: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        self.inner.events_after(id, after).await
    }
    // A gate's change and its announcement are one write: a failing events table fails
    // it.
    async fn open_gate(
        &self,
        id: &str,
        gate: &OpenGate<'_>,
        announcement: &Value,
    ) -> Result<Option<u64>, StoreError> {
        self.check_events()?;
        self.inner.open_gate(id, gate, announcement).await
    }
    async fn answer_gate(
        &self,
        id: &str,
        gate: &str,
        answer: &Value,
        announcement: &Value,
    ) -> Result<GateAnswer, StoreError> {
        self.check_events()?;
        let stored = self.inner.answer_gate(id, gate, answer, announcement).await;
        self.after_commit(stored)
    }
    async fn close_gate(
        &self,
        id: &str,
        gate: &str,
        reason: &str,
        announcement: &Value,
    ) -> Result<GateAnswer, StoreError> {
        self.check_events()?;
        self.inner.close_gate(id, gate, reason, announcement).await
    }
    async fn note_resume(&self, id: &str, events: u64) -> Result<u32, StoreError> {
        self.check()?;
        while Switches::on(&self.switches.resumes_held) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.inner.note_resume(id, events).await
    }
    async fn gates(&self, id: &str) -> Result<Vec<StoredGate>, StoreError> {
        self.inner.gates(id).await
    }
    async fn unfinished(&self, product: &str) -> Result<Vec<SessionRecord>, StoreError> {
        self.inner.unfinished(product).await
    }
    /// The checkpoints, failing with the store: their writes fail while every write or
    /// the checkpoints' do.
    fn checkpoint_store(&self) -> Option<Arc<dyn CheckpointStore>> {
        let switches = Arc::clone(&self.switches);
        let inner = Arc::clone(&self.checkpoints) as Arc<dyn CheckpointStore>;
        Some(Arc::new(InterceptedStore::new(inner, move |call| {
            let full = Switches::on(&switches.all) || Switches::on(&switches.checkpoints);
            match call.writes() && full {
                true => Err(CheckpointError::Backend("disk full".into())),
                false => Ok(()),
            }
        })))
    }
}

/// A [`Flaky`] store and its switches.
fn flaky() -> (Arc<Flaky>, Arc<Switches>) {
    let switches = Arc::new(Switches::default());
    let store = Flaky {
        inner: InMemorySessionStore::new(),
        checkpoints: Arc::default(),
        switches: Arc::clone(&switches),
    };
    (Arc::new(store), switches)
}

/// A server on a [`Flaky`] store, and its switches.
async fn serve() -> (TestServer, Arc<Switches>) {
    let (store, switches) = flaky();
    let server = AgentServer::new(store).with_product(Arc::new(Echo::new("coordinator")));
    (TestServer::spawn(server).await, switches)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_answer_parks_the_session_which_resumes_once_the_store_answers() {
    let (server, switches) = serve().await;
    let failing = &switches.all;
    let started = server.start("coordinator", json!({"text": "hi"})).await;
    wait_for_gate(&server, &started, FIRST).await;

    // The store fails: the answer is not stored, so the client is not told it was taken.
    failing.store(true, Ordering::SeqCst);
    let (status, body) = server.respond(&started, FIRST, json!("yes")).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (503, &json!("store_unavailable")),
        "{body}"
    );

    // The store is back: the session is taken up again from it, the gate open again.
    tokio::time::sleep(Duration::from_millis(200)).await;
    failing.store(false, Ordering::SeqCst);
    wait_for_gate(&server, &started, FIRST).await;
    assert_eq!(
        server
            .respond_when_open(&started, FIRST, json!("yes"))
            .await,
        200
    );
    assert_eq!(
        server
            .respond_when_open(&started, SECOND, json!("sure"))
            .await,
        200
    );

    let events = assert_replays_once(&server, &started).await;
    assert_eq!(
        events.last().unwrap().data["result"],
        json!({"text": "hi", "first": "yes", "second": "sure"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_checkpoint_parks_the_run_instead_of_failing_the_session() {
    let (server, switches) = serve().await;
    let checkpoints_failing = &switches.checkpoints;
    let started = server.start("coordinator", json!({"text": "hi"})).await;
    wait_for_gate(&server, &started, FIRST).await;
    assert_eq!(server.respond(&started, FIRST, json!("yes")).await.0, 200);
    wait_for_gate(&server, &started, SECOND).await;

    // The answer is stored; the checkpoint the node saves after it is refused: the run
    // parks rather than failing the session.
    checkpoints_failing.store(true, Ordering::SeqCst);
    // Taken (200) when the writer stored the answer before the refused checkpoint parked
    // the run; else refused (503), and answered again once the run is taken up again.
    let (taken, _) = server.respond(&started, SECOND, json!("sure")).await;
    assert!(taken == 200 || taken == 503, "{taken}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = server.status(&started).await;
    assert!(
        matches!(status["status"].as_str(), Some("running" | "waiting")),
        "the session ended: {status}"
    );
    checkpoints_failing.store(false, Ordering::SeqCst);

    // Taken up again: the answer passes the gate, and the session completes.
    if taken == 503 {
        wait_for_gate(&server, &started, SECOND).await;
        assert_eq!(
            server
                .respond_when_open(&started, SECOND, json!("sure"))
                .await,
            200
        );
    }
    let events = server
        .stream(&started, None)
        .await
        .until("session_complete")
        .await;
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
    let kinds: Vec<&str> = names(&events).into_iter().map(|(_, name)| name).collect();
    assert_eq!(
        kinds.iter().filter(|n| **n == "confirmed").count(),
        1,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|n| **n == "gate_answered").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(events.last().unwrap().data["result"]["second"], "sure");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_refused_with_its_announcement_is_taken_once_the_session_is_taken_up_again() {
    let (server, switches) = serve().await;
    let started = server.start("coordinator", json!({"text": "hi"})).await;
    wait_for_gate(&server, &started, FIRST).await;

    // Events are refused: the answer, stored with its announcement, is refused too (or,
    // if the writer stored it before, what follows it is).
    switches.events.store(true, Ordering::SeqCst);
    let (taken, _) = server.respond(&started, FIRST, json!("yes")).await;
    assert!(taken == 200 || taken == 503, "{taken}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    switches.events.store(false, Ordering::SeqCst);

    if taken == 503 {
        wait_for_gate(&server, &started, FIRST).await;
        assert_eq!(
            server
                .respond_when_open(&started, FIRST, json!("yes"))
                .await,
            200
        );
    }
    wait_for_gate(&server, &started, SECOND).await;
    assert_eq!(
        server
            .respond_when_open(&started, SECOND, json!("sure"))
            .await,
        200
    );
    assert_replays_once(&server, &started).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_ending_leaves_the_session_unfinished_until_it_is_ended_once() {
    let (server, switches) = serve().await;
    let started = server.start("coordinator", json!({"text": "hi"})).await;
    assert_eq!(
        server
            .respond_when_open(&started, FIRST, json!("yes"))
            .await,
        200
    );
    wait_for_gate(&server, &started, SECOND).await;

    // The run completes, but the store refuses its ending (and so its terminal event):
    // the session is not over, and no stream was told it is.
    switches.endings.store(true, Ordering::SeqCst);
    assert_eq!(server.respond(&started, SECOND, json!("sure")).await.0, 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = server.status(&started).await;
    assert!(
        matches!(status["status"].as_str(), Some("running" | "waiting")),
        "{status}"
    );

    // The store is back: the session is taken up again and ends, once.
    switches.endings.store(false, Ordering::SeqCst);
    assert_replays_once(&server, &started).await;
    let status = server.status(&started).await;
    assert_eq!(status["status"], "complete", "{status}");
    assert_eq!(status["result"]["second"], "sure", "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_stored_but_reported_lost_are_neither_lost_nor_repeated() {
    let (server, switches) = serve().await;
    let started = server.start("coordinator", json!({"text": "hi"})).await;
    wait_for_gate(&server, &started, FIRST).await;

    // Every answer and the ending are stored, and each is reported lost at its commit:
    // the run parks after each, and is taken up again from what the store holds.
    switches.lost.store(true, Ordering::SeqCst);
    // The answer is in the store, so the client is told it was taken.
    assert_eq!(server.respond(&started, FIRST, json!("yes")).await.0, 200);
    wait_for_gate(&server, &started, SECOND).await;
    assert_eq!(server.respond(&started, SECOND, json!("sure")).await.0, 200);

    assert_replays_once(&server, &started).await;
    // The ending and its event were one write: the session is over, and the run taken
    // up after the lost ending finds it so.
    let status = server.status(&started).await;
    assert_eq!(status["status"], "complete", "{status}");
    assert_eq!(status["result"]["second"], "sure", "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relaunch_reads_the_store_only_once_it_holds_the_session() {
    // Two instances on one store, with shared leases, fan-out and control.
    let (store, switches) = flaky();
    let (leases, fanout, control) = (
        Arc::new(InProcessLeases::default()),
        Arc::new(InProcessFanout::default()),
        Arc::new(InProcessControl::default()),
    );
    let instance = || {
        AgentServer::new(store.clone())
            .with_product(Arc::new(Echo::new("coordinator")))
            .with_leases(leases.clone())
            .with_fanout(fanout.clone())
            .with_control(control.clone())
    };
    let a = TestServer::spawn(instance()).await;
    let b = instance();
    let started = a.start("coordinator", json!({"text": "hi"})).await;
    wait_for_gate(&a, &started, FIRST).await;

    // b restarts while a runs the session. Had b read the store before taking the
    // session's lease, it would wait here between its reads while a finishes the
    // session, then run it again from what it read.
    switches.resumes_held.store(true, Ordering::SeqCst);
    let restart = tokio::spawn(async move { b.resume_unfinished().await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(a.respond(&started, FIRST, json!("yes")).await.0, 200);
    assert_eq!(
        a.respond_when_open(&started, SECOND, json!("sure")).await,
        200
    );
    assert_replays_once(&a, &started).await;
    switches.resumes_held.store(false, Ordering::SeqCst);
    assert_eq!(restart.await.unwrap(), Ok(0), "b ran the session again");
    let status = a.status(&started).await;
    assert_eq!(status["result"]["second"], "sure", "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_or_stage_goes_to_the_store_with_the_write_it_belongs_to() {
    // Echo sets its stage, then emits the stage's event; its gate makes it wait.
    let (store, switches) = flaky();
    switches.statuses_wait.store(true, Ordering::SeqCst);
    let server = AgentServer::new(store).with_product(Arc::new(Echo::new("coordinator")));
    let server = TestServer::spawn(server).await;
    let started = server.start("coordinator", json!({"text": "hi"})).await;
    wait_for_gate(&server, &started, FIRST).await;
    // Handed over alone, either change would have waited for a write that never came,
    // and never been stored.
    let stored = tokio::time::timeout(Duration::from_secs(3), async {
        loop {
            let status = server.status(&started).await;
            if status["stage"] == "started" && status["status"] == "waiting" {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let status = server.status(&started).await;
    assert!(stored.is_ok(), "stage or status not stored: {status}");
}
