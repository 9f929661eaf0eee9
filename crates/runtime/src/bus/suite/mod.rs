//! The behaviour every [`AgentBus`] must have (feature `testing`): one suite, run by the
//! in-memory bus's tests and by the distributed buses' in `agent-backends`, so callers can
//! swap one for another. Failures panic, as test assertions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod requests;

use super::{
    AgentBus, AgentMessage, BusError, InMemoryBus, MessageStream, MessageType, OutgoingMessage,
};
use futures::StreamExt;
use futures::future::BoxFuture;
use requests::{
    a_request_without_response_times_out,
    a_response_with_an_unknown_correlation_goes_to_the_subscriber,
    an_undeliverable_request_fails_at_once, request_and_response_round_trip,
};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Makes a fresh, empty bus (a session of its own) keeping the `log_cap` most recent
/// messages and holding at most `held_cap` per recipient without a subscriber.
pub trait MakeBus: Send + Sync {
    /// The bus.
    fn bus(&self, log_cap: usize, held_cap: usize) -> BoxFuture<'_, Arc<dyn AgentBus>>;
}

impl<F, Fut> MakeBus for F
where
    F: Fn(usize, usize) -> Fut + Send + Sync,
    Fut: Future<Output = Arc<dyn AgentBus>> + Send + 'static,
{
    fn bus(&self, log_cap: usize, held_cap: usize) -> BoxFuture<'_, Arc<dyn AgentBus>> {
        Box::pin(self(log_cap, held_cap))
    }
}

/// For a distributed bus: two handles on one session (as two processes would have)
/// share it: a message sent through one before anyone listens is held for a subscriber
/// on the other, one subscriber per agent whichever handle asks, and a request sent
/// through one is answered through the other. Resets the session at the end.
pub async fn shares_one_session(here: Arc<dyn AgentBus>, there: Arc<dyn AgentBus>) {
    let sent = here
        .send(OutgoingMessage::new(
            "producer",
            "craftsman",
            MessageType::Handoff,
            DOMAIN,
            json!({"n": 1}),
        ))
        .await
        .unwrap();
    let mut inbox = there.subscribe(DOMAIN, "craftsman").await.unwrap();
    assert_eq!(next(&mut inbox).await, sent);
    assert_eq!(
        here.subscribe(DOMAIN, "craftsman").await.err().unwrap(),
        BusError::AlreadySubscribed {
            domain: DOMAIN.into(),
            agent: "craftsman".into()
        }
    );

    let responder = {
        let there = there.clone();
        tokio::spawn(async move {
            let request = inbox.next().await.unwrap();
            there
                .send(OutgoingMessage::response_to(&request, json!("done")))
                .await
                .unwrap();
        })
    };
    let response = here
        .request(ask(json!({})), Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(response.payload, json!("done"));
    responder.await.unwrap();
    assert_eq!(here.log().await.unwrap().len(), 3);
    here.reset().await.unwrap();
}

async fn run(name: &str, case: impl Future<Output = ()>) {
    tracing::info!(case = name, "bus suite");
    case.await;
}

/// The buses a suite made, to reset when it is done.
struct Resetting<'a> {
    make: &'a dyn MakeBus,
    made: std::sync::Mutex<Vec<Arc<dyn AgentBus>>>,
}

impl MakeBus for Resetting<'_> {
    fn bus(&self, log_cap: usize, held_cap: usize) -> BoxFuture<'_, Arc<dyn AgentBus>> {
        Box::pin(async move {
            let bus = self.make.bus(log_cap, held_cap).await;
            self.made.lock().unwrap().push(bus.clone());
            bus
        })
    }
}

/// Runs every case, each on a fresh bus from `make`, then resets every bus it made (a
/// server keeps no test sessions). Needs a multi-threaded runtime.
pub async fn behaves(make: &dyn MakeBus) {
    let resetting = Resetting {
        make,
        made: std::sync::Mutex::default(),
    };
    every_case(&resetting).await;
    let made: Vec<Arc<dyn AgentBus>> = resetting.made.lock().unwrap().drain(..).collect();
    for bus in made {
        bus.reset().await.unwrap();
    }
}

async fn every_case(make: &dyn MakeBus) {
    run(
        "delivers_in_order_and_returns_the_stamped_message",
        delivers_in_order_and_returns_the_stamped_message(make),
    )
    .await;
    run(
        "domains_isolate_agents_with_the_same_name",
        domains_isolate_agents_with_the_same_name(make),
    )
    .await;
    run(
        "a_second_subscribe_is_refused",
        a_second_subscribe_is_refused(make),
    )
    .await;
    run(
        "invalid_messages_are_refused_and_not_logged",
        invalid_messages_are_refused_and_not_logged(make),
    )
    .await;
    run(
        "messages_are_held_until_the_agent_subscribes",
        messages_are_held_until_the_agent_subscribes(make),
    )
    .await;
    run(
        "past_the_held_cap_a_message_is_undeliverable_but_logged",
        past_the_held_cap_a_message_is_undeliverable_but_logged(make),
    )
    .await;
    run(
        "unsubscribe_ends_the_stream_and_later_messages_are_held",
        unsubscribe_ends_the_stream_and_later_messages_are_held(make),
    )
    .await;
    run(
        "a_dropped_stream_loses_nothing",
        a_dropped_stream_loses_nothing(make),
    )
    .await;
    run(
        "request_and_response_round_trip",
        request_and_response_round_trip(make),
    )
    .await;
    run(
        "a_request_without_response_times_out",
        a_request_without_response_times_out(make),
    )
    .await;
    run(
        "an_undeliverable_request_fails_at_once",
        an_undeliverable_request_fails_at_once(make),
    )
    .await;
    run(
        "a_response_with_an_unknown_correlation_goes_to_the_subscriber",
        a_response_with_an_unknown_correlation_goes_to_the_subscriber(make),
    )
    .await;
    run(
        "the_log_keeps_the_500_most_recent_messages",
        the_log_keeps_the_500_most_recent_messages(make),
    )
    .await;
    run("reset_forgets_everything", reset_forgets_everything(make)).await;
    run(
        "concurrent_senders_are_all_delivered_exactly_once",
        concurrent_senders_are_all_delivered_exactly_once(make),
    )
    .await;
}

const DOMAIN: &str = "resume";

/// The producer's request to the craftsman.
fn ask(payload: Value) -> OutgoingMessage {
    OutgoingMessage::new(
        "producer",
        "craftsman",
        MessageType::Request,
        DOMAIN,
        payload,
    )
}

fn note(from: &str, to: &str, payload: Value) -> OutgoingMessage {
    OutgoingMessage::new(from, to, MessageType::Notification, DOMAIN, payload)
}

/// The next message, or a failure if none comes within a second.
pub async fn next(stream: &mut MessageStream) -> AgentMessage {
    tokio::time::timeout(Duration::from_secs(1), stream.next())
        .await
        .expect("no message within a second")
        .expect("stream ended")
}

/// Asserts the stream yields nothing (and does not end) within 200 ms.
async fn assert_nothing_ready(stream: &mut MessageStream) {
    let got = tokio::time::timeout(Duration::from_millis(200), stream.next()).await;
    assert!(got.is_err(), "unexpected message or end of stream: {got:?}");
}

/// Asserts the stream ends (yields `None`) within a second.
async fn assert_ends(stream: &mut MessageStream) {
    let end = tokio::time::timeout(Duration::from_secs(1), stream.next())
        .await
        .expect("stream did not end within a second");
    assert!(end.is_none(), "expected the end of the stream, got {end:?}");
}

async fn delivers_in_order_and_returns_the_stamped_message(make: &dyn MakeBus) {
    let bus = make
        .bus(InMemoryBus::DEFAULT_LOG_CAP, InMemoryBus::DEFAULT_HELD_CAP)
        .await;
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

async fn domains_isolate_agents_with_the_same_name(make: &dyn MakeBus) {
    let bus = make
        .bus(InMemoryBus::DEFAULT_LOG_CAP, InMemoryBus::DEFAULT_HELD_CAP)
        .await;
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

async fn a_second_subscribe_is_refused(make: &dyn MakeBus) {
    let bus = make
        .bus(InMemoryBus::DEFAULT_LOG_CAP, InMemoryBus::DEFAULT_HELD_CAP)
        .await;
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

async fn invalid_messages_are_refused_and_not_logged(make: &dyn MakeBus) {
    let bus = make
        .bus(InMemoryBus::DEFAULT_LOG_CAP, InMemoryBus::DEFAULT_HELD_CAP)
        .await;
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

async fn messages_are_held_until_the_agent_subscribes(make: &dyn MakeBus) {
    let bus = make
        .bus(InMemoryBus::DEFAULT_LOG_CAP, InMemoryBus::DEFAULT_HELD_CAP)
        .await;
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

async fn past_the_held_cap_a_message_is_undeliverable_but_logged(make: &dyn MakeBus) {
    let bus = make.bus(500, 3).await;
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

async fn unsubscribe_ends_the_stream_and_later_messages_are_held(make: &dyn MakeBus) {
    let bus = make
        .bus(InMemoryBus::DEFAULT_LOG_CAP, InMemoryBus::DEFAULT_HELD_CAP)
        .await;
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

async fn a_dropped_stream_loses_nothing(make: &dyn MakeBus) {
    let bus = make
        .bus(InMemoryBus::DEFAULT_LOG_CAP, InMemoryBus::DEFAULT_HELD_CAP)
        .await;

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

async fn the_log_keeps_the_500_most_recent_messages(make: &dyn MakeBus) {
    let bus = make
        .bus(InMemoryBus::DEFAULT_LOG_CAP, InMemoryBus::DEFAULT_HELD_CAP)
        .await;
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

async fn reset_forgets_everything(make: &dyn MakeBus) {
    let bus = make
        .bus(InMemoryBus::DEFAULT_LOG_CAP, InMemoryBus::DEFAULT_HELD_CAP)
        .await;
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

async fn concurrent_senders_are_all_delivered_exactly_once(make: &dyn MakeBus) {
    const TASKS: usize = 16;
    const EACH: usize = 50;
    let bus = make.bus(10_000, 10_000).await;
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
