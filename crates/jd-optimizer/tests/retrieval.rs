//! Retrieval with the real local embedding model (`LOCAL_EMBEDDING_MODEL_DIR`, which
//! `cargo xtask test` provides) on SQLite: the resume is indexed once per resume and
//! tenant, searched by the weighted keywords, and the retrieval cached.
#![cfg(test)]

mod common;

use std::sync::Arc;

use agent_backends::SqliteSessionStore;
use agent_llm::LocalEmbeddingModel;
use agent_runtime::vectors::VectorStore;
use common::{Script, gap_answer, pair, run, sre_analysis, sre_rewrite};
use jd_optimizer::index::{COLLECTION, ResumeIndex};
use jd_optimizer::records::RetrievalSource;

fn script(runs: usize) -> Script {
    (0..runs).fold(Script::new(), |s, _| {
        s.json("analyzer", sre_analysis())
            .json("rewriter", sre_rewrite())
            .json("gap", gap_answer())
    })
}

#[tokio::test]
async fn a_resume_is_indexed_once_per_tenant_and_searched_by_the_jds_keywords() {
    let embedder = Arc::new(LocalEmbeddingModel::from_env().expect(
        "LOCAL_EMBEDDING_MODEL_DIR must name all-MiniLM-L6-v2's files (cargo xtask setup)",
    ));
    let store = Arc::new(SqliteSessionStore::in_memory().await.unwrap().vectors());
    let index = ResumeIndex::new(embedder, store.clone());
    let (optimizer, _) = common::optimizer(&script(3));
    let optimizer = optimizer.with_index(index.clone());

    let acme = pair("senior-sre").for_tenant("acme");
    let first = run(&optimizer, &acme).await.0.unwrap();
    assert_eq!(first.result.retrieval_source, RetrievalSource::Hybrid);
    assert_eq!(first.result.cache.retrieval, Some(false));
    let chunks = &first.state.relevant_chunks;
    assert!(!chunks.is_empty() && chunks.len() <= 6);
    // The Tripwell chunk holds Kubernetes, AWS, Terraform and Prometheus: it ranks first.
    assert!(chunks[0].content.contains("Tripwell"), "{chunks:?}");
    assert!(
        chunks
            .iter()
            .all(|c| c.relevance_score >= 0.3 || c.relevance_score == 0.0)
    );
    let indexed = store.count(COLLECTION, "acme").await.unwrap();
    assert_eq!(indexed as usize, first.state.resume_sections.len());

    // The same JD again: the retrieval comes from the cache.
    let again = run(&optimizer, &acme).await.0.unwrap();
    assert_eq!(again.result.retrieval_source, RetrievalSource::Cache);
    assert_eq!(again.state.relevant_chunks, first.state.relevant_chunks);

    // Another tenant gets an index of its own; acme's is not indexed again.
    let globex = run(&optimizer, &pair("senior-sre").for_tenant("globex"))
        .await
        .0
        .unwrap();
    assert_eq!(globex.result.retrieval_source, RetrievalSource::Hybrid);
    assert_eq!(store.count(COLLECTION, "acme").await.unwrap(), indexed);
    assert_eq!(store.count(COLLECTION, "globex").await.unwrap(), indexed);
}
