//! [`TextEdit`]: a JSON text stored as what changed since the previous one.
//!
//! A node's progress (its agent runs, saved after every round) is the previous
//! checkpoint's with a round appended to one transcript and a few counters moved on. Its
//! text keeps the previous text's beginning (everything up to the end of the transcript
//! so far) and its end (the agents after it, the node's steps), so a delta keeps only the
//! bytes between: the round's messages and the counters, whatever the transcript's
//! length.

use serde::{Deserialize, Serialize};

use super::JsonText;

/// The text `base[..keep_start] + insert + base[base.len() - keep_end..]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TextEdit {
    /// Bytes kept from the beginning of the previous text.
    keep_start: usize,
    /// Bytes kept from the end of the previous text.
    keep_end: usize,
    /// What replaces the bytes between.
    insert: String,
}

/// Bytes an edit adds around its insert when serialized:
/// `{"keep_start":,"keep_end":,"insert":""}` and its digits.
const EDIT_OVERHEAD: usize = 60;

impl TextEdit {
    /// The edit from `base` to `text`, when storing it is shorter than storing `text`.
    pub(crate) fn between(base: &str, text: &str) -> Option<Self> {
        let keep_start = common_prefix(base.as_bytes(), text.as_bytes());
        // Both texts agree on their first `keep_start` bytes, so a char boundary of one
        // is one of the other.
        let keep_start = floor_char_boundary(text, keep_start);
        let most = base.len().min(text.len()) - keep_start;
        let keep_end = common_suffix(
            &base.as_bytes()[keep_start..],
            &text.as_bytes()[keep_start..],
        )
        .min(most);
        let keep_end = text.len() - ceil_char_boundary(text, text.len() - keep_end);
        let insert = &text[keep_start..text.len() - keep_end];
        // Escaping can double an insert's length (mostly `"` in JSON text).
        if insert.len() * 2 + EDIT_OVERHEAD >= text.len() {
            return None;
        }
        Some(Self {
            keep_start,
            keep_end,
            insert: insert.to_owned(),
        })
    }

    /// The text this edit makes of `base`.
    ///
    /// Errors: a description of what does not fit when `base` is not the text the edit
    /// was made from (too short, or the result is not JSON).
    pub(crate) fn apply(&self, base: &JsonText) -> Result<JsonText, String> {
        let base = base.as_str();
        let kept = self.keep_start.checked_add(self.keep_end);
        let (Some(start), Some(end)) = (
            base.get(..self.keep_start),
            kept.filter(|kept| *kept <= base.len())
                .and_then(|_| base.get(base.len() - self.keep_end..)),
        ) else {
            return Err(format!(
                "the progress edit keeps {} + {} bytes of a text of {}",
                self.keep_start,
                self.keep_end,
                base.len()
            ));
        };
        let mut text = String::with_capacity(start.len() + self.insert.len() + end.len());
        text.push_str(start);
        text.push_str(&self.insert);
        text.push_str(end);
        JsonText::from_string(text)
            .map_err(|error| format!("the progress edit does not make JSON: {error}"))
    }

    /// About the length of the edit serialized (its insert's escapes estimated).
    pub(crate) fn approx_len(&self) -> usize {
        let quotes = self.insert.bytes().filter(|b| *b == b'"').count();
        self.insert.len() + quotes + EDIT_OVERHEAD
    }
}

/// How many bytes `a` and `b` begin with in common.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 64;
    let len = a.len().min(b.len());
    let mut at = 0;
    // Whole chunks compare as slices (memcmp); the differing one byte by byte.
    while at + CHUNK <= len && a[at..at + CHUNK] == b[at..at + CHUNK] {
        at += CHUNK;
    }
    at + a[at..len]
        .iter()
        .zip(&b[at..len])
        .take_while(|(x, y)| x == y)
        .count()
}

/// How many bytes `a` and `b` end with in common.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 64;
    let len = a.len().min(b.len());
    let (a_end, b_end) = (a.len(), b.len());
    let mut at = 0;
    while at + CHUNK <= len
        && a[a_end - at - CHUNK..a_end - at] == b[b_end - at - CHUNK..b_end - at]
    {
        at += CHUNK;
    }
    at + a[..a_end - at]
        .iter()
        .rev()
        .zip(b[..b_end - at].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// The greatest char boundary of `text` at or before `at`.
fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The least char boundary of `text` at or after `at`.
fn ceil_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(value: serde_json::Value) -> JsonText {
        JsonText::of(&value).unwrap()
    }

    fn transcript(rounds: usize) -> serde_json::Value {
        let messages: Vec<_> = (0..rounds)
            .map(|n| json!({"role": "assistant", "text": format!("round {n}: é ü 漢字 🦀 done")}))
            .collect();
        json!({
            "start_state": {"resume": "x".repeat(2_000)},
            "agents": {
                "a#1": {"run": {"messages": messages, "rounds": rounds}},
                "b#1": {"run": {"messages": ["later"], "rounds": 1}},
            },
        })
    }

    #[test]
    fn an_appended_round_is_stored_as_the_round_and_its_counters() {
        let (before, after) = (text(transcript(8)), text(transcript(9)));
        let edit = TextEdit::between(before.as_str(), after.as_str()).unwrap();
        assert!(edit.insert.contains("round 8"), "{edit:?}");
        assert!(!edit.insert.contains("round 7"), "{edit:?}");
        assert!(edit.insert.len() < 120, "{edit:?}");
        assert_eq!(edit.apply(&before).unwrap(), after);
        let stored = serde_json::to_string(&edit).unwrap();
        assert!(stored.len() <= edit.approx_len(), "{stored}");
    }

    #[test]
    fn edits_cut_only_at_char_boundaries() {
        // The texts differ inside a multibyte char at both ends of the change.
        let cases = [
            ("漢字x漢字", "漢子y漢字"),
            ("a🦀b", "a🦁b"),
            ("éé", "éè"),
            ("", "ü"),
        ];
        for (before, after) in cases {
            let (before, after) = (
                text(json!([before, "pad".repeat(40)])),
                text(json!([after, "pad".repeat(40)])),
            );
            let edit = TextEdit::between(before.as_str(), after.as_str()).unwrap();
            assert_eq!(edit.apply(&before).unwrap(), after, "{edit:?}");
        }
    }

    #[test]
    fn a_text_changed_throughout_is_not_an_edit() {
        let (before, after) = (
            text(json!({"a": "x".repeat(50)})),
            text(json!({"b": "y".repeat(50)})),
        );
        assert_eq!(TextEdit::between(before.as_str(), after.as_str()), None);
    }

    #[test]
    fn an_unchanged_text_is_an_empty_edit() {
        let before = text(transcript(3));
        let edit = TextEdit::between(before.as_str(), before.as_str()).unwrap();
        assert_eq!(edit.insert, "");
        assert_eq!(edit.apply(&before).unwrap(), before);
    }

    #[test]
    fn an_edit_on_another_text_is_an_error_not_a_panic() {
        let (before, after) = (text(transcript(8)), text(transcript(9)));
        let edit = TextEdit::between(before.as_str(), after.as_str()).unwrap();
        let short = text(json!([1]));
        assert!(edit.apply(&short).unwrap_err().contains("keeps"));
        let other = text(json!({"other": "z".repeat(4_000)}));
        assert!(edit.apply(&other).is_err());
        let huge = TextEdit {
            keep_start: usize::MAX,
            keep_end: 2,
            insert: String::new(),
        };
        assert!(huge.apply(&before).is_err());
    }
}
