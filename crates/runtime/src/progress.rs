//! What an agent's model calls are doing while it works: waits for the model server left
//! out of the timeouts, loop events, and the product's progress events.

use crate::context::AgentContext;
use crate::events::{LoopEvent, LoopObserver};
use agent_llm::capacity::{CallEvent, CallObserver};
use std::sync::Arc;

/// One model call of an agent as it goes, with the session's totals: what a product turns
/// into progress events ([`Session::with_progress`](crate::Session::with_progress)).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelProgress {
    /// What the call is doing.
    pub call: CallEvent,
    /// Model calls of the session so far, a finished call included; `None` without a meter.
    pub calls_so_far: Option<u64>,
    /// Tokens of the session so far, a finished call's included; `None` without a meter.
    pub tokens_so_far: Option<u64>,
}

/// Turns [`ModelProgress`] into a product event, or into none.
pub(crate) type ProgressEvents<E> =
    Arc<dyn Fn(&crate::AgentIdentity, &ModelProgress) -> Option<E> + Send + Sync>;

/// Hears the model calls made while one agent invocation runs: its loop's and its tools'.
pub(crate) struct InvocationCalls<S, E> {
    ctx: AgentContext<S, E>,
    observer: Option<Arc<dyn LoopObserver>>,
}

impl<S, E> InvocationCalls<S, E>
where
    S: Send + Sync + 'static,
    E: Send + Sync + 'static,
{
    pub(crate) fn observer(
        ctx: &AgentContext<S, E>,
        observer: Option<Arc<dyn LoopObserver>>,
    ) -> Arc<dyn CallObserver> {
        Arc::new(InvocationCalls {
            ctx: ctx.clone(),
            observer,
        })
    }
}

impl<S, E> CallObserver for InvocationCalls<S, E>
where
    S: Send + Sync,
    E: Send + Sync,
{
    fn on_call(&self, event: &CallEvent) {
        // Waiting for the model server's capacity is not work: the timeouts leave it out.
        match event {
            CallEvent::Queued => self.ctx.wait_clock().enter(),
            CallEvent::Dequeued { .. } => self.ctx.wait_clock().leave(),
            _ => {}
        }
        if let Some(observer) = &self.observer {
            observer.on_event(self.ctx.agent(), &LoopEvent::ModelCall(event.clone()));
        }
        let parts = self.ctx.parts();
        let Some(progress) = &parts.progress else {
            return;
        };
        // The meter records a call just after it finishes: count it here already.
        let (calls, tokens) = match event {
            CallEvent::Finished { usage, .. } => (1, usage.total_tokens()),
            _ => (0, 0),
        };
        let spent = parts.meter.as_ref().map(|meter| meter.snapshot());
        let report = ModelProgress {
            call: event.clone(),
            calls_so_far: spent.as_ref().map(|s| s.calls + calls),
            tokens_so_far: spent.as_ref().map(|s| s.usage.total_tokens() + tokens),
        };
        if let Some(product_event) = progress(self.ctx.agent(), &report) {
            parts.emit(product_event);
        }
    }
}
