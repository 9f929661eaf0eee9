//! What the SQLite and PostgreSQL stores share: statements written once (both databases
//! take `$n` parameters), bound and read through one small interface, so a store's logic
//! is written once and runs on either.
//!
//! A [`Dialect`] says what differs between the two databases: how a time and a JSON value
//! are stored, how a write transaction starts, what makes a commit survive a crash. [`Sql`]
//! is every database that has a dialect, with the bounds sqlx asks for said once, on its
//! blanket implementation; the shared stores are generic over it and never name a sqlx
//! bound themselves.

pub(crate) mod bulk;
mod cells;
mod sqlite;

pub(crate) use cells::Cells;

#[cfg(feature = "postgres")]
mod postgres;

use agent_runtime::checkpoint::CheckpointError;
use agent_runtime::sessions::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde_json::Value;
use sqlx::query::Query;
use sqlx::{
    ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Transaction, Type,
};

/// A statement of database `D` with its parameters bound so far.
pub(crate) type Statement<'q, D> = Query<'q, D, <D as Database>::Arguments<'q>>;

/// How a connection syncs its commits, to be put back after a durable write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SyncMode(pub(crate) i64);

/// A JSON or time cell that holds something other than JSON or a time.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CellError {
    /// The database could not hand the cell out.
    #[error(transparent)]
    Read(#[from] sqlx::Error),
    /// The cell's text is not what it should hold.
    #[error("{0}")]
    Invalid(String),
}

/// What differs between the databases the stores run on.
pub(crate) trait Dialect: Database {
    /// The statement that starts a transaction that will write: it takes the write lock
    /// at once on SQLite, so two writers never deadlock upgrading read locks.
    const BEGIN_WRITE: &'static str;

    /// Whether a transaction must lock the rows it reads to keep other writers off them
    /// (`SELECT ... FOR UPDATE`); SQLite's write transaction holds the whole database.
    const LOCKS_ROWS: bool;

    /// How a statement names its `n`-th parameter (from 1): `$n` on PostgreSQL, an
    /// anonymous `?` on SQLite. A statement written with anonymous parameters binds them
    /// in the order they appear, so each must appear once, in the order bound. sqlx binds
    /// a numbered SQLite parameter by asking SQLite its name, a search through all of
    /// them: quadratic on a many-row insert.
    fn param(n: usize) -> String;

    /// Now, as precisely as the database keeps times, so a time handed out reads back
    /// equal.
    fn now() -> DateTime<Utc>;

    /// Binds a time as the database stores times.
    fn bind_time(query: Statement<'_, Self>, at: DateTime<Utc>) -> Statement<'_, Self>;

    /// Binds a JSON value as the database stores JSON.
    fn bind_json<'q>(query: Statement<'q, Self>, value: &'q Value) -> Statement<'q, Self>;

    /// Binds an embedding as the database stores vectors: little-endian `f32` bytes on
    /// SQLite, pgvector's text form on PostgreSQL (which the statement casts).
    fn bind_embedding<'q>(query: Statement<'q, Self>, vector: &[f32]) -> Statement<'q, Self>;

    /// Reads a time cell that may be `NULL`.
    fn read_opt_time(row: &Self::Row, column: &str) -> Result<Option<DateTime<Utc>>, CellError>;

    /// Reads a JSON cell that may be `NULL`.
    fn read_opt_json(row: &Self::Row, column: &str) -> Result<Option<Value>, CellError>;

    /// Reads a time cell.
    fn read_time(row: &Self::Row, column: &str) -> Result<DateTime<Utc>, CellError> {
        Self::read_opt_time(row, column)?.ok_or_else(|| CellError::Invalid("NULL".to_owned()))
    }

    /// Reads a JSON cell.
    fn read_json(row: &Self::Row, column: &str) -> Result<Value, CellError> {
        Self::read_opt_json(row, column)?.ok_or_else(|| CellError::Invalid("NULL".to_owned()))
    }

    /// How many rows a statement inserted, changed or deleted.
    fn rows_affected(done: &Self::QueryResult) -> u64;

    /// Holds the transaction on `conn` as the only writer of `key` until it ends (SQLite's
    /// write transactions already exclude every other writer).
    fn lock_key<'c>(
        conn: &'c mut Self::Connection,
        key: &'c str,
    ) -> BoxFuture<'c, Result<(), sqlx::Error>>;

    /// Makes the commits on `conn` reach the disk before they return, until
    /// [`restore_sync`](Self::restore_sync) puts back the mode this returns.
    fn sync_commits(conn: &mut Self::Connection) -> BoxFuture<'_, Result<SyncMode, sqlx::Error>>;

    /// Puts back how `conn` synced its commits before [`sync_commits`](Self::sync_commits).
    fn restore_sync(conn: &mut Self::Connection, mode: SyncMode) -> BoxFuture<'_, ()>;
}

/// A database the shared stores run on: binding, running and reading through these, the
/// stores' code holds for both databases without naming sqlx's bounds.
pub(crate) trait Sql: Dialect {
    /// Binds an integer.
    fn bind_int(query: Statement<'_, Self>, value: i64) -> Statement<'_, Self>;
    /// Binds a text.
    fn bind_text<'q>(query: Statement<'q, Self>, value: &'q str) -> Statement<'q, Self>;
    /// Binds a text or `NULL`.
    fn bind_opt_text<'q>(query: Statement<'q, Self>, value: Option<&'q str>)
    -> Statement<'q, Self>;
    /// Binds a boolean.
    fn bind_flag(query: Statement<'_, Self>, value: bool) -> Statement<'_, Self>;

    /// Runs a statement, answering how many rows it touched.
    fn execute<'c, 'q: 'c>(
        conn: &'c mut Self::Connection,
        query: Statement<'q, Self>,
    ) -> BoxFuture<'c, Result<u64, sqlx::Error>>;
    /// Runs a query, answering all its rows.
    fn fetch_all<'c, 'q: 'c>(
        conn: &'c mut Self::Connection,
        query: Statement<'q, Self>,
    ) -> BoxFuture<'c, Result<Vec<Self::Row>, sqlx::Error>>;
    /// Runs a query, answering its first row if it has one.
    fn fetch_optional<'c, 'q: 'c>(
        conn: &'c mut Self::Connection,
        query: Statement<'q, Self>,
    ) -> BoxFuture<'c, Result<Option<Self::Row>, sqlx::Error>>;

    /// Reads an integer cell.
    fn int(row: &Self::Row, column: &str) -> Result<i64, sqlx::Error>;
    /// Reads a text cell.
    fn text(row: &Self::Row, column: &str) -> Result<String, sqlx::Error>;
    /// Reads a text cell that may be `NULL`.
    fn opt_text(row: &Self::Row, column: &str) -> Result<Option<String>, sqlx::Error>;
    /// Reads a boolean cell.
    fn flag(row: &Self::Row, column: &str) -> Result<bool, sqlx::Error>;

    /// Starts a transaction that will write (see [`Dialect::BEGIN_WRITE`]).
    fn begin_write(
        pool: &Pool<Self>,
    ) -> BoxFuture<'_, Result<Transaction<'static, Self>, sqlx::Error>> {
        Box::pin(pool.begin_with(Self::BEGIN_WRITE))
    }
}

impl<D> Sql for D
where
    D: Dialect,
    for<'c> &'c mut D::Connection: Executor<'c, Database = D>,
    for<'q> D::Arguments<'q>: IntoArguments<'q, D>,
    for<'q> i64: Encode<'q, D> + Decode<'q, D> + Type<D>,
    for<'q> bool: Encode<'q, D> + Decode<'q, D> + Type<D>,
    for<'q> String: Decode<'q, D> + Type<D>,
    for<'q> &'q str: Encode<'q, D> + Type<D>,
    for<'q> Option<&'q str>: Encode<'q, D>,
    for<'c> &'c str: ColumnIndex<D::Row>,
{
    fn bind_int(query: Statement<'_, Self>, value: i64) -> Statement<'_, Self> {
        query.bind(value)
    }

    fn bind_text<'q>(query: Statement<'q, Self>, value: &'q str) -> Statement<'q, Self> {
        query.bind(value)
    }

    fn bind_opt_text<'q>(
        query: Statement<'q, Self>,
        value: Option<&'q str>,
    ) -> Statement<'q, Self> {
        query.bind(value)
    }

    fn bind_flag(query: Statement<'_, Self>, value: bool) -> Statement<'_, Self> {
        query.bind(value)
    }

    fn execute<'c, 'q: 'c>(
        conn: &'c mut Self::Connection,
        query: Statement<'q, Self>,
    ) -> BoxFuture<'c, Result<u64, sqlx::Error>> {
        let done = query.execute(conn);
        Box::pin(async move { Ok(D::rows_affected(&done.await?)) })
    }

    fn fetch_all<'c, 'q: 'c>(
        conn: &'c mut Self::Connection,
        query: Statement<'q, Self>,
    ) -> BoxFuture<'c, Result<Vec<Self::Row>, sqlx::Error>> {
        Box::pin(query.fetch_all(conn))
    }

    fn fetch_optional<'c, 'q: 'c>(
        conn: &'c mut Self::Connection,
        query: Statement<'q, Self>,
    ) -> BoxFuture<'c, Result<Option<Self::Row>, sqlx::Error>> {
        Box::pin(query.fetch_optional(conn))
    }

    fn int(row: &Self::Row, column: &str) -> Result<i64, sqlx::Error> {
        sqlx::Row::try_get(row, column)
    }

    fn text(row: &Self::Row, column: &str) -> Result<String, sqlx::Error> {
        sqlx::Row::try_get(row, column)
    }

    fn opt_text(row: &Self::Row, column: &str) -> Result<Option<String>, sqlx::Error> {
        sqlx::Row::try_get(row, column)
    }

    fn flag(row: &Self::Row, column: &str) -> Result<bool, sqlx::Error> {
        sqlx::Row::try_get(row, column)
    }
}

/// A count or number kept as the databases' 64-bit integers (saturating).
pub(crate) fn sql_number(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A failure of database `D` as a store error.
pub(crate) fn store_error<D: Dialect>(error: sqlx::Error) -> StoreError {
    StoreError::Backend(format!("{}: {error}", D::NAME))
}

/// A failure of database `D` as a checkpoint store error.
pub(crate) fn checkpoint_error<D: Dialect>(error: sqlx::Error) -> CheckpointError {
    CheckpointError::Backend(format!("{} checkpoint store: {error}", D::NAME))
}

/// A statement being written: its text, then its parameters in order.
pub(crate) struct Bind<'q, D: Sql>(Statement<'q, D>);

impl<'q, D: Sql> Bind<'q, D> {
    /// The statement `sql`, its parameters still to bind.
    pub(crate) fn new(sql: &'q str) -> Self {
        Bind(sqlx::query(sql))
    }

    /// Binds the next parameter to an integer.
    pub(crate) fn int(self, value: i64) -> Self {
        Bind(D::bind_int(self.0, value))
    }

    /// Binds the next parameter to a text.
    pub(crate) fn text(self, value: &'q str) -> Self {
        Bind(D::bind_text(self.0, value))
    }

    /// Binds the next parameter to a text or `NULL`.
    pub(crate) fn opt_text(self, value: Option<&'q str>) -> Self {
        Bind(D::bind_opt_text(self.0, value))
    }

    /// Binds the next parameter to a boolean.
    pub(crate) fn flag(self, value: bool) -> Self {
        Bind(D::bind_flag(self.0, value))
    }

    /// Binds the next parameter to a time.
    pub(crate) fn time(self, at: DateTime<Utc>) -> Self {
        Bind(D::bind_time(self.0, at))
    }

    /// Binds the next parameter to a JSON value.
    pub(crate) fn json(self, value: &'q Value) -> Self {
        Bind(D::bind_json(self.0, value))
    }

    /// Binds the next parameter to an embedding.
    pub(crate) fn embedding(self, vector: &[f32]) -> Self {
        Bind(D::bind_embedding(self.0, vector))
    }

    /// Runs the statement on `conn`, answering how many rows it touched.
    pub(crate) async fn execute(self, conn: &mut D::Connection) -> Result<u64, sqlx::Error> {
        D::execute(conn, self.0).await
    }

    /// Runs the query on `conn`, answering its rows.
    pub(crate) async fn fetch_all(
        self,
        conn: &mut D::Connection,
    ) -> Result<Vec<D::Row>, sqlx::Error> {
        D::fetch_all(conn, self.0).await
    }

    /// Runs the query on `conn`, answering its first row if it has one.
    pub(crate) async fn fetch_optional(
        self,
        conn: &mut D::Connection,
    ) -> Result<Option<D::Row>, sqlx::Error> {
        D::fetch_optional(conn, self.0).await
    }
}
