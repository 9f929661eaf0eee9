//! Requests for a session that another instance runs: this instance passes a gate's
//! answer or a cancellation to the one that runs the session, through the deployment's
//! [`SessionControl`](agent_runtime::sessions::SessionControl), and serves such requests
//! for the sessions it runs.

use std::time::Duration;

use agent_runtime::sessions::{ControlRequest, SessionOutcome};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::error::ApiError;
use crate::server::AgentServer;

/// How long an instance waits for the one that runs a session to answer.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(10);

/// What one instance asks of the instance that runs a session.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Op {
    /// Whether the session runs there.
    Ping,
    /// Answer one of its gates.
    Respond {
        /// The product the session belongs to.
        product: String,
        /// The gate.
        gate: String,
        /// The answer.
        answer: Value,
    },
    /// Cancel it.
    Cancel {
        /// Why.
        reason: String,
    },
}

impl AgentServer {
    /// Cancels `session` for `reason` wherever it runs: here, on the instance that runs
    /// it, or, running nowhere (its resume failed), in the store.
    pub(crate) async fn cancel_anywhere(
        &self,
        session: &str,
        reason: &str,
    ) -> Result<(), ApiError> {
        let op = Op::Cancel {
            reason: reason.to_owned(),
        };
        if !self.cancel(session, reason).await && self.forward(session, &op).await?.is_none() {
            self.end_not_running(session, SessionOutcome::Cancelled(reason.to_owned()))
                .await
                .map_err(|error| ApiError::store(&error))?;
        }
        Ok(())
    }

    /// Passes `op` to the instance that runs `session`: `Ok(None)` when none does, else
    /// what it answered (an error it answered with is returned as it is).
    pub(crate) async fn forward(&self, session: &str, op: &Op) -> Result<Option<Value>, ApiError> {
        let body = serde_json::to_value(op).map_err(|error| {
            ApiError::bad_request(format!("the request cannot be passed on: {error}"))
        })?;
        let reply = self
            .inner
            .control
            .ask(session, body, FORWARD_TIMEOUT)
            .await
            .map_err(|error| {
                ApiError::unavailable(format!(
                    "the instance running session {session:?} could not be reached: {error}"
                ))
            })?;
        let Some(reply) = reply else {
            return Ok(None);
        };
        if let Some(error) = reply.get("error") {
            return Err(ApiError::from_json(error).unwrap_or_else(|| {
                ApiError::bad_request(format!("the instance running it refused: {error}"))
            }));
        }
        Ok(Some(reply.get("ok").cloned().unwrap_or(Value::Null)))
    }

    /// Whether another instance runs `session` now.
    pub(crate) async fn runs_elsewhere(&self, session: &str) -> bool {
        matches!(self.forward(session, &Op::Ping).await, Ok(Some(_)))
    }

    /// Serves the requests other instances send for `session`, which runs here, until
    /// the returned task is aborted (when the run ends).
    pub(crate) async fn serve_control(
        &self,
        session: &str,
    ) -> Result<JoinHandle<()>, agent_runtime::sessions::StoreError> {
        let mut requests = self.inner.control.serve(session).await?;
        let (server, session) = (self.clone(), session.to_owned());
        let tasks = self.inner.tasks.clone();
        Ok(tasks.clone().spawn(async move {
            while let Some(ControlRequest { body, reply }) = requests.next().await {
                let server = server.clone();
                let session = session.clone();
                // Each request on its own task: an answer waits for the store, a cancel
                // for the run to end, and neither holds up a ping.
                tasks.spawn(async move {
                    let answer = match server.serve_op(&session, body).await {
                        Ok(value) => json!({ "ok": value }),
                        Err(error) => json!({ "error": error.to_json() }),
                    };
                    let _ = reply.send(answer);
                });
            }
        }))
    }

    /// Carries out one request for a session that runs here.
    async fn serve_op(&self, session: &str, body: Value) -> Result<Value, ApiError> {
        let op: Op = serde_json::from_value(body)
            .map_err(|error| ApiError::bad_request(format!("unknown request: {error}")))?;
        let Some(live) = self.inner.live.get(session) else {
            return Err(ApiError::conflict(
                "session_not_running",
                format!("session {session:?} has ended"),
            ));
        };
        match op {
            Op::Ping => Ok(json!(true)),
            Op::Respond {
                product,
                gate,
                answer,
            } => {
                self.answer_here(&live, &product, session, &gate, &answer)
                    .await?;
                Ok(json!(true))
            }
            Op::Cancel { reason } => {
                drop(live);
                Ok(json!(self.cancel(session, &reason).await))
            }
        }
    }
}
