//! Finding a JSON document inside a model's prose.

use serde_json::Value;

/// Finds the JSON value a model meant to give, tolerating prose around it and Markdown
/// code fences: the whole text if it parses, else the first fenced block that parses,
/// else the first balanced `{...}` or `[...]` that parses.
///
/// ```
/// use agent_llm::structured::find_json;
/// let text = "Sure! Here it is:\n```json\n{\"answer\": \"42\"}\n```\nAnything else?";
/// assert_eq!(find_json(text).unwrap()["answer"], "42");
/// assert_eq!(find_json("The result is {\"a\": [1, 2]} as requested.").unwrap()["a"][1], 2);
/// assert!(find_json("no json here").is_none());
/// ```
pub fn find_json(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if let Ok(value) = serde_json::from_str(trimmed) {
        return Some(value);
    }
    fenced_blocks(trimmed)
        .find_map(|block| serde_json::from_str(block.trim()).ok())
        .or_else(|| balanced_candidates(trimmed).find_map(|c| serde_json::from_str(c).ok()))
}

/// The contents of Markdown code fences, language tag removed.
fn fenced_blocks(text: &str) -> impl Iterator<Item = &str> {
    text.split("```")
        .skip(1)
        .step_by(2)
        .map(|block| match block.split_once('\n') {
            Some((tag, rest)) if !tag.trim_start().starts_with(['{', '[']) => rest,
            _ => block,
        })
}

/// How many `{` or `[` a text is searched from for a balanced value: each search may scan
/// to the end of the text, so an answer of unbalanced brackets costs at most this many
/// scans, not one per bracket (100,000 `[` took minutes).
const MAX_CANDIDATES: usize = 64;

/// Every substring that starts at `{` or `[` and ends at its matching bracket (of the
/// first [`MAX_CANDIDATES`] openings).
fn balanced_candidates(text: &str) -> impl Iterator<Item = &str> {
    text.char_indices()
        .filter(|(_, c)| *c == '{' || *c == '[')
        .take(MAX_CANDIDATES)
        .filter_map(move |(start, _)| {
            matching_end(&text[start..]).map(|end| &text[start..start + end])
        })
}

/// Byte length of the balanced value at the start of `text`, skipping brackets in strings.
fn matching_end(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn brackets_inside_strings_do_not_confuse_the_scanner() {
        let text = r#"Note {not json}. Result: {"text": "a } tricky ] \" string", "n": 1} done"#;
        assert_eq!(
            find_json(text).unwrap(),
            json!({"text": "a } tricky ] \" string", "n": 1})
        );
    }

    #[test]
    fn fence_without_language_tag() {
        assert_eq!(find_json("```\n[1,2]\n```").unwrap(), json!([1, 2]));
        assert_eq!(find_json("```{\"a\":1}```").unwrap(), json!({"a": 1}));
    }

    #[test]
    fn unbalanced_text_yields_none() {
        assert!(find_json("{\"a\": ").is_none());
    }
}
