//! What the optimization's nodes reach the world through: the model, the resume index
//! and the caches.

use crate::cache::OptimizerCache;
use crate::index::ResumeIndex;
use crate::llm::AgentCaller;

/// The nodes' dependencies, shared by every run of a [`crate::JdOptimizer`].
#[derive(Debug, Clone)]
pub struct Deps {
    /// The agents' model calls.
    pub caller: AgentCaller,
    /// Where resumes are indexed for retrieval.
    pub index: ResumeIndex,
    /// The caches.
    pub cache: OptimizerCache,
}
