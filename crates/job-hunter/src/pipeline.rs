//! The pipeline: eight steps as a sequential state graph, a checkpoint after each, and
//! resume by run id.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use agent_runtime::checkpoint::{
    CheckpointError, CheckpointStore, FileCheckpointStore, InMemoryCheckpointStore,
};
use agent_runtime::graph::{
    CompiledGraph, GraphError, NodeError, RunOptions, RunStatus, StateGraph, StopKind, node_fn,
};
use agent_runtime::{CostSnapshot, EventSink, Session, SessionMarks};
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::deps::Deps;
use crate::events::HuntEvent;
use crate::llm::PipelineLlm;
use crate::models::RunIssue;
use crate::settings::Settings;
use crate::state::{HuntState, RunConfig};
use crate::steps::{self, HuntNode, STEP_NAMES, StepEnv};

/// A failure outside the steps: invalid settings, the checkpoint store, or a graph that
/// does not build.
#[derive(Debug, thiserror::Error)]
pub enum HuntError {
    /// Checkpoints could not be read, or the run's first one could not be written.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// A checkpoint after a step could not be written: the run stopped there, since a
    /// crash from then on could not be resumed.
    #[error("run {run_id}: {reason}")]
    CheckpointWrite {
        /// The run.
        run_id: String,
        /// Which checkpoint failed, and why.
        reason: String,
    },
    /// The graph is invalid (a bug).
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// A setting is out of range.
    #[error("invalid setting: {0}")]
    Settings(#[from] crate::settings::SettingsError),
}

/// The longest chain of model calls that must follow one another: per step, its calls
/// in waves of `JH_MAX_CONCURRENCY`.
#[derive(Debug, Clone, PartialEq)]
pub struct CriticalPath {
    /// Sequential waves of model calls.
    pub waves: u64,
    /// Model calls made in this process.
    pub calls: u64,
}

impl CriticalPath {
    /// From the calls per step and the concurrency bound.
    pub fn of(spent: &CostSnapshot, concurrency: usize) -> Self {
        let bound = concurrency.max(1) as u64;
        CriticalPath {
            waves: spent
                .calls_by_step
                .values()
                .map(|calls| calls.div_ceil(bound))
                .sum(),
            calls: spent.calls,
        }
    }

    /// The critical path's duration when every model call takes `latency`.
    pub fn estimate(&self, latency: Duration) -> Duration {
        latency.saturating_mul(u32::try_from(self.waves).unwrap_or(u32::MAX))
    }
}

/// How a run ended, with everything it gathered.
#[derive(Debug, Clone)]
pub struct HuntResult {
    /// The run's id.
    pub run_id: String,
    /// success, partial (cost limit) or failed (fatal error, step timeout).
    pub status: RunStatus,
    /// Why it did not succeed.
    pub reason: Option<String>,
    /// The state: profile, companies, jobs, scores, files, issues.
    pub state: HuntState,
    /// What the run's model calls cost, all of its processes together: tokens and calls
    /// per model and per step, USD.
    pub cost: CostSnapshot,
    /// Steps run by this call (a resumed run lists only what it ran).
    pub steps_run: Vec<String>,
    /// Steps a checkpoint showed done and were skipped.
    pub steps_skipped: Vec<String>,
    /// Whether this call resumed an earlier run.
    pub resumed: bool,
    /// Wall time of this call.
    pub duration: Duration,
    /// The critical path of model calls.
    pub critical_path: CriticalPath,
}

impl HuntResult {
    /// Non-fatal issues and the fatal one, if any.
    pub fn issues(&self) -> &[RunIssue] {
        &self.state.issues
    }
}

/// The job-hunting pipeline.
///
/// ```no_run
/// use std::sync::Arc;
/// use job_hunter::{Deps, JobHunter, RunConfig, Settings};
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let settings = Settings::from_env()?;
/// let deps = Deps::dry_run("fixtures/job-hunter".as_ref(), &settings, None)?;
/// let hunter = JobHunter::new(deps, settings);
/// let result = hunter.run(RunConfig {
///     run_id: "demo".into(),
///     resume_path: "fixtures/job-hunter/resume.txt".into(),
///     preferences: "Senior backend roles in Berlin".into(),
///     output_dir: "output".into(),
/// }).await?;
/// println!("{}: {} jobs scored", result.status.as_str(), result.state.scored.len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct JobHunter {
    deps: Arc<Deps>,
    settings: Arc<Settings>,
    cancel: CancellationToken,
}

struct Shared {
    deps: Arc<Deps>,
    settings: Arc<Settings>,
    llm: PipelineLlm,
    /// The steps a resumed run's checkpoint had completed, until they are announced
    /// through the session: by the first step this process runs, or after the run when
    /// none was left to run (the session's numbering starts once `run_durable` restored
    /// the count its checkpoint kept).
    unannounced_skips: Mutex<Vec<String>>,
}

impl Shared {
    /// Announces, once, the steps the run skips.
    fn announce_skips(&self, session: &Session<HuntState, HuntEvent>) {
        let skipped = std::mem::take(
            &mut *self
                .unannounced_skips
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for step in skipped {
            session.emit(HuntEvent::StepSkipped { step });
        }
    }
}

/// The run's session, once it exists, as an event sink: what it is given goes through
/// the session, numbered with the run's other events. Emptied when the run ends (the
/// session holds the meter, whose warning hook holds this).
#[derive(Clone, Default)]
struct SessionSlot(Arc<Mutex<Option<Session<HuntState, HuntEvent>>>>);

impl SessionSlot {
    fn fill(&self, session: &Session<HuntState, HuntEvent>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(session.clone());
    }

    fn empty(&self) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

impl EventSink<HuntEvent> for SessionSlot {
    fn emit(&self, event: HuntEvent) {
        let session = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match session {
            Some(session) => session.emit(event),
            None => tracing::debug!(?event, "an event outside the run is dropped"),
        }
    }
}

type StepFn =
    for<'a> fn(&'a mut HuntState, &'a StepEnv<'a>) -> BoxFuture<'a, Result<(), NodeError>>;

fn step_fn(name: &str) -> StepFn {
    match name {
        "parse_resume" => |s, e| Box::pin(steps::parse_resume::run(s, e)),
        "parse_prefs" => |s, e| Box::pin(steps::parse_prefs::run(s, e)),
        "find_companies" => |s, e| Box::pin(steps::find_companies::run(s, e)),
        "scrape_jobs" => |s, e| Box::pin(steps::scrape_jobs::run(s, e)),
        "process_jobs" => |s, e| Box::pin(steps::process_jobs::run(s, e)),
        "score_jobs" => |s, e| Box::pin(steps::score_jobs::run(s, e)),
        "aggregate" => |s, e| Box::pin(steps::aggregate::run(s, e)),
        _ => |s, e| Box::pin(steps::notify::run(s, e)),
    }
}

/// The steps work on a `&mut HuntState`: a copy of the run's state, written back when the
/// step ends however it ends (a step dropped by its timeout or by cancellation keeps what
/// it had gathered, as the run's result and the partial-run salvage expect). The steps
/// run no agents, so nothing else reads the state meanwhile.
struct WriteBack<'a> {
    ctx: &'a HuntNode,
    state: Option<HuntState>,
}

impl Drop for WriteBack<'_> {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            self.ctx.update(|s| *s = state);
        }
    }
}

/// Why a run that went through every step scored no job, in one sentence.
fn nothing_scored(state: &HuntState) -> String {
    let counts = &state.job_counts;
    if !state.jobs.is_empty() {
        return format!(
            "no job was scored: the model's scores of all {} jobs were refused or missing (see the score_jobs issues)",
            state.jobs.len()
        );
    }
    if !state.raw_jobs.is_empty() {
        return format!(
            "no job was scored: none of the {} jobs kept could be read by the model (see the process_jobs issues)",
            state.raw_jobs.len()
        );
    }
    if counts.fetched > 0 {
        return format!(
            "no job was scored: all {} jobs fetched were cut before scoring ({})",
            counts.fetched,
            counts.describe_cuts()
        );
    }
    format!(
        "no job was scored: none of the {} companies searched listed a job",
        state.companies.len()
    )
}

/// What a finished step did, in a few words.
fn step_summary(step: &str, state: &HuntState) -> String {
    match step {
        "parse_resume" => state
            .profile
            .as_ref()
            .map(|p| format!("{} ({} skills)", p.name, p.skills.len()))
            .unwrap_or_default(),
        "parse_prefs" => state
            .preferences
            .as_ref()
            .map(|p| {
                format!(
                    "{} titles, {} named companies",
                    p.target_titles.len(),
                    p.target_companies.len()
                )
            })
            .unwrap_or_default(),
        "find_companies" => format!("{} companies", state.companies.len()),
        "scrape_jobs" => format!(
            "{} jobs from {} companies ({})",
            state.raw_jobs.len(),
            state.company_reports.len(),
            state.job_counts.describe()
        ),
        "process_jobs" => {
            let ruled_out = state
                .issues
                .iter()
                .filter(|i| i.step == "process_jobs" && i.kind == "filter")
                .count();
            let processed = state.jobs.len() + ruled_out;
            let total = state.raw_jobs.len() + ruled_out;
            match ruled_out {
                0 => format!("{processed} of {total} jobs processed"),
                n => format!(
                    "{processed} of {total} jobs processed; {n} on site or hybrid elsewhere than the places wanted, not scored"
                ),
            }
        }
        "score_jobs" => format!("{} jobs scored", state.scored.len()),
        "aggregate" => format!("{} files written", state.output_files.len()),
        _ => state
            .notification
            .as_ref()
            .map(|n| match &n.eml_path {
                Some(path) => format!("written to {}", path.display()),
                None => format!("sent via {}", n.transport),
            })
            .unwrap_or_default(),
    }
}

impl JobHunter {
    /// A pipeline over these services and settings.
    pub fn new(deps: Deps, settings: Settings) -> Self {
        JobHunter {
            deps: Arc::new(deps),
            settings: Arc::new(settings),
            cancel: CancellationToken::new(),
        }
    }

    /// Stops runs when `token` fires (Ctrl-C): the step in flight is dropped, the run
    /// ends `failed` with its checkpoints kept, and the same run id resumes it.
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    fn graph(
        &self,
        shared: Arc<Shared>,
    ) -> Result<CompiledGraph<HuntState, HuntEvent>, GraphError> {
        let nodes = STEP_NAMES.map(|name| {
            let shared = shared.clone();
            let run = step_fn(name);
            let node = node_fn(move |ctx: &HuntNode| {
                let shared = shared.clone();
                Box::pin(async move {
                    let mut step_state = WriteBack {
                        ctx,
                        state: Some(ctx.state()),
                    };
                    let Some(state) = step_state.state.as_mut() else {
                        return Err(NodeError::fatal("the step state is gone"));
                    };
                    shared.announce_skips(ctx.session());
                    ctx.emit(HuntEvent::StepStarted { step: name.into() });
                    tracing::info!(step = name, "agent start");
                    let started = Instant::now();
                    let env = StepEnv {
                        deps: &shared.deps,
                        llm: &shared.llm,
                        settings: &shared.settings,
                        ctx,
                    };
                    let outcome = run(state, &env).await;
                    tracing::info!(
                        step = name,
                        duration_seconds = started.elapsed().as_secs_f64(),
                        ok = outcome.is_ok(),
                        "agent end"
                    );
                    if outcome.is_ok() {
                        ctx.emit(HuntEvent::StepFinished {
                            step: name.into(),
                            summary: step_summary(name, state),
                        });
                    }
                    outcome
                }) as BoxFuture<'_, Result<(), NodeError>>
            });
            (name, node)
        });
        StateGraph::sequence(nodes).compile()
    }

    fn store(&self) -> Arc<dyn CheckpointStore> {
        if self.settings.checkpoint_enabled {
            Arc::new(FileCheckpointStore::new(
                self.settings.checkpoint_dir.clone(),
            ))
        } else {
            Arc::new(InMemoryCheckpointStore::new())
        }
    }

    /// Runs the pipeline for `config`, or, when checkpoints of `config.run_id` exist,
    /// resumes that run after its last completed step (its own recorded request is used;
    /// `config` is then ignored).
    ///
    /// The status follows the spec's error table: `partial` when the cost limit stops
    /// the run (the output files are still written from what was scored) or when the run
    /// scored no job at all (the reason says why: nothing listed, everything cut, every
    /// score refused), `failed` on a
    /// fatal step error or a step timeout; non-fatal problems are in the state's
    /// `issues`. Checkpoint I/O errors are returned as errors: reading the checkpoints or
    /// writing the first one as [`HuntError::Checkpoint`], writing one after a step as
    /// [`HuntError::CheckpointWrite`] (the run stops at that step).
    pub async fn run(&self, config: RunConfig) -> Result<HuntResult, HuntError> {
        let started = Instant::now();
        self.settings.validate()?;
        let store = self.store();
        let run_id = config.run_id.clone();
        // Read to announce the steps a resumed run skips, and what it had spent.
        let latest = store.latest(&run_id).await?;
        let skipped = latest
            .as_ref()
            .map(|checkpoint| checkpoint.completed.clone())
            .unwrap_or_default();
        let spent_before = latest
            .as_ref()
            .and_then(|checkpoint| checkpoint.session.as_ref())
            .and_then(|marks| marks.parse::<SessionMarks>().ok())
            .map(|marks| marks.spent())
            .unwrap_or_default();
        if latest.is_some() {
            tracing::info!(run_id, completed = ?skipped, "resuming from checkpoint");
        }
        // The meter's cost warning goes through the session, like every event of the run;
        // the meter is made first (the session holds it), so the warning finds the session
        // here once it exists.
        let session_slot = SessionSlot::default();
        let llm = PipelineLlm::new(
            self.deps.pricing.clone(),
            &self.settings,
            Arc::new(session_slot.clone()),
        );
        let shared = Arc::new(Shared {
            deps: self.deps.clone(),
            settings: self.settings.clone(),
            llm: llm.clone(),
            unannounced_skips: Mutex::new(skipped.clone()),
        });
        let graph = self.graph(shared.clone())?;
        let limit_llm = llm.clone();
        let options = RunOptions::new()
            .with_run_id(run_id.clone())
            .with_node_timeout(self.settings.agent_timeout)
            .with_cancellation(self.cancel.clone())
            .with_limit_check(move || limit_llm.limit_reached().map(|limit| limit.to_string()));
        // The meter is the session's: its totals are saved with every checkpoint and
        // restored when the run resumes (`config` is then the checkpoint's).
        let session = Session::new(run_id.clone(), HuntState::new(config))
            .with_model(self.deps.model.clone())
            .with_meter(llm.meter().clone())
            .with_events(self.deps.events.clone());
        session_slot.fill(&session);
        let result = graph.run_durable(&session, store, options).await;
        shared.announce_skips(&session);
        session_slot.empty();
        let result = result?;
        if result.stop == Some(StopKind::Checkpoint) {
            let reason = result
                .reason
                .clone()
                .unwrap_or_else(|| "a checkpoint could not be written".into());
            tracing::error!(run_id, %reason, "checkpoint write failed");
            return Err(HuntError::CheckpointWrite { run_id, reason });
        }
        let resumed = !skipped.is_empty() || !result.steps.is_empty() && result.steps[0].step > 1;
        let mut state = result.state;
        let (mut status, mut reason) = (result.status, result.reason.clone());
        if status == RunStatus::Success && state.scored.is_empty() {
            let why = nothing_scored(&state);
            tracing::warn!(run_id, %why, "the run scored no job: partial");
            state.issues.push(RunIssue {
                step: "score_jobs".into(),
                kind: "partial".into(),
                message: why.clone(),
                company: None,
                job_url: None,
                fatal: false,
                at: chrono::Utc::now(),
            });
            (status, reason) = (RunStatus::Partial, Some(why));
        }
        let cost = llm.cost();
        if let Some(reason) = &result.reason {
            let step = result
                .steps
                .last()
                .map(|s| s.node.to_string())
                .unwrap_or_default();
            state.issues.push(RunIssue {
                step,
                kind: result
                    .stop
                    .map(|s| format!("{s:?}"))
                    .unwrap_or_default()
                    .to_lowercase(),
                message: reason.clone(),
                company: None,
                job_url: None,
                fatal: result.status == RunStatus::Failed,
                at: chrono::Utc::now(),
            });
        }
        if status == RunStatus::Partial && state.output_files.is_empty() && !state.scored.is_empty()
        {
            let dir = state.config.output_dir.clone();
            match steps::aggregate::write_outputs(&state, Path::new(&dir)) {
                Ok(files) => state.output_files = files,
                Err(e) => tracing::error!(error = %e, "could not write the partial results"),
            }
        }
        tracing::info!(
            run_id,
            status = status.as_str(),
            total_tokens = cost.total_tokens(),
            total_cost_usd = (cost.usd * 10_000.0).round() / 10_000.0,
            duration_seconds = started.elapsed().as_secs_f64(),
            jobs_scored = state.scored.len(),
            errors = state.issues.len(),
            "pipeline summary"
        );
        Ok(HuntResult {
            critical_path: CriticalPath::of(
                &llm.cost_since(&spent_before),
                self.settings.max_concurrency,
            ),
            cost,
            run_id,
            status,
            reason,
            steps_run: result.steps.iter().map(|s| s.node.to_string()).collect(),
            steps_skipped: skipped,
            resumed,
            duration: started.elapsed(),
            state,
        })
    }
}
