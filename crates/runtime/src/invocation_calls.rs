//! Hearing the model calls of one agent invocation (its loop's and its tools'): waits for
//! the model server left out of the timeouts, loop events, and the product's progress
//! events ([`ModelProgress`]).

use crate::context::AgentContext;
use crate::events::{LoopEvent, LoopObserver};
use crate::progress::ModelProgress;
use agent_llm::capacity::{CallEvent, CallObserver};
use std::sync::Arc;

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

impl<S, E> AgentContext<S, E> {
    /// Runs `work` with its model calls heard as this invocation's: time queued for the
    /// model server is left out of this invocation's timeouts and the calls are reported
    /// as the session's progress. An agent loop does this for its own calls and its
    /// tools'; use it for work done for this agent on another task (`tokio::spawn`).
    pub fn hearing_calls<F: Future>(
        &self,
        work: F,
    ) -> impl Future<Output = F::Output> + use<F, S, E>
    where
        S: Send + Sync + 'static,
        E: Send + Sync + 'static,
    {
        let observer = InvocationCalls::observer(self, None);
        agent_llm::capacity::observe_calls(observer, work)
    }
}
