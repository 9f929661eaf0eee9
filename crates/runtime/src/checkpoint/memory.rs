//! A checkpoint store in memory, bounded by retention.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::body::Body;
use super::delta::{Head, StoredCheckpoint};
use super::rebuild::Rebuilder;
use super::{Checkpoint, CheckpointError, CheckpointStore, SnapshotPolicy, cutoff};

/// Checkpoints kept per run by default.
pub const DEFAULT_KEEP_LATEST: usize = 8;
/// Runs kept by default.
pub const DEFAULT_MAX_RUNS: usize = 1_000;

/// Keeps checkpoints and journals in memory (tests, single-process runs that only need
/// to survive a node failure, benchmarks).
///
/// Memory stays bounded however many runs go through it: it keeps the newest
/// `keep_latest` checkpoints of each run and at most `max_runs` runs, evicting the run
/// written to least recently (its journal too).
///
/// ```
/// use agent_runtime::checkpoint::{Checkpoint, CheckpointStore, InMemoryCheckpointStore, JsonText};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = InMemoryCheckpointStore::with_retention(2, 100);
/// for seq in 1..=5 {
///     let state = JsonText::of(&serde_json::json!({ "seq": seq }))?;
///     store.save(&Checkpoint::new("run", seq, "step", state)).await?;
/// }
/// let kept: Vec<u64> = store.list("run").await?.iter().map(|c| c.seq).collect();
/// assert_eq!(kept, [4, 5]);
/// # Ok::<(), agent_runtime::checkpoint::CheckpointError>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct InMemoryCheckpointStore {
    inner: Mutex<Inner>,
    keep_latest: usize,
    max_runs: usize,
    snapshot_policy: SnapshotPolicy,
}

#[derive(Debug, Default)]
struct Inner {
    runs: HashMap<Arc<str>, Run>,
    /// Runs by last write, oldest first.
    lru: BTreeMap<u64, Arc<str>>,
    tick: u64,
}

#[derive(Debug, Default)]
struct Run {
    /// Oldest first; the first is always a full snapshot.
    records: VecDeque<StoredCheckpoint>,
    head: Option<Head>,
    journal: BTreeMap<String, Value>,
    tick: u64,
    touched: Option<DateTime<Utc>>,
}

impl Default for InMemoryCheckpointStore {
    fn default() -> Self {
        Self::new()
    }
}

impl InMemoryCheckpointStore {
    /// A store keeping [`DEFAULT_KEEP_LATEST`] checkpoints per run and
    /// [`DEFAULT_MAX_RUNS`] runs.
    pub fn new() -> Self {
        Self::with_retention(DEFAULT_KEEP_LATEST, DEFAULT_MAX_RUNS)
    }

    /// A store keeping the newest `keep_latest` checkpoints per run (at least 1) and at
    /// most `max_runs` runs (at least 1).
    pub fn with_retention(keep_latest: usize, max_runs: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            keep_latest: keep_latest.max(1),
            max_runs: max_runs.max(1),
            snapshot_policy: SnapshotPolicy::default(),
        }
    }

    /// Sets when a full snapshot is kept instead of a delta (default
    /// [`SnapshotPolicy::SizeBased`], whose storage stays linear in a growing history).
    pub fn with_snapshot_policy(mut self, policy: SnapshotPolicy) -> Self {
        self.snapshot_policy = policy;
        self
    }

    /// Shorthand for [`with_snapshot_policy`](Self::with_snapshot_policy) with
    /// [`SnapshotPolicy::Every`]: a full snapshot every `every` checkpoints (1 keeps every
    /// checkpoint in full), whatever the sizes.
    pub fn with_snapshot_every(self, every: usize) -> Self {
        self.with_snapshot_policy(SnapshotPolicy::Every(every.max(1)))
    }

    /// When a full snapshot is kept instead of a delta.
    pub fn snapshot_policy(&self) -> SnapshotPolicy {
        self.snapshot_policy
    }

    /// How many runs are held.
    pub fn run_count(&self) -> usize {
        self.lock().runs.len()
    }

    /// How many checkpoints are held, all runs together.
    pub fn checkpoint_count(&self) -> usize {
        self.lock().runs.values().map(|r| r.records.len()).sum()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Inner {
    /// The run, created (evicting the least recently written run if full) and marked as
    /// the most recently written.
    fn touch(&mut self, run_id: &str, max_runs: usize) -> &mut Run {
        let key = match self.lru.last_key_value() {
            // A run's checkpoints mostly come one after another: the run written to last
            // keeps its place in the order.
            Some((_, last)) if &**last == run_id => last.clone(),
            _ => self.make_latest(run_id, max_runs),
        };
        self.runs.entry(key).or_default()
    }

    /// Puts `run_id` last in the order of writes, creating it (and evicting the run
    /// written to least recently if full) when it is new. Returns its key.
    fn make_latest(&mut self, run_id: &str, max_runs: usize) -> Arc<str> {
        self.tick += 1;
        let tick = self.tick;
        let key = match self.runs.get_mut(run_id) {
            Some(run) => {
                let key = self.lru.remove(&run.tick);
                run.tick = tick;
                key.unwrap_or_else(|| Arc::from(run_id))
            }
            None => {
                // The new run takes over the record buffer of a run it evicts.
                let mut records = VecDeque::new();
                while self.runs.len() >= max_runs {
                    let Some((_, oldest)) = self.lru.pop_first() else {
                        break;
                    };
                    if let Some(evicted) = self.runs.remove(&oldest) {
                        records = evicted.records;
                        records.clear();
                    }
                }
                let key: Arc<str> = Arc::from(run_id);
                let run = Run {
                    tick,
                    records,
                    ..Run::default()
                };
                self.runs.insert(key.clone(), run);
                key
            }
        };
        self.lru.insert(tick, key.clone());
        key
    }

    fn remove(&mut self, run_id: &str) -> Option<Run> {
        let run = self.runs.remove(run_id)?;
        self.lru.remove(&run.tick);
        Some(run)
    }
}

impl Run {
    /// Drops the oldest checkpoints beyond `keep`, turning the new oldest into a full
    /// snapshot when it was a delta. Returns how many were dropped.
    fn trim(&mut self, keep: usize) -> usize {
        let mut dropped = 0;
        while self.records.len() > keep.max(1) {
            let Some(mut oldest) = self.records.pop_front() else {
                break;
            };
            dropped += 1;
            let Some(next) = self.records.front_mut() else {
                break;
            };
            if next.is_full() {
                continue;
            }
            let mut rebuild = Rebuilder::default();
            let rebuilt = rebuild.push(&mut oldest).and_then(|()| rebuild.push(next));
            match (rebuilt, rebuild.into_current()) {
                (Ok(()), Some((completed, state))) => next.body = Body::Full { completed, state },
                // Unreachable: the oldest record is always a full snapshot and the next
                // delta is based on it. Keep the store usable if it ever happens.
                _ => {
                    tracing::error!(seq = next.seq, "checkpoint delta chain broken; dropping");
                    self.records.clear();
                    self.head = None;
                }
            }
        }
        dropped
    }

    fn rebuild_all(&self, run_id: &str) -> Result<Vec<Checkpoint>, CheckpointError> {
        let mut rebuild = Rebuilder::default();
        let mut out = Vec::with_capacity(self.records.len());
        for record in &self.records {
            let mut record = record.clone();
            rebuild
                .push(&mut record)
                .map_err(|reason| corrupt(run_id, record.seq, reason))?;
            if let Some((completed, state)) = rebuild.current() {
                out.push(record.to_checkpoint(&completed, state));
            }
        }
        Ok(out)
    }
}

fn corrupt(run_id: &str, seq: u64, reason: String) -> CheckpointError {
    CheckpointError::Corrupt {
        ident: format!("run {run_id:?} seq {seq} (in memory)"),
        reason,
    }
}

#[async_trait::async_trait]
impl CheckpointStore for InMemoryCheckpointStore {
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        checkpoint.check_version()?;
        let mut inner = self.lock();
        let run = inner.touch(&checkpoint.run_id, self.max_runs);
        if let Some(last) = run.records.back()
            && checkpoint.seq <= last.seq
        {
            return Err(CheckpointError::OutOfOrder {
                run_id: checkpoint.run_id.clone(),
                seq: checkpoint.seq,
                latest: last.seq,
            });
        }
        let stored = StoredCheckpoint::encode(checkpoint, &mut run.head, self.snapshot_policy);
        // Room for what the run keeps, once, rather than growing step by step.
        if run.records.capacity() == 0 {
            run.records.reserve_exact(self.keep_latest + 1);
        }
        run.records.push_back(stored);
        run.touched = Some(checkpoint.at);
        run.trim(self.keep_latest);
        Ok(())
    }

    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        let inner = self.lock();
        let Some(run) = inner.runs.get(run_id) else {
            return Ok(None);
        };
        Ok(match (run.records.back(), &run.head) {
            (Some(last), Some(head)) if head.seq == last.seq => {
                let mut latest = last.to_checkpoint(&head.completed, head.state.clone());
                latest.progress.clone_from(&head.progress);
                Some(latest)
            }
            (Some(_), _) => run.rebuild_all(run_id)?.pop(),
            (None, _) => None,
        })
    }

    async fn list(&self, run_id: &str) -> Result<Vec<Checkpoint>, CheckpointError> {
        let inner = self.lock();
        match inner.runs.get(run_id) {
            Some(run) => run.rebuild_all(run_id),
            None => Ok(Vec::new()),
        }
    }

    async fn record_journal(
        &self,
        run_id: &str,
        key: &str,
        value: Value,
    ) -> Result<(), CheckpointError> {
        let mut inner = self.lock();
        let run = inner.touch(run_id, self.max_runs);
        run.journal.insert(key.to_owned(), value);
        if run.records.is_empty() {
            run.touched = Some(Utc::now());
        }
        Ok(())
    }

    async fn journal(&self, run_id: &str) -> Result<BTreeMap<String, Value>, CheckpointError> {
        Ok(self
            .lock()
            .runs
            .get(run_id)
            .map(|run| run.journal.clone())
            .unwrap_or_default())
    }

    async fn prune(&self, run_id: &str, keep_latest: usize) -> Result<usize, CheckpointError> {
        let mut inner = self.lock();
        if keep_latest == 0 {
            return Ok(inner.remove(run_id).map_or(0, |run| run.records.len()));
        }
        Ok(inner
            .runs
            .get_mut(run_id)
            .map_or(0, |run| run.trim(keep_latest)))
    }

    async fn prune_older_than(&self, age: Duration) -> Result<usize, CheckpointError> {
        let Some(cutoff) = cutoff(age) else {
            return Ok(0);
        };
        let mut inner = self.lock();
        let stale: Vec<Arc<str>> = inner
            .runs
            .iter()
            .filter(|(_, run)| run.touched.is_some_and(|t| t < cutoff))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &stale {
            inner.remove(id);
        }
        Ok(stale.len())
    }

    async fn exists(&self, run_id: &str) -> Result<bool, CheckpointError> {
        Ok(self
            .lock()
            .runs
            .get(run_id)
            .is_some_and(|run| !run.records.is_empty()))
    }
}
