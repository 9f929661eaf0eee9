//! Appending events in bulk: the events queued together in a batch of the group commit
//! (`group_commit.rs`) are numbered and stored by a handful of multi-row statements
//! instead of two statements each.
//!
//! For a run of appends: one read of the sessions' counters (`last_event`, their rows
//! locked on PostgreSQL), the numbers given in Rust in the order the appends were queued
//! (two appends to one session get consecutive numbers), one multi-row insert of the
//! events and one update of the counters. An append to an unknown session is refused on
//! its own. Statements are cut in pieces of a few fixed sizes (`sql::bulk`), so each
//! database prepares a handful of statement shapes, not one per batch size.

use std::collections::HashMap;

use agent_runtime::sessions::StoreError;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::sql::bulk::{fetch_for_keys, pieces, placeholders};
use crate::sql::{Bind, Cells, Sql, sql_number, store_error};

/// An event to append: its session and itself.
pub(crate) type Append = (String, Value);

/// Numbers and stores `appends` in order, answering each its number, or
/// [`StoreError::NotFound`] for an unknown session (nothing written for it).
pub(crate) async fn insert_events<D: Sql>(
    conn: &mut D::Connection,
    appends: Vec<&Append>,
) -> Result<Vec<Result<u64, StoreError>>, StoreError> {
    let mut ids: Vec<&str> = appends.iter().map(|(id, _)| id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut last = counters::<D>(conn, &ids).await?;

    let mut outcomes = Vec::with_capacity(appends.len());
    let mut rows: Vec<(&str, i64, &Value)> = Vec::with_capacity(appends.len());
    for (id, event) in &appends {
        match last.get_mut(id.as_str()) {
            Some(seq) => {
                *seq += 1;
                rows.push((id.as_str(), sql_number(*seq), event));
                outcomes.push(Ok(*seq));
            }
            None => outcomes.push(Err(StoreError::NotFound(id.clone()))),
        }
    }
    let at = D::now();
    for piece in pieces(&rows) {
        insert_piece::<D>(conn, piece, at).await?;
    }
    let moved: Vec<(&str, i64)> = ids
        .iter()
        .filter_map(|id| Some((*id, sql_number(*last.get(id)?))))
        .collect();
    for piece in pieces(&moved) {
        update_piece::<D>(conn, piece).await?;
    }
    Ok(outcomes)
}

/// The event counters of the sessions `ids` (sorted) that exist, their rows locked where
/// the database locks rows.
async fn counters<'a, D: Sql>(
    conn: &mut D::Connection,
    ids: &[&'a str],
) -> Result<HashMap<&'a str, u64>, StoreError> {
    let lock = if D::LOCKS_ROWS { " FOR UPDATE" } else { "" };
    let rows = fetch_for_keys::<D>(conn, ids, |list| {
        format!("SELECT id, last_event FROM sessions WHERE id IN ({list}) ORDER BY id{lock}")
    })
    .await
    .map_err(store_error::<D>)?;
    let mut last = HashMap::with_capacity(ids.len());
    for row in &rows {
        let cells = Cells::<D>::new(row, "a session's event counter".to_owned());
        let id = cells.text("id")?;
        let seq = cells.number("last_event")?;
        if let Ok(known) = ids.binary_search(&id.as_str()) {
            last.insert(ids[known], seq);
        }
    }
    Ok(last)
}

async fn insert_piece<D: Sql>(
    conn: &mut D::Connection,
    rows: &[(&str, i64, &Value)],
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let values = placeholders(rows.len(), 4, |n| {
        format!("(${}, ${}, ${}, ${})", n[0], n[1], n[2], n[3])
    });
    let query = format!("INSERT INTO events (session_id, seq, event, at) VALUES {values}");
    rows.iter()
        .fold(Bind::<D>::new(&query), |bind, (id, seq, event)| {
            bind.text(id).int(*seq).json(event).time(at)
        })
        .execute(conn)
        .await
        .map_err(store_error::<D>)?;
    Ok(())
}

async fn update_piece<D: Sql>(
    conn: &mut D::Connection,
    counters: &[(&str, i64)],
) -> Result<(), StoreError> {
    let values = placeholders(counters.len(), 2, |n| {
        format!("(${}, CAST(${} AS BIGINT))", n[0], n[1])
    });
    let query = format!(
        "WITH moved (id, seq) AS (VALUES {values}) \
         UPDATE sessions SET last_event = moved.seq FROM moved WHERE sessions.id = moved.id"
    );
    counters
        .iter()
        .fold(Bind::<D>::new(&query), |bind, (id, seq)| {
            bind.text(id).int(*seq)
        })
        .execute(conn)
        .await
        .map_err(store_error::<D>)?;
    Ok(())
}
