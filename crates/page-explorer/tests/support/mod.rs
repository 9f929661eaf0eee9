//! Shared by the browser tests: the fixture sites served on loopback with the library's
//! static file server ([`page_explorer::site_server`]; `?delay=MS` on any path answers that
//! much later), and a Chromium launcher.
#![allow(dead_code)]

use std::path::PathBuf;

use page_explorer::site_server::serve_dir;
use page_explorer::{ChromiumBrowser, LaunchOptions};

/// The fixture site `name` (a directory under `fixtures/sites/`).
pub fn site(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sites")
        .join(name)
}

/// Serves `dir` on `127.0.0.1:0` for the rest of the test; returns the base URL (ending in
/// `/`).
pub async fn serve(dir: PathBuf) -> String {
    let site = serve_dir(dir).await.expect("the fixture site is served");
    let url = site.url().to_owned();
    // Served until the test's runtime ends.
    std::mem::forget(site);
    url
}

/// Starts Chromium with the default options.
pub async fn launch() -> ChromiumBrowser {
    ChromiumBrowser::launch(LaunchOptions::default())
        .await
        .expect("Chromium starts (apt-get install -y chromium)")
}
