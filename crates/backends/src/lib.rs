//! Stores for the agent platform, implementing agent-runtime's storage traits. Today:
//! [`SqliteSessionStore`], the embedded default for `agent-server`'s sessions, events,
//! state and gates (a file, or memory). Postgres, Redis and NATS come behind features.

mod sqlite;

pub use sqlite::SqliteSessionStore;
