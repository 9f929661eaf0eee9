//! Reading a stored checkpoint back from a row, the same on every SQL store: its `seq`
//! and `record` columns, checked to hold the run and seq its columns say.

use agent_runtime::checkpoint::{CheckpointError, EncodedCheckpoint};
use sqlx::{ColumnIndex, Decode, Row, Type};

/// A corrupt-checkpoint error naming `what` in the database at `location`.
pub(crate) fn corrupt(what: String, location: &str, reason: impl Into<String>) -> CheckpointError {
    CheckpointError::Corrupt {
        ident: format!("{what} ({location})"),
        reason: reason.into(),
    }
}

/// The checkpoint record of a `seq, record` row of run `run_id`, from the database at
/// `location` (for messages).
pub(crate) fn stored_record<'r, R>(
    row: &'r R,
    run_id: &str,
    location: &str,
) -> Result<EncodedCheckpoint, CheckpointError>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    String: Decode<'r, R::Database> + Type<R::Database>,
{
    let seq: i64 = row.try_get("seq").map_err(|e| {
        corrupt(
            format!("run {run_id:?}, a checkpoint"),
            location,
            e.to_string(),
        )
    })?;
    let what = format!("run {run_id:?} seq {seq}");
    let text: String = row
        .try_get("record")
        .map_err(|e| corrupt(what.clone(), location, e.to_string()))?;
    let record = EncodedCheckpoint::from_json(&text, &format!("{what} ({location})"))?;
    if record.run_id() != run_id || i64::try_from(record.seq()).ok() != Some(seq) {
        let reason = format!(
            "the row holds run {:?} seq {}, not what its columns say",
            record.run_id(),
            record.seq()
        );
        return Err(corrupt(what, location, reason));
    }
    Ok(record)
}
