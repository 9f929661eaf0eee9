//! How much of a request repeats the one before it: the measure of what prompt caching
//! can save.
//!
//! Providers cache a prompt's prefix: Anthropic up to each `cache_control` mark,
//! OpenAI-compatible servers on their own. Either way only a byte-identical prefix is
//! read back, in the order the providers lay a prompt out: tools, then the system prompt,
//! then the messages. A [`PromptLayout`] is that order as a list of parts (each tool, the
//! system prompt, each message's role and each of its blocks), every part kept as the
//! hash and length of its JSON, so comparing two requests costs no copy of either.

use std::hash::{DefaultHasher, Hasher as _};
use std::io;

use serde::Serialize;

use crate::types::ChatRequest;

/// One part of a prompt: the hash and the length of its JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Part {
    hash: u64,
    chars: u64,
}

/// A request's prompt as providers cache it: tools, system, messages, part by part.
///
/// ```
/// use agent_llm::{ChatRequest, Message, PromptLayout};
/// let first = ChatRequest::from_prompt("Plan the trip.").with_system("You plan trips.");
/// let mut second = first.clone();
/// second.messages.push(Message::assistant("Where to?"));
/// second.messages.push(Message::user("Lisbon."));
/// let (before, after) = (PromptLayout::of(&first), PromptLayout::of(&second));
/// // All of the first request is the start of the second.
/// assert_eq!(after.repeated_chars(&before), before.chars());
/// assert!(after.repeated_chars(&before) < after.chars());
/// // Told the second call's prompt tokens, the share of them the first call sent too.
/// let repeated = after.repeated_tokens(&before, 1_000);
/// assert!(repeated > 0 && repeated < 1_000);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptLayout {
    parts: Vec<Part>,
    chars: u64,
}

impl PromptLayout {
    /// The layout of `request`.
    pub fn of(request: &ChatRequest) -> Self {
        let mut layout = PromptLayout::default();
        for tool in request.tools.iter() {
            layout.push(tool);
        }
        if let Some(system) = &request.system {
            layout.push(system);
        }
        for message in &request.messages {
            layout.push(&message.role);
            for block in &message.content {
                layout.push(block);
            }
        }
        layout
    }

    fn push(&mut self, part: &impl Serialize) {
        let mut sink = HashingSink::default();
        // Writing to the sink cannot fail, and the request's types always serialize.
        if serde_json::to_writer(&mut sink, part).is_ok() {
            let part = Part {
                hash: sink.hasher.finish(),
                chars: sink.chars,
            };
            self.chars += part.chars;
            self.parts.push(part);
        }
    }

    /// The length of the prompt's parts, in bytes of JSON.
    pub fn chars(&self) -> u64 {
        self.chars
    }

    /// How many of this prompt's bytes, from its start, are the same as `previous`'s:
    /// the parts up to the first that differs.
    pub fn repeated_chars(&self, previous: &PromptLayout) -> u64 {
        self.parts
            .iter()
            .zip(&previous.parts)
            .take_while(|(now, before)| now == before)
            .map(|(now, _)| now.chars)
            .sum()
    }

    /// Of `prompt_tokens`, this call's input tokens, about how many repeat `previous`'s
    /// prefix (in proportion to the bytes that do).
    pub fn repeated_tokens(&self, previous: &PromptLayout, prompt_tokens: u64) -> u64 {
        if self.chars == 0 {
            return 0;
        }
        let share = self.repeated_chars(previous) as f64 / self.chars as f64;
        (prompt_tokens as f64 * share).round() as u64
    }
}

/// An `io::Write` that hashes and counts what is written, keeping none of it.
#[derive(Default)]
struct HashingSink {
    hasher: DefaultHasher,
    chars: u64,
}

impl io::Write for HashingSink {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.hasher.write(bytes);
        self.chars += bytes.len() as u64;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ContentBlock, Message, Role, ToolDefinition};
    use serde_json::json;

    fn request() -> ChatRequest {
        ChatRequest::from_prompt("Find jobs.")
            .with_system("You search.")
            .with_tool(ToolDefinition::new(
                "search",
                "Search.",
                json!({"type": "object"}),
            ))
    }

    #[test]
    fn a_changed_system_prompt_repeats_only_the_tools() {
        let before = PromptLayout::of(&request());
        let after = PromptLayout::of(&request().with_system("You search, today 2026-11-29."));
        let tools = PromptLayout::of(&ChatRequest::new(Vec::new()).with_tool(ToolDefinition::new(
            "search",
            "Search.",
            json!({"type": "object"}),
        )));
        assert_eq!(after.repeated_chars(&before), tools.chars());
    }

    #[test]
    fn a_block_added_to_the_last_message_keeps_the_blocks_before_it() {
        let before = request();
        let mut after = before.clone();
        after.messages[0]
            .content
            .push(ContentBlock::text("Only in Berlin."));
        let (b, a) = (PromptLayout::of(&before), PromptLayout::of(&after));
        assert_eq!(a.repeated_chars(&b), b.chars());
        assert_eq!(a.repeated_tokens(&b, 0), 0);
    }

    #[test]
    fn a_rewritten_early_message_ends_the_repeated_prefix_there() {
        let mut before = request();
        before.messages.push(Message::new(
            Role::Assistant,
            vec![ContentBlock::text("On it.")],
        ));
        let mut after = before.clone();
        after.messages[0] = Message::user("Find remote jobs.");
        let (b, a) = (PromptLayout::of(&before), PromptLayout::of(&after));
        let head = PromptLayout::of(
            &ChatRequest::new(vec![Message::user("x")])
                .with_system("You search.")
                .with_tool(ToolDefinition::new(
                    "search",
                    "Search.",
                    json!({"type": "object"}),
                )),
        );
        // Tools, system and the first message's role repeat; its text does not.
        assert_eq!(
            a.repeated_chars(&b),
            head.chars() - "{\"type\":\"text\",\"text\":\"x\"}".len() as u64
        );
        assert_eq!(
            PromptLayout::of(&before).repeated_chars(&PromptLayout::default()),
            0
        );
    }
}
