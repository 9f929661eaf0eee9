//! The PostgreSQL database's schema for sessions, checkpoints, documents and leases, its
//! migrations, and the time every Postgres store hands out (to the microsecond).
//!
//! The schema version is the one row of `agent_schema`. Migration `i` brings a database
//! from version `i` to `i + 1`; connecting runs the ones it lacks in one transaction,
//! under an advisory lock so instances starting together migrate once, and refuses a
//! database from a newer version.
//!
//! JSON is stored as `JSONB`, times as `TIMESTAMPTZ` (microseconds: the stores round the
//! times they hand out to microseconds, so what they return reads back equal).

use agent_runtime::sessions::StoreError;
use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Connection, PgConnection, Postgres};

use crate::sql::bulk::STATEMENT_CACHE;
use crate::sql::store_error;

/// Version 1: sessions, events, state, gates, checkpoints, journal, documents, leases.
const V1: &str = r#"
CREATE TABLE IF NOT EXISTS sessions (
    id              TEXT PRIMARY KEY,
    product         TEXT NOT NULL,
    token_hash      TEXT NOT NULL,
    status          TEXT NOT NULL,
    stage           TEXT,
    request         JSONB NOT NULL,
    result          JSONB,
    error           TEXT,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    last_event      BIGINT NOT NULL DEFAULT 0,
    resume_attempts INTEGER NOT NULL DEFAULT 0,
    resume_events   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_by_product_status
    ON sessions (product, status, created_at);
CREATE TABLE IF NOT EXISTS events (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL CHECK (seq > 0),
    event       JSONB NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS state (
    session_id  TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    state       JSONB NOT NULL
);
CREATE TABLE IF NOT EXISTS gates (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    gate_id     TEXT NOT NULL,
    position    BIGINT NOT NULL,
    name        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    payload     JSONB NOT NULL,
    opened_at   TIMESTAMPTZ NOT NULL,
    answer      JSONB,
    answered_at TIMESTAMPTZ,
    closed      TEXT,
    closed_at   TIMESTAMPTZ,
    PRIMARY KEY (session_id, gate_id),
    UNIQUE (session_id, position)
);
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id      TEXT NOT NULL,
    seq         BIGINT NOT NULL CHECK (seq >= 0),
    node        TEXT NOT NULL,
    full_record BOOLEAN NOT NULL,
    record      TEXT NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX IF NOT EXISTS checkpoint_snapshots
    ON checkpoints (run_id, seq) WHERE full_record;
CREATE TABLE IF NOT EXISTS checkpoint_journal (
    run_id      TEXT NOT NULL,
    key         TEXT NOT NULL,
    value       JSONB NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, key)
);
CREATE TABLE IF NOT EXISTS documents (
    namespace   TEXT NOT NULL,
    key         TEXT NOT NULL,
    value       JSONB NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (namespace, key)
);
CREATE TABLE IF NOT EXISTS session_leases (
    session_id  TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);
"#;

/// Version 2: a product's state lives in its run's checkpoints (ADR 0008), no longer
/// beside the session.
const V2: &str = "DROP TABLE IF EXISTS state;";

/// Version 3: documents' keys compare byte by byte (collation `C`), so a namespace lists
/// in the order SQLite lists it, from one statement.
const V3: &str = r#"ALTER TABLE documents ALTER COLUMN key TYPE TEXT COLLATE "C";"#;

/// Version 4: each session names its tenant, as SQLite's version 8 does.
const V4: &str = "ALTER TABLE sessions ADD COLUMN tenant TEXT;";

/// Version 5: a session's last event number is read from its events (ADR 0023), no
/// longer kept on its row, as SQLite's version 9 does.
const V5: &str = "ALTER TABLE sessions DROP COLUMN last_event;";

/// Migration `i` brings version `i` to `i + 1`.
const MIGRATIONS: [&str; 5] = [V1, V2, V3, V4, V5];

/// The schema version this build writes.
const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// The advisory lock taken while migrating (any constant; "agent" in ASCII).
const MIGRATION_LOCK: i64 = 0x0061_6765_6e74;

/// Connects a pool to `url`, its tables in `schema` (created if missing) when one is
/// given, else in the connection's default search path, and migrates.
pub(crate) async fn connect(url: &str, schema: Option<&str>) -> Result<PgPool, StoreError> {
    let mut options: PgConnectOptions = url
        .parse::<PgConnectOptions>()
        .map_err(|e| StoreError::Backend(format!("PostgreSQL URL {url:?}: {e}")))?
        .statement_cache_capacity(STATEMENT_CACHE);
    if let Some(schema) = schema {
        check_schema_name(schema)?;
        let mut conn = PgConnection::connect_with(&options)
            .await
            .map_err(|e| unreachable_server(url, &e))?;
        sqlx::raw_sql(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
            .execute(&mut conn)
            .await
            .map_err(store_error::<Postgres>)?;
        conn.close().await.map_err(store_error::<Postgres>)?;
        options = options.options([("search_path", schema)]);
    }
    let pool = PgPoolOptions::new()
        .max_connections(16)
        .connect_with(options)
        .await
        .map_err(|e| unreachable_server(url, &e))?;
    migrate(&pool).await?;
    Ok(pool)
}

fn unreachable_server(url: &str, error: &sqlx::Error) -> StoreError {
    StoreError::Backend(format!("connecting to PostgreSQL at {url}: {error}"))
}

/// A schema name is quoted into SQL: letters, digits and `_` only.
fn check_schema_name(schema: &str) -> Result<(), StoreError> {
    let valid = !schema.is_empty()
        && schema.len() <= 63
        && schema
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Ok(())
    } else {
        Err(StoreError::Backend(format!(
            "schema name {schema:?}: use 1-63 ASCII letters, digits or underscores"
        )))
    }
}

/// Runs the migrations the database lacks.
///
/// Errors: [`StoreError::Corrupt`] for a database from a newer version.
async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
    let mut tx = pool.begin().await.map_err(store_error::<Postgres>)?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *tx)
        .await
        .map_err(store_error::<Postgres>)?;
    sqlx::raw_sql("CREATE TABLE IF NOT EXISTS agent_schema (version INTEGER NOT NULL)")
        .execute(&mut *tx)
        .await
        .map_err(store_error::<Postgres>)?;
    let version: Option<i32> = sqlx::query_scalar("SELECT MAX(version) FROM agent_schema")
        .fetch_one(&mut *tx)
        .await
        .map_err(store_error::<Postgres>)?;
    let version = version.unwrap_or(0);
    if version > SCHEMA_VERSION {
        return Err(StoreError::Corrupt(format!(
            "the PostgreSQL schema has version {version}, newer than the version \
             {SCHEMA_VERSION} this build understands; upgrade agent-backends"
        )));
    }
    let start = usize::try_from(version).unwrap_or(0);
    for migration in MIGRATIONS.iter().skip(start) {
        sqlx::raw_sql(migration)
            .execute(&mut *tx)
            .await
            .map_err(store_error::<Postgres>)?;
    }
    if version < SCHEMA_VERSION {
        sqlx::query("DELETE FROM agent_schema")
            .execute(&mut *tx)
            .await
            .map_err(store_error::<Postgres>)?;
        sqlx::query("INSERT INTO agent_schema (version) VALUES ($1)")
            .bind(SCHEMA_VERSION)
            .execute(&mut *tx)
            .await
            .map_err(store_error::<Postgres>)?;
        tracing::debug!(
            from = version,
            to = SCHEMA_VERSION,
            "migrated PostgreSQL schema"
        );
    }
    tx.commit().await.map_err(store_error::<Postgres>)
}

/// Now, to the microsecond PostgreSQL keeps.
pub(crate) fn now() -> DateTime<Utc> {
    let now = Utc::now();
    now.duration_trunc(TimeDelta::microseconds(1))
        .unwrap_or(now)
}
