//! Bearer JWTs: verified against a shared secret (HS256) or a public key (RS256/384/512 for
//! an RSA key, ES256/384 for an EC key), with `exp`, `iss` and `aud` required and checked,
//! carrying the caller's `tenant_id` and `user_id` (spec 003's JWT context).

use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode};
use serde::Deserialize;

use super::{AuthConfigError, Principal, Scope};

/// Checks JWTs with one key, one issuer and one audience.
#[derive(Clone)]
pub(crate) struct JwtVerifier {
    key: DecodingKey,
    validation: Validation,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("algorithms", &self.validation.algorithms)
            .field("issuer", &self.validation.iss)
            .field("audience", &self.validation.aud)
            .finish_non_exhaustive()
    }
}

/// The claims a caller's JWT must carry beside `exp`, `iss` and `aud`.
#[derive(Debug, Deserialize)]
struct CallerClaims {
    tenant_id: String,
    #[serde(default)]
    user_id: Option<String>,
    #[serde(default)]
    sub: Option<String>,
}

/// The key a verifier checks signatures with.
#[derive(Debug, Clone)]
pub(crate) enum JwtKey {
    /// A shared secret: HS256.
    Secret(Vec<u8>),
    /// A public key in PEM (SPKI or PKCS#1): RS256/384/512 for RSA, ES256/384 for EC.
    PublicPem(String),
}

impl JwtVerifier {
    /// A verifier of tokens signed with `key`, issued by `issuer` for `audience`.
    pub(crate) fn new(key: &JwtKey, issuer: &str, audience: &str) -> Result<Self, AuthConfigError> {
        let (key, algorithms) = match key {
            JwtKey::Secret(secret) if secret.is_empty() => {
                return Err(AuthConfigError::BadJwtKey("the secret is empty".into()));
            }
            JwtKey::Secret(secret) => (DecodingKey::from_secret(secret), vec![Algorithm::HS256]),
            JwtKey::PublicPem(pem) => public_key(pem)?,
        };
        let mut validation = Validation::new(algorithms[0]);
        validation.algorithms = algorithms;
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.leeway = 30;
        Ok(JwtVerifier { key, validation })
    }

    /// Whom `token` speaks for, or why it does not.
    pub(crate) fn principal(&self, token: &str) -> Result<Principal, String> {
        let data = decode::<CallerClaims>(token, &self.key, &self.validation)
            .map_err(|error| error.to_string())?;
        let claims = data.claims;
        let user = claims
            .user_id
            .or(claims.sub)
            .filter(|user| !user.is_empty())
            .ok_or_else(|| "the token names no user (user_id or sub)".to_owned())?;
        if claims.tenant_id.is_empty() {
            return Err("the token's tenant_id is empty".to_owned());
        }
        Ok(Principal {
            credential: format!("jwt:{}:{user}", claims.tenant_id),
            tenant: Scope::Only(claims.tenant_id),
            user: Scope::Only(user),
        })
    }
}

/// Reads a PEM public key: RSA first, then EC.
fn public_key(pem: &str) -> Result<(DecodingKey, Vec<Algorithm>), AuthConfigError> {
    if let Ok(key) = DecodingKey::from_rsa_pem(pem.as_bytes()) {
        return Ok((
            key,
            vec![Algorithm::RS256, Algorithm::RS384, Algorithm::RS512],
        ));
    }
    match DecodingKey::from_ec_pem(pem.as_bytes()) {
        Ok(key) => Ok((key, vec![Algorithm::ES256, Algorithm::ES384])),
        Err(error) => Err(AuthConfigError::BadJwtKey(format!(
            "not an RSA or EC public key in PEM: {error}"
        ))),
    }
}

/// Whether `token` has a JWT's shape (three base64url parts), so it is not taken for an
/// API key.
pub(crate) fn looks_like_jwt(token: &str) -> bool {
    let mut parts = token.split('.');
    let shaped = parts.by_ref().take(3).all(|part| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    shaped && token.matches('.').count() == 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header, encode};
    use serde_json::json;

    fn now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    fn token(claims: serde_json::Value, secret: &[u8]) -> String {
        encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(secret),
        )
        .unwrap()
    }

    fn verifier() -> JwtVerifier {
        JwtVerifier::new(&JwtKey::Secret(b"s3cret".to_vec()), "issuer", "agents").unwrap()
    }

    #[test]
    fn a_valid_token_names_its_tenant_and_user() {
        let claims = json!({"iss": "issuer", "aud": "agents", "exp": now() + 60,
            "tenant_id": "acme", "user_id": "ada"});
        let principal = verifier().principal(&token(claims, b"s3cret")).unwrap();
        assert_eq!(principal.tenant, Scope::Only("acme".into()));
        assert_eq!(principal.user, Scope::Only("ada".into()));
    }

    #[test]
    fn expired_foreign_or_incomplete_tokens_are_refused() {
        let good = json!({"iss": "issuer", "aud": "agents", "exp": now() + 60,
            "tenant_id": "acme", "user_id": "ada"});
        let with = |field: &str, value: serde_json::Value| {
            let mut claims = good.clone();
            claims[field] = value;
            claims
        };
        let without = |field: &str| {
            let mut claims = good.clone();
            claims.as_object_mut().unwrap().remove(field);
            claims
        };
        let refused = [
            token(with("exp", json!(now() - 3600)), b"s3cret"),
            token(good.clone(), b"another secret"),
            token(with("iss", json!("someone else")), b"s3cret"),
            token(with("aud", json!("another api")), b"s3cret"),
            token(without("exp"), b"s3cret"),
            token(without("tenant_id"), b"s3cret"),
            token(without("user_id"), b"s3cret"),
        ];
        for token in refused {
            assert!(verifier().principal(&token).is_err(), "{token}");
        }
    }

    #[test]
    fn jwt_shapes_are_told_from_keys() {
        assert!(looks_like_jwt("eyJh.eyJz.c2ln"));
        assert!(!looks_like_jwt("sk-local-1"));
        assert!(!looks_like_jwt("a.b"));
        assert!(!looks_like_jwt("a.b.c.d"));
        assert!(!looks_like_jwt("a..c"));
    }

    #[test]
    fn an_empty_secret_or_a_bad_pem_is_a_configuration_error() {
        assert!(JwtVerifier::new(&JwtKey::Secret(Vec::new()), "i", "a").is_err());
        let pem =
            JwtKey::PublicPem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----".into());
        assert!(JwtVerifier::new(&pem, "i", "a").is_err());
    }
}
