//! PostgreSQL's dialect: times as `TIMESTAMPTZ`, JSON as `JSONB`, writers of one key
//! ordered by a transaction-scoped advisory lock, and every commit durable already.

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde_json::Value;
use sqlx::postgres::{PgQueryResult, PgRow};
use sqlx::{PgConnection, Postgres, Row};

use super::{CellError, Dialect, Statement, SyncMode};

impl Dialect for Postgres {
    const BEGIN_WRITE: &'static str = "BEGIN";
    const LOCKS_ROWS: bool = true;

    fn param(n: usize) -> String {
        format!("${n}")
    }

    fn now() -> DateTime<Utc> {
        crate::pg_schema::now()
    }

    fn bind_time(query: Statement<'_, Self>, at: DateTime<Utc>) -> Statement<'_, Self> {
        query.bind(at)
    }

    fn bind_json<'q>(query: Statement<'q, Self>, value: &'q Value) -> Statement<'q, Self> {
        query.bind(value)
    }

    fn bind_embedding<'q>(query: Statement<'q, Self>, vector: &[f32]) -> Statement<'q, Self> {
        let items: Vec<String> = vector.iter().map(f32::to_string).collect();
        query.bind(format!("[{}]", items.join(",")))
    }

    fn read_opt_time(row: &PgRow, column: &str) -> Result<Option<DateTime<Utc>>, CellError> {
        Ok(row.try_get(column)?)
    }

    fn read_opt_json(row: &PgRow, column: &str) -> Result<Option<Value>, CellError> {
        Ok(row.try_get(column)?)
    }

    fn rows_affected(done: &PgQueryResult) -> u64 {
        done.rows_affected()
    }

    fn lock_key<'c>(
        conn: &'c mut PgConnection,
        key: &'c str,
    ) -> BoxFuture<'c, Result<(), sqlx::Error>> {
        Box::pin(async move {
            sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                .bind(key)
                .execute(conn)
                .await
                .map(drop)
        })
    }

    fn sync_commits(_conn: &mut PgConnection) -> BoxFuture<'_, Result<SyncMode, sqlx::Error>> {
        Box::pin(std::future::ready(Ok(SyncMode(0))))
    }

    fn restore_sync(_conn: &mut PgConnection, _mode: SyncMode) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}
