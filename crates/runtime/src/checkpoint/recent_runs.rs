//! What a checkpoint store remembers of the runs it wrote to last: their encoders, so the
//! next checkpoint of a run is stored as a delta, with the memory bounded.

use std::collections::{HashMap, VecDeque};

/// Runs a store remembers by default.
pub const RECENT_RUNS: usize = 256;

/// The latest value of each of the runs written to last: at most `capacity` runs, the one
/// written to longest ago forgotten first.
///
/// ```
/// use agent_runtime::checkpoint::RecentRuns;
/// let mut runs = RecentRuns::new(2);
/// runs.insert("a", 1);
/// runs.insert("b", 2);
/// runs.insert("c", 3);
/// assert_eq!(runs.take("a"), None);
/// assert_eq!(runs.get("b"), Some(&2));
/// assert_eq!(runs.take("c"), Some(3));
/// assert_eq!(runs.take("c"), None);
/// ```
#[derive(Debug)]
pub struct RecentRuns<T> {
    values: HashMap<String, T>,
    order: VecDeque<String>,
    capacity: usize,
}

impl<T> Default for RecentRuns<T> {
    /// [`RECENT_RUNS`] runs.
    fn default() -> Self {
        RecentRuns::new(RECENT_RUNS)
    }
}

impl<T> RecentRuns<T> {
    /// Remembers at most `capacity` runs (at least one).
    pub fn new(capacity: usize) -> Self {
        RecentRuns {
            values: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Sets `run_id`'s value, forgetting the oldest runs beyond the capacity.
    pub fn insert(&mut self, run_id: &str, value: T) {
        if self.values.insert(run_id.to_owned(), value).is_none() {
            self.order.push_back(run_id.to_owned());
        }
        while self.values.len() > self.capacity {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.values.remove(&oldest);
        }
    }

    /// `run_id`'s value, if remembered.
    pub fn get(&self, run_id: &str) -> Option<&T> {
        self.values.get(run_id)
    }

    /// Takes `run_id`'s value out, forgetting the run.
    pub fn take(&mut self, run_id: &str) -> Option<T> {
        let value = self.values.remove(run_id)?;
        self.order.retain(|r| r != run_id);
        Some(value)
    }
}
