//! Hybrid retrieval: a query answered by both of a [`VectorStore`]'s signals, nearest
//! neighbours of its embedding and full-text matches of its words, fused by reciprocal
//! rank (RRF: each list adds `1 / (k + rank)`, `k` = 60).
//!
//! Why RRF rather than a weighted sum of scores: cosine similarities and BM25 (or
//! `ts_rank`) scores live on scales that differ by store, by query length and by corpus,
//! so a weighted sum needs calibrating per deployment; ranks need none, and RRF is the
//! fusion that held up best without tuning in the literature (Cormack, Clarke and
//! Büttcher, SIGIR 2009). The relevance floor is on the one calibrated signal: a chunk
//! enters from the vector side only when its cosine similarity reaches `min_similarity`;
//! a lexical match always counts (it contains the words). Near-duplicate chunks (the same
//! bullet in two resume versions) are kept once, the better-ranked.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use agent_llm::{EmbeddingModel, EmbeddingRequest, LlmError};
use agent_runtime::vectors::{
    LexicalQuery, MetadataFilter, VectorHit, VectorQuery, VectorRecord, VectorStore,
    VectorStoreError,
};
use serde_json::{Value, json};

use super::chunk::{Chunk, SectionKind};

/// Inputs embedded per request.
const EMBED_BATCH: usize = 64;

/// What can go wrong indexing or retrieving.
#[derive(Debug, thiserror::Error)]
pub enum RetrievalError {
    /// The embedding model failed.
    #[error("embedding: {0}")]
    Embedding(#[from] LlmError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] VectorStoreError),
    /// The model answered with another number of vectors than inputs.
    #[error("the embedding model gave {got} vectors for {asked} inputs")]
    VectorCount {
        /// Inputs sent.
        asked: usize,
        /// Vectors received.
        got: usize,
    },
}

/// How to retrieve.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrievalOptions {
    /// At most this many chunks.
    pub top_k: usize,
    /// The vector side's floor: cosine similarity below it does not count.
    pub min_similarity: f32,
    /// Candidates asked of each signal (at least `top_k`).
    pub candidates: usize,
    /// Only chunks whose metadata matches (e.g. `{"section": "experience"}`).
    pub filter: MetadataFilter,
    /// Chunks whose word sets overlap at least this much (Jaccard) with a better-ranked
    /// one are dropped as near duplicates.
    pub duplicate_overlap: f32,
}

impl Default for RetrievalOptions {
    /// 6 chunks, a floor of 0.3, 24 candidates per signal, no filter, duplicates at 0.9.
    fn default() -> Self {
        RetrievalOptions {
            top_k: 6,
            min_similarity: 0.3,
            candidates: 24,
            filter: MetadataFilter::new(),
            duplicate_overlap: 0.9,
        }
    }
}

/// A chunk retrieved, with why.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrieved {
    /// The chunk's id.
    pub id: String,
    /// Its document.
    pub document: String,
    /// Its section.
    pub section: Option<SectionKind>,
    /// Its text.
    pub text: String,
    /// The fused score (sum of `1 / (60 + rank)` over the lists it is in).
    pub score: f32,
    /// Its cosine similarity, when the vector side found it above the floor.
    pub similarity: Option<f32>,
    /// Its rank (from 1) among the lexical matches, when it matched.
    pub lexical_rank: Option<usize>,
}

/// Indexes chunks and retrieves them, for one collection of a [`VectorStore`].
#[derive(Clone)]
pub struct HybridRetriever {
    embedder: Arc<dyn EmbeddingModel>,
    store: Arc<dyn VectorStore>,
    collection: String,
}

impl std::fmt::Debug for HybridRetriever {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HybridRetriever")
            .field("collection", &self.collection)
            .finish_non_exhaustive()
    }
}

/// The RRF constant.
const RRF_K: f32 = 60.0;

fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn overlap(a: &HashSet<String>, b: &HashSet<String>) -> f32 {
    let union = a.union(b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(b).count() as f32 / union as f32
}

impl HybridRetriever {
    /// Retrieval over `collection` of `store`, embedding with `embedder`.
    pub fn new(
        embedder: Arc<dyn EmbeddingModel>,
        store: Arc<dyn VectorStore>,
        collection: impl Into<String>,
    ) -> Self {
        HybridRetriever {
            embedder,
            store,
            collection: collection.into(),
        }
    }

    /// The store.
    pub fn store(&self) -> &dyn VectorStore {
        self.store.as_ref()
    }

    /// The collection.
    pub fn collection(&self) -> &str {
        &self.collection
    }

    /// Embeds `texts`, in batches; one vector per text, in order.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, RetrievalError> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(EMBED_BATCH) {
            let answer = self
                .embedder
                .embed(EmbeddingRequest {
                    inputs: batch.to_vec(),
                    ..EmbeddingRequest::default()
                })
                .await?;
            if answer.vectors.len() != batch.len() {
                return Err(RetrievalError::VectorCount {
                    asked: batch.len(),
                    got: answer.vectors.len(),
                });
            }
            vectors.extend(answer.vectors);
        }
        Ok(vectors)
    }

    /// Indexes a document's chunks for `tenant`, replacing what was indexed for that
    /// document before; `extra` metadata goes on every chunk. Returns the chunks stored.
    pub async fn index(
        &self,
        tenant: &str,
        document: &str,
        chunks: &[Chunk],
        extra: &BTreeMap<String, Value>,
    ) -> Result<usize, RetrievalError> {
        let texts: Vec<String> = chunks.iter().map(|c| c.text.clone()).collect();
        let vectors = self.embed(&texts).await?;
        let this_document = MetadataFilter::from([("document".to_owned(), json!(document))]);
        self.store
            .delete_matching(&self.collection, tenant, &this_document)
            .await?;
        let records: Vec<VectorRecord> = chunks
            .iter()
            .zip(vectors)
            .map(|(chunk, vector)| {
                let mut metadata = extra.clone();
                metadata.insert("document".into(), json!(document));
                metadata.insert("section".into(), json!(chunk.section.as_str()));
                metadata.insert("position".into(), json!(chunk.position));
                VectorRecord {
                    tenant: tenant.to_owned(),
                    id: chunk.id.clone(),
                    vector,
                    text: chunk.text.clone(),
                    metadata,
                }
            })
            .collect();
        self.store.upsert(&self.collection, &records).await?;
        Ok(records.len())
    }

    /// The tenant's chunks best matching `query`, by both signals fused.
    pub async fn search(
        &self,
        tenant: &str,
        query: &str,
        options: &RetrievalOptions,
    ) -> Result<Vec<Retrieved>, RetrievalError> {
        let vector = self
            .embed(&[query.to_owned()])
            .await?
            .pop()
            .unwrap_or_default();
        self.search_embedded(tenant, query, vector, options).await
    }

    /// [`search`](Self::search) with the query's embedding already made (by
    /// [`embed`](Self::embed)), for a caller that used it already.
    pub async fn search_embedded(
        &self,
        tenant: &str,
        query: &str,
        vector: Vec<f32>,
        options: &RetrievalOptions,
    ) -> Result<Vec<Retrieved>, RetrievalError> {
        let candidates = options.candidates.max(options.top_k);
        let nearest = self
            .store
            .query(
                &self.collection,
                &VectorQuery {
                    tenant: tenant.to_owned(),
                    vector: vector.clone(),
                    top_k: candidates,
                    filter: options.filter.clone(),
                    min_score: Some(options.min_similarity),
                },
            )
            .await?;
        let matching = self
            .store
            .lexical(
                &self.collection,
                &LexicalQuery {
                    tenant: tenant.to_owned(),
                    text: query.to_owned(),
                    top_k: candidates,
                    filter: options.filter.clone(),
                },
            )
            .await?;
        Ok(fuse(&nearest, &matching, options))
    }
}

/// Reciprocal-rank fusion of the two lists, near duplicates dropped, `top_k` kept.
pub fn fuse(
    nearest: &[VectorHit],
    matching: &[VectorHit],
    options: &RetrievalOptions,
) -> Vec<Retrieved> {
    let mut fused: HashMap<&str, Retrieved> = HashMap::new();
    let entry = |hit: &VectorHit| Retrieved {
        id: hit.id.clone(),
        document: hit
            .metadata
            .get("document")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        section: hit
            .metadata
            .get("section")
            .and_then(|s| serde_json::from_value(s.clone()).ok()),
        text: hit.text.clone(),
        score: 0.0,
        similarity: None,
        lexical_rank: None,
    };
    for (rank, hit) in nearest.iter().enumerate() {
        let found = fused.entry(&hit.id).or_insert_with(|| entry(hit));
        found.score += 1.0 / (RRF_K + rank as f32 + 1.0);
        found.similarity = Some(hit.score);
    }
    for (rank, hit) in matching.iter().enumerate() {
        let found = fused.entry(&hit.id).or_insert_with(|| entry(hit));
        found.score += 1.0 / (RRF_K + rank as f32 + 1.0);
        found.lexical_rank = Some(rank + 1);
    }
    let mut ranked: Vec<Retrieved> = fused.into_values().collect();
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    let mut kept: Vec<(Retrieved, HashSet<String>)> = Vec::new();
    for candidate in ranked {
        let candidate_words = words(&candidate.text);
        let duplicate = kept
            .iter()
            .any(|(_, seen)| overlap(seen, &candidate_words) >= options.duplicate_overlap);
        if !duplicate {
            kept.push((candidate, candidate_words));
        }
        if kept.len() == options.top_k {
            break;
        }
    }
    kept.into_iter().map(|(retrieved, _)| retrieved).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(id: &str, score: f32, text: &str) -> VectorHit {
        VectorHit {
            id: id.into(),
            score,
            text: text.into(),
            metadata: BTreeMap::from([
                ("document".to_owned(), json!("r")),
                ("section".to_owned(), json!("experience")),
            ]),
        }
    }

    #[test]
    fn both_lists_count_and_duplicates_go() {
        let nearest = [
            hit("a", 0.9, "Built the billing platform in Rust"),
            hit("b", 0.8, "Led four engineers"),
            hit("c", 0.7, "built the billing platform in rust"),
        ];
        let matching = [
            hit("d", 7.0, "Rust and Go on Kubernetes"),
            hit("a", 5.0, "Built the billing platform in Rust"),
        ];
        let options = RetrievalOptions {
            top_k: 3,
            ..RetrievalOptions::default()
        };
        let fused = fuse(&nearest, &matching, &options);
        let ids: Vec<&str> = fused.iter().map(|r| r.id.as_str()).collect();
        // a is in both lists; c repeats a and goes; d (lexical first) beats b (vector second).
        assert_eq!(ids, ["a", "d", "b"]);
        assert_eq!(fused[0].similarity, Some(0.9));
        assert_eq!(fused[0].lexical_rank, Some(2));
        assert_eq!(fused[1].similarity, None);
        assert_eq!(fused[0].section, Some(SectionKind::Experience));
        assert_eq!(fused[0].document, "r");
        let expected = 1.0 / 61.0 + 1.0 / 62.0;
        assert!((fused[0].score - expected).abs() < 1e-6);
    }
}
