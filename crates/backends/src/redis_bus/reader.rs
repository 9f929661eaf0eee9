//! One subscription's reading of its stream: `XREAD BLOCK` on a connection of its own,
//! the lease renewed while it reads, the entry taken deleted when the next is asked for.

use super::*;

/// One subscription's reading state.
pub(super) struct Reader {
    pub(super) connection: MultiplexedConnection,
    pub(super) inbox: String,
    pub(super) lease: String,
    pub(super) cutoff: String,
    pub(super) token: String,
    /// The last entry read; the next read starts after it.
    pub(super) last: String,
    /// The last entry delivered, deleted before the next read.
    pub(super) taken: Option<String>,
    /// Set once the subscription ended: deliver up to this entry, then end.
    pub(super) ending: Option<Option<String>>,
    pub(super) _guard: ReaderGuard,
}

/// Lets go of the lease and the taken entry when the stream is dropped.
pub(super) struct ReaderGuard {
    pub(super) bus: RedisBus,
    pub(super) inbox: String,
    pub(super) lease: String,
    pub(super) token: String,
    pub(super) taken: Arc<Mutex<Option<String>>>,
    pub(super) renewal: CancellationToken,
}

impl Drop for ReaderGuard {
    fn drop(&mut self) {
        self.renewal.cancel();
        if let Ok(mut released) = self.bus.released.lock() {
            released.insert(self.token.clone());
        }
        let (bus, inbox, lease, token) = (
            self.bus.clone(),
            self.inbox.clone(),
            self.lease.clone(),
            self.token.clone(),
        );
        let taken = self.taken.lock().ok().and_then(|mut t| t.take());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let mut connection = bus.connection.clone();
                if let Some(id) = taken {
                    let _: Result<i64, _> = redis::cmd("XDEL")
                        .arg(&inbox)
                        .arg(id)
                        .query_async(&mut connection)
                        .await;
                }
                let _: Result<i64, _> = redis::cmd("EVAL")
                    .arg(IF_MINE)
                    .arg(1)
                    .arg(&lease)
                    .arg(&token)
                    .arg("del")
                    .query_async(&mut connection)
                    .await;
                if let Ok(mut released) = bus.released.lock() {
                    released.remove(&token);
                }
            });
        }
    }
}

impl Reader {
    /// The next message, or `None` once the subscription has ended.
    pub(super) async fn next(
        &mut self,
        taken: &Mutex<Option<String>>,
    ) -> Result<Option<AgentMessage>, BusError> {
        loop {
            if let Some(id) = self.taken.take() {
                let _: i64 = redis::cmd("XDEL")
                    .arg(&self.inbox)
                    .arg(&id)
                    .query_async(&mut self.connection)
                    .await
                    .map_err(backend)?;
                if let Ok(mut shared) = taken.lock() {
                    *shared = None;
                }
            }
            if self.ending.is_none() {
                let holder: Option<String> = redis::cmd("GET")
                    .arg(&self.lease)
                    .query_async(&mut self.connection)
                    .await
                    .map_err(backend)?;
                if holder.as_deref() != Some(self.token.as_str()) {
                    let cutoff: Option<String> = redis::cmd("GET")
                        .arg(&self.cutoff)
                        .query_async(&mut self.connection)
                        .await
                        .map_err(backend)?;
                    self.ending = Some(cutoff);
                }
            }
            let mut read = redis::cmd("XREAD");
            read.arg("COUNT").arg(1);
            if self.ending.is_none() {
                read.arg("BLOCK").arg(POLL.as_millis() as u64);
            }
            let reply: Option<StreamReadReply> = read
                .arg("STREAMS")
                .arg(&self.inbox)
                .arg(&self.last)
                .query_async(&mut self.connection)
                .await
                .map_err(backend)?;
            let found = first_read(reply)?;
            match (found, &self.ending) {
                (Some((id, _)), Some(cutoff))
                    if cutoff
                        .as_deref()
                        .is_none_or(|c| entry_order(&id) > entry_order(c)) =>
                {
                    return Ok(None);
                }
                (Some((id, message)), _) => {
                    self.last = id.clone();
                    self.taken = Some(id.clone());
                    if let Ok(mut shared) = taken.lock() {
                        *shared = Some(id);
                    }
                    return Ok(Some(message));
                }
                (None, Some(_)) => return Ok(None),
                (None, None) => {}
            }
        }
    }
}
