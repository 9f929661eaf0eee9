//! [`RedisBus`]: the runtime's [`AgentBus`] on Redis Streams, for a session whose agents
//! run in several processes (spec 001 section 9: one stream per session and agent).
//!
//! Keys, all under `bus:{<session>}` (one hash slot per session in a cluster):
//!
//! - `…:in:<domain>:<agent>`: the recipient's stream. It *is* the held queue: a message
//!   waits there until its subscriber reads it, across restarts. An entry is deleted once
//!   the subscriber has taken it and asked for the next (or dropped its stream), so a
//!   crash in between delivers it again: at least once.
//! - `…:sub:<domain>:<agent>`: the subscription's lease (`SET NX PX`, renewed while the
//!   stream lives): one subscriber per agent, anywhere.
//! - `…:cut:<domain>:<agent>`: set by `unsubscribe`, the last entry the ended stream still
//!   delivers; later ones are held for the next subscriber.
//! - `…:pending:<id>` and `…:reply:<id>`: a waiting request, and the stream its response
//!   goes to instead of the recipient's (the sender's script takes the pending key, so
//!   exactly one response completes a request).
//! - `…:log`: the audit stream, capped (`MAXLEN`) at the log cap.
//! - `…:keys`: every key above, so `reset` deletes the session without a scan.
//!
//! A send is one script: log, then route (to a waiting request, else the recipient's
//! stream, refused when no one is subscribed and the held cap is reached). A recipient's
//! subscriber reads its stream with `XREAD BLOCK` on a connection of its own.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_runtime::bus::{
    AgentBus, AgentMessage, BusError, MessageStream, MessageType, OutgoingMessage, accept,
    accept_request, validate_agent,
};
use async_trait::async_trait;
use redis::RedisError;
use redis::aio::{ConnectionManager, MultiplexedConnection};
use redis::streams::{StreamId, StreamRangeReply, StreamReadReply};
use tokio_util::sync::CancellationToken;

mod reader;

use reader::{Reader, ReaderGuard};

/// How long a subscription's lease lasts unless renewed (renewed every third of it).
const LEASE: Duration = Duration::from_secs(30);
/// How long one blocking read waits before looking at the lease again.
const POLL: Duration = Duration::from_millis(100);

const SEND: &str = r"
if tonumber(ARGV[4]) > 0 then
  redis.call('XADD', KEYS[6], 'MAXLEN', ARGV[4], '*', 'm', ARGV[2])
  redis.call('SADD', KEYS[5], KEYS[6])
end
if ARGV[3] == '1' and redis.call('DEL', KEYS[3]) == 1 then
  redis.call('XADD', KEYS[4], '*', 'm', ARGV[2])
  redis.call('PEXPIRE', KEYS[4], 600000)
  redis.call('SADD', KEYS[5], KEYS[4])
  return {2, 0}
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  local held = redis.call('XLEN', KEYS[1])
  if held >= tonumber(ARGV[1]) then return {0, held} end
end
redis.call('XADD', KEYS[1], '*', 'm', ARGV[2])
redis.call('SADD', KEYS[5], KEYS[1])
return {1, 0}
";

const UNSUBSCRIBE: &str = r"
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local id = '0-0'
if #last > 0 then id = last[1][1] end
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('SET', KEYS[3], id, 'PX', 600000)
  redis.call('SADD', KEYS[4], KEYS[3])
  redis.call('DEL', KEYS[2])
end
return id
";

/// Deletes or renews the lease only while it is the caller's.
const IF_MINE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  if ARGV[2] == 'del' then return redis.call('DEL', KEYS[1]) end
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
";

fn backend(error: RedisError) -> BusError {
    BusError::Backend(format!("redis: {error}"))
}

/// A key part: `:` and `%` escaped, so no two names make one key.
fn part(name: &str) -> String {
    name.replace('%', "%25").replace(':', "%3A")
}

/// A stream entry id, for ordering.
fn entry_order(id: &str) -> (u64, u64) {
    let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
    (ms.parse().unwrap_or(0), seq.parse().unwrap_or(0))
}

/// The messages of stream entries, as `(id, message)`.
fn messages(entries: Vec<StreamId>) -> Result<Vec<(String, AgentMessage)>, BusError> {
    entries
        .into_iter()
        .map(|entry| {
            let body: String = entry.get("m").ok_or_else(|| {
                BusError::Backend(format!("redis: entry {} has no message", entry.id))
            })?;
            let message = serde_json::from_str(&body).map_err(|e| {
                BusError::Backend(format!("redis: entry {} is not a message: {e}", entry.id))
            })?;
            Ok((entry.id, message))
        })
        .collect()
}

/// The first message of an `XREAD` reply (none when a blocking read timed out).
fn first_read(reply: Option<StreamReadReply>) -> Result<Option<(String, AgentMessage)>, BusError> {
    let first = reply
        .into_iter()
        .flat_map(|reply| reply.keys)
        .flat_map(|stream| stream.ids)
        .take(1)
        .collect();
    Ok(messages(first)?.into_iter().next())
}

/// The response in a request's reply stream, waiting up to `block` for one (`None`: not
/// at all).
async fn response_in(
    connection: &mut MultiplexedConnection,
    reply: &str,
    block: Option<Duration>,
) -> Result<Option<AgentMessage>, BusError> {
    let mut read = redis::cmd("XREAD");
    read.arg("COUNT").arg(1);
    if let Some(block) = block {
        read.arg("BLOCK").arg(block.as_millis().max(1) as u64);
    }
    let found: Option<StreamReadReply> = read
        .arg("STREAMS")
        .arg(reply)
        .arg("0-0")
        .query_async(connection)
        .await
        .map_err(backend)?;
    Ok(first_read(found)?.map(|(_, response)| response))
}

/// The agent bus of one session, on Redis Streams. Cheap to clone; clones share the
/// connection.
#[derive(Clone)]
pub struct RedisBus {
    client: redis::Client,
    connection: ConnectionManager,
    prefix: String,
    log_cap: usize,
    held_cap: usize,
    /// Leases this process let go of but has not deleted yet (a dropped stream deletes
    /// its lease on another task): a new subscriber here may take them over.
    released: Arc<Mutex<HashSet<String>>>,
}

impl std::fmt::Debug for RedisBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBus")
            .field("prefix", &self.prefix)
            .field("log_cap", &self.log_cap)
            .field("held_cap", &self.held_cap)
            .finish_non_exhaustive()
    }
}

impl RedisBus {
    /// The bus of `session` at `url` (`redis://127.0.0.1:6379`), with the in-memory bus's
    /// limits: the 500 most recent messages logged, 1,000 held per recipient.
    pub async fn connect(url: &str, session: &str) -> Result<Self, BusError> {
        let client = redis::Client::open(url).map_err(backend)?;
        let connection = ConnectionManager::new(client.clone())
            .await
            .map_err(backend)?;
        Ok(RedisBus {
            client,
            connection,
            prefix: format!("bus:{{{}}}", part(session)),
            log_cap: 500,
            held_cap: 1_000,
            released: Arc::default(),
        })
    }

    /// Other limits: the `log_cap` most recent messages in the log, `held_cap` held per
    /// recipient without a subscriber.
    pub fn with_limits(mut self, log_cap: usize, held_cap: usize) -> Self {
        self.log_cap = log_cap;
        self.held_cap = held_cap;
        self
    }

    fn key(&self, kind: &str, domain: &str, agent: &str) -> String {
        format!("{}:{kind}:{}:{}", self.prefix, part(domain), part(agent))
    }

    fn keys_set(&self) -> String {
        format!("{}:keys", self.prefix)
    }

    fn log_key(&self) -> String {
        format!("{}:log", self.prefix)
    }

    /// A connection of its own, for blocking reads.
    async fn dedicated(&self) -> Result<MultiplexedConnection, BusError> {
        self.client
            .get_multiplexed_async_connection()
            .await
            .map_err(backend)
    }

    /// Logs and routes a stamped message.
    async fn route(&self, message: &AgentMessage) -> Result<(), BusError> {
        let correlation = message.correlation_id.clone().unwrap_or_default();
        let json = serde_json::to_string(message)
            .map_err(|e| BusError::Invalid(format!("the payload is not JSON: {e}")))?;
        let mut connection = self.connection.clone();
        let (routed, held): (i64, i64) = redis::cmd("EVAL")
            .arg(SEND)
            .arg(6)
            .arg(self.key("in", &message.domain, &message.to))
            .arg(self.key("sub", &message.domain, &message.to))
            .arg(format!("{}:pending:{}", self.prefix, part(&correlation)))
            .arg(format!("{}:reply:{}", self.prefix, part(&correlation)))
            .arg(self.keys_set())
            .arg(self.log_key())
            .arg(self.held_cap)
            .arg(json)
            .arg(if message.kind == MessageType::Response {
                "1"
            } else {
                "0"
            })
            .arg(self.log_cap)
            .query_async(&mut connection)
            .await
            .map_err(backend)?;
        if routed == 0 {
            tracing::warn!(domain = %message.domain, to = %message.to, id = %message.id, held, "bus: held queue full; message undeliverable");
            return Err(BusError::Undeliverable {
                domain: message.domain.clone(),
                to: message.to.clone(),
                reason: format!("no subscriber, and {held} messages are already held (the limit)"),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl AgentBus for RedisBus {
    async fn subscribe(&self, domain: &str, agent: &str) -> Result<MessageStream, BusError> {
        validate_agent(domain, agent)?;
        let lease = self.key("sub", domain, agent);
        let token = uuid::Uuid::new_v4().to_string();
        let mut connection = self.connection.clone();
        let ttl = LEASE.as_millis() as u64;
        let taken_over: Option<String> = redis::cmd("SET")
            .arg(&lease)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(ttl)
            .query_async(&mut connection)
            .await
            .map_err(backend)?;
        if taken_over.is_none() {
            // Held by a stream this process dropped a moment ago: take it over.
            let holder: Option<String> = redis::cmd("GET")
                .arg(&lease)
                .query_async(&mut connection)
                .await
                .map_err(backend)?;
            let released =
                holder.is_some_and(|h| self.released.lock().is_ok_and(|r| r.contains(&h)));
            if !released {
                return Err(BusError::AlreadySubscribed {
                    domain: domain.to_owned(),
                    agent: agent.to_owned(),
                });
            }
            let () = redis::cmd("SET")
                .arg(&lease)
                .arg(&token)
                .arg("PX")
                .arg(ttl)
                .query_async(&mut connection)
                .await
                .map_err(backend)?;
        }
        let cutoff = self.key("cut", domain, agent);
        let () = redis::pipe()
            .cmd("SADD")
            .arg(self.keys_set())
            .arg(&lease)
            .ignore()
            .cmd("DEL")
            .arg(&cutoff)
            .ignore()
            .query_async(&mut connection)
            .await
            .map_err(backend)?;

        let renewal = CancellationToken::new();
        {
            let (stop, mut connection, lease, token) = (
                renewal.clone(),
                self.connection.clone(),
                lease.clone(),
                token.clone(),
            );
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(LEASE / 3) => {}
                    }
                    let renewed: Result<i64, _> = redis::cmd("EVAL")
                        .arg(IF_MINE)
                        .arg(1)
                        .arg(&lease)
                        .arg(&token)
                        .arg(ttl)
                        .query_async(&mut connection)
                        .await;
                    if !matches!(renewed, Ok(1)) {
                        return;
                    }
                }
            });
        }
        let inbox = self.key("in", domain, agent);
        let taken = Arc::new(Mutex::new(None));
        let reader = Reader {
            connection: self.dedicated().await?,
            inbox: inbox.clone(),
            lease: lease.clone(),
            cutoff,
            token: token.clone(),
            last: "0-0".to_owned(),
            taken: None,
            ending: None,
            _guard: ReaderGuard {
                bus: self.clone(),
                inbox,
                lease,
                token,
                taken: taken.clone(),
                renewal,
            },
        };
        let stream = futures::stream::unfold((reader, taken), |(mut reader, taken)| async move {
            match reader.next(&taken).await {
                Ok(Some(message)) => Some((message, (reader, taken))),
                Ok(None) => None,
                Err(error) => {
                    tracing::warn!(%error, "bus: the subscription's reads failed; its stream ends");
                    None
                }
            }
        });
        Ok(Box::pin(stream))
    }

    async fn unsubscribe(&self, domain: &str, agent: &str) -> Result<(), BusError> {
        let mut connection = self.connection.clone();
        let _: String = redis::cmd("EVAL")
            .arg(UNSUBSCRIBE)
            .arg(4)
            .arg(self.key("in", domain, agent))
            .arg(self.key("sub", domain, agent))
            .arg(self.key("cut", domain, agent))
            .arg(self.keys_set())
            .query_async(&mut connection)
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn send(&self, message: OutgoingMessage) -> Result<AgentMessage, BusError> {
        let message = accept(message)?;
        self.route(&message).await?;
        Ok(message)
    }

    async fn request(
        &self,
        message: OutgoingMessage,
        timeout: Duration,
    ) -> Result<AgentMessage, BusError> {
        let message = accept_request(message)?;
        let pending = format!("{}:pending:{}", self.prefix, part(&message.id));
        let reply = format!("{}:reply:{}", self.prefix, part(&message.id));
        let mut connection = self.connection.clone();
        let ttl = (timeout + Duration::from_secs(5)).as_millis() as u64;
        let () = redis::pipe()
            .cmd("SET")
            .arg(&pending)
            .arg(1)
            .arg("PX")
            .arg(ttl)
            .ignore()
            .cmd("SADD")
            .arg(self.keys_set())
            .arg(&pending)
            .ignore()
            .query_async(&mut connection)
            .await
            .map_err(backend)?;
        if let Err(error) = self.route(&message).await {
            let _: Result<i64, _> = redis::cmd("DEL")
                .arg(&pending)
                .query_async(&mut connection)
                .await;
            return Err(error);
        }
        let mut waiting = self.dedicated().await?;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let withdrawn: i64 = redis::cmd("DEL")
                    .arg(&pending)
                    .query_async(&mut connection)
                    .await
                    .map_err(backend)?;
                if withdrawn == 0 {
                    // A response took the pending key just now: it is in the reply stream.
                    if let Some(response) = response_in(&mut waiting, &reply, None).await? {
                        return Ok(response);
                    }
                }
                return Err(BusError::Timeout {
                    id: message.id,
                    after: timeout,
                });
            }
            if let Some(response) = response_in(&mut waiting, &reply, Some(left.min(POLL))).await? {
                let _: Result<i64, _> = redis::cmd("DEL")
                    .arg(&reply)
                    .query_async(&mut connection)
                    .await;
                return Ok(response);
            }
            let still: i64 = redis::cmd("EXISTS")
                .arg(&pending)
                .query_async(&mut connection)
                .await
                .map_err(backend)?;
            if still == 0 {
                if let Some(response) = response_in(&mut waiting, &reply, None).await? {
                    return Ok(response);
                }
                return Err(BusError::Backend(format!(
                    "the bus was reset while request {} waited for its response",
                    message.id
                )));
            }
        }
    }

    async fn log(&self) -> Result<Vec<AgentMessage>, BusError> {
        let mut connection = self.connection.clone();
        let reply: StreamRangeReply = redis::cmd("XRANGE")
            .arg(self.log_key())
            .arg("-")
            .arg("+")
            .query_async(&mut connection)
            .await
            .map_err(backend)?;
        Ok(messages(reply.ids)?.into_iter().map(|(_, m)| m).collect())
    }

    async fn reset(&self) -> Result<(), BusError> {
        let mut connection = self.connection.clone();
        let keys: Vec<String> = redis::cmd("SMEMBERS")
            .arg(self.keys_set())
            .query_async(&mut connection)
            .await
            .map_err(backend)?;
        let mut delete = redis::cmd("DEL");
        delete.arg(self.keys_set());
        for key in &keys {
            delete.arg(key);
        }
        let _: i64 = delete.query_async(&mut connection).await.map_err(backend)?;
        Ok(())
    }
}
