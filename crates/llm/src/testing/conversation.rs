//! Reading the conversation a test double is asked about.

use crate::types::{ContentBlock, Message, Role};

/// The name of the tool an assistant message in `earlier` called with id `call_id`,
/// looking from the newest message back; `None` when no assistant made that call.
pub(crate) fn called_tool<'m>(earlier: &'m [Message], call_id: &str) -> Option<&'m str> {
    earlier
        .iter()
        .rev()
        .filter(|message| message.role == Role::Assistant)
        .flat_map(|message| message.content.iter())
        .find_map(|block| match block {
            ContentBlock::ToolUse { id, name, .. } if id == call_id => Some(name.as_str()),
            _ => None,
        })
}
