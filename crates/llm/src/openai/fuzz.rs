//! Fuzzing what reads an OpenAI-compatible server: stream chunks (any text, chunks of any
//! shape, the official streaming example cut and edited) and whole response bodies. No
//! input panics; a payload that is not a chunk is a typed error.

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::json;

use super::stream::ChunkDecoder;
use super::wire::parse_chat_response;
use crate::fuzz_support::{any_json, edited};

/// A chunk's shape with any values where the fields go.
fn chunk() -> impl Strategy<Value = String> {
    (any_json(), any_json(), any_json(), any_json()).prop_map(|(delta, tools, finish, usage)| {
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": delta, "tool_calls": tools}, "finish_reason": finish}],
            "usage": usage,
        })
        .to_string()
    })
}

/// The data lines of the official streaming example.
const EXAMPLE: &str = r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}
{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"loc"}}]},"finish_reason":null}]}
{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ation\": \"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}}
[DONE]"#;

fn decode_all(payloads: &[String]) {
    let mut decoder = ChunkDecoder::default();
    for payload in payloads {
        // Errors are typed; the decoder takes the next payload all the same.
        let _ = decoder.push(payload);
    }
    let _ = decoder.finish();
}

proptest! {
    #[test]
    fn any_payloads(payloads in vec(any::<String>(), 0..12)) {
        decode_all(&payloads);
    }

    #[test]
    fn chunks_of_any_shape(payloads in vec(chunk(), 0..12)) {
        decode_all(&payloads);
    }

    #[test]
    fn the_official_stream_cut_and_edited(stream in edited(EXAMPLE.to_owned())) {
        let payloads: Vec<String> = stream.lines().map(str::to_owned).collect();
        decode_all(&payloads);
    }

    #[test]
    fn whole_bodies_of_any_shape(body in any_json(), message in any_json()) {
        let _ = parse_chat_response(body);
        let _ = parse_chat_response(json!({"choices": [{"message": message, "finish_reason": "stop"}]}));
    }
}

#[test]
fn a_payload_that_is_not_a_chunk_is_an_error() {
    let mut decoder = ChunkDecoder::default();
    assert!(decoder.push("{not json").is_err());
}
