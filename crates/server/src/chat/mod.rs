//! An OpenAI-compatible front for any conversational product: `POST /v1/chat/completions`
//! (whole answers and streams) and `GET /v1/models`, so the chat clients people already
//! use (the `openai` SDKs, chat UIs) talk to a product unchanged.
//!
//! A product implements [`ChatAgent`]: given a conversation it answers, telling
//! [`ChatProgress`] what it is doing on the way. [`ChatFront`] does the rest:
//!
//! - **Auth**: the server's one auth layer ([`crate::auth`]): `Authorization: Bearer
//!   <key or JWT>` or `X-API-Key`. The front's own keys ([`ChatFront::with_api_keys`], or
//!   `CHAT_API_KEYS`, comma-separated, through [`ChatFront::from_env`], which also reads
//!   `AGENT_API_KEYS` and the JWT settings) are keys of the tenant `default`. With no
//!   credential set every request is accepted, and [`ChatFront::bind_address`] keeps the
//!   server on loopback.
//! - **Users**: a credential bound to a user speaks for that user only (a request naming
//!   another is refused with 403); with any other the user a product sees is the
//!   request's `user` field, else the `X-User-Id` header, else `anonymous`. A product
//!   scopes what it keeps by [`ChatTurn::owner`], which adds the tenant.
//! - **Conversations**: a request is the whole conversation, as in OpenAI's API, unless
//!   it names one with the `X-Conversation-Id` header; those are kept per user in a
//!   [`DocumentStore`]. There, a request holding an assistant message carries its own
//!   history, which replaces the stored one, and a request of user messages only
//!   continues the stored conversation, so a client may send only its newest message.
//! - **The official wire format** (see [`wire`](self) for the shapes): errors before a
//!   stream as `{"error": {"message", "type", "param", "code"}}` with their status (400
//!   invalid request, 401 key, 404 model, 500/503 the agent); a stream of
//!   `chat.completion.chunk`s sharing one `id` and `created`, `role: "assistant"` in the
//!   first delta, progress as text deltas, the answer, `finish_reason` on the last choice
//!   chunk, the usage chunk (empty `choices`) when `stream_options.include_usage` is set,
//!   then `data: [DONE]`; a failure during a stream is a `data: {"error": ...}` event
//!   followed by `[DONE]`. A client that goes away cancels the turn (noticed at the next
//!   write: a note, or the keep-alive comment of [`ChatFront::with_keep_alive`]).
//! - **Progress**: what the agent tells [`ChatProgress`] reaches a streaming client as
//!   text deltas (plain clients show them) and is left out of the stored history and of
//!   whole (non-streaming) answers.
//!
//! ```
//! use agent_server::chat::{ChatAgent, ChatAgentError, ChatFront, ChatProgress, ChatReply, ChatTurn};
//! use agent_runtime::documents::InMemoryDocumentStore;
//! use std::sync::Arc;
//!
//! struct Echo;
//!
//! #[async_trait::async_trait]
//! impl ChatAgent for Echo {
//!     fn models(&self) -> Vec<String> {
//!         vec!["echo".into()]
//!     }
//!     async fn reply(&self, turn: ChatTurn, progress: ChatProgress) -> Result<ChatReply, ChatAgentError> {
//!         progress.note("thinking");
//!         let last = turn.messages.last().map(|m| m.content.clone()).unwrap_or_default();
//!         Ok(ChatReply::text(format!("you said: {last}")))
//!     }
//! }
//!
//! let front = ChatFront::new(Arc::new(Echo), Arc::new(InMemoryDocumentStore::default()))
//!     .with_api_keys(["sk-local-1"]);
//! let router: axum::Router = front.router();
//! # let _ = router;
//! ```

mod conversations;
mod files;
#[cfg(test)]
mod fuzz;
mod routes;
mod wire;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use agent_runtime::documents::DocumentStore;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::{Auth, AuthConfigError};

/// Who wrote a message of a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    /// Instructions from the client (`system` or `developer`).
    System,
    /// The person chatting.
    User,
    /// The agent.
    Assistant,
}

/// One message of a conversation, as text, with the files attached to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who wrote it.
    pub role: ChatRole,
    /// What it says.
    pub content: String,
    /// The files attached to it (OpenAI `file` content parts), in order. Never stored
    /// with a conversation: a product takes what it needs from them in the turn they
    /// arrive.
    #[serde(skip)]
    pub files: Vec<ChatFile>,
}

impl ChatMessage {
    /// A message of `role` saying `content`.
    pub fn new(role: ChatRole, content: impl Into<String>) -> Self {
        ChatMessage {
            role,
            content: content.into(),
            files: Vec::new(),
        }
    }

    /// The same message with `file` attached.
    pub fn with_file(mut self, file: ChatFile) -> Self {
        self.files.push(file);
        self
    }
}

/// A file a client attached to a message, as an OpenAI `file` content part
/// (`{"type": "file", "file": {"filename": ..., "file_data": "data:...;base64,..."}}`),
/// decoded in memory; nothing is written to disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatFile {
    /// Its name as the client gave it (`resume.pdf`), else `attachment`.
    pub name: String,
    /// Its media type, from the data URL, when given (`application/pdf`).
    pub media_type: Option<String>,
    /// Its bytes, or why the front did not take them (larger than
    /// [`ChatFront::with_max_file_bytes`]) so the product can say so in its answer.
    pub content: Result<Vec<u8>, String>,
}

/// One turn to answer: the whole conversation so far, the last message the user's.
#[derive(Debug, Clone)]
pub struct ChatTurn {
    /// The tenant chatting: its credential's (`default` for the chat front's own keys and
    /// on a server without credentials).
    pub tenant: String,
    /// Who is chatting: its credential's user, else the request's `user`, else
    /// `X-User-Id`, else `anonymous`.
    pub user: String,
    /// The conversation's key, when the client gave one (header or `user`).
    pub conversation: Option<String>,
    /// The model the client asked for (one of [`ChatAgent::models`]).
    pub model: String,
    /// The conversation, oldest first.
    pub messages: Vec<ChatMessage>,
    /// Cancelled when the client goes away.
    pub cancellation: CancellationToken,
}

impl ChatTurn {
    /// The id a product scopes what it keeps by: the user, qualified by the tenant
    /// (`tenant/user`) unless that is `default`, so two tenants' users never share.
    ///
    /// ```
    /// # use agent_server::chat::ChatTurn;
    /// # fn turn(tenant: &str, user: &str) -> ChatTurn {
    /// #     ChatTurn { tenant: tenant.into(), user: user.into(), conversation: None,
    /// #         model: "m".into(), messages: Vec::new(), cancellation: Default::default() }
    /// # }
    /// assert_eq!(turn("default", "ada").owner(), "ada");
    /// assert_eq!(turn("acme", "ada").owner(), "acme/ada");
    /// ```
    pub fn owner(&self) -> String {
        if self.tenant == crate::auth::DEFAULT_TENANT {
            self.user.clone()
        } else {
            format!("{}/{}", self.tenant, self.user)
        }
    }
}

/// Why the answer stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FinishReason {
    /// The agent finished its answer.
    #[default]
    Stop,
    /// The answer was cut at a length limit.
    Length,
}

/// Tokens a turn used, summed over its model calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ChatUsage {
    /// Tokens sent to the model.
    pub prompt_tokens: u64,
    /// Tokens the model wrote.
    pub completion_tokens: u64,
}

/// A turn's answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChatReply {
    /// The answer's text.
    pub text: String,
    /// Tokens used.
    pub usage: ChatUsage,
    /// Why it stopped.
    pub finish: FinishReason,
}

impl ChatReply {
    /// A finished answer saying `text`, with no usage counted.
    pub fn text(text: impl Into<String>) -> Self {
        ChatReply {
            text: text.into(),
            ..ChatReply::default()
        }
    }
}

/// Why a turn could not be answered; each maps to an OpenAI error type and status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChatAgentError {
    /// The conversation cannot be answered as sent (400 `invalid_request_error`).
    #[error("{0}")]
    InvalidRequest(String),
    /// A service the agent needs is down or busy (503 `service_unavailable`).
    #[error("{0}")]
    Unavailable(String),
    /// The agent failed (500 `server_error`).
    #[error("{0}")]
    Failed(String),
}

/// Where an agent says what it is doing during a turn (a tool started, a route chosen).
/// Sending never blocks and never fails: notes for a client that went away are dropped.
#[derive(Debug, Clone)]
pub struct ChatProgress {
    notes: Option<mpsc::UnboundedSender<String>>,
}

impl ChatProgress {
    /// Progress that goes nowhere (a whole answer, a test).
    pub fn ignored() -> Self {
        ChatProgress { notes: None }
    }

    /// Progress into a channel, and its receiving end.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<String>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (
            ChatProgress {
                notes: Some(sender),
            },
            receiver,
        )
    }

    /// Tells the client `note` (one line; the front adds the line break).
    pub fn note(&self, note: impl Into<String>) {
        if let Some(notes) = &self.notes {
            let _ = notes.send(note.into());
        }
    }
}

/// A conversational product.
#[async_trait]
pub trait ChatAgent: Send + Sync + 'static {
    /// The model ids it answers as (`GET /v1/models`); a request naming another is 404.
    fn models(&self) -> Vec<String>;

    /// Answers the turn's last message.
    async fn reply(
        &self,
        turn: ChatTurn,
        progress: ChatProgress,
    ) -> Result<ChatReply, ChatAgentError>;
}

/// The body limit for files of up to `max_file` bytes: base64 makes them a third larger;
/// room for the conversation and for a file somewhat past the limit, which is then
/// refused by name rather than by the body limit.
fn body_limit(max_file: usize) -> usize {
    max_file.saturating_mul(2).saturating_add(4 * 1024 * 1024)
}

/// The OpenAI-compatible routes for one [`ChatAgent`] (see the [module docs](self)).
/// Cheap to clone.
#[derive(Clone)]
pub struct ChatFront {
    pub(crate) agent: Arc<dyn ChatAgent>,
    pub(crate) conversations: Arc<dyn DocumentStore>,
    pub(crate) auth: Auth,
    pub(crate) max_body_bytes: usize,
    pub(crate) max_file_bytes: usize,
    pub(crate) keep_alive: Duration,
    /// The server's tasks, which a streamed turn runs among (set when the server takes
    /// the front).
    pub(crate) tasks: TaskTracker,
}

/// The largest attached file a front takes by default (10 MiB).
pub const DEFAULT_MAX_FILE_BYTES: usize = 10 * 1024 * 1024;

impl ChatFront {
    /// A front for `agent` keeping conversations in `conversations`, accepting any
    /// request until keys are set.
    pub fn new(agent: Arc<dyn ChatAgent>, conversations: Arc<dyn DocumentStore>) -> Self {
        ChatFront {
            agent,
            conversations,
            auth: Auth::open(),
            max_body_bytes: body_limit(DEFAULT_MAX_FILE_BYTES),
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            keep_alive: Duration::from_secs(15),
            tasks: TaskTracker::new(),
        }
    }

    /// Runs streamed turns among `tasks` (the server's, which shutdown waits for).
    pub(crate) fn with_tasks(mut self, tasks: TaskTracker) -> Self {
        self.tasks = tasks;
        self
    }

    /// Takes attached files up to `bytes` each (default [`DEFAULT_MAX_FILE_BYTES`]); a
    /// larger one reaches the product as refused, with the limit named, and a body too
    /// large for even that is answered 413.
    pub fn with_max_file_bytes(mut self, bytes: usize) -> Self {
        self.max_file_bytes = bytes;
        self.max_body_bytes = body_limit(bytes);
        self
    }

    /// How often an idle stream sends a keep-alive comment (default 15 s). A client that
    /// went away is noticed at the next write, so this also bounds how long its turn runs
    /// on.
    pub fn with_keep_alive(mut self, every: Duration) -> Self {
        self.keep_alive = every;
        self
    }

    /// Accepts only requests bearing one of `keys` (empty ones are ignored), besides
    /// the callers its [`Auth`] already accepts. A key written `key:user` speaks for that
    /// user only; keys of this form are of the tenant `default`.
    ///
    /// ```
    /// # use agent_server::chat::ChatFront;
    /// # fn front(front: ChatFront) -> ChatFront {
    /// front.with_api_keys(["sk-proxy", "sk-ada:ada"])
    /// # }
    /// ```
    pub fn with_api_keys<K: AsRef<str>>(mut self, keys: impl IntoIterator<Item = K>) -> Self {
        self.auth = self.auth.with_chat_keys(keys);
        self
    }

    /// Lets in only the callers `auth` accepts (see [`crate::auth`]). Mounted in an
    /// [`AgentServer`](crate::AgentServer) whose auth layer is not open, the front answers
    /// to the server's instead.
    pub fn with_auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }

    /// The front with the auth layer the environment describes ([`Auth::from_env`]:
    /// `AGENT_API_KEYS`, `CHAT_API_KEYS`, a JWT key).
    pub fn from_env(
        agent: Arc<dyn ChatAgent>,
        conversations: Arc<dyn DocumentStore>,
    ) -> Result<Self, AuthConfigError> {
        Ok(ChatFront::new(agent, conversations).with_auth(Auth::from_env()?))
    }

    /// Whether requests need a credential.
    pub fn requires_key(&self) -> bool {
        !self.auth.is_open()
    }

    /// Where to listen, given where the operator asked: with no credential set, a
    /// non-loopback address is replaced by `127.0.0.1` (same port) and a warning says so
    /// ([`Auth::bind_address`]).
    pub fn bind_address(&self, requested: SocketAddr) -> SocketAddr {
        self.auth.bind_address(requested)
    }

    /// The routes: `POST /v1/chat/completions`, `GET /v1/models`.
    pub fn router(&self) -> axum::Router {
        routes::router(self.clone())
    }
}
