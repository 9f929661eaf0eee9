//! Fuzzing (proptest) what the server reads from a request before any product sees it:
//! bodies as JSON, `Last-Event-ID`, the bearer header, start bodies and gate answers read
//! as the product's types. No input panics; what is refused is a typed error with its
//! status, or names the field that does not fit. (The auth layer's and the chat front's readers are
//! fuzzed beside them: `auth/fuzz.rs`, `chat/fuzz.rs`.) The budget is `PROPTEST_CASES`.

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use proptest::collection::vec;
use proptest::prelude::*;

use agent_runtime::{Gate, json_len, read_as};
use serde::Deserialize;
use serde_json::Value;

use crate::access::{json_body, last_event_id};
use crate::auth::tokens::bearer;

proptest! {
    #[test]
    fn bodies_are_json_or_400(bytes in vec(any::<u8>(), 0..512)) {
        match json_body(Ok(Bytes::from(bytes.clone())), 1024) {
            Ok(value) => prop_assert_eq!(json_len(&value) > 0, true),
            Err(error) => prop_assert_eq!(error.status(), StatusCode::BAD_REQUEST),
        }
    }

    #[test]
    fn last_event_ids_are_numbers_or_400(text in any::<String>()) {
        match last_event_id(Some(&text)) {
            Ok(0) if text.trim().is_empty() => {}
            Ok(n) => prop_assert_eq!(text.trim().parse::<u64>().ok(), Some(n)),
            Err(error) => prop_assert_eq!(error.status(), StatusCode::BAD_REQUEST),
        }
    }

    #[test]
    fn bearer_headers_of_any_bytes(bytes in vec(any::<u8>(), 0..128)) {
        let mut headers = HeaderMap::new();
        if let Ok(value) = HeaderValue::from_bytes(&bytes) {
            headers.insert(header::AUTHORIZATION, value);
        }
        if let Some(token) = bearer(&headers) {
            prop_assert!(!token.is_empty());
        }
    }
}

/// A start request of the shapes products use: text, nested flags with defaults, a list
/// of tagged answers, an optional enum.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Start {
    text: String,
    #[serde(default)]
    flags: Flags,
    answers: Vec<Answer>,
    tone: Option<Tone>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Flags {
    quiz: bool,
    limit: Option<u32>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(dead_code)]
enum Answer {
    Yes,
    Text { text: String },
    Pick { index: u8 },
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Tone {
    Formal,
    Warm,
}

const PICK: Gate<Value, Answer> = Gate::new("pick");

/// Any JSON value, its keys often the fields the types above read.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u64..300).prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON numbers are finite", |f| f.is_finite())
            .prop_map(Value::from),
        prop_oneof![
            Just("formal".to_owned()),
            Just("yes".to_owned()),
            Just("pick".to_owned()),
            ".{0,12}"
        ]
        .prop_map(Value::from),
    ];
    let key = prop_oneof![
        proptest::sample::select(vec![
            "text", "flags", "quiz", "limit", "answers", "kind", "index", "tone",
        ])
        .prop_map(str::to_owned),
        "[a-z_]{0,8}",
    ]
    .boxed();
    leaf.prop_recursive(6, 96, 6, move |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn start_bodies_are_read_as_their_type_or_name_the_field(body in json_value()) {
        let read = read_as::<Start>(&body);
        prop_assert_eq!(read.is_ok(), serde_json::from_value::<Start>(body.clone()).is_ok());
        if let Err(error) = read {
            prop_assert!(!error.path.is_empty() && !error.message.is_empty(), "{error:?}");
        }
    }

    #[test]
    fn gate_answers_are_checked_as_their_type(answer in json_value()) {
        let checked = PICK.spec().check(&answer);
        prop_assert_eq!(checked.is_ok(), serde_json::from_value::<Answer>(answer.clone()).is_ok());
        if let Err(error) = checked {
            prop_assert!(!error.message.is_empty(), "{error:?}");
        }
    }
}
