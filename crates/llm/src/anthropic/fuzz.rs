//! Fuzzing what reads Anthropic's Messages API: stream events (any name and text, events
//! of any shape, the recorded tool-use stream of the official SDK cut and edited) and
//! whole response bodies. No input panics; what is not an event is a typed error.

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::json;

use super::stream::AnthropicStreamDecoder;
use super::wire::response_from_wire;
use crate::fuzz_support::{any_json, edited};

const EVENTS: [&str; 8] = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
];

/// An event of any of the API's names, its payload of that type with any fields.
fn event() -> impl Strategy<Value = (String, String)> {
    (
        0..EVENTS.len(),
        0..4usize,
        any_json(),
        any_json(),
        any_json(),
    )
        .prop_map(|(name, index, delta, block, usage)| {
            let name = EVENTS[name];
            let data = json!({
                "type": name, "index": index, "delta": delta, "content_block": block,
                "message": {"usage": usage.clone()}, "usage": usage,
            });
            (name.to_owned(), data.to_string())
        })
}

/// The recorded stream: (event, data) pairs of its SSE text.
fn pairs(stream: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut name = String::new();
    for line in stream.lines() {
        if let Some(event) = line.strip_prefix("event:") {
            name = event.trim().to_owned();
        } else if let Some(data) = line.strip_prefix("data:") {
            pairs.push((name.clone(), data.trim().to_owned()));
        }
    }
    pairs
}

fn recorded() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/realdata/anthropic/sdk-python/tests/lib/streaming/fixtures/tool_use_response.txt"
    );
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e} (the recorded stream is read in place)"))
}

fn decode_all(events: &[(String, String)]) {
    let mut decoder = AnthropicStreamDecoder::default();
    for (name, data) in events {
        let _ = decoder.decode(name, data);
    }
}

proptest! {
    #[test]
    fn any_events(events in vec((any::<String>(), any::<String>()), 0..12)) {
        decode_all(&events);
    }

    #[test]
    fn events_of_any_shape(events in vec(event(), 0..12)) {
        decode_all(&events);
    }

    #[test]
    fn the_recorded_stream_cut_and_edited(stream in edited(recorded())) {
        decode_all(&pairs(&stream));
    }

    #[test]
    fn whole_bodies_of_any_shape(body in any_json(), content in any_json()) {
        let _ = response_from_wire(body);
        let _ = response_from_wire(json!({"type": "message", "content": content, "stop_reason": "end_turn"}));
    }
}

#[test]
fn the_recorded_stream_decodes_whole() {
    let events = pairs(&recorded());
    assert!(events.len() > 5);
    let mut decoder = AnthropicStreamDecoder::default();
    for (name, data) in &events {
        decoder.decode(name, data).unwrap();
    }
}
