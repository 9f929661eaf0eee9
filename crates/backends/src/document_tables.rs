//! The document store's table, written once for SQLite and PostgreSQL: JSON values by
//! namespace and key (table `documents`), listed in byte order of their keys.

use agent_runtime::documents::DocumentUpdate;
use agent_runtime::sessions::StoreError;
use serde_json::Value;
use sqlx::Pool;

use crate::sql::{Bind, Sql, store_error};

/// The documents of database `D`, reached through `pool`.
pub(crate) struct DocumentTables<D: Sql> {
    pool: Pool<D>,
}

impl<D: Sql> Clone for DocumentTables<D> {
    fn clone(&self) -> Self {
        DocumentTables {
            pool: self.pool.clone(),
        }
    }
}

impl<D: Sql> std::fmt::Debug for DocumentTables<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocumentTables")
            .field("database", &D::NAME)
            .finish()
    }
}

fn corrupt(namespace: &str, key: &str, error: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("document {namespace}/{key}: {error}"))
}

impl<D: Sql> DocumentTables<D> {
    /// The documents in the database of `pool`.
    pub(crate) fn new(pool: Pool<D>) -> Self {
        DocumentTables { pool }
    }

    async fn read(
        conn: &mut D::Connection,
        namespace: &str,
        key: &str,
    ) -> Result<Option<Value>, StoreError> {
        let row = Bind::<D>::new("SELECT value FROM documents WHERE namespace = $1 AND key = $2")
            .text(namespace)
            .text(key)
            .fetch_optional(conn)
            .await
            .map_err(store_error::<D>)?;
        row.map(|row| D::read_json(&row, "value").map_err(|e| corrupt(namespace, key, e)))
            .transpose()
    }

    async fn write(
        conn: &mut D::Connection,
        namespace: &str,
        key: &str,
        value: &Value,
    ) -> Result<(), StoreError> {
        Bind::<D>::new(
            "INSERT INTO documents (namespace, key, value, updated_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, \
             updated_at = excluded.updated_at",
        )
        .text(namespace)
        .text(key)
        .json(value)
        .time(D::now())
        .execute(conn)
        .await
        .map_err(store_error::<D>)?;
        Ok(())
    }

    /// The document at `namespace`/`key`.
    pub(crate) async fn get(
        &self,
        namespace: &str,
        key: &str,
    ) -> Result<Option<Value>, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(store_error::<D>)?;
        Self::read(&mut conn, namespace, key).await
    }

    /// Stores `value` at `namespace`/`key`.
    pub(crate) async fn put(
        &self,
        namespace: &str,
        key: &str,
        value: &Value,
    ) -> Result<(), StoreError> {
        let mut tx = D::begin_write(&self.pool).await.map_err(store_error::<D>)?;
        Self::write(&mut tx, namespace, key, value).await?;
        tx.commit().await.map_err(store_error::<D>)
    }

    /// Every document of `namespace`, by key.
    pub(crate) async fn list(&self, namespace: &str) -> Result<Vec<(String, Value)>, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(store_error::<D>)?;
        let rows =
            Bind::<D>::new("SELECT key, value FROM documents WHERE namespace = $1 ORDER BY key")
                .text(namespace)
                .fetch_all(&mut conn)
                .await
                .map_err(store_error::<D>)?;
        rows.iter()
            .map(|row| {
                let key = D::text(row, "key").map_err(|e| corrupt(namespace, "?", e))?;
                let value = D::read_json(row, "value").map_err(|e| corrupt(namespace, &key, e))?;
                Ok((key, value))
            })
            .collect()
    }

    /// Deletes the document; says whether there was one.
    pub(crate) async fn delete(&self, namespace: &str, key: &str) -> Result<bool, StoreError> {
        let mut tx = D::begin_write(&self.pool).await.map_err(store_error::<D>)?;
        let deleted = Bind::<D>::new("DELETE FROM documents WHERE namespace = $1 AND key = $2")
            .text(namespace)
            .text(key)
            .execute(&mut tx)
            .await
            .map_err(store_error::<D>)?;
        tx.commit().await.map_err(store_error::<D>)?;
        Ok(deleted > 0)
    }

    /// Replaces the document with what `update` makes of it, holding the document from
    /// the read to the write (see [`Dialect::lock_key`](crate::sql::Dialect::lock_key)), so updates take turns even on a
    /// document that does not exist yet.
    pub(crate) async fn update(
        &self,
        namespace: &str,
        key: &str,
        update: DocumentUpdate,
    ) -> Result<Value, StoreError> {
        let mut tx = D::begin_write(&self.pool).await.map_err(store_error::<D>)?;
        let lock = format!("document {}:{namespace}{key}", namespace.len());
        D::lock_key(&mut tx, &lock)
            .await
            .map_err(store_error::<D>)?;
        let current = Self::read(&mut tx, namespace, key).await?;
        let value = update(current);
        Self::write(&mut tx, namespace, key, &value).await?;
        tx.commit().await.map_err(store_error::<D>)?;
        Ok(value)
    }
}
