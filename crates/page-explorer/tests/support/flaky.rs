//! A real browser that fails on purpose: every call fails while the page shown is one of
//! the broken ones, either a number of times or for good (a browser that died there).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use page_explorer::{Browser, BrowserError, ChromiumBrowser};
use serde_json::Value;

/// Wraps a real browser; see [`Flaky::failing_on`] and [`Flaky::dying_on`].
pub struct Flaky {
    inner: Arc<ChromiumBrowser>,
    /// The URL fragment of the broken page.
    page: String,
    /// How many more calls fail on it (`usize::MAX`: all of them, wherever the browser is
    /// once it has been there).
    failures_left: Mutex<usize>,
    dead: Mutex<bool>,
    /// The calls that failed.
    pub failed: Mutex<usize>,
    /// Never answer on the broken page instead of failing (a process that died there),
    /// told through this.
    pub hung: Option<tokio::sync::Notify>,
}

impl Flaky {
    /// Fails `times` calls made while a URL containing `page` is shown.
    pub fn failing_on(inner: &Arc<ChromiumBrowser>, page: &str, times: usize) -> Self {
        Flaky {
            inner: inner.clone(),
            page: page.to_owned(),
            failures_left: Mutex::new(times),
            dead: Mutex::new(false),
            failed: Mutex::new(0),
            hung: None,
        }
    }

    /// Never answers once a URL containing `page` is shown: the caller's future hangs
    /// there, to be dropped as a crash would end it ([`hung`](Self::hung) says when).
    pub fn hanging_on(inner: &Arc<ChromiumBrowser>, page: &str) -> Self {
        Flaky {
            hung: Some(tokio::sync::Notify::new()),
            ..Self::dying_on(inner, page)
        }
    }

    /// Fails every call from the first one made on a URL containing `page` on.
    pub fn dying_on(inner: &Arc<ChromiumBrowser>, page: &str) -> Self {
        Self::failing_on(inner, page, usize::MAX)
    }

    async fn check(&self) -> Result<(), BrowserError> {
        if !*self.dead.lock().unwrap() {
            let url = self.inner.url().await?;
            if !url.contains(&self.page) {
                return Ok(());
            }
            let mut left = self.failures_left.lock().unwrap();
            if *left == 0 {
                return Ok(());
            }
            if *left == usize::MAX {
                *self.dead.lock().unwrap() = true;
            } else {
                *left -= 1;
            }
        }
        if let Some(hung) = &self.hung {
            hung.notify_one();
            std::future::pending::<()>().await;
        }
        *self.failed.lock().unwrap() += 1;
        Err(BrowserError::Timeout(
            "the page stopped answering (on purpose)".into(),
        ))
    }
}

#[async_trait]
impl Browser for Flaky {
    async fn open(&self, url: &str) -> Result<(), BrowserError> {
        if *self.dead.lock().unwrap() {
            return self.check().await;
        }
        self.inner.open(url).await
    }
    async fn url(&self) -> Result<String, BrowserError> {
        self.check().await?;
        self.inner.url().await
    }
    async fn title(&self) -> Result<String, BrowserError> {
        self.check().await?;
        self.inner.title().await
    }
    async fn evaluate(&self, js: &str) -> Result<Value, BrowserError> {
        self.check().await?;
        self.inner.evaluate(js).await
    }
    async fn click(&self, selector: &str) -> Result<(), BrowserError> {
        self.check().await?;
        self.inner.click(selector).await
    }
    async fn scroll(&self, dx: f64, dy: f64) -> Result<(), BrowserError> {
        self.check().await?;
        self.inner.scroll(dx, dy).await
    }
    async fn type_text(&self, selector: &str, text: &str) -> Result<(), BrowserError> {
        self.check().await?;
        self.inner.type_text(selector, text).await
    }
    async fn wait_for_settle(&self, timeout: Duration) -> Result<(), BrowserError> {
        self.check().await?;
        self.inner.wait_for_settle(timeout).await
    }
    async fn screenshot(&self) -> Result<Vec<u8>, BrowserError> {
        self.check().await?;
        self.inner.screenshot().await
    }
}
