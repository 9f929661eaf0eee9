//! Stores for the agent platform, implementing agent-runtime's storage traits. Today, on
//! SQLite (the embedded default; a file, or memory), one database per deployment:
//! [`SqliteSessionStore`] for `agent-server`'s sessions, events, state and gates, and
//! [`SqliteCheckpointStore`] for graph runs' checkpoints and journals
//! ([`SqliteSessionStore::checkpoints`] gives one on the same database), and
//! [`SqliteDocumentStore`] for documents that outlive sessions
//! ([`SqliteSessionStore::documents`]) and [`SqliteVectorStore`] for embedded texts
//! ([`SqliteSessionStore::vectors`]).
//!
//! With the `postgres` feature, the same on PostgreSQL, for deployments of several server
//! instances on one database: [`PgSessionStore`] (sessions, events numbered without gaps
//! under concurrent writers, state, gates), [`PgCheckpointStore`], [`PgDocumentStore`],
//! [`PgLeases`] (which instance runs each session) and [`PgVectorStore`] (pgvector).
//!
//! With the `nats` feature, [`NatsCoordination`]: live events and session control between
//! the instances, on NATS; [`JetStreamRunQueue`], the work queue of runs; and [`NatsBus`],
//! the agent bus of a session whose agents run in several processes, on JetStream.
//!
//! With the `redis` feature, [`RedisCache`], the runtime's cache shared by every instance,
//! and [`RedisBus`], the same agent bus on Redis Streams.

mod checkpoint_rows;
mod checkpoint_tables;
mod document_tables;
mod event_rows;
mod group_commit;
#[cfg(feature = "nats")]
mod nats_bus;
#[cfg(feature = "nats")]
mod nats_coordination;
#[cfg(feature = "nats")]
mod nats_leases;
#[cfg(feature = "nats")]
mod nats_run_queue;
#[cfg(feature = "postgres")]
mod pg_checkpoints;
#[cfg(feature = "postgres")]
mod pg_documents;
#[cfg(feature = "postgres")]
mod pg_leases;
#[cfg(feature = "postgres")]
mod pg_schema;
#[cfg(feature = "postgres")]
mod pg_sessions;
#[cfg(feature = "postgres")]
mod pg_vectors;
#[cfg(feature = "redis")]
mod redis_bus;
#[cfg(feature = "redis")]
mod redis_cache;
mod session_tables;
mod sql;
mod sqlite;
mod sqlite_checkpoints;
mod sqlite_documents;
mod sqlite_schema;
mod sqlite_vectors;
mod status_rows;
mod vector_rows;

#[cfg(feature = "nats")]
pub use nats_bus::NatsBus;
#[cfg(feature = "nats")]
pub use nats_coordination::NatsCoordination;
#[cfg(feature = "nats")]
pub use nats_run_queue::JetStreamRunQueue;
#[cfg(feature = "postgres")]
pub use pg_checkpoints::PgCheckpointStore;
#[cfg(feature = "postgres")]
pub use pg_documents::PgDocumentStore;
#[cfg(feature = "postgres")]
pub use pg_leases::PgLeases;
#[cfg(feature = "postgres")]
pub use pg_sessions::PgSessionStore;
#[cfg(feature = "postgres")]
pub use pg_vectors::PgVectorStore;
#[cfg(feature = "redis")]
pub use redis_bus::RedisBus;
#[cfg(feature = "redis")]
pub use redis_cache::RedisCache;
pub use sqlite::SqliteSessionStore;
pub use sqlite_checkpoints::SqliteCheckpointStore;
pub use sqlite_documents::SqliteDocumentStore;
pub use sqlite_vectors::SqliteVectorStore;
