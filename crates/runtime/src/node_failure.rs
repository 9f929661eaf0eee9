//! How a node failure affects a graph run, and the record of one: shared by the graph
//! (which decides by it) and the checkpoints (which keep it).

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a node failure affects the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeErrorKind {
    /// The run cannot go on: it ends `Failed`.
    Fatal,
    /// Worth reporting, not worth stopping for: the failure is recorded in
    /// the run result's `errors` and the run follows the node's
    /// outgoing edge as if it had succeeded.
    Recoverable,
    /// A cost, budget or other limit was reached: the run ends
    /// `Partial`, keeping the state gathered so far.
    Limit,
}

impl NodeErrorKind {
    /// `"fatal"`, `"recoverable"` or `"limit"`.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeErrorKind::Fatal => "fatal",
            NodeErrorKind::Recoverable => "recoverable",
            NodeErrorKind::Limit => "limit",
        }
    }
}

impl fmt::Display for NodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A node failure recorded in a run's result (and in its checkpoints).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeFailure {
    /// The node that failed.
    pub node: String,
    /// Its step number in the run (1 for the first node run).
    pub step: u64,
    /// How the failure affected the run.
    pub kind: NodeErrorKind,
    /// The error message.
    pub message: String,
}
