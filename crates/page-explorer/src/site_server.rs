//! A tiny static-file server on loopback, for pointing the browser at a directory of pages
//! (the fixture sites, a saved board). Any path answers `?delay=MS` that many milliseconds
//! late, like a slow API; a path with `..` in it is refused.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use page_explorer::site_server::serve_dir;
//! let site = serve_dir("fixtures/sites/board-pages".into()).await?;
//! tracing::info!("serving on {}", site.url());
//! // ... point the browser at site.url() ...
//! drop(site); // stops serving
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse as _, Response};
use tokio::task::JoinHandle;

/// The longest `?delay=` honoured, so a request cannot hold the server forever.
const MAX_DELAY: Duration = Duration::from_secs(60);

/// A directory served on `127.0.0.1`; serving stops when it is dropped.
#[derive(Debug)]
pub struct ServedSite {
    url: String,
    task: JoinHandle<()>,
}

impl ServedSite {
    /// The base URL, ending in `/` (e.g. `http://127.0.0.1:41234/`).
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for ServedSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves the files of `dir` on `127.0.0.1` on a free port, from a task on the current
/// Tokio runtime. A directory answers with its `index.html`.
pub async fn serve_dir(dir: PathBuf) -> std::io::Result<ServedSite> {
    if !dir.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{} is not a directory", dir.display()),
        ));
    }
    let app = Router::new().fallback(move |uri: Uri| {
        let dir = dir.clone();
        async move {
            if let Some(delay) = requested_delay(&uri) {
                tokio::time::sleep(delay).await;
            }
            file(&dir, &uri)
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::warn!(%error, "the static file server stopped");
        }
    });
    Ok(ServedSite {
        url: format!("http://{address}/"),
        task,
    })
}

/// The `delay=MS` of the query, if any.
fn requested_delay(uri: &Uri) -> Option<Duration> {
    let ms = uri
        .query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("delay="))?
        .parse::<u64>()
        .ok()?;
    Some(Duration::from_millis(ms).min(MAX_DELAY))
}

/// The file `uri` names under `dir`, with its content type.
fn file(dir: &Path, uri: &Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    let mut target = dir.to_path_buf();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        let part = percent_decode(part);
        if part == ".." || part.contains(['/', '\\']) {
            return StatusCode::FORBIDDEN.into_response();
        }
        target.push(part);
    }
    if target.is_dir() {
        target.push("index.html");
    }
    let Ok(bytes) = std::fs::read(&target) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    (
        [(header::CONTENT_TYPE, content_type(&target))],
        Body::from(bytes),
    )
        .into_response()
}

/// The content type for the file's extension.
fn content_type(path: &Path) -> &'static str {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript",
        Some("css") => "text/css",
        Some("json") => "application/json",
        Some("txt") => "text/plain; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("woff2") => "font/woff2",
        _ => "application/octet-stream",
    }
}

/// Decodes `%XX` escapes (a path segment such as `a%20b.html`); invalid escapes stay as
/// written.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_and_decoding() {
        let uri: Uri = "/salaries.json?x=1&delay=250".parse().unwrap_or_default();
        assert_eq!(requested_delay(&uri), Some(Duration::from_millis(250)));
        let uri: Uri = "/index.html".parse().unwrap_or_default();
        assert_eq!(requested_delay(&uri), None);
        assert_eq!(percent_decode("a%20b%2E%2e"), "a b..");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(
            content_type(Path::new("x/INDEX.HTML")),
            "text/html; charset=utf-8"
        );
    }

    #[test]
    fn serves_files_and_refuses_to_climb_out() {
        let Ok(dir) = tempfile::tempdir() else { return };
        let site = dir.path().join("site");
        assert!(std::fs::create_dir_all(site.join("jobs")).is_ok());
        assert!(std::fs::write(site.join("index.html"), "<p>hi</p>").is_ok());
        assert!(std::fs::write(dir.path().join("secret.txt"), "no").is_ok());
        let get = |path: &str| file(&site, &path.parse().unwrap_or_default()).status();
        assert_eq!(get("/"), StatusCode::OK);
        assert_eq!(get("/index.html"), StatusCode::OK);
        assert_eq!(get("/missing.html"), StatusCode::NOT_FOUND);
        assert_eq!(get("/jobs/../../secret.txt"), StatusCode::FORBIDDEN);
        assert_eq!(get("/%2e%2e/secret.txt"), StatusCode::FORBIDDEN);
        assert_eq!(get("/jobs/..%2F..%2Fsecret.txt"), StatusCode::FORBIDDEN);
    }
}
