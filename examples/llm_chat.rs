//! Chat with the configured LLM provider, with one tool (`get_time`).
//!
//! ```text
//! cargo run -p examples --example llm_chat -- [--stream] [--extract] "PROMPT"
//! ```
//!
//! The provider comes from the environment (`LLM_PROVIDER`, `ANTHROPIC_API_KEY`,
//! `ANTHROPIC_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_BASE_URL`, ...). With none configured it
//! says so on its first line and answers from the recorded fixtures in `fixtures/llm/`.
//! The last line printed is one JSON object: final text, summed usage, cost and counts.

// A command-line program: its output is the point.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use agent_llm::testing::FixtureModel;
use agent_llm::{
    ChatModel, ChatRequest, ChatResponse, ChatStream, ExtractOptions, LlmError, ModelTier,
    ProviderConfig, StreamAccumulator, StreamEvent, StructuredOutputMode, collect_stream,
    extract_with,
};
use agent_runtime::{
    AgentConfig, AgentContext, AgentIdentity, AgentLoop, CostLimits, CostMeter, Session, StopCause,
    ToolError, tool,
};
use anyhow::bail;
use async_trait::async_trait;
use clap::Parser;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::io::Write;
use std::sync::Arc;

const SYSTEM_PROMPT: &str = "You are a concise assistant. When the user asks about the current \
time or date, call get_time with an IANA timezone name (use UTC if none is given).";

/// Chat with the configured LLM provider (or offline fixtures) using a get_time tool.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    #[command(flatten)]
    log: examples::telemetry::LogArgs,
    /// Stream the answer as it is generated.
    #[arg(long)]
    stream: bool,
    /// Ask for a typed answer `{ "answer": string, "confidence": number }` instead of text.
    #[arg(long)]
    extract: bool,
    /// Model tier to use (primary, mid, orchestrator, light).
    #[arg(long, default_value = "primary")]
    tier: ModelTier,
    /// Most model calls in the tool loop.
    #[arg(long, default_value_t = 8)]
    max_rounds: u32,
    /// Maximum output tokens per call.
    #[arg(long, default_value_t = 1024)]
    max_tokens: u32,
    /// What to ask.
    prompt: String,
}

/// Arguments of the `get_time` tool.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct GetTime {
    /// IANA timezone name, such as `Europe/Paris` or `UTC`.
    timezone: String,
}

/// The typed answer asked for with `--extract`.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct ChatAnswer {
    /// The answer to the user's question.
    answer: String,
    /// How sure the model is, from 0 to 1.
    confidence: f64,
}

/// The summary figures of the calls recorded on `meter`.
fn summary_of(meter: &CostMeter) -> Value {
    let spent = meter.snapshot();
    json!({
        "usage": spent.usage,
        "total_tokens": spent.usage.total_tokens(),
        "llm_calls": spent.calls,
        "cost_usd": if spent.unpriced_models.is_empty() { json!(spent.usd) } else { Value::Null },
        "unpriced_models": spent.unpriced_models,
    })
}

/// Makes `chat` go through the provider's streaming endpoint, printing the answer's text
/// as it arrives when `echo` is set, so `--stream` streams the tool loop and `--extract`.
struct ViaStream {
    model: Arc<dyn ChatModel>,
    echo: bool,
}

#[async_trait]
impl ChatModel for ViaStream {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let stream = self.model.chat_stream(request).await?;
        if !self.echo {
            return collect_stream(stream).await;
        }
        let mut stream = stream;
        let mut response = StreamAccumulator::default();
        let mut printed = false;
        while let Some(event) = stream.next().await {
            let event = event?;
            if let StreamEvent::TextDelta { text, .. } = &event {
                print!("{text}");
                let _ = std::io::stdout().flush();
                printed |= !text.is_empty();
            }
            response.push(event);
        }
        if printed {
            println!();
        }
        response.finish()
    }
    async fn chat_stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        self.model.chat_stream(request).await
    }
    fn structured_output_mode(&self) -> StructuredOutputMode {
        self.model.structured_output_mode()
    }
    fn default_model(&self) -> Option<String> {
        self.model.default_model()
    }
    fn context_window(&self) -> Option<u32> {
        self.model.context_window()
    }
}

#[tokio::main]
async fn main() {
    if let Err(error) = run(Args::parse()).await {
        eprintln!("llm_chat: {error:#}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let _telemetry = examples::telemetry::install("llm_chat", "warn", args.log.log_format)?;

    let (model, provider): (Arc<dyn ChatModel>, String) = match ProviderConfig::from_env()? {
        Some(mut config) => {
            // A local server says which model it serves and its context window.
            config.discover().await?;
            println!(
                "provider: {}, model {}",
                config.describe(),
                config.router.model(args.tier)
            );
            (config.chat_model(args.tier)?, config.kind.to_string())
        }
        None => {
            let fixtures = FixtureModel::workspace_default();
            println!(
                "no LLM provider configured (set ANTHROPIC_API_KEY or OPENAI_API_KEY, or LLM_PROVIDER): \
                 answering offline from recorded fixtures in {}",
                fixtures.dir().display()
            );
            (Arc::new(fixtures), "fixture".to_owned())
        }
    };
    let model: Arc<dyn ChatModel> = if args.stream {
        Arc::new(ViaStream {
            model,
            echo: !args.extract,
        })
    } else {
        model
    };

    // One metering path: the runtime's meter, priced as configured (LLM_PRICE_<MODEL>).
    let meter = CostMeter::from_env(CostLimits::default())?;
    let mut summary = if args.extract {
        ask_typed(model.as_ref(), &args, &meter).await?
    } else {
        let text = chat_with_tools(Arc::clone(&model), &args, &meter).await?;
        json!({ "text": text })
    };
    if let (Value::Object(fields), Value::Object(figures)) = (&mut summary, summary_of(&meter)) {
        fields.insert("provider".into(), json!(provider));
        fields.extend(figures);
    }
    println!("{summary}");
    Ok(())
}

/// Runs the prompt through the runtime's agent loop with `get_time` as its one tool, and
/// returns the final text. The loop refuses a call that repeats the previous turn's,
/// re-asks an answer cut off at the output limit, and stops at `--max-rounds`.
async fn chat_with_tools(
    model: Arc<dyn ChatModel>,
    args: &Args,
    meter: &CostMeter,
) -> anyhow::Result<String> {
    let mut config: AgentConfig<(), ()> =
        AgentConfig::new(AgentIdentity::new("chat", "llm_chat"), SYSTEM_PROMPT)
            .with_tool(tool(
                "get_time",
                "The current date and time in a timezone.",
                |args: GetTime, _ctx: AgentContext<(), ()>| async move {
                    let outcome = current_time(&args.timezone);
                    match &outcome {
                        Ok(result) => println!("[tool] get_time({}) -> {result}", args.timezone),
                        Err(message) => {
                            println!("[tool] get_time({}) failed: {message}", args.timezone)
                        }
                    }
                    outcome.map_err(ToolError::Failed)
                },
            ))
            .with_max_rounds(args.max_rounds);
    config.max_tokens = Some(args.max_tokens);
    let session = Session::new("llm_chat", ()).with_meter(meter.clone());
    let agent = AgentLoop::new(config, model);
    let result = agent
        .run(
            &session.context(agent.identity().clone()),
            args.prompt.as_str(),
        )
        .await;
    match result.stop {
        StopCause::Completed => {
            let text = result.final_text.unwrap_or_default();
            if !args.stream {
                println!("{text}");
            }
            Ok(text)
        }
        StopCause::MaxRounds => bail!(
            "the model was still calling tools after {} rounds",
            args.max_rounds
        ),
        StopCause::ModelError(error) => Err(error.into()),
        other => bail!("the chat stopped: {other:?}"),
    }
}

fn current_time(timezone: &str) -> Result<Value, String> {
    let tz: chrono_tz::Tz = timezone.parse().map_err(|_| {
        format!("unknown timezone {timezone:?}; use an IANA name such as Europe/Paris")
    })?;
    let now = chrono::Utc::now().with_timezone(&tz);
    Ok(
        json!({ "timezone": timezone, "time": now.to_rfc3339(), "weekday": now.format("%A").to_string() }),
    )
}

/// Asks for a [`ChatAnswer`] through `extract` and prints it.
async fn ask_typed(model: &dyn ChatModel, args: &Args, meter: &CostMeter) -> anyhow::Result<Value> {
    let request = ChatRequest::from_prompt(&args.prompt)
        .with_system("Answer the user's question. Give a confidence between 0 and 1.")
        .with_max_tokens(args.max_tokens);
    match extract_with::<ChatAnswer, _>(model, request, ExtractOptions::default()).await {
        Ok(extracted) => {
            for usage in &extracted.usage {
                meter.record(&extracted.model, *usage);
            }
            let answer = serde_json::to_value(&extracted.value)?;
            println!("{}", serde_json::to_string_pretty(&answer)?);
            Ok(json!({ "answer": answer, "attempts": extracted.attempts }))
        }
        Err(failure) => {
            let model_name = model.default_model().unwrap_or_default();
            for usage in &failure.usage {
                meter.record(&model_name, *usage);
            }
            Err(failure.into())
        }
    }
}
