//! Storing checkpoints in bulk: the checkpoints queued together in a batch of the group
//! commit (`group_commit.rs`) are checked and stored by a few statements instead of two
//! or three each (on SQLite every statement is a hand-off to sqlx's worker thread).
//!
//! For a run of checkpoints: each run's key held (see [`Dialect::lock_key`]), one read of
//! the runs' latest seqs, the checks made in Rust in queue order (a seq at or below the
//! run's latest is refused as out of order; a delta whose base is no longer the latest is
//! turned away to be encoded in full), and one multi-row insert of the rest.

use std::collections::HashMap;

use agent_runtime::checkpoint::CheckpointError;
use chrono::{DateTime, Utc};

use crate::sql::bulk::{fetch_for_keys, pieces, placeholders};
use crate::sql::{Bind, Sql, checkpoint_error};

/// A checkpoint encoded for storage, owned until its batch is written.
pub(crate) struct CheckpointRow {
    pub(crate) run_id: String,
    pub(crate) seq: i64,
    pub(crate) node: String,
    pub(crate) full: bool,
    /// The checkpoint a delta is based on, which must be the run's latest stored.
    pub(crate) base: Option<i64>,
    pub(crate) text: String,
    pub(crate) at: DateTime<Utc>,
}

/// What became of a checkpoint row.
pub(crate) enum Stored {
    /// It is stored.
    Written,
    /// It is a delta on a checkpoint that is no longer the run's latest: nothing written.
    BaseMoved,
}

/// Stores `rows` in queue order, each after its run's latest checkpoint (holding the
/// runs' keys until the batch commits), answering each what became of it; one at or
/// below its run's latest is refused as out of order.
pub(crate) async fn insert_checkpoints<D: Sql>(
    conn: &mut D::Connection,
    rows: Vec<&CheckpointRow>,
) -> Result<Vec<Result<Stored, CheckpointError>>, CheckpointError> {
    let mut runs: Vec<&str> = rows.iter().map(|row| row.run_id.as_str()).collect();
    runs.sort_unstable();
    runs.dedup();
    // In one order, so two writers taking several keys cannot wait on each other.
    for run_id in &runs {
        D::lock_key(conn, &format!("checkpoint {run_id}"))
            .await
            .map_err(checkpoint_error::<D>)?;
    }
    let mut latest = latest_seqs::<D>(conn, &runs).await?;

    let mut outcomes = Vec::with_capacity(rows.len());
    let mut written: Vec<&CheckpointRow> = Vec::with_capacity(rows.len());
    for row in rows {
        let run_latest = latest.get(row.run_id.as_str()).copied();
        let outcome = match run_latest {
            Some(seq) if seq >= row.seq => Err(CheckpointError::OutOfOrder {
                run_id: row.run_id.clone(),
                seq: u64::try_from(row.seq).unwrap_or_default(),
                latest: u64::try_from(seq).unwrap_or_default(),
            }),
            _ if row.base.is_some() && row.base != run_latest => Ok(Stored::BaseMoved),
            _ => {
                latest.insert(row.run_id.as_str(), row.seq);
                written.push(row);
                Ok(Stored::Written)
            }
        };
        outcomes.push(outcome);
    }
    for piece in pieces(&written) {
        insert_piece::<D>(conn, piece).await?;
    }
    Ok(outcomes)
}

/// The latest seq of each of `runs` (sorted) that has checkpoints.
async fn latest_seqs<'a, D: Sql>(
    conn: &mut D::Connection,
    runs: &[&'a str],
) -> Result<HashMap<&'a str, i64>, CheckpointError> {
    let rows = fetch_for_keys::<D>(conn, runs, |list| {
        format!(
            "SELECT run_id, MAX(seq) AS seq FROM checkpoints WHERE run_id IN ({list}) \
             GROUP BY run_id"
        )
    })
    .await
    .map_err(checkpoint_error::<D>)?;
    let mut latest = HashMap::with_capacity(runs.len());
    for row in &rows {
        let run_id = D::text(row, "run_id").map_err(checkpoint_error::<D>)?;
        let seq = D::int(row, "seq").map_err(checkpoint_error::<D>)?;
        if let Ok(known) = runs.binary_search(&run_id.as_str()) {
            latest.insert(runs[known], seq);
        }
    }
    Ok(latest)
}

async fn insert_piece<D: Sql>(
    conn: &mut D::Connection,
    rows: &[&CheckpointRow],
) -> Result<(), CheckpointError> {
    let values = placeholders::<D>(rows.len(), 6);
    let query = format!(
        "INSERT INTO checkpoints (run_id, seq, node, full_record, record, at) VALUES {values}"
    );
    rows.iter()
        .fold(Bind::<D>::new(&query), |bind, row| {
            bind.text(&row.run_id)
                .int(row.seq)
                .text(&row.node)
                .flag(row.full)
                .text(&row.text)
                .time(row.at)
        })
        .execute(conn)
        .await
        .map_err(checkpoint_error::<D>)?;
    Ok(())
}
