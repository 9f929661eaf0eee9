//! Who an agent is: its name within a product domain.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An agent's name and the product domain it belongs to. The bus routes on
/// `(session, domain, name)`, so two products can both have a `writer`.
///
/// ```
/// let id = agent_runtime::AgentIdentity::new("strategist", "resume");
/// assert_eq!(id.to_string(), "resume/strategist");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AgentIdentity {
    /// Unique within its domain (`strategist`, `craftsman`).
    pub name: String,
    /// The product domain (`resume`, `cover_letter`).
    pub domain: String,
}

impl AgentIdentity {
    /// An identity.
    pub fn new(name: impl Into<String>, domain: impl Into<String>) -> Self {
        AgentIdentity {
            name: name.into(),
            domain: domain.into(),
        }
    }
}

impl fmt::Display for AgentIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.domain, self.name)
    }
}
