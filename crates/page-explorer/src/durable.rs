//! Phase 1 as a durable run (ADR 0013): the exploration is the one node of a graph run on
//! the runtime's checkpoints, and every model answer it gets is journaled through
//! [`RunContext::once`] before the orchestrator acts on it.
//!
//! A browser's page cannot be saved: the only way back to it is to do again what led to
//! it. So an interrupted exploration resumes by replay. The node runs again from the
//! starting page; each model call is answered from the journal, in order, and the
//! orchestrator repeats the browser actions those answers asked for, which rebuilds the
//! page, the memory and the loop guard exactly. When the journal runs out, the models are
//! called again: a kill -9 costs at most the one call that was in flight. The journal
//! wraps the one model the agents' session asks (`ExplorerModels::session`), so replayed
//! answers pass through its metered call as fresh ones do, and limits and the printed
//! cost count what the whole run paid.
//!
//! When the board behaves differently on replay (a call of another agent comes where the
//! journal has one), the journal of the interrupted run is left there and the models are
//! asked afresh from that point, under new keys, so a later resume takes the same path.
//!
//! ```no_run
//! # async fn run(models: page_explorer::agents::ExplorerModels) -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use agent_runtime::checkpoint::FileCheckpointStore;
//! use page_explorer::durable::{DurableExplore, explore_durable};
//! use page_explorer::{ChromiumBrowser, ExploreEvent, ExploreOptions, LaunchOptions};
//! let browser = Arc::new(ChromiumBrowser::launch(LaunchOptions::default()).await?);
//! let run = DurableExplore {
//!     run_id: "board-1".into(),
//!     store: Arc::new(FileCheckpointStore::new("explore-out/checkpoints")),
//!     report: Arc::new(|event: ExploreEvent| tracing::info!("{event}")),
//!     cancel: tokio_util::sync::CancellationToken::new(),
//! };
//! let options = ExploreOptions::new("Find how jobs are listed");
//! let explored = explore_durable(browser.clone(), models, "http://127.0.0.1:8080/", options, run).await?;
//! if let Some(browser) = Arc::into_inner(browser) {
//!     browser.close().await;
//! }
//! tracing::info!(replayed = explored.replayed, "{}", explored.exploration.output.understanding);
//! # Ok(()) }
//! ```

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_llm::{ChatModel, ChatRequest, ChatResponse, LlmError, StructuredOutputMode};
use agent_runtime::checkpoint::{CheckpointError, CheckpointStore};
use agent_runtime::graph::{
    END, GraphError, NodeContext, NodeError, RunContext, RunOptions, RunStatus, START, StateGraph,
    node_fn,
};
use agent_runtime::{EventSink, Session};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::agents::ExplorerModels;
use crate::browser::Browser;
use crate::orchestrator::{Exploration, ExploreError, ExploreOptions, ExploreStop, explore};
use crate::report::ExploreEvent;

/// The graph's state: what is explored, and what exploring found once it has.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ExploreRun {
    /// Where exploring starts (as given to the latest call: a resumed run explores the page
    /// at the address it is given).
    pub start_url: String,
    /// The exploration, once the node has finished.
    pub exploration: Option<Exploration>,
}

/// Where a durable exploration keeps its checkpoints, and who hears it.
pub struct DurableExplore {
    /// The run's id: the same id resumes it.
    pub run_id: String,
    /// The checkpoints and the journal of model answers.
    pub store: Arc<dyn CheckpointStore>,
    /// Every step as it happens (on a resume, the replayed steps again).
    pub report: Arc<dyn EventSink<ExploreEvent>>,
    /// Stops exploring between steps: what was learned is returned, and the run stays
    /// unfinished, to be resumed with the same id.
    pub cancel: CancellationToken,
}

/// What a durable exploration gave back.
#[derive(Debug, Clone)]
pub struct DurableExploration {
    /// The exploration.
    pub exploration: Exploration,
    /// Model answers taken from the journal of an interrupted run instead of the models.
    pub replayed: usize,
    /// The run had finished before this call: nothing was explored again.
    pub already_finished: bool,
}

/// A durable exploration could not run.
#[derive(Debug, thiserror::Error)]
pub enum DurableExploreError {
    /// The starting page did not open.
    #[error(transparent)]
    Explore(#[from] ExploreError),
    /// The checkpoint store failed.
    #[error("the exploration's checkpoints: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// The graph did not build (a bug).
    #[error("the exploration's graph: {0}")]
    Graph(#[from] GraphError),
    /// The run ended without an exploration.
    #[error("the exploration {run_id:?} did not finish: {reason}")]
    Unfinished {
        /// The run.
        run_id: String,
        /// Why.
        reason: String,
    },
}

/// Explores `start_url` as a durable run `run.run_id` in `run.store`: started, resumed by
/// replay after an interruption, or, when it had finished, its exploration returned as
/// saved. See the [module](self) for how a resume works.
pub async fn explore_durable(
    browser: Arc<dyn Browser>,
    models: ExplorerModels,
    start_url: &str,
    options: ExploreOptions,
    run: DurableExplore,
) -> Result<DurableExploration, DurableExploreError> {
    let replayed = Arc::new(AtomicUsize::new(0));
    let opening: Arc<Mutex<Option<ExploreError>>> = Arc::default();
    let graph = {
        let (replayed, opening, cancel) = (replayed.clone(), opening.clone(), run.cancel);
        let start_url = start_url.to_owned();
        let explore_node = node_fn(move |ctx: &NodeContext<ExploreRun, ExploreEvent>| {
            let (browser, models, options) = (browser.clone(), models.clone(), options.clone());
            let (replayed, opening, cancel) = (replayed.clone(), opening.clone(), cancel.clone());
            let start_url = start_url.clone();
            Box::pin(async move {
                let models = journaled(models, ctx.run(), &replayed);
                // The page as it is served now: a directory served on loopback has another
                // port after a restart.
                let saved =
                    ctx.update(|run| std::mem::replace(&mut run.start_url, start_url.clone()));
                if saved != start_url {
                    tracing::info!(%saved, now = %start_url, "the run resumes on the start page's new address");
                }
                let report = NodeEvents(ctx);
                // Cancelling stops exploring between steps (what was learned is kept), not
                // the node in the middle of one: the cancel token is not the session's.
                let explored =
                    explore(&*browser, &models, &start_url, &options, &report, &cancel).await;
                let exploration = match explored {
                    Ok(exploration) => exploration,
                    Err(error) => {
                        let message = error.to_string();
                        *lock(&opening) = Some(error);
                        return Err(NodeError::fatal(message));
                    }
                };
                let cancelled = exploration.stop == Some(ExploreStop::Cancelled);
                ctx.update(|run| run.exploration = Some(exploration));
                match cancelled {
                    // The run stays unfinished: started again, it resumes by replay.
                    true => Err(NodeError::fatal(CANCELLED)),
                    false => Ok(()),
                }
            })
        });
        StateGraph::new()
            .add_node("explore", explore_node)
            .add_edge(START, "explore")
            .add_edge("explore", END)
            .compile()?
    };
    let state = ExploreRun {
        start_url: start_url.to_owned(),
        exploration: None,
    };
    let session = Session::new(run.run_id.clone(), state).with_events(run.report);
    let options = RunOptions::new().with_run_id(run.run_id.clone());
    let result = graph.run_durable(&session, run.store, options).await?;
    if let Some(error) = lock(&opening).take() {
        return Err(error.into());
    }
    let already_finished = result.steps.is_empty() && result.status == RunStatus::Success;
    match result.state.exploration {
        Some(exploration) => Ok(DurableExploration {
            exploration,
            replayed: replayed.load(Ordering::SeqCst),
            already_finished,
        }),
        None => Err(DurableExploreError::Unfinished {
            run_id: run.run_id,
            reason: result
                .reason
                .unwrap_or_else(|| format!("the run ended {}", result.status.as_str())),
        }),
    }
}

/// Why a cancelled exploration's node does not finish.
const CANCELLED: &str = "exploring was cancelled; started again with the same run id, it resumes";

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The node's events go out through its session.
struct NodeEvents<'a>(&'a NodeContext<ExploreRun, ExploreEvent>);

impl EventSink<ExploreEvent> for NodeEvents<'_> {
    fn emit(&self, event: ExploreEvent) {
        self.0.emit(event);
    }
}

/// `models` with every answer journaled in `run` (one sequence for all four agents, as
/// the orchestrator asks them one at a time). The answers reach the session's meter
/// through its one metered call, replayed ones too, so limits and the printed cost count
/// what the whole run paid.
fn journaled(
    models: ExplorerModels,
    run: &RunContext,
    replayed: &Arc<AtomicUsize>,
) -> ExplorerModels {
    let journal = Arc::new(AnswerJournal {
        run: run.clone(),
        next: AtomicU64::new(1),
        epoch: AtomicU64::new(0),
        replayed: replayed.clone(),
    });
    models.map_model(|model| Arc::new(JournaledModel { model, journal }))
}

/// Which agent asks `request`: the opening of its system prompt ("You are the Classifier
/// of ..."), each agent's being its own.
fn asker(request: &ChatRequest) -> String {
    let system = request.system.as_deref().unwrap_or_default();
    system.chars().take(ASKER_CHARS).collect()
}

/// How much of a system prompt names the agent asking.
const ASKER_CHARS: usize = 48;

/// The sequence of model answers of one exploration, in the run's journal.
struct AnswerJournal {
    run: RunContext,
    /// The next call's number.
    next: AtomicU64,
    /// Bumped when the replay diverges from the journal: later answers get new keys.
    epoch: AtomicU64,
    replayed: Arc<AtomicUsize>,
}

/// One journaled answer.
#[derive(Serialize, Deserialize)]
struct JournaledAnswer {
    /// The agent that asked (see [`asker`]).
    agent: String,
    /// Its answer.
    response: ChatResponse,
}

impl AnswerJournal {
    /// The key of call `n` in the current epoch.
    fn key(&self, n: u64) -> String {
        match self.epoch.load(Ordering::SeqCst) {
            0 => format!("explore/answer/{n}"),
            epoch => format!("explore/answer/{epoch}.{n}"),
        }
    }

    /// The key for `agent`'s call `n`: moved to a new epoch when the journal holds
    /// another agent's answer there.
    fn key_for(&self, agent: &str, n: u64) -> String {
        loop {
            let key = self.key(n);
            let recorded = self.run.journal().get(&key);
            let other = recorded
                .and_then(|value| serde_json::from_value::<JournaledAnswer>(value).ok())
                .filter(|answer| answer.agent != agent);
            match other {
                None => return key,
                Some(answer) => {
                    tracing::warn!(
                        call = n,
                        expected = %answer.agent,
                        asked = agent,
                        "the replay differs from the interrupted exploration; asking the models from here"
                    );
                    self.epoch.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    }
}

/// The agents' model with its answers journaled (see the [module](self)).
struct JournaledModel {
    model: Arc<dyn ChatModel>,
    journal: Arc<AnswerJournal>,
}

#[async_trait::async_trait]
impl ChatModel for JournaledModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let agent = asker(request);
        let n = self.journal.next.fetch_add(1, Ordering::SeqCst);
        let key = self.journal.key_for(&agent, n);
        let mut failure = None;
        let mut called = false;
        let answer = {
            let (failure, called, agent) = (&mut failure, &mut called, &agent);
            self.journal
                .run
                .once(&key, move || async move {
                    *called = true;
                    match self.model.chat(request).await {
                        Ok(response) => Ok(JournaledAnswer {
                            agent: agent.clone(),
                            response,
                        }),
                        Err(error) => {
                            let message = error.to_string();
                            *failure = Some(error);
                            Err(NodeError::fatal(message))
                        }
                    }
                })
                .await
        };
        match answer {
            Ok(answer) => {
                if !called {
                    // Paid for by the interrupted run; the session's meter records it as
                    // it records every answer.
                    self.journal.replayed.fetch_add(1, Ordering::SeqCst);
                    tracing::debug!(call = n, agent, "model answer replayed from the journal");
                }
                Ok(answer.response)
            }
            Err(error) => Err(failure.unwrap_or_else(|| {
                LlmError::Transport(format!(
                    "journaling the model's answer: {}",
                    error.message()
                ))
            })),
        }
    }

    fn structured_output_mode(&self) -> StructuredOutputMode {
        self.model.structured_output_mode()
    }

    fn default_model(&self) -> Option<String> {
        self.model.default_model()
    }

    fn context_window(&self) -> Option<u32> {
        self.model.context_window()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_llm::testing::ScriptedModel;
    use agent_runtime::{CostLimits, CostMeter};

    /// A request as the agent whose system prompt is `system` sends it.
    fn asked_by(system: &str) -> ChatRequest {
        let mut request = ChatRequest::from_prompt("what now?");
        request.system = Some(system.to_owned());
        request
    }

    /// The agents' model `answering` with its answers journaled in `run`, as a resumed
    /// node makes it: its call count starts again at 1.
    fn journaled_on(
        run: &RunContext,
        answering: &ScriptedModel,
        replayed: &Arc<AtomicUsize>,
    ) -> Arc<dyn ChatModel> {
        let models = ExplorerModels::single(
            Arc::new(answering.clone()),
            CostMeter::new(CostLimits::default()),
        );
        journaled(models, run, replayed).model
    }

    const CLASSIFIER: &str = "You are the Classifier of a job-search page explorer. Decide.";
    const SUMMARIZER: &str = "You are the Summarizer of a job-search page explorer. Compress.";

    #[tokio::test]
    async fn a_replay_takes_each_agents_answer_and_asks_afresh_where_another_agent_answered() {
        let run = RunContext::standalone("explore-run");
        let replayed = Arc::new(AtomicUsize::new(0));
        // The interrupted run: the Classifier answered call 1.
        let first = ScriptedModel::from_texts(["a new page"]);
        let asked = journaled_on(&run, &first, &replayed)
            .chat(&asked_by(CLASSIFIER))
            .await
            .unwrap();
        assert_eq!(asked.text(), "a new page");

        // Resumed with the Classifier at call 1: its answer comes from the journal.
        let second = ScriptedModel::from_texts(["never asked"]);
        let again = journaled_on(&run, &second, &replayed)
            .chat(&asked_by(CLASSIFIER))
            .await
            .unwrap();
        assert_eq!(again.text(), "a new page");
        assert!(second.requests().is_empty());
        assert_eq!(replayed.load(Ordering::SeqCst), 1);

        // Resumed with the Summarizer at call 1 (the board behaves differently): the
        // Classifier's answer is not taken for it; the model is asked, under a new key.
        let third = ScriptedModel::from_texts(["a summary"]);
        let other = journaled_on(&run, &third, &replayed)
            .chat(&asked_by(SUMMARIZER))
            .await
            .unwrap();
        assert_eq!(other.text(), "a summary");
        assert_eq!(third.requests().len(), 1);
        assert_eq!(replayed.load(Ordering::SeqCst), 1);
        assert!(run.journal().get("explore/answer/1.1").is_some());
    }
}
