//! Setting sessions' status in bulk: the status changes queued together in a batch of the
//! group commit (`group_commit.rs`) are stored by one multi-row update per piece instead
//! of one statement each.
//!
//! Changes to one session in the same run are folded first, as if applied one after the
//! other: its last status, and the last stage named (a change without a stage keeps the
//! one stored). A change to an unknown session is refused on its own. On PostgreSQL the
//! rows are locked in the order of their ids first, as the event counters are
//! (`event_rows.rs`), so two instances' batches never wait on each other in a cycle.

use std::collections::{HashMap, HashSet};

use agent_runtime::sessions::{SessionStatus, StoreError};

use crate::sql::bulk::{fetch_for_keys, pieces, placeholders};
use crate::sql::{Bind, Sql, store_error};

/// A status change: the session, its new status and, when it changes too, its stage.
pub(crate) type StatusChange = (String, SessionStatus, Option<String>);

/// Applies `changes` in order, answering each `Ok`, or [`StoreError::NotFound`] for an
/// unknown session (nothing written for it).
pub(crate) async fn update_statuses<D: Sql>(
    conn: &mut D::Connection,
    changes: Vec<&StatusChange>,
) -> Result<Vec<Result<(), StoreError>>, StoreError> {
    let rows = folded(&changes);
    if D::LOCKS_ROWS {
        let mut ids: Vec<&str> = rows.iter().map(|(id, ..)| *id).collect();
        ids.sort_unstable();
        fetch_for_keys::<D>(conn, &ids, |list| {
            format!("SELECT id FROM sessions WHERE id IN ({list}) ORDER BY id FOR UPDATE")
        })
        .await
        .map_err(store_error::<D>)?;
    }
    let now = D::now();
    let mut updated = HashSet::with_capacity(rows.len());
    for piece in pieces(&rows) {
        let values = placeholders::<D>(piece.len(), 3);
        // After the rows' parameters, as it is bound.
        let at = D::param(piece.len() * 3 + 1);
        let query = format!(
            "WITH changed (id, status, stage) AS (VALUES {values}) \
             UPDATE sessions SET status = changed.status, \
             stage = COALESCE(changed.stage, sessions.stage), updated_at = {at} \
             FROM changed WHERE sessions.id = changed.id RETURNING sessions.id"
        );
        let found = piece
            .iter()
            .fold(Bind::<D>::new(&query), |bind, (id, status, stage)| {
                bind.text(id).text(status.as_str()).opt_text(*stage)
            })
            .time(now)
            .fetch_all(conn)
            .await
            .map_err(store_error::<D>)?;
        for row in &found {
            updated.insert(D::text(row, "id").map_err(store_error::<D>)?);
        }
    }
    Ok(changes
        .iter()
        .map(|(id, ..)| match updated.contains(id) {
            true => Ok(()),
            false => Err(StoreError::NotFound(id.clone())),
        })
        .collect())
}

/// One row per session, in the order of their first change: what applying its changes
/// one after the other leaves.
fn folded<'a>(changes: &[&'a StatusChange]) -> Vec<(&'a str, SessionStatus, Option<&'a str>)> {
    let mut rows: Vec<(&str, SessionStatus, Option<&str>)> = Vec::with_capacity(changes.len());
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(changes.len());
    for (id, status, stage) in changes {
        match index.get(id.as_str()) {
            Some(&at) => {
                let row = &mut rows[at];
                row.1 = *status;
                if let Some(stage) = stage {
                    row.2 = Some(stage);
                }
            }
            None => {
                index.insert(id, rows.len());
                rows.push((id, *status, stage.as_deref()));
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_to_one_session_fold_to_its_last_status_and_last_stage_named() {
        let changes: Vec<StatusChange> = vec![
            ("a".into(), SessionStatus::Running, Some("intake".into())),
            ("b".into(), SessionStatus::Running, None),
            ("a".into(), SessionStatus::Waiting, None),
            ("b".into(), SessionStatus::Running, Some("research".into())),
            ("a".into(), SessionStatus::Running, None),
        ];
        let refs: Vec<&StatusChange> = changes.iter().collect();
        assert_eq!(
            folded(&refs),
            [
                ("a", SessionStatus::Running, Some("intake")),
                ("b", SessionStatus::Running, Some("research")),
            ]
        );
    }
}
