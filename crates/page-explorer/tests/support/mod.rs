//! Shared by the browser tests: a tiny static file server on loopback for the fixture sites
//! (`?delay=MS` on any path answers that much later),
//! and a Chromium launcher that always closes.

use std::path::PathBuf;

use axum::Router;
use axum::body::Body;
use axum::http::{StatusCode, Uri, header};
use axum::response::Response;
use page_explorer::{ChromiumBrowser, LaunchOptions};

/// The fixture site `name` (a directory under `fixtures/sites/`).
pub fn site(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sites")
        .join(name)
}

/// Serves `dir` on `127.0.0.1:0`; returns the base URL (ending in `/`).
pub async fn serve(dir: PathBuf) -> String {
    let app = Router::new().fallback(move |uri: Uri| {
        let dir = dir.clone();
        async move {
            // `?delay=MS` answers late, like a slow API.
            let delay = uri
                .query()
                .and_then(|q| q.strip_prefix("delay="))
                .and_then(|ms| ms.parse::<u64>().ok());
            if let Some(ms) = delay {
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            }
            file(&dir, &uri)
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}/")
}

fn file(dir: &std::path::Path, uri: &Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    let mut target = dir.to_path_buf();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        if part == ".." {
            return status(StatusCode::FORBIDDEN);
        }
        target.push(part);
    }
    if target.is_dir() {
        target.push("index.html");
    }
    let Ok(bytes) = std::fs::read(&target) else {
        return status(StatusCode::NOT_FOUND);
    };
    let kind = match target.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("css") => "text/css",
        Some("json") => "application/json",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    };
    Response::builder()
        .header(header::CONTENT_TYPE, kind)
        .body(Body::from(bytes))
        .unwrap()
}

fn status(code: StatusCode) -> Response {
    Response::builder()
        .status(code)
        .body(Body::empty())
        .unwrap()
}

/// Starts Chromium with the default options.
pub async fn launch() -> ChromiumBrowser {
    ChromiumBrowser::launch(LaunchOptions::default())
        .await
        .expect("Chromium starts (apt-get install -y chromium)")
}
