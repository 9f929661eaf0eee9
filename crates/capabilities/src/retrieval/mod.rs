//! Retrieval: documents cut into section-typed chunks ([`chunk_document`]), embedded and
//! stored per tenant, and found again by hybrid search ([`HybridRetriever`]: vector
//! similarity and full text fused by reciprocal rank, with a relevance floor and near
//! duplicates dropped).

mod chunk;
mod hybrid;

pub use chunk::{Chunk, MAX_CHUNK_CHARS, SectionKind, chunk_document};
pub use hybrid::{HybridRetriever, RetrievalError, RetrievalOptions, Retrieved, fuse};
