//! The optimization's agents, one module each: what it reads and writes, its prompt,
//! its recovery (spec 003 section 3).

pub mod analyzer;
pub mod gap;
pub mod retriever;
pub mod rewriter;
pub mod scorer;
