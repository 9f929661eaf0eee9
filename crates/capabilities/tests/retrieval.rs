//! Hybrid retrieval with the real local embedding model (all-MiniLM-L6-v2) over both real
//! stores, SQLite and PostgreSQL + pgvector: resumes cut into section-typed chunks,
//! found again by meaning and by words, per tenant. Needs `LOCAL_EMBEDDING_MODEL_DIR`
//! and the pgvector server (`cargo xtask test` sets both up); fails without them.
#![cfg(test)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use agent_backends::{PgVectorStore, SqliteSessionStore};
use agent_llm::LocalEmbeddingModel;
use agent_runtime::vectors::VectorStore;
use job_capabilities::retrieval::{HybridRetriever, RetrievalOptions, SectionKind, chunk_document};
use serde_json::json;

fn embedder() -> Arc<LocalEmbeddingModel> {
    Arc::new(
        LocalEmbeddingModel::from_env()
            .unwrap_or_else(|error| panic!("{error}\n(run the tests with `cargo xtask test`)")),
    )
}

fn workspace(path: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(path),
    )
    .unwrap()
}

async fn behaves(store: Arc<dyn VectorStore>, collection: &str) {
    let retriever = HybridRetriever::new(embedder(), store.clone(), collection);
    let maya = chunk_document("maya-resume", &workspace("fixtures/job-hunter/resume.txt"));
    let john = chunk_document(
        "john-resume",
        &workspace("../shared/realdata/docs/hr-helper/sample_resume.txt"),
    );
    assert!(maya.len() >= 6, "{maya:#?}");
    let stored = retriever
        .index("maya", "maya-resume", &maya, &BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(stored, maya.len());
    retriever
        .index("john", "john-resume", &john, &BTreeMap::new())
        .await
        .unwrap();

    // By meaning: no chunk says "container orchestration", the Kubernetes ones mean it.
    let options = RetrievalOptions::default();
    let hits = retriever
        .search(
            "maya",
            "container orchestration for other teams' services",
            &options,
        )
        .await
        .unwrap();
    assert!(!hits.is_empty());
    assert!(hits[0].text.contains("Kubernetes"), "{hits:#?}");
    assert!(
        hits.iter().all(|h| h.document == "maya-resume"),
        "only Maya's own"
    );
    assert!(hits.len() <= options.top_k);

    // By words too: a word match counts even where the meaning is weak.
    let hits = retriever
        .search("maya", "ClickHouse", &options)
        .await
        .unwrap();
    assert!(
        hits.iter()
            .any(|h| h.text.contains("ClickHouse") && h.lexical_rank == Some(1))
    );

    // Unrelated: nothing clears the floor, and no word matches.
    let hits = retriever
        .search("maya", "sourdough baking and pastry lamination", &options)
        .await
        .unwrap();
    assert!(hits.is_empty(), "{hits:#?}");

    // A section filter.
    let skills = RetrievalOptions {
        filter: BTreeMap::from([("section".to_owned(), json!("skills"))]),
        ..RetrievalOptions::default()
    };
    let hits = retriever
        .search("maya", "databases and message queues", &skills)
        .await
        .unwrap();
    assert!(!hits.is_empty());
    assert!(
        hits.iter().all(|h| h.section == Some(SectionKind::Skills)),
        "{hits:#?}"
    );

    // John's tenant sees John's resume only.
    let hits = retriever
        .search("john", "Kubernetes", &options)
        .await
        .unwrap();
    assert!(
        hits.iter().all(|h| h.document == "john-resume"),
        "{hits:#?}"
    );

    // Indexing a document again replaces its chunks.
    retriever
        .index("maya", "maya-resume", &maya[..2], &BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(store.count(collection, "maya").await.unwrap(), 2);
    assert_eq!(
        store.count(collection, "john").await.unwrap(),
        john.len() as u64
    );
}

#[tokio::test]
async fn hybrid_retrieval_on_sqlite() {
    let store = SqliteSessionStore::in_memory().await.unwrap().vectors();
    behaves(Arc::new(store), "resume_chunks").await;
}

#[tokio::test]
async fn hybrid_retrieval_on_postgres() {
    let url = std::env::var("PGVECTOR_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5433/postgres".into());
    let store = PgVectorStore::connect(&url).await.unwrap_or_else(|error| {
        panic!("{error}\n(the pgvector server is not running: `cargo xtask setup` starts it)")
    });
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let collection = format!("retrieval_{}_{nanos}", std::process::id());
    behaves(Arc::new(store), &collection).await;
}
