//! The real small model this machine runs (`../shared/tools/local-llm`), started when it
//! is not running, for the live smoke tests. A test that needs it fails, saying why,
//! when it cannot start.

use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// The local model server has one slot: live tests take turns (the tests of one process
/// here; across processes, nextest's `local-model` group in `.config/nextest.toml`).
static TURN: Mutex<()> = Mutex::new(());

/// The local model's environment (`LLM_PROVIDER`, `OPENAI_BASE_URL`, `OPENAI_API_KEY`,
/// `LOCAL_LLM_MODEL`), and this test's turn at the server.
pub struct LocalModel {
    /// The variables to run a program against it with.
    pub env: Vec<(String, String)>,
    _turn: MutexGuard<'static, ()>,
}

impl LocalModel {
    /// The id of the model it serves.
    pub fn model_id(&self) -> &str {
        self.var("LOCAL_LLM_MODEL")
    }

    /// One of its variables.
    pub fn var(&self, name: &str) -> &str {
        self.env
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
            .unwrap_or_else(|| panic!("local-llm did not set {name}: {:?}", self.env))
    }
}

/// Starts the local model unless it runs (`local-llm start` installs it the first time)
/// and waits for this test's turn.
pub fn local_model() -> LocalModel {
    let turn = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/tools/local-llm/local-llm");
    assert!(
        tool.exists(),
        "{} is missing: the live tests need ../shared beside the workspace",
        tool.display()
    );
    let out = Command::new(&tool)
        .arg("start")
        .output()
        .expect("local-llm runs");
    assert!(
        out.status.success(),
        "the local model could not start: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8_lossy(&out.stdout);
    let env = printed
        .lines()
        .filter_map(|line| line.strip_prefix("export "))
        .flat_map(|line| line.split_whitespace())
        .filter_map(|pair| pair.split_once('='))
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect();
    LocalModel { env, _turn: turn }
}
