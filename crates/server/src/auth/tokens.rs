//! Session tokens, the per-session capability: made from two random v4 uuids, stored only
//! as their SHA-256, compared in constant time.

use axum::http::{HeaderMap, HeaderName, header};
use sha2::{Digest, Sha256};

/// The header that may carry a session token (then `Authorization` may carry the
/// caller's credential).
pub(crate) const SESSION_TOKEN_HEADER: HeaderName = HeaderName::from_static("x-session-token");

/// A fresh token: 64 hex characters from two random v4 uuids.
pub(crate) fn new_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// The SHA-256 of `token`, as lowercase hex: what the store keeps.
pub(crate) fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Whether `token` hashes to `stored_hash`, comparing the hex strings in constant time.
pub(crate) fn token_matches(token: &str, stored_hash: &str) -> bool {
    constant_time_eq(hash_token(token).as_bytes(), stored_hash.as_bytes())
}

/// Compares every byte whatever the first difference (lengths are public: both are hex
/// digests of a fixed size).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= std::hint::black_box(x ^ y);
    }
    diff == 0
}

/// The token of an `Authorization: Bearer <token>` header, if there is one.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_random_and_checked_by_hash() {
        let token = new_token();
        assert_eq!(token.len(), 64);
        assert_ne!(token, new_token());
        let hash = hash_token(&token);
        assert_eq!(hash.len(), 64);
        assert!(token_matches(&token, &hash));
        assert!(!token_matches("wrong", &hash));
        assert!(!token_matches(&token, "short"));
    }

    #[test]
    fn bearer_reads_the_authorization_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), None);
        headers.insert(header::AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(bearer(&headers), Some("abc"));
        headers.insert(header::AUTHORIZATION, "bearer  xyz ".parse().unwrap());
        assert_eq!(bearer(&headers), Some("xyz"));
        headers.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(bearer(&headers), None);
    }
}
