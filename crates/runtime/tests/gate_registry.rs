//! The gate registry: answered once, listened to, restored after a restart, timed out
//! (by its own timeout or the registry's default), cancelled.
#![cfg(test)]

use agent_runtime::{GateError, GateListener, GateRegistry, GateRequest, PendingGate};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

async fn until_pending(gates: &GateRegistry, n: usize) {
    while gates.pending().len() < n {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn answer_reaches_the_waiter_and_is_accepted_once() {
    let gates = GateRegistry::new();
    let id = gates.next_id("a", "review");
    assert_eq!(id, "a:review:1");
    assert_eq!(gates.next_id("a", "review"), "a:review:2");
    let waiter = {
        let (gates, id) = (gates.clone(), id.clone());
        tokio::spawn(async move {
            let request = GateRequest::new("review").with_payload(json!({"draft": 1}));
            gates.wait(&id, request, None).await
        })
    };
    until_pending(&gates, 1).await;
    let pending = gates.pending();
    assert_eq!(pending[0].payload, json!({"draft": 1}));
    assert_eq!(pending[0].name, "review");
    gates.respond(&id, json!("ok")).unwrap();
    assert_eq!(waiter.await.unwrap().unwrap(), json!("ok"));
    assert_eq!(
        gates.respond(&id, json!("again")),
        Err(GateError::AlreadyAnswered(id.clone()))
    );
    assert_eq!(
        gates.respond("nope", json!(1)),
        Err(GateError::Unknown("nope".into()))
    );
    assert!(gates.pending().is_empty());
}

#[derive(Default)]
struct Heard(Mutex<Vec<String>>);

impl GateListener for Heard {
    fn opened(&self, gate: &PendingGate) {
        self.0
            .lock()
            .unwrap()
            .push(format!("opened {} {}", gate.id, gate.payload));
    }
    fn answered(&self, id: &str, answer: &Value) {
        self.0
            .lock()
            .unwrap()
            .push(format!("answered {id} {answer}"));
    }
}

#[tokio::test]
async fn a_listener_hears_gates_open_and_get_answered() {
    let heard = Arc::new(Heard::default());
    let gates = GateRegistry::with_listener(heard.clone());
    let id = gates.next_id("coordinator", "review");
    let waiter = {
        let (gates, id) = (gates.clone(), id.clone());
        tokio::spawn(async move {
            let request = GateRequest::new("review").with_payload(json!({"n": 1}));
            gates.wait(&id, request, None).await
        })
    };
    until_pending(&gates, 1).await;
    gates.respond(&id, json!("ok")).unwrap();
    waiter.await.unwrap().unwrap();
    assert_eq!(
        *heard.0.lock().unwrap(),
        [
            "opened coordinator:review:1 {\"n\":1}",
            "answered coordinator:review:1 \"ok\""
        ]
    );
}

#[tokio::test]
async fn restored_answers_pass_their_gates_and_the_next_one_waits() {
    let heard = Arc::new(Heard::default());
    let gates = GateRegistry::with_listener(heard.clone());
    gates.restore([("c:q:1".to_owned(), json!("first"))]);
    let first = gates.next_id("c", "q");
    assert_eq!(
        gates.wait(&first, "q".into(), None).await.unwrap(),
        json!("first")
    );
    // Answered once, like any other gate.
    assert_eq!(
        gates.respond(&first, json!("again")),
        Err(GateError::AlreadyAnswered(first.clone()))
    );
    let second = gates.next_id("c", "q");
    let waiter = {
        let (gates, id) = (gates.clone(), second.clone());
        tokio::spawn(async move { gates.wait(&id, "q".into(), None).await })
    };
    until_pending(&gates, 1).await;
    assert_eq!(gates.pending()[0].id, "c:q:2");
    gates.respond(&second, json!("second")).unwrap();
    assert_eq!(waiter.await.unwrap().unwrap(), json!("second"));
    // The restored gate was never opened again.
    assert_eq!(heard.0.lock().unwrap().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn unanswered_gate_times_out_and_is_no_longer_pending() {
    let gates = GateRegistry::new();
    let request = GateRequest::new("slow").with_timeout(Duration::from_secs(30));
    let error = gates.wait("x:slow:1", request, None).await.unwrap_err();
    assert_eq!(
        error,
        GateError::TimedOut {
            id: "x:slow:1".into(),
            after: Duration::from_secs(30)
        }
    );
    assert!(gates.pending().is_empty());
    assert_eq!(
        gates.respond("x:slow:1", json!(1)),
        Err(GateError::Unknown("x:slow:1".into()))
    );
}

#[tokio::test]
async fn cancellation_ends_the_wait() {
    let gates = GateRegistry::new();
    let token = CancellationToken::new();
    token.cancel();
    let error = gates
        .wait("g", GateRequest::new("g"), Some(&token))
        .await
        .unwrap_err();
    assert_eq!(error, GateError::Cancelled("g".into()));
}

#[tokio::test(start_paused = true)]
async fn a_default_timeout_applies_to_gates_without_their_own_and_is_recorded() {
    let gates = GateRegistry::new();
    gates.set_default_timeout(Some(Duration::from_secs(60)));
    let expiry = gates.expiry();
    assert!(!expiry.is_cancelled());
    // A gate's own timeout wins over the default.
    let own = GateRequest::new("quick").with_timeout(Duration::from_secs(5));
    let error = gates.wait("x:quick:1", own, None).await.unwrap_err();
    assert_eq!(
        error,
        GateError::TimedOut {
            id: "x:quick:1".into(),
            after: Duration::from_secs(5)
        }
    );
    let error = gates
        .wait("x:slow:1", GateRequest::new("slow"), None)
        .await
        .unwrap_err();
    assert!(matches!(error, GateError::TimedOut { after, .. } if after == Duration::from_secs(60)));
    assert_eq!(gates.expired(), ["x:quick:1", "x:slow:1"]);
    assert!(expiry.is_cancelled());
}

#[tokio::test]
async fn a_cancelled_run_opens_no_gate() {
    struct Opened(Mutex<Vec<String>>);
    impl GateListener for Opened {
        fn opened(&self, gate: &PendingGate) {
            self.0.lock().unwrap().push(gate.id.clone());
        }
        fn answered(&self, _: &str, _: &Value) {}
    }
    let heard = Arc::new(Opened(Mutex::new(Vec::new())));
    let gates = GateRegistry::with_listener(heard.clone());
    let token = CancellationToken::new();
    token.cancel();
    let error = gates
        .wait("g:review:1", GateRequest::new("review"), Some(&token))
        .await
        .unwrap_err();
    assert_eq!(error, GateError::Cancelled("g:review:1".into()));
    assert!(
        heard.0.lock().unwrap().is_empty(),
        "no gate_open for a cancelled run"
    );
    assert!(gates.pending().is_empty());
    assert!(gates.expired().is_empty());
}
