//! Strategies the parser fuzz suites share (proptest): arbitrary JSON, and recorded inputs
//! cut and edited at random places. The budget is `PROPTEST_CASES` (256 by default, what
//! CI runs; `PROPTEST_CASES=20000 cargo test fuzz` is the longer run). A failing case is
//! shrunk and printed; it is then kept as a regression test beside the suite.

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// Any JSON value, nested up to four levels, with strings of any characters.
pub(crate) fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        // Quarters read back exactly (serde_json's float parsing is not exact for all).
        any::<i32>()
            .prop_map(|n| Number::from_f64(f64::from(n) / 4.0).map_or(Value::Null, Value::Number)),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..8).prop_map(Value::Array),
            btree_map(any::<String>(), inner, 0..8)
                .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// `seed` cut at a random place, with random text put in at another: what a stream cut
/// mid-answer, or a proxy that mangles a body, hands a parser.
pub(crate) fn edited(seed: String) -> impl Strategy<Value = String> {
    let len = seed.len();
    (0..=len, 0..=len, any::<String>()).prop_map(move |(cut, at, insert)| {
        let mut text: String = seed
            .char_indices()
            .take_while(|(i, _)| *i < cut)
            .map(|(_, c)| c)
            .collect();
        let at = text
            .char_indices()
            .map(|(i, _)| i)
            .find(|i| *i >= at.min(text.len()))
            .unwrap_or(text.len());
        text.insert_str(at, &insert);
        text
    })
}
