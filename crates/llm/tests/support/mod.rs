//! Helpers shared by the wire tests: where recorded bodies and our fixtures live.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

pub mod doubles;
pub mod openai;

/// A file under `../shared/realdata` (recorded real vendor bodies, read in place).
pub fn realdata(relative: &str) -> PathBuf {
    let root = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/realdata"
    ));
    let path = root.join(relative);
    assert!(
        path.exists(),
        "recorded body {} is missing: the wire tests read ../shared/realdata beside the repository",
        path.display()
    );
    path
}

/// A file under the workspace's `fixtures/`.
pub fn fixture(relative: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures")).join(relative)
}

/// Reads a file to a string.
pub fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Reads a JSON file.
pub fn read_json(path: PathBuf) -> serde_json::Value {
    serde_json::from_str(&read(path)).unwrap()
}
