//! The writer task: each batch in one transaction, and what happens when the database
//! goes away under it.
//!
//! A batch whose connection is lost before its `COMMIT` was sent (the server restarted,
//! the network dropped) was rolled back by the server, so it is run again, whole and in
//! order, on a new connection, until it commits or [`RETRY_FOR`] has passed: a restart of
//! the database pauses the writes and loses none. A connection lost *at* the `COMMIT`
//! leaves the outcome unknown; those writes are answered with an error saying so (their
//! callers park and resume from what is stored, which recognises what was already
//! written).

use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::{Connection, Pool};
use tokio::sync::mpsc;

use super::{Applied, MAX_BATCH, Queued};
use crate::sql::Sql;

/// How long a batch whose connection was lost is tried again before its writes are
/// answered with the failure.
pub(super) const RETRY_FOR: Duration = Duration::from_secs(30);

/// The first pause before trying a lost batch again; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(50);
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// The writer task: commits what has queued, batch after batch, until every handle is
/// gone.
///
/// While writes keep queueing, the writer keeps its connection from one batch to the
/// next: taking one from the pool and giving it back costs two round trips to the
/// connection (sqlx checks it both ways), as much as a small batch's statements. It gives
/// the connection back as soon as nothing waits, so an idle writer holds none, and it
/// never keeps the only one a pool has (an in-memory SQLite database's), which the
/// readers need.
pub(super) async fn write_batches<D: Sql>(
    pool: Pool<D>,
    mut writes: mpsc::UnboundedReceiver<Box<dyn Queued<D>>>,
) {
    let keeps_connection = pool.options().get_max_connections() > 1;
    let mut batch = Vec::new();
    let mut held = None;
    while writes.recv_many(&mut batch, MAX_BATCH).await > 0 {
        group_by_kind(&mut batch);
        commit(&pool, &mut held, &mut batch).await;
        batch.clear();
        if !keeps_connection || writes.is_empty() || pool.is_closed() {
            held = None;
        }
    }
    tracing::debug!(database = D::NAME, "group commit writer stopped");
}

/// Moves the writes of each kind that run together to where the first of them queued,
/// keeping their queue order; the writes that run alone stay in theirs.
pub(super) fn group_by_kind<D: Sql>(batch: &mut Vec<Box<dyn Queued<D>>>) {
    let mut first_of_kind = std::collections::HashMap::new();
    let mut placed: Vec<(usize, Box<dyn Queued<D>>)> = batch
        .drain(..)
        .enumerate()
        .map(|(index, write)| {
            let place = match write.kind() {
                Some(kind) => *first_of_kind.entry(kind).or_insert(index),
                None => index,
            };
            (place, write)
        })
        .collect();
    // Stable: writes of one kind keep their order.
    placed.sort_by_key(|(place, _)| *place);
    batch.extend(placed.into_iter().map(|(_, write)| write));
}

/// What one attempt at a batch came to.
enum Attempt {
    /// Every write of the batch was answered.
    Answered,
    /// Some writes were answered; the rest go on at once, on a new connection.
    Continue,
    /// The connection was lost before the commit: nothing of what is left in the batch
    /// was written, and it may be tried again.
    Lost(String),
}

/// Commits `batch` as one transaction and answers every write in it, trying it again on
/// a new connection while the database is away (see the module docs).
async fn commit<D: Sql>(
    pool: &Pool<D>,
    held: &mut Option<PoolConnection<D>>,
    batch: &mut Vec<Box<dyn Queued<D>>>,
) {
    let started = Instant::now();
    let mut pause = FIRST_PAUSE;
    loop {
        let reason = match attempt(pool, held, batch).await {
            Attempt::Answered => return,
            Attempt::Continue => continue,
            Attempt::Lost(reason) => reason,
        };
        if started.elapsed() >= RETRY_FOR {
            tracing::error!(database = D::NAME, %reason, writes = batch.len(), "the database stayed away: writes refused");
            let reason = format!("{}: {reason} (tried for {RETRY_FOR:?})", D::NAME);
            batch
                .drain(..)
                .for_each(|write| write.answer(Some(&reason)));
            return;
        }
        if pause == FIRST_PAUSE {
            tracing::warn!(database = D::NAME, %reason, writes = batch.len(), "the connection was lost before the commit: trying the batch again");
        }
        for write in batch.iter_mut() {
            write.forget_outcome();
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// One attempt at `batch`, on the `held` connection or one taken from the pool and left
/// in `held`: answers the writes it settles and removes them from it. A connection whose
/// transaction failed is closed, not given back to the pool: it may be dead, or still
/// inside the transaction (SQLite keeps one whose `COMMIT` failed, on a full disk, open).
async fn attempt<D: Sql>(
    pool: &Pool<D>,
    held: &mut Option<PoolConnection<D>>,
    batch: &mut Vec<Box<dyn Queued<D>>>,
) -> Attempt {
    let mut conn = match held.take() {
        Some(conn) => conn,
        None => match pool.acquire().await {
            Ok(conn) => conn,
            Err(error) if connection_lost(&error) => return Attempt::Lost(error.to_string()),
            Err(error) => {
                let reason = format!("{}: {error}", D::NAME);
                batch
                    .drain(..)
                    .for_each(|write| write.answer(Some(&reason)));
                return Attempt::Answered;
            }
        },
    };
    let synced = batch.iter().any(|write| write.synced());
    let failure = match transaction(&mut *conn, batch, synced).await {
        Ok(true) => {
            batch.drain(..).for_each(|write| write.answer(None));
            *held = Some(conn);
            return Attempt::Answered;
        }
        Ok(false) => {
            tracing::debug!(
                database = D::NAME,
                writes = batch.len(),
                "a write failed: its batch is rolled back and each write runs alone"
            );
            loop {
                if batch.is_empty() {
                    *held = Some(conn);
                    return Attempt::Answered;
                }
                let synced = batch[0].synced();
                match transaction(&mut *conn, &mut batch[..1], synced).await {
                    Ok(_) => batch.remove(0).answer(None),
                    Err(failure) if failure.lost_before_commit() => break failure,
                    Err(failure) => {
                        batch.remove(0).answer(Some(&failure.reason::<D>()));
                        discard(conn).await;
                        return match batch.is_empty() {
                            true => Attempt::Answered,
                            false => Attempt::Continue,
                        };
                    }
                }
            }
        }
        Err(failure) => failure,
    };
    discard(conn).await;
    if failure.lost_before_commit() {
        return Attempt::Lost(failure.error.to_string());
    }
    let reason = failure.reason::<D>();
    tracing::warn!(database = D::NAME, %reason, writes = batch.len(), "a batch was not committed");
    batch
        .drain(..)
        .for_each(|write| write.answer(Some(&reason)));
    Attempt::Answered
}

/// Closes a connection whose transaction failed instead of giving it back to the pool.
async fn discard<D: Sql>(conn: PoolConnection<D>) {
    if let Err(error) = conn.detach().close().await {
        tracing::debug!(database = D::NAME, %error, "a failed connection did not close cleanly");
    }
}

/// A transaction that failed, and whether it got as far as its `COMMIT`.
struct Failure {
    error: sqlx::Error,
    at_commit: bool,
}

impl Failure {
    fn before_commit(error: sqlx::Error) -> Self {
        Failure {
            error,
            at_commit: false,
        }
    }

    /// Whether the connection was lost before the commit was sent: the server rolled the
    /// transaction back, so it can be run again.
    fn lost_before_commit(&self) -> bool {
        !self.at_commit && connection_lost(&self.error)
    }

    /// What the writes are answered.
    fn reason<D: Sql>(&self) -> String {
        if self.at_commit && connection_lost(&self.error) {
            format!(
                "{}: the connection was lost at the commit, which may or may not have been applied: {}",
                D::NAME,
                self.error
            )
        } else {
            format!("{}: {}", D::NAME, self.error)
        }
    }
}

/// Whether `error` says the connection to the database is gone (rather than that a
/// statement was refused): I/O, the protocol, the pool, or the server's own "connection
/// exception" and "operator intervention" states (SQLSTATE classes 08 and 57P).
fn connection_lost(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(database) => database
            .code()
            .is_some_and(|code| code.starts_with("08") || code.starts_with("57P")),
        _ => false,
    }
}

async fn transaction<D: Sql>(
    conn: &mut D::Connection,
    writes: &mut [Box<dyn Queued<D>>],
    synced: bool,
) -> Result<bool, Failure> {
    let mode = match synced {
        true => Some(
            D::sync_commits(conn)
                .await
                .map_err(Failure::before_commit)?,
        ),
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
) -> Result<bool, Failure> {
    let mut tx = conn
        .begin_with(D::BEGIN_WRITE)
        .await
        .map_err(Failure::before_commit)?;
    let mut next = 0;
    while next < writes.len() {
        // The writes of the same kind queued right after this one run with it.
        let end = match writes[next].kind() {
            Some(kind) => {
                next + 1
                    + writes[next + 1..]
                        .iter()
                        .take_while(|write| write.kind() == Some(kind))
                        .count()
            }
            None => next + 1,
        };
        let apply_run = writes[next].apply_run();
        if let Applied::Failed = apply_run(&mut tx, &mut writes[next..end]).await {
            // A rollback that fails lost its connection: the server rolls back itself.
            tx.rollback().await.map_err(Failure::before_commit)?;
            return Ok(false);
        }
        next = end;
    }
    tx.commit().await.map_err(|error| Failure {
        error,
        at_commit: true,
    })?;
    Ok(true)
}
