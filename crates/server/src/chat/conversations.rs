//! Conversations kept between requests, so a client that sends only its newest message
//! still continues: the history per user and conversation key in a [`DocumentStore`].

use agent_runtime::documents::DocumentStore;
use agent_runtime::sessions::StoreError;
use serde_json::Value;

use super::{ChatMessage, ChatRole};

/// The namespace conversations are kept under.
const NAMESPACE: &str = "chat.conversations";

/// The most messages kept per conversation (the oldest go first).
const MAX_KEPT: usize = 200;

/// One user's conversation in the store.
pub(crate) struct Conversation<'a> {
    store: &'a dyn DocumentStore,
    key: String,
}

impl<'a> Conversation<'a> {
    pub(crate) fn new(store: &'a dyn DocumentStore, user: &str, conversation: &str) -> Self {
        // Length-prefixed, so no pair of user and conversation reads as another.
        Conversation {
            store,
            key: format!("{}:{user}:{conversation}", user.len()),
        }
    }

    /// The conversation to answer: the client's own history when it sent one (it holds
    /// an assistant message), else the stored one followed by what was sent.
    pub(crate) async fn continued(
        &self,
        sent: Vec<ChatMessage>,
    ) -> Result<Vec<ChatMessage>, StoreError> {
        if sent.iter().any(|m| m.role == ChatRole::Assistant) {
            return Ok(sent);
        }
        let mut history = self.load().await?;
        if history.is_empty() {
            return Ok(sent);
        }
        // The client's instructions of this request stand first; stored ones are dropped.
        let (instructions, said): (Vec<_>, Vec<_>) =
            sent.into_iter().partition(|m| m.role == ChatRole::System);
        history.retain(|m| m.role != ChatRole::System);
        Ok(instructions
            .into_iter()
            .chain(history)
            .chain(said)
            .collect())
    }

    /// Keeps `messages` followed by the answer.
    pub(crate) async fn save(
        &self,
        mut messages: Vec<ChatMessage>,
        answer: &str,
    ) -> Result<(), StoreError> {
        messages.push(ChatMessage::new(ChatRole::Assistant, answer));
        let skip = messages.len().saturating_sub(MAX_KEPT);
        let kept = serde_json::to_value(&messages[skip..])
            .map_err(|e| StoreError::Corrupt(format!("a conversation is not JSON: {e}")))?;
        self.store.put(NAMESPACE, &self.key, &kept).await
    }

    async fn load(&self) -> Result<Vec<ChatMessage>, StoreError> {
        match self.store.get(NAMESPACE, &self.key).await? {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(value) => serde_json::from_value(value)
                .map_err(|e| StoreError::Corrupt(format!("conversation {}: {e}", self.key))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_runtime::documents::InMemoryDocumentStore;

    fn user(text: &str) -> ChatMessage {
        ChatMessage::new(ChatRole::User, text)
    }

    #[tokio::test]
    async fn the_last_message_alone_continues_the_stored_conversation() {
        let store = InMemoryDocumentStore::default();
        let ada = Conversation::new(&store, "ada", "c1");
        let first = ada.continued(vec![user("find jobs")]).await.unwrap();
        ada.save(first, "found 3").await.unwrap();

        let second = ada.continued(vec![user("save the first")]).await.unwrap();
        assert_eq!(
            second,
            vec![
                user("find jobs"),
                ChatMessage::new(ChatRole::Assistant, "found 3"),
                user("save the first")
            ]
        );
        // Another user with the same conversation key starts afresh.
        let bob = Conversation::new(&store, "bob", "c1");
        assert_eq!(
            bob.continued(vec![user("hi")]).await.unwrap(),
            vec![user("hi")]
        );
    }

    #[tokio::test]
    async fn a_client_that_sends_its_history_is_believed() {
        let store = InMemoryDocumentStore::default();
        let ada = Conversation::new(&store, "ada", "c1");
        ada.save(vec![user("old")], "old answer").await.unwrap();
        let sent = vec![
            user("new"),
            ChatMessage::new(ChatRole::Assistant, "new answer"),
            user("more"),
        ];
        assert_eq!(ada.continued(sent.clone()).await.unwrap(), sent);
    }
}
