//! The HTTP routes.

use agent_runtime::GateError;
use agent_runtime::sessions::{NewSession, SessionRecord, StoredEvent};
use axum::Json;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use futures::Stream;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use tokio::sync::broadcast;
use tower_http::trace::TraceLayer;

use crate::auth::{bearer, hash_token, new_token, token_matches};
use crate::error::ApiError;
use crate::server::AgentServer;
use crate::writer::{Numbered, Write, is_terminal};

pub(crate) fn router(server: AgentServer) -> Router {
    let limit = server.inner.config.max_body_bytes;
    Router::new()
        .route("/", get(page))
        .route("/api/{product}/start", post(start))
        .route("/api/{product}/respond", post(respond))
        .route("/api/{product}/{session}", get(status))
        .route("/api/{product}/{session}/stream", get(stream))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .layer(
            // The span names the path only: a query may hold a token.
            TraceLayer::new_for_http().make_span_with(|request: &Request<Body>| {
                tracing::info_span!(
                    "http_request",
                    method = %request.method(),
                    path = %request.uri().path(),
                )
            }),
        )
        .with_state(server)
}

async fn not_found() -> ApiError {
    ApiError::not_found("not_found", "no such route")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take this method",
    )
}

/// `GET /`: the page of the first product that has one.
async fn page(State(server): State<AgentServer>) -> Result<Response, ApiError> {
    server
        .inner
        .products
        .iter()
        .find_map(|p| p.page())
        .map(|html| Html(html).into_response())
        .ok_or_else(|| ApiError::not_found("not_found", "no product serves a page"))
}

fn path<T>(extracted: Result<Path<T>, PathRejection>) -> Result<T, ApiError> {
    extracted
        .map(|Path(value)| value)
        .map_err(|rejection| ApiError::bad_request(format!("bad path: {rejection}")))
}

/// Reads a JSON body: 413 when over the limit, 400 when it is not JSON.
fn json_body(body: Result<Bytes, BytesRejection>, limit: usize) -> Result<Value, ApiError> {
    let bytes = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!("the body is larger than {limit} bytes"),
            )
        } else {
            ApiError::bad_request(format!("could not read the body: {rejection}"))
        }
    })?;
    serde_json::from_slice(&bytes)
        .map_err(|error| ApiError::bad_request(format!("the body is not valid JSON: {error}")))
}

/// The session `id` of `product`: 404 for an unknown product, or a session that does not
/// exist or belongs to another product.
async fn session_of(
    server: &AgentServer,
    product: &str,
    id: &str,
) -> Result<SessionRecord, ApiError> {
    if server.product(product).is_none() {
        return Err(ApiError::unknown_product(product));
    }
    match server.inner.store.get(id).await {
        Ok(Some(record)) if record.product == product => Ok(record),
        Ok(_) => Err(ApiError::unknown_session(id)),
        Err(error) => Err(ApiError::store(&error)),
    }
}

fn authorize(record: &SessionRecord, token: Option<&str>) -> Result<(), ApiError> {
    match token {
        Some(token) if token_matches(token, &record.token_hash) => Ok(()),
        _ => Err(ApiError::unauthorized()),
    }
}

/// `POST /api/{product}/start`.
async fn start(
    State(server): State<AgentServer>,
    product: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let name = path(product)?;
    let product = server
        .product(&name)
        .cloned()
        .ok_or_else(|| ApiError::unknown_product(&name))?;
    let request = json_body(body, server.inner.config.max_body_bytes)?;
    if !request.is_object() {
        return Err(ApiError::invalid("the start request must be a JSON object"));
    }
    product
        .validate_start(&request)
        .map_err(ApiError::invalid)?;

    let id = uuid::Uuid::new_v4().to_string();
    let token = new_token();
    server
        .inner
        .store
        .create(NewSession {
            id: id.clone(),
            product: name.clone(),
            token_hash: hash_token(&token),
            request: request.clone(),
        })
        .await
        .map_err(|error| ApiError::store(&error))?;
    tracing::info!(session = %id, product = %name, "session started");
    server.start_run(product, id.clone(), request);
    let body = json!({
        "session_id": id,
        "token": token,
        "stream_url": format!("/api/{name}/{id}/stream"),
        "status_url": format!("/api/{name}/{id}"),
    });
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// `POST /api/{product}/respond`: `{"session_id", "gate", "answer"}`, token as a bearer
/// header or a `"token"` field.
async fn respond(
    State(server): State<AgentServer>,
    headers: HeaderMap,
    product: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let name = path(product)?;
    if server.product(&name).is_none() {
        return Err(ApiError::unknown_product(&name));
    }
    let body = json_body(body, server.inner.config.max_body_bytes)?;
    let Some(fields) = body.as_object() else {
        return Err(ApiError::invalid("the answer must be a JSON object"));
    };
    let text = |key: &str| -> Result<&str, ApiError> {
        fields
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| ApiError::invalid(format!("\"{key}\" must be a string")))
    };
    let session_id = text("session_id")?;
    let gate = text("gate")?;
    let Some(answer) = fields.get("answer") else {
        return Err(ApiError::invalid("\"answer\" is missing"));
    };
    let body_token = match fields.get("token") {
        None | Some(Value::Null) => None,
        Some(Value::String(token)) => Some(token.as_str()),
        Some(_) => return Err(ApiError::invalid("\"token\" must be a string")),
    };

    let record = session_of(&server, &name, session_id).await?;
    authorize(&record, bearer(&headers).or(body_token))?;
    let Some(live) = server.inner.live.get(session_id) else {
        return Err(ApiError::conflict(
            "session_not_running",
            format!(
                "session {session_id:?} is {}; it takes no answer",
                record.status.as_str()
            ),
        ));
    };

    let _one_at_a_time = live.respond_lock.lock().await;
    if let Some(product) = server.product(&name) {
        let pending = live.gates.pending();
        let gate_name = gate_name(&pending, gate);
        product
            .validate_answer(gate_name, answer)
            .map_err(|message| {
                ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_answer",
                    format!("the answer to {gate:?} does not fit: {message}"),
                )
            })?;
    }
    match live.gates.respond(gate, answer.clone()) {
        Ok(()) => {}
        Err(GateError::Unknown(_)) => {
            // Pending before a restart, and not reached again by the rerun yet: the
            // answer is recorded now and passes the gate when the rerun reaches it.
            let restored = live.restored.lock().remove(gate);
            if restored.is_none() {
                // Answered before a restart (or before the rerun reached it again)?
                let stored = server
                    .inner
                    .store
                    .gates(session_id)
                    .await
                    .map_err(|error| ApiError::store(&error))?;
                if stored.iter().any(|g| g.id == gate && g.answer.is_some()) {
                    return Err(already_answered(gate));
                }
                return Err(ApiError::not_found(
                    "unknown_gate",
                    format!("session {session_id:?} has no pending gate {gate:?}"),
                ));
            }
            live.gates.restore([(gate.to_owned(), answer.clone())]);
            // The rerun may have reached the gate in between: then it waits, and this
            // answers it (the listener records it).
            match live.gates.respond(gate, answer.clone()) {
                Ok(()) => {}
                Err(_) => {
                    let write = Write::GateAnswered {
                        id: gate.to_owned(),
                        answer: answer.clone(),
                    };
                    if live.writer.send(write).is_err() {
                        return Err(ApiError::conflict(
                            "session_not_running",
                            format!("session {session_id:?} has ended"),
                        ));
                    }
                }
            }
        }
        Err(GateError::AlreadyAnswered(_)) => return Err(already_answered(gate)),
        Err(error) => {
            return Err(ApiError::conflict("gate_closed", error.to_string()));
        }
    }
    // The answer is stored before the client hears it was taken.
    live.flush().await;
    tracing::info!(session = %session_id, gate, "gate answered");
    Ok(Json(json!({"ok": true})).into_response())
}

fn already_answered(gate: &str) -> ApiError {
    ApiError::conflict(
        "already_answered",
        format!("gate {gate:?} was already answered"),
    )
}

#[derive(Debug, Deserialize)]
struct TokenQuery {
    token: Option<String>,
    last_event_id: Option<String>,
}

fn query(extracted: Result<Query<TokenQuery>, QueryRejection>) -> Result<TokenQuery, ApiError> {
    extracted
        .map(|Query(query)| query)
        .map_err(|rejection| ApiError::bad_request(format!("bad query: {rejection}")))
}

/// `GET /api/{product}/{session}`: status, stage, pending gates, event count, outcome.
async fn status(
    State(server): State<AgentServer>,
    headers: HeaderMap,
    ids: Result<Path<(String, String)>, PathRejection>,
    token: Result<Query<TokenQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let (name, id) = path(ids)?;
    let token = query(token)?;
    let record = session_of(&server, &name, &id).await?;
    authorize(&record, bearer(&headers).or(token.token.as_deref()))?;

    let store = &server.inner.store;
    let pending: Vec<Value> = match server.inner.live.get(&id) {
        Some(live) => {
            let mut gates: Vec<Value> = Vec::new();
            let open = live.gates.pending();
            let restored: Vec<_> = live
                .restored
                .lock()
                .values()
                .filter(|g| !open.iter().any(|o| o.id == g.id))
                .cloned()
                .collect();
            for gate in open {
                gates.push(gate_json(&gate.id, &gate.name, &gate.payload, gate.since));
            }
            for gate in restored {
                gates.push(gate_json(
                    &gate.id,
                    &gate.name,
                    &gate.payload,
                    gate.opened_at,
                ));
            }
            gates
        }
        None if record.status.is_finished() => Vec::new(),
        None => store
            .gates(&id)
            .await
            .map_err(|error| ApiError::store(&error))?
            .into_iter()
            .filter(|g| g.answer.is_none())
            .map(|g| gate_json(&g.id, &g.name, &g.payload, g.opened_at))
            .collect(),
    };
    let events = store
        .event_count(&id)
        .await
        .map_err(|error| ApiError::store(&error))?;
    Ok(Json(json!({
        "session_id": record.id,
        "product": record.product,
        "status": record.status.as_str(),
        "stage": record.stage,
        "pending_gates": pending,
        "events": events,
        "result": record.result,
        "error": record.error,
    }))
    .into_response())
}

fn gate_json(id: &str, name: &str, payload: &Value, since: chrono::DateTime<chrono::Utc>) -> Value {
    json!({"id": id, "name": name, "payload": payload, "since": since})
}

/// `GET /api/{product}/{session}/stream`: the stored events after `Last-Event-ID`, then the
/// live ones, until the terminal event.
async fn stream(
    State(server): State<AgentServer>,
    headers: HeaderMap,
    ids: Result<Path<(String, String)>, PathRejection>,
    token: Result<Query<TokenQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let (name, id) = path(ids)?;
    let query = query(token)?;
    let record = session_of(&server, &name, &id).await?;
    authorize(&record, bearer(&headers).or(query.token.as_deref()))?;
    let header_id = headers
        .get("last-event-id")
        .map(|v| v.to_str().unwrap_or("invalid").to_owned());
    let after = match header_id.or(query.last_event_id) {
        None => 0,
        Some(text) if text.trim().is_empty() => 0,
        Some(text) => text.trim().parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("Last-Event-ID {text:?} is not an event number"))
        })?,
    };

    // Subscribe before reading the store: an event stored meanwhile arrives on both and
    // is sent once (by its number); none falls in between.
    let live = server
        .inner
        .live
        .get(&id)
        .map(|live| live.events.subscribe());
    let replay = server
        .inner
        .store
        .events_after(&id, after)
        .await
        .map_err(|error| ApiError::store(&error))?;
    tracing::debug!(session = %id, after, replayed = replay.len(), live = live.is_some(), "stream opened");
    let events = EventStream {
        store: Arc::clone(&server.inner.store),
        session: id,
        queue: replay.into_iter().map(|e| (e.seq, e.event)).collect(),
        live,
        last: after,
        ended: false,
    }
    .into_stream();
    let sse =
        Sse::new(events).keep_alive(KeepAlive::new().interval(server.inner.config.keep_alive));
    let mut response = sse.into_response();
    // Proxies must not buffer the stream.
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// One client's event stream: a queue to send (replayed or caught up from the store), the
/// live channel, and the last number sent.
struct EventStream {
    store: Arc<dyn agent_runtime::sessions::SessionStore>,
    session: String,
    queue: VecDeque<(u64, Value)>,
    live: Option<broadcast::Receiver<Numbered>>,
    last: u64,
    ended: bool,
}

impl EventStream {
    fn into_stream(self) -> impl Stream<Item = Result<Event, Infallible>> + Send {
        futures::stream::unfold(self, |mut state| async move {
            state.next().await.map(|event| (Ok(event), state))
        })
    }

    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some((seq, event)) = self.queue.pop_front() {
                if seq <= self.last {
                    continue;
                }
                self.last = seq;
                if is_terminal(&event) {
                    self.ended = true;
                    self.live = None;
                }
                return Some(sse_event(seq, &event));
            }
            if self.ended {
                return None;
            }
            let live = self.live.as_mut()?;
            match live.recv().await {
                Ok((seq, event)) if seq == self.last + 1 || seq <= self.last => {
                    self.queue.push_back((seq, Value::clone(&event)));
                }
                // Skipped ahead (should not happen) or fell behind: catch up from the store.
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => self.catch_up().await?,
                Err(broadcast::error::RecvError::Closed) => {
                    self.live = None;
                    self.catch_up().await?;
                    self.ended = true;
                }
            }
        }
    }

    async fn catch_up(&mut self) -> Option<()> {
        match self.store.events_after(&self.session, self.last).await {
            Ok(events) => {
                self.queue.extend(
                    events
                        .into_iter()
                        .map(|StoredEvent { seq, event, .. }| (seq, event)),
                );
                Some(())
            }
            Err(error) => {
                tracing::error!(session = %self.session, %error, "stream ended: the store failed");
                None
            }
        }
    }
}

/// `id: <seq>`, `event: <type>`, `data: <json>`.
fn sse_event(seq: u64, event: &Value) -> Event {
    let mut sse = Event::default().id(seq.to_string());
    if let Some(kind) = event.get("type").and_then(Value::as_str)
        && !kind.is_empty()
        && !kind.contains(['\n', '\r'])
    {
        sse = sse.event(kind);
    }
    sse.data(event.to_string())
}

/// The name of gate `id`: from the pending gates, else from the stable id's form
/// `{agent}:{name}:{n}`.
fn gate_name<'a>(pending: &'a [agent_runtime::PendingGate], id: &'a str) -> &'a str {
    if let Some(gate) = pending.iter().find(|g| g.id == id) {
        return &gate.name;
    }
    let mut parts = id.splitn(2, ':');
    let _agent = parts.next();
    parts
        .next()
        .and_then(|rest| rest.rsplit_once(':').map(|(name, _)| name))
        .unwrap_or(id)
}
