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
//! Writes of one kind (appending events, saving checkpoints: the bulk of the load) can
//! run *together*: one call takes all of a batch's, as multi-row statements, and answers
//! each its own outcome (see [`GroupCommit::write_together`]). The batch is regrouped
//! for it, each kind's writes where its first one queued, in their queue order. That
//! keeps every promise: the writes of one batch were all waiting at once, so none of
//! their callers had been answered for another, and a caller's later write is in a later
//! batch.
//!
//! Readers do not use the writer: they read through the pool's other connections (SQLite
//! in WAL mode reads beside its one writer).
//!
//! A batch whose connection is lost before its commit is run again on a new one (see
//! `batch.rs`): a database restart pauses the writers and loses no write.

mod batch;

use std::any::{Any, TypeId};
use std::marker::PhantomData;

use agent_runtime::checkpoint::CheckpointError;
use agent_runtime::sessions::StoreError;
use futures::future::BoxFuture;
use sqlx::{Database, Pool};
use tokio::sync::{mpsc, oneshot};

use crate::sql::Sql;
use batch::write_batches;

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
    /// a connection of the pool for its batches, keeping it while writes queue back to
    /// back, so the pool's other connections read.
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

    /// As [`write_together`](Self::write_together), with the batch's commit synced to
    /// disk before the answer, like [`write_synced`](Self::write_synced).
    pub(crate) async fn write_together_synced<T, O, E>(
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
        self.submit(input, How::Together(kind, apply_all), true)
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

/// Applies a run of queued writes of one concrete type, in order (a run of one for a
/// write that runs alone).
type ApplyRun<D> = for<'c> fn(
    &'c mut <D as Database>::Connection,
    &'c mut [Box<dyn Queued<D>>],
) -> BoxFuture<'c, Applied>;

/// A write waiting for its batch, whatever it writes.
trait Queued<D: Sql>: Send + Any {
    /// Whether its commit must be synced to disk.
    fn synced(&self) -> bool;

    /// The kind it runs together with (its concrete type and name), or `None` for a
    /// write that runs alone.
    fn kind(&self) -> Option<(TypeId, &'static str)>;

    /// How a run of writes of its type is applied.
    fn apply_run(&self) -> ApplyRun<D>;

    /// Itself, to be taken back as its concrete type by [`ApplyRun`].
    fn as_any(&self) -> &dyn Any;

    /// Itself, to be taken back as its concrete type by [`ApplyRun`].
    fn as_any_mut(&mut self) -> &mut dyn Any;

    /// Answers its caller: its outcome, or `failure` when its batch was not committed.
    fn answer(self: Box<Self>, failure: Option<&str>);

    /// Forgets the outcome of an attempt that was rolled back, before the next.
    fn forget_outcome(&mut self);
}

/// How a write is applied.
enum How<D: Sql, T, O, E> {
    /// On its own.
    Alone(Apply<D, T, O, E>),
    /// Together with its neighbours of the same kind.
    Together(&'static str, ApplyAll<D, T, O, E>),
}

impl<D: Sql, T, O, E> Clone for How<D, T, O, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<D: Sql, T, O, E> Copy for How<D, T, O, E> {}

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

    fn kind(&self) -> Option<(TypeId, &'static str)> {
        match self.apply {
            How::Alone(_) => None,
            How::Together(kind, _) => Some((TypeId::of::<Self>(), kind)),
        }
    }

    fn apply_run(&self) -> ApplyRun<D> {
        apply_run::<D, T, O, E>
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
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

    fn forget_outcome(&mut self) {
        self.outcome = None;
    }
}

/// Applies a run of writes that are all [`Pending<D, T, O, E>`] with the same [`How`]:
/// one write alone, or the writes of one kind in one call of their [`ApplyAll`]. Each
/// keeps its outcome; a run that fails as a whole keeps its error only when it is one
/// write (a longer one is rolled back and run again write by write).
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
            let mut how = None;
            let mut inputs: Vec<&T> = Vec::with_capacity(run.len());
            for write in run.iter() {
                let Some(write) = write.as_any().downcast_ref::<Pending<D, T, O, E>>() else {
                    return Applied::Failed;
                };
                how.get_or_insert(write.apply);
                inputs.push(&write.input);
            }
            match (how, inputs.as_slice()) {
                (Some(How::Alone(apply)), [input]) => Ok(vec![apply(conn, input).await]),
                (Some(How::Together(_, apply_all)), _) => apply_all(conn, inputs).await,
                _ => return Applied::Failed,
            }
        };
        let outcomes = match outcomes {
            Ok(outcomes) if outcomes.len() == run.len() => outcomes,
            Ok(_) => return Applied::Failed,
            Err(error) => {
                if let [write] = run
                    && let Some(write) = write.as_any_mut().downcast_mut::<Pending<D, T, O, E>>()
                {
                    write.outcome = Some(Err(error));
                }
                return Applied::Failed;
            }
        };
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

#[cfg(test)]
mod tests {
    use super::batch::group_by_kind;
    use super::*;
    use sqlx::Sqlite;

    type Write = Pending<Sqlite, u32, (), StoreError>;

    fn alone<'c>(
        _: &'c mut sqlx::SqliteConnection,
        _: &'c u32,
    ) -> BoxFuture<'c, Result<(), StoreError>> {
        Box::pin(async { Ok(()) })
    }

    fn together<'c>(
        _: &'c mut sqlx::SqliteConnection,
        inputs: Vec<&'c u32>,
    ) -> BoxFuture<'c, Result<Vec<Result<(), StoreError>>, StoreError>> {
        Box::pin(async move { Ok(inputs.iter().map(|_| Ok(())).collect()) })
    }

    fn queued(input: u32, kind: Option<&'static str>) -> Box<dyn Queued<Sqlite>> {
        let (reply, _) = oneshot::channel();
        Box::new(Write {
            input,
            apply: match kind {
                Some(kind) => How::Together(kind, together),
                None => How::Alone(alone),
            },
            synced: false,
            outcome: None,
            reply,
            database: PhantomData,
        })
    }

    #[test]
    fn a_batch_is_regrouped_by_kind_each_where_its_first_write_queued() {
        let (events, checkpoints) = (Some("append event"), Some("save checkpoint"));
        let mut batch = vec![
            queued(1, None),
            queued(2, events),
            queued(3, checkpoints),
            queued(4, events),
            queued(5, None),
            queued(6, checkpoints),
            queued(7, events),
        ];
        group_by_kind(&mut batch);
        let order: Vec<u32> = batch
            .iter()
            .filter_map(|write| write.as_any().downcast_ref::<Write>())
            .map(|write| write.input)
            .collect();
        assert_eq!(order, [1, 2, 4, 7, 3, 6, 5]);
    }
}
