//! [`SqliteVectorStore`]: agent-runtime's [`VectorStore`] in the deployment's SQLite
//! database. Nearest neighbours by exact search: the tenant's embeddings of the query's
//! dimension are streamed from the table and scored in Rust, keeping the best `top_k`;
//! lexical search by FTS5's `bm25` over the texts.

use std::collections::BTreeMap;

use agent_runtime::vectors::{
    LexicalQuery, MetadataFilter, VectorHit, VectorQuery, VectorRecord, VectorStore,
    VectorStoreError, check_delete_filter, check_name, check_query_vector, cosine, query_words,
};
use async_trait::async_trait;
use futures::TryStreamExt as _;
use serde_json::Value;
use sqlx::Row as _;
use sqlx::sqlite::SqliteArguments;
use sqlx::{Arguments as _, Sqlite};

use crate::SqliteSessionStore;
use crate::vector_rows::{self, backend};

/// Embedded texts in a SQLite database (tables `vectors` and `vectors_text`), sharing a
/// [`SqliteSessionStore`]'s connections.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use agent_backends::SqliteSessionStore;
/// use agent_runtime::vectors::{VectorQuery, VectorRecord, VectorStore};
///
/// let vectors = SqliteSessionStore::in_memory().await.unwrap().vectors();
/// let record = VectorRecord {
///     tenant: "ada".into(),
///     id: "r1".into(),
///     vector: vec![1.0, 0.0],
///     text: "Rust engineer".into(),
///     metadata: Default::default(),
/// };
/// vectors.upsert("resume_chunks", &[record]).await?;
/// let hits = vectors.query("resume_chunks", &VectorQuery::new("ada", vec![1.0, 0.1], 5)).await?;
/// assert_eq!(hits[0].id, "r1");
/// # Ok::<(), agent_runtime::vectors::VectorStoreError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct SqliteVectorStore {
    db: SqliteSessionStore,
}

impl SqliteSessionStore {
    /// A vector store in this store's database, sharing its connections.
    pub fn vectors(&self) -> SqliteVectorStore {
        SqliteVectorStore { db: self.clone() }
    }
}

/// Inserts or replaces a record (see [`vector_rows::upsert`]).
const UPSERT: &str = "INSERT INTO vectors (collection, tenant, id, dims, embedding, text, metadata) \
     VALUES ($1, $2, $3, $4, $5, $6, $7) \
     ON CONFLICT (collection, tenant, id) DO UPDATE SET dims = excluded.dims, \
     embedding = excluded.embedding, text = excluded.text, metadata = excluded.metadata";

/// An embedding as stored: little-endian `f32`s.
fn decode(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// ` AND json_extract(v.metadata, '$."key"') IS json_extract(?, '$')` per filter key, the
/// values bound in order.
fn filter_sql(
    filter: &MetadataFilter,
    args: &mut SqliteArguments<'_>,
) -> Result<String, VectorStoreError> {
    let mut sql = String::new();
    for (key, value) in filter {
        check_name("metadata filter key", key)?;
        sql.push_str(&format!(
            " AND json_extract(v.metadata, '$.\"{key}\"') IS json_extract(?, '$')"
        ));
        args.add(value.to_string()).map_err(backend)?;
    }
    Ok(sql)
}

fn metadata(text: &str, id: &str) -> Result<BTreeMap<String, Value>, VectorStoreError> {
    serde_json::from_str(text)
        .map_err(|error| VectorStoreError::Corrupt(format!("metadata of {id:?}: {error}")))
}

#[async_trait]
impl VectorStore for SqliteVectorStore {
    async fn upsert(
        &self,
        collection: &str,
        records: &[VectorRecord],
    ) -> Result<(), VectorStoreError> {
        vector_rows::upsert(self.db.pool(), UPSERT, collection, records).await
    }

    async fn delete(
        &self,
        collection: &str,
        tenant: &str,
        ids: &[String],
    ) -> Result<u64, VectorStoreError> {
        vector_rows::delete(self.db.pool(), collection, tenant, ids).await
    }

    async fn delete_matching(
        &self,
        collection: &str,
        tenant: &str,
        filter: &MetadataFilter,
    ) -> Result<u64, VectorStoreError> {
        check_delete_filter(filter)?;
        let mut args = SqliteArguments::default();
        args.add(collection).map_err(backend)?;
        args.add(tenant).map_err(backend)?;
        let filter = filter_sql(filter, &mut args)?;
        let sql = format!(
            "DELETE FROM vectors WHERE row IN (SELECT v.row FROM vectors v \
             WHERE v.collection = ? AND v.tenant = ?{filter})"
        );
        let mut tx = self.db.write().await.map_err(backend)?;
        let deleted = sqlx::query_with::<Sqlite, _>(&sql, args)
            .execute(&mut *tx)
            .await
            .map_err(backend)?
            .rows_affected();
        tx.commit().await.map_err(backend)?;
        Ok(deleted)
    }

    async fn query(
        &self,
        collection: &str,
        query: &VectorQuery,
    ) -> Result<Vec<VectorHit>, VectorStoreError> {
        check_query_vector(&query.vector)?;
        if query.top_k == 0 {
            return Ok(Vec::new());
        }
        let mut args = SqliteArguments::default();
        args.add(collection).map_err(backend)?;
        args.add(query.tenant.as_str()).map_err(backend)?;
        args.add(query.vector.len() as i64).map_err(backend)?;
        let filter = filter_sql(&query.filter, &mut args)?;
        let sql = format!(
            "SELECT v.row, v.embedding FROM vectors v \
             WHERE v.collection = ? AND v.tenant = ? AND v.dims = ?{filter}"
        );
        let mut tx = self.db.read().await.map_err(backend)?;
        // The best rows so far; trimmed back to `top_k` whenever it doubles.
        let mut best: Vec<(f32, i64)> = Vec::new();
        {
            let mut rows = sqlx::query_with::<Sqlite, _>(&sql, args).fetch(&mut *tx);
            while let Some(row) = rows.try_next().await.map_err(backend)? {
                let bytes: &[u8] = row.try_get("embedding").map_err(backend)?;
                let score = cosine(&query.vector, &decode(bytes));
                if query.min_score.is_some_and(|floor| score < floor) {
                    continue;
                }
                best.push((score, row.try_get("row").map_err(backend)?));
                if best.len() >= 2 * query.top_k.max(16) {
                    keep_best(&mut best, query.top_k);
                }
            }
        }
        keep_best(&mut best, query.top_k);
        let mut hits = Vec::with_capacity(best.len());
        for (score, row) in best {
            let found = sqlx::query("SELECT id, text, metadata FROM vectors WHERE row = ?1")
                .bind(row)
                .fetch_one(&mut *tx)
                .await
                .map_err(backend)?;
            let id: String = found.try_get("id").map_err(backend)?;
            let text: String = found.try_get("text").map_err(backend)?;
            let meta: String = found.try_get("metadata").map_err(backend)?;
            hits.push(VectorHit {
                metadata: metadata(&meta, &id)?,
                id,
                score,
                text,
            });
        }
        tx.commit().await.map_err(backend)?;
        Ok(hits)
    }

    async fn lexical(
        &self,
        collection: &str,
        query: &LexicalQuery,
    ) -> Result<Vec<VectorHit>, VectorStoreError> {
        let words = query_words(&query.text);
        if words.is_empty() || query.top_k == 0 {
            return Ok(Vec::new());
        }
        // Each word a quoted phrase (FTS5 syntax stays out of the user's text), any of them.
        let matching = words
            .iter()
            .map(|w| format!("\"{}\"", w.replace('"', "")))
            .collect::<Vec<_>>()
            .join(" OR ");
        let mut args = SqliteArguments::default();
        args.add(matching).map_err(backend)?;
        args.add(collection).map_err(backend)?;
        args.add(query.tenant.as_str()).map_err(backend)?;
        let filter = filter_sql(&query.filter, &mut args)?;
        args.add(query.top_k as i64).map_err(backend)?;
        let sql = format!(
            "SELECT v.id, v.text, v.metadata, bm25(vectors_text) AS rank \
             FROM vectors_text JOIN vectors v ON v.row = vectors_text.rowid \
             WHERE vectors_text MATCH ? AND v.collection = ? AND v.tenant = ?{filter} \
             ORDER BY rank LIMIT ?"
        );
        let mut tx = self.db.read().await.map_err(backend)?;
        let rows = sqlx::query_with::<Sqlite, _>(&sql, args)
            .fetch_all(&mut *tx)
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        rows.iter()
            .map(|row| {
                let id: String = row.try_get("id").map_err(backend)?;
                let meta: String = row.try_get("metadata").map_err(backend)?;
                let rank: f64 = row.try_get("rank").map_err(backend)?;
                Ok(VectorHit {
                    metadata: metadata(&meta, &id)?,
                    text: row.try_get("text").map_err(backend)?,
                    id,
                    // bm25 is lower for better matches.
                    score: -rank as f32,
                })
            })
            .collect()
    }

    async fn count(&self, collection: &str, tenant: &str) -> Result<u64, VectorStoreError> {
        vector_rows::count(self.db.pool(), collection, tenant).await
    }
}

/// Keeps the `k` highest-scored entries, highest first.
fn keep_best(best: &mut Vec<(f32, i64)>, k: usize) {
    best.sort_by(|a, b| b.0.total_cmp(&a.0));
    best.truncate(k);
}
