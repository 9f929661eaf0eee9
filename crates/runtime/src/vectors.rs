//! Vector search: [`VectorStore`] keeps texts with their embeddings and metadata in named
//! collections, every record and every query scoped by a tenant (a user, an account), and
//! answers nearest-neighbour queries by cosine similarity and lexical queries by its
//! full-text index, for hybrid retrieval above it.
//!
//! agent-backends implements it on SQLite (exact search, in the deployment's database)
//! and on PostgreSQL with pgvector (HNSW); both pass one behaviour suite.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One stored text: its embedding, its metadata, its tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorRecord {
    /// Who it belongs to; queries see only their tenant's records.
    pub tenant: String,
    /// Its id within the tenant and collection; an upsert with the same id replaces it.
    pub id: String,
    /// The embedding (any dimension; a query compares it with same-dimension records).
    pub vector: Vec<f32>,
    /// The text, for the lexical index and for the caller.
    pub text: String,
    /// What the caller filters on and reads back (e.g. `{"section": "experience"}`).
    pub metadata: BTreeMap<String, Value>,
}

/// Records whose metadata has each of these keys with exactly that value.
pub type MetadataFilter = BTreeMap<String, Value>;

/// A nearest-neighbour query.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorQuery {
    /// The tenant whose records are searched.
    pub tenant: String,
    /// The query embedding.
    pub vector: Vec<f32>,
    /// At most this many hits.
    pub top_k: usize,
    /// Only records matching this filter.
    pub filter: MetadataFilter,
    /// Only hits with at least this cosine similarity.
    pub min_score: Option<f32>,
}

impl VectorQuery {
    /// The `top_k` nearest records of `tenant` to `vector`, with no filter or floor.
    pub fn new(tenant: impl Into<String>, vector: Vec<f32>, top_k: usize) -> Self {
        VectorQuery {
            tenant: tenant.into(),
            vector,
            top_k,
            filter: MetadataFilter::new(),
            min_score: None,
        }
    }
}

/// A full-text query.
#[derive(Debug, Clone, PartialEq)]
pub struct LexicalQuery {
    /// The tenant whose records are searched.
    pub tenant: String,
    /// Words to look for (any of them; the store ranks by its relevance function).
    pub text: String,
    /// At most this many hits.
    pub top_k: usize,
    /// Only records matching this filter.
    pub filter: MetadataFilter,
}

/// A record found, with its score: cosine similarity for [`VectorStore::query`] (higher
/// is nearer, at most 1), the store's relevance for [`VectorStore::lexical`] (higher is
/// better, comparable only within one answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorHit {
    /// The record's id.
    pub id: String,
    /// Its score.
    pub score: f32,
    /// Its text.
    pub text: String,
    /// Its metadata.
    pub metadata: BTreeMap<String, Value>,
}

/// What can go wrong with a vector store.
#[derive(Debug, thiserror::Error)]
pub enum VectorStoreError {
    /// The backend failed (connection, I/O, constraint).
    #[error("vector store backend: {0}")]
    Backend(String),
    /// Stored data could not be read back.
    #[error("vector store data is corrupt: {0}")]
    Corrupt(String),
    /// The request cannot be answered as asked (an empty vector, a bad filter key, a
    /// collection name that is not a name).
    #[error("invalid vector store request: {0}")]
    Invalid(String),
}

/// Keeps embedded texts by collection and tenant. Object-safe: take an
/// `Arc<dyn VectorStore>`.
#[async_trait]
pub trait VectorStore: Send + Sync {
    /// Inserts the records, replacing those with the same collection, tenant and id.
    async fn upsert(
        &self,
        collection: &str,
        records: &[VectorRecord],
    ) -> Result<(), VectorStoreError>;

    /// Removes the tenant's records with these ids; returns how many there were.
    async fn delete(
        &self,
        collection: &str,
        tenant: &str,
        ids: &[String],
    ) -> Result<u64, VectorStoreError>;

    /// Removes the tenant's records whose metadata matches `filter` (e.g. every chunk of
    /// one document); returns how many there were. An empty filter is refused.
    async fn delete_matching(
        &self,
        collection: &str,
        tenant: &str,
        filter: &MetadataFilter,
    ) -> Result<u64, VectorStoreError>;

    /// The tenant's records nearest to the query vector (cosine similarity, highest
    /// first), among those of the same dimension.
    async fn query(
        &self,
        collection: &str,
        query: &VectorQuery,
    ) -> Result<Vec<VectorHit>, VectorStoreError>;

    /// The tenant's records matching the query's words, most relevant first.
    async fn lexical(
        &self,
        collection: &str,
        query: &LexicalQuery,
    ) -> Result<Vec<VectorHit>, VectorStoreError>;

    /// How many records the tenant has in the collection.
    async fn count(&self, collection: &str, tenant: &str) -> Result<u64, VectorStoreError>;
}

/// Checks a collection name or a metadata key: 1-64 ASCII letters, digits, `_`, `-` or
/// `.` (they reach SQL as identifiers or JSON paths).
///
/// ```
/// use agent_runtime::vectors::check_name;
/// assert!(check_name("collection", "resume_chunks").is_ok());
/// assert!(check_name("filter key", "a'); drop").is_err());
/// ```
pub fn check_name(what: &str, name: &str) -> Result<(), VectorStoreError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(VectorStoreError::Invalid(format!(
            "{what} {name:?}: use 1 to 64 letters, digits, '_', '-' or '.'"
        )))
    }
}

/// Checks an upsert before any of it is written: the collection's name, and no record with
/// an empty vector.
pub fn check_upsert(collection: &str, records: &[VectorRecord]) -> Result<(), VectorStoreError> {
    check_name("collection", collection)?;
    match records.iter().find(|record| record.vector.is_empty()) {
        Some(record) => Err(VectorStoreError::Invalid(format!(
            "record {:?} has an empty vector",
            record.id
        ))),
        None => Ok(()),
    }
}

/// Checks the filter of a [`VectorStore::delete_matching`]: deleting by metadata needs
/// one (ids remove records one by one).
///
/// ```
/// use agent_runtime::vectors::{MetadataFilter, check_delete_filter};
/// assert!(check_delete_filter(&MetadataFilter::new()).is_err());
/// ```
pub fn check_delete_filter(filter: &MetadataFilter) -> Result<(), VectorStoreError> {
    if filter.is_empty() {
        return Err(VectorStoreError::Invalid(
            "delete_matching needs a filter (delete ids to remove records one by one)".into(),
        ));
    }
    Ok(())
}

/// Checks the vector of a [`VectorStore::query`]: nearest to nothing means nothing.
///
/// ```
/// use agent_runtime::vectors::check_query_vector;
/// assert!(check_query_vector(&[]).is_err());
/// assert!(check_query_vector(&[0.5]).is_ok());
/// ```
pub fn check_query_vector(vector: &[f32]) -> Result<(), VectorStoreError> {
    if vector.is_empty() {
        return Err(VectorStoreError::Invalid(
            "the query vector is empty".into(),
        ));
    }
    Ok(())
}

/// The cosine similarity of two vectors of one dimension (0 when either is zero).
///
/// ```
/// use agent_runtime::vectors::cosine;
/// assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
/// assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
/// ```
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut aa, mut bb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        0.0
    } else {
        dot / (aa.sqrt() * bb.sqrt())
    }
}

/// English words too common to search for (both stores' full-text queries leave them
/// out, so that they rank alike).
const STOP_WORDS: &[&str] = &[
    "about", "all", "an", "and", "any", "are", "as", "at", "be", "but", "by", "can", "for", "from",
    "has", "have", "he", "her", "his", "how", "if", "in", "into", "is", "it", "its", "me", "my",
    "no", "not", "of", "on", "or", "our", "she", "so", "than", "that", "the", "their", "them",
    "then", "there", "these", "they", "this", "those", "to", "was", "we", "were", "what", "when",
    "which", "who", "will", "with", "you", "your",
];

/// The distinct words of `text` worth searching for, lowercased: runs of letters and
/// digits (with `+`, `#` and `.` inside, as in "c++", "c#", "node.js"), at least 2
/// characters, not a common English word, at most 32 words. Stores build their full-text
/// queries from these.
///
/// ```
/// use agent_runtime::vectors::query_words;
/// assert_eq!(query_words("Senior C++ / Rust engineer, and Rust!"), ["senior", "c++", "rust", "engineer"]);
/// ```
pub fn query_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for raw in text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '+' | '#' | '.'))) {
        let word = raw.trim_matches('.').to_lowercase();
        if word.chars().count() >= 2
            && !STOP_WORDS.contains(&word.as_str())
            && !words.contains(&word)
        {
            words.push(word);
        }
        if words.len() == 32 {
            break;
        }
    }
    words
}
