//! What the chat's suites share: the fixtures, services on given stores with the SerpAPI
//! replay behind the real client, and a conversation driver.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;

use agent_llm::testing::HashedEmbeddings;
use agent_runtime::documents::{DocumentStore, InMemoryDocumentStore};
use agent_runtime::vectors::VectorStore;
use agent_server::chat::{ChatAgent, ChatMessage, ChatProgress, ChatReply, ChatRole, ChatTurn};
use job_agent_chat::dry_run::{REPLAY_KEY, SerpApiReplay};
use job_agent_chat::notify::{ConsoleNotifier, Notifications};
use job_agent_chat::providers::SerpApiProvider;
use job_agent_chat::{ChatStore, Services};
use job_agent_chat::{JOBS_COLLECTION, Ranking};
use job_capabilities::retrieval::HybridRetriever;
use tokio_util::sync::CancellationToken;

/// `fixtures/job-agent-chat`.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/job-agent-chat")
}

/// An in-memory vector store (the SQLite one, in memory).
pub async fn memory_vectors() -> Arc<dyn VectorStore> {
    Arc::new(
        agent_backends::SqliteSessionStore::in_memory()
            .await
            .unwrap()
            .vectors(),
    )
}

/// Services on the given stores: SerpAPI replayed locally and read by the real client,
/// hashed embeddings, the console channel.
pub async fn services_on(
    documents: Arc<dyn DocumentStore>,
    vectors: Arc<dyn VectorStore>,
) -> (Arc<Services>, SerpApiReplay) {
    let replay = SerpApiReplay::start(&fixtures().join("serpapi"))
        .await
        .unwrap();
    let retriever = HybridRetriever::new(
        Arc::new(HashedEmbeddings::new(256)),
        vectors,
        JOBS_COLLECTION,
    );
    let services = Services {
        store: ChatStore::new(documents),
        provider: Arc::new(SerpApiProvider::new(replay.base.clone(), REPLAY_KEY)),
        ranking: Ranking::new(Some(retriever)),
        notifications: Notifications::new().with(Arc::new(ConsoleNotifier)),
        upload_root: None,
    };
    (Arc::new(services), replay)
}

/// Services in memory.
pub async fn services() -> (Arc<Services>, SerpApiReplay) {
    services_on(
        Arc::new(InMemoryDocumentStore::default()),
        memory_vectors().await,
    )
    .await
}

/// A conversation with a chat agent, as the front would hold it.
pub struct Conversation {
    pub user: String,
    pub messages: Vec<ChatMessage>,
    pub notes: Vec<String>,
}

impl Conversation {
    pub fn new(user: &str) -> Self {
        Conversation {
            user: user.to_owned(),
            messages: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Says `text`; the reply (kept in the conversation) and this turn's progress notes.
    pub async fn say(&mut self, agent: &dyn ChatAgent, text: &str) -> ChatReply {
        self.messages.push(ChatMessage::new(ChatRole::User, text));
        let (progress, mut notes) = ChatProgress::channel();
        let turn = ChatTurn {
            tenant: agent_server::auth::DEFAULT_TENANT.into(),
            user: self.user.clone(),
            conversation: Some("c1".into()),
            model: "job-agent".into(),
            messages: self.messages.clone(),
            cancellation: CancellationToken::new(),
        };
        let reply = agent.reply(turn, progress).await.unwrap();
        self.notes.clear();
        while let Ok(note) = notes.try_recv() {
            self.notes.push(note);
        }
        self.messages
            .push(ChatMessage::new(ChatRole::Assistant, reply.text.clone()));
        reply
    }
}
