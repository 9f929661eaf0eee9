//! SQLite's dialect: times as fixed-width RFC 3339 text (see
//! [`timestamp`](crate::sqlite_schema::timestamp)), JSON as text, write transactions
//! that take the write lock at once, and commits synced to disk only when asked.

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde_json::Value;
use sqlx::sqlite::{SqliteQueryResult, SqliteRow};
use sqlx::{Row, Sqlite, SqliteConnection};

use super::{CellError, Dialect, Statement, SyncMode};
use crate::sqlite_schema::timestamp;

/// SQLite's `synchronous = FULL`: every commit reaches the disk before it returns.
const SYNCHRONOUS_FULL: i64 = 2;

impl Dialect for Sqlite {
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";
    const LOCKS_ROWS: bool = false;

    fn param(_: usize) -> String {
        "?".to_owned()
    }

    fn now() -> DateTime<Utc> {
        Utc::now()
    }

    fn bind_time(query: Statement<'_, Self>, at: DateTime<Utc>) -> Statement<'_, Self> {
        query.bind(timestamp(at))
    }

    fn bind_json<'q>(query: Statement<'q, Self>, value: &'q Value) -> Statement<'q, Self> {
        query.bind(value.to_string())
    }

    fn bind_embedding<'q>(query: Statement<'q, Self>, vector: &[f32]) -> Statement<'q, Self> {
        let bytes: Vec<u8> = vector.iter().flat_map(|v| v.to_le_bytes()).collect();
        query.bind(bytes)
    }

    fn read_opt_time(row: &SqliteRow, column: &str) -> Result<Option<DateTime<Utc>>, CellError> {
        let text: Option<String> = row.try_get(column)?;
        text.map(|text| {
            DateTime::parse_from_rfc3339(&text)
                .map(|at| at.with_timezone(&Utc))
                .map_err(|e| CellError::Invalid(format!("bad timestamp {text:?}: {e}")))
        })
        .transpose()
    }

    fn read_opt_json(row: &SqliteRow, column: &str) -> Result<Option<Value>, CellError> {
        let text: Option<String> = row.try_get(column)?;
        text.map(|text| {
            serde_json::from_str(&text).map_err(|e| CellError::Invalid(format!("bad JSON: {e}")))
        })
        .transpose()
    }

    fn rows_affected(done: &SqliteQueryResult) -> u64 {
        done.rows_affected()
    }

    fn lock_key<'c>(
        _conn: &'c mut SqliteConnection,
        _key: &'c str,
    ) -> BoxFuture<'c, Result<(), sqlx::Error>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn sync_commits(conn: &mut SqliteConnection) -> BoxFuture<'_, Result<SyncMode, sqlx::Error>> {
        Box::pin(async move {
            let previous: i64 = sqlx::query_scalar("PRAGMA synchronous")
                .fetch_one(&mut *conn)
                .await?;
            if previous < SYNCHRONOUS_FULL {
                sqlx::query("PRAGMA synchronous = FULL")
                    .execute(conn)
                    .await?;
            }
            Ok(SyncMode(previous))
        })
    }

    fn restore_sync(conn: &mut SqliteConnection, mode: SyncMode) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let restore = match mode.0 {
                SYNCHRONOUS_FULL.. => return,
                0 => "PRAGMA synchronous = OFF",
                _ => "PRAGMA synchronous = NORMAL",
            };
            if let Err(error) = sqlx::query(restore).execute(conn).await {
                // The connection keeps syncing every commit: slower, still correct.
                tracing::warn!(%error, "could not restore the connection's synchronous mode");
            }
        })
    }
}
