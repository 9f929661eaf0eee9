//! Minimal valid instances of JSON Schemas, for [`TestModel`](super::TestModel).

use serde_json::{Map, Number, Value};

/// Past this depth, optional branches (`null` in `anyOf`/`oneOf`/`type`) are preferred,
/// which ends most recursive schemas.
const SOFT_DEPTH: usize = 8;
/// Past this depth, `null` is returned whatever the schema says.
const HARD_DEPTH: usize = 32;

/// A small instance valid against `schema` (best effort: `pattern`, `not`, `uniqueItems`
/// and `multipleOf` are not considered).
///
/// It follows `const`, then `default`, then the first `enum` value; resolves `$ref`s
/// against `schema` itself (`#/$defs/..`, `#/definitions/..` or any JSON pointer); takes the
/// first non-null branch of `anyOf`/`oneOf` and merges the objects of `allOf`; for a `type`
/// array it takes the first non-null type. Objects get every listed property (not only the
/// required ones), arrays `minItems` items, strings `minLength` characters or a sample for
/// their `format` (date-time, date, time, email, uri, uuid, ...), numbers the smallest value
/// at or above zero their bounds allow. Recursive schemas are cut off by a depth limit.
///
/// ```
/// use agent_llm::testing::value_for_schema;
/// use serde_json::json;
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "city": { "type": "string" },
///         "days": { "type": "integer", "minimum": 1, "maximum": 7 },
///         "unit": { "enum": ["celsius", "fahrenheit"] },
///         "at": { "type": ["string", "null"], "format": "date-time" }
///     },
///     "required": ["city"]
/// });
/// assert_eq!(
///     value_for_schema(&schema),
///     json!({"city": "a", "days": 1, "unit": "celsius", "at": "2024-01-01T00:00:00Z"})
/// );
/// ```
pub fn value_for_schema(schema: &Value) -> Value {
    generate(schema, schema, 0)
}

fn generate(schema: &Value, root: &Value, depth: usize) -> Value {
    if depth > HARD_DEPTH {
        return Value::Null;
    }
    let Value::Object(map) = schema else {
        // `true`, `false` or a malformed schema: `null` is as good as anything.
        return Value::Null;
    };
    if let Some(value) = map.get("const") {
        return value.clone();
    }
    if let Some(value) = map.get("default") {
        return value.clone();
    }
    if let Some(first) = map
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|v| v.first())
    {
        return first.clone();
    }
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        return match resolve(root, reference) {
            Some(target) => generate(target, root, depth + 1),
            None => {
                tracing::warn!(reference, "value_for_schema: unresolvable $ref");
                Value::Null
            }
        };
    }

    // Combinators first: they are more specific than a bare `type` beside them.
    let mut parts = Vec::new();
    if let Some(Value::Array(all)) = map.get("allOf") {
        parts.extend(all.iter().map(|sub| generate(sub, root, depth + 1)));
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(keyword) {
            parts.push(pick_branch(branches, root, depth));
        }
    }
    if has_own_shape(map) {
        parts.push(from_type(map, root, depth));
    }
    merge(parts)
}

/// Whether the schema says something itself, beside its combinators.
fn has_own_shape(map: &Map<String, Value>) -> bool {
    let combinators = ["allOf", "anyOf", "oneOf"];
    let shaped = [
        "type",
        "properties",
        "items",
        "prefixItems",
        "format",
        "minimum",
        "minLength",
    ];
    shaped.iter().any(|key| map.contains_key(*key))
        || !combinators.iter().any(|key| map.contains_key(*key))
}

fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema.get("const").is_some_and(Value::is_null)
}

fn pick_branch(branches: &[Value], root: &Value, depth: usize) -> Value {
    let preferred = if depth >= SOFT_DEPTH {
        branches.iter().find(|branch| is_null_schema(branch))
    } else {
        branches.iter().find(|branch| !is_null_schema(branch))
    };
    match preferred.or_else(|| branches.first()) {
        Some(branch) => generate(branch, root, depth + 1),
        None => Value::Null,
    }
}

/// Merges the objects generated for the parts of a schema (earlier parts win a clash); the
/// first non-object, non-null part wins alone.
fn merge(parts: Vec<Value>) -> Value {
    let mut merged: Option<Map<String, Value>> = None;
    for part in parts {
        match part {
            Value::Object(fields) => {
                let target = merged.get_or_insert_with(Map::new);
                for (key, value) in fields {
                    target.entry(key).or_insert(value);
                }
            }
            Value::Null => {}
            other => return other,
        }
    }
    merged.map(Value::Object).unwrap_or(Value::Null)
}

fn chosen_type(map: &Map<String, Value>, depth: usize) -> Option<&str> {
    match map.get("type") {
        Some(Value::String(name)) => Some(name.as_str()),
        Some(Value::Array(names)) => {
            let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            if depth >= SOFT_DEPTH && names.contains(&"null") {
                return Some("null");
            }
            names
                .iter()
                .copied()
                .find(|name| *name != "null")
                .or(names.first().copied())
        }
        _ if map.contains_key("properties") => Some("object"),
        _ if map.contains_key("items") || map.contains_key("prefixItems") => Some("array"),
        _ if map.contains_key("format") || map.contains_key("minLength") => Some("string"),
        _ if map.contains_key("minimum") || map.contains_key("exclusiveMinimum") => Some("number"),
        _ => None,
    }
}

fn from_type(map: &Map<String, Value>, root: &Value, depth: usize) -> Value {
    match chosen_type(map, depth) {
        Some("string") => Value::String(string_value(map)),
        Some("integer") => integer_value(map),
        Some("number") => number_value(map),
        Some("boolean") => Value::Bool(false),
        Some("array") => array_value(map, root, depth),
        Some("object") => object_value(map, root, depth),
        _ => Value::Null,
    }
}

fn string_value(map: &Map<String, Value>) -> String {
    let sample = match map.get("format").and_then(Value::as_str) {
        Some("date-time") => Some("2024-01-01T00:00:00Z"),
        Some("date") => Some("2024-01-01"),
        Some("time") => Some("00:00:00Z"),
        Some("duration") => Some("PT1S"),
        Some("email" | "idn-email") => Some("user@example.com"),
        Some("uri" | "url" | "iri" | "uri-reference" | "iri-reference") => {
            Some("https://example.com/")
        }
        Some("uuid") => Some("00000000-0000-0000-0000-000000000000"),
        Some("hostname" | "idn-hostname") => Some("example.com"),
        Some("ipv4") => Some("127.0.0.1"),
        Some("ipv6") => Some("::1"),
        _ => None,
    };
    if let Some(sample) = sample {
        return sample.to_owned();
    }
    let min = map
        .get("minLength")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(10_000) as usize;
    let max = map
        .get("maxLength")
        .and_then(Value::as_u64)
        .map(|max| max as usize);
    let len = max.map_or(min.max(1), |max| min.max(1).min(max).max(min));
    "a".repeat(len)
}

/// The lowest bound (inclusive) and the highest bound (inclusive) as floats.
fn bounds(map: &Map<String, Value>) -> (Option<f64>, Option<f64>, bool, bool) {
    let get = |key: &str| map.get(key).and_then(Value::as_f64);
    let (low, low_exclusive) = match (get("minimum"), get("exclusiveMinimum")) {
        (Some(min), Some(ex)) if ex >= min => (Some(ex), true),
        (Some(min), _) => (Some(min), false),
        (None, Some(ex)) => (Some(ex), true),
        (None, None) => (None, false),
    };
    let (high, high_exclusive) = match (get("maximum"), get("exclusiveMaximum")) {
        (Some(max), Some(ex)) if ex <= max => (Some(ex), true),
        (Some(max), _) => (Some(max), false),
        (None, Some(ex)) => (Some(ex), true),
        (None, None) => (None, false),
    };
    (low, high, low_exclusive, high_exclusive)
}

fn integer_value(map: &Map<String, Value>) -> Value {
    let (low, high, low_ex, high_ex) = bounds(map);
    let mut value = 0.0_f64;
    if let Some(low) = low {
        let floor = if low_ex {
            low.floor() + 1.0
        } else {
            low.ceil()
        };
        value = value.max(floor);
    }
    if let Some(high) = high {
        let ceiling = if high_ex {
            high.ceil() - 1.0
        } else {
            high.floor()
        };
        value = value.min(ceiling);
    }
    if value >= 0.0 {
        Value::Number(Number::from(value as u64))
    } else {
        Value::Number(Number::from(value as i64))
    }
}

fn number_value(map: &Map<String, Value>) -> Value {
    let (low, high, low_ex, high_ex) = bounds(map);
    let mut value = 0.0_f64;
    if let Some(low) = low {
        if low_ex && value <= low {
            value = match high {
                Some(high) if high - low <= 1.0 => (low + high) / 2.0,
                _ => low + 1.0,
            };
        } else {
            value = value.max(low);
        }
    }
    if let Some(high) = high
        && (value > high || (high_ex && value >= high))
    {
        value = match low {
            Some(low) => (low + high) / 2.0,
            None if high_ex => high - 1.0,
            None => high,
        };
    }
    Number::from_f64(value).map_or(Value::Null, Value::Number)
}

fn array_value(map: &Map<String, Value>, root: &Value, depth: usize) -> Value {
    let prefix = map.get("prefixItems").and_then(Value::as_array);
    let min = map
        .get("minItems")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(1_000) as usize;
    let len = min.max(prefix.map_or(0, Vec::len));
    let items = map.get("items");
    let values = (0..len)
        .map(
            |index| match prefix.and_then(|prefix| prefix.get(index)).or(items) {
                Some(schema) => generate(schema, root, depth + 1),
                None => Value::Null,
            },
        )
        .collect();
    Value::Array(values)
}

fn object_value(map: &Map<String, Value>, root: &Value, depth: usize) -> Value {
    let mut object = Map::new();
    if let Some(Value::Object(properties)) = map.get("properties") {
        for (name, schema) in properties {
            object.insert(name.clone(), generate(schema, root, depth + 1));
        }
    }
    // Required names the properties do not describe still need a value.
    if let Some(Value::Array(required)) = map.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !object.contains_key(name) {
                let schema = map
                    .get("additionalProperties")
                    .unwrap_or(&Value::Bool(true));
                object.insert(name.to_owned(), generate(schema, root, depth + 1));
            }
        }
    }
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    #![allow(dead_code)]
    use super::*;
    use crate::structured::schema_of;
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde::de::DeserializeOwned;
    use serde_json::json;
    use std::collections::HashMap;

    /// Generates a value for `T`'s schema and checks serde accepts it as a `T`.
    fn round_trip<T: JsonSchema + DeserializeOwned>() -> Value {
        let schema = schema_of::<T>();
        let value = value_for_schema(&schema);
        if let Err(error) = serde_json::from_value::<T>(value.clone()) {
            let schema = serde_json::to_string_pretty(&schema).unwrap();
            panic!("{value} does not deserialize: {error}\nschema: {schema}");
        }
        value
    }

    #[derive(Deserialize, JsonSchema)]
    struct Address {
        street: String,
        zip: Option<String>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Unit {
        Celsius,
        Fahrenheit,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    enum Shape {
        Circle { radius: f64 },
        Square { side: u32 },
    }

    #[derive(Deserialize, JsonSchema)]
    enum Event {
        Started(String),
        Moved { x: i32, y: i32 },
        Stopped,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "t", content = "c")]
    enum Adjacent {
        One(u8),
        Two(Address),
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(untagged)]
    enum Untagged {
        Number(i64),
        Text(String),
    }

    #[derive(Deserialize, JsonSchema)]
    struct Everything {
        name: String,
        age: u8,
        #[schemars(range(min = 3, max = 7))]
        level: u8,
        score: f64,
        negative: i16,
        flag: bool,
        letter: char,
        home: Address,
        other_homes: Vec<Address>,
        #[schemars(length(min = 2))]
        tags: Vec<String>,
        unit: Unit,
        maybe_unit: Option<Unit>,
        shape: Shape,
        event: Event,
        adjacent: Adjacent,
        untagged: Untagged,
        labels: HashMap<String, u32>,
        pair: (u8, String),
        #[serde(default)]
        count: u64,
        #[schemars(email)]
        email: String,
        #[schemars(url)]
        site: String,
        #[schemars(length(min = 5, max = 8))]
        code: String,
        anything: Value,
    }

    #[derive(Deserialize, JsonSchema)]
    struct Tree {
        label: String,
        children: Vec<Tree>,
        parent: Option<Box<Tree>>,
    }

    #[derive(Deserialize, JsonSchema)]
    struct Chain {
        value: u8,
        next: Option<Box<Chain>>,
    }

    #[test]
    fn rich_struct_round_trips() {
        let value = round_trip::<Everything>();
        assert_eq!(value["level"], json!(3));
        assert_eq!(value["tags"].as_array().unwrap().len(), 2);
        assert_eq!(value["unit"], json!("celsius"));
        assert_eq!(value["shape"]["kind"], json!("circle"));
        assert_eq!(value["email"], json!("user@example.com"));
        assert_eq!(value["code"], json!("aaaaa"));
        assert_eq!(value["home"]["street"], json!("a"));
        assert_eq!(value["maybe_unit"], json!("celsius"));
    }

    #[test]
    fn enums_and_options_round_trip() {
        round_trip::<Unit>();
        round_trip::<Shape>();
        round_trip::<Event>();
        round_trip::<Adjacent>();
        round_trip::<Untagged>();
        round_trip::<Option<Address>>();
        round_trip::<Vec<Shape>>();
    }

    #[test]
    fn recursive_schemas_terminate() {
        let tree = round_trip::<Tree>();
        assert_eq!(tree["children"], json!([]));
        let chain = round_trip::<Chain>();
        let mut depth = 0;
        let mut link = &chain;
        while !link["next"].is_null() {
            link = &link["next"];
            depth += 1;
        }
        assert!(depth <= SOFT_DEPTH, "chain depth {depth}");
    }

    #[test]
    fn numeric_bounds_are_respected() {
        let int = |schema: Value| value_for_schema(&schema);
        assert_eq!(
            int(json!({"type": "integer", "minimum": 5, "maximum": 9})),
            json!(5)
        );
        assert_eq!(int(json!({"type": "integer", "maximum": -3})), json!(-3));
        assert_eq!(
            int(json!({"type": "integer", "exclusiveMinimum": 2})),
            json!(3)
        );
        assert_eq!(
            int(json!({"type": "integer", "exclusiveMaximum": 0})),
            json!(-1)
        );
        assert_eq!(
            int(json!({"type": "number", "exclusiveMinimum": 0.5})),
            json!(1.5)
        );
        assert_eq!(
            int(json!({"type": "number", "exclusiveMinimum": 0, "maximum": 0.5})),
            json!(0.25)
        );
        assert_eq!(int(json!({"type": "number", "minimum": -2.5})), json!(0.0));
    }

    #[test]
    fn keywords_without_rust_types() {
        let schema = json!({
            "$defs": { "Id": { "type": "string", "format": "uuid" } },
            "definitions": { "Old": { "const": 7 } },
            "type": "object",
            "properties": {
                "id": { "$ref": "#/$defs/Id" },
                "old": { "$ref": "#/definitions/Old" },
                "kind": { "type": ["null", "string"], "enum": ["x", "y"] },
                "when": { "type": "string", "format": "date" },
                "both": { "allOf": [
                    { "type": "object", "properties": { "a": { "type": "boolean" } } },
                    { "type": "object", "properties": { "b": { "type": "null" } } }
                ] },
                "one": { "oneOf": [ { "type": "null" }, { "type": "integer", "minimum": 1 } ] },
                "list": { "type": "array", "items": { "type": "integer" }, "minItems": 2 },
                "given": { "type": "string", "default": "preset" },
                "extra": { "type": "object", "required": ["k"], "additionalProperties": { "type": "string" } }
            }
        });
        assert_eq!(
            value_for_schema(&schema),
            json!({
                "id": "00000000-0000-0000-0000-000000000000",
                "old": 7,
                "kind": "x",
                "when": "2024-01-01",
                "both": { "a": false, "b": null },
                "one": 1,
                "list": [0, 0],
                "given": "preset",
                "extra": { "k": "a" }
            })
        );
        assert_eq!(
            value_for_schema(&json!({"$ref": "#/$defs/Missing"})),
            Value::Null
        );
        assert_eq!(value_for_schema(&json!(true)), Value::Null);
    }
}
