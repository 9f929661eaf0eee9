//! The loop's core: a serializable state machine with no I/O.

use super::compaction::{Compacted, compact};
use super::text_calls::tool_calls_in_text;
use crate::config::Compaction;
use crate::result::StopCause;
use agent_llm::{
    ChatRequest, ChatResponse, ContentBlock, Message, Role, StopReason, ToolChoice, Usage,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool call the model asked for, borrowed from the transcript.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolCall<'a> {
    /// Call id, echoed in the result.
    pub id: &'a str,
    /// Tool name.
    pub name: &'a str,
    /// Arguments.
    pub input: &'a Value,
}

/// The tool calls of the model's last answer, in the order it made them.
#[derive(Debug, Clone, Copy)]
pub struct ToolCalls<'a> {
    blocks: &'a [ContentBlock],
    /// The model's answer before this one, if any.
    previous: Option<&'a [ContentBlock]>,
}

impl<'a> ToolCalls<'a> {
    /// Whether the model's previous answer made this very call (same tool, same
    /// arguments): a model going round in circles, whose call is not run again.
    pub fn repeats(&self, call: &ToolCall<'_>) -> bool {
        self.previous.is_some_and(|blocks| {
            blocks.iter().any(|block| {
                matches!(block, ContentBlock::ToolUse { name, input, .. }
                    if name == call.name && input == call.input)
            })
        })
    }

    /// The calls, in order.
    pub fn iter(&self) -> impl Iterator<Item = ToolCall<'a>> + 'a {
        self.blocks.iter().filter_map(|block| match block {
            ContentBlock::ToolUse { id, name, input } => Some(ToolCall { id, name, input }),
            _ => None,
        })
    }

    /// How many calls there are.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }
}

/// Times in a row an answer cut off at the output-token limit is asked for again.
const CUT_OFF_REASKS: u32 = 2;

/// What the model is told when its answer was cut off.
const CUT_OFF_NOTE: &str = "Your answer was cut off at the output-token limit. Answer again, \
    much shorter: keep only what matters, or call one tool at a time.";

/// Times in a row an answer asked for without tools, which wrote tool calls as text
/// instead, is asked for again.
const WRITTEN_CALL_REASKS: u32 = 1;

/// What the model is told when, asked to answer without tools, it wrote tool calls.
const NO_TOOLS_NOTE: &str = "Tools are not available for this answer, and calls written as \
    text are not run. Answer the user now, in plain words, from the results you already have.";

/// What the model is told on the last model call of a run that answers at its step limit.
const LAST_ROUND_NOTE: &str = "This is your last step: tools are not available any more. \
    Answer the user now from the results you already have, and say what is left undone.";

/// What the run needs next.
#[derive(Debug)]
pub enum Next<'a> {
    /// Call the model with this request.
    CallModel(&'a ChatRequest),
    /// Run these tool calls and report their results in this order.
    RunTools(ToolCalls<'a>),
    /// The run is over; see [`AgentRun::stop_cause`].
    Done,
}

/// The agent loop as data: given the transcript so far it says what comes next, and it
/// is told what happened. It does no I/O, so it is deterministic to test, and it can be
/// saved with serde and resumed in another process. Of the stop causes only completion
/// is saved (a run that stopped otherwise resumes where it stopped).
///
/// ```
/// use agent_runtime::{AgentRun, Next};
/// use agent_llm::{ChatRequest, ChatResponse, ContentBlock, StopReason, Usage};
/// let mut run = AgentRun::new(ChatRequest::from_prompt("hi"), 5, None);
/// assert!(matches!(run.next_step(), Next::CallModel(_)));
/// run.on_model_response(ChatResponse {
///     id: "r1".into(), model: "m".into(), content: vec![ContentBlock::text("hello")],
///     stop_reason: StopReason::EndTurn, usage: Usage::default(),
/// });
/// assert!(matches!(run.next_step(), Next::Done));
/// assert_eq!(run.final_text(), Some("hello"));
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentRun {
    request: ChatRequest,
    max_rounds: u32,
    rounds: u32,
    usage: Usage,
    round_usage: Vec<Usage>,
    final_text: Option<String>,
    compaction: Option<(usize, usize)>,
    compacted: usize,
    /// Whether the model gave its final answer (saved; the other stop causes are not).
    #[serde(default)]
    completed: bool,
    /// Answers in a row cut off at the output-token limit.
    #[serde(default)]
    cut_offs: u32,
    /// The tool choice to restore once the model answered without tools, after it
    /// repeated every call of its previous turn.
    #[serde(default)]
    answer_without_tools: Option<Option<ToolChoice>>,
    /// Answers in a row that, asked for without tools, wrote tool calls as text.
    #[serde(default)]
    written_calls_refused: u32,
    /// Whether the last model call the round limit allows is asked for without tools.
    #[serde(default)]
    answers_at_last_round: bool,
    /// Whether that last call was prepared (tools withheld, the model told).
    #[serde(default)]
    last_round_prepared: bool,
    /// Why a tool ended the run, if one did (saved: a resumed run stays ended).
    #[serde(default)]
    ended: Option<String>,
    #[serde(skip)]
    stop: Option<StopCause>,
}

impl AgentRun {
    /// A run that starts by sending `request` (system prompt, tools, opening message).
    pub fn new(request: ChatRequest, max_rounds: u32, compaction: Option<Compaction>) -> Self {
        AgentRun {
            request,
            max_rounds,
            rounds: 0,
            usage: Usage::default(),
            round_usage: Vec::new(),
            final_text: None,
            compaction: compaction.map(|c| (c.threshold, c.keep_recent)),
            compacted: 0,
            completed: false,
            cut_offs: 0,
            answer_without_tools: None,
            written_calls_refused: 0,
            answers_at_last_round: false,
            last_round_prepared: false,
            ended: None,
            stop: None,
        }
    }

    /// Makes the last model call the round limit allows without tools, the model told it
    /// is the last step: a model still calling tools then answers from what they returned
    /// instead of the run stopping as [`StopCause::MaxRounds`] with no answer.
    pub fn answering_at_last_round(mut self) -> Self {
        self.answers_at_last_round = true;
        self
    }

    /// What comes next.
    pub fn next_step(&mut self) -> Next<'_> {
        if self.stop.is_none()
            && let Some(reason) = &self.ended
        {
            self.stop = Some(StopCause::Ended(reason.clone()));
        }
        if self.stop.is_none() && self.completed {
            self.stop = Some(StopCause::Completed);
        }
        if self.stop.is_none() && self.rounds >= self.max_rounds && self.pending_calls().is_none() {
            self.stop = Some(StopCause::MaxRounds);
        }
        if self.stop.is_some() {
            return Next::Done;
        }
        if self.answers_at_last_round
            && !self.last_round_prepared
            && self.rounds + 1 >= self.max_rounds
            && self.pending_calls().is_none()
        {
            self.prepare_last_round();
        }
        if self.pending_calls().is_none() {
            // Everything sent so far is the prefix of the next call.
            self.request.cache_breakpoint = self.request.messages.len().checked_sub(1);
        }
        match self.pending_calls() {
            Some(calls) => Next::RunTools(calls),
            None => Next::CallModel(&self.request),
        }
    }

    /// Takes the model's answer: its tool calls become pending, or, with none, the run
    /// completes with its text.
    ///
    /// Three slips of small models are handled here. A turn that only repeats the
    /// previous turn's calls (which the driver refuses) gets its next answer asked for
    /// without tools. Tool calls written as text
    /// (`<tool_call>{"name": ..., "arguments": ...}</tool_call>`, or an answer that is only
    /// such an object) naming an offered tool are taken as calls; in an answer asked for
    /// without tools they are not run, and the model is asked once more for words, then
    /// the run stops as [`StopCause::NoAnswer`]. An answer cut off at the output-token
    /// limit is not taken as final: the model is asked again, shorter, up to twice in a
    /// row, then the run stops as [`StopCause::CutOff`].
    pub fn on_model_response(&mut self, mut response: ChatResponse) {
        self.rounds += 1;
        self.usage += response.usage;
        self.round_usage.push(response.usage);
        // An answer asked for without tools runs no tool, whatever it writes.
        let tools_forbidden = self.answer_without_tools.is_some();
        if let Some(choice) = self.answer_without_tools.take() {
            self.request.tool_choice = choice;
        }
        let mut calls_tools = response
            .content
            .iter()
            .any(|block| matches!(block, ContentBlock::ToolUse { .. }));
        let written = if calls_tools {
            Vec::new()
        } else {
            tool_calls_in_text(&response.text(), &self.request.tools, self.rounds)
        };
        // Calls written into an answer asked for without tools are not run, nor taken as
        // the answer.
        if tools_forbidden && !written.is_empty() {
            self.request
                .messages
                .push(Message::new(Role::Assistant, response.content));
            self.refuse_written_calls();
            return;
        }
        self.written_calls_refused = 0;
        if !written.is_empty() {
            tracing::warn!(
                calls = written.len(),
                "the model wrote its tool calls as text; they are run as calls"
            );
            response.content = written;
            calls_tools = true;
        }
        let cut_off = response.stop_reason == StopReason::MaxTokens;
        self.cut_offs = if cut_off { self.cut_offs + 1 } else { 0 };
        let text = (!calls_tools).then(|| response.text());
        self.request
            .messages
            .push(Message::new(Role::Assistant, response.content));
        let Some(text) = text else {
            // Every call repeats the previous turn's (each is refused): the model goes round
            // in circles, so its next answer is asked for without tools.
            if self
                .pending_calls()
                .is_some_and(|calls| calls.iter().all(|call| calls.repeats(&call)))
            {
                tracing::warn!(
                    "the model repeated all its previous calls; its next answer is asked for without tools"
                );
                self.answer_without_tools =
                    Some(self.request.tool_choice.replace(ToolChoice::None));
            }
            return;
        };
        if !cut_off {
            self.final_text = Some(text);
            self.completed = true;
            self.stop = Some(StopCause::Completed);
        } else if self.cut_offs <= CUT_OFF_REASKS {
            tracing::warn!(
                max_tokens = ?self.request.max_tokens,
                "the answer was cut off at the output-token limit; asking again, shorter"
            );
            self.request.messages.push(Message::user(CUT_OFF_NOTE));
        } else {
            self.stop = Some(StopCause::CutOff {
                max_tokens: self.request.max_tokens,
            });
        }
    }

    /// Withholds the tools from the last model call and tells the model why, in the user
    /// message it answers (the tool results, usually).
    fn prepare_last_round(&mut self) {
        self.last_round_prepared = true;
        tracing::info!(
            max_rounds = self.max_rounds,
            "the last step the round limit allows: the answer is asked for without tools"
        );
        let note = ContentBlock::text(LAST_ROUND_NOTE);
        match self.request.messages.last_mut() {
            Some(last) if last.role == Role::User => last.content.push(note),
            _ => self
                .request
                .messages
                .push(Message::new(Role::User, vec![note])),
        }
        if self.answer_without_tools.is_none() {
            self.answer_without_tools = Some(self.request.tool_choice.replace(ToolChoice::None));
        }
    }

    /// Asked to answer without tools, the model wrote tool calls as text: they are not run.
    /// It is asked again, told why, with its tools still withheld; past
    /// [`WRITTEN_CALL_REASKS`] the run stops without an answer.
    fn refuse_written_calls(&mut self) {
        self.written_calls_refused += 1;
        if self.written_calls_refused > WRITTEN_CALL_REASKS {
            tracing::warn!(
                "asked again for an answer in words, the model wrote tool calls again; the run stops without an answer"
            );
            self.stop = Some(StopCause::NoAnswer);
            return;
        }
        tracing::warn!(
            "asked to answer without tools, the model wrote tool calls as text; they are not run, and it is asked again for an answer in words"
        );
        self.request.messages.push(Message::user(NO_TOOLS_NOTE));
        self.answer_without_tools = Some(self.request.tool_choice.replace(ToolChoice::None));
    }

    /// Takes the results of the pending calls, in call order, and compacts the transcript
    /// if it grew past the threshold. Returns what compaction did, if anything.
    pub fn on_tool_results(&mut self, results: Vec<ContentBlock>) -> Option<(usize, usize)> {
        debug_assert_eq!(Some(results.len()), self.pending_calls().map(|c| c.len()));
        self.request
            .messages
            .push(Message::new(Role::User, results));
        let (threshold, keep_recent) = self.compaction?;
        let Compacted { removed, kept } = compact(
            &mut self.request.messages,
            Compaction {
                threshold,
                keep_recent,
            },
            self.compacted,
        )?;
        self.compacted += removed;
        Some((removed, kept))
    }

    /// The tool calls waiting for results: those of the last message, when it is the
    /// model's and calls tools. Derived from the transcript, so a restored run knows them.
    fn pending_calls(&self) -> Option<ToolCalls<'_>> {
        let (last, earlier) = self.request.messages.split_last()?;
        if last.role != Role::Assistant {
            return None;
        }
        let previous = earlier
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(|m| m.content.as_slice());
        let calls = ToolCalls {
            blocks: &last.content,
            previous,
        };
        (!calls.is_empty()).then_some(calls)
    }

    /// Ends the run (timeout, cancellation, an error); what was gathered is kept.
    pub fn stop(&mut self, cause: StopCause) {
        if self.stop.is_none() {
            self.stop = Some(cause);
        }
    }

    /// Ends the run for good, after the tool results of its round: a tool said the work
    /// is done or handed on ([`StopCause::Ended`]). Saved with the run.
    pub fn end(&mut self, reason: impl Into<String>) {
        if self.ended.is_none() {
            self.ended = Some(reason.into());
        }
    }

    /// Why the run ended, once it has.
    pub fn stop_cause(&self) -> Option<&StopCause> {
        self.stop.as_ref()
    }

    /// Whether the run is over for good: the model gave its final answer, a tool ended
    /// it, or the rounds ran out (a run stopped by a timeout, cancellation or an error
    /// can be resumed).
    pub fn is_finished(&self) -> bool {
        self.completed
            || self.ended.is_some()
            || (self.rounds >= self.max_rounds && self.pending_calls().is_none())
    }

    /// Model calls made.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// Tokens used so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The final answer, once the model gave one.
    pub fn final_text(&self) -> Option<&str> {
        self.final_text.as_deref()
    }

    /// The transcript so far.
    pub fn transcript(&self) -> &[Message] {
        &self.request.messages
    }

    pub(crate) fn into_parts(self) -> RunParts {
        let stop = match self.stop {
            Some(stop) => stop,
            None if self.ended.is_some() => StopCause::Ended(self.ended.unwrap_or_default()),
            None if self.completed => StopCause::Completed,
            None if self.rounds >= self.max_rounds => StopCause::MaxRounds,
            None => StopCause::Cancelled,
        };
        RunParts {
            transcript: self.request.messages,
            usage: self.usage,
            round_usage: self.round_usage,
            rounds: self.rounds,
            final_text: self.final_text,
            stop,
        }
    }
}

pub(crate) struct RunParts {
    pub(crate) transcript: Vec<Message>,
    pub(crate) usage: Usage,
    pub(crate) round_usage: Vec<Usage>,
    pub(crate) rounds: u32,
    pub(crate) final_text: Option<String>,
    pub(crate) stop: StopCause,
}
