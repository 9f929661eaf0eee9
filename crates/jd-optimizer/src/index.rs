//! Where the tenants' resumes are indexed for retrieval (spec 003 section 3.3): their
//! chunks embedded once per resume in the tenant's part of a vector store, searched
//! hybrid (cosine above the floor and full text, fused). The
//! [retriever](crate::agents::retriever) asks it, and ranks the raw sections itself when
//! no index is configured or it fails.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_llm::EmbeddingModel;
use agent_runtime::vectors::{MetadataFilter, VectorQuery, VectorStore};
use job_capabilities::retrieval::{
    Chunk, HybridRetriever, RetrievalError, RetrievalOptions, SectionKind,
};
use serde_json::json;

use crate::records::ResumeChunk;

/// The vector collection the resumes' chunks are kept in.
pub const COLLECTION: &str = "jd_optimizer_resumes";

/// Where resumes are indexed: a vector store and the embedding model, or nothing (the
/// raw sections are then ranked by keywords).
#[derive(Clone, Debug, Default)]
pub struct ResumeIndex {
    retriever: Option<HybridRetriever>,
}

impl ResumeIndex {
    /// Resumes indexed in `store` with vectors from `embedder`.
    pub fn new(embedder: Arc<dyn EmbeddingModel>, store: Arc<dyn VectorStore>) -> Self {
        ResumeIndex {
            retriever: Some(HybridRetriever::new(embedder, store, COLLECTION)),
        }
    }

    /// No index: every retrieval ranks the raw sections by keywords.
    pub fn none() -> Self {
        ResumeIndex::default()
    }

    /// Whether an index is configured.
    pub fn is_configured(&self) -> bool {
        self.retriever.is_some()
    }

    /// The tenant's chunks of the resume best matching `query`, indexing the resume
    /// first if it is not indexed yet. `Ok(None)` when no index is configured.
    pub async fn search(
        &self,
        tenant: &str,
        resume_id: &str,
        sections: &[ResumeChunk],
        query: &str,
        options: &RetrievalOptions,
    ) -> Result<Option<Vec<ResumeChunk>>, RetrievalError> {
        let Some(retriever) = &self.retriever else {
            return Ok(None);
        };
        let this_resume = MetadataFilter::from([("document".to_owned(), json!(resume_id))]);
        // One embedding of the query: it probes whether the resume is indexed, then searches.
        let vector = retriever
            .embed(&[query.to_owned()])
            .await?
            .pop()
            .unwrap_or_default();
        let indexed = retriever
            .store()
            .query(
                COLLECTION,
                &VectorQuery {
                    tenant: tenant.to_owned(),
                    vector: vector.clone(),
                    top_k: 1,
                    filter: this_resume.clone(),
                    min_score: None,
                },
            )
            .await?;
        if indexed.is_empty() {
            let chunks: Vec<Chunk> = sections
                .iter()
                .enumerate()
                .map(|(position, c)| Chunk {
                    id: format!("{resume_id}:{}", c.id),
                    document: resume_id.to_owned(),
                    position,
                    section: serde_json::from_value(json!(c.section_type))
                        .unwrap_or(SectionKind::Other),
                    heading: String::new(),
                    text: c.content.clone(),
                })
                .collect();
            retriever
                .index(tenant, resume_id, &chunks, &BTreeMap::new())
                .await?;
            tracing::info!(tenant, resume_id, chunks = chunks.len(), "resume indexed");
        }
        let options = RetrievalOptions {
            filter: this_resume,
            ..options.clone()
        };
        let found = retriever
            .search_embedded(tenant, query, vector, &options)
            .await?;
        let prefix = format!("{resume_id}:");
        Ok(Some(
            found
                .into_iter()
                .filter_map(|hit| {
                    let id = hit.id.strip_prefix(&prefix)?;
                    let mut chunk = sections.iter().find(|c| c.id == id)?.clone();
                    chunk.relevance_score = hit.similarity.map_or(0.0, f64::from);
                    Some(chunk)
                })
                .collect(),
        ))
    }
}
