//! Fuzzing the auth layer's readers: key lists, rates, bearer tokens taken for JWTs, and
//! start bodies bound to their caller. No input panics; every refusal is typed.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::jwt::{JwtKey, JwtVerifier, looks_like_jwt};
use super::keys::ApiKeys;
use super::{Caller, OwnerFields, Principal, Rate, Scope};

/// A start body's owner field: absent, any string, or another kind of value.
fn owner_value() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        any::<String>().prop_map(|s| Some(Value::String(s))),
        Just(Some(Value::String("acme".into()))),
        any::<i64>().prop_map(|n| Some(json!(n))),
        Just(Some(Value::Null)),
        Just(Some(json!({"nested": "acme"}))),
    ]
}

proptest! {
    #[test]
    fn key_lists(list in any::<String>()) {
        let mut keys = ApiKeys::default();
        if keys.add_list(&list).is_ok() {
            keys.add_chat_list(&list);
        }
    }

    #[test]
    fn rates(text in any::<String>()) {
        let _ = text.parse::<Rate>();
    }

    #[test]
    fn bearer_tokens_as_jwts(token in any::<String>()) {
        let verifier = JwtVerifier::new(&JwtKey::Secret(b"secret".to_vec()), "i", "a").unwrap();
        if looks_like_jwt(&token) {
            prop_assert!(verifier.principal(&token).is_err());
        }
    }

    #[test]
    fn start_bodies_bound_to_a_caller(
        tenant in owner_value(),
        user in owner_value(),
        extra in any::<String>(),
        bound in any::<bool>(),
    ) {
        let mut body = json!({"text": extra});
        if let Some(tenant) = tenant.clone() {
            body["tenant_id"] = tenant;
        }
        if let Some(user) = user {
            body["user_id"] = user;
        }
        let principal = Principal {
            tenant: Scope::Only("acme".into()),
            user: if bound { Scope::Only("ada".into()) } else { Scope::Any },
            credential: "fuzz".into(),
        };
        let caller = Caller::new(principal, true);
        let fields = OwnerFields::of_schema(&json!({"properties": {"tenant_id": {}, "user_id": {}}}));
        match caller.bind_start(&mut body, fields) {
            // Bound: the tenant is the caller's, whatever the body said.
            Ok(()) => prop_assert_eq!(&body["tenant_id"], &json!("acme")),
            Err(forbidden) => prop_assert!(["tenant_id", "user_id"].contains(&forbidden.field)),
        }
    }
}
