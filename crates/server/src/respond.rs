//! `POST /api/{product}/respond`: a gate's answer, taken by the instance that runs the
//! session, or passed on to it ([`AgentServer::forward`]).

use agent_runtime::sessions::GateAnswer;
use agent_runtime::{GateError, json_len};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;

use crate::access::{authorize, header_token, json_body, path, session_of};
use crate::auth::Caller;
use crate::control::Op;
use crate::error::ApiError;
use crate::live::LiveSession;
use crate::server::AgentServer;
use crate::writer::{GATE_ANSWERED, Write};

/// `POST /api/{product}/respond`: `{"session_id", "gate", "answer"}`, the session token
/// in a header or a `"token"` field.
pub(crate) async fn respond(
    State(server): State<AgentServer>,
    Extension(caller): Extension<Caller>,
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
    let limit = server.inner.config.max_answer_bytes;
    if json_len(answer) > limit {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "answer_too_large",
            format!("the answer is larger than {limit} bytes as JSON"),
        )
        .with_field("answer"));
    }
    let body_token = match fields.get("token") {
        None | Some(Value::Null) => None,
        Some(Value::String(token)) => Some(token.as_str()),
        Some(_) => return Err(ApiError::invalid("\"token\" must be a string")),
    };

    let record = session_of(&server, &name, session_id).await?;
    authorize(
        &record,
        &caller,
        header_token(&headers, &caller).or(body_token),
    )?;
    match server.inner.live.get(session_id) {
        Some(live) => {
            server
                .answer_here(&live, &name, session_id, gate, answer)
                .await?;
        }
        None => {
            let op = Op::Respond {
                product: name.clone(),
                gate: gate.to_owned(),
                answer: answer.clone(),
            };
            let taken = server.forward(session_id, &op).await?.is_some();
            // With a run queue, an unfinished session running nowhere waits for a
            // worker (just started, or its instance died): the answer waits in the store.
            // So does one whose store failed it, waiting here to be taken up again.
            let queued = (server.inner.run_queue.is_some() || server.is_retaking(session_id))
                && !record.status.is_finished();
            if !taken && queued {
                server
                    .answer_in_store(&name, session_id, gate, answer)
                    .await?;
                // A worker may have taken the run up meanwhile, its gates read before
                // this answer was stored: it gets the answer too (or has it already).
                match server.forward(session_id, &op).await {
                    Ok(_) => {}
                    Err(error) if error.code() == "already_answered" => {}
                    Err(error) => {
                        tracing::warn!(session = %session_id, gate, ?error, "answer stored, not passed on")
                    }
                }
            } else if !taken {
                return Err(ApiError::conflict(
                    "session_not_running",
                    format!(
                        "session {session_id:?} is {}; it takes no answer",
                        record.status.as_str()
                    ),
                ));
            }
        }
    }
    Ok(Json(json!({"ok": true})).into_response())
}

/// 422: the answer does not fit the gate's declared shape (the field at fault named).
fn invalid_answer(gate: &str, error: &agent_runtime::AnswerError) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_answer",
        format!("the answer to {gate:?} does not fit: {error}"),
    )
    .with_field(&error.path)
}

fn already_answered(gate: &str) -> ApiError {
    ApiError::conflict(
        "already_answered",
        format!("gate {gate:?} was already answered"),
    )
}

impl AgentServer {
    /// Whether the store holds an answer to `gate` (false when it cannot say).
    async fn answer_stored(&self, session_id: &str, gate: &str) -> bool {
        self.inner
            .store
            .gates(session_id)
            .await
            .is_ok_and(|gates| gates.iter().any(|g| g.id == gate && g.answer.is_some()))
    }

    /// Answers a pending gate of a session that runs nowhere now, in the store: the run
    /// that resumes it finds the answer there, as after a restart.
    async fn answer_in_store(
        &self,
        product: &str,
        session_id: &str,
        gate: &str,
        answer: &Value,
    ) -> Result<(), ApiError> {
        let store = &self.inner.store;
        let gates = store
            .gates(session_id)
            .await
            .map_err(|error| ApiError::store(&error))?;
        let Some(stored) = gates.iter().find(|g| g.id == gate) else {
            return Err(ApiError::not_found(
                "unknown_gate",
                format!("session {session_id:?} has no pending gate {gate:?}"),
            ));
        };
        if let Some(spec) = self.product(product).and_then(|p| p.gate(&stored.kind)) {
            spec.check(answer)
                .map_err(|error| invalid_answer(gate, &error))?;
        }
        let announcement = json!({"type": GATE_ANSWERED, "gate_id": gate});
        match store
            .answer_gate(session_id, gate, answer, &announcement)
            .await
            .map_err(|error| ApiError::store(&error))?
        {
            GateAnswer::Accepted { announced } => {
                let announcement = Arc::new(announcement);
                self.inner
                    .fanout
                    .publish(session_id, announced, announcement);
            }
            GateAnswer::AlreadyAnswered => return Err(already_answered(gate)),
            GateAnswer::Closed => {
                return Err(ApiError::conflict(
                    "gate_closed",
                    format!("gate {gate:?} closed without an answer"),
                ));
            }
            GateAnswer::Unknown => {
                return Err(ApiError::not_found(
                    "unknown_gate",
                    format!("session {session_id:?} has no pending gate {gate:?}"),
                ));
            }
        }
        tracing::info!(session = %session_id, gate, "gate answered in the store");
        Ok(())
    }

    /// Answers a gate of a session whose run is live here: checked against the gate's
    /// declared shape, recorded, and stored before this returns.
    pub(crate) async fn answer_here(
        &self,
        live: &LiveSession,
        product: &str,
        session_id: &str,
        gate: &str,
        answer: &Value,
    ) -> Result<(), ApiError> {
        let _one_at_a_time = live.respond_lock.lock().await;
        if let Some(reason) = live.cancel_reason() {
            return Err(ApiError::conflict(
                "session_cancelled",
                format!("session {session_id:?} was cancelled ({reason}); it takes no answer"),
            ));
        }
        let kind = live
            .gates
            .pending()
            .into_iter()
            .find(|g| g.id == gate)
            .map(|g| g.kind)
            .or_else(|| live.restored.lock().get(gate).map(|g| g.kind.clone()));
        if let Some(spec) = kind.and_then(|kind| self.product(product)?.gate(&kind)) {
            spec.check(answer)
                .map_err(|error| invalid_answer(gate, &error))?;
        }
        match live.gates.respond(gate, answer.clone()) {
            Ok(()) => {}
            Err(GateError::Unknown(_)) => {
                self.answer_restored(live, session_id, gate, answer).await?
            }
            Err(GateError::AlreadyAnswered(_)) => return Err(already_answered(gate)),
            Err(error) => {
                return Err(ApiError::conflict("gate_closed", error.to_string()));
            }
        }
        // The answer is stored before the client hears it was taken.
        live.flush().await;
        if let Some(reason) = live.failure.reason()
            && !self.answer_stored(session_id, gate).await
        {
            // Not stored: the run parks, and the gate is open again when it resumes.
            return Err(ApiError::at_capacity(
                "store_unavailable",
                format!(
                    "the answer was not stored ({reason}); answer again once the session resumes"
                ),
            ));
        }
        tracing::info!(session = %session_id, gate, "gate answered");
        Ok(())
    }

    /// Answers a gate the run has not reached (again) since a restart: pending before
    /// it, the answer is recorded now and passes the gate when the rerun reaches it.
    async fn answer_restored(
        &self,
        live: &LiveSession,
        session_id: &str,
        gate: &str,
        answer: &Value,
    ) -> Result<(), ApiError> {
        let restored = live.restored.lock().remove(gate);
        if restored.is_none() {
            // Answered before a restart (or before the rerun reached it again)?
            let stored = self
                .inner
                .store
                .gates(session_id)
                .await
                .map_err(|error| ApiError::store(&error))?;
            if let Some(stored) = stored.iter().find(|g| g.id == gate) {
                if stored.answer.is_some() {
                    return Err(already_answered(gate));
                }
                if let Some(reason) = &stored.closed {
                    return Err(ApiError::conflict(
                        "gate_closed",
                        format!("gate {gate:?} closed without an answer ({reason})"),
                    ));
                }
            }
            return Err(ApiError::not_found(
                "unknown_gate",
                format!("session {session_id:?} has no pending gate {gate:?}"),
            ));
        }
        live.gates.restore([(gate.to_owned(), answer.clone())]);
        // The rerun may have reached the gate in between: then it waits, and this
        // answers it (the listener records it).
        if live.gates.respond(gate, answer.clone()).is_err() {
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
        Ok(())
    }
}
