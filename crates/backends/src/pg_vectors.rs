//! [`PgVectorStore`]: agent-runtime's [`VectorStore`] on PostgreSQL with pgvector. One
//! table for every collection; an HNSW index (cosine) per embedding dimension, made the
//! first time that dimension is stored, which queries use through the same cast; full
//! text by a generated `tsvector` (English stems) under a GIN index; metadata filters by
//! JSONB containment. Filtered nearest-neighbour scans are iterative (pgvector 0.8), so a
//! tenant's `top_k` is complete however many other tenants share the index.

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;

use agent_runtime::vectors::{
    LexicalQuery, MetadataFilter, VectorHit, VectorQuery, VectorRecord, VectorStore,
    VectorStoreError, check_delete_filter, check_name, check_query_vector, query_words,
};
use async_trait::async_trait;
use serde_json::Value;
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};
use sqlx::{Postgres, Row as _};

use crate::sql::Dialect as _;
use crate::vector_rows::{self, backend};

/// The schema: the extension, the table, its text and metadata indexes.
const SCHEMA: &str = r#"
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS vectors (
    collection   TEXT NOT NULL,
    tenant       TEXT NOT NULL,
    id           TEXT NOT NULL,
    dims         INTEGER NOT NULL,
    embedding    vector NOT NULL,
    text         TEXT NOT NULL,
    metadata     JSONB NOT NULL,
    text_search  tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    PRIMARY KEY (collection, tenant, id)
);
CREATE INDEX IF NOT EXISTS vectors_text_search ON vectors USING gin (text_search);
CREATE INDEX IF NOT EXISTS vectors_by_tenant ON vectors (collection, tenant, dims);
"#;

/// Embedded texts in PostgreSQL with pgvector.
///
/// ```no_run
/// # async fn run() -> Result<(), agent_runtime::vectors::VectorStoreError> {
/// use agent_backends::PgVectorStore;
/// use agent_runtime::vectors::VectorStore;
/// let store = PgVectorStore::connect("postgres://postgres@127.0.0.1:5433/postgres").await?;
/// assert_eq!(store.count("resume_chunks", "ada").await?, 0);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PgVectorStore {
    pool: PgPool,
    /// The dimensions known to have their HNSW index.
    indexed: Mutex<HashSet<usize>>,
}

/// Inserts or replaces a record (see [`vector_rows::upsert`]); the embedding comes as
/// pgvector's text form.
const UPSERT: &str = "INSERT INTO vectors (collection, tenant, id, dims, embedding, text, metadata) \
     VALUES ($1, $2, $3, $4, $5::vector, $6, $7) \
     ON CONFLICT (collection, tenant, id) DO UPDATE SET dims = excluded.dims, \
     embedding = excluded.embedding, text = excluded.text, metadata = excluded.metadata";

fn filter_json(filter: &MetadataFilter) -> Result<Value, VectorStoreError> {
    for key in filter.keys() {
        check_name("metadata filter key", key)?;
    }
    Ok(Value::Object(
        filter.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
    ))
}

fn hit(row: &PgRow, score: f32) -> Result<VectorHit, VectorStoreError> {
    let id: String = row.try_get("id").map_err(backend)?;
    let metadata: Value = row.try_get("metadata").map_err(backend)?;
    let metadata: BTreeMap<String, Value> = serde_json::from_value(metadata)
        .map_err(|error| VectorStoreError::Corrupt(format!("metadata of {id:?}: {error}")))?;
    Ok(VectorHit {
        text: row.try_get("text").map_err(backend)?,
        id,
        score,
        metadata,
    })
}

impl PgVectorStore {
    /// Connects to `url` and brings the schema up (the `vector` extension must be
    /// installable there).
    pub async fn connect(url: &str) -> Result<Self, VectorStoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .connect(url)
            .await
            .map_err(|error| {
                VectorStoreError::Backend(format!("connecting to PostgreSQL at {url}: {error}"))
            })?;
        Self::from_pool(pool).await
    }

    /// A store on `pool`, bringing the schema up.
    pub async fn from_pool(pool: PgPool) -> Result<Self, VectorStoreError> {
        sqlx::raw_sql(SCHEMA)
            .execute(&pool)
            .await
            .map_err(|error| VectorStoreError::Backend(format!("creating the schema: {error}")))?;
        Ok(PgVectorStore {
            pool,
            indexed: Mutex::default(),
        })
    }

    /// Makes the HNSW index of vectors of `dims` dimensions, once.
    async fn index(&self, dims: usize) -> Result<(), VectorStoreError> {
        let known = self
            .indexed
            .lock()
            .map(|set| set.contains(&dims))
            .unwrap_or(false);
        if known {
            return Ok(());
        }
        let sql = format!(
            "CREATE INDEX IF NOT EXISTS vectors_hnsw_{dims} ON vectors \
             USING hnsw ((embedding::vector({dims})) vector_cosine_ops) WHERE dims = {dims}"
        );
        if let Err(error) = sqlx::query(&sql).execute(&self.pool).await {
            // Another instance made it at the same moment: it exists.
            let raced = error
                .as_database_error()
                .and_then(|e| e.code())
                .is_some_and(|code| code == "23505" || code == "42P07");
            if !raced {
                return Err(backend(format!("creating the HNSW index: {error}")));
            }
        }
        if let Ok(mut set) = self.indexed.lock() {
            set.insert(dims);
        }
        Ok(())
    }
}

#[async_trait]
impl VectorStore for PgVectorStore {
    async fn upsert(
        &self,
        collection: &str,
        records: &[VectorRecord],
    ) -> Result<(), VectorStoreError> {
        let dims: HashSet<usize> = records.iter().map(|r| r.vector.len()).collect();
        for dims in dims.into_iter().filter(|&dims| dims > 0) {
            self.index(dims).await?;
        }
        vector_rows::upsert(&self.pool, UPSERT, collection, records).await
    }

    async fn delete(
        &self,
        collection: &str,
        tenant: &str,
        ids: &[String],
    ) -> Result<u64, VectorStoreError> {
        vector_rows::delete(&self.pool, collection, tenant, ids).await
    }

    async fn delete_matching(
        &self,
        collection: &str,
        tenant: &str,
        filter: &MetadataFilter,
    ) -> Result<u64, VectorStoreError> {
        check_delete_filter(filter)?;
        let filter = filter_json(filter)?;
        let deleted = sqlx::query(
            "DELETE FROM vectors WHERE collection = $1 AND tenant = $2 AND metadata @> $3",
        )
        .bind(collection)
        .bind(tenant)
        .bind(filter)
        .execute(&self.pool)
        .await
        .map_err(backend)?
        .rows_affected();
        Ok(deleted)
    }

    async fn query(
        &self,
        collection: &str,
        query: &VectorQuery,
    ) -> Result<Vec<VectorHit>, VectorStoreError> {
        check_query_vector(&query.vector)?;
        let dims = query.vector.len();
        let filter = filter_json(&query.filter)?;
        if query.top_k == 0 {
            return Ok(Vec::new());
        }
        // The same cast as the index's expression, so the planner can use it.
        let distance = format!("(embedding::vector({dims}) <=> $1::vector({dims}))");
        let sql = format!(
            "SELECT id, text, metadata, 1 - {distance} AS score FROM vectors \
             WHERE collection = $2 AND tenant = $3 AND dims = {dims} AND metadata @> $4 \
             AND 1 - {distance} >= $5 ORDER BY {distance} LIMIT $6"
        );
        let mut tx = self.pool.begin().await.map_err(backend)?;
        // Keep scanning the index past rows the filter drops (pgvector 0.8).
        sqlx::query("SET LOCAL hnsw.iterative_scan = strict_order")
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        let rows = Postgres::bind_embedding(sqlx::query(&sql), &query.vector)
            .bind(collection)
            .bind(&query.tenant)
            .bind(filter)
            .bind(f64::from(query.min_score.unwrap_or(-1.0)))
            .bind(query.top_k as i64)
            .fetch_all(&mut *tx)
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        rows.iter()
            .map(|row| {
                let score: f64 = row.try_get("score").map_err(backend)?;
                hit(row, score as f32)
            })
            .collect()
    }

    async fn lexical(
        &self,
        collection: &str,
        query: &LexicalQuery,
    ) -> Result<Vec<VectorHit>, VectorStoreError> {
        let filter = filter_json(&query.filter)?;
        let words = query_words(&query.text);
        if words.is_empty() || query.top_k == 0 {
            return Ok(Vec::new());
        }
        // Any of the words; websearch_to_tsquery never fails on what a user typed ("or"
        // itself is its operator, and a stop word).
        let words: Vec<String> = words.into_iter().filter(|w| w != "or").collect();
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let any = words.join(" or ");
        let rows = sqlx::query(
            "SELECT id, text, metadata, ts_rank_cd(text_search, q)::float8 AS score \
             FROM vectors, websearch_to_tsquery('english', $1) q \
             WHERE collection = $2 AND tenant = $3 AND text_search @@ q AND metadata @> $4 \
             ORDER BY score DESC, id LIMIT $5",
        )
        .bind(any)
        .bind(collection)
        .bind(&query.tenant)
        .bind(filter)
        .bind(query.top_k as i64)
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        rows.iter()
            .map(|row| {
                let score: f64 = row.try_get("score").map_err(backend)?;
                hit(row, score as f32)
            })
            .collect()
    }

    async fn count(&self, collection: &str, tenant: &str) -> Result<u64, VectorStoreError> {
        vector_rows::count(&self.pool, collection, tenant).await
    }
}
