//! The handlers of `POST /v1/chat/completions` and `GET /v1/models`.

use std::convert::Infallible;
use std::pin::pin;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::conversations::Conversation;
use super::wire::{
    Completion, CompletionRequest, WireError, models as models_body, read_request, turn_failed,
};
use super::{ChatFront, ChatMessage, ChatProgress, ChatReply, ChatTurn};
use crate::auth::{Caller, DEFAULT_TENANT, Denied, Scope};

/// The header naming a conversation.
const CONVERSATION_HEADER: &str = "x-conversation-id";
/// The header naming the user when the body does not.
const USER_HEADER: &str = "x-user-id";

pub(crate) fn router(front: ChatFront) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(completions))
        .route("/v1/models", get(models))
        .route("/v1/models/{model}", get(model))
        .layer(DefaultBodyLimit::max(front.max_body_bytes))
        .with_state(front)
}

fn authorize(front: &ChatFront, headers: &HeaderMap) -> Result<Caller, WireError> {
    front
        .auth
        .check(headers, None)
        .map_err(|denied| match denied {
            Denied::Missing => WireError::missing_key(),
            Denied::Invalid(_) => WireError::wrong_key(),
            Denied::RateLimited { wait, .. } => WireError::rate_limited(wait),
        })
}

async fn models(State(front): State<ChatFront>, headers: HeaderMap) -> Response {
    if let Err(error) = authorize(&front, &headers) {
        return error.into_response();
    }
    Json(models_body(&front.agent.models(), created())).into_response()
}

async fn model(
    State(front): State<ChatFront>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Err(error) = authorize(&front, &headers) {
        return error.into_response();
    }
    let list = models_body(&front.agent.models(), created());
    match list["data"]
        .as_array()
        .and_then(|data| data.iter().find(|m| m["id"] == id.as_str()))
    {
        Some(found) => Json(found.clone()).into_response(),
        None => WireError::unknown_model(&id).into_response(),
    }
}

/// When the served models count as made: the process's start.
fn created() -> i64 {
    static STARTED: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *STARTED.get_or_init(|| chrono::Utc::now().timestamp())
}

/// A request checked and its conversation resolved, ready to answer.
struct Prepared {
    request: CompletionRequest,
    turn: ChatTurn,
}

async fn completions(
    State(front): State<ChatFront>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match prepare(&front, &headers, body).await {
        Err(error) => error.into_response(),
        Ok(prepared) if prepared.request.stream => streamed(front, prepared).into_response(),
        Ok(prepared) => whole(front, prepared).await,
    }
}

async fn prepare(
    front: &ChatFront,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Prepared, WireError> {
    let caller = authorize(front, headers)?;
    let body = body.map_err(|rejection| WireError::body_unreadable(rejection.body_text()))?;
    let body: Value = serde_json::from_slice(&body).map_err(|e| {
        WireError::body_unreadable(format!(
            "We could not parse the JSON body of your request: {e}"
        ))
    })?;
    let request = read_request(&body, front.max_file_bytes)?;
    if !front.agent.models().contains(&request.model) {
        return Err(WireError::unknown_model(&request.model));
    }
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let named = request.user.clone().or_else(|| header(USER_HEADER));
    let user = match (caller.principal.user(), named) {
        (Scope::Only(own), Some(named)) if named != *own => {
            return Err(WireError::user_not_allowed(&named));
        }
        (Scope::Only(own), _) => own.clone(),
        (Scope::Any, named) => named.unwrap_or_else(|| "anonymous".to_owned()),
    };
    let tenant = caller
        .principal
        .tenant()
        .only()
        .unwrap_or(DEFAULT_TENANT)
        .to_owned();
    let conversation = header(CONVERSATION_HEADER);
    let mut turn = ChatTurn {
        tenant,
        user,
        conversation,
        model: request.model.clone(),
        messages: Vec::new(),
        cancellation: CancellationToken::new(),
    };
    turn.messages = match &turn.conversation {
        Some(key) => Conversation::new(front.conversations.as_ref(), &turn.owner(), key)
            .continued(request.messages.clone())
            .await
            .map_err(|e| WireError::store(&e))?,
        None => request.messages.clone(),
    };
    Ok(Prepared { request, turn })
}

/// Keeps the conversation with its answer; a failure is logged, the answer still given.
async fn remember(
    front: &ChatFront,
    turn_user: &str,
    key: Option<&str>,
    messages: Vec<ChatMessage>,
    answer: &str,
) {
    let Some(key) = key else { return };
    if let Err(error) = Conversation::new(front.conversations.as_ref(), turn_user, key)
        .save(messages, answer)
        .await
    {
        tracing::warn!(%error, conversation = key, "the conversation could not be kept");
    }
}

fn turn_span(turn: &ChatTurn, stream: bool) -> tracing::Span {
    tracing::info_span!(
        "chat_turn",
        tenant.id = %turn.tenant,
        user.id = %turn.user,
        conversation = turn.conversation.as_deref().unwrap_or(""),
        model = %turn.model,
        stream,
    )
}

async fn whole(front: ChatFront, prepared: Prepared) -> Response {
    let Prepared { request, turn } = prepared;
    let span = turn_span(&turn, false);
    // A client that goes away drops this future, and the guard cancels the turn.
    let _cancel_on_drop = turn.cancellation.clone().drop_guard();
    let (user, key, messages) = (
        turn.owner(),
        turn.conversation.clone(),
        turn.messages.clone(),
    );
    let result = front
        .agent
        .reply(turn, ChatProgress::ignored())
        .instrument(span)
        .await;
    match result {
        Ok(reply) => {
            remember(&front, &user, key.as_deref(), messages, &reply.text).await;
            Json(Completion::new(&request.model).answer(&reply)).into_response()
        }
        Err(error) => {
            tracing::warn!(%error, "a chat turn failed");
            turn_failed(&error)
        }
    }
}

fn data(value: &Value) -> Event {
    Event::default().data(value.to_string())
}

fn streamed(front: ChatFront, prepared: Prepared) -> impl IntoResponse {
    let (events, receiver) = mpsc::channel::<Event>(64);
    let span = turn_span(&prepared.turn, true);
    let keep_alive = KeepAlive::new().interval(front.keep_alive);
    let tasks = front.tasks.clone();
    tasks.spawn(run_stream(front, prepared, events).instrument(span));
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver
            .recv()
            .await
            .map(|event| (Ok::<_, Infallible>(event), receiver))
    });
    Sse::new(stream).keep_alive(keep_alive)
}

/// Produces a stream's events: the role, progress as text, the answer, the finish, the
/// usage, `[DONE]`; or an error event and `[DONE]`. Stops the turn when the client goes.
async fn run_stream(front: ChatFront, prepared: Prepared, events: mpsc::Sender<Event>) {
    let Prepared { request, turn } = prepared;
    let completion = Completion::new(&request.model);
    let usage = request.include_usage;
    let cancellation = turn.cancellation.clone();
    let (user, key, messages) = (
        turn.owner(),
        turn.conversation.clone(),
        turn.messages.clone(),
    );
    let send = |event: Event| {
        let events = events.clone();
        async move { events.send(event).await.is_ok() }
    };
    let delta = |content: &str| completion.chunk(json!({"content": content}), None, usage);

    if !send(data(&completion.chunk(
        json!({"role": "assistant", "content": ""}),
        None,
        usage,
    )))
    .await
    {
        return;
    }
    let (progress, mut notes) = ChatProgress::channel();
    let agent = front.agent.clone();
    let mut reply = pin!(agent.reply(turn, progress));
    let mut noted = false;
    let result = loop {
        tokio::select! {
            result = &mut reply => break result,
            Some(note) = notes.recv() => {
                noted = true;
                if !send(data(&delta(&format!("{note}\n")))).await {
                    cancellation.cancel();
                    return;
                }
            }
            () = events.closed() => {
                tracing::info!("the client went away: the turn is cancelled");
                cancellation.cancel();
                return;
            }
        }
    };
    while let Ok(note) = notes.try_recv() {
        noted = true;
        send(data(&delta(&format!("{note}\n")))).await;
    }
    match result {
        Ok(ChatReply {
            text,
            usage: tokens,
            finish,
        }) => {
            remember(&front, &user, key.as_deref(), messages, &text).await;
            let text = if noted { format!("\n{text}") } else { text };
            send(data(&delta(&text))).await;
            send(data(&completion.chunk(json!({}), Some(finish), usage))).await;
            if usage {
                send(data(&completion.usage_chunk(tokens))).await;
            }
        }
        Err(error) => {
            tracing::warn!(%error, "a streamed chat turn failed");
            send(data(&WireError::agent(&error).body())).await;
        }
    }
    send(Event::default().data("[DONE]")).await;
}
