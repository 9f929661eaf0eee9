#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Live events and session control on the real NATS server (`NATS_URL`, else
//! `nats://127.0.0.1:4222`, which `cargo xtask test` starts when it is down); each test
//! on subjects of its own. Fails, never skips, without the server.

use std::sync::Arc;
use std::time::Duration;

use agent_backends::NatsCoordination;
use agent_runtime::sessions::{EventFanout, Fanned, SessionControl, StoreError};
use futures::StreamExt;
use serde_json::json;

fn url() -> String {
    std::env::var("NATS_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| "nats://127.0.0.1:4222".to_owned())
}

/// Two connections (two instances) on one fresh prefix.
async fn two_instances() -> (NatsCoordination, NatsCoordination) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let prefix = format!("test.{}_{nanos}", std::process::id());
    let connect = || async {
        match NatsCoordination::connect_with_prefix(&url(), &prefix).await {
            Ok(nats) => nats,
            Err(error) => panic!(
                "{error}\n(NATS is not running at {}: `cargo xtask setup` starts it, or set NATS_URL)",
                url()
            ),
        }
    };
    (connect().await, connect().await)
}

const PATIENCE: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_published_on_one_instance_reach_the_other_in_order_then_end() {
    let (runner, follower) = two_instances().await;
    let mut events = follower.subscribe("session.1 *").await.unwrap();
    let mut other = follower.subscribe("session-2").await.unwrap();
    for seq in 1..=300u64 {
        runner.publish(
            "session.1 *",
            seq,
            Arc::new(json!({"type": "step", "n": seq})),
        );
    }
    runner.publish("session-2", 1, Arc::new(json!({"type": "elsewhere"})));
    runner.close("session.1 *");
    let mut seen = Vec::new();
    while let Some(item) = tokio::time::timeout(PATIENCE, events.next()).await.unwrap() {
        match item {
            Fanned::Event(seq, event) => {
                assert_eq!(event["n"], seq);
                seen.push(seq);
            }
            Fanned::Lagged => panic!("lagged on loopback"),
        }
    }
    assert_eq!(
        seen,
        (1..=300).collect::<Vec<_>>(),
        "in order, each once, then the end"
    );
    let Some(Fanned::Event(1, event)) = tokio::time::timeout(PATIENCE, other.next()).await.unwrap()
    else {
        panic!("the other session's event")
    };
    assert_eq!(event["type"], "elsewhere");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_is_in_place_when_subscribe_returns() {
    let (runner, follower) = two_instances().await;
    for round in 0..20 {
        let session = format!("s{round}");
        let mut events = follower.subscribe(&session).await.unwrap();
        runner.publish(&session, 1, Arc::new(json!(round)));
        let first = tokio::time::timeout(PATIENCE, events.next()).await.unwrap();
        assert!(matches!(first, Some(Fanned::Event(1, _))), "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_reaches_the_running_instance_and_no_one_means_none() {
    let (runner, other) = two_instances().await;
    assert_eq!(
        other
            .ask("s1", json!({"op": "ping"}), PATIENCE)
            .await
            .unwrap(),
        None,
        "no instance runs s1"
    );
    let mut requests = runner.serve("s1").await.unwrap();
    let served = tokio::spawn(async move {
        let mut count = 0;
        while let Some(request) = requests.next().await {
            count += 1;
            let reply = json!({"ok": {"echo": request.body, "count": count}});
            request.reply.send(reply).unwrap();
            if count == 3 {
                break;
            }
        }
        // The stream is dropped here: the session no longer runs on this instance.
    });
    for n in 1..=3 {
        let reply = other
            .ask("s1", json!({"op": "respond", "n": n}), PATIENCE)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(reply["ok"]["echo"]["n"], n);
        assert_eq!(reply["ok"]["count"], n);
    }
    served.await.unwrap();
    // Once the run's stream is gone, the session runs nowhere again.
    let mut gone = false;
    for _ in 0..50 {
        if other
            .ask("s1", json!({"op": "ping"}), PATIENCE)
            .await
            .unwrap()
            .is_none()
        {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "the subscription outlived its stream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_that_does_not_reply_is_a_timeout_error() {
    let (runner, other) = two_instances().await;
    let mut requests = runner.serve("silent").await.unwrap();
    let held = tokio::spawn(async move {
        let request = requests.next().await.unwrap();
        tokio::time::sleep(Duration::from_millis(800)).await;
        drop(request);
    });
    let error = other
        .ask("silent", json!("ping"), Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("no reply"), "{error}");
    held.await.unwrap();
}

#[tokio::test]
async fn an_unreachable_server_or_a_bad_prefix_is_a_clear_error() {
    let error = NatsCoordination::connect("nats://127.0.0.1:1")
        .await
        .unwrap_err();
    let StoreError::Backend(message) = error else {
        panic!("{error:?}")
    };
    assert!(
        message.contains("connecting to nats://127.0.0.1:1"),
        "{message}"
    );
    let error = NatsCoordination::connect_with_prefix(&url(), "a b")
        .await
        .unwrap_err();
    assert!(error.to_string().contains("subject prefix"), "{error}");
}
