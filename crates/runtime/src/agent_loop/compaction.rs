//! Shortening a long transcript without separating a tool call from its result.

use crate::config::Compaction;
use agent_llm::{ContentBlock, Message, Role};

/// Starts the note compaction leaves in the opening message.
const NOTE_PREFIX: &str = "[Context note: ";

/// What a compaction did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Compacted {
    pub(crate) removed: usize,
    pub(crate) kept: usize,
}

/// Past the threshold, keeps the opening message and the recent tail, and notes in the
/// opening message how many messages were removed. The tail always starts with an
/// assistant message, so every tool result kept still follows the call it answers.
pub(crate) fn compact(
    messages: &mut Vec<Message>,
    policy: Compaction,
    earlier: usize,
) -> Option<Compacted> {
    if messages.len() <= policy.threshold {
        return None;
    }
    let mut cut = messages.len().saturating_sub(policy.keep_recent).max(1);
    while cut < messages.len() && messages[cut].role != Role::Assistant {
        cut += 1;
    }
    if cut >= messages.len() || cut <= 1 {
        return None;
    }
    messages.drain(1..cut);
    let removed = cut - 1;
    let note = format!(
        "{NOTE_PREFIX}{} earlier messages were removed to keep the conversation short; \
         results gathered so far are kept in the scratchpad.]",
        earlier + removed
    );
    let opening = &mut messages[0].content;
    match opening.last_mut() {
        Some(ContentBlock::Text { text }) if text.starts_with(NOTE_PREFIX) => *text = note,
        _ => opening.push(ContentBlock::text(note)),
    }
    Some(Compacted {
        removed,
        kept: messages.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round(i: usize) -> [Message; 2] {
        [
            Message::new(
                Role::Assistant,
                vec![ContentBlock::ToolUse {
                    id: format!("c{i}"),
                    name: "t".into(),
                    input: json!({}),
                }],
            ),
            Message::new(
                Role::User,
                vec![ContentBlock::tool_result(format!("c{i}"), "ok")],
            ),
        ]
    }

    fn transcript(rounds: usize) -> Vec<Message> {
        let mut messages = vec![Message::user("instruction")];
        for i in 0..rounds {
            messages.extend(round(i));
        }
        messages
    }

    fn no_orphans(messages: &[Message]) -> bool {
        let mut open = std::collections::HashSet::new();
        messages.iter().all(|m| {
            m.content.iter().all(|b| match b {
                ContentBlock::ToolUse { id, .. } => open.insert(id.clone()),
                ContentBlock::ToolResult { tool_use_id, .. } => open.contains(tool_use_id),
                _ => true,
            })
        })
    }

    #[test]
    fn keeps_opening_and_tail_without_orphans() {
        for keep in 15..=22 {
            let mut messages = transcript(20);
            let policy = Compaction {
                threshold: 30,
                keep_recent: keep,
            };
            let done = compact(&mut messages, policy, 0).unwrap();
            assert_eq!(messages[0].content[0], ContentBlock::text("instruction"));
            assert_eq!(messages[1].role, Role::Assistant);
            assert!(no_orphans(&messages), "keep_recent {keep}");
            assert_eq!(done.kept, messages.len());
            assert!(messages.len() <= keep + 1);
        }
    }

    #[test]
    fn notes_are_replaced_not_stacked() {
        let mut messages = transcript(20);
        let policy = Compaction::default();
        let first = compact(&mut messages, policy, 0).unwrap();
        messages.extend(transcript(10).into_iter().skip(1));
        let second = compact(&mut messages, policy, first.removed).unwrap();
        assert_eq!(messages[0].content.len(), 2);
        let note = messages[0].text();
        assert!(
            note.contains(&format!(
                "{} earlier messages",
                first.removed + second.removed
            )),
            "{note}"
        );
    }

    #[test]
    fn short_transcripts_are_left_alone() {
        let mut messages = transcript(10);
        assert!(compact(&mut messages, Compaction::default(), 0).is_none());
        assert_eq!(messages.len(), 21);
    }
}
