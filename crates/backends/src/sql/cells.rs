//! Reading a stored row's cells, naming what was being read when one is unreadable.

use agent_runtime::sessions::StoreError;
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::Sql;

/// The cells of one row of database `D`, read as a store's values.
pub(crate) struct Cells<'r, D: Sql> {
    row: &'r D::Row,
    /// `session "s1"` or `session "s1", event 3`, for messages.
    what: String,
}

impl<'r, D: Sql> Cells<'r, D> {
    /// The cells of `row`, which holds `what`.
    pub(crate) fn new(row: &'r D::Row, what: String) -> Self {
        Cells { row, what }
    }

    /// A corrupt-data error naming the row and `column`.
    pub(crate) fn corrupt(&self, column: &str, detail: impl std::fmt::Display) -> StoreError {
        StoreError::Corrupt(format!("{}, column {column}: {detail}", self.what))
    }

    /// A text cell.
    pub(crate) fn text(&self, column: &str) -> Result<String, StoreError> {
        D::text(self.row, column).map_err(|e| self.corrupt(column, e))
    }

    /// A text cell that may be `NULL`.
    pub(crate) fn opt_text(&self, column: &str) -> Result<Option<String>, StoreError> {
        D::opt_text(self.row, column).map_err(|e| self.corrupt(column, e))
    }

    /// A JSON cell.
    pub(crate) fn json(&self, column: &str) -> Result<Value, StoreError> {
        D::read_json(self.row, column).map_err(|e| self.corrupt(column, e))
    }

    /// A JSON cell that may be `NULL`.
    pub(crate) fn opt_json(&self, column: &str) -> Result<Option<Value>, StoreError> {
        D::read_opt_json(self.row, column).map_err(|e| self.corrupt(column, e))
    }

    /// A time cell.
    pub(crate) fn time(&self, column: &str) -> Result<DateTime<Utc>, StoreError> {
        D::read_time(self.row, column).map_err(|e| self.corrupt(column, e))
    }

    /// A time cell that may be `NULL`.
    pub(crate) fn opt_time(&self, column: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        D::read_opt_time(self.row, column).map_err(|e| self.corrupt(column, e))
    }

    /// A count or sequence number: an integer no smaller than zero.
    pub(crate) fn number(&self, column: &str) -> Result<u64, StoreError> {
        let n = D::int(self.row, column).map_err(|e| self.corrupt(column, e))?;
        u64::try_from(n).map_err(|_| self.corrupt(column, format!("negative number {n}")))
    }
}
