//! The gate queries of the SQLite session store, each run inside the caller's
//! transaction.

use agent_runtime::sessions::{GateAnswer, OpenGate, StoreError, StoredGate};
use serde_json::Value;
use sqlx::SqliteConnection;

use crate::sqlite_rows::{Cells, backend, json_text, now, require};
use crate::sqlite_schema::timestamp;

/// Records a pending gate; a gate already recorded is left as it is.
pub(crate) async fn open(
    conn: &mut SqliteConnection,
    id: &str,
    gate: &OpenGate<'_>,
) -> Result<(), StoreError> {
    let payload = json_text(gate.payload)?;
    require(conn, id).await?;
    sqlx::query(
        "INSERT INTO gates (session_id, gate_id, position, name, kind, payload, opened_at) \
         SELECT ?1, ?2, COALESCE(MAX(position), 0) + 1, ?3, ?4, ?5, ?6 \
         FROM gates WHERE session_id = ?1 \
         ON CONFLICT (session_id, gate_id) DO NOTHING",
    )
    .bind(id)
    .bind(gate.id)
    .bind(gate.name)
    .bind(gate.kind)
    .bind(payload)
    .bind(timestamp(now()))
    .execute(conn)
    .await
    .map_err(backend)?;
    Ok(())
}

/// Whether the gate is unknown, answered, closed, or pending.
async fn state_of(
    conn: &mut SqliteConnection,
    id: &str,
    gate_id: &str,
) -> Result<Option<GateAnswer>, StoreError> {
    require(conn, id).await?;
    let row: Option<(bool, bool)> = sqlx::query_as(
        "SELECT answer IS NOT NULL, closed IS NOT NULL FROM gates \
         WHERE session_id = ?1 AND gate_id = ?2",
    )
    .bind(id)
    .bind(gate_id)
    .fetch_optional(&mut *conn)
    .await
    .map_err(backend)?;
    Ok(match row {
        None => Some(GateAnswer::Unknown),
        Some((true, _)) => Some(GateAnswer::AlreadyAnswered),
        Some((false, true)) => Some(GateAnswer::Closed),
        Some((false, false)) => None,
    })
}

/// Records the answer of a pending gate.
pub(crate) async fn answer(
    conn: &mut SqliteConnection,
    id: &str,
    gate_id: &str,
    answer: &Value,
) -> Result<GateAnswer, StoreError> {
    let answer = json_text(answer)?;
    if let Some(refused) = state_of(conn, id, gate_id).await? {
        return Ok(refused);
    }
    sqlx::query(
        "UPDATE gates SET answer = ?3, answered_at = ?4 WHERE session_id = ?1 AND gate_id = ?2",
    )
    .bind(id)
    .bind(gate_id)
    .bind(answer)
    .bind(timestamp(now()))
    .execute(conn)
    .await
    .map_err(backend)?;
    Ok(GateAnswer::Accepted)
}

/// Closes a pending gate without an answer.
pub(crate) async fn close(
    conn: &mut SqliteConnection,
    id: &str,
    gate_id: &str,
    reason: &str,
) -> Result<GateAnswer, StoreError> {
    if let Some(refused) = state_of(conn, id, gate_id).await? {
        return Ok(refused);
    }
    sqlx::query(
        "UPDATE gates SET closed = ?3, closed_at = ?4 WHERE session_id = ?1 AND gate_id = ?2",
    )
    .bind(id)
    .bind(gate_id)
    .bind(reason)
    .bind(timestamp(now()))
    .execute(conn)
    .await
    .map_err(backend)?;
    Ok(GateAnswer::Accepted)
}

/// Every gate of the session, in the order they opened.
pub(crate) async fn list(
    conn: &mut SqliteConnection,
    id: &str,
) -> Result<Vec<StoredGate>, StoreError> {
    require(conn, id).await?;
    let rows = sqlx::query(
        "SELECT gate_id, name, kind, payload, opened_at, answer, answered_at, closed FROM gates \
         WHERE session_id = ?1 ORDER BY position",
    )
    .bind(id)
    .fetch_all(conn)
    .await
    .map_err(backend)?;
    rows.iter()
        .map(|row| {
            let gate_id = Cells::new(row, format!("session {id:?}, a gate")).text("gate_id")?;
            let cells = Cells::new(row, format!("session {id:?}, gate {gate_id:?}"));
            let name = cells.text("name")?;
            Ok(StoredGate {
                kind: cells.opt_text("kind")?.unwrap_or_else(|| name.clone()),
                name,
                payload: cells.json("payload")?,
                opened_at: cells.time("opened_at")?,
                answer: cells.opt_json("answer")?,
                answered_at: cells.opt_time("answered_at")?,
                closed: cells.opt_text("closed")?,
                id: gate_id,
            })
        })
        .collect()
}
