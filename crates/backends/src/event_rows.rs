//! Appending events in bulk: the events queued together in a batch of the group commit
//! (`group_commit.rs`) are numbered and stored by a handful of multi-row statements
//! instead of two statements each.
//!
//! For a run of appends: one read of the sessions' last event numbers (the highest `seq`
//! each has stored; on PostgreSQL their rows are locked first, by a statement of its own),
//! the numbers given in Rust in the order the appends were queued (two appends to one
//! session get consecutive numbers) and one multi-row insert of the events. The session's
//! row is not written (ADR 0023): its number is read from its events, at the end of the
//! primary key the insert goes to. An append to an unknown session is refused on its own.
//! Statements are cut in pieces of fixed sizes (`sql::bulk`), so each database prepares a
//! handful of statement shapes, not one per batch size.

use std::collections::HashMap;

use agent_runtime::sessions::StoreError;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::sql::bulk::{fetch_for_keys, pieces, placeholders};
use crate::sql::{Bind, Cells, Sql, sql_number, store_error};

/// The number of session `s`'s last stored event (0 for none), for a statement over
/// `sessions s`: the end of the events' primary key, one index seek.
pub(crate) const LAST_EVENT: &str =
    "COALESCE((SELECT MAX(e.seq) FROM events e WHERE e.session_id = s.id), 0)";

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
    let mut last = last_numbers::<D>(conn, &ids).await?;

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
    Ok(outcomes)
}

/// The number of the last event stored for each of the sessions `ids` (sorted) that
/// exist (0 for none yet). Where the database locks rows, the sessions' rows are locked
/// first, in id order, and the numbers read by a later statement: under PostgreSQL's read
/// committed, a statement's snapshot is taken when it starts, so only one started after
/// the locks were granted sees what the writers it waited for committed. (SQLite's write
/// transaction holds the whole database.)
async fn last_numbers<'a, D: Sql>(
    conn: &mut D::Connection,
    ids: &[&'a str],
) -> Result<HashMap<&'a str, u64>, StoreError> {
    if D::LOCKS_ROWS {
        fetch_for_keys::<D>(conn, ids, |list| {
            format!("SELECT id FROM sessions WHERE id IN ({list}) ORDER BY id FOR UPDATE")
        })
        .await
        .map_err(store_error::<D>)?;
    }
    let rows = fetch_for_keys::<D>(conn, ids, |list| {
        format!("SELECT s.id, {LAST_EVENT} AS last_event FROM sessions s WHERE s.id IN ({list})")
    })
    .await
    .map_err(store_error::<D>)?;
    let mut last = HashMap::with_capacity(ids.len());
    for row in &rows {
        let cells = Cells::<D>::new(row, "a session's last event number".to_owned());
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
    let values = placeholders::<D>(rows.len(), 4);
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
