//! The suite's request and response cases: a round trip, a timeout, an undeliverable
//! request, a response nobody waits for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

pub(super) async fn request_and_response_round_trip(make: &dyn MakeBus) {
    let bus = make
        .bus(InMemoryBus::DEFAULT_LOG_CAP, InMemoryBus::DEFAULT_HELD_CAP)
        .await;

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
        .request(ask(json!({"section": "summary"})), Duration::from_secs(5))
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

pub(super) async fn a_request_without_response_times_out(make: &dyn MakeBus) {
    let bus = make
        .bus(InMemoryBus::DEFAULT_LOG_CAP, InMemoryBus::DEFAULT_HELD_CAP)
        .await;
    let mut inbox = bus.subscribe(DOMAIN, "craftsman").await.unwrap();

    let err = bus
        .request(ask(json!({})), Duration::from_millis(300))
        .await
        .err()
        .unwrap();
    let request = next(&mut inbox).await;
    assert_eq!(
        err,
        BusError::Timeout {
            id: request.id.clone(),
            after: Duration::from_millis(300)
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

pub(super) async fn an_undeliverable_request_fails_at_once(make: &dyn MakeBus) {
    let bus = make.bus(500, 0).await;
    let err = bus
        .request(ask(json!({})), Duration::from_secs(3600))
        .await
        .err()
        .unwrap();
    assert!(matches!(err, BusError::Undeliverable { .. }), "{err:?}");
}

pub(super) async fn a_response_with_an_unknown_correlation_goes_to_the_subscriber(
    make: &dyn MakeBus,
) {
    let bus = make
        .bus(InMemoryBus::DEFAULT_LOG_CAP, InMemoryBus::DEFAULT_HELD_CAP)
        .await;
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
