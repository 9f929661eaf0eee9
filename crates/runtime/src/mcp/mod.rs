//! Tools of MCP servers, offered to agents as runtime tools (the `mcp` feature).
//!
//! An [`McpClient`] reaches one Model Context Protocol server, through the official Rust
//! SDK (`rmcp`): a child process speaking MCP over its stdin and stdout, or a streamable
//! HTTP endpoint. [`McpClient::tools`] lists the server's tools as [`AgentTool`]s: their
//! names, descriptions and JSON Schemas as the server gives them; a call becomes an MCP
//! `tools/call`, its result the tool result the model reads (text, or the structured
//! content when the server gives one), an error result or a refusal a tool error the
//! model can correct itself from.
//!
//! ```no_run
//! use agent_runtime::mcp::McpClient;
//! use agent_runtime::{AgentConfig, AgentIdentity};
//!
//! # async fn build() -> Result<AgentConfig<(), ()>, agent_runtime::mcp::McpError> {
//! let everything = McpClient::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"]);
//! let config = AgentConfig::new(AgentIdentity::new("helper", "demo"), "You help.")
//!     .with_tools(everything.tools().await?);
//! # Ok(config)
//! # }
//! ```
//!
//! A call that takes longer than the client's call timeout (60 s unless
//! [`with_call_timeout`](McpClient::with_call_timeout) says otherwise) or whose run is
//! cancelled is cancelled on the server too (`notifications/cancelled`). A server that
//! dies (the process exits, the endpoint stops answering) fails the call in progress with
//! a tool error; the next call connects again.

mod http;
mod tool;

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt as _;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::sync::Mutex;

use crate::tool::AgentTool;

pub use tool::McpTool;

/// How long a tool call may take unless the client says otherwise.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How an MCP server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking MCP over its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it (beside the ones it inherits).
        env: Vec<(String, String)>,
    },
    /// A streamable HTTP endpoint, such as `http://127.0.0.1:3001/mcp`.
    Http {
        /// The endpoint.
        url: String,
        /// The bearer token sent with every request, if the server wants one.
        bearer: Option<String>,
    },
}

impl std::fmt::Display for McpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpTransport::Stdio { command, args, .. } => {
                write!(f, "`{command}")?;
                for arg in args {
                    write!(f, " {arg}")?;
                }
                f.write_str("`")
            }
            McpTransport::Http { url, .. } => f.write_str(url),
        }
    }
}

/// Reaching an MCP server or listing its tools failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server's process could not be started.
    #[error("cannot start the MCP server {server}: {source}")]
    Spawn {
        /// The server, as its transport names it.
        server: String,
        /// Why.
        source: std::io::Error,
    },
    /// The server did not complete MCP's initialization.
    #[error("the MCP server {server} did not complete the handshake: {reason}")]
    Handshake {
        /// The server.
        server: String,
        /// What went wrong.
        reason: String,
    },
    /// The server did not list its tools.
    #[error("the MCP server {server} did not list its tools: {reason}")]
    ListTools {
        /// The server.
        server: String,
        /// What went wrong.
        reason: String,
    },
}

/// One MCP server, reached on demand: connected at the first request, connected again at
/// the next one after the connection was lost. Cheap to clone; clones share the
/// connection.
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

struct Inner {
    transport: McpTransport,
    call_timeout: Duration,
    tool_prefix: String,
    connection: Mutex<Option<Connection>>,
}

/// A live connection; dropping it closes the session (and stops a child process).
struct Connection {
    service: RunningService<RoleClient, ClientConfig>,
    /// Which connection this is, so that a failed call drops only the one it used.
    generation: u64,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("transport", &self.inner.transport)
            .field("call_timeout", &self.inner.call_timeout)
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// A server run as `command args..`, speaking MCP over its stdin and stdout.
    pub fn stdio<I, A>(command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = A>,
        A: Into<String>,
    {
        McpClient::new(McpTransport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
        })
    }

    /// A server at a streamable HTTP endpoint, such as `http://127.0.0.1:3001/mcp`.
    pub fn http(url: impl Into<String>) -> Self {
        McpClient::new(McpTransport::Http {
            url: url.into(),
            bearer: None,
        })
    }

    /// A server reached through `transport`.
    pub fn new(transport: McpTransport) -> Self {
        McpClient {
            inner: Arc::new(Inner {
                transport,
                call_timeout: DEFAULT_CALL_TIMEOUT,
                tool_prefix: String::new(),
                connection: Mutex::new(None),
            }),
        }
    }

    fn map_inner(self, change: impl FnOnce(&mut Inner)) -> Self {
        let inner = match Arc::try_unwrap(self.inner) {
            Ok(inner) => inner,
            Err(shared) => Inner {
                transport: shared.transport.clone(),
                call_timeout: shared.call_timeout,
                tool_prefix: shared.tool_prefix.clone(),
                connection: Mutex::new(None),
            },
        };
        let mut inner = inner;
        change(&mut inner);
        McpClient {
            inner: Arc::new(inner),
        }
    }

    /// Sets a variable for a stdio server's process (ignored for an HTTP server).
    pub fn with_env(self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let (name, value) = (name.into(), value.into());
        self.map_inner(|inner| {
            if let McpTransport::Stdio { env, .. } = &mut inner.transport {
                env.push((name, value));
            }
        })
    }

    /// Sends `token` as the bearer of every request to an HTTP server (ignored for a stdio
    /// server).
    pub fn with_bearer(self, token: impl Into<String>) -> Self {
        let token = token.into();
        self.map_inner(|inner| {
            if let McpTransport::Http { bearer, .. } = &mut inner.transport {
                *bearer = Some(token);
            }
        })
    }

    /// How long a tool call may take before it is cancelled ([`DEFAULT_CALL_TIMEOUT`]
    /// unless set).
    pub fn with_call_timeout(self, timeout: Duration) -> Self {
        self.map_inner(|inner| inner.call_timeout = timeout)
    }

    /// Offers the tools under `prefix` followed by their own names (two servers' tools
    /// of the same name stay apart); the server is called with its own names.
    pub fn with_tool_prefix(self, prefix: impl Into<String>) -> Self {
        let prefix = prefix.into();
        self.map_inner(|inner| inner.tool_prefix = prefix)
    }

    /// How the server is reached.
    pub fn transport(&self) -> &McpTransport {
        &self.inner.transport
    }

    /// The server's tools, as runtime tools an agent can be given
    /// ([`AgentConfig::with_tools`](crate::AgentConfig::with_tools)).
    ///
    /// # Errors
    ///
    /// When the server cannot be reached or does not list its tools.
    pub async fn tools<S, E>(&self) -> Result<Vec<Arc<dyn AgentTool<S, E>>>, McpError>
    where
        S: Send + Sync + 'static,
        E: Send + Sync + 'static,
    {
        Ok(self
            .list_tools()
            .await?
            .into_iter()
            .map(|tool| Arc::new(tool) as Arc<dyn AgentTool<S, E>>)
            .collect())
    }

    /// The server's tools, every page of them.
    ///
    /// # Errors
    ///
    /// When the server cannot be reached or does not list its tools.
    pub async fn list_tools(&self) -> Result<Vec<McpTool>, McpError> {
        let (peer, generation) = self.peer().await?;
        let listed = match peer.list_all_tools().await {
            Ok(listed) => listed,
            Err(error) => {
                self.lost(generation).await;
                return Err(McpError::ListTools {
                    server: self.inner.transport.to_string(),
                    reason: error.to_string(),
                });
            }
        };
        Ok(listed
            .into_iter()
            .map(|tool| McpTool::new(self.clone(), &self.inner.tool_prefix, tool))
            .collect())
    }

    /// Closes the connection, if there is one (a stdio server's process is stopped). A
    /// later request connects again.
    pub async fn close(&self) {
        let connection = self.inner.connection.lock().await.take();
        if let Some(connection) = connection
            && let Err(error) = connection.service.cancel().await
        {
            tracing::debug!(%error, "the MCP session ended badly");
        }
    }

    /// The live connection's peer and generation, connecting first when there is none.
    async fn peer(&self) -> Result<(Peer<RoleClient>, u64), McpError> {
        static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let mut connection = self.inner.connection.lock().await;
        if let Some(live) = connection.as_ref() {
            if !live.service.peer().is_transport_closed() {
                return Ok((live.service.peer().clone(), live.generation));
            }
            tracing::info!(server = %self.inner.transport, "the MCP server went away: connecting again");
        }
        let service = self.connect().await?;
        let generation = GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let peer = service.peer().clone();
        *connection = Some(Connection {
            service,
            generation,
        });
        Ok((peer, generation))
    }

    /// Forgets connection `generation` (its server went away); the next request
    /// connects again.
    async fn lost(&self, generation: u64) {
        let mut connection = self.inner.connection.lock().await;
        if connection
            .as_ref()
            .is_some_and(|live| live.generation == generation)
        {
            *connection = None;
        }
    }

    async fn connect(&self) -> Result<RunningService<RoleClient, ClientConfig>, McpError> {
        let server = self.inner.transport.to_string();
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agent-runtime", env!("CARGO_PKG_VERSION")),
        );
        let handshake = |error: &dyn std::fmt::Display| McpError::Handshake {
            server: server.clone(),
            reason: error.to_string(),
        };
        let service = match &self.inner.transport {
            McpTransport::Stdio { command, args, env } => {
                let mut process = tokio::process::Command::new(command);
                process.args(args).envs(env.iter().map(|(k, v)| (k, v)));
                let transport =
                    TokioChildProcess::new(process).map_err(|source| McpError::Spawn {
                        server: server.clone(),
                        source,
                    })?;
                info.serve(transport).await.map_err(|e| handshake(&e))?
            }
            McpTransport::Http { url, bearer } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = bearer {
                    config = config.auth_header(token.clone());
                }
                let transport =
                    StreamableHttpClientTransport::with_client(http::Reqwest::default(), config);
                info.serve(transport).await.map_err(|e| handshake(&e))?
            }
        };
        tracing::debug!(%server, "connected to the MCP server");
        Ok(service)
    }

    fn call_timeout(&self) -> Duration {
        self.inner.call_timeout
    }
}
