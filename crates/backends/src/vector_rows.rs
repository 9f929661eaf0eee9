//! The vector stores' writes and counts, written once for SQLite and PostgreSQL. Their
//! searches differ (exact scoring and FTS5 on SQLite; pgvector's HNSW index and a
//! `tsvector` on PostgreSQL) and stay with each store.

use agent_runtime::vectors::{VectorRecord, VectorStoreError, check_upsert};
use sqlx::Pool;

use crate::sql::{Bind, Sql};

/// A vector store's failure, as the message the database gave.
pub(crate) fn backend(error: impl std::fmt::Display) -> VectorStoreError {
    VectorStoreError::Backend(error.to_string())
}

/// Inserts or replaces `records` in one transaction, by `upsert`: the statement that
/// takes a record's collection, tenant, id, dimension, embedding, text and metadata, in
/// that order.
pub(crate) async fn upsert<D: Sql>(
    pool: &Pool<D>,
    upsert: &str,
    collection: &str,
    records: &[VectorRecord],
) -> Result<(), VectorStoreError> {
    check_upsert(collection, records)?;
    let mut tx = D::begin_write(pool).await.map_err(backend)?;
    for record in records {
        let metadata = serde_json::to_value(&record.metadata).map_err(backend)?;
        let dims = i64::try_from(record.vector.len()).map_err(backend)?;
        Bind::<D>::new(upsert)
            .text(collection)
            .text(&record.tenant)
            .text(&record.id)
            .int(dims)
            .embedding(&record.vector)
            .text(&record.text)
            .json(&metadata)
            .execute(&mut tx)
            .await
            .map_err(backend)?;
    }
    tx.commit().await.map_err(backend)
}

/// Deletes the tenant's records `ids` in one transaction; answers how many there were.
pub(crate) async fn delete<D: Sql>(
    pool: &Pool<D>,
    collection: &str,
    tenant: &str,
    ids: &[String],
) -> Result<u64, VectorStoreError> {
    let mut tx = D::begin_write(pool).await.map_err(backend)?;
    let mut deleted = 0;
    for id in ids {
        deleted +=
            Bind::<D>::new("DELETE FROM vectors WHERE collection = $1 AND tenant = $2 AND id = $3")
                .text(collection)
                .text(tenant)
                .text(id)
                .execute(&mut tx)
                .await
                .map_err(backend)?;
    }
    tx.commit().await.map_err(backend)?;
    Ok(deleted)
}

/// How many records the tenant has in the collection.
pub(crate) async fn count<D: Sql>(
    pool: &Pool<D>,
    collection: &str,
    tenant: &str,
) -> Result<u64, VectorStoreError> {
    let mut conn = pool.acquire().await.map_err(backend)?;
    let row = Bind::<D>::new(
        "SELECT COUNT(*) AS records FROM vectors WHERE collection = $1 AND tenant = $2",
    )
    .text(collection)
    .text(tenant)
    .fetch_optional(&mut conn)
    .await
    .map_err(backend)?;
    let count = match row {
        Some(row) => D::int(&row, "records").map_err(backend)?,
        None => 0,
    };
    Ok(u64::try_from(count).unwrap_or(0))
}
