//! Stores for the agent platform, implementing agent-runtime's storage traits. Today, on
//! SQLite (the embedded default; a file, or memory), one database per deployment:
//! [`SqliteSessionStore`] for `agent-server`'s sessions, events, state and gates, and
//! [`SqliteCheckpointStore`] for graph runs' checkpoints and journals
//! ([`SqliteSessionStore::checkpoints`] gives one on the same database), and
//! [`SqliteDocumentStore`] for documents that outlive sessions
//! ([`SqliteSessionStore::documents`]) and [`SqliteVectorStore`] for embedded texts
//! ([`SqliteSessionStore::vectors`]). Postgres, Redis and NATS come behind features.

mod sqlite;
mod sqlite_checkpoints;
mod sqlite_documents;
mod sqlite_gates;
mod sqlite_rows;
mod sqlite_schema;
mod sqlite_vectors;

pub use sqlite::SqliteSessionStore;
pub use sqlite_checkpoints::SqliteCheckpointStore;
pub use sqlite_documents::SqliteDocumentStore;
pub use sqlite_vectors::SqliteVectorStore;
