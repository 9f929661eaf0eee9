//! Tool calls a model wrote as text instead of through the tools interface (small local
//! models do): `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, or an answer
//! that is only such a JSON object, naming a tool the request offers.

use agent_llm::structured::find_json;
use agent_llm::{ContentBlock, ToolDefinition};
use serde_json::Value;

/// The tool calls written in `text`, as `ToolUse` blocks with ids `text_call_{round}_{n}`;
/// empty when there are none or one names a tool not offered (then the text stands).
pub(crate) fn tool_calls_in_text(
    text: &str,
    tools: &[ToolDefinition],
    round: u32,
) -> Vec<ContentBlock> {
    let tagged: Vec<&str> = text
        .split("<tool_call>")
        .skip(1)
        .map(|rest| rest.split("</tool_call>").next().unwrap_or(rest))
        .collect();
    let candidates: Vec<Value> = if tagged.is_empty() {
        // Only an answer that is nothing but the call: prose that quotes JSON stays prose.
        let trimmed = text.trim();
        let bare = trimmed.starts_with('{') || trimmed.starts_with("```");
        bare.then(|| find_json(trimmed))
            .flatten()
            .into_iter()
            .collect()
    } else {
        tagged.iter().filter_map(|call| find_json(call)).collect()
    };
    let calls: Option<Vec<ContentBlock>> = candidates
        .into_iter()
        .enumerate()
        .map(|(n, call)| {
            let name = call.get("name")?.as_str()?;
            tools.iter().find(|tool| tool.name == name)?;
            let input = call
                .get("arguments")
                .or_else(|| call.get("parameters"))
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default()));
            // Some models write the arguments as a JSON string.
            let input = match input {
                Value::String(raw) => find_json(&raw).unwrap_or(Value::String(raw)),
                other => other,
            };
            Some(ContentBlock::ToolUse {
                id: format!("text_call_{round}_{}", n + 1),
                name: name.to_owned(),
                input,
            })
        })
        .collect();
    calls.unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<ToolDefinition> {
        vec![ToolDefinition::new(
            "get_time",
            "The time.",
            json!({"type": "object"}),
        )]
    }

    fn names(blocks: &[ContentBlock]) -> Vec<(String, Value)> {
        blocks
            .iter()
            .map(|block| match block {
                ContentBlock::ToolUse { id, input, .. } => (id.clone(), input.clone()),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn tagged_and_bare_calls_of_offered_tools_are_read() {
        let text = "I'll check.\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}\n</tool_call>";
        assert_eq!(
            names(&tool_calls_in_text(text, &tools(), 2)),
            [("text_call_2_1".to_owned(), json!({"timezone": "UTC"}))]
        );
        let bare = "```json\n{\"name\": \"get_time\", \"arguments\": \"{\\\"timezone\\\": \\\"Asia/Tokyo\\\"}\"}\n```";
        assert_eq!(
            names(&tool_calls_in_text(bare, &tools(), 1)),
            [(
                "text_call_1_1".to_owned(),
                json!({"timezone": "Asia/Tokyo"})
            )]
        );
    }

    #[test]
    fn prose_and_unknown_tools_are_left_as_text() {
        let prose = "The call would be {\"name\": \"get_time\"} but I know the answer: noon.";
        assert!(tool_calls_in_text(prose, &tools(), 1).is_empty());
        let unknown = "<tool_call>{\"name\": \"delete_all\", \"arguments\": {}}</tool_call>";
        assert!(tool_calls_in_text(unknown, &tools(), 1).is_empty());
        assert!(tool_calls_in_text("It is noon.", &tools(), 1).is_empty());
    }
}
