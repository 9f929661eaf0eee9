//! Fuzzing the chat front's reading of a request body: any JSON, and OpenAI-shaped
//! requests with any values where the fields go (roles, content parts, files, options).
//! No input panics; what is refused is a 400 naming its parameter.

use axum::http::StatusCode;
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::wire::read_request;

/// A value of any JSON kind, shallow: what a client may put where a field goes.
fn field() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<String>().prop_map(Value::String),
        vec(any::<String>(), 0..3).prop_map(|v| json!(v)),
        any::<String>().prop_map(|s| json!({"type": "text", "text": s})),
        any::<String>().prop_map(|s| json!([{"type": "file", "file": {"filename": "cv.pdf", "file_data": s}}])),
        any::<String>().prop_map(|s| json!([{"type": "file", "file": {"file_data": format!("data:application/pdf;base64,{s}")}}])),
    ]
}

fn message() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec![
            "user",
            "assistant",
            "system",
            "developer",
            "tool",
            "x",
        ]),
        field(),
    )
        .prop_map(|(role, content)| json!({"role": role, "content": content}))
}

proptest! {
    #[test]
    fn requests_of_the_official_shape(
        model in field(),
        messages in vec(message(), 0..6),
        stream in field(),
        options in field(),
        user in field(),
    ) {
        let body = json!({
            "model": model, "messages": messages, "stream": stream,
            "stream_options": options, "user": user,
        });
        if let Err(error) = read_request(&body, 1024) {
            prop_assert_eq!(error.status(), StatusCode::BAD_REQUEST);
        }
    }

    #[test]
    fn any_body(body in field()) {
        if let Err(error) = read_request(&body, 1024) {
            prop_assert_eq!(error.status(), StatusCode::BAD_REQUEST);
        }
    }
}
