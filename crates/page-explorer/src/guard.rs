//! Loop detection and circuit breakers (spec 002, "Loop Detection": pattern-based detection
//! plus circuit breakers).
//!
//! [`LoopGuard::record`] is fed every action the explorer takes and returns a [`Stop`] as soon
//! as one breaker trips. Time comes from [`tokio::time::Instant`], so tests can pause time.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

/// Circuit-breaker limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breakers {
    /// Maximum number of actions in one exploration.
    pub max_actions: usize,
    /// Maximum number of failed actions in a row.
    pub max_consecutive_errors: usize,
    /// Maximum number of distinct pages (URLs) visited.
    pub max_pages: usize,
    /// Maximum wall-clock duration of one exploration.
    pub max_duration: Duration,
    /// How many recent actions the repeat detector looks at.
    pub repeat_window: usize,
    /// How many times one identical action may occur within the window.
    pub max_repeats: usize,
}

impl Default for Breakers {
    /// Defaults: 50 actions, 3 consecutive errors, 10 pages, 10 minutes, and at most 3 identical
    /// actions within the last 10.
    fn default() -> Self {
        Self {
            max_actions: 50,
            max_consecutive_errors: 3,
            max_pages: 10,
            max_duration: Duration::from_secs(600),
            repeat_window: 10,
            max_repeats: 3,
        }
    }
}

/// One action the explorer took.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ActionRecord {
    /// The action kind (`click`, `type`, `scroll`, `navigate`, ...).
    pub kind: String,
    /// The selector acted on, if any.
    pub selector: Option<String>,
    /// The page URL the action was taken on.
    pub url: String,
    /// Whether the action succeeded.
    pub ok: bool,
}

impl ActionRecord {
    /// Builds a record.
    pub fn new(kind: &str, selector: Option<&str>, url: &str, ok: bool) -> Self {
        Self {
            kind: kind.to_owned(),
            selector: selector.map(str::to_owned),
            url: url.to_owned(),
            ok,
        }
    }

    fn key(&self) -> (&str, Option<&str>, &str) {
        (&self.kind, self.selector.as_deref(), &self.url)
    }

    fn describe(&self) -> String {
        match &self.selector {
            Some(s) => format!("{} {s} on {}", self.kind, self.url),
            None => format!("{} on {}", self.kind, self.url),
        }
    }
}

/// Why the guard stopped the exploration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Stop {
    /// The same action was repeated too often within the window.
    #[error("repeated action: {0}")]
    RepeatedAction(String),
    /// A short cycle (A-B-A-B or A-B-C-A-B-C) was detected.
    #[error("action cycle: {0}")]
    Cycle(String),
    /// Too many actions in total.
    #[error("too many actions: {0}")]
    TooManyActions(String),
    /// Too many failed actions in a row.
    #[error("too many consecutive errors: {0}")]
    ConsecutiveErrors(String),
    /// Too many distinct pages visited.
    #[error("too many pages: {0}")]
    TooManyPages(String),
    /// The exploration ran too long.
    #[error("time limit exceeded: {0}")]
    Timeout(String),
}

/// Loop detector and circuit breaker for one exploration.
#[derive(Debug, Clone)]
pub struct LoopGuard {
    breakers: Breakers,
    started: Instant,
    actions: usize,
    consecutive_errors: usize,
    pages: HashSet<String>,
    recent: VecDeque<ActionRecord>,
}

impl LoopGuard {
    /// A guard whose clock starts now.
    pub fn new(breakers: Breakers) -> Self {
        Self::starting_at(breakers, Instant::now())
    }

    /// A guard whose clock started at `started`.
    pub fn starting_at(breakers: Breakers, started: Instant) -> Self {
        Self {
            breakers,
            started,
            actions: 0,
            consecutive_errors: 0,
            pages: HashSet::new(),
            recent: VecDeque::new(),
        }
    }

    /// The limits in force.
    pub fn breakers(&self) -> &Breakers {
        &self.breakers
    }

    /// When the wall-time breaker trips (a model call in flight is cut off there).
    pub fn deadline(&self) -> Instant {
        self.started + self.breakers.max_duration
    }

    /// Checks only the time limit (useful between actions, e.g. while waiting on the model).
    pub fn check_time(&self) -> Result<(), Stop> {
        let elapsed = self.started.elapsed();
        if elapsed > self.breakers.max_duration {
            return Err(Stop::Timeout(format!(
                "ran {}s, limit is {}s",
                elapsed.as_secs(),
                self.breakers.max_duration.as_secs()
            )));
        }
        Ok(())
    }

    /// Records one action and checks every breaker; the first one that trips is returned.
    pub fn record(&mut self, action: &ActionRecord) -> Result<(), Stop> {
        let b = self.breakers;
        self.actions = self.actions.saturating_add(1);
        if action.ok {
            self.consecutive_errors = 0;
        } else {
            self.consecutive_errors = self.consecutive_errors.saturating_add(1);
        }
        self.pages.insert(action.url.clone());
        self.recent.push_back(action.clone());
        let keep = b.repeat_window.max(6);
        while self.recent.len() > keep {
            self.recent.pop_front();
        }

        self.check_time()?;
        if self.actions > b.max_actions {
            return Err(Stop::TooManyActions(format!(
                "{} actions, limit is {}",
                self.actions, b.max_actions
            )));
        }
        if self.consecutive_errors > b.max_consecutive_errors {
            return Err(Stop::ConsecutiveErrors(format!(
                "{} failures in a row (last: {}), limit is {}",
                self.consecutive_errors,
                action.describe(),
                b.max_consecutive_errors
            )));
        }
        if self.pages.len() > b.max_pages {
            return Err(Stop::TooManyPages(format!(
                "{} distinct pages, limit is {}",
                self.pages.len(),
                b.max_pages
            )));
        }
        let window = self.recent.len().min(b.repeat_window);
        let repeats = self
            .recent
            .iter()
            .rev()
            .take(window)
            .filter(|r| r.key() == action.key())
            .count();
        if repeats > b.max_repeats {
            return Err(Stop::RepeatedAction(format!(
                "{} repeated {repeats} times in the last {window} actions (limit {})",
                action.describe(),
                b.max_repeats
            )));
        }
        for len in 2..=3 {
            if let Some(cycle) = self.cycle_of(len) {
                return Err(Stop::Cycle(format!(
                    "the actions [{cycle}] repeat back to back"
                )));
            }
        }
        Ok(())
    }

    /// If the last `2 * len` actions are the same `len`-action sequence twice, and that
    /// sequence is not a single action repeated, describes it.
    fn cycle_of(&self, len: usize) -> Option<String> {
        let n = self.recent.len();
        if n < 2 * len {
            return None;
        }
        let tail: Vec<&ActionRecord> = self.recent.iter().skip(n - 2 * len).collect();
        let (first, second) = tail.split_at(len);
        let same = first.iter().zip(second).all(|(a, b)| a.key() == b.key());
        let distinct = first.iter().any(|a| a.key() != first[0].key());
        if same && distinct {
            Some(
                first
                    .iter()
                    .map(|a| a.describe())
                    .collect::<Vec<_>>()
                    .join(" → "),
            )
        } else {
            None
        }
    }
}

impl Default for LoopGuard {
    fn default() -> Self {
        Self::new(Breakers::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(kind: &str, sel: &str, url: &str) -> ActionRecord {
        ActionRecord::new(kind, Some(sel), url, true)
    }

    #[test]
    fn defaults_are_sane() {
        let b = Breakers::default();
        assert_eq!(b.max_actions, 50);
        assert_eq!(b.max_consecutive_errors, 3);
        assert_eq!(b.max_pages, 10);
        assert_eq!(b.max_duration, Duration::from_secs(600));
        assert_eq!((b.repeat_window, b.max_repeats), (10, 3));
    }

    #[tokio::test(start_paused = true)]
    async fn varied_actions_pass() {
        let mut g = LoopGuard::default();
        for i in 0..8 {
            let r = ok(
                "click",
                &format!(".card:nth-child({i})"),
                "https://x.test/jobs",
            );
            assert_eq!(g.record(&r), Ok(()));
        }
        assert_eq!(g.actions, 8);
        assert_eq!(g.pages.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn repeated_action_trips() {
        let mut g = LoopGuard::default();
        let a = ok("scroll", "body", "https://x.test/");
        for i in 0..3 {
            assert_eq!(g.record(&a), Ok(()), "action {i}");
            // Interleave distinct actions so no short cycle forms.
            let filler = ok("click", &format!("#f{i}"), "https://x.test/");
            assert_eq!(g.record(&filler), Ok(()));
        }
        let err = g.record(&a);
        assert!(matches!(err, Err(Stop::RepeatedAction(_))), "{err:?}");
        if let Err(stop) = err {
            assert!(stop.to_string().contains("scroll body"), "{stop}");
            assert!(stop.to_string().starts_with("repeated action:"));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn repeats_outside_window_are_forgotten() {
        let b = Breakers {
            repeat_window: 4,
            max_repeats: 1,
            ..Breakers::default()
        };
        let mut g = LoopGuard::new(b);
        let a = ok("click", "#a", "https://x.test/");
        assert_eq!(g.record(&a), Ok(()));
        for i in 0..4 {
            assert_eq!(
                g.record(&ok("click", &format!("#x{i}"), "https://x.test/")),
                Ok(())
            );
        }
        assert_eq!(g.record(&a), Ok(()));
        assert!(matches!(g.record(&a), Err(Stop::RepeatedAction(_))));
    }

    #[tokio::test(start_paused = true)]
    async fn abab_cycle_trips() {
        let mut g = LoopGuard::default();
        let a = ok("click", "#open", "https://x.test/");
        let b = ok("click", "#close", "https://x.test/");
        assert_eq!(g.record(&a), Ok(()));
        assert_eq!(g.record(&b), Ok(()));
        assert_eq!(g.record(&a), Ok(()));
        let err = g.record(&b);
        assert!(matches!(err, Err(Stop::Cycle(_))), "{err:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn abcabc_cycle_trips() {
        let mut g = LoopGuard::default();
        let seq = [
            ok("click", "#a", "https://x.test/1"),
            ok("type", "#b", "https://x.test/1"),
            ActionRecord::new("navigate", None, "https://x.test/2", true),
        ];
        for r in seq.iter().chain(&seq[..2]) {
            assert_eq!(g.record(r), Ok(()));
        }
        let err = g.record(&seq[2]);
        assert!(matches!(err, Err(Stop::Cycle(_))), "{err:?}");
        if let Err(stop) = err {
            assert!(stop.to_string().contains("navigate on https://x.test/2"));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn too_many_actions_trips() {
        let b = Breakers {
            max_actions: 3,
            ..Breakers::default()
        };
        let mut g = LoopGuard::new(b);
        for i in 0..3 {
            assert_eq!(
                g.record(&ok("click", &format!("#{i}"), "https://x.test/")),
                Ok(())
            );
        }
        let err = g.record(&ok("click", "#z", "https://x.test/"));
        assert!(matches!(err, Err(Stop::TooManyActions(_))), "{err:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn consecutive_errors_trip_and_reset() {
        let mut g = LoopGuard::default();
        let fail = |i: usize| {
            ActionRecord::new("click", Some(&format!("#e{i}")), "https://x.test/", false)
        };
        for i in 0..3 {
            assert_eq!(g.record(&fail(i)), Ok(()));
        }
        assert_eq!(g.record(&ok("click", "#fine", "https://x.test/")), Ok(()));
        for i in 3..6 {
            assert_eq!(g.record(&fail(i)), Ok(()));
        }
        let err = g.record(&fail(6));
        assert!(matches!(err, Err(Stop::ConsecutiveErrors(_))), "{err:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn too_many_pages_trips() {
        let b = Breakers {
            max_pages: 2,
            ..Breakers::default()
        };
        let mut g = LoopGuard::new(b);
        assert_eq!(g.record(&ok("click", "#a", "https://x.test/1")), Ok(()));
        assert_eq!(g.record(&ok("click", "#b", "https://x.test/2")), Ok(()));
        assert_eq!(g.record(&ok("click", "#c", "https://x.test/1")), Ok(()));
        let err = g.record(&ok("click", "#d", "https://x.test/3"));
        assert!(matches!(err, Err(Stop::TooManyPages(_))), "{err:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn time_limit_trips_with_paused_clock() {
        let b = Breakers {
            max_duration: Duration::from_secs(60),
            ..Breakers::default()
        };
        let mut g = LoopGuard::new(b);
        assert_eq!(g.record(&ok("click", "#a", "https://x.test/")), Ok(()));
        tokio::time::advance(Duration::from_secs(59)).await;
        assert_eq!(g.check_time(), Ok(()));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(matches!(g.check_time(), Err(Stop::Timeout(_))));
        let err = g.record(&ok("click", "#b", "https://x.test/"));
        assert!(matches!(err, Err(Stop::Timeout(_))), "{err:?}");
    }
}
