//! # agent-server
//!
//! A domain-agnostic HTTP host any product coordinator can mount. A product implements
//! [`Product`] (a name, a check of start requests, a run); [`AgentServer`] gives every
//! session a token, an ordered and numbered event log with a replaying Server-Sent Events
//! stream, gates answered over HTTP, one run at a time, and a resume after a restart, all
//! kept in a [`SessionStore`].
//!
//! ## Routes
//!
//! Every error is JSON: `{"error": {"code": "...", "message": "..."}}`.
//!
//! - `POST /api/{product}/start`, body a JSON object the product validates:
//!   `201 {"session_id", "token", "stream_url", "status_url"}`. Unknown product 404,
//!   malformed JSON 400, not an object or rejected 422, too large 413.
//! - `GET /api/{product}/{session}/stream`: Server-Sent Events (`id: <n>`,
//!   `event: <the event's "type">`, `data: <the JSON>`), the stored events after
//!   `Last-Event-ID` (header) or `?last_event_id=`, then the live ones, until the terminal
//!   `session_complete` or `session_failed`. Token as `Authorization: Bearer <token>` or
//!   `?token=` (a browser `EventSource` cannot set headers).
//! - `POST /api/{product}/respond`, body `{"session_id", "gate", "answer"}` and the token
//!   as a bearer header or a `"token"` field: `200 {"ok": true}`. Unknown session or gate
//!   404, bad token 401, answered already or session not running 409, an answer the
//!   product's [`Product::validate_answer`] refuses 422 (`invalid_answer`).
//! - `GET /api/{product}/{session}` (token required): `{"session_id", "product",
//!   "status", "stage", "pending_gates": [{"id", "name", "payload", "since"}], "events",
//!   "result", "error"}`.
//! - `GET /`: the HTML page of the first product that has one.
//!
//! ## Events the server adds
//!
//! `{"type": "gate_open", "gate_id", "name", "payload"}`,
//! `{"type": "gate_answered", "gate_id"}`, and one terminal event:
//! `{"type": "session_complete", "result"}` or `{"type": "session_failed", "error"}`.
//!
//! ## Example
//!
//! ```no_run
//! use agent_server::{AgentServer, Product, SessionHandle};
//! use agent_runtime::sessions::InMemorySessionStore;
//! use agent_runtime::GateRequest;
//! use std::sync::Arc;
//!
//! struct Greeter;
//!
//! #[async_trait::async_trait]
//! impl Product for Greeter {
//!     fn name(&self) -> &str {
//!         "greet"
//!     }
//!
//!     fn validate_start(&self, body: &serde_json::Value) -> Result<(), String> {
//!         body.get("name")
//!             .and_then(|n| n.as_str())
//!             .map(|_| ())
//!             .ok_or_else(|| "\"name\" must be a string".to_owned())
//!     }
//!
//!     async fn run(&self, session: SessionHandle) -> Result<serde_json::Value, String> {
//!         let name = session.request()["name"].as_str().unwrap_or("you").to_owned();
//!         session.emit(&serde_json::json!({"type": "hello", "name": name}));
//!         let gate = session.gates().next_id("greeter", "confirm");
//!         let cancel = session.cancellation();
//!         let answer = session
//!             .gates()
//!             .wait(&gate, GateRequest::new("confirm"), Some(&cancel))
//!             .await
//!             .map_err(|e| e.to_string())?;
//!         Ok(serde_json::json!({"greeted": name, "answer": answer}))
//!     }
//! }
//!
//! # async fn serve() -> std::io::Result<()> {
//! let server = AgentServer::new(Arc::new(InMemorySessionStore::new()))
//!     .with_product(Arc::new(Greeter));
//! let _router: axum::Router = server.router(); // mount it, or:
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! server.serve(listener).await
//! # }
//! ```

mod auth;
mod error;
mod product;
mod routes;
mod server;
mod writer;

pub use product::{Product, SessionHandle};
pub use server::{AgentServer, ServerConfig};

/// The session store types a host needs (re-exported from `agent-runtime`).
pub use agent_runtime::sessions::{InMemorySessionStore, SessionStore, StoreError};
