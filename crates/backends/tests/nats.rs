//! Live events, session control and the run queue on the real NATS server (`NATS_URL`, else
//! `nats://127.0.0.1:4222`, which `cargo xtask test` starts when it is down); each test
//! on subjects of its own. Fails, never skips, without the server.
#![cfg(test)]

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

// ---------------------------------------------------------------------------------------
// The JetStream run queue.

use agent_backends::JetStreamRunQueue;
use agent_runtime::sessions::{QueuedRun, RunQueue};

/// The next run handed out, within `wait`.
async fn next_run(
    runs: &mut futures::stream::BoxStream<'static, QueuedRun>,
    wait: Duration,
) -> Option<QueuedRun> {
    tokio::time::timeout(wait, runs.next()).await.ok().flatten()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_run_goes_to_one_worker_and_leaves_when_done() {
    let (a, b) = two_instances().await;
    let ack_wait = Duration::from_secs(2);
    let queue_a = JetStreamRunQueue::new(&a, ack_wait).await.unwrap();
    let queue_b = JetStreamRunQueue::new(&b, ack_wait).await.unwrap();
    queue_a.enqueue("resume", "s1").await.unwrap();
    queue_a.enqueue("resume", "s1").await.unwrap(); // the same run: one message
    let mut worker_a = queue_a.take(None).await.unwrap();
    let mut worker_b = queue_b.take(None).await.unwrap();
    let run = tokio::select! {
        Some(run) = worker_a.next() => run,
        Some(run) = worker_b.next() => run,
    };
    assert_eq!(
        (run.session.as_str(), run.product.as_str(), run.deliveries),
        ("s1", "resume", 1)
    );
    run.ticket.done().await.unwrap();
    assert!(
        next_run(&mut worker_a, Duration::from_secs(3))
            .await
            .is_none()
    );
    assert!(
        next_run(&mut worker_b, Duration::from_millis(100))
            .await
            .is_none()
    );
    queue_a.delete_streams().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_asks_for_no_further_run_holds_none() {
    let (a, b) = two_instances().await;
    // An ack wait far past the test: a run held by a would not come back in time.
    let ack_wait = Duration::from_secs(60);
    let queue_a = JetStreamRunQueue::new(&a, ack_wait).await.unwrap();
    let queue_b = JetStreamRunQueue::new(&b, ack_wait).await.unwrap();
    // a keeps at most one run live.
    let mut worker_a = queue_a.take(Some(1)).await.unwrap();
    queue_a.enqueue("resume", "first").await.unwrap();
    let first = next_run(&mut worker_a, Duration::from_secs(5))
        .await
        .unwrap();
    // a is busy (at its limit, say) and does not ask for the next: b gets it.
    queue_a.enqueue("resume", "second").await.unwrap();
    let mut worker_b = queue_b.take(None).await.unwrap();
    let second = next_run(&mut worker_b, Duration::from_secs(5))
        .await
        .expect("the second run went to the worker that asked");
    assert_eq!((second.session.as_str(), second.deliveries), ("second", 1));
    first.ticket.done().await.unwrap();
    second.ticket.done().await.unwrap();
    queue_a.delete_streams().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_worker_goes_quiet_is_handed_to_another_and_one_kept_alive_is_not() {
    let (a, b) = two_instances().await;
    let ack_wait = Duration::from_secs(1);
    let queue_a = JetStreamRunQueue::new(&a, ack_wait).await.unwrap();
    let queue_b = JetStreamRunQueue::new(&b, ack_wait).await.unwrap();
    let mut worker_a = queue_a.take(None).await.unwrap();
    queue_a.enqueue("resume", "kept").await.unwrap();
    let kept = next_run(&mut worker_a, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(kept.session, "kept");
    // a says it is working for three ack waits: nobody else gets the run.
    let mut worker_b = queue_b.take(None).await.unwrap();
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        kept.ticket.working().await.unwrap();
    }
    assert!(
        next_run(&mut worker_b, Duration::from_millis(200))
            .await
            .is_none()
    );
    kept.ticket.done().await.unwrap();

    // a takes the next run and dies (goes quiet): b gets it after the ack wait.
    queue_a.enqueue("resume", "orphan").await.unwrap();
    let taken = tokio::select! {
        Some(run) = worker_a.next() => run,
        Some(run) = worker_b.next() => run,
    };
    assert_eq!((taken.session.as_str(), taken.deliveries), ("orphan", 1));
    drop(worker_a);
    std::mem::forget(taken); // neither settled nor kept alive: a crashed worker
    let again = next_run(&mut worker_b, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!((again.session.as_str(), again.deliveries), ("orphan", 2));
    again.ticket.done().await.unwrap();
    queue_a.delete_streams().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_put_back_returns_after_its_delay_and_a_dead_one_never_does() {
    let (a, _) = two_instances().await;
    let queue = JetStreamRunQueue::new(&a, Duration::from_secs(5))
        .await
        .unwrap();
    let mut worker = queue.take(None).await.unwrap();
    queue.enqueue("resume", "later").await.unwrap();
    let run = next_run(&mut worker, Duration::from_secs(5)).await.unwrap();
    run.ticket
        .retry_after(Duration::from_millis(300))
        .await
        .unwrap();
    let again = next_run(&mut worker, Duration::from_secs(5)).await.unwrap();
    assert_eq!((again.session.as_str(), again.deliveries), ("later", 2));
    again
        .ticket
        .dead("delivered 2 times without finishing")
        .await
        .unwrap();
    assert!(
        next_run(&mut worker, Duration::from_secs(2))
            .await
            .is_none()
    );
    assert_eq!(
        queue.dead_letters().await.unwrap(),
        [
            json!({"session": "later", "product": "resume", "reason": "delivered 2 times without finishing"})
        ]
    );
    queue.delete_streams().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_holds_a_run_until_it_is_settled_and_a_purged_one_can_be_requeued() {
    let (a, _) = two_instances().await;
    let queue = JetStreamRunQueue::new(&a, Duration::from_secs(5))
        .await
        .unwrap();
    assert!(!queue.holds("s1").await.unwrap());
    queue.enqueue("resume", "s1").await.unwrap();
    assert!(queue.holds("s1").await.unwrap(), "waiting");
    let mut worker = queue.take(None).await.unwrap();
    let run = next_run(&mut worker, Duration::from_secs(5)).await.unwrap();
    assert!(queue.holds("s1").await.unwrap(), "taken, not settled");
    run.ticket.done().await.unwrap();
    assert!(!queue.holds("s1").await.unwrap(), "settled");

    // Purged while waiting: lost. Enqueued again within the duplicate window, it would
    // be taken for the lost message and dropped; requeued, it is not.
    queue.enqueue("resume", "s2").await.unwrap();
    drop(worker);
    queue.purge().await.unwrap();
    assert!(!queue.holds("s2").await.unwrap());
    queue.enqueue("resume", "s2").await.unwrap();
    assert!(
        !queue.holds("s2").await.unwrap(),
        "a repeat of the lost message"
    );
    queue.requeue("resume", "s2").await.unwrap();
    assert!(queue.holds("s2").await.unwrap());
    let mut worker = queue.take(None).await.unwrap();
    let run = next_run(&mut worker, Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        (run.session.as_str(), run.product.as_str()),
        ("s2", "resume")
    );
    run.ticket.done().await.unwrap();
    queue.delete_streams().await.unwrap();
}

/// The run queue reports each redelivery under its product, and how many runs wait
/// behind the one it delivers (read back from the process's Prometheus recorder, the only
/// one this test binary installs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redeliveries_and_the_queue_depth_are_measured() {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let metrics = recorder.handle();
    metrics::set_global_recorder(recorder).unwrap();
    agent_runtime::process_metrics::start_recording();

    let (a, _) = two_instances().await;
    let queue = JetStreamRunQueue::new(&a, Duration::from_secs(5))
        .await
        .unwrap();
    queue.enqueue("metered", "m1").await.unwrap();
    queue.enqueue("metered", "m2").await.unwrap();
    let mut worker = queue.take(Some(1)).await.unwrap();
    let first = next_run(&mut worker, Duration::from_secs(5)).await.unwrap();
    assert_eq!(first.deliveries, 1);
    let rendered = metrics.render();
    assert!(
        !rendered.contains("agent_run_queue_redeliveries_total{product=\"metered\"}"),
        "{rendered}"
    );
    assert!(rendered.contains("agent_run_queue_depth 1"), "{rendered}");
    first
        .ticket
        .retry_after(Duration::from_millis(200))
        .await
        .unwrap();
    let mut redelivered = false;
    while let Some(run) = next_run(&mut worker, Duration::from_secs(5)).await {
        redelivered |= run.deliveries == 2;
        run.ticket.done().await.unwrap();
        if redelivered {
            break;
        }
    }
    assert!(redelivered);
    let rendered = metrics.render();
    assert!(
        rendered.contains("agent_run_queue_redeliveries_total{product=\"metered\"} 1"),
        "{rendered}"
    );
    queue.delete_streams().await.unwrap();
}
