//! JSON Schemas from Rust types, and the strict form OpenAI requires.

use schemars::JsonSchema;
use serde_json::{Map, Value};

/// The JSON Schema of `T` (draft 2020-12, without the `$schema` key), as sent to providers.
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Answer { answer: String, confidence: f64 }
/// let schema = agent_llm::structured::schema_of::<Answer>();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["title"], "Answer");
/// ```
pub fn schema_of<T: JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
    }
    schema
}

/// A name for a schema that providers accept (`[a-zA-Z0-9_-]{1,64}`), from its title.
pub fn schema_name(schema: &Value, fallback: &str) -> String {
    let title = schema
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or(fallback);
    let cleaned: String = title
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if cleaned.is_empty() {
        fallback.to_owned()
    } else {
        cleaned
    }
}

/// String formats OpenAI's strict mode accepts; others are dropped.
const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Rewrites a schema into the subset OpenAI's strict structured outputs accept: every
/// object lists all its properties as required and forbids others (optional fields are
/// already nullable in schemars' output), and unsupported `format`s are removed.
///
/// ```
/// let schema = serde_json::json!({
///     "type": "object",
///     "properties": { "a": { "type": "string" }, "b": { "type": ["integer", "null"], "format": "int32" } },
///     "required": ["a"]
/// });
/// let strict = agent_llm::structured::strict_schema(schema);
/// assert_eq!(strict["required"], serde_json::json!(["a", "b"]));
/// assert_eq!(strict["additionalProperties"], false);
/// assert!(strict["properties"]["b"].get("format").is_none());
/// ```
pub fn strict_schema(mut schema: Value) -> Value {
    make_strict(&mut schema);
    schema
}

/// Applies [`strict_object`] to a schema and every subschema, following the keywords
/// that hold subschemas (so a property named `properties` is not mistaken for one).
fn make_strict(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    strict_object(map);
    for keyword in ["properties", "$defs", "definitions"] {
        if let Some(Value::Object(children)) = map.get_mut(keyword) {
            children.values_mut().for_each(make_strict);
        }
    }
    for keyword in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(children)) = map.get_mut(keyword) {
            children.iter_mut().for_each(make_strict);
        }
    }
    for keyword in ["items", "additionalProperties", "not"] {
        if let Some(child @ Value::Object(_)) = map.get_mut(keyword) {
            make_strict(child);
        }
    }
}

fn strict_object(map: &mut Map<String, Value>) {
    if map
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| !STRICT_FORMATS.contains(&f))
    {
        map.remove("format");
    }
    let Some(Value::Object(properties)) = map.get("properties") else {
        return;
    };
    let names: Vec<Value> = properties.keys().cloned().map(Value::String).collect();
    map.insert("required".into(), Value::Array(names));
    map.insert("additionalProperties".into(), Value::Bool(false));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        note: Option<String>,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    /// An answer.
    struct Outer {
        count: u32,
        inner: Inner,
        tags: Vec<String>,
    }

    #[test]
    fn nested_objects_and_defs_become_strict() {
        let strict = strict_schema(schema_of::<Outer>());
        assert_eq!(strict["additionalProperties"], json!(false));
        assert_eq!(strict["required"], json!(["count", "inner", "tags"]));
        assert!(strict["properties"]["count"].get("format").is_none());
        let inner = &strict["$defs"]["Inner"];
        assert_eq!(inner["required"], json!(["note"]));
        assert_eq!(inner["additionalProperties"], json!(false));
        assert!(strict.get("$schema").is_none());
    }

    #[test]
    fn schema_names_are_sanitized() {
        assert_eq!(
            schema_name(&json!({"title": "Answer<T>"}), "x"),
            "Answer_T_"
        );
        assert_eq!(schema_name(&json!({}), "fallback"), "fallback");
    }
}
