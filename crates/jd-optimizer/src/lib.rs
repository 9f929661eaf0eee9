//! # jd-optimizer
//!
//! The JD optimizer of spec 003 on the agent runtime: a resume tuned to a job
//! description, scored, explained, with its gaps named. Its V2 performance profile is
//! the default.
//!
//! [`JdOptimizer`] runs a graph of seven nodes:
//!
//! ```text
//! jd_analysis → resume_retrieval → bullet_rewriting → ats_scoring → (router) → gap_analysis → result_aggregation
//! ```
//!
//! - the JD analyzer (light tier, temperature 0, re-asked once; cached per tenant and JD
//!   hash) after a check refused what cannot be analysed;
//! - the retriever (no model call): hybrid search of the tenant's indexed resume
//!   ([`index::ResumeIndex`]), or the raw sections ranked by keywords, with a warning;
//! - the rewriter (primary tier) on a compact context; every bullet names its chunks and
//!   passes the fabrication check or is dropped;
//! - the scorer in two lanes: the deterministic [`scoring`] first, a model only when the
//!   rules are not confident;
//! - the router: proceed, repair the weak bullets, or stop on a plateau or a budget
//!   limit ([`Budget`]);
//! - the gap analyzer, or its deterministic diff;
//! - the aggregator, which makes the [`OptimizationResult`].
//!
//! Everything the run knows is its typed [`state::OptimizationState`]; everything it
//! says as it runs is an [`OptimizeEvent`]. Hosted, it is an [`product::OptimizeProduct`]
//! (and the interview preparation of [`interview`]).

pub mod bullets;
pub mod cache;
pub mod document;
pub mod dry_run;
pub mod index;
pub mod interview;
pub mod product;
pub mod records;
pub mod scoring;
pub mod state;

mod agents;
mod aggregate;
mod analysis;
mod budget;
mod config;
mod deps;
mod events;
mod fabrication;
mod guards;
mod input;
mod llm;
mod nodes;
mod pipeline;
mod qualifications;
mod repair;
mod result;
mod router;

use job_capabilities::text;

pub use config::{Budget, OptimizeConfig};
pub use events::OptimizeEvent;
pub use input::OptimizeRequest;
pub use pipeline::{JdOptimizer, Optimization, OptimizeError};
pub use result::OptimizationResult;
