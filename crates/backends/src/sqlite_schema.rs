//! The SQLite database's schema, shared by the session and checkpoint stores (one database
//! per deployment), and its migrations.
//!
//! The schema version is `PRAGMA user_version`. Migration `i` brings a database from
//! version `i` to `i + 1`; opening a database runs the ones it lacks, in one write
//! transaction, and refuses a database from a newer version.
//!
//! Timestamps are stored as RFC 3339 text in UTC with nanoseconds
//! (`2025-01-02T03:04:05.123456789Z`): fixed width, so text order is time order, and they
//! read back exactly. JSON values are stored as text.

use agent_runtime::sessions::StoreError;
use chrono::{DateTime, SecondsFormat, Utc};
use sqlx::{Sqlite, SqliteConnection};

use crate::sql::store_error;

/// The schema version this build writes: the number of migrations.
pub(crate) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Version 1: sessions, their events, state and gates.
const SESSIONS: &str = r#"
CREATE TABLE IF NOT EXISTS sessions (
    id          TEXT PRIMARY KEY NOT NULL,
    product     TEXT NOT NULL,
    token_hash  TEXT NOT NULL,
    status      TEXT NOT NULL,
    stage       TEXT,
    request     TEXT NOT NULL,
    result      TEXT,
    error       TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_product_status
    ON sessions (product, status, created_at);
CREATE TABLE IF NOT EXISTS events (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL CHECK (seq > 0),
    event       TEXT NOT NULL,
    at          TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS state (
    session_id  TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    state       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS gates (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    gate_id     TEXT NOT NULL,
    position    INTEGER NOT NULL,
    name        TEXT NOT NULL,
    payload     TEXT NOT NULL,
    opened_at   TEXT NOT NULL,
    answer      TEXT,
    answered_at TEXT,
    PRIMARY KEY (session_id, gate_id),
    UNIQUE (session_id, position)
);
"#;

/// Version 2: graph runs' checkpoints and journals. A checkpoint's `record` is its stored
/// form (a full snapshot or a delta on the run's previous checkpoint, as JSON), `full`
/// (`full_record` since version 7) says which (and indexes the snapshots), so loading starts at the nearest one. Runs
/// are not sessions: no foreign key.
const CHECKPOINTS: &str = r#"
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id      TEXT NOT NULL,
    seq         INTEGER NOT NULL CHECK (seq >= 0),
    node        TEXT NOT NULL,
    full        INTEGER NOT NULL CHECK (full IN (0, 1)),
    record      TEXT NOT NULL,
    at          TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX IF NOT EXISTS checkpoint_snapshots
    ON checkpoints (run_id, seq) WHERE full = 1;
CREATE TABLE IF NOT EXISTS checkpoint_journal (
    run_id      TEXT NOT NULL,
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    at          TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
"#;

/// Version 3: the lifecycle. A gate records the declared gate it is an instance of
/// (`kind`; `NULL` reads as its name) and why it closed without an answer (`closed`:
/// `expired`, `cancelled`); a session counts the resumes in a row that found it with no
/// new event (`resume_attempts`, at `resume_events` events).
const LIFECYCLE: &str = r#"
ALTER TABLE gates ADD COLUMN kind TEXT;
ALTER TABLE gates ADD COLUMN closed TEXT;
ALTER TABLE gates ADD COLUMN closed_at TEXT;
ALTER TABLE sessions ADD COLUMN resume_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN resume_events INTEGER NOT NULL DEFAULT 0;
"#;

/// Version 4: documents that outlive sessions (agent-runtime's `DocumentStore`), JSON by
/// namespace and key.
const DOCUMENTS: &str = r#"
CREATE TABLE IF NOT EXISTS documents (
    namespace   TEXT NOT NULL,
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
"#;

/// Version 5: embedded texts (agent-runtime's `VectorStore`): the embedding as
/// little-endian `f32`s, metadata as JSON, and an FTS5 index of the text (Porter stems)
/// kept in step by triggers.
const VECTORS: &str = r#"
CREATE TABLE IF NOT EXISTS vectors (
    row         INTEGER PRIMARY KEY,
    collection  TEXT NOT NULL,
    tenant      TEXT NOT NULL,
    id          TEXT NOT NULL,
    dims        INTEGER NOT NULL,
    embedding   BLOB NOT NULL,
    text        TEXT NOT NULL,
    metadata    TEXT NOT NULL,
    UNIQUE (collection, tenant, id)
);
CREATE INDEX IF NOT EXISTS vectors_by_tenant ON vectors (collection, tenant, dims);
CREATE VIRTUAL TABLE IF NOT EXISTS vectors_text
    USING fts5(text, content='vectors', content_rowid='row', tokenize='porter unicode61');
CREATE TRIGGER IF NOT EXISTS vectors_inserted AFTER INSERT ON vectors BEGIN
    INSERT INTO vectors_text (rowid, text) VALUES (new.row, new.text);
END;
CREATE TRIGGER IF NOT EXISTS vectors_deleted AFTER DELETE ON vectors BEGIN
    INSERT INTO vectors_text (vectors_text, rowid, text) VALUES ('delete', old.row, old.text);
END;
CREATE TRIGGER IF NOT EXISTS vectors_updated AFTER UPDATE ON vectors BEGIN
    INSERT INTO vectors_text (vectors_text, rowid, text) VALUES ('delete', old.row, old.text);
    INSERT INTO vectors_text (rowid, text) VALUES (new.row, new.text);
END;
"#;

/// Version 6: a product's state lives in its run's checkpoints (ADR 0008), no longer
/// beside the session.
const NO_SAVED_STATE: &str = "DROP TABLE IF EXISTS state;";

/// Version 7: the tables as PostgreSQL has them, so one statement serves both databases
/// (`checkpoint_tables`, `session_tables`): the snapshot mark renamed `full_record`
/// (`full` is a keyword there); each session counts its events (`last_event`, which
/// numbers the next one); every gate names its kind.
const AS_POSTGRES: &str = r#"
ALTER TABLE checkpoints RENAME COLUMN full TO full_record;
DROP INDEX IF EXISTS checkpoint_snapshots;
CREATE INDEX IF NOT EXISTS checkpoint_snapshots
    ON checkpoints (run_id, seq) WHERE full_record = TRUE;
ALTER TABLE sessions ADD COLUMN last_event INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET last_event =
    (SELECT COALESCE(MAX(seq), 0) FROM events WHERE events.session_id = sessions.id);
UPDATE gates SET kind = name WHERE kind IS NULL;
"#;

/// Version 8: each session names the tenant it belongs to, when it has one (the server's
/// auth layer answers another tenant's callers 404 for it).
const SESSION_TENANT: &str = "ALTER TABLE sessions ADD COLUMN tenant TEXT;";

/// Version 9: a session's last event number is read from its events (ADR 0023), no
/// longer kept on its row.
const NO_EVENT_COUNTER: &str = "ALTER TABLE sessions DROP COLUMN last_event;";

/// Migration `i` brings version `i` to `i + 1`.
const MIGRATIONS: [&str; 9] = [
    SESSIONS,
    CHECKPOINTS,
    LIFECYCLE,
    DOCUMENTS,
    VECTORS,
    NO_SAVED_STATE,
    AS_POSTGRES,
    SESSION_TENANT,
    NO_EVENT_COUNTER,
];

/// Checks the schema version and runs the missing migrations, on a connection inside a
/// write transaction (the caller commits). `location` names the database in messages.
///
/// Errors: [`StoreError::Corrupt`] for a database from a newer version,
/// [`StoreError::Backend`] when SQLite fails.
pub(crate) async fn migrate(conn: &mut SqliteConnection, location: &str) -> Result<(), StoreError> {
    let version: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&mut *conn)
        .await
        .map_err(store_error::<Sqlite>)?;
    if version > SCHEMA_VERSION {
        tracing::warn!(
            path = location,
            version,
            supported = SCHEMA_VERSION,
            "refusing a database from a newer version"
        );
        return Err(StoreError::Corrupt(format!(
            "session database {location} has schema version {version}, newer than the \
             version {SCHEMA_VERSION} this build understands; upgrade agent-backends"
        )));
    }
    let start = usize::try_from(version).unwrap_or(0);
    for migration in MIGRATIONS.iter().skip(start) {
        sqlx::raw_sql(migration)
            .execute(&mut *conn)
            .await
            .map_err(store_error::<Sqlite>)?;
    }
    if version < SCHEMA_VERSION {
        sqlx::raw_sql(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
            .execute(&mut *conn)
            .await
            .map_err(store_error::<Sqlite>)?;
        tracing::debug!(
            path = location,
            from = version,
            to = SCHEMA_VERSION,
            "migrated database schema"
        );
    }
    Ok(())
}

/// How timestamps are stored: RFC 3339, UTC, nanoseconds.
pub(crate) fn timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Nanos, true)
}
