//! The gate queries of the session store, written once for SQLite and PostgreSQL, each
//! run inside the caller's write transaction after holding the session (its row on
//! PostgreSQL, the database on SQLite), so two writers settling the same gate take turns
//! and exactly one answer is accepted.

use agent_runtime::sessions::{GateAnswer, OpenGate, StoreError, StoredGate};
use serde_json::Value;

use crate::session_tables::require;
use crate::sql::{Bind, Cells, Sql, store_error};

/// Records a pending gate; a gate already recorded is left as it is.
pub(crate) async fn open<D: Sql>(
    conn: &mut D::Connection,
    id: &str,
    gate: &OpenGate<'_>,
) -> Result<(), StoreError> {
    require::<D>(conn, id, true).await?;
    Bind::<D>::new(
        "INSERT INTO gates (session_id, gate_id, position, name, kind, payload, opened_at) \
         SELECT $1, $2, COALESCE(MAX(position), 0) + 1, $3, $4, $5, $6 \
         FROM gates WHERE session_id = $1 \
         ON CONFLICT (session_id, gate_id) DO NOTHING",
    )
    .text(id)
    .text(gate.id)
    .text(gate.name)
    .text(gate.kind)
    .json(gate.payload)
    .time(D::now())
    .execute(conn)
    .await
    .map_err(store_error::<D>)?;
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
pub(crate) async fn settle<D: Sql>(
    conn: &mut D::Connection,
    id: &str,
    gate_id: &str,
    settle: Settle<'_>,
) -> Result<GateAnswer, StoreError> {
    require::<D>(conn, id, true).await?;
    let row = Bind::<D>::new(
        "SELECT answer IS NOT NULL AS answered, closed IS NOT NULL AS closed FROM gates \
         WHERE session_id = $1 AND gate_id = $2",
    )
    .text(id)
    .text(gate_id)
    .fetch_optional(&mut *conn)
    .await
    .map_err(store_error::<D>)?;
    let Some(row) = row else {
        return Ok(GateAnswer::Unknown);
    };
    let cells = Cells::<D>::new(&row, format!("session {id:?}, gate {gate_id:?}"));
    let flag = |column| D::flag(&row, column).map_err(|e| cells.corrupt(column, e));
    if flag("answered")? {
        return Ok(GateAnswer::AlreadyAnswered);
    }
    if flag("closed")? {
        return Ok(GateAnswer::Closed);
    }
    let update = match settle {
        Settle::Answer(answer) => Bind::<D>::new(
            "UPDATE gates SET answer = $3, answered_at = $4 \
             WHERE session_id = $1 AND gate_id = $2",
        )
        .text(id)
        .text(gate_id)
        .json(answer),
        Settle::Close(reason) => Bind::<D>::new(
            "UPDATE gates SET closed = $3, closed_at = $4 WHERE session_id = $1 AND gate_id = $2",
        )
        .text(id)
        .text(gate_id)
        .text(reason),
    };
    update
        .time(D::now())
        .execute(conn)
        .await
        .map_err(store_error::<D>)?;
    Ok(GateAnswer::Accepted)
}

/// Every gate of the session, in the order they opened.
pub(crate) async fn list<D: Sql>(
    conn: &mut D::Connection,
    id: &str,
) -> Result<Vec<StoredGate>, StoreError> {
    require::<D>(conn, id, false).await?;
    let rows = Bind::<D>::new(
        "SELECT gate_id, name, kind, payload, opened_at, answer, answered_at, closed FROM gates \
         WHERE session_id = $1 ORDER BY position",
    )
    .text(id)
    .fetch_all(conn)
    .await
    .map_err(store_error::<D>)?;
    rows.iter()
        .map(|row| {
            let gate_id =
                Cells::<D>::new(row, format!("session {id:?}, a gate")).text("gate_id")?;
            let cells = Cells::<D>::new(row, format!("session {id:?}, gate {gate_id:?}"));
            Ok(StoredGate {
                name: cells.text("name")?,
                kind: cells.text("kind")?,
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
