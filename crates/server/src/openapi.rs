//! The OpenAPI 3.1 document of a product's routes, from its typed contracts: the start
//! request, the events on the stream (the product's and the server's own), the result,
//! and every gate's answer.

use agent_runtime::GateSpec;
use schemars::generate::{Contract, SchemaSettings};
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::product::Product;
use crate::writer::RESERVED_TYPES;

fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// Inputs are described as they are read, with shared definitions in the components.
fn input_generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .into_generator()
}

/// Outputs are described as they are written, each schema self-contained.
fn output_schema<T: JsonSchema>() -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.contract = Contract::Serialize;
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    generator.root_schema_for::<T>().to_value()
}

/// A gate's payload or answer schema, with its `$defs` moved into the components under
/// names that cannot clash (`{prefix}{name}`).
fn gate_schema(schema: &Value, prefix: &str, components: &mut Map<String, Value>) -> Value {
    let mut schema = schema.clone();
    if let Some(Value::Object(defs)) = schema.as_object_mut().and_then(|s| s.remove("$defs")) {
        for (name, def) in defs {
            components.insert(format!("{prefix}{name}"), def);
        }
    }
    if let Some(fields) = schema.as_object_mut() {
        fields.remove("$schema");
    }
    rewrite_refs(&mut schema, prefix);
    for (name, def) in components.iter_mut() {
        if name.starts_with(prefix) {
            rewrite_refs(def, prefix);
        }
    }
    schema
}

fn rewrite_refs(value: &mut Value, prefix: &str) {
    match value {
        Value::Object(fields) => {
            if let Some(Value::String(target)) = fields.get_mut("$ref")
                && let Some(name) = target.strip_prefix("#/$defs/")
            {
                *target = format!("#/components/schemas/{prefix}{name}");
            }
            fields.values_mut().for_each(|v| rewrite_refs(v, prefix));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_refs(v, prefix)),
        _ => {}
    }
}

/// The server's own events on every stream; a `gate_open` carries the payload of one of
/// `payloads` (component names).
fn server_events(payloads: &[String]) -> Value {
    let object = |kind: &str, properties: Value, required: &[&str]| {
        let mut required: Vec<&str> = required.to_vec();
        required.insert(0, "type");
        let mut properties = properties;
        properties["type"] = json!({"const": kind});
        json!({"type": "object", "properties": properties, "required": required})
    };
    let payload = if payloads.is_empty() {
        json!({})
    } else {
        json!({
            "description": "What the gate shows: the payload of the declared gate its `name` is (or is an instance of).",
            "anyOf": payloads.iter().map(|name| reference(name)).collect::<Vec<_>>(),
        })
    };
    let events = [
        object(
            "gate_open",
            json!({"gate_id": {"type": "string"}, "name": {"type": "string"}, "payload": payload}),
            &["gate_id", "name", "payload"],
        ),
        object(
            "gate_answered",
            json!({"gate_id": {"type": "string"}}),
            &["gate_id"],
        ),
        object(
            "gate_closed",
            json!({"gate_id": {"type": "string"}, "reason": {"enum": ["expired", "cancelled"]}}),
            &["gate_id", "reason"],
        ),
        object(
            "session_complete",
            json!({"result": reference("Output")}),
            &["result"],
        ),
        object(
            "session_failed",
            json!({"error": {"type": "string"}}),
            &["error"],
        ),
        object(
            "session_cancelled",
            json!({"reason": {"type": "string"}}),
            &["reason"],
        ),
        object(
            "session_expired",
            json!({"reason": {"type": "string"}}),
            &["reason"],
        ),
        object(
            "event_too_large",
            json!({"original_type": {}, "bytes": {"type": "integer"}, "limit": {"type": "integer"}}),
            &["original_type", "bytes", "limit"],
        ),
    ];
    debug_assert_eq!(events.len(), RESERVED_TYPES.len());
    json!({"oneOf": events})
}

fn error_response(description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": reference("Error")}}})
}

/// Who may call: a start needs a credential (none on a server without keys, which
/// listens on loopback only); a session route needs a credential and the session's token.
fn security_requirements() -> (Value, Value) {
    let credentials = ["apiKey", "jwt", "apiKeyHeader"];
    let caller: Vec<Value> = credentials
        .iter()
        .map(|c| json!({ *c: [] }))
        .chain([json!({})])
        .collect();
    let mut session: Vec<Value> = credentials
        .iter()
        .flat_map(|c| {
            ["sessionToken", "sessionTokenQuery"].map(|token| json!({ *c: [], token: [] }))
        })
        .collect();
    session.push(json!({"apiKeyHeader": [], "sessionBearer": []}));
    session
        .extend(["sessionBearer", "sessionToken", "sessionTokenQuery"].map(|t| json!({ t: [] })));
    (Value::Array(caller), Value::Array(session))
}

/// The OpenAPI document of product `P` hosted as `name`, whose gates are `gates`.
pub(crate) fn document<P: Product>(name: &str, gates: &[GateSpec]) -> Value {
    let mut generator = input_generator();
    let start = generator.subschema_for::<P::Start>().to_value();
    let mut components = generator.take_definitions(true);
    // `StartRequest` names the start type: its own definition, or an alias of it.
    if start != reference("StartRequest") {
        components.insert("StartRequest".into(), start);
    }
    components.insert("ProductEvent".into(), output_schema::<P::Event>());
    components.insert(
        "Event".into(),
        json!({
            "description": "An event on the stream: the SSE `id` is its number, the SSE `event` its type.",
            "oneOf": [reference("ProductEvent"), reference("ServerEvent")],
        }),
    );
    components.insert("Output".into(), output_schema::<P::Output>());
    let mut answers = Vec::new();
    let mut payloads = Vec::new();
    for gate in gates {
        let payload = format!("Payload_{}", gate.name);
        let schema = gate_schema(
            &gate.payload_schema,
            &format!("{}_payload_", gate.name),
            &mut components,
        );
        components.insert(payload.clone(), schema);
        payloads.push(payload);
        let schema = gate_schema(
            &gate.answer_schema,
            &format!("{}_", gate.name),
            &mut components,
        );
        let component = format!("Answer_{}", gate.name);
        components.insert(component.clone(), schema);
        answers.push(json!({
            "type": "object",
            "description": format!("An answer to a `{}` gate (or one of its instances).", gate.name),
            "properties": {
                "session_id": {"type": "string"},
                "gate": {"type": "string", "description": "The gate id from `gate_open`."},
                "answer": reference(&component),
                "token": {"type": "string"},
            },
            "required": ["session_id", "gate", "answer"],
        }));
    }
    components.insert("ServerEvent".into(), server_events(&payloads));
    components.insert(
        "Respond".into(),
        if answers.is_empty() {
            json!({"type": "object", "properties": {"session_id": {"type": "string"}, "gate": {"type": "string"}, "answer": {}}, "required": ["session_id", "gate", "answer"]})
        } else {
            json!({"anyOf": answers})
        },
    );
    components.insert(
        "Error".into(),
        json!({"type": "object", "properties": {"error": {"type": "object", "properties": {
            "code": {"type": "string"}, "message": {"type": "string"}}, "required": ["code", "message"]}},
            "required": ["error"]}),
    );
    components.insert(
        "Started".into(),
        json!({"type": "object", "properties": {
            "session_id": {"type": "string"}, "token": {"type": "string"},
            "stream_url": {"type": "string"}, "status_url": {"type": "string"}},
            "required": ["session_id", "token", "stream_url", "status_url"]}),
    );
    components.insert(
        "Status".into(),
        json!({"type": "object", "properties": {
            "session_id": {"type": "string"}, "product": {"type": "string"},
            "status": {"enum": ["running", "waiting", "complete", "failed", "cancelled", "expired"]},
            "stage": {"type": ["string", "null"]},
            "pending_gates": {"type": "array", "items": {"type": "object"}},
            "events": {"type": "integer", "minimum": 0},
            "result": {}, "error": {"type": ["string", "null"]}},
            "required": ["session_id", "product", "status", "pending_gates", "events"]}),
    );
    let session =
        json!({"name": "session", "in": "path", "required": true, "schema": {"type": "string"}});
    let (caller, secured) = security_requirements();
    let start = json!({
        "operationId": "start",
        "security": caller,
        "requestBody": {"required": true, "content": {"application/json": {"schema": reference("StartRequest")}}},
        "responses": {
            "201": {"description": "Started.", "content": {"application/json": {"schema": reference("Started")}}},
            "400": error_response("Not JSON, or refused by the product (`refused`)."),
            "401": error_response("No credential, or one that is not valid (`unauthorized`)."),
            "403": error_response("The body names a tenant or user the credential does not speak for (`forbidden`, naming the field)."),
            "422": error_response("The request does not fit: the message names the field."),
            "429": error_response("The caller's quota is used up (`quota_exceeded`), or a rate (`rate_limited`, with `retry-after`)."),
        },
    });
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": format!("{name} (agent-server)"),
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Sessions of the product: start one, follow its events (SSE, replay from Last-Event-ID), answer its gates, read its status, cancel it.",
        },
        "paths": {
            format!("/api/{name}/start"): {"post": start.clone()},
            format!("/api/{name}"): {"post": {
                "operationId": "start_short",
                "requestBody": start["requestBody"].clone(),
                "responses": start["responses"].clone(),
            }},
            format!("/api/{name}/respond"): {"post": {
                "operationId": "respond",
                "security": secured,
                "requestBody": {"required": true, "content": {"application/json": {"schema": reference("Respond")}}},
                "responses": {
                    "200": {"description": "Taken.", "content": {"application/json": {"schema": {"type": "object"}}}},
                    "404": error_response("No such session or gate."),
                    "409": error_response("Answered already, closed, or the session is not running."),
                    "422": error_response("The answer does not fit the gate: the message names the field."),
                },
            }},
            format!("/api/{name}/{{session}}"): {"get": {
                "operationId": "status",
                "security": secured,
                "parameters": [session],
                "responses": {"200": {"description": "The session.", "content": {"application/json": {"schema": reference("Status")}}},
                              "401": error_response("No credential or no session token."),
                              "404": error_response("No such session, or another tenant's.")},
            }},
            format!("/api/{name}/{{session}}/stream"): {"get": {
                "operationId": "stream",
                "security": secured,
                "parameters": [session, {"name": "Last-Event-ID", "in": "header", "required": false, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "Server-sent events; each `data` is an Event.",
                    "content": {"text/event-stream": {"schema": reference("Event")}}},
                    "401": error_response("No credential or no session token."),
                    "404": error_response("No such session, or another tenant's.")},
            }},
            format!("/api/{name}/{{session}}/cancel"): {"post": {
                "operationId": "cancel",
                "security": secured,
                "parameters": [session],
                "responses": {
                    "200": {"description": "Cancelled.", "content": {"application/json": {"schema": reference("Status")}}},
                    "409": error_response("The session has ended."),
                },
            }},
            format!("/api/{name}/openapi.json"): {"get": {
                "operationId": "openapi",
                "responses": {"200": {"description": "This document.", "content": {"application/json": {"schema": {"type": "object"}}}}},
            }},
        },
        "components": {
            "schemas": components,
            "securitySchemes": {
                "apiKey": {"type": "http", "scheme": "bearer", "description": "An API key of the server's `AGENT_API_KEYS` (or `CHAT_API_KEYS`)."},
                "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-API-Key", "description": "The same key, in its own header: `Authorization` may then carry the session token."},
                "jwt": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "A JWT with `exp`, `iss`, `aud`, `tenant_id` and `user_id` (or `sub`)."},
                "sessionToken": {"type": "apiKey", "in": "header", "name": "X-Session-Token", "description": "The token the start answered with."},
                "sessionTokenQuery": {"type": "apiKey", "in": "query", "name": "token", "description": "The session token, for a browser `EventSource`."},
                "sessionBearer": {"type": "http", "scheme": "bearer", "description": "The session token as the bearer: on a server without credentials (loopback only), or with the key in `X-API-Key`."},
            },
        },
    })
}
