//! A checkpoint store in a directory: one JSON file per checkpoint, written atomically.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::body::Body;
use super::delta::{Head, StoredCheckpoint};
use super::names::Name;
use super::rebuild::Rebuilder;
use super::{
    CHECKPOINT_SCHEMA_VERSION, Checkpoint, CheckpointError, CheckpointStore, JsonText, RecentRuns,
    SnapshotPolicy, cutoff,
};

/// Keeps checkpoints as JSON files in one directory.
///
/// Checkpoint `seq` of run `run_id` after node `node` is `{run_id}--{seq}-{node}.json`,
/// with `seq` zero-padded to ten digits so names sort; the run's journal is
/// `{run_id}--journal.json`. Every file is written atomically: to a temporary file in the
/// same directory, flushed to disk, renamed over the final name, then the directory is
/// flushed where the platform allows, so a crash leaves the old file or the new one,
/// never half of one. A file that cannot be read back is a
/// [`CheckpointError::Corrupt`] naming it; one written by a newer format is a
/// [`CheckpointError::SchemaVersion`].
///
/// Run ids may hold ASCII letters, digits, `_`, `.` and single `-` (no `--`, which
/// separates the run id in file names), at most 128 characters. Node names are kept in
/// file names with other characters replaced by `_`.
///
/// ```
/// use agent_runtime::checkpoint::{Checkpoint, CheckpointStore, FileCheckpointStore, JsonText};
/// # let dir = std::env::temp_dir().join(format!("cp-doc-{}", std::process::id()));
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = FileCheckpointStore::new(&dir);
/// let state = JsonText::of(&serde_json::json!({"x": 1}))?;
/// store.save(&Checkpoint::new("run_1", 3, "parse_resume", state)).await?;
/// assert!(dir.join("run_1--0000000003-parse_resume.json").exists());
/// assert_eq!(store.latest("run_1").await?.unwrap().seq, 3);
/// # Ok::<(), agent_runtime::checkpoint::CheckpointError>(())
/// # }).unwrap();
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug)]
pub struct FileCheckpointStore {
    dir: Arc<Path>,
    snapshot_policy: SnapshotPolicy,
    heads: Mutex<RecentRuns<Head>>,
    journal_lock: tokio::sync::Mutex<()>,
}

impl FileCheckpointStore {
    /// A store in `dir` (created on the first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: Arc::from(dir.into()),
            snapshot_policy: SnapshotPolicy::default(),
            heads: Mutex::new(RecentRuns::default()),
            journal_lock: tokio::sync::Mutex::new(()),
        }
    }

    /// Sets when a full snapshot is written instead of a delta (default
    /// [`SnapshotPolicy::SizeBased`], whose storage stays linear in a growing history).
    pub fn with_snapshot_policy(mut self, policy: SnapshotPolicy) -> Self {
        self.snapshot_policy = policy;
        self
    }

    /// Shorthand for [`with_snapshot_policy`](Self::with_snapshot_policy) with
    /// [`SnapshotPolicy::Every`]: a full snapshot every `every` checkpoints (1 writes every
    /// checkpoint in full), whatever the sizes.
    pub fn with_snapshot_every(self, every: usize) -> Self {
        self.with_snapshot_policy(SnapshotPolicy::Every(every.max(1)))
    }

    /// When a full snapshot is written instead of a delta.
    pub fn snapshot_policy(&self) -> SnapshotPolicy {
        self.snapshot_policy
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file name of a checkpoint.
    pub fn file_name(run_id: &str, seq: u64, node: &str) -> String {
        let node: String = node
            .chars()
            .take(100)
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("{run_id}--{seq:010}-{node}.json")
    }

    fn heads(&self) -> MutexGuard<'_, RecentRuns<Head>> {
        self.heads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn validate_run_id(run_id: &str) -> Result<(), CheckpointError> {
    let reason = if run_id.is_empty() {
        "it is empty"
    } else if run_id.len() > 128 {
        "it is longer than 128 characters"
    } else if !run_id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        "only ASCII letters, digits, '_', '-' and '.' are allowed"
    } else if run_id.starts_with('.') {
        "it starts with '.'"
    } else if run_id.contains("--") {
        "'--' separates the run id in file names"
    } else {
        return Ok(());
    };
    Err(CheckpointError::InvalidRunId {
        run_id: run_id.to_owned(),
        reason,
    })
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.to_owned(),
        source,
    }
}

fn corrupt(path: &Path, reason: impl Into<String>) -> CheckpointError {
    CheckpointError::Corrupt {
        ident: path.display().to_string(),
        reason: reason.into(),
    }
}

/// Runs blocking file work off the async threads.
async fn blocking<T, F>(work: F) -> Result<T, CheckpointError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, CheckpointError> + Send + 'static,
{
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(CheckpointError::Backend(format!(
            "checkpoint file task failed: {e}"
        )))
    })
}

/// Writes `bytes` to `dir/name` atomically: temp file, fsync, rename, fsync the directory.
fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), CheckpointError> {
    fs::create_dir_all(dir).map_err(io(dir))?;
    let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let path = dir.join(name);
    let written = File::create(&tmp)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        })
        .and_then(|()| fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io(&path)(e));
    }
    // Make the rename itself durable. Not every platform can open a directory.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The run's checkpoint files, by increasing seq.
fn run_files(dir: &Path, run_id: &str) -> Result<Vec<(u64, PathBuf)>, CheckpointError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(dir)(e)),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io(dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some((run, seq)) = parse_name(name)
            && run == run_id
        {
            files.push((seq, entry.path()));
        }
    }
    files.sort();
    Ok(files)
}

/// `{run_id}--{seq}-{node}.json` → `(run_id, seq)`.
fn parse_name(name: &str) -> Option<(&str, u64)> {
    let stem = name.strip_suffix(".json")?;
    let (run, rest) = stem.split_once("--")?;
    let (seq, _node) = rest.split_once('-')?;
    if run.is_empty() || run.starts_with('.') || seq.is_empty() {
        return None;
    }
    if !seq.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((run, seq.parse().ok()?))
}

fn journal_name(run_id: &str) -> String {
    format!("{run_id}--journal.json")
}

#[derive(Deserialize)]
struct Probe {
    schema_version: u32,
}

fn read_stored(path: &Path, run_id: &str, seq: u64) -> Result<StoredCheckpoint, CheckpointError> {
    let bytes = fs::read(path).map_err(io(path))?;
    let probe: Probe = serde_json::from_slice(&bytes).map_err(|e| corrupt(path, e.to_string()))?;
    if probe.schema_version > CHECKPOINT_SCHEMA_VERSION {
        return Err(CheckpointError::SchemaVersion {
            ident: path.display().to_string(),
            found: probe.schema_version,
            supported: CHECKPOINT_SCHEMA_VERSION,
        });
    }
    let stored: StoredCheckpoint =
        serde_json::from_slice(&bytes).map_err(|e| corrupt(path, e.to_string()))?;
    if *stored.run_id != *run_id || stored.seq != seq {
        return Err(corrupt(
            path,
            format!(
                "the file holds run {:?} seq {}, not what its name says",
                stored.run_id, stored.seq
            ),
        ));
    }
    Ok(stored)
}

/// Rebuilds the checkpoint in `files[index]`, reading back to the nearest full snapshot.
fn rebuild_at(
    files: &[(u64, PathBuf)],
    index: usize,
    run_id: &str,
) -> Result<(StoredCheckpoint, Vec<Name>, JsonText), CheckpointError> {
    let mut chain = Vec::new();
    for (seq, path) in files[..=index].iter().rev() {
        let stored = read_stored(path, run_id, *seq)?;
        let full = stored.is_full();
        chain.push((path, stored));
        if full {
            break;
        }
    }
    let mut rebuild = Rebuilder::default();
    let mut last = None;
    for (path, mut stored) in chain.into_iter().rev() {
        rebuild
            .push(&mut stored)
            .map_err(|reason| corrupt(path, reason))?;
        last = Some((path, stored));
    }
    match (last, rebuild.into_current()) {
        (Some((_, stored)), Some((completed, state))) => Ok((stored, completed, state)),
        (Some((path, _)), None) => Err(corrupt(path, "no full snapshot before this delta")),
        (None, _) => Err(CheckpointError::NotFound(run_id.to_owned())),
    }
}

#[derive(Serialize, Deserialize)]
struct JournalFile {
    schema_version: u32,
    run_id: String,
    entries: BTreeMap<String, Value>,
}

fn read_journal(path: &Path) -> Result<BTreeMap<String, Value>, CheckpointError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(io(path)(e)),
    };
    let file: JournalFile =
        serde_json::from_slice(&bytes).map_err(|e| corrupt(path, e.to_string()))?;
    if file.schema_version > CHECKPOINT_SCHEMA_VERSION {
        return Err(CheckpointError::SchemaVersion {
            ident: path.display().to_string(),
            found: file.schema_version,
            supported: CHECKPOINT_SCHEMA_VERSION,
        });
    }
    Ok(file.entries)
}

fn remove_file(path: &Path) -> Result<bool, CheckpointError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io(path)(e)),
    }
}

/// Removes the oldest checkpoints of a run, keeping `keep` (at least 1); the oldest kept
/// is rewritten as a full snapshot first when it is a delta.
fn prune_files(dir: &Path, run_id: &str, keep: usize) -> Result<usize, CheckpointError> {
    let files = run_files(dir, run_id)?;
    if files.len() <= keep {
        return Ok(0);
    }
    let cut = files.len() - keep;
    let (seq, path) = &files[cut];
    let first_kept = read_stored(path, run_id, *seq)?;
    if !first_kept.is_full() {
        let (mut stored, completed, state) = rebuild_at(&files, cut, run_id)?;
        stored.body = Body::Full { completed, state };
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| corrupt(path, "unreadable file name"))?;
        write_atomic(dir, name, &serde_json::to_vec(&stored)?)?;
    }
    let mut removed = 0;
    for (_, path) in &files[..cut] {
        removed += usize::from(remove_file(path)?);
    }
    Ok(removed)
}

fn remove_run(dir: &Path, run_id: &str) -> Result<usize, CheckpointError> {
    let mut removed = 0;
    for (_, path) in run_files(dir, run_id)? {
        removed += usize::from(remove_file(&path)?);
    }
    remove_file(&dir.join(journal_name(run_id)))?;
    Ok(removed)
}

#[derive(Deserialize)]
struct AtProbe {
    at: DateTime<Utc>,
}

/// Removes the runs whose newest checkpoint was taken before `cutoff` (journal-only runs:
/// whose journal was last written before it).
fn prune_stale(dir: &Path, cutoff: DateTime<Utc>) -> Result<Vec<String>, CheckpointError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(dir)(e)),
    };
    let mut newest: HashMap<String, (u64, PathBuf)> = HashMap::new();
    let mut journals: Vec<(String, PathBuf)> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io(dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some((run, seq)) = parse_name(name) {
            let slot = newest
                .entry(run.to_owned())
                .or_insert_with(|| (seq, entry.path()));
            if seq >= slot.0 {
                *slot = (seq, entry.path());
            }
        } else if let Some(run) = name.strip_suffix("--journal.json")
            && !run.starts_with('.')
        {
            journals.push((run.to_owned(), entry.path()));
        }
    }
    let mut stale = Vec::new();
    for (run, (_, path)) in &newest {
        let at = fs::read(path)
            .map_err(|e| e.to_string())
            .and_then(|bytes| serde_json::from_slice::<AtProbe>(&bytes).map_err(|e| e.to_string()));
        match at {
            Ok(probe) if probe.at < cutoff => stale.push(run.clone()),
            Ok(_) => {}
            Err(reason) => {
                tracing::warn!(path = %path.display(), reason, "unreadable checkpoint skipped by retention");
            }
        }
    }
    for (run, path) in journals {
        if newest.contains_key(&run) {
            continue;
        }
        let modified = fs::metadata(&path)
            .and_then(|m| m.modified())
            .map(DateTime::<Utc>::from);
        if modified.is_ok_and(|m| m < cutoff) {
            stale.push(run);
        }
    }
    for run in &stale {
        remove_run(dir, run)?;
    }
    Ok(stale)
}

#[async_trait::async_trait]
impl CheckpointStore for FileCheckpointStore {
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        validate_run_id(&checkpoint.run_id)?;
        let name = Self::file_name(&checkpoint.run_id, checkpoint.seq, &checkpoint.node);
        if checkpoint.schema_version > CHECKPOINT_SCHEMA_VERSION {
            return Err(CheckpointError::SchemaVersion {
                ident: name,
                found: checkpoint.schema_version,
                supported: CHECKPOINT_SCHEMA_VERSION,
            });
        }
        let run_id = checkpoint.run_id.as_str();
        let (text, head) = {
            let mut cache = self.heads();
            if let Some(h) = cache.get(run_id)
                && checkpoint.seq <= h.seq
            {
                return Err(CheckpointError::OutOfOrder {
                    run_id: run_id.to_owned(),
                    seq: checkpoint.seq,
                    latest: h.seq,
                });
            }
            // Taken out while the file is written: a failed write leaves no head, and the
            // next checkpoint is written in full.
            let mut head = cache.take(run_id);
            let (_, text) =
                StoredCheckpoint::encode_to_json(checkpoint, &mut head, self.snapshot_policy)?;
            (text, head)
        };
        let bytes = text.into_bytes();
        let dir = self.dir.clone();
        let written = blocking(move || write_atomic(&dir, &name, &bytes)).await;
        let mut cache = self.heads();
        match (&written, head) {
            (Ok(()), Some(head)) if checkpoint.next.is_some() => cache.insert(run_id, head),
            _ => {
                cache.take(run_id);
            }
        }
        written
    }

    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        validate_run_id(run_id)?;
        let dir = self.dir.clone();
        let run_id = run_id.to_owned();
        blocking(move || {
            let files = run_files(&dir, &run_id)?;
            if files.is_empty() {
                return Ok(None);
            }
            let (stored, completed, state) = rebuild_at(&files, files.len() - 1, &run_id)?;
            Ok(Some(stored.to_checkpoint(&completed, state)))
        })
        .await
    }

    async fn list(&self, run_id: &str) -> Result<Vec<Checkpoint>, CheckpointError> {
        validate_run_id(run_id)?;
        let dir = self.dir.clone();
        let run_id = run_id.to_owned();
        blocking(move || {
            let mut rebuild = Rebuilder::default();
            let mut out = Vec::new();
            for (seq, path) in run_files(&dir, &run_id)? {
                let mut stored = read_stored(&path, &run_id, seq)?;
                rebuild
                    .push(&mut stored)
                    .map_err(|reason| corrupt(&path, reason))?;
                if let Some((completed, state)) = rebuild.current() {
                    out.push(stored.to_checkpoint(&completed, state));
                }
            }
            Ok(out)
        })
        .await
    }

    async fn record_journal(
        &self,
        run_id: &str,
        key: &str,
        value: Value,
    ) -> Result<(), CheckpointError> {
        validate_run_id(run_id)?;
        let _writer = self.journal_lock.lock().await;
        let dir = self.dir.clone();
        let (run_id, key) = (run_id.to_owned(), key.to_owned());
        blocking(move || {
            let name = journal_name(&run_id);
            let mut entries = read_journal(&dir.join(&name))?;
            entries.insert(key, value);
            let file = JournalFile {
                schema_version: CHECKPOINT_SCHEMA_VERSION,
                run_id,
                entries,
            };
            write_atomic(&dir, &name, &serde_json::to_vec(&file)?)
        })
        .await
    }

    async fn journal(&self, run_id: &str) -> Result<BTreeMap<String, Value>, CheckpointError> {
        validate_run_id(run_id)?;
        let path = self.dir.join(journal_name(run_id));
        blocking(move || read_journal(&path)).await
    }

    async fn prune(&self, run_id: &str, keep_latest: usize) -> Result<usize, CheckpointError> {
        validate_run_id(run_id)?;
        let dir = self.dir.clone();
        let owned = run_id.to_owned();
        if keep_latest == 0 {
            self.heads().take(run_id);
            let _writer = self.journal_lock.lock().await;
            return blocking(move || remove_run(&dir, &owned)).await;
        }
        blocking(move || prune_files(&dir, &owned, keep_latest)).await
    }

    async fn prune_older_than(&self, age: Duration) -> Result<usize, CheckpointError> {
        let Some(cutoff) = cutoff(age) else {
            return Ok(0);
        };
        let dir = self.dir.clone();
        let _writer = self.journal_lock.lock().await;
        let removed = blocking(move || prune_stale(&dir, cutoff)).await?;
        let mut cache = self.heads();
        for run in &removed {
            cache.take(run);
        }
        Ok(removed.len())
    }

    async fn exists(&self, run_id: &str) -> Result<bool, CheckpointError> {
        validate_run_id(run_id)?;
        let dir = self.dir.clone();
        let run_id = run_id.to_owned();
        blocking(move || Ok(!run_files(&dir, &run_id)?.is_empty())).await
    }
}
