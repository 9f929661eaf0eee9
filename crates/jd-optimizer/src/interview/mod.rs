//! Interview preparation (spec 003 section 6), run in sequence from a completed
//! optimization: the [question generator](questions), then the
//! [cover-letter generator](cover_letter), each reading the user's compact
//! [memory profile](memory) first and the resume only when the profile is thin. Outputs
//! are cached per session and tone (7 days); each answer is checked deterministically
//! and asked again once with what was wrong.

pub mod cover_letter;
pub mod memory;
pub mod questions;

use std::collections::BTreeMap;
use std::time::Duration;

use agent_llm::ModelTier;
use agent_runtime::Session;
use agent_runtime::graph::{NodeContext, NodeError};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::bullets::current_bullets;
use crate::cache::{CacheKind, INTERVIEW_TTL, OptimizerCache, interview_key};
use crate::llm::{AgentCaller, Ask, CallError};
use crate::state::OptimizationState;
use cover_letter::{CoverLetter, LetterDraft, Tone, check_letter};
use memory::{MemoryProfile, MemoryStore};
use questions::{InterviewQuestion, QuestionSet, check_questions};

/// How long one interview call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// What to prepare.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InterviewRequest {
    /// Interview questions with suggested answers.
    #[serde(default = "yes")]
    pub questions: bool,
    /// A cover letter.
    #[serde(default)]
    pub cover_letter: bool,
    /// The letter's tone.
    #[serde(default)]
    pub tone: Tone,
}

fn yes() -> bool {
    true
}

/// Interview preparation for one optimization.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InterviewPrep {
    /// The optimization's session.
    pub session_id: String,
    /// The questions, when asked for.
    pub questions: Vec<InterviewQuestion>,
    /// The letter, when asked for.
    pub cover_letter: Option<CoverLetter>,
    /// Tokens per agent (`question_generator`, `cover_letter_generator`).
    pub token_usage: BTreeMap<String, u64>,
    /// Tokens of every call.
    pub total_tokens_used: u64,
    /// Model calls made.
    pub model_calls: u64,
    /// Whether everything came from the cache.
    pub cached: bool,
    /// Whether the memory profile was enough (the resume was not sent).
    pub memory_only: bool,
}

/// What is cached per session and tone.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Cached {
    questions: Option<Vec<InterviewQuestion>>,
    cover_letter: Option<CoverLetter>,
}

/// Why interview preparation gave no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InterviewError {
    /// The optimization has no result yet.
    #[error("the optimization {0} has not completed")]
    NotCompleted(String),
    /// The model's answer stayed wrong after it was asked again.
    #[error("the {agent}'s answer was refused twice: {}", .problems.join("; "))]
    Refused {
        /// The agent.
        agent: &'static str,
        /// What was wrong the second time.
        problems: Vec<String>,
    },
    /// The call failed.
    #[error("the {agent} failed: {error}")]
    Call {
        /// The agent.
        agent: &'static str,
        /// Why.
        error: CallError,
    },
    /// The run's journal or checkpoints failed: an answer could not be kept, or the
    /// durable run could not go on.
    #[error("{0}")]
    Run(String),
}

/// One answer as the run's journal keeps it, so a preparation run again after a crash
/// takes it from there instead of paying for it again.
#[derive(Serialize, Deserialize)]
struct Answered<T> {
    value: T,
    tokens: u64,
    calls: u64,
}

/// Runs the interview agents.
#[derive(Debug, Clone)]
pub struct Interviewer {
    caller: AgentCaller,
    cache: OptimizerCache,
    memory: Option<MemoryStore>,
}

/// The candidate's material as the prompts give it, and as the checks read it.
struct Material {
    prompt: String,
    facts: String,
    memory_only: bool,
}

impl Interviewer {
    /// Interviews on `caller`'s model, cached in `cache`, remembering profiles in
    /// `memory` when given.
    pub(crate) fn new(
        caller: AgentCaller,
        cache: OptimizerCache,
        memory: Option<MemoryStore>,
    ) -> Self {
        Interviewer {
            caller,
            cache,
            memory,
        }
    }

    /// The memory profile this optimization adds to the user's, merged with what was
    /// recorded before, and recorded.
    async fn profile(&self, state: &OptimizationState, tone: Option<Tone>) -> MemoryProfile {
        let mut fresh = MemoryProfile::from_optimization(state);
        fresh.preferred_tone = tone;
        let Some(store) = &self.memory else {
            return fresh;
        };
        match store.record(&state.tenant_id, &state.user_id, &fresh).await {
            Ok(profile) => profile,
            Err(error) => {
                tracing::warn!(%error, "memory profile not recorded; this optimization's is used");
                fresh
            }
        }
    }

    fn material(state: &OptimizationState, profile: &MemoryProfile) -> Material {
        let analysis = state.jd_analysis.clone().unwrap_or_default();
        let mut prompt = format!(
            "Job: skills {}; duties {}; qualifications {}\nCandidate's core skills: {}\nSignature achievements:\n- {}\nOptimized bullets:\n- {}\n",
            analysis.hard_skills.join(", "),
            analysis.responsibilities.join("; "),
            analysis.qualifications.join("; "),
            profile.core_skills.join(", "),
            profile.signature_achievements.join("\n- "),
            current_bullets(state).join("\n- "),
        );
        let memory_only = profile.is_sufficient();
        if !memory_only {
            prompt.push_str("Full background:\n");
            for chunk in &state.resume_sections {
                prompt.push_str(&format!("{}\n", chunk.content.replace('\n', " ")));
            }
        }
        let facts = state.candidate_text();
        Material {
            prompt,
            facts,
            memory_only,
        }
    }

    /// Asks for a `T`, checks it with `check`, and asks once more with the problems.
    /// Each answer goes through `run`'s journal: a preparation run again after a crash
    /// takes the answers it already had from there.
    async fn checked<T, S, E>(
        ask: Ask,
        check: impl Fn(&T) -> Vec<String>,
        usage: &mut (BTreeMap<String, u64>, u64),
        ctx: &NodeContext<S, E>,
    ) -> Result<T, InterviewError>
    where
        T: JsonSchema + Serialize + DeserializeOwned,
    {
        let agent = ask.agent;
        let mut problems = Vec::new();
        for attempt in 0..2 {
            let mut ask = ask.clone();
            if attempt == 1 {
                ask.prompt.push_str(&format!(
                    "\nYour previous answer was refused: {}. Answer again, fixing this.",
                    problems.join("; ")
                ));
            }
            let mut failed = None;
            let answered = ctx
                .run()
                .once(&format!("{agent}#{attempt}"), || async {
                    let called = AgentCaller::call::<T, S, E>(ctx, ask, CALL_TIMEOUT).await;
                    match called.outcome {
                        Ok(value) => Ok(Answered {
                            value,
                            tokens: called.tokens,
                            calls: called.calls,
                        }),
                        Err(error) => {
                            failed = Some((error, called.tokens, called.calls));
                            Err(NodeError::recoverable("the call failed"))
                        }
                    }
                })
                .await;
            let (tokens, calls) = match (&answered, &failed) {
                (Ok(answered), _) => (answered.tokens, answered.calls),
                (Err(_), Some((_, tokens, calls))) => (*tokens, *calls),
                (Err(_), None) => (0, 0),
            };
            *usage.0.entry(agent.to_owned()).or_default() += tokens;
            usage.1 += calls;
            let value = match (answered, failed) {
                (Ok(answered), _) => answered.value,
                (Err(_), Some((error, ..))) => return Err(InterviewError::Call { agent, error }),
                (Err(journal), None) => return Err(InterviewError::Run(journal.to_string())),
            };
            problems = check(&value);
            if problems.is_empty() {
                return Ok(value);
            }
            tracing::warn!(agent, ?problems, "answer refused");
        }
        Err(InterviewError::Refused { agent, problems })
    }

    /// Prepares the interview for the completed optimization `state`.
    pub async fn prepare(
        &self,
        state: &OptimizationState,
        request: &InterviewRequest,
        cancel: &CancellationToken,
    ) -> Result<InterviewPrep, InterviewError> {
        let session = Session::new(format!("interview-{}", state.session_id), ())
            .with_cancellation(cancel.clone());
        let ctx: NodeContext<(), ()> = NodeContext::standalone(self.caller.equip(session));
        self.prepare_in(state, request, &ctx).await
    }

    /// Prepares the interview inside a graph run: the calls are `ctx`'s session's, which
    /// must carry this interviewer's model ([`JdOptimizer::equip`](crate::JdOptimizer::equip)),
    /// and every answer goes through the run's journal, so with a checkpoint store a
    /// preparation stopped half-way (a crash, a restart) pays for no answer twice when it
    /// runs again.
    pub async fn prepare_in<S, E>(
        &self,
        state: &OptimizationState,
        request: &InterviewRequest,
        ctx: &NodeContext<S, E>,
    ) -> Result<InterviewPrep, InterviewError> {
        if state.final_result.is_none() {
            return Err(InterviewError::NotCompleted(state.session_id.clone()));
        }
        let key = interview_key(&state.tenant_id, &state.session_id, request.tone.as_str());
        let mut cached: Cached = self
            .cache
            .get(CacheKind::Interview, &key)
            .await
            .unwrap_or_default();
        let need_questions = request.questions && cached.questions.is_none();
        let need_letter = request.cover_letter && cached.cover_letter.is_none();
        let mut usage = (BTreeMap::new(), 0u64);
        let mut memory_only = true;
        if need_questions || need_letter {
            let tone = request.cover_letter.then_some(request.tone);
            let profile = self.profile(state, tone).await;
            let material = Self::material(state, &profile);
            memory_only = material.memory_only;
            if need_questions {
                let ask = Ask {
                    agent: questions::AGENT,
                    tier: ModelTier::Primary,
                    system: questions::SYSTEM.to_owned(),
                    prompt: material.prompt.clone(),
                    temperature: 0.6,
                    max_tokens: 2_400,
                    fields_in_system: false,
                };
                let set: QuestionSet = Self::checked(
                    ask,
                    |set| check_questions(set, &material.facts),
                    &mut usage,
                    ctx,
                )
                .await?;
                cached.questions = Some(set.questions);
            }
            if need_letter {
                let ask = Ask {
                    agent: cover_letter::AGENT,
                    tier: ModelTier::Primary,
                    system: cover_letter::SYSTEM.to_owned(),
                    prompt: format!("{}Tone: {}\n", material.prompt, request.tone.as_str()),
                    temperature: 0.7,
                    max_tokens: 900,
                    fields_in_system: false,
                };
                let draft: LetterDraft = Self::checked(
                    ask,
                    |d: &LetterDraft| check_letter(&d.cover_letter, &material.facts),
                    &mut usage,
                    ctx,
                )
                .await?;
                cached.cover_letter = Some(CoverLetter {
                    words: draft.cover_letter.split_whitespace().count(),
                    text: draft.cover_letter,
                    tone: request.tone,
                });
            }
            self.cache
                .put(&key, &cached_value(&cached), INTERVIEW_TTL)
                .await;
        }
        let total_tokens_used = usage.0.values().sum();
        Ok(InterviewPrep {
            session_id: state.session_id.clone(),
            questions: if request.questions {
                cached.questions.clone().unwrap_or_default()
            } else {
                Vec::new()
            },
            cover_letter: if request.cover_letter {
                cached.cover_letter.clone()
            } else {
                None
            },
            token_usage: usage.0,
            total_tokens_used,
            model_calls: usage.1,
            cached: !(need_questions || need_letter),
            memory_only,
        })
    }
}

fn cached_value(cached: &Cached) -> serde_json::Value {
    serde_json::to_value(cached).unwrap_or_default()
}
