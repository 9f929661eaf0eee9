//! Two server instances sharing one set of sessions (one store, leases, event fan-out and
//! session control, in-process here; PostgreSQL and NATS in a deployment): a session
//! started on one is streamed, answered and cancelled through the other.
#![cfg(test)]

mod common;

use std::sync::Arc;

use std::time::Duration;

use agent_runtime::sessions::{
    InMemorySessionStore, InProcessControl, InProcessFanout, InProcessLeases, InProcessRunQueue,
    RunQueue, SessionLeases, SessionStore,
};
use agent_server::{AgentServer, ServerConfig};
use common::{Echo, TestServer, names};
use serde_json::json;

const FIRST: &str = "coordinator:approve:1";
const SECOND: &str = "coordinator:approve:2";

/// Two instances on shared coordination, each with its own echo product.
async fn two_instances() -> (Arc<InMemorySessionStore>, [Arc<Echo>; 2], [TestServer; 2]) {
    let store = Arc::new(InMemorySessionStore::new());
    let leases = Arc::new(InProcessLeases::default());
    let fanout = Arc::new(InProcessFanout::default());
    let control = Arc::new(InProcessControl::default());
    let instance = |echo: Arc<Echo>| {
        AgentServer::new(store.clone())
            .with_checkpoints(store.checkpoints())
            .with_product(echo)
            .with_leases(leases.clone())
            .with_fanout(fanout.clone())
            .with_control(control.clone())
    };
    let echoes = [Arc::new(Echo::new("echo")), Arc::new(Echo::new("echo"))];
    let a = TestServer::spawn(instance(echoes[0].clone())).await;
    let b = TestServer::spawn(instance(echoes[1].clone())).await;
    (store, echoes, [a, b])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_started_on_one_instance_is_streamed_and_answered_on_the_other() {
    let (store, echoes, [a, b]) = two_instances().await;
    let session = a.start("echo", json!({"text": "hi"})).await;

    // Streamed from b while it runs on a.
    let mut stream = b.stream(&session, None).await;
    let opened = stream.until("gate_open").await;
    assert_eq!(names(&opened), [(1, "started"), (2, "gate_open")]);
    assert_eq!(echoes[0].runs.lock().unwrap().len(), 1);
    assert!(echoes[1].runs.lock().unwrap().is_empty(), "b runs nothing");

    // Answered on b: passed to a, which runs it; the answer is stored before b replies.
    assert_eq!(
        b.respond(&session, FIRST, json!("yes")).await,
        (200, json!({"ok": true}))
    );
    assert_eq!(
        store.gates(&session.id).await.unwrap()[0].answer,
        Some(json!("yes"))
    );
    let next = stream.until("gate_open").await;
    assert_eq!(
        names(&next),
        [(3, "gate_answered"), (4, "approved"), (5, "gate_open")]
    );
    // A second answer to the same gate is refused on either instance, as a's refusal.
    let (code, body) = b.respond(&session, FIRST, json!("again")).await;
    assert_eq!(
        (code, &body["error"]["code"]),
        (409, &json!("already_answered"))
    );
    // b's status shows the pending gate it does not run.
    let status = b.status(&session).await;
    assert_eq!(status["pending_gates"][0]["id"], SECOND);

    // The second gate on a; b's stream sees the session through to its end.
    assert_eq!(a.respond(&session, SECOND, json!("ok")).await.0, 200);
    let rest = stream.rest().await;
    assert_eq!(
        names(&rest),
        [
            (6, "gate_answered"),
            (7, "confirmed"),
            (8, "session_complete")
        ]
    );
    // Once it has ended, neither takes an answer.
    let (code, body) = b.respond(&session, SECOND, json!(2)).await;
    assert_eq!(
        (code, &body["error"]["code"]),
        (409, &json!("session_not_running"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_cancelled_through_the_instance_that_does_not_run_it() {
    let (store, _echoes, [a, b]) = two_instances().await;
    let session = a.start("echo", json!({"text": "stop me"})).await;
    let mut stream = a.stream(&session, None).await;
    stream.until("gate_open").await;

    let response = b
        .client
        .post(b.url(&format!("/api/echo/{}/cancel", session.id)))
        .bearer_auth(&session.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["status"], "cancelled", "{body}");
    let rest = stream.rest().await;
    assert_eq!(
        rest.last().map(|e| e.event.as_str()),
        Some("session_cancelled")
    );
    let record = store.get(&session.id).await.unwrap().unwrap();
    assert_eq!(record.error.as_deref(), Some("cancelled by its user"));
    // A gate answer after that is refused.
    let (code, _) = b.respond(&session, FIRST, json!("late")).await;
    assert_eq!(code, 409);
}

// ---------------------------------------------------------------------------------------
// With a run queue: the workers of both instances take the runs.

struct Queued {
    store: Arc<InMemorySessionStore>,
    leases: Arc<InProcessLeases>,
    queue: InProcessRunQueue,
    echoes: [Arc<Echo>; 2],
    servers: [AgentServer; 2],
    http: [TestServer; 2],
}

async fn two_instances_on_a_queue(config: ServerConfig) -> Queued {
    let store = Arc::new(InMemorySessionStore::new());
    let leases = Arc::new(InProcessLeases::default());
    let fanout = Arc::new(InProcessFanout::default());
    let control = Arc::new(InProcessControl::default());
    let queue = InProcessRunQueue::default();
    let echoes = [Arc::new(Echo::new("echo")), Arc::new(Echo::new("echo"))];
    let servers = echoes.clone().map(|echo| {
        AgentServer::new(store.clone())
            .with_checkpoints(store.checkpoints())
            .with_product(echo)
            .with_leases(leases.clone())
            .with_fanout(fanout.clone())
            .with_control(control.clone())
            .with_run_queue(Arc::new(queue.clone()))
            .with_config(config.clone())
    });
    let a = TestServer::spawn(servers[0].clone()).await;
    let b = TestServer::spawn(servers[1].clone()).await;
    Queued {
        store,
        leases,
        queue,
        echoes,
        servers,
        http: [a, b],
    }
}

/// Which instance runs the session (the one whose echo has a run), once one does.
async fn runner(echoes: &[Arc<Echo>; 2]) -> usize {
    for _ in 0..200 {
        for (i, echo) in echoes.iter().enumerate() {
            if !echo.runs.lock().unwrap().is_empty() {
                return i;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no instance took the run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_started_session_is_run_by_a_worker_and_finishes() {
    let q = two_instances_on_a_queue(ServerConfig::default()).await;
    let session = q.http[0].start("echo", json!({"text": "queued"})).await;
    let mut stream = q.http[1].stream(&session, None).await;
    let opened = stream.until("gate_open").await;
    assert_eq!(names(&opened), [(1, "started"), (2, "gate_open")]);
    let running = runner(&q.echoes).await;
    assert_eq!(
        q.echoes[1 - running].runs.lock().unwrap().len(),
        0,
        "one run"
    );
    for (i, gate) in [FIRST, SECOND].into_iter().enumerate() {
        assert_eq!(
            q.http[i].respond_when_open(&session, gate, json!(i)).await,
            200
        );
    }
    let rest = stream.rest().await;
    assert_eq!(rest.last().unwrap().event, "session_complete");
    assert!(q.queue.dead_letters().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_that_shuts_down_hands_its_run_to_the_other() {
    let q = two_instances_on_a_queue(ServerConfig::default()).await;
    let session = q.http[0].start("echo", json!({"text": "moving"})).await;
    let mut stream = q.http[0].stream(&session, None).await;
    stream.until("gate_open").await;
    assert_eq!(
        q.http[1].respond(&session, FIRST, json!("first")).await.0,
        200
    );
    stream.until("gate_open").await;
    let first = runner(&q.echoes).await;

    // The instance running it parks it; the other instance's worker resumes it from the
    // store, with the first answer and the saved state restored.
    q.servers[first].park_all().await;
    let other = 1 - first;
    assert_eq!(
        q.http[other]
            .respond_when_open(&session, SECOND, json!("second"))
            .await,
        200
    );
    let mut stream = q.http[other].stream(&session, Some(5)).await;
    let rest = stream.rest().await;
    assert_eq!(rest.last().unwrap().event, "session_complete");
    let resumed_with = q.echoes[other].runs.lock().unwrap().clone();
    assert_eq!(resumed_with, [Some(json!("first"))]);
    let record = q.store.get(&session.id).await.unwrap().unwrap();
    assert_eq!(record.result.unwrap()["second"], "second");
}

/// How many runs both instances have started so far, once it is at least `at_least`.
async fn runs_started(echoes: &[Arc<Echo>; 2], at_least: usize) -> usize {
    let count = || {
        echoes
            .iter()
            .map(|echo| echo.runs.lock().unwrap().len())
            .sum::<usize>()
    };
    for _ in 0..500 {
        if count() >= at_least {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_at_its_run_limit_leaves_further_runs_queued() {
    let config = ServerConfig {
        max_concurrent_runs: Some(1),
        ..ServerConfig::default()
    };
    let q = two_instances_on_a_queue(config).await;
    let mut sessions = Vec::new();
    for n in 0..3 {
        sessions.push(
            q.http[0]
                .start("echo", json!({"text": n.to_string()}))
                .await,
        );
    }
    // One run each; the third stays queued while both wait at their gates.
    assert_eq!(runs_started(&q.echoes, 2).await, 2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(runs_started(&q.echoes, 2).await, 2);
    for echo in &q.echoes {
        assert_eq!(echo.runs.lock().unwrap().len(), 1);
    }
    let mut queued = Vec::new();
    let mut running = Vec::new();
    for session in sessions {
        let gates = q.http[0].status(&session).await["pending_gates"].clone();
        if gates.as_array().unwrap().is_empty() {
            queued.push(session);
        } else {
            running.push(session);
        }
    }
    assert_eq!((running.len(), queued.len()), (2, 1));

    // A session finishes: its instance has a free slot and takes the queued run.
    let done = &running[0];
    for gate in [FIRST, SECOND] {
        assert_eq!(
            q.http[1].respond_when_open(done, gate, json!("ok")).await,
            200
        );
    }
    assert_eq!(runs_started(&q.echoes, 3).await, 3);
    assert_eq!(
        q.http[1]
            .respond_when_open(&queued[0], FIRST, json!("at last"))
            .await,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_queued_run_was_purged_is_queued_again_by_the_sweep() {
    let config = ServerConfig {
        max_concurrent_runs: Some(1),
        queue_sweep_interval: Duration::from_millis(300),
        ..ServerConfig::default()
    };
    let q = two_instances_on_a_queue(config).await;
    // Both instances at their limit, each with a session waiting at its gate.
    let busy = [
        q.http[0].start("echo", json!({"text": "a"})).await,
        q.http[0].start("echo", json!({"text": "b"})).await,
    ];
    assert_eq!(runs_started(&q.echoes, 2).await, 2);
    // The third session's run waits in the queue, and is lost there.
    let lost = q.http[0].start("echo", json!({"text": "lost"})).await;
    assert_eq!(q.queue.purge(), 1);
    assert!(!q.queue.holds(&lost.id).await.unwrap());

    // The sweep queues it again (not the two live ones, nor twice): once an instance
    // is free, it runs, and finishes.
    for gate in [FIRST, SECOND] {
        assert_eq!(
            q.http[1]
                .respond_when_open(&busy[0], gate, json!("ok"))
                .await,
            200
        );
    }
    for gate in [FIRST, SECOND] {
        assert_eq!(
            q.http[1]
                .respond_when_open(&lost, gate, json!("found"))
                .await,
            200
        );
    }
    let events = q.http[0].stream(&lost, None).await.rest().await;
    assert_eq!(events.last().unwrap().event, "session_complete");
    assert_eq!(runs_started(&q.echoes, 3).await, 3, "one run each");
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(runs_started(&q.echoes, 3).await, 3, "no repeat");
    assert!(q.queue.holds(&busy[1].id).await.unwrap());
    assert_eq!(q.servers[0].sweep_run_queue().await.unwrap(), 0);
    assert!(q.queue.dead_letters().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_never_gets_going_goes_to_the_dead_letters_and_fails() {
    let config = ServerConfig {
        max_deliveries: 2,
        ..ServerConfig::default()
    };
    let q = two_instances_on_a_queue(config).await;
    // A lease held by an instance that never runs it: no worker can start the run.
    let store: Arc<dyn SessionStore> = q.store.clone();
    let id = "stuck";
    let token = "stuck-token";
    let token_hash: String = {
        use sha2::Digest;
        sha2::Sha256::digest(token.as_bytes())
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    };
    store
        .create(agent_runtime::sessions::NewSession {
            id: id.into(),
            product: "echo".into(),
            token_hash,
            tenant: None,
            request: json!({"text": "stuck"}),
        })
        .await
        .unwrap();
    // A client follows it: the stream waits for the run, and ends when it is given up.
    let started = common::Started {
        product: "echo".into(),
        id: id.into(),
        token: token.into(),
        stream_url: format!("/api/echo/{id}/stream"),
        status_url: format!("/api/echo/{id}"),
    };
    let mut stream = q.http[1].stream(&started, None).await;
    assert!(
        q.leases
            .acquire(id, "ghost", Duration::from_secs(600))
            .await
            .unwrap()
    );
    agent_runtime::sessions::RunQueue::enqueue(&q.queue, "echo", id)
        .await
        .unwrap();
    let mut dead = Vec::new();
    for _ in 0..100 {
        dead = q.queue.dead_letters();
        if !dead.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        dead,
        [(
            id.to_owned(),
            "handed out 2 times without finishing".to_owned()
        )]
    );
    let events = stream.rest().await;
    assert_eq!(names(&events), [(1, "session_failed")]);
    let record = store.get(id).await.unwrap().unwrap();
    assert_eq!(record.status.as_str(), "failed");
    assert_eq!(
        record.error.as_deref(),
        Some("handed out 2 times without finishing")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_stored_while_the_session_ran_nowhere_is_announced_once() {
    let (store, _echoes, [a, _b]) = two_instances().await;
    let session = a.start("echo", json!({"text": "race"})).await;
    let mut stream = a.stream(&session, None).await;
    stream.until("gate_open").await;
    // What another instance does with an answer while the session runs nowhere: store it
    // and announce it. The run, which read its gates before, then gets it passed on.
    let store: Arc<dyn SessionStore> = store;
    let answered = store
        .answer_gate(
            &session.id,
            FIRST,
            &json!("stored"),
            &json!({"type": "gate_answered", "gate_id": FIRST}),
        )
        .await
        .unwrap();
    assert!(matches!(
        answered,
        agent_runtime::sessions::GateAnswer::Accepted { .. }
    ));
    assert_eq!(a.respond(&session, FIRST, json!("stored")).await.0, 200);
    let next = stream.until("gate_open").await;
    let announced = next
        .iter()
        .filter(|e| e.event == "gate_answered" && e.data["gate_id"] == FIRST)
        .count();
    assert_eq!(announced, 1, "{:?}", names(&next));
}
