//! The HTTP routes.

use axum::Json;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Extension, Path, Query, State};
use axum::http::{HeaderMap, Request, StatusCode};
use axum::middleware;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tower_http::trace::TraceLayer;

use crate::access::{Authorized, TokenQuery, authorized, json_body, path, session_of};
use crate::auth::{Caller, require_caller};
use crate::error::ApiError;
use crate::respond::respond;
use crate::server::AgentServer;
use crate::start::StartedSession;
use crate::stream::stream;

impl AgentServer {
    /// The routes, ready to serve or to [`nest`](axum::Router::nest)/
    /// [`merge`](axum::Router::merge) into a bigger router.
    pub fn router(&self) -> Router {
        router(self.clone())
    }
}

fn router(server: AgentServer) -> Router {
    let limit = server.inner.config.max_body_bytes;
    // The chat front answers to the server's auth layer (one layer for every route).
    let chat = server
        .inner
        .chat
        .as_ref()
        .map_or_else(Router::new, |front| {
            front.clone().with_auth(server.inner.auth.clone()).router()
        });
    // Every product route needs a caller the auth layer accepts; the documents do not.
    let mut callers = Router::new()
        .route("/api/{product}", post(start))
        .route("/api/{product}/start", post(start))
        .route("/api/{product}/respond", post(respond))
        .route("/api/{product}/{session}", get(status))
        .route("/api/{product}/{session}/stream", get(stream))
        .route("/api/{product}/{session}/cancel", post(cancel));
    if server.inner.metrics.is_some() {
        callers = callers.route("/metrics", get(metrics));
    }
    let callers = callers.route_layer(middleware::from_fn_with_state(
        server.clone(),
        require_caller,
    ));
    // The MCP front answers to the same layer (a nested service takes `layer`).
    #[cfg(feature = "mcp")]
    let callers = match &server.inner.mcp {
        Some(front) => callers.merge(crate::mcp_service::router(front, &server).layer(
            middleware::from_fn_with_state(server.clone(), require_caller),
        )),
        None => callers,
    };
    Router::new()
        .route("/", get(page))
        .route("/api/{product}/openapi.json", get(openapi))
        .merge(callers)
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
        .merge(chat)
}

/// `GET /metrics`: the process's metrics, in the Prometheus text format.
async fn metrics(State(server): State<AgentServer>) -> Response {
    match &server.inner.metrics {
        Some(handle) => (
            [(
                axum::http::header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            handle.render(),
        )
            .into_response(),
        None => ApiError::not_found("not_found", "no such route").into_response(),
    }
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

/// `POST /api/{product}/start`, or `POST /api/{product}`.
async fn start(
    State(server): State<AgentServer>,
    Extension(caller): Extension<Caller>,
    product: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let name = path(product)?;
    if server.product(&name).is_none() {
        return Err(ApiError::unknown_product(&name));
    }
    let request = json_body(body, server.inner.config.max_body_bytes)?;
    let StartedSession { id, token } = server.start_session(&caller, &name, request).await?;
    let body = json!({
        "session_id": id,
        "token": token,
        "stream_url": format!("/api/{name}/{id}/stream"),
        "status_url": format!("/api/{name}/{id}"),
    });
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// `GET /api/{product}/{session}`: status, stage, pending gates, event count, outcome.
async fn status(
    State(server): State<AgentServer>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    ids: Result<Path<(String, String)>, PathRejection>,
    token: Result<Query<TokenQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Authorized { record, .. } = authorized(&server, &caller, &headers, ids, token).await?;
    let id = record.id.clone();

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
            .filter(|g| g.is_pending())
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

/// `GET /api/{product}/openapi.json`: the product's OpenAPI 3.1 document.
async fn openapi(
    State(server): State<AgentServer>,
    product: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let name = path(product)?;
    let product = server
        .product(&name)
        .ok_or_else(|| ApiError::unknown_product(&name))?;
    Ok(Json(product.openapi()).into_response())
}

/// `POST /api/{product}/{session}/cancel`: stops the run, closes its gates, and ends the
/// session `cancelled`; answers with the session's status once that is written.
async fn cancel(
    State(server): State<AgentServer>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    ids: Result<Path<(String, String)>, PathRejection>,
    token: Result<Query<TokenQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Authorized {
        product: name,
        record,
        ..
    } = authorized(&server, &caller, &headers, ids, token).await?;
    let id = record.id.clone();
    if record.status.is_finished() {
        return Err(ApiError::conflict(
            "session_not_running",
            format!(
                "session {id:?} is {}; it cannot be cancelled",
                record.status.as_str()
            ),
        ));
    }
    server.cancel_anywhere(&id, "cancelled by its user").await?;
    tracing::info!(session = %id, "session cancelled");
    let record = session_of(&server, &name, &id).await?;
    Ok(Json(json!({
        "session_id": record.id,
        "status": record.status.as_str(),
        "error": record.error,
    }))
    .into_response())
}
