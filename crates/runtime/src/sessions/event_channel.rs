//! One session's channel in the [in-process fan-out](super::InProcessFanout): every
//! subscriber gets, in order, each event published after it subscribed; one that falls
//! `capacity` events behind is told it lagged.
//!
//! Unlike tokio's broadcast channel, which allocates all its slots when it is made (about
//! 10 KiB for 256 events), this one holds only the events some subscriber has yet to
//! read: a followed session whose clients keep up holds none. Each event counts the
//! subscribers that have yet to read it and is dropped once the last one has.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use tokio::sync::Notify;

/// What [`Receiver::recv`] found instead of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Missed {
    /// The receiver fell more than the channel's capacity behind: events it had not read
    /// were dropped. It goes on from the oldest event still held.
    Lagged,
    /// The channel was closed and the receiver has read everything before.
    Closed,
}

/// A session's channel, shared by its publisher and its receivers.
#[derive(Debug)]
pub(super) struct EventChannel {
    state: Mutex<State>,
    /// Woken when an event arrives or the channel closes.
    arrived: Notify,
}

#[derive(Debug)]
struct State {
    /// Events some subscriber has yet to read, oldest first.
    unread: VecDeque<Held>,
    /// The position of `unread[0]` among all the events published (from 0).
    first: u64,
    capacity: usize,
    subscribers: usize,
    closed: bool,
}

#[derive(Debug)]
struct Held {
    seq: u64,
    event: Arc<Value>,
    /// How many subscribers have yet to read it.
    readers_left: usize,
}

/// Above this many slots, a channel's buffer is given back once it is empty (after a
/// burst), so a session does not keep the room its busiest moment took.
const KEPT_SLOTS: usize = 16;

impl State {
    /// The position the next event published takes.
    fn end(&self) -> u64 {
        self.first + self.unread.len() as u64
    }

    /// Drops the events at the front that every subscriber has read.
    fn drop_read(&mut self) {
        while self
            .unread
            .front()
            .is_some_and(|held| held.readers_left == 0)
        {
            self.unread.pop_front();
            self.first += 1;
        }
        if self.unread.is_empty() && self.unread.capacity() > KEPT_SLOTS {
            self.unread = VecDeque::new();
        }
    }
}

impl EventChannel {
    /// A channel that lets a receiver fall `capacity` events behind (at least 1).
    pub(super) fn new(capacity: usize) -> Self {
        EventChannel {
            state: Mutex::new(State {
                unread: VecDeque::new(),
                first: 0,
                capacity: capacity.max(1),
                subscribers: 0,
                closed: false,
            }),
            arrived: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A receiver of every event published from now on.
    pub(super) fn subscribe(self: &Arc<Self>) -> Receiver {
        let mut state = self.lock();
        state.subscribers += 1;
        Receiver {
            channel: Arc::clone(self),
            next: state.end(),
        }
    }

    /// Sends an event to every receiver; `false` (and nothing sent) when there is none.
    /// At capacity, the oldest event is dropped: a receiver that had not read it lags.
    pub(super) fn publish(&self, seq: u64, event: Arc<Value>) -> bool {
        {
            let mut state = self.lock();
            if state.subscribers == 0 {
                return false;
            }
            if state.unread.len() == state.capacity {
                state.unread.pop_front();
                state.first += 1;
            }
            let readers_left = state.subscribers;
            state.unread.push_back(Held {
                seq,
                event,
                readers_left,
            });
        }
        self.arrived.notify_waiters();
        true
    }

    /// Ends the channel: each receiver reads what it has not read yet, then
    /// [`Missed::Closed`].
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.arrived.notify_waiters();
    }
}

/// One subscriber's place in a session's [`EventChannel`].
#[derive(Debug)]
pub(super) struct Receiver {
    channel: Arc<EventChannel>,
    /// The position of the next event it reads.
    next: u64,
}

impl Receiver {
    /// The next event and its number, once there is one.
    pub(super) async fn recv(&mut self) -> Result<(u64, Arc<Value>), Missed> {
        let channel = Arc::clone(&self.channel);
        loop {
            // Registered before looking, so an event published in between wakes it.
            let arrived = channel.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            if let Some(found) = self.try_recv() {
                return found;
            }
            arrived.await;
        }
    }

    /// The next event if one is there; `None` when it must wait.
    fn try_recv(&mut self) -> Option<Result<(u64, Arc<Value>), Missed>> {
        let mut state = self.channel.lock();
        if self.next < state.first {
            self.next = state.first;
            return Some(Err(Missed::Lagged));
        }
        let offset = (self.next - state.first) as usize;
        let Some(held) = state.unread.get_mut(offset) else {
            return state.closed.then_some(Err(Missed::Closed));
        };
        held.readers_left -= 1;
        let event = (held.seq, Arc::clone(&held.event));
        self.next += 1;
        state.drop_read();
        Some(Ok(event))
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let mut state = self.channel.lock();
        state.subscribers -= 1;
        let from = self.next.saturating_sub(state.first) as usize;
        for held in state.unread.iter_mut().skip(from) {
            held.readers_left -= 1;
        }
        state.drop_read();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(n: u64) -> Arc<Value> {
        Arc::new(json!({"n": n}))
    }

    fn held(channel: &EventChannel) -> usize {
        channel.lock().unread.len()
    }

    #[tokio::test]
    async fn each_receiver_reads_every_event_after_it_subscribed_and_the_read_ones_are_dropped() {
        let channel = Arc::new(EventChannel::new(8));
        assert!(
            !channel.publish(1, event(1)),
            "nobody follows: nothing held"
        );
        let mut first = channel.subscribe();
        assert!(channel.publish(2, event(2)));
        let mut second = channel.subscribe();
        assert!(channel.publish(3, event(3)));
        assert_eq!(held(&channel), 2);

        assert_eq!(first.recv().await.unwrap().0, 2);
        assert_eq!(held(&channel), 1, "2 was read by its only reader");
        assert_eq!(second.recv().await.unwrap().0, 3);
        assert_eq!(held(&channel), 1, "3 is not read by the first yet");
        assert_eq!(first.recv().await.unwrap().0, 3);
        assert_eq!(held(&channel), 0);
    }

    #[tokio::test]
    async fn a_receiver_that_falls_behind_lags_and_the_others_do_not() {
        let channel = Arc::new(EventChannel::new(2));
        let mut slow = channel.subscribe();
        let mut fast = channel.subscribe();
        for seq in 1..=3 {
            channel.publish(seq, event(seq));
            assert_eq!(fast.recv().await.unwrap().0, seq);
        }
        assert_eq!(slow.recv().await, Err(Missed::Lagged));
        assert_eq!(
            slow.recv().await.unwrap().0,
            2,
            "it goes on from the oldest held"
        );
        assert_eq!(slow.recv().await.unwrap().0, 3);
        assert_eq!(held(&channel), 0);
    }

    #[tokio::test]
    async fn a_dropped_receiver_holds_nothing_back_and_the_last_one_leaves_none() {
        let channel = Arc::new(EventChannel::new(8));
        let mut reader = channel.subscribe();
        let gone = channel.subscribe();
        channel.publish(1, event(1));
        channel.publish(2, event(2));
        drop(gone);
        assert_eq!(reader.recv().await.unwrap().0, 1);
        assert_eq!(held(&channel), 1, "only what the reader has not read");
        drop(reader);
        assert_eq!(held(&channel), 0);
        assert!(!channel.publish(3, event(3)), "no receiver is left");
    }

    #[tokio::test]
    async fn a_closed_channel_gives_what_is_left_then_ends() {
        let channel = Arc::new(EventChannel::new(8));
        let mut reader = channel.subscribe();
        let waiting = tokio::spawn(async move {
            let first = reader.recv().await.map(|(seq, _)| seq);
            (first, reader.recv().await.map(|(seq, _)| seq))
        });
        tokio::task::yield_now().await;
        channel.publish(7, event(7));
        channel.close();
        assert_eq!(waiting.await.unwrap(), (Ok(7), Err(Missed::Closed)));
    }

    #[tokio::test]
    async fn a_burst_grows_the_buffer_and_it_is_given_back_once_read() {
        let channel = Arc::new(EventChannel::new(256));
        let mut reader = channel.subscribe();
        for seq in 0..100 {
            channel.publish(seq, event(seq));
        }
        assert!(channel.lock().unread.capacity() >= 100);
        for seq in 0..100 {
            assert_eq!(reader.recv().await.unwrap().0, seq);
        }
        assert_eq!(channel.lock().unread.capacity(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn receivers_on_other_threads_read_every_event_in_order_while_it_is_published() {
        let count = 20_000u64;
        let channel = Arc::new(EventChannel::new(count as usize));
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let mut receiver = channel.subscribe();
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    while let Ok((seq, _)) = receiver.recv().await {
                        seen.push(seq);
                    }
                    seen
                })
            })
            .collect();
        let publisher = Arc::clone(&channel);
        std::thread::spawn(move || {
            for seq in 0..count {
                publisher.publish(seq, event(seq));
            }
            publisher.close();
        })
        .join()
        .unwrap();
        for reader in readers {
            assert_eq!(reader.await.unwrap(), (0..count).collect::<Vec<_>>());
        }
        assert_eq!(held(&channel), 0);
    }
}
