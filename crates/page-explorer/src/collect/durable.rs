//! A checkpointed collection is a graph run on the runtime's checkpoints: node `listings`
//! reads the listing pages, node `details` the jobs' own pages, and each saves where the
//! walk stands after every page ([`NodeContext::save_step`]). Resumed, the run goes on in
//! the node it was in, from the page it was on; a finished run is returned as it was.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use agent_runtime::Session;
use agent_runtime::graph::{
    CompiledGraph, END, GraphError, NodeContext, NodeError, RunOptions, START, StateGraph, node_fn,
};

use super::progress::{Progress, Stage};
use super::walk::{Halt, WALK_STEP, Walk};
use super::{CollectCheckpoints, CollectEnd, CollectError, CollectOptions, Collection};
use crate::browser::Browser;

/// As [`collect`](super::collect), as a durable run `checkpoints.run_id()` in
/// `checkpoints`' store (its earlier checkpoints are removed first): where the walk stands
/// is saved after every listing page and every detail page, so that
/// [`resume_collection`] can go on after an interruption. A checkpoint that cannot be
/// written stops the collection as [`CollectEnd::CheckpointFailed`]; a store that cannot
/// take the run's first checkpoint is an error.
pub async fn collect_checkpointed(
    browser: Arc<dyn Browser>,
    options: &CollectOptions,
    checkpoints: &CollectCheckpoints,
) -> Result<Collection, CollectError> {
    checkpoints.clear().await?;
    run(browser, options, checkpoints).await
}

/// Goes on with the collection whose checkpoints are in `checkpoints`, from the page it was
/// on (a listing that grows in place is read again from its start, the jobs already
/// collected skipped) or the detail pages it had left; a finished collection is returned as
/// it was. The jobs carried over are counted in [`Collection::resumed_jobs`].
pub async fn resume_collection(
    browser: Arc<dyn Browser>,
    options: &CollectOptions,
    checkpoints: &CollectCheckpoints,
) -> Result<Collection, CollectError> {
    if !checkpoints.exists().await? {
        return Err(CollectError::NothingToResume {
            run_id: checkpoints.run_id().to_owned(),
        });
    }
    run(browser, options, checkpoints).await
}

/// What the nodes of one call tell it.
#[derive(Default)]
struct Shared {
    /// A node has run in this call (the first one takes over the jobs of earlier ones).
    ran: AtomicBool,
    /// Jobs collected before this call.
    resumed_jobs: AtomicUsize,
    /// Why the walk halted, when it did.
    halted: Mutex<Option<CollectEnd>>,
}

async fn run(
    browser: Arc<dyn Browser>,
    options: &CollectOptions,
    checkpoints: &CollectCheckpoints,
) -> Result<Collection, CollectError> {
    let shared = Arc::new(Shared::default());
    let graph = collection_graph(browser, Arc::new(options.clone()), shared.clone())?;
    let run_id = checkpoints.run_id().to_owned();
    let session = Session::new(run_id.clone(), Progress::default());
    let options = RunOptions::new().with_run_id(run_id.clone());
    let result = graph
        .run_durable(&session, checkpoints.store(), options)
        .await?;
    let halted = shared
        .halted
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let end = match (halted, &result.state.stage) {
        (Some(end), _) | (None, &Stage::Done { end }) => end,
        (None, _) => {
            return Err(CollectError::Stopped {
                run_id,
                reason: result
                    .reason
                    .unwrap_or_else(|| format!("the run ended {}", result.status.as_str())),
            });
        }
    };
    // A finished run, returned as it was: every job is from before this call.
    let resumed_jobs = match shared.ran.load(Ordering::SeqCst) {
        true => shared.resumed_jobs.load(Ordering::SeqCst),
        false => result.state.jobs.len(),
    };
    Ok(result.state.into_collection(end, resumed_jobs))
}

/// The two stages of a walk, each a node.
#[derive(Clone, Copy)]
enum Part {
    Listings,
    Details,
}

fn collection_graph(
    browser: Arc<dyn Browser>,
    options: Arc<CollectOptions>,
    shared: Arc<Shared>,
) -> Result<CompiledGraph<Progress>, GraphError> {
    let node = |part: Part| {
        let (browser, options, shared) = (browser.clone(), options.clone(), shared.clone());
        node_fn(move |ctx: &NodeContext<Progress>| {
            let (browser, options, shared) = (browser.clone(), options.clone(), shared.clone());
            Box::pin(async move { walk_part(ctx, &*browser, &options, &shared, part).await })
        })
    };
    StateGraph::new()
        .add_node("listings", node(Part::Listings))
        .add_node("details", node(Part::Details))
        .add_edge(START, "listings")
        .add_edge("listings", "details")
        .add_edge("details", END)
        .compile()
}

/// Runs `part` of the walk in node `ctx`, from the step it saved (a resume inside it) or
/// the state it starts with; the state is where the walk stands at the end.
async fn walk_part(
    ctx: &NodeContext<Progress>,
    browser: &dyn Browser,
    options: &CollectOptions,
    shared: &Shared,
    part: Part,
) -> Result<(), NodeError> {
    let progress = match ctx.saved_step::<Progress>(WALK_STEP)? {
        Some(saved) => saved,
        None => ctx.state(),
    };
    let first_here = !shared.ran.swap(true, Ordering::SeqCst);
    let mut walk = Walk::in_node(browser, options, ctx, progress, first_here);
    let outcome = match part {
        Part::Listings => walk.listing_stage().await.map(|_| ()),
        Part::Details => walk.detail_stage().await.map(|_| ()),
    };
    if first_here {
        shared
            .resumed_jobs
            .store(walk.resumed_jobs(), Ordering::SeqCst);
    }
    ctx.update(|state| *state = walk.progress());
    match outcome {
        Ok(()) => Ok(()),
        Err(Halt(end)) => {
            *shared.halted.lock().unwrap_or_else(PoisonError::into_inner) = Some(end);
            Err(NodeError::fatal(format!(
                "collecting stopped ({end:?}); resuming goes on from the last page"
            )))
        }
    }
}
