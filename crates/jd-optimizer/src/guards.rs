//! What a run records when the budget presses (spec 003 sections 4.6.2 and 4.6.3): a
//! limit reached, which sends the run to aggregation, and a degrade mode applied. Every
//! node and agent records them the same way, once each, with an event.

use crate::events::OptimizeEvent;
use crate::llm::Node;
use crate::records::{BudgetLimit, BudgetStop, Degrade};

/// Records that a budget limit was reached (the first one only): a warning, an event,
/// and the run goes to aggregation at the next branch.
pub fn stop_for_budget(ctx: &Node, limit: BudgetLimit, message: String) {
    let first = ctx.update(|s| {
        if s.budget_stop.is_some() {
            return false;
        }
        s.budget_stop = Some(BudgetStop {
            limit,
            at_node: s.current_node.clone(),
            message: message.clone(),
        });
        s.warnings.push(format!("budget reached: {message}"));
        true
    });
    if first {
        tracing::warn!(%message, "optimization budget reached");
        ctx.emit(OptimizeEvent::BudgetReached { limit, message });
    }
}

/// Records a degrade mode (once) with its reason.
pub fn degrade(ctx: &Node, mode: Degrade, reason: &str) {
    let new = ctx.update(|s| {
        let new = s.degrades.insert(mode);
        if new {
            s.warnings.push(format!("degraded ({mode:?}): {reason}"));
        }
        new
    });
    if new {
        ctx.emit(OptimizeEvent::Degraded {
            mode,
            reason: reason.to_owned(),
        });
    }
}
