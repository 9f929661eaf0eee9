//! [`MeteredModel`]: the one metered call. A chat or embedding model wrapped so every
//! call is checked against, and recorded on, a [`CostMeter`].

use agent_llm::{
    ChatModel, ChatRequest, ChatResponse, ChatStream, EmbeddingModel, EmbeddingRequest,
    EmbeddingResponse, LlmError, PromptLayout, StreamEvent, StructuredOutputMode, Usage,
};
use async_trait::async_trait;
use futures::StreamExt;

use tracing::Instrument as _;

use crate::chat_span::{chat_span, record_response};
use crate::cost::CostMeter;
use crate::prefix_reuse::PrefixReuse;

/// Wraps a [`ChatModel`] so every call is checked against and recorded on a [`CostMeter`].
/// A call refused by a limit fails with [`LlmError::LimitExceeded`]. Each call's prompt
/// is compared with the previous call's on the same step ([`PrefixReuse`]).
///
/// Use it for calls made outside an agent loop (a tool's own LLM calls, `extract`) or for
/// loops in a session without a meter. An agent loop in a session that has a meter
/// (`Session::with_meter`) already meters its model calls: wrapping that model too would
/// count every call twice.
#[derive(Debug, Clone)]
pub struct MeteredModel<M> {
    inner: M,
    meter: CostMeter,
}

impl<M> MeteredModel<M> {
    /// Meters `inner` on `meter`.
    pub fn new(inner: M, meter: CostMeter) -> Self {
        MeteredModel { inner, meter }
    }

    /// The meter.
    pub fn meter(&self) -> &CostMeter {
        &self.meter
    }
}

fn model_name(request: &ChatRequest, response_model: &str, fallback: Option<String>) -> String {
    if !response_model.is_empty() {
        return response_model.to_owned();
    }
    request.model.clone().or(fallback).unwrap_or_default()
}

#[async_trait]
impl<M: ChatModel> ChatModel for MeteredModel<M> {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.meter.check()?;
        let layout = PromptLayout::of(request);
        let previous = self.meter.swap_step_prompt(layout.clone());
        let span = chat_span(request);
        let response = self.inner.chat(request).instrument(span.clone()).await?;
        record_response(&span, &response);
        let model = model_name(request, &response.model, self.inner.default_model());
        self.meter.record(&model, response.usage);
        self.meter.record_prefix(PrefixReuse::of_call(
            &layout,
            previous.as_ref(),
            response.usage.prompt_tokens(),
        ));
        Ok(response)
    }

    async fn chat_stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        self.meter.check()?;
        let layout = PromptLayout::of(request);
        let previous = self.meter.swap_step_prompt(layout.clone());
        let stream = self.inner.chat_stream(request).await?;
        let meter = self.meter.clone();
        let mut model = model_name(request, "", self.inner.default_model());
        let mut usage = Usage::default();
        let metered = stream.map(move |event| {
            match &event {
                Ok(StreamEvent::MessageStart { model: served, .. }) if !served.is_empty() => {
                    model = served.clone();
                }
                Ok(StreamEvent::Usage(latest)) => usage = *latest,
                Ok(StreamEvent::Stop(_)) => {
                    meter.record(&model, usage);
                    meter.record_prefix(PrefixReuse::of_call(
                        &layout,
                        previous.as_ref(),
                        usage.prompt_tokens(),
                    ));
                }
                _ => {}
            }
            event
        });
        Ok(Box::pin(metered))
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

/// Embeddings are metered on the same path: checked before, recorded after.
#[async_trait]
impl<M: EmbeddingModel> EmbeddingModel for MeteredModel<M> {
    async fn embed(&self, request: EmbeddingRequest) -> Result<EmbeddingResponse, LlmError> {
        self.meter.check()?;
        let asked = request.model.clone();
        let response = self.inner.embed(request).await?;
        let model = if response.model.is_empty() {
            asked.unwrap_or_default()
        } else {
            response.model.clone()
        };
        self.meter.record(&model, response.usage);
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::CostLimits;

    fn tokens(n: u64) -> Usage {
        Usage {
            input_tokens: n,
            ..Usage::default()
        }
    }

    /// An embedding model answering one zero vector per input, a token each.
    struct Zeros;

    #[async_trait]
    impl EmbeddingModel for Zeros {
        async fn embed(&self, request: EmbeddingRequest) -> Result<EmbeddingResponse, LlmError> {
            Ok(EmbeddingResponse {
                model: "text-embedding-3-small".into(),
                vectors: vec![vec![0.0; 4]; request.inputs.len()],
                usage: tokens(request.inputs.len() as u64),
            })
        }
    }

    #[tokio::test]
    async fn one_off_calls_repeat_the_previous_call_of_their_step_only() {
        use agent_llm::testing::{ScriptedModel, responses};
        let model = ScriptedModel::new(
            (0..3)
                .map(|_| responses::with_usage(responses::text("ok"), tokens(100)))
                .collect(),
        );
        let meter = CostMeter::new(CostLimits::default());
        let ask = |job: &str| {
            ChatRequest::from_prompt(format!("Normalize this posting: {job}"))
                .with_system("You normalize job postings; use only what the posting says.")
        };
        let per_job = MeteredModel::new(model.clone(), meter.for_step("process_jobs"));
        per_job.chat(&ask("Rust engineer")).await.unwrap();
        per_job.chat(&ask("Go engineer")).await.unwrap();
        let first_two = meter.snapshot().prefix_reuse;
        // The second call repeats the system prompt and the message's role, not the job.
        assert_eq!(first_two.input_tokens, 200);
        assert!(
            first_two.repeated_tokens > 30 && first_two.repeated_tokens < 100,
            "{first_two:?}"
        );
        // Another step's first call has nothing before it.
        MeteredModel::new(model, meter.for_step("score_jobs"))
            .chat(&ask("Rust engineer"))
            .await
            .unwrap();
        let all = meter.snapshot().prefix_reuse;
        assert_eq!(all.input_tokens, 300);
        assert_eq!(all.repeated_tokens, first_two.repeated_tokens);
    }

    #[tokio::test]
    async fn embeddings_are_metered_and_priced() {
        let meter = CostMeter::new(CostLimits {
            max_tokens: Some(3),
            ..Default::default()
        });
        let model = MeteredModel::new(Zeros, meter.clone());
        let request = EmbeddingRequest {
            inputs: vec!["a".into(), "b".into(), "c".into()],
            ..Default::default()
        };
        model.embed(request.clone()).await.unwrap();
        let spent = meter.snapshot();
        assert_eq!((spent.calls, spent.usage.input_tokens), (1, 3));
        assert!(spent.usd > 0.0, "text-embedding-3-small has a price");
        assert!(matches!(
            model.embed(request).await,
            Err(LlmError::LimitExceeded(_))
        ));
    }
}
