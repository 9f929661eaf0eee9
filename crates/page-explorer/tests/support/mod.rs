//! Shared by the browser tests: the fixture sites served on loopback with the library's
//! static file server ([`page_explorer::site_server`]; `?delay=MS` on any path answers that
//! much later), and a Chromium launcher.
#![allow(dead_code)]

pub mod flaky;
pub mod script;

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

/// How long the tests let a page settle.
pub const SETTLE: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs `test` with a fresh browser, and closes the browser whatever happens.
pub async fn with_browser<F>(test: F)
where
    F: AsyncFnOnce(&ChromiumBrowser),
{
    let browser = launch().await;
    let outcome = {
        let run = std::panic::AssertUnwindSafe(test(&browser));
        futures::FutureExt::catch_unwind(run).await
    };
    browser.close().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Like [`with_browser`], with the browser shared (as a durable collection's graph holds
/// it); closed when the test is done with it.
pub async fn with_shared_browser<F>(test: F)
where
    F: AsyncFnOnce(&std::sync::Arc<ChromiumBrowser>),
{
    let browser = std::sync::Arc::new(launch().await);
    let outcome = {
        let run = std::panic::AssertUnwindSafe(test(&browser));
        futures::FutureExt::catch_unwind(run).await
    };
    if let Some(browser) = std::sync::Arc::into_inner(browser) {
        browser.close().await;
    }
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Opens `url` and waits for it to settle.
pub async fn open(browser: &ChromiumBrowser, url: &str) {
    use page_explorer::Browser as _;
    browser.open(url).await.unwrap();
    browser.wait_for_settle(SETTLE).await.unwrap();
}

/// Owned strings.
pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}
