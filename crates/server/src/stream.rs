//! `GET /api/{product}/{session}/stream`: server-sent events, replayed from the store
//! after `Last-Event-ID`, then live.
//!
//! Live events come from memory (the fan-out), never from a read of the store per event.
//! A client that falls further behind than the fan-out holds (it does not read) is
//! dropped: its stream ends without a terminal event, and it reconnects with
//! `Last-Event-ID`. The writer never waits for a client.

use agent_runtime::sessions::Fanned;
use agent_runtime::sessions::{SessionRecord, StoredEvent};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt as _};
use serde_json::Value;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use crate::access::{Authorized, TokenQuery, authorized, last_event_id};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::prometheus::{ProductGauge, sse_client};
use crate::server::{AgentServer, CountedSlot};
use crate::writer::is_terminal;

/// `GET /api/{product}/{session}/stream`: the stored events after `Last-Event-ID`, then the
/// live ones, until the terminal event.
pub(crate) async fn stream(
    State(server): State<AgentServer>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    ids: Result<Path<(String, String)>, PathRejection>,
    token: Result<Query<TokenQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Authorized { record, query, .. } =
        authorized(&server, &caller, &headers, ids, token).await?;
    let header_id = headers
        .get("last-event-id")
        .map(|v| v.to_str().unwrap_or("invalid").to_owned());
    let after = last_event_id(header_id.or(query.last_event_id).as_deref())?;
    let events = SessionEvents::open(&server, &record, after)
        .await?
        .counted_as_sse_client(&record.product)
        .into_sse();
    let sse =
        Sse::new(events).keep_alive(KeepAlive::new().interval(server.inner.config.keep_alive));
    let mut response = sse.into_response();
    // Proxies must not buffer the stream.
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// One client's events of a session: a queue to send (replayed or caught up from the
/// store), the live channel, and the last number sent. The SSE stream reads it, and so
/// does the MCP front's product tool.
pub(crate) struct SessionEvents {
    store: Arc<dyn agent_runtime::sessions::SessionStore>,
    session: String,
    queue: VecDeque<(u64, Value)>,
    live: Option<BoxStream<'static, Fanned>>,
    last: u64,
    ended: bool,
    /// Counts this reader among its session's streams until it ends.
    _slot: CountedSlot,
    /// Counts it among the server's SSE clients until it ends, when it is one.
    _client: Option<ProductGauge>,
}

impl SessionEvents {
    /// The events of `record`'s session after number `after`: those stored, then the live
    /// ones until the terminal event. Takes one of the session's stream places.
    pub(crate) async fn open(
        server: &AgentServer,
        record: &SessionRecord,
        after: u64,
    ) -> Result<Self, ApiError> {
        let id = &record.id;
        let max = server.inner.config.max_streams_per_session;
        let slot = server.inner.streams.open(id, max).ok_or_else(|| {
            ApiError::at_capacity(
                "too_many_streams",
                format!("this session has {max} event streams open already"),
            )
        })?;
        // Subscribe before reading the store: an event stored meanwhile arrives on both
        // and is sent once (by its number); none falls in between. The run may be here or
        // on another instance; with a run queue, an unfinished session's run is on its way
        // (a worker takes it up), and so is one its store failed, waiting here to be taken
        // up again: the stream waits for it.
        let unfinished = !record.status.is_finished();
        let running = server.inner.live.get(id).is_some()
            || (unfinished && (server.inner.run_queue.is_some() || server.is_retaking(id)))
            || (unfinished && server.runs_elsewhere(id).await);
        let live = match running {
            true => Some(
                server
                    .inner
                    .fanout
                    .subscribe(id)
                    .await
                    .map_err(|error| ApiError::store(&error))?,
            ),
            false => None,
        };
        let replay = server
            .inner
            .store
            .events_after(id, after)
            .await
            .map_err(|error| ApiError::store(&error))?;
        tracing::debug!(session = %id, after, replayed = replay.len(), live = live.is_some(), "stream opened");
        Ok(SessionEvents {
            store: Arc::clone(&server.inner.store),
            session: id.clone(),
            queue: replay.into_iter().map(|e| (e.seq, e.event)).collect(),
            live,
            last: after,
            ended: false,
            _slot: slot,
            _client: None,
        })
    }

    /// Counts it among the server's SSE clients (of `product`) until it ends.
    fn counted_as_sse_client(mut self, product: &str) -> Self {
        self._client = Some(sse_client(product));
        self
    }

    fn into_sse(self) -> impl Stream<Item = Result<Event, Infallible>> + Send {
        futures::stream::unfold(self, |mut state| async move {
            state
                .next()
                .await
                .map(|(seq, event)| (Ok(sse_event(seq, &event)), state))
        })
    }

    /// The next event and its number; `None` after the terminal event, or when the reader
    /// fell behind or the store failed (a client then reconnects with `Last-Event-ID`).
    pub(crate) async fn next(&mut self) -> Option<(u64, Value)> {
        loop {
            if let Some((seq, event)) = self.queue.pop_front() {
                if seq <= self.last {
                    continue;
                }
                self.last = seq;
                if is_terminal(&event) {
                    self.ended = true;
                    self.live = None;
                }
                return Some((seq, event));
            }
            if self.ended {
                return None;
            }
            let live = self.live.as_mut()?;
            match live.next().await {
                Some(Fanned::Event(seq, event)) if seq == self.last + 1 || seq <= self.last => {
                    self.queue.push_back((seq, Value::clone(&event)));
                }
                // Skipped ahead (an event went missing on the way): catch up from the
                // store.
                Some(Fanned::Event(..)) => self.catch_up().await?,
                // The client reads slower than the session emits: dropped, it reconnects
                // with `Last-Event-ID`.
                Some(Fanned::Lagged) => {
                    tracing::info!(session = %self.session, last = self.last, "stream dropped: the client fell behind");
                    return None;
                }
                None => {
                    self.live = None;
                    self.catch_up().await?;
                    self.ended = true;
                }
            }
        }
    }

    async fn catch_up(&mut self) -> Option<()> {
        match self.store.events_after(&self.session, self.last).await {
            Ok(events) => {
                self.queue.extend(
                    events
                        .into_iter()
                        .map(|StoredEvent { seq, event, .. }| (seq, event)),
                );
                Some(())
            }
            Err(error) => {
                tracing::error!(session = %self.session, %error, "stream ended: the store failed");
                None
            }
        }
    }
}

/// `id: <seq>`, `event: <type>`, `data: <json>`.
fn sse_event(seq: u64, event: &Value) -> Event {
    let mut sse = Event::default().id(seq.to_string());
    if let Some(kind) = event.get("type").and_then(Value::as_str)
        && !kind.is_empty()
        && !kind.contains(['\n', '\r'])
    {
        sse = sse.event(kind);
    }
    sse.data(event.to_string())
}
