//! API keys that never print.

use secrecy::{ExposeSecret, SecretString};
use std::fmt;

/// An API key. Its `Debug` and `Display` print `[redacted]`, so it cannot leak into logs,
/// error messages or panics; the raw value is only read when a request header is built.
///
/// ```
/// use agent_llm::ApiKey;
/// let key = ApiKey::new("sk-very-secret");
/// assert_eq!(format!("{key:?}"), "ApiKey([redacted])");
/// assert!(!format!("{key}").contains("secret"));
/// ```
#[derive(Clone)]
pub struct ApiKey(SecretString);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(SecretString::from(key.into()))
    }

    /// The raw key, for building a request header. Do not log the result.
    pub(crate) fn expose(&self) -> &str {
        self.0.expose_secret()
    }

    /// Whether the key is the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.expose_secret().is_empty()
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl From<String> for ApiKey {
    fn from(value: String) -> Self {
        ApiKey::new(value)
    }
}

impl From<&str> for ApiKey {
    fn from(value: &str) -> Self {
        ApiKey::new(value)
    }
}
