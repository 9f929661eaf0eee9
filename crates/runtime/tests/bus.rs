//! The in-memory bus: the behaviour suite every bus passes
//! (`agent_runtime::bus::suite`), a timeout in paused time, and the wire format.
#![cfg(test)]

use agent_runtime::bus::suite::next;
use agent_runtime::bus::{
    AgentBus, AgentMessage, BusError, InMemoryBus, MessageType, OutgoingMessage,
};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_memory_bus_passes_the_bus_suite() {
    agent_runtime::bus::suite::behaves(&|log_cap, held_cap| async move {
        Arc::new(InMemoryBus::with_limits(log_cap, held_cap)) as Arc<dyn AgentBus>
    })
    .await;
}

const DOMAIN: &str = "resume";

#[tokio::test(start_paused = true)]
async fn a_request_times_out_in_paused_time() {
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
    // The wait runs on tokio's clock (what happens to a late response is in the suite).
    assert_eq!(
        err,
        BusError::Timeout {
            id: request.id,
            after: Duration::from_secs(30)
        }
    );
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
