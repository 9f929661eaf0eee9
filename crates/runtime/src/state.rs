//! The product state shared by a session's agents.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A product's state, shared by every agent of a session. Read and changed through
/// closures, so no lock is ever held across an `.await`. Cheap to clone; clones share.
///
/// ```
/// let state = agent_runtime::SharedState::new(vec![1, 2]);
/// state.update(|v| v.push(3));
/// assert_eq!(state.read(|v| v.len()), 3);
/// assert_eq!(state.snapshot(), vec![1, 2, 3]);
/// ```
#[derive(Debug, Default)]
pub struct SharedState<S> {
    inner: Arc<Shared<S>>,
}

#[derive(Debug, Default)]
struct Shared<S> {
    state: Mutex<S>,
    /// How many times the state was changed: a checkpoint whose state is of the same
    /// version need not serialize it again.
    version: AtomicU64,
}

impl<S> Clone for SharedState<S> {
    fn clone(&self) -> Self {
        SharedState {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<S> SharedState<S> {
    /// Wraps a state.
    pub fn new(state: S) -> Self {
        SharedState {
            inner: Arc::new(Shared {
                state: Mutex::new(state),
                version: AtomicU64::new(0),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, S> {
        // A panicking tool must not make the session's state unreadable.
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads the state.
    pub fn read<R>(&self, f: impl FnOnce(&S) -> R) -> R {
        f(&self.lock())
    }

    /// Reads the state with its version: a number that changes whenever the state may
    /// have (each [`update`](Self::update)), the same while it has not.
    pub(crate) fn read_versioned<R>(&self, f: impl FnOnce(&S, u64) -> R) -> R {
        let state = self.lock();
        f(&state, self.inner.version.load(Ordering::Relaxed))
    }

    /// Changes the state.
    pub fn update<R>(&self, f: impl FnOnce(&mut S) -> R) -> R {
        let mut state = self.lock();
        // Under the lock: a reader sees the new version with the new state.
        self.inner.version.fetch_add(1, Ordering::Relaxed);
        f(&mut state)
    }

    /// A copy of the state.
    pub fn snapshot(&self) -> S
    where
        S: Clone,
    {
        self.lock().clone()
    }
}

/// An agent invocation's private working memory: results kept across rounds, returned in
/// [`crate::AgentResult::scratchpad`]. Cheap to clone; clones share.
#[derive(Debug, Clone, Default)]
pub struct Scratchpad {
    inner: Arc<Mutex<serde_json::Map<String, serde_json::Value>>>,
}

impl Scratchpad {
    fn lock(&self) -> MutexGuard<'_, serde_json::Map<String, serde_json::Value>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores a value under `key`.
    ///
    /// ```
    /// let pad = agent_runtime::Scratchpad::default();
    /// pad.set("blueprint", serde_json::json!({"sections": 3}));
    /// assert_eq!(pad.get("blueprint").unwrap()["sections"], 3);
    /// ```
    pub fn set(&self, key: impl Into<String>, value: serde_json::Value) {
        self.lock().insert(key.into(), value);
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<serde_json::Value> {
        self.lock().get(key).cloned()
    }

    /// Whether `key` is set.
    pub fn contains(&self, key: &str) -> bool {
        self.lock().contains_key(key)
    }

    /// Changes the whole map.
    pub fn update<R>(
        &self,
        f: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>) -> R,
    ) -> R {
        f(&mut self.lock())
    }

    /// A copy of the whole map.
    pub fn snapshot(&self) -> serde_json::Map<String, serde_json::Value> {
        self.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::SharedState;

    #[test]
    fn the_version_moves_with_every_change_and_only_then() {
        let state = SharedState::new(vec![1]);
        let version = |state: &SharedState<Vec<i32>>| state.read_versioned(|_, v| v);
        let before = version(&state);
        state.read(|v| v.len());
        assert_eq!(version(&state), before);
        state.update(|v| v.push(2));
        let after = version(&state);
        assert_ne!(after, before);
        // A clone shares the state and its version.
        state.clone().update(|v| v.push(3));
        assert_ne!(version(&state), after);
        assert_eq!(state.read_versioned(|v, _| v.clone()), [1, 2, 3]);
    }
}
