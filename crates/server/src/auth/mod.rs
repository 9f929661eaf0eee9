//! Who is calling: the one auth layer of every hosted product (the sessions routes, the
//! chat front), and the session tokens that stay each session's own capability.
//!
//! A caller presents one credential, as `Authorization: Bearer <credential>`,
//! `X-API-Key: <key>`, or (for a browser's `EventSource`, which cannot set headers)
//! `?api_key=<key>`:
//!
//! - an **API key** of [`Auth::with_api_keys`] (`AGENT_API_KEYS`: comma-separated
//!   `key:tenant:user`, or `key:tenant` for any user of the tenant), kept as its SHA-256
//!   and compared in constant time; the chat front's `CHAT_API_KEYS` (`key` or
//!   `key:user`) are keys of the tenant `default`;
//! - a **JWT** signed with [`Auth::with_jwt`]'s key (`AGENT_JWT_SECRET` for HS256, or
//!   `AGENT_JWT_PUBLIC_KEY`, a PEM or a path to one, for RS256/ES256), whose `exp`, `iss`
//!   (`AGENT_JWT_ISSUER`) and `aud` (`AGENT_JWT_AUDIENCE`) are checked, carrying
//!   `tenant_id` and `user_id` (or `sub`) claims.
//!
//! The credential says whom the caller speaks for (a [`Principal`]): the tenant and user
//! come from it, never from a request body. A start body that names another tenant or
//! user (`tenant_id`, `user_id`) is refused with 403; a product whose start request has
//! those fields gets the caller's written in. A session is its tenant's: another tenant's
//! caller is answered 404 for it, even with its token. A request over the credential's or
//! the tenant's rate ([`Auth::with_rate_per_credential`], `AGENT_RATE_LIMIT`;
//! [`Auth::with_rate_per_tenant`], `AGENT_TENANT_RATE_LIMIT`) is refused with 429 and
//! `retry-after`.
//!
//! With no key and no JWT key set ([`Auth::open`]) every request is accepted, for one
//! person on one machine: [`Auth::bind_address`] keeps such a server on loopback, and
//! [`AgentServer::serve_until`](crate::AgentServer::serve_until) refuses any other address.
//!
//! ```
//! use agent_server::auth::{Auth, Rate};
//! let auth = Auth::open()
//!     .with_api_keys("sk-acme-ada:acme:ada, sk-globex:globex")?
//!     .with_rate_per_credential(Rate::per_minute(600));
//! assert!(!auth.is_open());
//! # Ok::<(), agent_server::auth::AuthConfigError>(())
//! ```

mod caller;
#[cfg(test)]
mod fuzz;
mod jwt;
mod keys;
mod layer;
mod rate;
pub(crate) mod tokens;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use axum::http::{HeaderMap, HeaderName};

pub(crate) use caller::{Caller, Forbidden, OwnerFields};
pub(crate) use layer::require_caller;
pub use rate::Rate;

use jwt::{JwtKey, JwtVerifier, looks_like_jwt};
use keys::ApiKeys;
use rate::KeyedLimit;

/// The tenant of the chat front's keys (`CHAT_API_KEYS`: `key` or `key:user`).
pub const DEFAULT_TENANT: &str = "default";

/// The header that may carry an API key instead of `Authorization`.
pub(crate) const API_KEY_HEADER: HeaderName = HeaderName::from_static("x-api-key");

/// What a tenant or user of a [`Principal`] may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Any the request names (an open server, a key not bound to a user).
    Any,
    /// This one only.
    Only(String),
}

impl Scope {
    /// The one it is bound to, if it is.
    pub fn only(&self) -> Option<&str> {
        match self {
            Scope::Any => None,
            Scope::Only(name) => Some(name),
        }
    }
}

/// Whom an authenticated request speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    tenant: Scope,
    user: Scope,
    credential: String,
}

impl Principal {
    /// The caller of an open server: any tenant, any user.
    pub fn local() -> Self {
        Principal {
            tenant: Scope::Any,
            user: Scope::Any,
            credential: "local".to_owned(),
        }
    }

    /// The tenant it speaks for.
    pub fn tenant(&self) -> &Scope {
        &self.tenant
    }

    /// The user it speaks for.
    pub fn user(&self) -> &Scope {
        &self.user
    }

    /// Names the credential without revealing it (`key:<hash prefix>`, `jwt:<tenant>:<user>`,
    /// `local`), for logs and rate limits.
    pub fn credential(&self) -> &str {
        &self.credential
    }
}

/// Why an auth configuration cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthConfigError {
    /// An API key entry is malformed.
    #[error("API key entry {position} is malformed: {reason}")]
    BadKeyEntry {
        /// Its position in the list, from 1.
        position: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The JWT key cannot be used.
    #[error("the JWT key cannot be used: {0}")]
    BadJwtKey(String),
    /// A JWT key is set without the issuer or audience tokens must name.
    #[error("a JWT key needs {0} to be set too: tokens are checked against it")]
    MissingJwtSetting(&'static str),
    /// Both a JWT secret and a JWT public key are set.
    #[error("set AGENT_JWT_SECRET or AGENT_JWT_PUBLIC_KEY, not both")]
    TwoJwtKeys,
    /// A rate is not written `count/unit`.
    #[error("{0:?} is not a rate: write it count/unit, as 100/min, 5/s or 1000/h")]
    BadRate(String),
}

/// Why a request is not let through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Denied {
    /// No credential was presented.
    Missing,
    /// The credential is not one of ours, or is expired or badly signed.
    Invalid(String),
    /// Over a rate; may pass after the wait.
    RateLimited { scope: &'static str, wait: Duration },
}

/// The auth layer: the accepted credentials and the rates they are held to. Cheap to
/// clone. See the [module docs](self).
#[derive(Debug, Clone, Default)]
pub struct Auth {
    keys: ApiKeys,
    jwt: Option<JwtVerifier>,
    per_credential: Option<KeyedLimit>,
    per_tenant: Option<KeyedLimit>,
}

impl Auth {
    /// Accepts every request (one person on one machine: loopback only).
    pub fn open() -> Self {
        Auth::default()
    }

    /// The layer the environment describes: `AGENT_API_KEYS`, `CHAT_API_KEYS`,
    /// `AGENT_JWT_SECRET` or `AGENT_JWT_PUBLIC_KEY` with `AGENT_JWT_ISSUER` and
    /// `AGENT_JWT_AUDIENCE`, `AGENT_RATE_LIMIT`, `AGENT_TENANT_RATE_LIMIT`. Open when none
    /// of the credentials is set.
    pub fn from_env() -> Result<Self, AuthConfigError> {
        Auth::from_vars(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
    }

    /// [`from_env`](Self::from_env) over any source of variables.
    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, AuthConfigError> {
        let mut auth = Auth::open();
        if let Some(list) = var("AGENT_API_KEYS") {
            auth = auth.with_api_keys(&list)?;
        }
        if let Some(list) = var("CHAT_API_KEYS") {
            auth.keys.add_chat_list(&list);
        }
        let key = match (var("AGENT_JWT_SECRET"), var("AGENT_JWT_PUBLIC_KEY")) {
            (Some(_), Some(_)) => return Err(AuthConfigError::TwoJwtKeys),
            (Some(secret), None) => Some(JwtKey::Secret(secret.into_bytes())),
            (None, Some(pem)) => Some(JwtKey::PublicPem(read_pem(&pem)?)),
            (None, None) => None,
        };
        if let Some(key) = key {
            let issuer = var("AGENT_JWT_ISSUER")
                .ok_or(AuthConfigError::MissingJwtSetting("AGENT_JWT_ISSUER"))?;
            let audience = var("AGENT_JWT_AUDIENCE")
                .ok_or(AuthConfigError::MissingJwtSetting("AGENT_JWT_AUDIENCE"))?;
            auth.jwt = Some(JwtVerifier::new(&key, &issuer, &audience)?);
        }
        if let Some(rate) = var("AGENT_RATE_LIMIT") {
            auth = auth.with_rate_per_credential(rate.parse()?);
        }
        if let Some(rate) = var("AGENT_TENANT_RATE_LIMIT") {
            auth = auth.with_rate_per_tenant(rate.parse()?);
        }
        Ok(auth)
    }

    /// Also accepts the keys of `list`: comma-separated `key:tenant:user`, or
    /// `key:tenant` for a key that may name any user of its tenant.
    pub fn with_api_keys(mut self, list: &str) -> Result<Self, AuthConfigError> {
        self.keys.add_list(list)?;
        Ok(self)
    }

    /// Also accepts `key`, speaking for `tenant` and, when given, only for `user`.
    pub fn with_api_key(mut self, key: &str, tenant: &str, user: Option<&str>) -> Self {
        self.keys.add(key, tenant, user);
        self
    }

    /// Also accepts the chat front's keys: `key` (any user) or `key:user`, of the tenant
    /// `default`.
    pub fn with_chat_keys<K: AsRef<str>>(mut self, keys: impl IntoIterator<Item = K>) -> Self {
        for key in keys {
            self.keys.add_chat_list(key.as_ref());
        }
        self
    }

    /// Also accepts JWTs signed with the HS256 `secret`, issued by `issuer` for
    /// `audience`.
    pub fn with_jwt_secret(
        mut self,
        secret: &[u8],
        issuer: &str,
        audience: &str,
    ) -> Result<Self, AuthConfigError> {
        self.jwt = Some(JwtVerifier::new(
            &JwtKey::Secret(secret.to_vec()),
            issuer,
            audience,
        )?);
        Ok(self)
    }

    /// Also accepts JWTs signed with the private half of the PEM public key `pem` (RSA:
    /// RS256/384/512; EC: ES256/384), issued by `issuer` for `audience`.
    pub fn with_jwt_public_key(
        mut self,
        pem: &str,
        issuer: &str,
        audience: &str,
    ) -> Result<Self, AuthConfigError> {
        self.jwt = Some(JwtVerifier::new(
            &JwtKey::PublicPem(pem.to_owned()),
            issuer,
            audience,
        )?);
        Ok(self)
    }

    /// Holds each credential to `rate`.
    pub fn with_rate_per_credential(mut self, rate: Rate) -> Self {
        self.per_credential = Some(KeyedLimit::new(rate));
        self
    }

    /// Holds each tenant, all its credentials together, to `rate`.
    pub fn with_rate_per_tenant(mut self, rate: Rate) -> Self {
        self.per_tenant = Some(KeyedLimit::new(rate));
        self
    }

    /// Whether every request is accepted (no key and no JWT key set).
    pub fn is_open(&self) -> bool {
        self.keys.is_empty() && self.jwt.is_none()
    }

    /// Where to listen, given where the operator asked: an open layer replaces a
    /// non-loopback address by `127.0.0.1` (same port), and a warning says so.
    pub fn bind_address(&self, requested: SocketAddr) -> SocketAddr {
        if !self.is_open() || requested.ip().is_loopback() {
            return requested;
        }
        let loopback = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), requested.port());
        tracing::warn!(
            %requested,
            %loopback,
            "no AGENT_API_KEYS, CHAT_API_KEYS or JWT key: the server accepts anyone, so it listens on loopback only"
        );
        loopback
    }

    /// Authenticates a request by its headers (`X-API-Key`, else the bearer) or, for a
    /// browser's `EventSource`, the key in its query (`?api_key=`), and takes one request
    /// of its rates.
    pub(crate) fn check(
        &self,
        headers: &HeaderMap,
        query_key: Option<&str>,
    ) -> Result<Caller, Denied> {
        if self.is_open() {
            return Ok(Caller::new(Principal::local(), false));
        }
        let (presented, from_bearer) = match (header(headers, &API_KEY_HEADER), query_key) {
            (Some(key), _) => (key, false),
            (None, Some(key)) if !key.trim().is_empty() => (key.trim(), false),
            (None, _) => (tokens::bearer(headers).ok_or(Denied::Missing)?, true),
        };
        let principal = self.principal(presented)?;
        if let Some(limit) = &self.per_credential {
            limit
                .take(principal.credential())
                .map_err(|wait| Denied::RateLimited {
                    scope: "credential",
                    wait,
                })?;
        }
        if let (Some(limit), Some(tenant)) = (&self.per_tenant, principal.tenant().only()) {
            limit.take(tenant).map_err(|wait| Denied::RateLimited {
                scope: "tenant",
                wait,
            })?;
        }
        Ok(Caller::new(principal, from_bearer))
    }

    fn principal(&self, presented: &str) -> Result<Principal, Denied> {
        if let Some(jwt) = &self.jwt
            && looks_like_jwt(presented)
        {
            return jwt.principal(presented).map_err(Denied::Invalid);
        }
        self.keys
            .principal(presented)
            .ok_or_else(|| Denied::Invalid("the key is not one of this server's".to_owned()))
    }
}

/// A header's value as text, trimmed, when it has one.
fn header<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    let value = headers.get(name)?.to_str().ok()?.trim();
    (!value.is_empty()).then_some(value)
}

/// A PEM given inline, or the contents of the file it names.
fn read_pem(value: &str) -> Result<String, AuthConfigError> {
    if value.trim_start().starts_with("-----BEGIN") {
        return Ok(value.to_owned());
    }
    std::fs::read_to_string(value.trim()).map_err(|error| {
        AuthConfigError::BadJwtKey(format!("AGENT_JWT_PUBLIC_KEY names {value:?}: {error}"))
    })
}

#[cfg(test)]
mod tests;
