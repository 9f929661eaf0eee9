//! The PostgreSQL server the Postgres suites run on: `POSTGRES_URL`, else the machine's
//! server (`postgres://postgres@127.0.0.1:5432/test`, which `cargo xtask test` starts when
//! it is not running). Each test gets a schema of its own, dropped when it passes; a
//! test fails, never skips, without the server.

#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::sync::atomic::{AtomicU64, Ordering};

use agent_backends::PgSessionStore;
use sqlx::Connection;

/// The server's URL.
pub fn url() -> String {
    std::env::var("POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// A store in a fresh schema.
pub struct Fixture {
    pub store: PgSessionStore,
    pub schema: String,
}

impl Fixture {
    /// Connects in a new schema; panics (the test fails) when the server is not there.
    pub async fn new() -> Fixture {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let schema = format!(
            "test_{}_{nanos}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let store = match PgSessionStore::connect_in_schema(&url(), &schema).await {
            Ok(store) => store,
            Err(error) => panic!(
                "{error}\n(PostgreSQL is not running at {}: `cargo xtask setup` starts it, or set POSTGRES_URL)",
                url()
            ),
        };
        Fixture { store, schema }
    }

    /// Another store on the same schema, as a second server instance would have.
    pub async fn second_instance(&self) -> PgSessionStore {
        PgSessionStore::connect_in_schema(&url(), &self.schema)
            .await
            .unwrap()
    }

    /// Closes the store and drops the schema.
    pub async fn cleanup(self) {
        self.store.close().await;
        let mut conn = sqlx::PgConnection::connect(&url()).await.unwrap();
        sqlx::raw_sql(&format!("DROP SCHEMA \"{}\" CASCADE", self.schema))
            .execute(&mut conn)
            .await
            .unwrap();
    }
}
