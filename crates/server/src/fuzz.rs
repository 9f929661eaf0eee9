//! Fuzzing (proptest) what the server reads from a request before any product sees it:
//! bodies as JSON, `Last-Event-ID`, the bearer header. No input panics; what is refused
//! is a typed error with its status. (The auth layer's and the chat front's readers are
//! fuzzed beside them: `auth/fuzz.rs`, `chat/fuzz.rs`.) The budget is `PROPTEST_CASES`.

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use proptest::collection::vec;
use proptest::prelude::*;

use crate::access::{json_body, json_size, last_event_id};
use crate::auth::tokens::bearer;

proptest! {
    #[test]
    fn bodies_are_json_or_400(bytes in vec(any::<u8>(), 0..512)) {
        match json_body(Ok(Bytes::from(bytes.clone())), 1024) {
            Ok(value) => prop_assert_eq!(json_size(&value) > 0, true),
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
