//! How many calls a provider takes at once, and what a caller hears while its calls wait
//! and run.
//!
//! A model server has a fixed number of slots (a local llama.cpp server often one). A
//! [`CapacityLimited`] model lets that many calls through at once and queues the rest. The
//! caller learns what each call is doing through a [`CallObserver`] installed for the
//! current task with [`observe_calls`]: when it queues, starts, is still running, and
//! ends. The agent runtime uses this to leave queueing time out of its timeouts and to
//! report progress while a long call runs.

use crate::error::LlmError;
use crate::model::{ChatModel, StructuredOutputMode};
use crate::stream::{ChatStream, StreamEvent};
use crate::types::{ChatRequest, ChatResponse, Usage};
use async_trait::async_trait;
use futures::StreamExt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// What happens to one model call.
#[derive(Debug, Clone, PartialEq)]
pub enum CallEvent {
    /// Every slot is taken: the call waits for one.
    Queued,
    /// The call stopped waiting for a slot: it got one, or it was dropped while it
    /// waited. Always follows [`CallEvent::Queued`].
    Dequeued {
        /// Time spent waiting.
        waited: Duration,
    },
    /// The call was sent.
    Started,
    /// The call is still running (said every heartbeat interval).
    Running {
        /// Time since it was sent.
        elapsed: Duration,
    },
    /// The model answered.
    Finished {
        /// Time since it was sent.
        elapsed: Duration,
        /// Its usage.
        usage: Usage,
    },
    /// The call failed (after the client's retries).
    Failed {
        /// Time since it was sent.
        elapsed: Duration,
        /// Why.
        error: LlmError,
    },
}

/// Hears the [`CallEvent`]s of the calls made in the current task.
pub trait CallObserver: Send + Sync {
    /// Called for every event; must not block.
    fn on_call(&self, event: &CallEvent);
}

impl<F: Fn(&CallEvent) + Send + Sync> CallObserver for F {
    fn on_call(&self, event: &CallEvent) {
        self(event)
    }
}

tokio::task_local! {
    static OBSERVER: Arc<dyn CallObserver>;
}

/// Runs `future` with `observer` hearing every call a [`CapacityLimited`] model makes
/// inside it (in this task; tasks it spawns are not observed). Scopes nest: inside
/// another `observe_calls`, both observers hear each call, the inner one first.
///
/// ```
/// use agent_llm::capacity::{CallEvent, CapacityLimited, ModelCapacity, observe_calls};
/// use agent_llm::{ChatModel, ChatRequest, testing::ScriptedModel};
/// use std::sync::{Arc, Mutex};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = CapacityLimited::new(ScriptedModel::from_texts(["hi"]), ModelCapacity::new(1));
/// let heard = Arc::new(Mutex::new(Vec::new()));
/// let log = heard.clone();
/// let observer = Arc::new(move |event: &CallEvent| log.lock().unwrap().push(event.clone()));
/// observe_calls(observer, model.chat(&ChatRequest::from_prompt("hello"))).await.unwrap();
/// let heard = heard.lock().unwrap();
/// assert_eq!(heard[0], CallEvent::Started);
/// assert!(matches!(heard[1], CallEvent::Finished { .. }));
/// # });
/// ```
pub fn observe_calls<F: Future>(
    observer: Arc<dyn CallObserver>,
    future: F,
) -> impl Future<Output = F::Output> {
    ObservedCalls {
        observer,
        nested: false,
        future,
    }
}

pin_project_lite::pin_project! {
    /// What [`observe_calls`] returns. A hand-written future rather than an `async fn`,
    /// which would keep the wrapped future twice (as its argument and inside the scope):
    /// an agent loop's whole invocation is wrapped so, once per session.
    struct ObservedCalls<F> {
        observer: Arc<dyn CallObserver>,
        // Whether the scope it runs in was looked for (at the first poll).
        nested: bool,
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for ObservedCalls<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if !*this.nested {
            *this.nested = true;
            if let Ok(outer) = OBSERVER.try_with(Arc::clone) {
                *this.observer = Arc::new(Nested {
                    inner: Arc::clone(this.observer),
                    outer,
                });
            }
        }
        let future = this.future;
        OBSERVER.sync_scope(Arc::clone(this.observer), || future.poll(cx))
    }
}

/// An observer inside another's scope: both hear every call.
struct Nested {
    inner: Arc<dyn CallObserver>,
    outer: Arc<dyn CallObserver>,
}

impl CallObserver for Nested {
    fn on_call(&self, event: &CallEvent) {
        self.inner.on_call(event);
        self.outer.on_call(event);
    }
}

fn notify(event: CallEvent) {
    let _ = OBSERVER.try_with(|observer| observer.on_call(&event));
}

/// The slots of one model server, shared by every model built for it.
#[derive(Debug, Clone)]
pub struct ModelCapacity {
    slots: Arc<Semaphore>,
    limit: usize,
    heartbeat: Duration,
}

/// How often a running call is reported by default.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(15);

impl ModelCapacity {
    /// `slots` calls at once (at least one), running calls reported every
    /// [`DEFAULT_HEARTBEAT`].
    pub fn new(slots: usize) -> Self {
        let limit = slots.max(1);
        ModelCapacity {
            slots: Arc::new(Semaphore::new(limit)),
            limit,
            heartbeat: DEFAULT_HEARTBEAT,
        }
    }

    /// Reports running calls every `interval` instead.
    pub fn with_heartbeat(mut self, interval: Duration) -> Self {
        self.heartbeat = interval.max(Duration::from_millis(1));
        self
    }

    /// Calls let through at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Waits for a slot, saying so when it must queue.
    async fn acquire(&self) -> Result<tokio::sync::OwnedSemaphorePermit, LlmError> {
        if let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() {
            return Ok(permit);
        }
        notify(CallEvent::Queued);
        let _queued = InQueue(Instant::now());
        Arc::clone(&self.slots)
            .acquire_owned()
            .await
            .map_err(|_| LlmError::Config("the model's capacity was closed".into()))
    }
}

/// Says [`CallEvent::Dequeued`] when the wait ends, however it ends.
struct InQueue(Instant);

impl Drop for InQueue {
    fn drop(&mut self) {
        notify(CallEvent::Dequeued {
            waited: self.0.elapsed(),
        });
    }
}

/// A model that takes at most its [`ModelCapacity`]'s slots at once and reports its calls
/// to the task's [`CallObserver`].
#[derive(Debug, Clone)]
pub struct CapacityLimited<M> {
    inner: M,
    capacity: ModelCapacity,
}

impl<M> CapacityLimited<M> {
    /// Limits `inner` to `capacity`.
    pub fn new(inner: M, capacity: ModelCapacity) -> Self {
        CapacityLimited { inner, capacity }
    }

    /// The capacity.
    pub fn capacity(&self) -> &ModelCapacity {
        &self.capacity
    }
}

/// Awaits `call`, saying every `interval` that it is still running.
async fn with_heartbeat<T>(
    call: impl Future<Output = Result<T, LlmError>>,
    interval: Duration,
    started: Instant,
) -> Result<T, LlmError> {
    tokio::pin!(call);
    let mut ticks = tokio::time::interval_at(Instant::now() + interval, interval);
    loop {
        tokio::select! {
            outcome = &mut call => return outcome,
            _ = ticks.tick() => notify(CallEvent::Running { elapsed: started.elapsed() }),
        }
    }
}

#[async_trait]
impl<M: ChatModel> ChatModel for CapacityLimited<M> {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let _slot = self.capacity.acquire().await?;
        notify(CallEvent::Started);
        let started = Instant::now();
        let outcome =
            with_heartbeat(self.inner.chat(request), self.capacity.heartbeat, started).await;
        let elapsed = started.elapsed();
        notify(match &outcome {
            Ok(response) => CallEvent::Finished {
                elapsed,
                usage: response.usage,
            },
            Err(error) => CallEvent::Failed {
                elapsed,
                error: error.clone(),
            },
        });
        outcome
    }

    /// The slot is held until the stream ends or is dropped. Events of a stream read in
    /// another task are not observed.
    async fn chat_stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        let slot = self.capacity.acquire().await?;
        notify(CallEvent::Started);
        let started = Instant::now();
        let stream = match self.inner.chat_stream(request).await {
            Ok(stream) => stream,
            Err(error) => {
                notify(CallEvent::Failed {
                    elapsed: started.elapsed(),
                    error: error.clone(),
                });
                return Err(error);
            }
        };
        let mut usage = Usage::default();
        let mut slot = Some(slot);
        Ok(Box::pin(stream.map(move |event| {
            match &event {
                Ok(StreamEvent::Usage(latest)) => usage = *latest,
                Ok(StreamEvent::Stop(_)) => {
                    slot.take();
                    notify(CallEvent::Finished {
                        elapsed: started.elapsed(),
                        usage,
                    });
                }
                Err(error) => {
                    slot.take();
                    notify(CallEvent::Failed {
                        elapsed: started.elapsed(),
                        error: error.clone(),
                    });
                }
                _ => {}
            }
            event
        })))
    }

    fn structured_output_mode(&self) -> StructuredOutputMode {
        self.inner.structured_output_mode()
    }

    fn default_model(&self) -> Option<String> {
        self.inner.default_model()
    }

    fn context_window(&self) -> Option<u32> {
        self.inner.context_window()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{LatencyModel, ScriptedModel};
    use std::sync::Mutex;

    fn recorder() -> (Arc<dyn CallObserver>, Arc<Mutex<Vec<CallEvent>>>) {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let log = heard.clone();
        let observer: Arc<dyn CallObserver> =
            Arc::new(move |event: &CallEvent| log.lock().unwrap().push(event.clone()));
        (observer, heard)
    }

    #[tokio::test]
    async fn nested_scopes_both_hear_each_call() {
        let model = CapacityLimited::new(ScriptedModel::from_texts(["hi"]), ModelCapacity::new(1));
        let (outer, heard_outside) = recorder();
        let (inner, heard_inside) = recorder();
        let request = ChatRequest::from_prompt("hello");
        let call = observe_calls(inner, model.chat(&request));
        observe_calls(outer, call).await.unwrap();
        let inside = heard_inside.lock().unwrap().clone();
        assert_eq!(inside[0], CallEvent::Started);
        assert_eq!(inside, *heard_outside.lock().unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_beyond_the_slots_queues_and_a_long_call_says_it_is_running() {
        let slow = LatencyModel::new(
            ScriptedModel::from_texts(["one", "two"]),
            Duration::from_secs(40),
        );
        let model = CapacityLimited::new(slow, ModelCapacity::new(1));
        let (observer, heard) = recorder();
        let request = ChatRequest::from_prompt("hi");
        let both = async { futures::join!(model.chat(&request), model.chat(&request)) };
        let (first, second) = observe_calls(observer, both).await;
        assert_eq!(first.unwrap().text(), "one");
        assert_eq!(second.unwrap().text(), "two");
        let heard = heard.lock().unwrap().clone();
        let names: Vec<String> = heard
            .iter()
            .map(|event| match event {
                CallEvent::Queued => "queued".to_owned(),
                CallEvent::Dequeued { waited } => format!("dequeued after {}s", waited.as_secs()),
                CallEvent::Started => "started".to_owned(),
                CallEvent::Running { elapsed } => format!("running {}s", elapsed.as_secs()),
                CallEvent::Finished { elapsed, .. } => format!("finished {}s", elapsed.as_secs()),
                CallEvent::Failed { .. } => "failed".to_owned(),
            })
            .collect();
        assert_eq!(
            names,
            [
                "started",
                "queued",
                "running 15s",
                "running 30s",
                "finished 40s",
                "dequeued after 40s",
                "started",
                "running 15s",
                "running 30s",
                "finished 40s",
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_dropped_while_it_queues_leaves_the_queue() {
        let slow = LatencyModel::new(ScriptedModel::from_texts(["one"]), Duration::from_secs(40));
        let model = CapacityLimited::new(slow, ModelCapacity::new(1));
        let (observer, heard) = recorder();
        let request = ChatRequest::from_prompt("hi");
        observe_calls(observer, async {
            let first = model.chat(&request);
            let second = tokio::time::timeout(Duration::from_secs(1), model.chat(&request));
            tokio::select! {
                _ = first => unreachable!("the first call takes 40 s"),
                waited = second => assert!(waited.is_err()),
            }
        })
        .await;
        let heard = heard.lock().unwrap().clone();
        assert_eq!(
            heard,
            [
                CallEvent::Started,
                CallEvent::Queued,
                CallEvent::Dequeued {
                    waited: Duration::from_secs(1)
                }
            ]
        );
    }

    #[tokio::test]
    async fn without_an_observer_calls_run_unheard() {
        let model = CapacityLimited::new(ScriptedModel::from_texts(["ok"]), ModelCapacity::new(0));
        assert_eq!(model.capacity().limit(), 1);
        let answer = model.chat(&ChatRequest::from_prompt("hi")).await.unwrap();
        assert_eq!(answer.text(), "ok");
    }
}
