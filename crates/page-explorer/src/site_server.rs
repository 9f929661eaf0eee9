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

use std::path::PathBuf;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, Uri, header};
use axum::middleware::Next;
use axum::response::Response;
use tokio::task::JoinHandle;
use tower_http::services::ServeDir;

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
/// Tokio runtime (tower-http's `ServeDir`: content types by extension, a directory
/// answers with its `index.html`, a path that climbs out of `dir` is not found).
pub async fn serve_dir(dir: PathBuf) -> std::io::Result<ServedSite> {
    if !dir.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{} is not a directory", dir.display()),
        ));
    }
    let app = Router::new()
        .fallback_service(ServeDir::new(dir))
        .layer(axum::middleware::from_fn(delayed));
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

/// Answers `?delay=MS` that many milliseconds late, and says that HTML and plain text
/// are UTF-8 (a saved page without a `<meta charset>` would otherwise be read as Latin-1).
async fn delayed(request: Request, next: Next) -> Response {
    if let Some(delay) = requested_delay(request.uri()) {
        tokio::time::sleep(delay).await;
    }
    let mut response = next.run(request).await;
    let content_type = response.headers().get(header::CONTENT_TYPE);
    let bare = content_type
        .and_then(|v| v.to_str().ok())
        .filter(|v| matches!(*v, "text/html" | "text/plain"))
        .map(|v| format!("{v}; charset=utf-8"));
    if let Some(value) = bare.and_then(|v| HeaderValue::from_str(&v).ok()) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    #[test]
    fn delays_are_read_from_the_query() {
        let uri: Uri = "/salaries.json?x=1&delay=250".parse().unwrap();
        assert_eq!(requested_delay(&uri), Some(Duration::from_millis(250)));
        let uri: Uri = "/index.html".parse().unwrap();
        assert_eq!(requested_delay(&uri), None);
    }

    /// The status line and body of `GET path`.
    async fn get(site: &ServedSite, path: &str) -> String {
        let address = site
            .url()
            .trim_start_matches("http://")
            .trim_end_matches('/');
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn serves_files_and_never_what_lies_outside() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("site");
        std::fs::create_dir_all(site.join("jobs")).unwrap();
        std::fs::write(site.join("index.html"), "<p>hi</p>").unwrap();
        std::fs::write(site.join("jobs").join("a b.html"), "<p>job</p>").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "no").unwrap();
        let served = serve_dir(site).await.unwrap();
        let index = get(&served, "/").await;
        assert!(index.starts_with("HTTP/1.1 200"), "{index}");
        assert!(
            index.contains("content-type: text/html; charset=utf-8")
                && index.ends_with("<p>hi</p>"),
            "{index}"
        );
        assert!(
            get(&served, "/jobs/a%20b.html?delay=5")
                .await
                .ends_with("<p>job</p>")
        );
        assert!(
            get(&served, "/missing.html")
                .await
                .starts_with("HTTP/1.1 404")
        );
        for climbing in [
            "/jobs/../../secret.txt",
            "/%2e%2e/secret.txt",
            "/jobs/..%2F..%2Fsecret.txt",
        ] {
            let answer = get(&served, climbing).await;
            assert!(answer.starts_with("HTTP/1.1 4"), "{climbing}: {answer}");
            assert!(!answer.ends_with("no"), "{climbing}: {answer}");
        }
    }
}
