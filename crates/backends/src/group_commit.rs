//! Group commit: one writer per database, committing whatever has queued as one
//! transaction.
//!
//! The stores' writes (a session's events, status and gates, a run's checkpoints and
//! journal entries) do not each open a transaction of their own: they queue for the
//! database's writer task, which takes every write waiting, runs them in order in one
//! write transaction, commits once and then answers each. Under load a commit (and, for
//! a batch holding a durable write, its one sync to disk) is shared by hundreds of
//! writes, and writers never wait on each other through the database's busy handler;
//! with one write waiting it is committed alone, at once.
//!
//! A write is answered only after its batch committed, so what a caller was told is
//! stored is stored, and writes of one caller are applied in the order it made them.
//! A write that *refuses* (an unknown session, a conflict, a checkpoint out of order:
//! see [`Refusal`]) has written nothing and leaves its batch going on; a write that fails
//! otherwise rolls the batch back, and then every write of that batch is run again in a
//! transaction of its own, so one bad write never costs the others theirs.
//!
//! Writes of one kind queued one after another (appending events, the bulk of the load)
//! can run *together*: one call takes them all, as multi-row statements, and answers
//! each its own outcome (see [`GroupCommit::write_together`]).
//!
//! Readers do not use the writer: they read through the pool's other connections (SQLite
//! in WAL mode reads beside its one writer).

use std::any::{Any, TypeId};
use std::marker::PhantomData;

use agent_runtime::checkpoint::CheckpointError;
use agent_runtime::sessions::StoreError;
use futures::future::BoxFuture;
use sqlx::{Connection, Database, Pool};
use tokio::sync::{mpsc, oneshot};

use crate::sql::Sql;

/// The most writes one transaction takes; a longer queue is committed in several.
const MAX_BATCH: usize = 1024;

/// What a write does inside its batch's transaction, given what it writes: a function
/// (a closure that captures nothing) so the same write can run again alone.
pub(crate) type Apply<D, T, O, E> =
    for<'c> fn(&'c mut <D as Database>::Connection, &'c T) -> BoxFuture<'c, Result<O, E>>;

/// What a run of writes of one kind does in one call: each one's outcome, in order; an
/// `Err` fails them all (the batch is rolled back, and each is run again alone).
pub(crate) type ApplyAll<D, T, O, E> = for<'c> fn(
    &'c mut <D as Database>::Connection,
    Vec<&'c T>,
) -> BoxFuture<'c, Result<Vec<Result<O, E>>, E>>;

/// The errors of a batched write: what a write that refuses looks like, and what the
/// write answers when its batch could not be committed.
pub(crate) trait Refusal: Send + 'static {
    /// Whether this error is a refusal: the write checked and wrote nothing (unknown
    /// session, conflict, out of order), so its batch goes on without it.
    fn is_refusal(&self) -> bool;

    /// The batch's transaction failed, or the writer is gone, for `reason`.
    fn batch_failed(reason: String) -> Self;
}

impl Refusal for StoreError {
    fn is_refusal(&self) -> bool {
        matches!(self, StoreError::NotFound(_) | StoreError::Conflict(_))
    }

    fn batch_failed(reason: String) -> Self {
        StoreError::Backend(reason)
    }
}

impl Refusal for CheckpointError {
    fn is_refusal(&self) -> bool {
        matches!(self, CheckpointError::OutOfOrder { .. })
    }

    fn batch_failed(reason: String) -> Self {
        CheckpointError::Backend(reason)
    }
}

/// The writer of one database: cheap to clone; the writer task ends once every clone is
/// dropped (the stores on the database own it).
pub(crate) struct GroupCommit<D: Sql> {
    queue: mpsc::UnboundedSender<Box<dyn Queued<D>>>,
}

impl<D: Sql> Clone for GroupCommit<D> {
    fn clone(&self) -> Self {
        GroupCommit {
            queue: self.queue.clone(),
        }
    }
}

impl<D: Sql> GroupCommit<D> {
    /// Starts the writer of the database of `pool` on the current tokio runtime. It takes
    /// a connection of the pool for each batch, so the pool's other connections read.
    pub(crate) fn start(pool: Pool<D>) -> Self {
        let (queue, writes) = mpsc::unbounded_channel();
        // Owned by the handles: it ends when the last of them is dropped.
        tokio::spawn(write_batches(pool, writes));
        GroupCommit { queue }
    }

    /// Applies `apply` to `input` in the next batch and answers its outcome once that
    /// batch is committed.
    pub(crate) async fn write<T, O, E>(&self, input: T, apply: Apply<D, T, O, E>) -> Result<O, E>
    where
        T: Send + Sync + 'static,
        O: Send + 'static,
        E: Refusal,
    {
        self.submit(input, How::Alone(apply), false).await
    }

    /// As [`write`](Self::write), with the batch's commit synced to disk before the
    /// answer (see [`Dialect::sync_commits`](crate::sql::Dialect::sync_commits)): one
    /// sync for the whole batch.
    pub(crate) async fn write_synced<T, O, E>(
        &self,
        input: T,
        apply: Apply<D, T, O, E>,
    ) -> Result<O, E>
    where
        T: Send + Sync + 'static,
        O: Send + 'static,
        E: Refusal,
    {
        self.submit(input, How::Alone(apply), true).await
    }

    /// Applies `apply_all` to `input` in the next batch, together with the writes of the
    /// same `kind` queued right before and after it, and answers its own outcome once
    /// that batch is committed. One `kind` names one `apply_all`.
    pub(crate) async fn write_together<T, O, E>(
        &self,
        kind: &'static str,
        input: T,
        apply_all: ApplyAll<D, T, O, E>,
    ) -> Result<O, E>
    where
        T: Send + Sync + 'static,
        O: Send + 'static,
        E: Refusal,
    {
        self.submit(input, How::Together(kind, apply_all), false)
            .await
    }

    /// Queues the write and waits for its answer.
    async fn submit<T, O, E>(&self, input: T, apply: How<D, T, O, E>, synced: bool) -> Result<O, E>
    where
        T: Send + Sync + 'static,
        O: Send + 'static,
        E: Refusal,
    {
        let (reply, answer) = oneshot::channel();
        let pending = Box::new(Pending::<D, T, O, E> {
            input,
            apply,
            synced,
            outcome: None,
            reply,
            database: PhantomData,
        });
        if self.queue.send(pending).is_err() {
            return Err(E::batch_failed(format!(
                "{}: the database's writer has stopped",
                D::NAME
            )));
        }
        answer.await.unwrap_or_else(|_| {
            Err(E::batch_failed(format!(
                "{}: the database's writer stopped before committing",
                D::NAME
            )))
        })
    }
}

/// How a write went inside its batch.
enum Applied {
    /// It wrote, or refused and wrote nothing: the batch goes on.
    Done,
    /// It failed part-way: the batch must be rolled back.
    Failed,
}

/// How a run of writes of one kind is applied in one call (see [`ApplyAll`]).
type ApplyRun<D> = for<'c> fn(
    &'c mut <D as Database>::Connection,
    &'c mut [Box<dyn Queued<D>>],
) -> BoxFuture<'c, Applied>;

/// A write waiting for its batch, whatever it writes.
trait Queued<D: Sql>: Send + Any {
    /// Whether its commit must be synced to disk.
    fn synced(&self) -> bool;

    /// For a write that runs together with its neighbours of the same kind: that kind
    /// (its concrete type and name), and how such a run is applied.
    fn together(&self) -> Option<(TypeId, &'static str, ApplyRun<D>)>;

    /// Itself, to be taken back as its concrete type by [`ApplyRun`].
    fn as_any(&self) -> &dyn Any;

    /// Itself, to be taken back as its concrete type by [`ApplyRun`].
    fn as_any_mut(&mut self) -> &mut dyn Any;

    /// Runs it in the batch's transaction on `conn`, keeping its outcome.
    fn apply<'c>(&'c mut self, conn: &'c mut D::Connection) -> BoxFuture<'c, Applied>;

    /// Answers its caller: its outcome, or `failure` when its batch was not committed.
    fn answer(self: Box<Self>, failure: Option<&str>);
}

/// How a write is applied.
enum How<D: Sql, T, O, E> {
    /// On its own.
    Alone(Apply<D, T, O, E>),
    /// Together with its neighbours of the same kind.
    Together(&'static str, ApplyAll<D, T, O, E>),
}

/// A write of `T` answering `Result<O, E>`.
struct Pending<D: Sql, T, O, E> {
    input: T,
    apply: How<D, T, O, E>,
    synced: bool,
    outcome: Option<Result<O, E>>,
    reply: oneshot::Sender<Result<O, E>>,
    database: PhantomData<fn() -> D>,
}

/// Whether a write with this outcome lets its batch go on.
fn applied<O, E: Refusal>(outcome: &Result<O, E>) -> Applied {
    match outcome {
        Err(error) if !error.is_refusal() => Applied::Failed,
        _ => Applied::Done,
    }
}

impl<D, T, O, E> Queued<D> for Pending<D, T, O, E>
where
    D: Sql,
    T: Send + Sync + 'static,
    O: Send + 'static,
    E: Refusal,
{
    fn synced(&self) -> bool {
        self.synced
    }

    fn together(&self) -> Option<(TypeId, &'static str, ApplyRun<D>)> {
        match self.apply {
            How::Alone(_) => None,
            How::Together(kind, _) => Some((TypeId::of::<Self>(), kind, apply_run::<D, T, O, E>)),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn apply<'c>(&'c mut self, conn: &'c mut D::Connection) -> BoxFuture<'c, Applied> {
        let Pending {
            input,
            apply,
            outcome,
            ..
        } = self;
        match *apply {
            How::Alone(apply) => {
                let running = apply(conn, input);
                Box::pin(async move {
                    let result = running.await;
                    let done = applied(&result);
                    *outcome = Some(result);
                    done
                })
            }
            How::Together(_, apply_all) => {
                let running = apply_all(conn, vec![&*input]);
                Box::pin(async move {
                    let result = match running.await {
                        Ok(mut outcomes) if outcomes.len() == 1 => outcomes.remove(0),
                        Ok(outcomes) => Err(E::batch_failed(format!(
                            "{}: one write answered {} outcomes",
                            D::NAME,
                            outcomes.len()
                        ))),
                        Err(error) => Err(error),
                    };
                    let done = applied(&result);
                    *outcome = Some(result);
                    done
                })
            }
        }
    }

    fn answer(self: Box<Self>, failure: Option<&str>) {
        let result = match (failure, self.outcome) {
            (None, Some(result)) => result,
            (Some(reason), _) => Err(E::batch_failed(reason.to_owned())),
            (None, None) => Err(E::batch_failed(format!(
                "{}: the write was never applied",
                D::NAME
            ))),
        };
        // A caller that stopped waiting does not want the answer.
        let _ = self.reply.send(result);
    }
}

/// Applies a run of writes of one kind (all [`Pending<D, T, O, E>`], as
/// [`Queued::together`] said) in one call of their [`ApplyAll`].
fn apply_run<'c, D, T, O, E>(
    conn: &'c mut D::Connection,
    run: &'c mut [Box<dyn Queued<D>>],
) -> BoxFuture<'c, Applied>
where
    D: Sql,
    T: Send + Sync + 'static,
    O: Send + 'static,
    E: Refusal,
{
    Box::pin(async move {
        let outcomes = {
            let mut apply = None;
            let mut inputs: Vec<&T> = Vec::with_capacity(run.len());
            for write in run.iter() {
                let Some(write) = write.as_any().downcast_ref::<Pending<D, T, O, E>>() else {
                    return Applied::Failed;
                };
                if let How::Together(_, apply_all) = write.apply {
                    apply.get_or_insert(apply_all);
                }
                inputs.push(&write.input);
            }
            let Some(apply_all) = apply else {
                return Applied::Failed;
            };
            apply_all(conn, inputs).await
        };
        let Ok(outcomes) = outcomes else {
            // Run again alone, each write gets its own outcome.
            return Applied::Failed;
        };
        if outcomes.len() != run.len() {
            return Applied::Failed;
        }
        let mut done = Applied::Done;
        for (write, outcome) in run.iter_mut().zip(outcomes) {
            if let Some(write) = write.as_any_mut().downcast_mut::<Pending<D, T, O, E>>() {
                if let Applied::Failed = applied(&outcome) {
                    done = Applied::Failed;
                }
                write.outcome = Some(outcome);
            }
        }
        done
    })
}

/// The writer task: commits what has queued, batch after batch, until every handle is
/// gone.
async fn write_batches<D: Sql>(
    pool: Pool<D>,
    mut writes: mpsc::UnboundedReceiver<Box<dyn Queued<D>>>,
) {
    let mut batch = Vec::new();
    while writes.recv_many(&mut batch, MAX_BATCH).await > 0 {
        commit(&pool, &mut batch).await;
        batch.clear();
    }
    tracing::debug!(database = D::NAME, "group commit writer stopped");
}

/// Commits `batch` as one transaction and answers every write in it.
async fn commit<D: Sql>(pool: &Pool<D>, batch: &mut Vec<Box<dyn Queued<D>>>) {
    let mut conn = match pool.acquire().await {
        Ok(conn) => conn,
        Err(error) => {
            let reason = format!("{}: {error}", D::NAME);
            batch
                .drain(..)
                .for_each(|write| write.answer(Some(&reason)));
            return;
        }
    };
    let synced = batch.iter().any(|write| write.synced());
    match transaction(&mut *conn, batch, synced).await {
        Ok(true) => batch.drain(..).for_each(|write| write.answer(None)),
        Ok(false) => {
            tracing::debug!(
                database = D::NAME,
                writes = batch.len(),
                "a write failed: its batch is rolled back and each write runs alone"
            );
            for mut write in batch.drain(..) {
                let synced = write.synced();
                let single = std::slice::from_mut(&mut write);
                match transaction(&mut *conn, single, synced).await {
                    Ok(_) => write.answer(None),
                    Err(error) => write.answer(Some(&format!("{}: {error}", D::NAME))),
                }
            }
        }
        Err(error) => {
            tracing::warn!(database = D::NAME, %error, writes = batch.len(), "a batch was not committed");
            let reason = format!("{}: {error}", D::NAME);
            batch
                .drain(..)
                .for_each(|write| write.answer(Some(&reason)));
        }
    }
}

/// Applies `writes` in one write transaction on `conn`, synced to disk when `synced`:
/// `true` once committed, `false` when one failed and the transaction was rolled back.
async fn transaction<D: Sql>(
    conn: &mut D::Connection,
    writes: &mut [Box<dyn Queued<D>>],
    synced: bool,
) -> Result<bool, sqlx::Error> {
    let mode = match synced {
        true => Some(D::sync_commits(conn).await?),
        false => None,
    };
    let committed = apply_all(conn, writes).await;
    if let Some(mode) = mode {
        D::restore_sync(conn, mode).await;
    }
    committed
}

async fn apply_all<D: Sql>(
    conn: &mut D::Connection,
    writes: &mut [Box<dyn Queued<D>>],
) -> Result<bool, sqlx::Error> {
    let mut tx = conn.begin_with(D::BEGIN_WRITE).await?;
    let mut next = 0;
    while next < writes.len() {
        let kind = writes[next].together();
        // The writes of the same kind queued right after this one run with it.
        let end = match kind {
            Some((ty, name, _)) => {
                let same = |write: &dyn Queued<D>| {
                    write
                        .together()
                        .is_some_and(|(t, n, _)| t == ty && n == name)
                };
                next + 1
                    + writes[next + 1..]
                        .iter()
                        .take_while(|w| same(w.as_ref()))
                        .count()
            }
            None => next + 1,
        };
        let applied = match kind {
            Some((_, _, apply_run)) if end - next > 1 => {
                apply_run(&mut tx, &mut writes[next..end]).await
            }
            _ => writes[next].apply(&mut tx).await,
        };
        if let Applied::Failed = applied {
            tx.rollback().await?;
            return Ok(false);
        }
        next = end;
    }
    tx.commit().await?;
    Ok(true)
}
