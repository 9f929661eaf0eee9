//! One behaviour suite for agent-runtime's `VectorStore`, run on every store: SQLite (a
//! file, reopened) and PostgreSQL with pgvector (the server `cargo xtask test` starts, or
//! `PGVECTOR_URL`; the test fails without it).
#![cfg(test)]

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_backends::{PgVectorStore, SqliteSessionStore};
use agent_runtime::vectors::{LexicalQuery, VectorQuery, VectorRecord, VectorStore};
use serde_json::{Value, json};

fn record(tenant: &str, id: &str, vector: &[f32], text: &str, section: &str) -> VectorRecord {
    VectorRecord {
        tenant: tenant.into(),
        id: id.into(),
        vector: vector.to_vec(),
        text: text.into(),
        metadata: BTreeMap::from([
            ("section".to_owned(), json!(section)),
            ("year".to_owned(), json!(2024)),
        ]),
    }
}

fn ids(hits: &[agent_runtime::vectors::VectorHit]) -> Vec<&str> {
    hits.iter().map(|h| h.id.as_str()).collect()
}

fn lexical(tenant: &str, text: &str) -> LexicalQuery {
    LexicalQuery {
        tenant: tenant.into(),
        text: text.into(),
        top_k: 10,
        filter: BTreeMap::new(),
    }
}

/// The behaviour every store shows; `collection` is fresh for the run.
pub async fn behaves(store: Arc<dyn VectorStore>, collection: &str) {
    let ada = [
        record(
            "ada",
            "a1",
            &[1.0, 0.0, 0.0],
            "Built the billing platform in Rust",
            "experience",
        ),
        record(
            "ada",
            "a2",
            &[0.8, 0.6, 0.0],
            "Led a team of four engineers",
            "experience",
        ),
        record(
            "ada",
            "a3",
            &[0.0, 1.0, 0.0],
            "Kubernetes and Terraform on AWS",
            "skills",
        ),
        record(
            "ada",
            "a4",
            &[0.0, 0.0, 1.0],
            "Studied mathematics in Edinburgh",
            "education",
        ),
    ];
    let bob = [record(
        "bob",
        "b1",
        &[1.0, 0.0, 0.0],
        "Rust engineering at a bank",
        "experience",
    )];
    store.upsert(collection, &ada).await.unwrap();
    store.upsert(collection, &bob).await.unwrap();
    assert_eq!(store.count(collection, "ada").await.unwrap(), 4);
    assert_eq!(store.count(collection, "bob").await.unwrap(), 1);
    assert_eq!(store.count(collection, "carol").await.unwrap(), 0);
    assert_eq!(store.count("another", "ada").await.unwrap(), 0);

    // Nearest first, cosine scores, only the tenant's own.
    let hits = store
        .query(collection, &VectorQuery::new("ada", vec![1.0, 0.1, 0.0], 3))
        .await
        .unwrap();
    assert_eq!(ids(&hits), ["a1", "a2", "a3"]);
    assert!(
        (hits[0].score - 0.995_037).abs() < 1e-4,
        "{}",
        hits[0].score
    );
    assert_eq!(hits[0].text, "Built the billing platform in Rust");
    assert_eq!(hits[0].metadata["section"], json!("experience"));
    assert_eq!(hits[0].metadata["year"], json!(2024));
    let bobs = store
        .query(
            collection,
            &VectorQuery::new("bob", vec![0.0, 1.0, 0.0], 10),
        )
        .await
        .unwrap();
    assert_eq!(
        ids(&bobs),
        ["b1"],
        "another tenant's records are never seen"
    );

    // A floor and a metadata filter.
    let mut floored = VectorQuery::new("ada", vec![1.0, 0.1, 0.0], 10);
    floored.min_score = Some(0.8);
    assert_eq!(
        ids(&store.query(collection, &floored).await.unwrap()),
        ["a1", "a2"]
    );
    let mut skills = VectorQuery::new("ada", vec![1.0, 0.1, 0.0], 10);
    skills.filter.insert("section".into(), json!("skills"));
    assert_eq!(
        ids(&store.query(collection, &skills).await.unwrap()),
        ["a3"]
    );
    let mut numbers = VectorQuery::new("ada", vec![1.0, 0.0, 0.0], 10);
    numbers.filter.insert("year".into(), json!(2023));
    assert!(store.query(collection, &numbers).await.unwrap().is_empty());

    // Another dimension sees nothing of these.
    let wide = store
        .query(
            collection,
            &VectorQuery::new("ada", vec![1.0, 0.0, 0.0, 0.0], 10),
        )
        .await
        .unwrap();
    assert!(wide.is_empty());

    // Lexical: stems, any word, the tenant's own only, filters.
    let found = store
        .lexical(collection, &lexical("ada", "rust engineering"))
        .await
        .unwrap();
    let mut found_ids = ids(&found);
    found_ids.sort();
    assert_eq!(
        found_ids,
        ["a1", "a2"],
        "'engineering' finds 'engineers' by its stem"
    );
    let rust_only = store
        .lexical(collection, &lexical("ada", "Rust!"))
        .await
        .unwrap();
    assert_eq!(ids(&rust_only), ["a1"]);
    let tricky = store
        .lexical(collection, &lexical("ada", "\"rust\" OR NEAR(a b) -- ' ;"))
        .await
        .unwrap();
    assert_eq!(
        ids(&tricky),
        ["a1"],
        "query syntax in the text is taken as words"
    );
    let bob_found = store
        .lexical(collection, &lexical("bob", "rust"))
        .await
        .unwrap();
    assert_eq!(ids(&bob_found), ["b1"]);
    let mut filtered = lexical("ada", "rust engineers kubernetes");
    filtered.filter.insert("section".into(), json!("skills"));
    assert_eq!(
        ids(&store.lexical(collection, &filtered).await.unwrap()),
        ["a3"]
    );
    assert!(
        store
            .lexical(collection, &lexical("ada", ""))
            .await
            .unwrap()
            .is_empty()
    );

    // An upsert replaces, text index included.
    store
        .upsert(
            collection,
            &[record(
                "ada",
                "a1",
                &[0.0, 0.0, 1.0],
                "Wrote compilers in OCaml",
                "experience",
            )],
        )
        .await
        .unwrap();
    assert_eq!(store.count(collection, "ada").await.unwrap(), 4);
    assert!(
        store
            .lexical(collection, &lexical("ada", "billing"))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        ids(&store
            .lexical(collection, &lexical("ada", "ocaml"))
            .await
            .unwrap()),
        ["a1"]
    );

    // Deleting: only the tenant's own, counted.
    let deleted = store
        .delete(
            collection,
            "ada",
            &["a1".into(), "b1".into(), "nope".into()],
        )
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    assert_eq!(store.count(collection, "bob").await.unwrap(), 1);
    assert!(
        store
            .lexical(collection, &lexical("ada", "ocaml"))
            .await
            .unwrap()
            .is_empty()
    );

    // Deleting by metadata: the tenant's matching records only.
    store
        .upsert(
            collection,
            &[record(
                "bob",
                "b2",
                &[0.0, 1.0, 0.0],
                "Skills of Bob",
                "skills",
            )],
        )
        .await
        .unwrap();
    let skills = BTreeMap::from([("section".to_owned(), json!("skills"))]);
    assert_eq!(
        store
            .delete_matching(collection, "ada", &skills)
            .await
            .unwrap(),
        1
    );
    assert_eq!(store.count(collection, "ada").await.unwrap(), 2);
    assert_eq!(store.count(collection, "bob").await.unwrap(), 2);
    let error = store
        .delete_matching(collection, "ada", &BTreeMap::new())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("needs a filter"), "{error}");

    // Bad requests are refused, naming what is wrong.
    let mut bad = VectorQuery::new("ada", vec![1.0, 0.0, 0.0], 10);
    bad.filter
        .insert("a'); drop table vectors; --".into(), Value::Null);
    let error = store.query(collection, &bad).await.unwrap_err();
    assert!(error.to_string().contains("metadata filter key"), "{error}");
    let error = store
        .query(collection, &VectorQuery::new("ada", Vec::new(), 10))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("empty"), "{error}");
    let error = store
        .upsert(
            collection,
            &[record("ada", "a9", &[], "No vector", "skills")],
        )
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("\"a9\" has an empty vector"),
        "{error}"
    );
    let error = store.upsert("bad name!", &ada).await.unwrap_err();
    assert!(error.to_string().contains("collection"), "{error}");
}

#[tokio::test]
async fn sqlite_vectors_behave_and_persist() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.db");
    let sessions = SqliteSessionStore::open(&path).await.unwrap();
    behaves(Arc::new(sessions.vectors()), "resume_chunks").await;
    sessions.close().await;
    let reopened = SqliteSessionStore::open(&path).await.unwrap().vectors();
    assert_eq!(reopened.count("resume_chunks", "ada").await.unwrap(), 2);
    let hits = reopened
        .query(
            "resume_chunks",
            &VectorQuery::new("ada", vec![0.0, 1.0, 0.0], 1),
        )
        .await
        .unwrap();
    assert_eq!(ids(&hits), ["a2"], "a2 and a4 are left, a2 the nearer");
}

/// The pgvector server: `PGVECTOR_URL`, else the one `cargo xtask` starts.
fn pgvector_url() -> String {
    std::env::var("PGVECTOR_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5433/postgres".to_owned())
}

#[tokio::test]
async fn postgres_vectors_behave() {
    let url = pgvector_url();
    let store = match PgVectorStore::connect(&url).await {
        Ok(store) => store,
        Err(error) => panic!(
            "{error}\n(the pgvector server is not running: `cargo xtask setup` starts it, or set PGVECTOR_URL)"
        ),
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let collection = format!("suite_{}_{nanos}", std::process::id());
    behaves(Arc::new(store), &collection).await;
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let hnsw: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'vectors_hnsw_3' AND indexdef LIKE '%hnsw%vector_cosine_ops%'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(
        hnsw, 1,
        "the 3-dimension vectors have their HNSW cosine index"
    );
    sqlx::query("DELETE FROM vectors WHERE collection = $1")
        .bind(&collection)
        .execute(&pool)
        .await
        .unwrap();
}
