//! The gate queries of the PostgreSQL session store, each run inside the caller's
//! transaction after locking the session's row, so two instances answering the same
//! gate take turns and exactly one answer is accepted.

use agent_runtime::sessions::{GateAnswer, OpenGate, StoreError, StoredGate};
use serde_json::Value;
use sqlx::PgConnection;

use crate::pg_schema::{backend, cell, now, require};

/// Records a pending gate; a gate already recorded is left as it is.
pub(crate) async fn open(
    conn: &mut PgConnection,
    id: &str,
    gate: &OpenGate<'_>,
) -> Result<(), StoreError> {
    require(conn, id, true).await?;
    sqlx::query(
        "INSERT INTO gates (session_id, gate_id, position, name, kind, payload, opened_at) \
         SELECT $1, $2, COALESCE(MAX(position), 0) + 1, $3, $4, $5, $6 \
         FROM gates WHERE session_id = $1 \
         ON CONFLICT (session_id, gate_id) DO NOTHING",
    )
    .bind(id)
    .bind(gate.id)
    .bind(gate.name)
    .bind(gate.kind)
    .bind(gate.payload)
    .bind(now())
    .execute(conn)
    .await
    .map_err(backend)?;
    Ok(())
}

/// How a pending gate is settled.
pub(crate) enum Settle<'a> {
    /// With the user's answer.
    Answer(&'a Value),
    /// Without one, for a reason (`expired`, `cancelled`).
    Close(&'a str),
}

/// Answers or closes a pending gate; an unknown, answered or closed one is left alone
/// and said so.
pub(crate) async fn settle(
    conn: &mut PgConnection,
    id: &str,
    gate_id: &str,
    settle: Settle<'_>,
) -> Result<GateAnswer, StoreError> {
    require(conn, id, true).await?;
    let row: Option<(bool, bool)> = sqlx::query_as(
        "SELECT answer IS NOT NULL, closed IS NOT NULL FROM gates \
         WHERE session_id = $1 AND gate_id = $2",
    )
    .bind(id)
    .bind(gate_id)
    .fetch_optional(&mut *conn)
    .await
    .map_err(backend)?;
    match row {
        None => return Ok(GateAnswer::Unknown),
        Some((true, _)) => return Ok(GateAnswer::AlreadyAnswered),
        Some((false, true)) => return Ok(GateAnswer::Closed),
        Some((false, false)) => {}
    }
    let query = match settle {
        Settle::Answer(answer) => sqlx::query(
            "UPDATE gates SET answer = $3, answered_at = $4 \
             WHERE session_id = $1 AND gate_id = $2",
        )
        .bind(id)
        .bind(gate_id)
        .bind(answer),
        Settle::Close(reason) => sqlx::query(
            "UPDATE gates SET closed = $3, closed_at = $4 WHERE session_id = $1 AND gate_id = $2",
        )
        .bind(id)
        .bind(gate_id)
        .bind(reason),
    };
    query.bind(now()).execute(conn).await.map_err(backend)?;
    Ok(GateAnswer::Accepted)
}

/// Every gate of the session, in the order they opened.
pub(crate) async fn list(conn: &mut PgConnection, id: &str) -> Result<Vec<StoredGate>, StoreError> {
    require(conn, id, false).await?;
    let rows = sqlx::query(
        "SELECT gate_id, name, kind, payload, opened_at, answer, answered_at, closed FROM gates \
         WHERE session_id = $1 ORDER BY position",
    )
    .bind(id)
    .fetch_all(conn)
    .await
    .map_err(backend)?;
    rows.iter()
        .map(|row| {
            let gate_id: String = cell(row, "gate_id", &format!("session {id:?}, a gate"))?;
            let what = format!("session {id:?}, gate {gate_id:?}");
            Ok(StoredGate {
                name: cell(row, "name", &what)?,
                kind: cell(row, "kind", &what)?,
                payload: cell(row, "payload", &what)?,
                opened_at: cell(row, "opened_at", &what)?,
                answer: cell(row, "answer", &what)?,
                answered_at: cell(row, "answered_at", &what)?,
                closed: cell(row, "closed", &what)?,
                id: gate_id,
            })
        })
        .collect()
}
