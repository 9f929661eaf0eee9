//! [`HashedEmbeddings`]: a deterministic embedding model with no weights, for tests and
//! dry runs.

use async_trait::async_trait;

use crate::error::LlmError;
use crate::model::{EmbeddingModel, EmbeddingRequest, EmbeddingResponse};
use crate::types::Usage;

/// Embeds a text by the hashing trick: each lowercased word (and each pair of adjacent
/// words) adds one to a dimension picked by its FNV-1a hash, and the vector is
/// L2-normalized. Texts sharing words point the same way, so similarity means word
/// overlap: a lexical stand-in for a real embedding model, the same on every machine.
///
/// ```
/// use agent_llm::{EmbeddingModel, EmbeddingRequest};
/// use agent_llm::testing::HashedEmbeddings;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = HashedEmbeddings::new(256);
/// let out = model.embed(EmbeddingRequest {
///     inputs: vec!["rust backend engineer".into(), "Rust backend".into(), "pastry chef".into()],
///     ..Default::default()
/// }).await.unwrap();
/// let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
/// assert!(dot(&out.vectors[0], &out.vectors[1]) > dot(&out.vectors[0], &out.vectors[2]));
/// # });
/// ```
#[derive(Debug, Clone, Copy)]
pub struct HashedEmbeddings {
    dimensions: usize,
}

impl HashedEmbeddings {
    /// Vectors of `dimensions` (at least 8).
    pub fn new(dimensions: usize) -> Self {
        HashedEmbeddings {
            dimensions: dimensions.max(8),
        }
    }

    /// The vector of one text.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let words: Vec<String> = text
            .split(|c: char| !(c.is_alphanumeric() || matches!(c, '+' | '#')))
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let mut vector = vec![0.0f32; self.dimensions];
        let mut add = |feature: &str, weight: f32| {
            let index = (fnv1a(feature) % self.dimensions as u64) as usize;
            vector[index] += weight;
        };
        for word in &words {
            add(word, 1.0);
        }
        for pair in words.windows(2) {
            add(&format!("{} {}", pair[0], pair[1]), 0.5);
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            vector.iter_mut().for_each(|x| *x /= norm);
        }
        vector
    }
}

fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[async_trait]
impl EmbeddingModel for HashedEmbeddings {
    async fn embed(&self, request: EmbeddingRequest) -> Result<EmbeddingResponse, LlmError> {
        let tokens: usize = request
            .inputs
            .iter()
            .map(|t| t.split_whitespace().count())
            .sum();
        Ok(EmbeddingResponse {
            model: format!("hashed-{}", self.dimensions),
            vectors: request.inputs.iter().map(|t| self.vector(t)).collect(),
            usage: Usage {
                input_tokens: tokens as u64,
                ..Usage::default()
            },
        })
    }
}
