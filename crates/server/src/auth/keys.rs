//! API keys: each bound to a tenant and, optionally, one user; kept only as their SHA-256
//! and compared in constant time.

use super::tokens::{hash_token, token_matches};
use super::{AuthConfigError, DEFAULT_TENANT, Principal, Scope};

/// One accepted key.
#[derive(Debug, Clone)]
struct ApiKey {
    hash: String,
    tenant: String,
    user: Option<String>,
}

/// The accepted keys.
#[derive(Debug, Clone, Default)]
pub(crate) struct ApiKeys(Vec<ApiKey>);

impl ApiKeys {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds `key`, speaking for `tenant` and, when given, only for `user`.
    pub(crate) fn add(&mut self, key: &str, tenant: &str, user: Option<&str>) {
        self.0.push(ApiKey {
            hash: hash_token(key),
            tenant: tenant.to_owned(),
            user: user.map(str::to_owned),
        });
    }

    /// Adds the keys of `AGENT_API_KEYS`' form: comma-separated `key:tenant:user` (or
    /// `key:tenant`, a key for any user of the tenant). Blank entries are skipped.
    pub(crate) fn add_list(&mut self, list: &str) -> Result<(), AuthConfigError> {
        for (index, entry) in entries(list) {
            let mut parts = entry.split(':').map(str::trim);
            let (key, tenant, user) = (parts.next(), parts.next(), parts.next());
            let bad = |reason: &'static str| AuthConfigError::BadKeyEntry {
                position: index + 1,
                reason,
            };
            if parts.next().is_some() {
                return Err(bad("it has more than three ':'-separated parts"));
            }
            let key = key
                .filter(|k| !k.is_empty())
                .ok_or_else(|| bad("the key is empty"))?;
            let tenant = tenant
                .filter(|t| !t.is_empty())
                .ok_or_else(|| bad("it names no tenant (write key:tenant:user)"))?;
            let user = user.filter(|u| !u.is_empty());
            self.add(key, tenant, user);
        }
        Ok(())
    }

    /// Adds the keys of `CHAT_API_KEYS`' form: comma-separated `key` (any user) or
    /// `key:user`, all of the tenant `default`.
    pub(crate) fn add_chat_list(&mut self, list: &str) {
        for (_, entry) in entries(list) {
            let (key, user) = match entry.split_once(':') {
                Some((key, user)) => (key.trim(), Some(user.trim()).filter(|u| !u.is_empty())),
                None => (entry, None),
            };
            if !key.is_empty() {
                self.add(key, DEFAULT_TENANT, user);
            }
        }
    }

    /// Whom `key` speaks for, if it is one of ours. Every stored hash is compared, so the
    /// time taken does not say which one matched.
    pub(crate) fn principal(&self, key: &str) -> Option<Principal> {
        let matched = self.0.iter().fold(None, |found, stored| {
            if token_matches(key, &stored.hash) {
                Some(stored)
            } else {
                found
            }
        })?;
        Some(Principal {
            tenant: Scope::Only(matched.tenant.clone()),
            user: matched
                .user
                .as_ref()
                .map_or(Scope::Any, |user| Scope::Only(user.clone())),
            // The hash's first 12 hex digits name the key in logs and rate limits without
            // revealing it.
            credential: format!("key:{}", &matched.hash[..12]),
        })
    }
}

/// The non-blank comma-separated entries of `list`, trimmed, with their positions.
fn entries(list: &str) -> impl Iterator<Item = (usize, &str)> {
    list.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .enumerate()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_keys_bind_a_tenant_and_maybe_a_user() {
        let mut keys = ApiKeys::default();
        keys.add_list(" sk-a:acme:ada , sk-b:globex ,, ").unwrap();
        let ada = keys.principal("sk-a").unwrap();
        assert_eq!(ada.tenant, Scope::Only("acme".into()));
        assert_eq!(ada.user, Scope::Only("ada".into()));
        let globex = keys.principal("sk-b").unwrap();
        assert_eq!(globex.tenant, Scope::Only("globex".into()));
        assert_eq!(globex.user, Scope::Any);
        assert!(keys.principal("sk-c").is_none());
        assert!(keys.principal("sk-a:acme:ada").is_none());
        assert!(!ada.credential.contains("sk-a"));
    }

    #[test]
    fn malformed_agent_keys_are_refused_by_position() {
        for (list, position) in [("sk-a", 1), ("sk-a:acme,:acme", 2), ("a:b:c:d", 1)] {
            let error = ApiKeys::default().add_list(list).unwrap_err();
            assert!(
                matches!(error, AuthConfigError::BadKeyEntry { position: p, .. } if p == position),
                "{list}: {error}"
            );
        }
    }

    #[test]
    fn chat_keys_are_keys_of_the_default_tenant() {
        let mut keys = ApiKeys::default();
        keys.add_chat_list("sk-proxy, sk-ada:ada");
        let proxy = keys.principal("sk-proxy").unwrap();
        assert_eq!(proxy.tenant, Scope::Only(DEFAULT_TENANT.into()));
        assert_eq!(proxy.user, Scope::Any);
        assert_eq!(
            keys.principal("sk-ada").unwrap().user,
            Scope::Only("ada".into())
        );
    }
}
