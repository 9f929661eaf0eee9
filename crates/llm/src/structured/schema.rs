//! JSON Schemas from Rust types, and the strict form OpenAI requires.

use schemars::JsonSchema;
use serde_json::{Map, Value};

/// The JSON Schema of `T` (draft 2020-12) as sent to providers: compact, every token of
/// it paid for on every call ([`compact_schema`]).
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Answer { answer: String, confidence: f64, votes: u32 }
/// let schema = agent_llm::structured::schema_of::<Answer>();
/// assert_eq!(schema["type"], "object");
/// assert!(schema.get("title").is_none() && schema.get("$schema").is_none());
/// assert_eq!(schema["properties"]["votes"], serde_json::json!({"type": "integer", "minimum": 0}));
/// ```
pub fn schema_of<T: JsonSchema>() -> Value {
    compact_schema(schemars::schema_for!(T).to_value())
}

/// The name of `T`'s schema as providers accept it ([`schema_name`] of its title).
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct JobScore { score: u8 }
/// assert_eq!(agent_llm::structured::schema_name_of::<JobScore>(), "JobScore");
/// ```
pub fn schema_name_of<T: JsonSchema>() -> String {
    schema_name(&schemars::schema_for!(T).to_value(), "structured_output")
}

/// Integer formats schemars writes (`uint8`, `int64`, ...), which no provider reads:
/// `minimum` already says an integer is unsigned.
const NUMBER_FORMATS: &[&str] = &[
    "int", "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32",
    "uint64", "uint128", "float", "double",
];

/// Drops what a model does not need from a schema: `$schema`, titles (a tool or format
/// has its own name), the type's own description (the Rust documentation of the answer
/// type; the tool or format is described where it is offered), the type-level
/// descriptions of `$defs` (each use of a definition carries its own), `default`s
/// (`required` already says what may be left out) and number formats; a `oneOf` of
/// string constants becomes an `enum`, the constants' descriptions kept in one line; a
/// definition used once is written where it is used. Property descriptions, types,
/// enums and constraints stay.
///
/// ```
/// let schema = serde_json::json!({"oneOf": [
///     {"const": "remote", "description": "Fully remote.", "type": "string"},
///     {"const": "onsite", "type": "string"}
/// ]});
/// assert_eq!(
///     agent_llm::structured::compact_schema(schema),
///     serde_json::json!({"type": "string", "enum": ["remote", "onsite"], "description": "remote: Fully remote."})
/// );
/// ```
pub fn compact_schema(mut schema: Value) -> Value {
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("description");
        if let Some(Value::Object(defs)) = map.get_mut("$defs") {
            for def in defs.values_mut().filter_map(Value::as_object_mut) {
                def.remove("description");
            }
        }
    }
    for_each_schema(&mut schema, &mut |map| {
        map.remove("title");
        map.remove("default");
        if map
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(|f| NUMBER_FORMATS.contains(&f))
        {
            map.remove("format");
        }
        string_constants_as_enum(map);
    });
    inline_single_use_definitions(&mut schema);
    schema
}

/// Writes each definition that one `$ref` alone uses where it is used (the use's own
/// keywords kept over the definition's, but both descriptions kept, the use's first),
/// and drops `$defs` once it is empty: a definition written apart pays for its name twice on every call. A
/// definition that refers to itself stays.
fn inline_single_use_definitions(schema: &mut Value) {
    let Some(Value::Object(defs)) = schema.get("$defs") else {
        return;
    };
    let names: Vec<String> = defs.keys().cloned().collect();
    for name in names {
        let reference = format!("#/$defs/{name}");
        let quoted = format!("\"$ref\":\"{reference}\"");
        if schema.to_string().matches(&quoted).count() != 1 {
            continue;
        }
        let Some(Value::Object(defs)) = schema.get_mut("$defs") else {
            return;
        };
        let Some(Value::Object(definition)) = defs.remove(&name) else {
            continue;
        };
        if Value::Object(definition.clone())
            .to_string()
            .contains(&quoted)
        {
            defs.insert(name, Value::Object(definition));
            continue;
        }
        let mut definition = Some(definition);
        for_each_schema(schema, &mut |map| {
            if map.get("$ref").and_then(Value::as_str) != Some(reference.as_str()) {
                return;
            }
            if let Some(definition) = definition.take() {
                map.remove("$ref");
                for (keyword, value) in definition {
                    match (map.get_mut(&keyword), &value) {
                        // The use's description, then the definition's (an enum's
                        // notes on its values).
                        (Some(Value::String(own)), Value::String(more))
                            if keyword == "description" =>
                        {
                            own.push(' ');
                            own.push_str(more);
                        }
                        (Some(_), _) => {}
                        (None, _) => {
                            map.insert(keyword, value);
                        }
                    }
                }
            }
        });
    }
    if let Value::Object(map) = schema
        && map
            .get("$defs")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
    {
        map.remove("$defs");
    }
}

/// `schema` without any `description`: for a call whose system prompt already says what
/// each field of the answer holds, so the schema need not say it again on every call.
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Verdict {
///     /// Whether it fits.
///     fits: bool,
/// }
/// let bare = agent_llm::structured::without_descriptions(agent_llm::structured::schema_of::<Verdict>());
/// assert_eq!(bare["properties"]["fits"], serde_json::json!({"type": "boolean"}));
/// ```
pub fn without_descriptions(mut schema: Value) -> Value {
    for_each_schema(&mut schema, &mut |map| {
        map.remove("description");
    });
    schema
}

/// `{"oneOf": [{"const": "a", "description": "..", "type": "string"}, ..]}` as
/// `{"type": "string", "enum": ["a", ..], "description": "a: .."}`; any other `oneOf`
/// is left alone.
fn string_constants_as_enum(map: &mut Map<String, Value>) {
    let Some(Value::Array(variants)) = map.get("oneOf") else {
        return;
    };
    let mut constants = Vec::with_capacity(variants.len());
    let mut notes = Vec::new();
    for variant in variants {
        let Some(variant) = variant.as_object() else {
            return;
        };
        let only_known_keys = variant
            .keys()
            .all(|k| matches!(k.as_str(), "const" | "description" | "type" | "title"));
        let (Some(Value::String(constant)), true) = (variant.get("const"), only_known_keys) else {
            return;
        };
        if variant.get("type").is_some_and(|t| t != "string") {
            return;
        }
        if let Some(Value::String(note)) = variant.get("description") {
            notes.push(format!("{constant}: {note}"));
        }
        constants.push(Value::String(constant.clone()));
    }
    map.remove("oneOf");
    map.insert("type".into(), Value::String("string".into()));
    map.insert("enum".into(), Value::Array(constants));
    if !notes.is_empty() {
        let described = match map.get("description").and_then(Value::as_str) {
            Some(own) => format!("{own} {}", notes.join(" ")),
            None => notes.join(" "),
        };
        map.insert("description".into(), Value::String(described));
    }
}

/// Calls `visit` on a schema and every subschema, following the keywords that hold
/// subschemas (so a property named `properties` or `title` is not mistaken for one).
fn for_each_schema(schema: &mut Value, visit: &mut impl FnMut(&mut Map<String, Value>)) {
    let Value::Object(map) = schema else {
        return;
    };
    visit(map);
    for keyword in ["properties", "$defs", "definitions"] {
        if let Some(Value::Object(children)) = map.get_mut(keyword) {
            children
                .values_mut()
                .for_each(|child| for_each_schema(child, visit));
        }
    }
    for keyword in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(children)) = map.get_mut(keyword) {
            children
                .iter_mut()
                .for_each(|child| for_each_schema(child, visit));
        }
    }
    for keyword in ["items", "additionalProperties", "not"] {
        if let Some(child @ Value::Object(_)) = map.get_mut(keyword) {
            for_each_schema(child, visit);
        }
    }
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
    for_each_schema(&mut schema, &mut strict_object);
    schema
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
        let inner = &strict["properties"]["inner"];
        assert_eq!(inner["required"], json!(["note"]));
        assert_eq!(inner["additionalProperties"], json!(false));
        assert!(strict.get("$schema").is_none());
    }

    #[test]
    fn compacting_keeps_a_property_named_title_and_drops_nested_titles() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        /// A posting.
        struct Posting {
            /// The posting's title.
            title: String,
            inner: Inner,
            years: Option<u8>,
        }
        let schema = schema_of::<Posting>();
        assert_eq!(
            schema["properties"]["title"],
            json!({"type": "string", "description": "The posting's title."})
        );
        assert!(
            schema.get("description").is_none(),
            "the type's own docs are for Rust"
        );
        assert!(schema["properties"]["inner"].get("title").is_none());
        assert!(schema["properties"]["years"].get("format").is_none());
        assert_eq!(schema_name_of::<Posting>(), "Posting");
    }

    #[test]
    fn a_definition_used_once_is_written_where_it_is_used_and_one_used_twice_stays() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Pair {
            /// The first.
            first: Inner,
            second: Inner,
            only: Outer,
        }
        let schema = schema_of::<Pair>();
        assert_eq!(
            schema["properties"]["first"],
            json!({"$ref": "#/$defs/Inner", "description": "The first."})
        );
        assert_eq!(schema["properties"]["only"]["type"], "object");
        assert_eq!(
            schema["properties"]["only"]["properties"]["inner"]["$ref"],
            "#/$defs/Inner"
        );
        assert_eq!(
            schema["$defs"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["Inner"]
        );
        // Inner, used three times, stays; alone it is inlined and `$defs` goes.
        assert!(schema_of::<Outer>().get("$defs").is_none());
    }

    #[test]
    fn an_inlined_enum_keeps_its_use_s_description_and_its_values_notes() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        enum Way {
            /// Towards the end.
            Down,
            /// Towards the top.
            Up,
        }
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Scroll {
            /// Which way.
            way: Way,
        }
        assert_eq!(
            schema_of::<Scroll>()["properties"]["way"],
            json!({"description": "Which way. Down: Towards the end. Up: Towards the top.", "enum": ["Down", "Up"], "type": "string"})
        );
    }

    #[test]
    fn a_definition_that_refers_to_itself_stays() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Node {
            children: Vec<Node>,
        }
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Tree {
            root: Node,
        }
        let schema = schema_of::<Tree>();
        assert_eq!(schema["properties"]["root"]["$ref"], "#/$defs/Node");
        assert_eq!(
            schema["$defs"]["Node"]["properties"]["children"]["items"]["$ref"],
            "#/$defs/Node"
        );
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
