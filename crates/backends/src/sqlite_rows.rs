//! Reading and writing the session store's rows: errors, JSON cells, timestamps, and
//! the check that a session exists. Shared by the session and gate queries.

use agent_runtime::sessions::StoreError;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::Row;
use sqlx::sqlite::{SqliteConnection, SqliteRow};

pub(crate) fn backend(error: sqlx::Error) -> StoreError {
    StoreError::Backend(error.to_string())
}

pub(crate) fn now() -> DateTime<Utc> {
    Utc::now()
}

pub(crate) fn json_text(value: &Value) -> Result<String, StoreError> {
    serde_json::to_string(value)
        .map_err(|e| StoreError::Backend(format!("encoding JSON for storage: {e}")))
}

/// `NotFound` unless the session exists.
pub(crate) async fn require(conn: &mut SqliteConnection, id: &str) -> Result<(), StoreError> {
    let found: Option<i64> = sqlx::query_scalar("SELECT 1 FROM sessions WHERE id = ?1")
        .bind(id)
        .fetch_optional(conn)
        .await
        .map_err(backend)?;
    match found {
        Some(_) => Ok(()),
        None => Err(StoreError::NotFound(id.to_owned())),
    }
}

/// Reads stored cells, naming what was being read when one is unreadable.
pub(crate) struct Cells<'a> {
    row: &'a SqliteRow,
    /// `session "s1"` or `session "s1", event 3`, for messages.
    what: String,
}

impl<'a> Cells<'a> {
    pub(crate) fn new(row: &'a SqliteRow, what: String) -> Self {
        Cells { row, what }
    }

    pub(crate) fn corrupt(&self, column: &str, detail: impl std::fmt::Display) -> StoreError {
        StoreError::Corrupt(format!("{}, column {column}: {detail}", self.what))
    }

    pub(crate) fn text(&self, column: &str) -> Result<String, StoreError> {
        self.row
            .try_get::<String, _>(column)
            .map_err(|e| self.corrupt(column, e))
    }

    pub(crate) fn opt_text(&self, column: &str) -> Result<Option<String>, StoreError> {
        self.row
            .try_get::<Option<String>, _>(column)
            .map_err(|e| self.corrupt(column, e))
    }

    pub(crate) fn json(&self, column: &str) -> Result<Value, StoreError> {
        let text = self.text(column)?;
        serde_json::from_str(&text).map_err(|e| self.corrupt(column, format!("bad JSON: {e}")))
    }

    pub(crate) fn opt_json(&self, column: &str) -> Result<Option<Value>, StoreError> {
        self.opt_text(column)?
            .map(|text| {
                serde_json::from_str(&text)
                    .map_err(|e| self.corrupt(column, format!("bad JSON: {e}")))
            })
            .transpose()
    }

    fn time_of(&self, column: &str, text: &str) -> Result<DateTime<Utc>, StoreError> {
        DateTime::parse_from_rfc3339(text)
            .map(|at| at.with_timezone(&Utc))
            .map_err(|e| self.corrupt(column, format!("bad timestamp {text:?}: {e}")))
    }

    pub(crate) fn time(&self, column: &str) -> Result<DateTime<Utc>, StoreError> {
        let text = self.text(column)?;
        self.time_of(column, &text)
    }

    pub(crate) fn opt_time(&self, column: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.opt_text(column)?
            .map(|text| self.time_of(column, &text))
            .transpose()
    }

    pub(crate) fn seq(&self, column: &str) -> Result<u64, StoreError> {
        let n = self
            .row
            .try_get::<i64, _>(column)
            .map_err(|e| self.corrupt(column, e))?;
        u64::try_from(n).map_err(|_| self.corrupt(column, format!("negative number {n}")))
    }
}
