//! The auth layer over real HTTP: every product route needs a credential, tenant and user
//! come from it (a body naming others is 403), another tenant's session is 404 even with
//! its token, JWTs are checked (HS256, RS256 and ES256 against a PEM from `openssl`),
//! rates answer 429 with `retry-after`, an open server will not serve off loopback, and
//! `GET /metrics` answers to the same layer.
#![cfg(test)]

mod common;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use agent_server::auth::{Auth, Rate};
use agent_server::testing::{Started, TestServer};
use agent_server::{AgentServer, InMemorySessionStore, Product, SessionHandle};
use common::Echo;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use reqwest::Method;
use serde_json::{Value, json};

/// A product whose start names its tenant and user, and whose result says which it got.
struct Whoami;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WhoamiStart {
    #[serde(default)]
    tenant_id: Option<String>,
    #[serde(default)]
    user_id: Option<String>,
}

#[async_trait::async_trait]
impl Product for Whoami {
    type Start = WhoamiStart;
    type Event = Value;
    type Output = Value;
    type Error = std::io::Error;

    fn name(&self) -> &str {
        "whoami"
    }

    async fn run(&self, _: SessionHandle<Value>, start: WhoamiStart) -> Result<Value, Self::Error> {
        Ok(json!({"tenant_id": start.tenant_id, "user_id": start.user_id}))
    }
}

const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "agent-platform";
const SECRET: &[u8] = b"a shared secret of the test";

fn auth() -> Auth {
    Auth::open()
        .with_api_keys("sk-acme-ada:acme:ada, sk-acme:acme, sk-globex:globex:gus")
        .unwrap()
        .with_jwt_secret(SECRET, ISSUER, AUDIENCE)
        .unwrap()
}

async fn serve(auth: Auth) -> TestServer {
    let server = AgentServer::new(Arc::new(InMemorySessionStore::new()))
        .with_product(Arc::new(Echo::new("echo")))
        .with_product(Arc::new(Whoami))
        .with_auth(auth);
    TestServer::spawn(server).await
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims(tenant: &str, user: &str) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "exp": now() + 300, "tenant_id": tenant, "user_id": user})
}

fn hs256(claims: &Value, secret: &[u8]) -> String {
    encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret),
    )
    .unwrap()
}

/// Sends `method path` with `credential` as the bearer (if any), the session token in
/// `X-Session-Token` (if any) and `body` (if any): the status and the JSON body.
async fn call(
    server: &TestServer,
    method: Method,
    path: &str,
    credential: Option<&str>,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = server.client.request(method, server.url(path));
    if let Some(credential) = credential {
        request = request.bearer_auth(credential);
    }
    if let Some(token) = token {
        request = request.header("x-session-token", token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The result of `started`, once its session completes.
async fn result_of(server: &TestServer, started: Started) -> Value {
    let events = server
        .stream(&started, None)
        .await
        .until("session_complete")
        .await;
    events.last().unwrap().data["result"].clone()
}

/// Every session route of `started`, as (method, path, body).
fn session_routes(started: &Started) -> Vec<(Method, String, Option<Value>)> {
    vec![
        (Method::GET, started.status_url.clone(), None),
        (Method::GET, started.stream_url.clone(), None),
        (
            Method::POST,
            format!("/api/{}/respond", started.product),
            Some(json!({"session_id": started.id, "gate": "none", "answer": {}})),
        ),
        (
            Method::POST,
            format!("/api/{}/{}/cancel", started.product, started.id),
            None,
        ),
    ]
}

#[tokio::test]
async fn every_product_route_needs_a_credential_and_the_documents_do_not() {
    let server = serve(auth()).await.with_credential("sk-acme-ada");
    let started = server.start("echo", json!({"text": "hi"})).await;
    let mut routes = session_routes(&started);
    routes.push((
        Method::POST,
        "/api/echo/start".into(),
        Some(json!({"text": "x"})),
    ));
    routes.push((Method::POST, "/api/echo".into(), Some(json!({"text": "x"}))));
    for (method, path, body) in routes {
        let (status, answer) = call(
            &server,
            method.clone(),
            &path,
            None,
            Some(&started.token),
            body.clone(),
        )
        .await;
        assert_eq!(
            (status, &answer["error"]["code"]),
            (401, &json!("unauthorized")),
            "{method} {path}"
        );
        let (status, _) = call(
            &server,
            method.clone(),
            &path,
            Some("sk-unknown"),
            Some(&started.token),
            body,
        )
        .await;
        assert_eq!(status, 401, "{method} {path} with a key that is not ours");
    }
    let (status, document) = call(
        &server,
        Method::GET,
        "/api/echo/openapi.json",
        None,
        None,
        None,
    )
    .await;
    assert_eq!(status, 200);
    let schemes = &document["components"]["securitySchemes"];
    for scheme in ["apiKey", "apiKeyHeader", "jwt", "sessionToken"] {
        assert!(schemes.get(scheme).is_some(), "{scheme} is not described");
    }
    assert!(document["paths"]["/api/echo/start"]["post"]["security"].is_array());
}

#[tokio::test]
async fn another_tenants_session_is_not_found_even_with_its_token() {
    let server = serve(auth()).await.with_credential("sk-acme-ada");
    let started = server.start("echo", json!({"text": "hi"})).await;
    for (method, path, body) in session_routes(&started) {
        let (status, answer) = call(
            &server,
            method.clone(),
            &path,
            Some("sk-globex"),
            Some(&started.token),
            body.clone(),
        )
        .await;
        assert_eq!(
            (status, &answer["error"]["code"]),
            (404, &json!("unknown_session")),
            "{method} {path}"
        );
        let (status, _) = call(
            &server,
            method.clone(),
            &path,
            Some(&hs256(&claims("globex", "gus"), SECRET)),
            Some(&started.token),
            body,
        )
        .await;
        assert_eq!(status, 404, "{method} {path} with globex's JWT");
    }
    // Its own tenant reaches it, with its token, from another key of the tenant too.
    let (status, _) = call(
        &server,
        Method::GET,
        &started.status_url,
        Some("sk-acme"),
        Some(&started.token),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = call(
        &server,
        Method::GET,
        &started.status_url,
        Some("sk-acme"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 401, "the session token is still required");
    // The token may also come as ?token=, or as the bearer with the key in X-API-Key.
    let url = format!("{}?token={}", started.status_url, started.token);
    let (status, _) = call(&server, Method::GET, &url, Some("sk-acme-ada"), None, None).await;
    assert_eq!(status, 200);
    let response = server
        .client
        .get(server.url(&started.status_url))
        .header("x-api-key", "sk-acme-ada")
        .bearer_auth(&started.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // And the session runs on for its owner: its gate is answered and it is cancelled.
    assert_eq!(
        server
            .respond_when_open(&started, "coordinator:approve:1", json!({"ok": true}))
            .await,
        200
    );
    let (status, answer) = call(
        &server,
        Method::POST,
        &format!("/api/echo/{}/cancel", started.id),
        Some("sk-acme-ada"),
        Some(&started.token),
        None,
    )
    .await;
    assert_eq!((status, &answer["status"]), (200, &json!("cancelled")));
}

#[tokio::test]
async fn tenant_and_user_come_from_the_credential_and_a_body_naming_others_is_forbidden() {
    let server = serve(auth()).await;
    // A key of one user: both written in.
    let ada = serve(auth()).await.with_credential("sk-acme-ada");
    let started = ada.start("whoami", json!({})).await;
    assert_eq!(
        result_of(&ada, started).await,
        json!({"tenant_id": "acme", "user_id": "ada"})
    );
    // A key of any user of its tenant: the tenant written in, the user the body's.
    let acme = serve(auth()).await.with_credential("sk-acme");
    let started = acme.start("whoami", json!({"user_id": "bob"})).await;
    assert_eq!(
        result_of(&acme, started).await,
        json!({"tenant_id": "acme", "user_id": "bob"})
    );
    // A JWT: its claims.
    let jwt = hs256(&claims("globex", "gus"), SECRET);
    let globex = serve(auth()).await.with_credential(&jwt);
    let started = globex.start("whoami", json!({"tenant_id": "globex"})).await;
    assert_eq!(
        result_of(&globex, started).await,
        json!({"tenant_id": "globex", "user_id": "gus"})
    );

    for (credential, body, field) in [
        ("sk-acme-ada", json!({"tenant_id": "globex"}), "tenant_id"),
        ("sk-acme-ada", json!({"user_id": "bob"}), "user_id"),
        (
            "sk-acme",
            json!({"tenant_id": "globex", "user_id": "bob"}),
            "tenant_id",
        ),
        (jwt.as_str(), json!({"tenant_id": "acme"}), "tenant_id"),
    ] {
        let (status, answer) = call(
            &server,
            Method::POST,
            "/api/whoami/start",
            Some(credential),
            None,
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 403, "{body}");
        assert_eq!(answer["error"]["code"], "forbidden");
        assert_eq!(answer["error"]["field"], field);
    }
}

#[tokio::test]
async fn expired_or_wrongly_signed_or_misaddressed_jwts_are_401() {
    let server = serve(auth()).await;
    let good = claims("acme", "ada");
    let with = |field: &str, value: Value| {
        let mut claims = good.clone();
        claims[field] = value;
        claims
    };
    let (status, _) = call(
        &server,
        Method::POST,
        "/api/whoami/start",
        Some(&hs256(&good, SECRET)),
        None,
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 201);
    for (what, token) in [
        ("expired", hs256(&with("exp", json!(now() - 600)), SECRET)),
        (
            "signed with another secret",
            hs256(&good, b"not the secret"),
        ),
        (
            "from another issuer",
            hs256(&with("iss", json!("https://evil.test")), SECRET),
        ),
        (
            "for another audience",
            hs256(&with("aud", json!("another-api")), SECRET),
        ),
        (
            "without a tenant",
            hs256(&with("tenant_id", Value::Null), SECRET),
        ),
        ("not a JWT at all", "a.b.c".to_owned()),
    ] {
        let (status, answer) = call(
            &server,
            Method::POST,
            "/api/whoami/start",
            Some(&token),
            None,
            Some(json!({})),
        )
        .await;
        assert_eq!(
            (status, &answer["error"]["code"]),
            (401, &json!("unauthorized")),
            "{what}"
        );
    }
}

/// A key pair made by `openssl` (`genpkey` args), as (private PKCS#8 PEM, public SPKI PEM).
fn openssl_key_pair(genpkey: &[&str]) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let private = dir.path().join("private.pem");
    let public = dir.path().join("public.pem");
    let made = std::process::Command::new("openssl")
        .arg("genpkey")
        .args(genpkey)
        .arg("-out")
        .arg(&private)
        .status()
        .expect("openssl runs");
    assert!(made.success());
    let exported = std::process::Command::new("openssl")
        .args(["pkey", "-pubout", "-in"])
        .arg(&private)
        .arg("-out")
        .arg(&public)
        .status()
        .unwrap();
    assert!(exported.success());
    (
        std::fs::read_to_string(private).unwrap(),
        std::fs::read_to_string(public).unwrap(),
    )
}

#[tokio::test]
async fn jwts_signed_with_rsa_or_ec_keys_are_checked_against_the_public_pem() {
    let cases = [
        (
            Algorithm::RS256,
            openssl_key_pair(&["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]),
        ),
        (
            Algorithm::ES256,
            openssl_key_pair(&["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]),
        ),
    ];
    let (other_private, _) =
        openssl_key_pair(&["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]);
    for (algorithm, (private, public)) in cases {
        let server = serve(
            Auth::open()
                .with_jwt_public_key(&public, ISSUER, AUDIENCE)
                .unwrap(),
        )
        .await;
        let key = match algorithm {
            Algorithm::RS256 => EncodingKey::from_rsa_pem(private.as_bytes()).unwrap(),
            _ => EncodingKey::from_ec_pem(private.as_bytes()).unwrap(),
        };
        let token = encode(&Header::new(algorithm), &claims("acme", "ada"), &key).unwrap();
        let (status, body) = call(
            &server,
            Method::POST,
            "/api/whoami/start",
            Some(&token),
            None,
            Some(json!({})),
        )
        .await;
        assert_eq!(status, 201, "{algorithm:?}: {body}");
        // A token signed by another key of the same kind is refused.
        if algorithm == Algorithm::ES256 {
            let forged = encode(
                &Header::new(algorithm),
                &claims("acme", "ada"),
                &EncodingKey::from_ec_pem(other_private.as_bytes()).unwrap(),
            )
            .unwrap();
            let (status, _) = call(
                &server,
                Method::POST,
                "/api/whoami/start",
                Some(&forged),
                None,
                Some(json!({})),
            )
            .await;
            assert_eq!(status, 401, "a token from another EC key");
        }
        // An HS256 token made with the public key as its secret (the old confusion
        // attack) is refused.
        let confused = hs256(&claims("acme", "ada"), public.as_bytes());
        let (status, _) = call(
            &server,
            Method::POST,
            "/api/whoami/start",
            Some(&confused),
            None,
            Some(json!({})),
        )
        .await;
        assert_eq!(
            status, 401,
            "{algorithm:?}: an HS256 token keyed with the public PEM"
        );
    }
}

#[tokio::test]
async fn a_credential_or_tenant_over_its_rate_gets_429_with_retry_after() {
    let auth = auth()
        .with_rate_per_credential(Rate::per_minute(3))
        .with_rate_per_tenant(Rate::per_minute(5));
    let server = serve(auth).await;
    let start = |credential: &'static str| {
        let server = &server;
        async move {
            server
                .client
                .post(server.url("/api/whoami/start"))
                .bearer_auth(credential)
                .json(&json!({}))
                .send()
                .await
                .unwrap()
        }
    };
    for _ in 0..3 {
        assert_eq!(start("sk-acme-ada").await.status(), 201);
    }
    let refused = start("sk-acme-ada").await;
    assert_eq!(refused.status(), 429);
    let wait: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=20).contains(&wait), "retry-after {wait}");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limited");
    // The tenant's other key has the tenant's last two requests; globex is apart.
    assert_eq!(start("sk-acme").await.status(), 201);
    assert_eq!(start("sk-acme").await.status(), 201);
    assert_eq!(start("sk-acme").await.status(), 429);
    assert_eq!(start("sk-globex").await.status(), 201);
}

#[tokio::test]
async fn an_open_server_serves_on_loopback_only() {
    let server =
        AgentServer::new(Arc::new(InMemorySessionStore::new())).with_product(Arc::new(Whoami));
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let error = server.clone().serve(listener).await.unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::PermissionDenied);
    assert!(error.to_string().contains("loopback"), "{error}");
    let requested = "0.0.0.0:0".parse().unwrap();
    let listener = server.listen(requested).await.unwrap();
    assert!(listener.local_addr().unwrap().ip().is_loopback());
    // With a credential set, the address asked for is kept.
    let keyed = server.with_auth(Auth::open().with_api_key("sk", "acme", None));
    let listener = keyed.listen(requested).await.unwrap();
    assert!(listener.local_addr().unwrap().ip().is_unspecified());
}

/// `GET /metrics` answers to the same layer: 401 without a credential, the Prometheus
/// text with one.
#[tokio::test]
async fn metrics_need_a_credential_like_every_route() {
    let metrics = agent_server::install_prometheus().unwrap();
    let server = AgentServer::new(Arc::new(InMemorySessionStore::new()))
        .with_product(Arc::new(Whoami))
        .with_auth(auth())
        .with_metrics(metrics);
    let server = TestServer::spawn(server).await;
    let stranger = server
        .client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(stranger.status(), 401);
    let (status, _) = call(
        &server,
        Method::POST,
        "/api/whoami/start",
        Some("sk-acme-ada"),
        None,
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 201);
    let scraped = server
        .client
        .get(server.url("/metrics"))
        .bearer_auth("sk-acme-ada")
        .send()
        .await
        .unwrap();
    assert_eq!(scraped.status(), 200);
    let text = scraped.text().await.unwrap();
    assert!(
        text.contains("agent_sessions_started_total{product=\"whoami\"} 1"),
        "{text}"
    );
}
