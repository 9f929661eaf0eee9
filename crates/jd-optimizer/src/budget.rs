//! Budget guardrails (spec 003 section 4.6.2) and pressure (4.6.3): whether a limit is
//! reached, and whether what is left pays for the next step as planned.

use agent_runtime::CostSnapshot;

use crate::config::Budget;
use crate::records::BudgetLimit;

/// What a step is expected to cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    /// Tokens, input and output.
    pub tokens: u64,
    /// Model calls.
    pub calls: u64,
}

/// A full rewrite.
pub const FULL_REWRITE: Need = Need {
    tokens: 1_600,
    calls: 1,
};
/// A rewrite asked for fewer, shorter bullets.
pub const SHORT_REWRITE: Need = Need {
    tokens: 1_000,
    calls: 1,
};
/// A targeted repair.
pub const REPAIR: Need = Need {
    tokens: 900,
    calls: 1,
};
/// The full model scorer.
pub const FULL_SCORER: Need = Need {
    tokens: 900,
    calls: 1,
};
/// A model scorer that scores the resume's own bullets beside the rewrite's (the first
/// model scoring of a run, so that both are on one scale).
pub const COMPARED_SCORER: Need = Need {
    tokens: 1_100,
    calls: 1,
};
/// The compact model scorer.
pub const COMPACT_SCORER: Need = Need {
    tokens: 500,
    calls: 1,
};
/// The gap analyzer.
pub const GAP_MODEL: Need = Need {
    tokens: 700,
    calls: 1,
};

/// A model call is assumed to take this long until one has been timed.
const FIRST_CALL_MS: u64 = 5_000;

/// What the run has spent so far, as its session's meter counted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spent {
    /// Tokens.
    pub tokens: u64,
    /// Model calls.
    pub calls: u64,
    /// Wall time, in milliseconds.
    pub elapsed_ms: u64,
}

impl Spent {
    /// What `metered` (a snapshot of the session's meter) counts, `elapsed_ms` into the
    /// optimization.
    pub fn of(metered: &CostSnapshot, elapsed_ms: u64) -> Self {
        Spent {
            tokens: metered.total_tokens(),
            calls: metered.calls,
            elapsed_ms,
        }
    }

    fn per_call_ms(&self) -> u64 {
        self.elapsed_ms
            .checked_div(self.calls)
            .unwrap_or(FIRST_CALL_MS)
    }
}

/// The limit `spent` has reached, if any, with a message for the user.
pub fn limit_reached(budget: &Budget, spent: &Spent) -> Option<(BudgetLimit, String)> {
    if spent.tokens >= budget.max_tokens {
        Some((
            BudgetLimit::Tokens,
            format!(
                "{} tokens used of {} allowed",
                spent.tokens, budget.max_tokens
            ),
        ))
    } else if spent.calls >= budget.max_calls {
        Some((
            BudgetLimit::Calls,
            format!(
                "{} model calls made of {} allowed",
                spent.calls, budget.max_calls
            ),
        ))
    } else if spent.elapsed_ms >= budget.max_wall_ms {
        Some((
            BudgetLimit::WallTime,
            format!(
                "{:.1} s spent of {:.1} s allowed",
                spent.elapsed_ms as f64 / 1000.0,
                budget.max_wall_ms as f64 / 1000.0
            ),
        ))
    } else {
        None
    }
}

/// Whether what is left of `budget` pays for `need` now and `reserve` after it (the
/// steps that must still follow), in tokens, calls and time at the pace of the calls so
/// far.
pub fn affords(budget: &Budget, spent: &Spent, need: Need, reserve: Need) -> bool {
    shortfall(budget, spent, need, reserve).is_none()
}

/// The first limit that would not pay for `need` and `reserve`, if any.
pub fn shortfall(budget: &Budget, spent: &Spent, need: Need, reserve: Need) -> Option<BudgetLimit> {
    let tokens = need.tokens + reserve.tokens;
    let calls = need.calls + reserve.calls;
    let time = calls * spent.per_call_ms();
    if spent.tokens + tokens > budget.max_tokens {
        Some(BudgetLimit::Tokens)
    } else if spent.calls + calls > budget.max_calls {
        Some(BudgetLimit::Calls)
    } else if spent.elapsed_ms + time > budget.max_wall_ms {
        Some(BudgetLimit::WallTime)
    } else {
        None
    }
}

/// Nothing more.
pub const NOTHING: Need = Need {
    tokens: 0,
    calls: 0,
};

#[cfg(test)]
mod tests {
    #[test]
    fn limit_reached_names_the_limit_spent() {
        use crate::budget::{Spent, limit_reached};
        use crate::{config::Budget, records::BudgetLimit};
        let budget = Budget::default();
        let spent = Spent {
            tokens: 7_100,
            calls: 3,
            elapsed_ms: 9_000,
        };
        assert_eq!(
            limit_reached(&budget, &spent).unwrap().0,
            BudgetLimit::Tokens
        );
        assert!(
            limit_reached(
                &budget,
                &Spent {
                    tokens: 10,
                    calls: 1,
                    elapsed_ms: 10
                }
            )
            .is_none()
        );
    }

    #[test]
    fn affords_says_whether_the_next_calls_fit_what_is_left() {
        use crate::budget::{COMPACT_SCORER, FULL_REWRITE, Spent, affords};
        use crate::config::Budget;
        let budget = Budget::default();
        let early = Spent {
            tokens: 800,
            calls: 1,
            elapsed_ms: 2_000,
        };
        assert!(affords(&budget, &early, FULL_REWRITE, COMPACT_SCORER));
        let late = Spent {
            tokens: 5_500,
            calls: 4,
            elapsed_ms: 8_000,
        };
        assert!(!affords(&budget, &late, FULL_REWRITE, COMPACT_SCORER));
    }

    #[test]
    fn shortfall_names_the_limit_the_next_calls_would_pass() {
        use crate::budget::{FULL_REWRITE, NOTHING, Spent, shortfall};
        use crate::{config::Budget, records::BudgetLimit};
        let budget = Budget {
            max_wall_ms: 3_000,
            ..Budget::default()
        };
        let slow = Spent {
            tokens: 500,
            calls: 1,
            elapsed_ms: 2_500,
        };
        assert_eq!(
            shortfall(&budget, &slow, FULL_REWRITE, NOTHING),
            Some(BudgetLimit::WallTime)
        );
    }
}
