//! Fuzzing what reads a model's text: JSON found in prose, tool-call arguments. No input
//! panics; what is found is what the text holds. (The providers' stream and body parsers
//! are fuzzed beside them: `openai/fuzz.rs`, `anthropic/fuzz.rs`.)

use proptest::prelude::*;
use serde_json::Value;

use crate::fuzz_support::{any_json, edited};
use crate::stream::parse_tool_arguments;
use crate::structured::find_json;

proptest! {
    #[test]
    fn find_json_takes_any_text(text in any::<String>()) {
        let _ = find_json(&text);
    }

    #[test]
    fn find_json_finds_a_value_set_in_prose(
        before in prose(),
        value in any_json(),
        after in prose(),
    ) {
        // An object or array in prose is found as it was written.
        let value = match value {
            Value::Object(_) | Value::Array(_) => value,
            other => serde_json::json!({"value": other}),
        };
        let text = format!("{before}{value}{after}");
        prop_assert_eq!(find_json(&text), Some(value));
    }

    #[test]
    fn find_json_takes_cut_and_edited_answers(
        text in edited("Sure:\n```json\n{\"answer\": [1, {\"b\": \"x\"}], \"n\": 2.5}\n```\nDone.".to_owned())
    ) {
        let _ = find_json(&text);
    }

    #[test]
    fn tool_arguments_are_an_object_or_the_text_kept(raw in any::<String>()) {
        let parsed = parse_tool_arguments(&raw);
        if raw.trim().is_empty() {
            prop_assert_eq!(parsed, Value::Object(Default::default()));
        } else if serde_json::from_str::<Value>(&raw).is_err() {
            prop_assert_eq!(parsed, Value::String(raw.clone()));
        }
    }
}

/// Up to 40 characters of prose: anything but brackets, braces and backticks.
fn prose() -> impl Strategy<Value = String> {
    proptest::collection::vec(any::<char>(), 0..40).prop_map(|chars| {
        chars
            .into_iter()
            .filter(|c| !"{}[]`".contains(*c))
            .collect()
    })
}

/// Deep nesting is refused by depth, not by the stack.
#[test]
fn find_json_survives_deep_nesting() {
    for open in ["[", "{\"a\":"] {
        let text = format!("here: {}", open.repeat(100_000));
        assert!(find_json(&text).is_none());
    }
}
