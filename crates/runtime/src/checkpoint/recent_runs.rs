//! What a checkpoint store remembers of the runs it wrote to last: their encoders, so the
//! next checkpoint of a run is stored as a delta, with the memory bounded.

use std::collections::{HashMap, VecDeque};

/// Runs a store remembers by default: one per live run of a server at its default limit
/// of live sessions (`agent-server`'s `max_live_sessions`, 10,000). A store forgets a
/// run's encoder when the run finishes, so what it holds is one encoder (the run's last
/// state and progress) per live run. A run it forgot has its next checkpoint written in
/// full: with more live runs than this saving in turn, every save is a full snapshot.
pub const RECENT_RUNS: usize = 10_000;

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
    /// Each run's value and the stamp of its place in `order`.
    values: HashMap<String, (T, u64)>,
    /// Runs in the order they were last inserted, oldest first; an entry whose stamp is
    /// not its run's any more was taken out or inserted again since, and is skipped.
    order: VecDeque<(String, u64)>,
    next_stamp: u64,
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
            next_stamp: 0,
            capacity: capacity.max(1),
        }
    }

    /// Sets `run_id`'s value, making it the run written to last, and forgets the oldest
    /// runs beyond the capacity.
    pub fn insert(&mut self, run_id: &str, value: T) {
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        self.values.insert(run_id.to_owned(), (value, stamp));
        self.order.push_back((run_id.to_owned(), stamp));
        while self.values.len() > self.capacity {
            let Some((oldest, stamp)) = self.order.pop_front() else {
                break;
            };
            if self.values.get(&oldest).is_some_and(|(_, s)| *s == stamp) {
                self.values.remove(&oldest);
            }
        }
        // Skipped entries are dropped once they outnumber the live ones, so a store
        // taking and inserting the same runs keeps `order` bounded, at O(1) a call on
        // average (a scan per `capacity` calls).
        if self.order.len() > 2 * self.capacity {
            let values = &self.values;
            self.order
                .retain(|(run, stamp)| values.get(run).is_some_and(|(_, s)| s == stamp));
        }
    }

    /// `run_id`'s value, if remembered.
    pub fn get(&self, run_id: &str) -> Option<&T> {
        self.values.get(run_id).map(|(value, _)| value)
    }

    /// Takes `run_id`'s value out, forgetting the run.
    pub fn take(&mut self, run_id: &str) -> Option<T> {
        self.values.remove(run_id).map(|(value, _)| value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_written_to_longest_ago_is_forgotten_first() {
        let mut runs = RecentRuns::new(3);
        for run in ["a", "b", "c"] {
            runs.insert(run, 0);
        }
        // "a" is written again (taken out and put back, as a store does): "b" is oldest.
        let a = runs.take("a").unwrap();
        runs.insert("a", a + 1);
        runs.insert("d", 0);
        assert_eq!(runs.get("b"), None);
        assert_eq!(runs.get("a"), Some(&1));
        runs.insert("e", 0);
        assert_eq!(runs.get("c"), None);
        assert_eq!(
            (runs.get("a"), runs.get("d"), runs.get("e")),
            (Some(&1), Some(&0), Some(&0))
        );
    }

    #[test]
    fn taking_and_inserting_the_same_runs_keeps_the_order_bounded() {
        let mut runs = RecentRuns::new(4);
        for n in 0..10_000 {
            let run = format!("r{}", n % 6);
            let value = runs.take(&run).unwrap_or(0);
            runs.insert(&run, value + 1);
            assert!(runs.order.len() <= 2 * 4 + 1, "{}", runs.order.len());
            assert!(runs.values.len() <= 4);
        }
    }
}
