use std::collections::HashMap;

use axum::http::{HeaderMap, header};

use super::*;

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

fn bearer(value: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::AUTHORIZATION,
        format!("Bearer {value}").parse().unwrap(),
    );
    headers
}

#[test]
fn nothing_set_is_an_open_layer_that_keeps_to_loopback() {
    let auth = Auth::from_vars(vars(&[])).unwrap();
    assert!(auth.is_open());
    let caller = auth.check(&HeaderMap::new(), None).unwrap();
    assert_eq!(caller.principal, Principal::local());
    let public: SocketAddr = "0.0.0.0:8080".parse().unwrap();
    assert_eq!(auth.bind_address(public), "127.0.0.1:8080".parse().unwrap());

    let keyed = Auth::open().with_api_key("k", "acme", None);
    assert_eq!(keyed.bind_address(public), public);
}

#[test]
fn keys_from_both_variables_are_accepted_by_bearer_or_header() {
    let auth = Auth::from_vars(vars(&[
        ("AGENT_API_KEYS", "sk-a:acme:ada"),
        ("CHAT_API_KEYS", "sk-chat"),
    ]))
    .unwrap();
    assert!(!auth.is_open());
    assert_eq!(
        auth.check(&HeaderMap::new(), None).unwrap_err(),
        Denied::Missing
    );
    assert!(matches!(
        auth.check(&bearer("sk-b"), None),
        Err(Denied::Invalid(_))
    ));

    let by_bearer = auth.check(&bearer("sk-a"), None).unwrap();
    assert_eq!(by_bearer.principal.tenant(), &Scope::Only("acme".into()));
    assert_eq!(by_bearer.session_bearer(Some("tok")), None);

    let mut headers = bearer("session-token");
    headers.insert(API_KEY_HEADER, "sk-chat".parse().unwrap());
    let by_header = auth.check(&headers, None).unwrap();
    assert_eq!(by_header.principal.tenant(), &Scope::Only("default".into()));
    assert_eq!(by_header.session_bearer(Some("tok")), Some("tok"));

    // A browser's EventSource gives the key in the query; the bearer stays the token's.
    let by_query = auth.check(&bearer("session-token"), Some("sk-a")).unwrap();
    assert_eq!(by_query.principal.user(), &Scope::Only("ada".into()));
    assert_eq!(by_query.session_bearer(Some("tok")), Some("tok"));
}

#[test]
fn jwt_settings_must_be_whole() {
    let secret_only = Auth::from_vars(vars(&[("AGENT_JWT_SECRET", "s")]));
    assert_eq!(
        secret_only.unwrap_err(),
        AuthConfigError::MissingJwtSetting("AGENT_JWT_ISSUER")
    );
    let both = Auth::from_vars(vars(&[
        ("AGENT_JWT_SECRET", "s"),
        ("AGENT_JWT_PUBLIC_KEY", "-----BEGIN PUBLIC KEY-----"),
    ]));
    assert_eq!(both.unwrap_err(), AuthConfigError::TwoJwtKeys);
    let missing_file = Auth::from_vars(vars(&[
        ("AGENT_JWT_PUBLIC_KEY", "/nonexistent/key.pem"),
        ("AGENT_JWT_ISSUER", "i"),
        ("AGENT_JWT_AUDIENCE", "a"),
    ]));
    assert!(matches!(missing_file, Err(AuthConfigError::BadJwtKey(_))));
    let whole = Auth::from_vars(vars(&[
        ("AGENT_JWT_SECRET", "s"),
        ("AGENT_JWT_ISSUER", "i"),
        ("AGENT_JWT_AUDIENCE", "a"),
    ]))
    .unwrap();
    assert!(!whole.is_open());
    let bad_rate = Auth::from_vars(vars(&[("AGENT_RATE_LIMIT", "lots")]));
    assert!(matches!(bad_rate, Err(AuthConfigError::BadRate(_))));
}

#[test]
fn rates_hold_each_credential_and_each_tenant() {
    let auth = Auth::open()
        .with_api_keys("k1:acme:ada,k2:acme:bob,k3:globex")
        .unwrap()
        .with_rate_per_credential(Rate::per_minute(2))
        .with_rate_per_tenant(Rate::per_minute(3));
    assert!(auth.check(&bearer("k1"), None).is_ok());
    assert!(auth.check(&bearer("k1"), None).is_ok());
    let Err(Denied::RateLimited { scope, wait }) = auth.check(&bearer("k1"), None) else {
        panic!("the third request of k1 passed");
    };
    assert_eq!(scope, "credential");
    assert!(wait > Duration::ZERO);
    // k1's refused request did not count for the tenant: bob has one left of acme's 3.
    assert!(auth.check(&bearer("k2"), None).is_ok());
    assert!(matches!(
        auth.check(&bearer("k2"), None),
        Err(Denied::RateLimited {
            scope: "tenant",
            ..
        })
    ));
    assert!(auth.check(&bearer("k3"), None).is_ok());
}
