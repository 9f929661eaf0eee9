//! # jd-optimizer
//!
//! The JD optimizer of spec 003 on the agent runtime: a resume tuned to a job
//! description, scored, explained, with its gaps named. Its V2 performance profile is
//! the default.
//!
//! [`JdOptimizer`] runs the graph of [`nodes`]:
//!
//! ```text
//! jd_analysis → resume_retrieval → bullet_rewriting → ats_scoring → (router) → gap_analysis → result_aggregation
//! ```
//!
//! - the [JD analyzer](agents::analyzer) (light tier, temperature 0, re-asked once;
//!   cached per tenant and JD hash) after [`analysis::check_jd`] refused what cannot be
//!   analysed;
//! - the [retriever](agents::retriever) (no model call): hybrid search of the tenant's
//!   indexed resume, or the raw sections ranked by keywords, with a warning;
//! - the [rewriter](agents::rewriter) (primary tier) on a compact context; every bullet
//!   names its chunks and passes the [fabrication check](fabrication) or is dropped;
//! - the [scorer](agents::scorer) in two lanes: the deterministic [`scoring`] first, a
//!   model only when the rules are not confident;
//! - the [router](router): proceed, repair the weak bullets ([`repair`]), or stop on a
//!   plateau or a [budget](budget) limit;
//! - the [gap analyzer](agents::gap), or its deterministic diff;
//! - the [aggregator](aggregate), which makes the [result](result).
//!
//! Everything the run knows is its typed [`state::OptimizationState`]; everything it
//! says as it runs is an [`OptimizeEvent`].

pub mod agents;
pub mod aggregate;
pub mod analysis;
pub mod budget;
pub mod bullets;
pub mod cache;
pub mod config;
pub mod deps;
pub mod document;
pub mod dry_run;
pub mod events;
pub mod fabrication;
pub mod guards;
pub mod index;
pub mod input;
pub mod interview;
pub mod llm;
pub mod nodes;
pub mod pipeline;
pub mod product;
pub mod qualifications;
pub mod records;
pub mod repair;
pub mod result;
pub mod router;
pub mod scoring;
pub mod state;
pub use job_capabilities::text;

pub use config::{Budget, OptimizeConfig};
pub use events::OptimizeEvent;
pub use input::OptimizeRequest;
pub use pipeline::{JdOptimizer, Optimization, OptimizeError};
pub use result::OptimizationResult;
