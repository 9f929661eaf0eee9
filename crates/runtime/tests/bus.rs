//! The in-memory bus through its public API.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agent_runtime::bus::{
    AgentBus, AgentMessage, BusError, InMemoryBus, MessageStream, MessageType, OutgoingMessage,
};
use futures::StreamExt;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::Duration;

const DOMAIN: &str = "resume";

fn note(from: &str, to: &str, payload: Value) -> OutgoingMessage {
    OutgoingMessage::new(from, to, MessageType::Notification, DOMAIN, payload)
}

/// The next message, or a failure if none comes within a second.
async fn next(stream: &mut MessageStream) -> AgentMessage {
    tokio::time::timeout(Duration::from_secs(1), stream.next())
        .await
        .expect("no message within a second")
        .expect("stream ended")
}

/// Asserts the stream has nothing ready right now (without ending).
async fn assert_nothing_ready(stream: &mut MessageStream) {
    tokio::task::yield_now().await;
    assert!(
        futures::FutureExt::now_or_never(stream.next()).is_none(),
        "unexpected message or end of stream"
    );
}

/// Asserts the stream ends (yields `None`) within a second.
async fn assert_ends(stream: &mut MessageStream) {
    let end = tokio::time::timeout(Duration::from_secs(1), stream.next())
        .await
        .expect("stream did not end within a second");
    assert!(end.is_none(), "expected the end of the stream, got {end:?}");
}

#[tokio::test]
async fn delivers_in_order_and_returns_the_stamped_message() {
    let bus = InMemoryBus::new();
    let mut inbox = bus.subscribe(DOMAIN, "craftsman").await.unwrap();

    let mut sent = Vec::new();
    for n in 0..20 {
        sent.push(
            bus.send(note("producer", "craftsman", json!({ "n": n })))
                .await
                .unwrap(),
        );
    }
    for (n, expected) in sent.iter().enumerate() {
        let received = next(&mut inbox).await;
        assert_eq!(&received, expected);
        assert_eq!(received.payload["n"], n);
        assert_eq!(received.from, "producer");
        assert_eq!(received.kind, MessageType::Notification);
        assert!(uuid::Uuid::parse_str(&received.id).is_ok());
    }
    assert_nothing_ready(&mut inbox).await;

    let ids: HashSet<_> = sent.iter().map(|m| m.id.clone()).collect();
    assert_eq!(ids.len(), sent.len(), "ids are unique");
}

#[tokio::test]
async fn domains_isolate_agents_with_the_same_name() {
    let bus = InMemoryBus::new();
    let mut resume = bus.subscribe("resume", "writer").await.unwrap();
    let mut cover = bus.subscribe("cover_letter", "writer").await.unwrap();

    bus.send(OutgoingMessage::new(
        "a",
        "writer",
        MessageType::Handoff,
        "cover_letter",
        json!("for cover"),
    ))
    .await
    .unwrap();
    bus.send(OutgoingMessage::new(
        "a",
        "writer",
        MessageType::Handoff,
        "resume",
        json!("for resume"),
    ))
    .await
    .unwrap();

    assert_eq!(next(&mut resume).await.payload, json!("for resume"));
    assert_eq!(next(&mut cover).await.payload, json!("for cover"));
    assert_nothing_ready(&mut resume).await;
    assert_nothing_ready(&mut cover).await;
}

#[tokio::test]
async fn a_second_subscribe_is_refused() {
    let bus = InMemoryBus::new();
    let _inbox = bus.subscribe(DOMAIN, "craftsman").await.unwrap();
    let err = bus.subscribe(DOMAIN, "craftsman").await.err().unwrap();
    assert_eq!(
        err,
        BusError::AlreadySubscribed {
            domain: DOMAIN.into(),
            agent: "craftsman".into()
        }
    );
    // Another domain is another agent.
    assert!(bus.subscribe("other", "craftsman").await.is_ok());
}

#[tokio::test]
async fn invalid_messages_are_refused_and_not_logged() {
    let bus = InMemoryBus::new();
    for (message, what) in [
        (note("producer", "", json!(null)), "to"),
        (note("", "craftsman", json!(null)), "from"),
        (
            OutgoingMessage::new("a", "b", MessageType::Handoff, " ", json!(null)),
            "domain",
        ),
        (
            OutgoingMessage::new("a", "b", MessageType::Response, DOMAIN, json!(null)),
            "correlation_id",
        ),
    ] {
        match bus.send(message).await {
            Err(BusError::Invalid(reason)) => assert!(reason.contains(what), "{reason}"),
            other => panic!("expected Invalid about {what}, got {other:?}"),
        }
    }
    // `request` only sends requests.
    let err = bus
        .request(note("a", "b", json!(null)), Duration::from_secs(1))
        .await
        .err()
        .unwrap();
    assert!(matches!(err, BusError::Invalid(_)), "{err:?}");
    assert!(bus.log().await.unwrap().is_empty());
}

#[tokio::test]
async fn messages_are_held_until_the_agent_subscribes() {
    let bus = InMemoryBus::new();
    let first = bus
        .send(note("producer", "craftsman", json!(1)))
        .await
        .unwrap();
    let second = bus
        .send(note("producer", "craftsman", json!(2)))
        .await
        .unwrap();

    let mut inbox = bus.subscribe(DOMAIN, "craftsman").await.unwrap();
    let third = bus
        .send(note("producer", "craftsman", json!(3)))
        .await
        .unwrap();

    assert_eq!(next(&mut inbox).await, first);
    assert_eq!(next(&mut inbox).await, second);
    assert_eq!(next(&mut inbox).await, third);
    assert_nothing_ready(&mut inbox).await;
}

#[tokio::test]
async fn past_the_held_cap_a_message_is_undeliverable_but_logged() {
    let bus = InMemoryBus::with_limits(500, 3);
    for n in 0..3 {
        bus.send(note("producer", "craftsman", json!(n)))
            .await
            .unwrap();
    }
    let err = bus
        .send(note("producer", "craftsman", json!(3)))
        .await
        .err()
        .unwrap();
    match err {
        BusError::Undeliverable { domain, to, reason } => {
            assert_eq!(domain, DOMAIN);
            assert_eq!(to, "craftsman");
            assert!(reason.contains('3'), "{reason}");
        }
        other => panic!("expected Undeliverable, got {other:?}"),
    }
    // The cap is per recipient.
    bus.send(note("producer", "strategist", json!("fine")))
        .await
        .unwrap();

    let log = bus.log().await.unwrap();
    let payloads: Vec<_> = log.iter().map(|m| m.payload.clone()).collect();
    assert_eq!(
        payloads,
        vec![json!(0), json!(1), json!(2), json!(3), json!("fine")]
    );

    // The held ones are still delivered, and nothing more.
    let mut inbox = bus.subscribe(DOMAIN, "craftsman").await.unwrap();
    for n in 0..3 {
        assert_eq!(next(&mut inbox).await.payload, json!(n));
    }
    assert_nothing_ready(&mut inbox).await;
}

#[tokio::test]
async fn unsubscribe_ends_the_stream_and_later_messages_are_held() {
    let bus = InMemoryBus::new();
    let mut inbox = bus.subscribe(DOMAIN, "craftsman").await.unwrap();
    bus.send(note("producer", "craftsman", json!("before")))
        .await
        .unwrap();
    bus.unsubscribe(DOMAIN, "craftsman").await.unwrap();

    // What was delivered before unsubscribing is still read, then the stream ends.
    assert_eq!(next(&mut inbox).await.payload, json!("before"));
    assert_ends(&mut inbox).await;

    bus.send(note("producer", "craftsman", json!("after")))
        .await
        .unwrap();
    let mut again = bus.subscribe(DOMAIN, "craftsman").await.unwrap();
    assert_eq!(next(&mut again).await.payload, json!("after"));
    assert_nothing_ready(&mut again).await;

    // Unsubscribing an agent that is not subscribed is harmless.
    bus.unsubscribe(DOMAIN, "nobody").await.unwrap();
}

#[tokio::test]
async fn a_dropped_stream_loses_nothing() {
    let bus = InMemoryBus::new();

    // Dropped with nothing unread: the next message is held.
    let inbox = bus.subscribe(DOMAIN, "craftsman").await.unwrap();
    drop(inbox);
    bus.send(note("producer", "craftsman", json!(1)))
        .await
        .unwrap();

    // Dropped with messages delivered but not read: they are held again, in order.
    let inbox = bus.subscribe(DOMAIN, "craftsman").await.unwrap();
    bus.send(note("producer", "craftsman", json!(2)))
        .await
        .unwrap();
    drop(inbox);
    bus.send(note("producer", "craftsman", json!(3)))
        .await
        .unwrap();

    let mut inbox = bus.subscribe(DOMAIN, "craftsman").await.unwrap();
    for n in 1..=3 {
        assert_eq!(next(&mut inbox).await.payload, json!(n));
    }
    assert_nothing_ready(&mut inbox).await;
}

#[tokio::test]
async fn request_and_response_round_trip() {
    let bus = InMemoryBus::new();

    let responder = {
        let bus = bus.clone();
        let mut inbox = bus.subscribe(DOMAIN, "craftsman").await.unwrap();
        tokio::spawn(async move {
            let request = inbox.next().await.unwrap();
            assert_eq!(request.kind, MessageType::Request);
            let section = request.payload["section"].as_str().unwrap().to_owned();
            bus.send(OutgoingMessage::response_to(
                &request,
                json!({ "revised": format!("new {section}") }),
            ))
            .await
            .unwrap();
            request
        })
    };

    let response = bus
        .request(
            OutgoingMessage::new(
                "producer",
                "craftsman",
                MessageType::Request,
                DOMAIN,
                json!({"section": "summary"}),
            ),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    let request = responder.await.unwrap();

    assert_eq!(response.kind, MessageType::Response);
    assert_eq!(
        response.correlation_id.as_deref(),
        Some(request.id.as_str())
    );
    assert_eq!(response.from, "craftsman");
    assert_eq!(response.to, "producer");
    assert_eq!(response.payload, json!({"revised": "new summary"}));

    // The response went to the request, not to the producer's inbox.
    let mut producer = bus.subscribe(DOMAIN, "producer").await.unwrap();
    assert_nothing_ready(&mut producer).await;

    let log = bus.log().await.unwrap();
    assert_eq!(log, vec![request, response]);
}

#[tokio::test(start_paused = true)]
async fn a_request_without_response_times_out() {
    let bus = InMemoryBus::new();
    let mut inbox = bus.subscribe(DOMAIN, "craftsman").await.unwrap();

    let err = bus
        .request(
            OutgoingMessage::new(
                "producer",
                "craftsman",
                MessageType::Request,
                DOMAIN,
                json!({}),
            ),
            Duration::from_secs(30),
        )
        .await
        .err()
        .unwrap();
    let request = next(&mut inbox).await;
    assert_eq!(
        err,
        BusError::Timeout {
            id: request.id.clone(),
            after: Duration::from_secs(30)
        }
    );

    // A late response is not lost: with no request waiting, it goes to the sender's inbox.
    bus.send(OutgoingMessage::response_to(&request, json!("late")))
        .await
        .unwrap();
    let mut producer = bus.subscribe(DOMAIN, "producer").await.unwrap();
    let late = next(&mut producer).await;
    assert_eq!(late.payload, json!("late"));
    assert_eq!(late.correlation_id, Some(request.id));
}

#[tokio::test]
async fn an_undeliverable_request_fails_at_once() {
    let bus = InMemoryBus::with_limits(500, 0);
    let err = bus
        .request(
            OutgoingMessage::new(
                "producer",
                "craftsman",
                MessageType::Request,
                DOMAIN,
                json!({}),
            ),
            Duration::from_secs(3600),
        )
        .await
        .err()
        .unwrap();
    assert!(matches!(err, BusError::Undeliverable { .. }), "{err:?}");
}

#[tokio::test]
async fn a_response_with_an_unknown_correlation_goes_to_the_subscriber() {
    let bus = InMemoryBus::new();
    let mut inbox = bus.subscribe(DOMAIN, "producer").await.unwrap();
    let mut response = OutgoingMessage::new(
        "craftsman",
        "producer",
        MessageType::Response,
        DOMAIN,
        json!("unsolicited"),
    );
    response.correlation_id = Some("no-such-request".into());
    let sent = bus.send(response).await.unwrap();
    assert_eq!(next(&mut inbox).await, sent);
}

#[tokio::test]
async fn the_log_keeps_the_500_most_recent_messages() {
    let bus = InMemoryBus::new();
    let mut inbox = bus.subscribe(DOMAIN, "craftsman").await.unwrap();
    let mut sent = Vec::new();
    for n in 0..510 {
        sent.push(
            bus.send(note("producer", "craftsman", json!(n)))
                .await
                .unwrap(),
        );
    }
    let log = bus.log().await.unwrap();
    assert_eq!(log.len(), 500);
    assert_eq!(log[0].id, sent[10].id, "the first logged is the 11th sent");
    assert_eq!(log, sent[10..]);
    // Capping the log does not affect delivery.
    for expected in &sent {
        assert_eq!(&next(&mut inbox).await, expected);
    }
}

#[tokio::test]
async fn reset_forgets_everything() {
    let bus = InMemoryBus::new();
    let mut inbox = bus.subscribe(DOMAIN, "craftsman").await.unwrap();
    bus.send(note("producer", "strategist", json!("held")))
        .await
        .unwrap();

    let waiting = {
        let bus = bus.clone();
        tokio::spawn(async move {
            bus.request(
                OutgoingMessage::new(
                    "producer",
                    "craftsman",
                    MessageType::Request,
                    DOMAIN,
                    json!({}),
                ),
                Duration::from_secs(3600),
            )
            .await
        })
    };
    let request = next(&mut inbox).await;
    assert_eq!(request.kind, MessageType::Request);
    assert_eq!(bus.log().await.unwrap().len(), 2);

    bus.reset().await.unwrap();

    assert_ends(&mut inbox).await;
    assert!(bus.log().await.unwrap().is_empty());
    let err = waiting.await.unwrap().err().unwrap();
    assert!(matches!(err, BusError::Backend(_)), "{err:?}");

    // The held message is gone; the agent can subscribe again.
    let mut strategist = bus.subscribe(DOMAIN, "strategist").await.unwrap();
    assert_nothing_ready(&mut strategist).await;
    let mut again = bus.subscribe(DOMAIN, "craftsman").await.unwrap();
    bus.send(note("producer", "craftsman", json!("fresh")))
        .await
        .unwrap();
    assert_eq!(next(&mut again).await.payload, json!("fresh"));
    // Dropping a stream from before the reset leaves the new subscription alone.
    drop(inbox);
    bus.send(note("producer", "craftsman", json!("still")))
        .await
        .unwrap();
    assert_eq!(next(&mut again).await.payload, json!("still"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_senders_are_all_delivered_exactly_once() {
    const TASKS: usize = 16;
    const EACH: usize = 50;
    let bus = InMemoryBus::with_limits(10_000, 10_000);
    let mut inbox = bus.subscribe(DOMAIN, "collector").await.unwrap();

    let senders: Vec<_> = (0..TASKS)
        .map(|task| {
            let bus = bus.clone();
            tokio::spawn(async move {
                for n in 0..EACH {
                    bus.send(note(
                        &format!("sender-{task}"),
                        "collector",
                        json!({"task": task, "n": n}),
                    ))
                    .await
                    .unwrap();
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for sender in senders {
        sender.await.unwrap();
    }

    let mut seen = HashSet::new();
    let mut last = vec![None::<u64>; TASKS];
    for _ in 0..TASKS * EACH {
        let message = next(&mut inbox).await;
        let task = usize::try_from(message.payload["task"].as_u64().unwrap()).unwrap();
        let n = message.payload["n"].as_u64().unwrap();
        assert!(seen.insert((task, n)), "duplicate {task}/{n}");
        // Each sender's messages arrive in the order it sent them.
        assert!(last[task] < Some(n), "out of order for task {task}");
        last[task] = Some(n);
    }
    assert_eq!(seen.len(), TASKS * EACH);
    assert_nothing_ready(&mut inbox).await;
    assert_eq!(bus.log().await.unwrap().len(), TASKS * EACH);
}

#[test]
fn agent_message_wire_format() {
    let message = AgentMessage {
        id: "8d3c2a4e-5b1f-4f7e-9a6d-2c0b1e3f4a5b".into(),
        from: "producer".into(),
        to: "craftsman".into(),
        kind: MessageType::Request,
        domain: "resume".into(),
        payload: json!({"section": "summary", "reason": "too long"}),
        timestamp: "2025-01-02T03:04:05Z".parse().unwrap(),
        correlation_id: None,
    };
    insta::assert_json_snapshot!("agent_message_request", message);

    let wire = serde_json::to_value(&message).unwrap();
    assert_eq!(wire["type"], "request");
    assert!(wire.get("correlation_id").is_none());
    let back: AgentMessage = serde_json::from_value(wire).unwrap();
    assert_eq!(back, message);

    // A stamped response carries its correlation id on the wire.
    let response = OutgoingMessage::response_to(&message, json!("ok")).into_message();
    let wire = serde_json::to_value(&response).unwrap();
    assert_eq!(wire["type"], "response");
    assert_eq!(wire["correlation_id"], json!(message.id));
    let back: AgentMessage = serde_json::from_value(wire).unwrap();
    assert_eq!(back, response);
}
