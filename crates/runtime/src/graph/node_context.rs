//! What a node runs with: [`NodeContext`], the run and the session in one, and durable
//! agent loops inside a node.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_llm::{ChatModel, ExtractError, Extracted, Message};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::checkpointer::{Checkpointer, SessionNow};
use super::{NodeError, RunContext};
use crate::checkpoint::{CheckpointError, JsonText};
use crate::{
    AgentContext, AgentIdentity, AgentLoop, AgentResult, AgentRun, Ask, RunSaver, Session,
    SessionMarks,
};

/// The context of one node run: the run (id, node, step, journal, cancellation, through
/// `Deref` to [`RunContext`]) and the [`Session`] whose state the graph checkpoints,
/// routes on and returns.
///
/// Agents run with [`run_agent`](Self::run_agent) share that session, so their tools
/// read and change the graph's state, and in a checkpointed run they are durable: saved
/// after every round and, after a crash, continued at the last completed round.
///
/// ```
/// use agent_runtime::graph::{NodeContext, RunOptions, StateGraph, node_fn};
///
/// #[derive(Debug, Clone, Default)]
/// struct Draft { words: u32 }
///
/// let graph = StateGraph::sequence([
///     ("write", node_fn(|ctx: &NodeContext<Draft, String>| Box::pin(async move {
///         ctx.update(|d| d.words += 120);
///         ctx.emit(format!("wrote at step {}", ctx.step()));
///         Ok(())
///     }))),
/// ])
/// .compile()?;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let result = graph.run(Draft::default(), RunOptions::new()).await;
/// assert_eq!(result.state.words, 120);
/// # });
/// # Ok::<(), agent_runtime::graph::GraphError>(())
/// ```
pub struct NodeContext<S, E = ()> {
    run: RunContext,
    session: Session<S, E>,
    checkpointer: Option<Arc<Checkpointer>>,
    progress: Mutex<NodeProgress>,
    /// Agent runs started in this node run, by agent name (for their keys).
    started: Mutex<HashMap<String, u32>>,
}

impl<S, E> fmt::Debug for NodeContext<S, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeContext")
            .field("run", &self.run)
            .field("session", &self.session.id())
            .field("durable", &self.checkpointer.is_some())
            .finish_non_exhaustive()
    }
}

impl<S, E> Deref for NodeContext<S, E> {
    type Target = RunContext;

    fn deref(&self) -> &RunContext {
        &self.run
    }
}

/// What a node has done so far, saved in a checkpoint taken inside it.
///
/// A resumed node runs again from its start, so the session goes back to the state and
/// marks it had when the node started (`start_state`, `start`): the node's code before
/// its agents does what it did, on what it saw then, and the events it emits again get
/// the ordinals they had (and are recognized as replays). Each agent run restored moves
/// the session on: a finished one to its end state and marks, the one that was running
/// to the state of the last checkpoint and its marks.
///
/// It is kept only as the text of the node's last checkpoint (which that checkpoint and
/// the store's encoder share): a save reads the parts it keeps from that text as they
/// are ([`Parts`]) and writes the new text around the part it changes, so the node holds
/// no second copy of its agent runs or of the state it started with. The starting state
/// and marks are the checkpoint's before the node: taken at the node's first save, so a
/// node that saves nothing (and any node of a run without checkpoints) costs nothing
/// here.
#[derive(Debug, Clone, Default)]
pub(crate) struct NodeProgress {
    text: Option<JsonText>,
    /// Whether the text holds the node's starting state.
    has_start: bool,
}

/// The parts of a node's progress, borrowed from its text or from what a save adds. Its
/// fields, in this order, are the progress's JSON.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Parts<'a> {
    /// The session's marks when the node started (a [`SessionMarks`]).
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    start: Option<&'a RawValue>,
    /// The session's state when the node started.
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    start_state: Option<&'a RawValue>,
    /// Agent runs by key (`{agent}#{n}`, the n-th run of that agent in the node), each a
    /// [`SavedAgent`].
    #[serde(borrow)]
    agents: BTreeMap<Cow<'a, str>, &'a RawValue>,
    /// What the node saved of its own work, by key (see [`NodeContext::save_step`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", borrow)]
    steps: BTreeMap<Cow<'a, str>, &'a RawValue>,
}

/// What one save changes in a node's progress.
enum Change<'a> {
    /// An agent run, saved under its key.
    Agent(&'a str, &'a RawValue),
    /// A step the node saved, under its key.
    Step(&'a str, &'a RawValue),
}

/// One agent run as saved: written from a borrowed run, read back as an owned one.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SavedAgent<'a> {
    run: Cow<'a, AgentRun>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    scratchpad: Map<String, Value>,
    /// The session's marks when the run was saved.
    #[serde(default)]
    marks: Cow<'a, SessionMarks>,
    /// The session's state when the run finished (a running one's is the checkpoint's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    end_state: Option<JsonText>,
}

impl NodeProgress {
    /// The progress a checkpoint holds, each agent run in it checked to be readable.
    pub(crate) fn from_checkpoint(progress: &JsonText) -> Result<Self, serde_json::Error> {
        let parts: Parts<'_> = serde_json::from_str(progress.as_str())?;
        for saved in parts.agents.values() {
            serde_json::from_str::<SavedAgent<'_>>(saved.get())?;
        }
        Ok(Self {
            has_start: parts.start_state.is_some(),
            text: Some(progress.clone()),
        })
    }

    fn parts(&self) -> Result<Parts<'_>, serde_json::Error> {
        match &self.text {
            Some(text) => serde_json::from_str(text.as_str()),
            None => Ok(Parts::default()),
        }
    }

    /// The session's state when the node started, when it was kept.
    pub(crate) fn start_state<T: DeserializeOwned>(&self) -> Result<Option<T>, serde_json::Error> {
        self.parts()?
            .start_state
            .map(|state| serde_json::from_str(state.get()))
            .transpose()
    }

    /// The session's marks when the node started, when they were kept.
    pub(crate) fn start(&self) -> Result<Option<JsonText>, serde_json::Error> {
        self.parts()?
            .start
            .map(|marks| JsonText::from_string(marks.get().to_owned()))
            .transpose()
    }

    /// The agent run saved under `key`, if one was.
    fn agent(&self, key: &str) -> Result<Option<SavedAgent<'static>>, serde_json::Error> {
        self.parts()?
            .agents
            .get(key)
            .map(|saved| serde_json::from_str(saved.get()))
            .transpose()
    }

    /// The step saved under `key`, if one was.
    fn step<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, serde_json::Error> {
        self.parts()?
            .steps
            .get(key)
            .map(|saved| serde_json::from_str(saved.get()))
            .transpose()
    }

    /// Makes `change` and keeps the progress's new text (also returned, to be
    /// checkpointed). `start`, the node's starting state and marks, is kept with the
    /// first change.
    fn change(
        &mut self,
        start: Option<&(JsonText, Option<JsonText>)>,
        change: Change<'_>,
    ) -> Result<JsonText, serde_json::Error> {
        let (text, has_start) = {
            let mut parts = self.parts()?;
            if parts.start_state.is_none()
                && let Some((state, marks)) = start
            {
                parts.start_state = Some(state.raw());
                parts.start = marks.as_ref().map(JsonText::raw);
            }
            match change {
                Change::Agent(key, saved) => parts.agents.insert(Cow::Borrowed(key), saved),
                Change::Step(key, saved) => parts.steps.insert(Cow::Borrowed(key), saved),
            };
            (JsonText::of(&parts)?, parts.start_state.is_some())
        };
        self.text = Some(text.clone());
        self.has_start = has_start;
        Ok(text)
    }
}

impl<S, E> NodeContext<S, E> {
    pub(crate) fn new(
        run: RunContext,
        session: Session<S, E>,
        checkpointer: Option<Arc<Checkpointer>>,
        progress: NodeProgress,
    ) -> Self {
        Self {
            run,
            session,
            checkpointer,
            progress: Mutex::new(progress),
            started: Mutex::new(HashMap::new()),
        }
    }

    /// A context outside any graph, for unit-testing a node: the session's id as the run
    /// id, an in-memory journal, the session's cancellation token, step 0, no checkpoints.
    pub fn standalone(session: Session<S, E>) -> Self {
        let mut run = RunContext::standalone(session.id());
        run.cancel = Arc::new(session.cancellation().clone());
        Self::new(run, session, None, NodeProgress::default())
    }

    /// The run this node is part of (also reachable through `Deref`).
    pub fn run(&self) -> &RunContext {
        &self.run
    }

    /// The session: state, events, gates, bus, meter, cancellation.
    pub fn session(&self) -> &Session<S, E> {
        &self.session
    }

    /// A copy of the state.
    pub fn state(&self) -> S
    where
        S: Clone,
    {
        self.session.state().snapshot()
    }

    /// Reads the state without copying it.
    pub fn read<R>(&self, f: impl FnOnce(&S) -> R) -> R {
        self.session.state().read(f)
    }

    /// Changes the state (checkpointed after the node, or with the next round of a
    /// durable agent).
    pub fn update<R>(&self, f: impl FnOnce(&mut S) -> R) -> R {
        self.session.state().update(f)
    }

    /// Sends a product event through the session.
    pub fn emit(&self, event: E) {
        self.session.emit(event);
    }

    /// Asks the session's model for a `T`: the one metered call (see [`Ask`]), stopped
    /// when the run is cancelled.
    pub async fn extract<T>(&self, ask: Ask) -> Result<Extracted<T>, ExtractError>
    where
        T: schemars::JsonSchema + serde::de::DeserializeOwned,
    {
        self.session
            .extract_until(self.run.cancellation_token(), ask)
            .await
    }

    /// Sends the ask's request as it is to the session's model: the one metered plain
    /// call (see [`Session::chat`](crate::Session::chat)), stopped when the run is
    /// cancelled.
    pub async fn chat(&self, ask: Ask) -> Result<agent_llm::ChatResponse, agent_llm::LlmError> {
        self.session
            .chat_until(self.run.cancellation_token(), ask)
            .await
    }

    /// A context for code that acts as `agent` without a loop (a coordinator waiting at a
    /// gate, a tool called directly).
    pub fn agent_context(&self, agent: AgentIdentity) -> AgentContext<S, E> {
        self.session.context(agent)
    }

    /// What the node saved under `key` with [`save_step`](Self::save_step) before the run
    /// was interrupted: `None` in a node run that has not saved it (a fresh one, or a
    /// run without checkpoints).
    ///
    /// A node that works through many steps (pages, items, batches) saves where it
    /// stands after each one, and when the run resumes inside it, starts from there
    /// instead of from the beginning:
    ///
    /// ```
    /// use agent_runtime::graph::{NodeContext, NodeError};
    ///
    /// async fn count_to_ten(ctx: &NodeContext<u32>) -> Result<(), NodeError> {
    ///     let mut done: u32 = ctx.saved_step("counted")?.unwrap_or(0);
    ///     while done < 10 {
    ///         done += 1; // one unit of work
    ///         ctx.save_step("counted", &done).await?;
    ///     }
    ///     ctx.update(|total| *total = done);
    ///     Ok(())
    /// }
    /// ```
    pub fn saved_step<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Option<T>, NodeError> {
        self.progress().step(key).map_err(|e| {
            NodeError::fatal(format!(
                "the step {key:?} saved in node {:?} does not decode: {e}",
                self.run.node()
            ))
        })
    }

    /// Saves `value` under `key` as where this node stands, in a checkpoint inside the
    /// node, written before this returns; [`saved_step`](Self::saved_step) gives it back
    /// when the run resumes inside the node. The node's state changes are not saved by
    /// it (they are checkpointed when the node completes): what the node needs to go on
    /// belongs in `value`. Without a checkpoint store, it is kept for this node run only.
    pub async fn save_step<T: Serialize>(&self, key: &str, value: &T) -> Result<(), NodeError> {
        let value = serde_json::value::to_raw_value(value)
            .map_err(|e| NodeError::fatal(format!("the step {key:?} does not serialize: {e}")))?;
        let change = Change::Step(key, &value);
        let Some(checkpointer) = &self.checkpointer else {
            return self
                .progress()
                .change(None, change)
                .map(drop)
                .map_err(|e| NodeError::fatal(format!("the step {key:?} could not be kept: {e}")));
        };
        self.save_progress(checkpointer, change, None)
            .await
            .map_err(|e| {
                NodeError::fatal(format!(
                    "the step {key:?} of node {:?} could not be checkpointed: {e}",
                    self.run.node()
                ))
            })
    }

    /// Makes `change` to the node's progress and writes it in a checkpoint inside the
    /// node, with the session `now` when the caller took it (or as it is). Until the
    /// node's first save, the last checkpoint is the one the node started after: its
    /// state and marks are the node's starting ones.
    async fn save_progress(
        &self,
        checkpointer: &Checkpointer,
        change: Change<'_>,
        now: Option<SessionNow>,
    ) -> Result<(), CheckpointError> {
        let started = self.progress().has_start;
        let start = match started {
            false => Some(checkpointer.last_state_and_marks().await),
            true => None,
        };
        let progress = self.progress().change(start.as_ref(), change)?;
        checkpointer.save_progress(progress, now).await
    }

    fn progress(&self) -> MutexGuard<'_, NodeProgress> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The key of the next run of `agent` in this node run: `{agent}#{n}`.
    fn next_agent_key(&self, agent: &str) -> String {
        let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        let n = started.entry(agent.to_owned()).or_insert(0);
        *n += 1;
        format!("{agent}#{n}")
    }
}

impl<S, E> NodeContext<S, E>
where
    S: Send + Sync + 'static,
    E: Send + Sync + 'static,
{
    /// Runs `agent` in this node's session, starting with `message`, and returns what it
    /// gathered, like [`AgentLoop::run`].
    ///
    /// In a checkpointed run the agent is durable: its [`AgentRun`] and scratchpad are
    /// saved with the session's state after every model answer and every round of tool
    /// results. When the run resumes after a crash, the node runs again from its start,
    /// and each of its agent runs (matched by agent name and order within the node)
    /// continues from its last saved step: a finished one returns its result at once, an
    /// unfinished one makes no model call that had completed and runs no tool whose
    /// result had been saved. Work between the last save and the crash is done again;
    /// side effects that must not repeat go through [`RunContext::once`].
    pub async fn run_agent<M: ChatModel>(
        &self,
        agent: &AgentLoop<S, E, M>,
        message: impl Into<Message>,
    ) -> AgentResult {
        let key = self.next_agent_key(&agent.identity().name);
        let ctx = self.session.context(agent.identity().clone());
        // Checked when the progress was restored: it parses.
        let saved = self.progress().agent(&key).unwrap_or_else(|error| {
            tracing::error!(agent = %key, %error, "the agent's saved run does not read; it starts afresh");
            None
        });
        let mut run = match saved {
            Some(saved) => {
                tracing::info!(
                    agent = %key,
                    rounds = saved.run.rounds(),
                    finished = saved.run.is_finished(),
                    "agent run restored from its checkpoint"
                );
                ctx.scratchpad().update(|pad| *pad = saved.scratchpad);
                self.session.restore_marks(&saved.marks);
                if let Some(checkpointer) = &self.checkpointer {
                    let state = match saved.end_state {
                        Some(state) => state,
                        None => checkpointer.last_state().await,
                    };
                    if let Err(error) = checkpointer.restore_state(&state) {
                        tracing::error!(agent = %key, %error, "the agent's saved state does not fit");
                    }
                }
                saved.run.into_owned()
            }
            None => agent.start(message),
        };
        if !run.is_finished() {
            let saver = self.checkpointer.as_ref().map(|checkpointer| AgentSaver {
                node: self,
                checkpointer,
                key: &key,
                ctx: &ctx,
            });
            agent
                .resume_saving(&ctx, &mut run, saver.as_ref().map(|s| s as &dyn RunSaver))
                .await;
        }
        agent.result(&ctx, run)
    }
}

/// Saves one agent run of a node into the node's progress and the run's checkpoints.
struct AgentSaver<'a, S, E> {
    node: &'a NodeContext<S, E>,
    checkpointer: &'a Checkpointer,
    key: &'a str,
    ctx: &'a AgentContext<S, E>,
}

#[async_trait::async_trait]
impl<S, E> RunSaver for AgentSaver<'_, S, E>
where
    S: Send + Sync + 'static,
    E: Send + Sync + 'static,
{
    async fn save(&self, run: &AgentRun) -> Result<(), CheckpointError> {
        // The session as it is now: saved with the run, and the checkpoint's own. A
        // finished run keeps the state it ended with; a running one's is the checkpoint's.
        let finished = run.is_finished();
        let now = self.checkpointer.session_now(!finished)?;
        let saved = serde_json::value::to_raw_value(&SavedAgent {
            run: Cow::Borrowed(run),
            scratchpad: self.ctx.scratchpad().snapshot(),
            marks: Cow::Borrowed(&now.marks),
            end_state: now.state.clone().filter(|_| finished),
        })?;
        let change = Change::Agent(self.key, &saved);
        self.node
            .save_progress(self.checkpointer, change, Some(now))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(value: Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&value).unwrap()
    }

    #[test]
    fn the_progress_is_one_text_written_around_the_part_a_save_changes() {
        let start = (
            JsonText::of(&json!({"draft": "x"})).unwrap(),
            Some(JsonText::of(&json!({"emitted": 2})).unwrap()),
        );
        let mut progress = NodeProgress::default();
        let (first, second) = (raw(json!({"run": 1})), raw(json!({"run": 2})));
        progress
            .change(Some(&start), Change::Agent("writer#1", &first))
            .unwrap();
        // Later saves keep the starting state of the first; `start` is not asked again.
        progress
            .change(None, Change::Step("pages", &raw(json!(3))))
            .unwrap();
        let text = progress
            .change(None, Change::Agent("critic#1", &second))
            .unwrap();
        assert_eq!(
            text.as_str(),
            r#"{"start":{"emitted":2},"start_state":{"draft":"x"},"agents":{"critic#1":{"run":2},"writer#1":{"run":1}},"steps":{"pages":3}}"#
        );
        // The node keeps that text and nothing else: the checkpoint's own.
        assert!(progress.text.as_ref().is_some_and(|kept| *kept == text));
        assert_eq!(progress.step::<u32>("pages").unwrap(), Some(3));
        assert_eq!(
            progress.start_state::<Value>().unwrap(),
            Some(json!({"draft": "x"}))
        );
        assert_eq!(
            progress.start().unwrap().unwrap().as_str(),
            r#"{"emitted":2}"#
        );
        // Another agent's save replaces only its own part.
        let text = progress
            .change(None, Change::Agent("writer#1", &raw(json!({"run": 3}))))
            .unwrap();
        assert!(
            text.as_str()
                .contains(r#""critic#1":{"run":2},"writer#1":{"run":3}"#)
        );
    }

    #[test]
    fn a_node_without_saves_holds_nothing_and_a_restored_one_its_checkpoints_text() {
        let empty = NodeProgress::default();
        assert!(empty.text.is_none() && !empty.has_start);
        assert_eq!(empty.step::<u32>("pages").unwrap(), None);

        let stored = JsonText::of(&json!({"start_state": 1, "agents": {}})).unwrap();
        let restored = NodeProgress::from_checkpoint(&stored).unwrap();
        assert!(restored.has_start);
        assert_eq!(restored.start_state::<u32>().unwrap(), Some(1));
        let unreadable = JsonText::of(&json!({"agents": {"writer#1": {"run": 1}}})).unwrap();
        assert!(NodeProgress::from_checkpoint(&unreadable).is_err());
    }
}
