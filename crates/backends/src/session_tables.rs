//! The session store's tables, written once for SQLite and PostgreSQL: sessions, their
//! events and gates.
//!
//! Every write is one step of the database's group commit (`group_commit.rs`): it runs
//! inside its batch's write transaction and is answered once that commits. An event's
//! number is one more than the highest its session has stored, read in the transaction
//! that stores the event with the session's row locked (ADR 0023), so concurrent writers,
//! in any process or instance, take turns on that row and the numbers have no gaps: a
//! transaction that fails gives its number back.
//! Writes that read first lock the session's row (on SQLite the write transaction holds
//! the whole database), so of two writers settling the same gate exactly one answer is
//! accepted.

use agent_runtime::sessions::{
    GateAnswer, NewSession, OpenGate, SessionOutcome, SessionRecord, SessionStatus, StoreError,
    StoredEvent, StoredGate,
};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::Pool;

use crate::event_rows::{Append, LAST_EVENT, insert_events};
use crate::group_commit::GroupCommit;
use crate::sql::{Bind, Cells, Sql, sql_number, store_error};
use crate::status_rows::update_statuses;

/// The columns [`session_from_row`] reads.
const SESSION_COLUMNS: &str = "id, product, token_hash, tenant, status, stage, request, result, error, created_at, \
     updated_at";

/// The sessions, events and gates of database `D`, read through `pool` and written
/// through the database's group commit.
pub(crate) struct SessionTables<D: Sql> {
    pool: Pool<D>,
    commits: GroupCommit<D>,
}

impl<D: Sql> Clone for SessionTables<D> {
    fn clone(&self) -> Self {
        SessionTables {
            pool: self.pool.clone(),
            commits: self.commits.clone(),
        }
    }
}

/// Fails with [`StoreError::NotFound`] unless the session exists; with `lock`, keeps
/// other writers off its row until the transaction ends.
async fn require<D: Sql>(conn: &mut D::Connection, id: &str, lock: bool) -> Result<(), StoreError> {
    let query = if lock && D::LOCKS_ROWS {
        "SELECT 1 AS found FROM sessions WHERE id = $1 FOR UPDATE"
    } else {
        "SELECT 1 AS found FROM sessions WHERE id = $1"
    };
    let found = Bind::<D>::new(query)
        .text(id)
        .fetch_optional(conn)
        .await
        .map_err(store_error::<D>)?;
    found
        .map(drop)
        .ok_or_else(|| StoreError::NotFound(id.to_owned()))
}

fn session_from_row<D: Sql>(row: &D::Row) -> Result<SessionRecord, StoreError> {
    let id = Cells::<D>::new(row, "a session".to_owned()).text("id")?;
    let cells = Cells::<D>::new(row, format!("session {id:?}"));
    let status_text = cells.text("status")?;
    let status = SessionStatus::parse(&status_text)
        .ok_or_else(|| cells.corrupt("status", format!("unknown status {status_text:?}")))?;
    Ok(SessionRecord {
        product: cells.text("product")?,
        token_hash: cells.text("token_hash")?,
        tenant: cells.opt_text("tenant")?,
        status,
        stage: cells.opt_text("stage")?,
        request: cells.json("request")?,
        result: cells.opt_json("result")?,
        error: cells.opt_text("error")?,
        created_at: cells.time("created_at")?,
        updated_at: cells.time("updated_at")?,
        id,
    })
}

/// Inserts a running session; one with its id already is a conflict (nothing written).
async fn insert_session<D: Sql>(
    conn: &mut D::Connection,
    session: &NewSession,
    now: DateTime<Utc>,
) -> Result<NewSession, StoreError> {
    let created = Bind::<D>::new(
        "INSERT INTO sessions (id, product, token_hash, tenant, status, request, created_at, \
         updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (id) DO NOTHING",
    )
    .text(&session.id)
    .text(&session.product)
    .text(&session.token_hash)
    .opt_text(session.tenant.as_deref())
    .text(SessionStatus::Running.as_str())
    .json(&session.request)
    .time(now)
    .execute(conn)
    .await
    .map_err(store_error::<D>)?;
    if created == 0 {
        return Err(StoreError::Conflict(session.id.clone()));
    }
    Ok(session.clone())
}

/// Ends a session still running or waiting with `outcome` and appends its terminal
/// event; one ended already is left as it is.
async fn end_session<D: Sql>(
    conn: &mut D::Connection,
    terminal: &Append,
    outcome: &SessionOutcome,
) -> Result<Option<u64>, StoreError> {
    let id = terminal.0.as_str();
    require::<D>(conn, id, true).await?;
    let status = outcome.status().as_str();
    let update = match outcome {
        SessionOutcome::Complete(result) => Bind::<D>::new(
            "UPDATE sessions SET status = $1, result = $2, updated_at = $3 \
             WHERE id = $4 AND status IN ('running', 'waiting')",
        )
        .text(status)
        .json(result),
        SessionOutcome::Failed(error)
        | SessionOutcome::Cancelled(error)
        | SessionOutcome::Expired(error) => Bind::<D>::new(
            "UPDATE sessions SET status = $1, error = $2, updated_at = $3 \
             WHERE id = $4 AND status IN ('running', 'waiting')",
        )
        .text(status)
        .text(error),
    };
    let ended = update
        .time(D::now())
        .text(id)
        .execute(&mut *conn)
        .await
        .map_err(store_error::<D>)?;
    if ended == 0 {
        return Ok(None);
    }
    announce::<D>(conn, terminal).await.map(Some)
}

/// Counts a resume in the session's row (see [`SessionTables::note_resume`]).
async fn count_resume<D: Sql>(
    conn: &mut D::Connection,
    id: &str,
    events: u64,
) -> Result<u32, StoreError> {
    // One statement: the row's lock orders concurrent resumes.
    let row = Bind::<D>::new(
        "UPDATE sessions SET \
           resume_attempts = CASE WHEN resume_attempts > 0 AND resume_events = $2 \
                                  THEN resume_attempts + 1 ELSE 1 END, \
           resume_events = $2 \
         WHERE id = $1 RETURNING CAST(resume_attempts AS BIGINT) AS attempts",
    )
    .text(id)
    .int(sql_number(events))
    .fetch_optional(conn)
    .await
    .map_err(store_error::<D>)?
    .ok_or_else(|| StoreError::NotFound(id.to_owned()))?;
    let attempts = Cells::<D>::new(&row, format!("session {id:?}")).number("attempts")?;
    Ok(u32::try_from(attempts).unwrap_or(u32::MAX))
}

impl<D: Sql> SessionTables<D> {
    /// The tables in the database of `pool`, with the database's writer started (on the
    /// current tokio runtime).
    pub(crate) fn new(pool: Pool<D>) -> Self {
        SessionTables {
            commits: GroupCommit::start(pool.clone()),
            pool,
        }
    }

    /// The connections, shared with the other stores on the same database.
    pub(crate) fn pool(&self) -> &Pool<D> {
        &self.pool
    }

    /// The database's writer, shared with the other stores on the same database.
    pub(crate) fn commits(&self) -> &GroupCommit<D> {
        &self.commits
    }

    /// Creates a running session; a session with its id already is a conflict.
    pub(crate) async fn create(&self, session: NewSession) -> Result<SessionRecord, StoreError> {
        let now = D::now();
        let session = self
            .commits
            .write((session, now), |conn, (session, now)| {
                Box::pin(insert_session::<D>(conn, session, *now))
            })
            .await?;
        Ok(session.into_record(now))
    }

    /// The session `id`, if there is one.
    pub(crate) async fn get(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(store_error::<D>)?;
        let query = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1");
        let row = Bind::<D>::new(&query)
            .text(id)
            .fetch_optional(&mut conn)
            .await
            .map_err(store_error::<D>)?;
        row.as_ref().map(session_from_row::<D>).transpose()
    }

    /// Sets the session's status and, when given, its stage.
    pub(crate) async fn set_status(
        &self,
        id: &str,
        status: SessionStatus,
        stage: Option<&str>,
    ) -> Result<(), StoreError> {
        // Status changes queued together are stored together.
        self.commits
            .write_together(
                "set status",
                (id.to_owned(), status, stage.map(str::to_owned)),
                |conn, changes| Box::pin(update_statuses::<D>(conn, changes)),
            )
            .await
    }

    /// Ends the session with its result or error and stores its terminal event,
    /// answering the event's number; a session ended already is left as it is (`None`).
    pub(crate) async fn finish(
        &self,
        id: &str,
        outcome: SessionOutcome,
        terminal: &Value,
    ) -> Result<Option<u64>, StoreError> {
        let input = ((id.to_owned(), terminal.clone()), outcome);
        self.commits
            .write(input, |conn, (terminal, outcome)| {
                Box::pin(end_session::<D>(conn, terminal, outcome))
            })
            .await
    }

    /// Stores the session's next event, answering its number.
    pub(crate) async fn append_event(&self, id: &str, event: &Value) -> Result<u64, StoreError> {
        // Appends queued together are numbered and stored together.
        self.commits
            .write_together(
                "append event",
                (id.to_owned(), event.clone()),
                |conn, appends| Box::pin(insert_events::<D>(conn, appends)),
            )
            .await
    }

    /// The session's events numbered after `after`, in order.
    ///
    /// One read, no transaction: the session's row joined to its events after `after`.
    /// No row means no such session; a row without an event (numbered 0 here, as events
    /// are numbered from 1), a session with none after `after`.
    pub(crate) async fn events_after(
        &self,
        id: &str,
        after: u64,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(store_error::<D>)?;
        let rows = Bind::<D>::new(
            "SELECT COALESCE(e.seq, 0) AS seq, e.event AS event, e.at AS at FROM sessions s \
             LEFT JOIN events e ON e.session_id = s.id AND e.seq > $2 \
             WHERE s.id = $1 ORDER BY e.seq",
        )
        .text(id)
        .int(sql_number(after))
        .fetch_all(&mut *conn)
        .await
        .map_err(store_error::<D>)?;
        if rows.is_empty() {
            return Err(StoreError::NotFound(id.to_owned()));
        }
        let mut events = Vec::with_capacity(rows.len());
        for row in &rows {
            let seq = Cells::<D>::new(row, format!("session {id:?}, an event")).number("seq")?;
            if seq == 0 {
                continue;
            }
            let cells = Cells::<D>::new(row, format!("session {id:?}, event {seq}"));
            events.push(StoredEvent {
                seq,
                event: cells.json("event")?,
                at: cells.time("at")?,
            });
        }
        Ok(events)
    }

    /// How many events the session has.
    pub(crate) async fn event_count(&self, id: &str) -> Result<u64, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(store_error::<D>)?;
        let query = format!("SELECT {LAST_EVENT} AS last_event FROM sessions s WHERE s.id = $1");
        let row = Bind::<D>::new(&query)
            .text(id)
            .fetch_optional(&mut conn)
            .await
            .map_err(store_error::<D>)?
            .ok_or_else(|| StoreError::NotFound(id.to_owned()))?;
        Cells::<D>::new(&row, format!("session {id:?}")).number("last_event")
    }

    /// Records a pending gate and stores its announcement, answering the
    /// announcement's number; a gate already recorded is left as it is (`None`).
    pub(crate) async fn open_gate(
        &self,
        id: &str,
        gate: &OpenGate<'_>,
        announcement: &Value,
    ) -> Result<Option<u64>, StoreError> {
        let input = (id.to_owned(), NewGate::from(gate), announcement.clone());
        self.commits
            .write(input, |conn, (id, gate, announcement)| {
                Box::pin(insert_gate::<D>(conn, id, gate, announcement))
            })
            .await
    }

    /// Answers or closes a pending gate, storing its announcement with it.
    pub(crate) async fn settle_gate(
        &self,
        id: &str,
        gate_id: &str,
        settle: Settle,
        announcement: &Value,
    ) -> Result<GateAnswer, StoreError> {
        let input = (
            (id.to_owned(), announcement.clone()),
            gate_id.to_owned(),
            settle,
        );
        self.commits
            .write(input, |conn, (announce, gate_id, settle)| {
                Box::pin(settle_gate_row::<D>(conn, announce, gate_id, settle))
            })
            .await
    }

    /// Every gate of the session, in the order they opened.
    pub(crate) async fn gates(&self, id: &str) -> Result<Vec<StoredGate>, StoreError> {
        let mut tx = self.pool.begin().await.map_err(store_error::<D>)?;
        let gates = gate_rows::<D>(&mut tx, id).await?;
        tx.commit().await.map_err(store_error::<D>)?;
        Ok(gates)
    }

    /// Counts a resume of the session at `events` events: one more in a row when the
    /// last one found it at the same count, else the first.
    pub(crate) async fn note_resume(&self, id: &str, events: u64) -> Result<u32, StoreError> {
        self.commits
            .write((id.to_owned(), events), |conn, (id, events)| {
                Box::pin(count_resume::<D>(conn, id, *events))
            })
            .await
    }

    /// The product's sessions that are running or waiting, oldest first.
    pub(crate) async fn unfinished(&self, product: &str) -> Result<Vec<SessionRecord>, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(store_error::<D>)?;
        let query = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE product = $1 AND status IN ($2, $3) \
             ORDER BY created_at, id"
        );
        let rows = Bind::<D>::new(&query)
            .text(product)
            .text(SessionStatus::Running.as_str())
            .text(SessionStatus::Waiting.as_str())
            .fetch_all(&mut conn)
            .await
            .map_err(store_error::<D>)?;
        rows.iter().map(session_from_row::<D>).collect()
    }
}

/// A gate to record, owned until its batch is written.
pub(crate) struct NewGate {
    id: String,
    name: String,
    kind: String,
    payload: Value,
}

impl From<&OpenGate<'_>> for NewGate {
    fn from(gate: &OpenGate<'_>) -> Self {
        NewGate {
            id: gate.id.to_owned(),
            name: gate.name.to_owned(),
            kind: gate.kind.to_owned(),
            payload: gate.payload.clone(),
        }
    }
}

/// Records a pending gate and appends its announcement; a gate already recorded is left
/// as it is, and nothing is appended.
async fn insert_gate<D: Sql>(
    conn: &mut D::Connection,
    id: &str,
    gate: &NewGate,
    announcement: &Value,
) -> Result<Option<u64>, StoreError> {
    // PostgreSQL: the session's row locked first. SQLite: the write transaction holds the
    // database, and the insert checks that the session is there.
    if D::LOCKS_ROWS {
        require::<D>(conn, id, true).await?;
    }
    let inserted = Bind::<D>::new(
        "INSERT INTO gates (session_id, gate_id, position, name, kind, payload, opened_at) \
         SELECT s.id, $2, \
         (SELECT COALESCE(MAX(position), 0) + 1 FROM gates WHERE session_id = $1), \
         $3, $4, $5, $6 FROM sessions s WHERE s.id = $1 \
         ON CONFLICT (session_id, gate_id) DO NOTHING",
    )
    .text(id)
    .text(&gate.id)
    .text(&gate.name)
    .text(&gate.kind)
    .json(&gate.payload)
    .time(D::now())
    .execute(&mut *conn)
    .await
    .map_err(store_error::<D>)?;
    if inserted == 0 {
        // The gate is recorded already, or (not checked yet on SQLite) no such session.
        if !D::LOCKS_ROWS {
            require::<D>(conn, id, false).await?;
        }
        return Ok(None);
    }
    announce::<D>(conn, &(id.to_owned(), announcement.clone()))
        .await
        .map(Some)
}

/// Appends the event that announces a change just made (a gate recorded or settled, the
/// session ended), in its transaction. The session's row was checked (and locked) by
/// then: any failure here is the database's, and rolls the change back with it.
async fn announce<D: Sql>(conn: &mut D::Connection, append: &Append) -> Result<u64, StoreError> {
    match insert_events::<D>(conn, vec![append]).await?.pop() {
        Some(Ok(seq)) => Ok(seq),
        Some(Err(error)) => Err(StoreError::Backend(format!(
            "an announcement was not stored: {error}"
        ))),
        None => Err(StoreError::Backend(
            "an announcement was not stored".to_owned(),
        )),
    }
}

/// How a pending gate is settled.
pub(crate) enum Settle {
    /// With the user's answer.
    Answer(Value),
    /// Without one, for a reason (`expired`, `cancelled`).
    Close(String),
}

/// Answers or closes a pending gate and appends its announcement; an unknown, answered
/// or closed one is left alone and said so, and nothing is appended.
async fn settle_gate_row<D: Sql>(
    conn: &mut D::Connection,
    announce_as: &Append,
    gate_id: &str,
    settle: &Settle,
) -> Result<GateAnswer, StoreError> {
    let id = announce_as.0.as_str();
    require::<D>(conn, id, true).await?;
    let row = Bind::<D>::new(
        "SELECT answer IS NOT NULL AS answered, closed IS NOT NULL AS closed FROM gates \
         WHERE session_id = $1 AND gate_id = $2",
    )
    .text(id)
    .text(gate_id)
    .fetch_optional(&mut *conn)
    .await
    .map_err(store_error::<D>)?;
    let Some(row) = row else {
        return Ok(GateAnswer::Unknown);
    };
    let cells = Cells::<D>::new(&row, format!("session {id:?}, gate {gate_id:?}"));
    let flag = |column| D::flag(&row, column).map_err(|e| cells.corrupt(column, e));
    if flag("answered")? {
        return Ok(GateAnswer::AlreadyAnswered);
    }
    if flag("closed")? {
        return Ok(GateAnswer::Closed);
    }
    let update = match settle {
        Settle::Answer(answer) => Bind::<D>::new(
            "UPDATE gates SET answer = $3, answered_at = $4 \
             WHERE session_id = $1 AND gate_id = $2",
        )
        .text(id)
        .text(gate_id)
        .json(answer),
        Settle::Close(reason) => Bind::<D>::new(
            "UPDATE gates SET closed = $3, closed_at = $4 WHERE session_id = $1 AND gate_id = $2",
        )
        .text(id)
        .text(gate_id)
        .text(reason),
    };
    update
        .time(D::now())
        .execute(&mut *conn)
        .await
        .map_err(store_error::<D>)?;
    Ok(GateAnswer::Accepted {
        announced: announce::<D>(conn, announce_as).await?,
    })
}

/// Every gate of the session, in the order they opened.
async fn gate_rows<D: Sql>(
    conn: &mut D::Connection,
    id: &str,
) -> Result<Vec<StoredGate>, StoreError> {
    require::<D>(conn, id, false).await?;
    let rows = Bind::<D>::new(
        "SELECT gate_id, name, kind, payload, opened_at, answer, answered_at, closed FROM gates \
         WHERE session_id = $1 ORDER BY position",
    )
    .text(id)
    .fetch_all(conn)
    .await
    .map_err(store_error::<D>)?;
    rows.iter()
        .map(|row| {
            let gate_id =
                Cells::<D>::new(row, format!("session {id:?}, a gate")).text("gate_id")?;
            let cells = Cells::<D>::new(row, format!("session {id:?}, gate {gate_id:?}"));
            Ok(StoredGate {
                name: cells.text("name")?,
                kind: cells.text("kind")?,
                payload: cells.json("payload")?,
                opened_at: cells.time("opened_at")?,
                answer: cells.opt_json("answer")?,
                answered_at: cells.opt_time("answered_at")?,
                closed: cells.opt_text("closed")?,
                id: gate_id,
            })
        })
        .collect()
}
