//! # agent-server
//!
//! A domain-agnostic HTTP host any product can mount. A product implements [`Product`]:
//! typed start request, events, result and gates, and a run; [`AgentServer`] gives every
//! session a token, an ordered and numbered event log with a replaying Server-Sent Events
//! stream, gates answered over HTTP and checked against their declared answer types, one
//! run at a time, cancellation, graceful shutdown, and a resume after a restart (at the
//! run's last checkpoint), all kept in a [`SessionStore`] and a checkpoint store (one
//! SQLite database by default).
//!
//! ## Routes
//!
//! Every error is JSON: `{"error": {"code": "...", "message": "...", "field"?: "..."}}`
//! (`field`: the path of the request field at fault). Every product route needs a caller
//! the server's [`auth`] layer accepts (401 without, 429 over a rate); a session is
//! reached by its tenant's callers only (404 for another's), with its token
//! (`X-Session-Token`, `?token=`, or the bearer on a server without credentials).
//!
//! - `POST /api/{product}/start` (or `POST /api/{product}`), body the product's start
//!   request: `201 {"session_id", "token", "stream_url", "status_url"}`. Unknown product
//!   404, malformed JSON 400, a body that does not fit 422 (`invalid_request`, naming the
//!   field), too large 413, a `tenant_id`/`user_id` its caller does not speak for 403
//!   (`forbidden`), a tenant at [`ServerConfig::max_sessions_per_tenant`] 429
//!   (`tenant_session_limit`); a request the product refuses ([`Product::admit`]) 400
//!   (`refused`), 404 (`not_found`) or 429 (`quota_exceeded`), with no session made.
//! - `GET /api/{product}/{session}/stream`: Server-Sent Events (`id: <n>`,
//!   `event: <the event's "type">`, `data: <the JSON>`), the stored events after
//!   `Last-Event-ID` (header) or `?last_event_id=`, then the live ones, until the terminal
//!   `session_complete`, `session_failed` or `session_cancelled`. Token as
//!   `Authorization: Bearer <token>` or `?token=` (a browser `EventSource` cannot set
//!   headers).
//! - `POST /api/{product}/respond`, body `{"session_id", "gate", "answer"}` and the token
//!   as a header or a `"token"` field: `200 {"ok": true}`. Unknown session or gate
//!   404, bad token 401, answered already, closed, cancelled or not running 409, an answer
//!   that does not fit the gate's declared type 422 (`invalid_answer`, naming the field),
//!   one above [`ServerConfig::max_answer_bytes`] 413 (`answer_too_large`), one the store
//!   could not keep 503 (`store_unavailable`: answer again).
//! - `GET /api/{product}/{session}` (token required): `{"session_id", "product",
//!   "status", "stage", "pending_gates": [{"id", "name", "payload", "since"}], "events",
//!   "result", "error"}`; status `running`, `waiting`, `complete`, `failed` or
//!   `cancelled`.
//! - `POST /api/{product}/{session}/cancel` (token required): stops the run, closes its
//!   gates, ends the session `cancelled`; `200 {"session_id", "status", "error"}`, 409 when
//!   it has ended.
//! - `GET /api/{product}/openapi.json`: the OpenAPI 3.1 document of these routes with the
//!   JSON Schemas of the start request, every event, the result and every gate's answer.
//! - `GET /`: the HTML page of the first product that has one.
//! - With [`AgentServer::with_metrics`]: `GET /metrics`, the process's metrics in the
//!   Prometheus text format (see [`prometheus`]).
//! - With `AgentServer::with_mcp` (feature `mcp`): `/mcp`, an MCP server over streamable
//!   HTTP whose tools are products and capabilities (see the `mcp` module).
//! - With [`AgentServer::with_chat`]: `POST /v1/chat/completions` and `GET /v1/models`,
//!   the OpenAI-compatible front of a conversational product, with OpenAI's own error
//!   shape (see [`chat`]).
//!
//! ## Events the server adds
//!
//! `{"type": "gate_open", "gate_id", "name", "payload"}`,
//! `{"type": "gate_answered", "gate_id"}`, `{"type": "gate_closed", "gate_id", "reason"}`
//! (`expired` or `cancelled`), and one terminal event: `{"type": "session_complete",
//! "result"}`, `{"type": "session_failed", "error"}`, `{"type": "session_cancelled",
//! "reason"}` or `{"type": "session_expired", "reason"}` (a run that ended after one of
//! its gates timed out unanswered: its user abandoned it; status `expired`). A product
//! event larger than [`ServerConfig::max_event_bytes`] is stored as
//! `{"type": "event_too_large", "original_type", "bytes", "limit"}`.
//!
//! ## Example
//!
//! ```no_run
//! use agent_server::{AgentServer, Product, SessionHandle};
//! use agent_runtime::sessions::InMemorySessionStore;
//! use agent_runtime::{AgentIdentity, Gate, GateError, GateSpec, Session};
//! use std::sync::Arc;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Start { name: String }
//! #[derive(serde::Serialize, schemars::JsonSchema)]
//! #[serde(tag = "type", rename_all = "snake_case")]
//! enum Event { Hello { name: String } }
//! #[derive(serde::Serialize, schemars::JsonSchema)]
//! struct Question { question: String }
//! #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct Confirm { ok: bool }
//! const CONFIRM: Gate<Question, Confirm> = Gate::new("confirm");
//!
//! struct Greeter;
//!
//! #[async_trait::async_trait]
//! impl Product for Greeter {
//!     type Start = Start;
//!     type Event = Event;
//!     type Output = bool;
//!     type Error = GateError;
//!
//!     fn name(&self) -> &str {
//!         "greet"
//!     }
//!
//!     fn gates(&self) -> Vec<GateSpec> {
//!         vec![CONFIRM.spec()]
//!     }
//!
//!     async fn run(&self, handle: SessionHandle<Event>, start: Start) -> Result<bool, GateError> {
//!         let session: Session<(), Event> = handle.session(());
//!         session.emit(Event::Hello { name: start.name });
//!         let ctx = session.context(AgentIdentity::new("greeter", "demo"));
//!         let question = Question { question: "Shall we?".into() };
//!         Ok(ctx.ask(&CONFIRM, &question).await?.ok)
//!     }
//! }
//!
//! # async fn serve() -> std::io::Result<()> {
//! let server = AgentServer::new(Arc::new(InMemorySessionStore::new()))
//!     .with_product(Arc::new(Greeter));
//! let _router: axum::Router = server.router(); // mount it, or:
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! // Shuts down (parking running sessions) when the future resolves, e.g. on Ctrl-C.
//! let shutdown = std::future::pending::<()>();
//! server.serve_until(listener, shutdown).await
//! # }
//! ```

mod access;
pub mod auth;
mod backend_failure;
pub mod chat;
mod control;
mod error;
#[cfg(test)]
mod fuzz;
mod graph_product;
mod hosted;
mod launch;
mod live;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "mcp")]
mod mcp_service;
mod openapi;
mod parking;
mod product;
pub mod prometheus;
mod respond;
mod resume;
mod retake;
mod routes;
mod server;
mod start;
mod stream;
mod worker;
mod writer;

#[cfg(feature = "testing")]
pub mod testing;

pub use graph_product::GraphProduct;
pub use product::{Product, Refusal, SessionHandle};
pub use prometheus::{MetricsError, MetricsHandle, install_prometheus};
pub use server::{AgentServer, ServerConfig, SessionBuses};

/// The session store types a host needs (re-exported from `agent-runtime`).
pub use agent_runtime::sessions::{InMemorySessionStore, SessionStore, StoreError};
