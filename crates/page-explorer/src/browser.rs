//! The browser the explorer drives: the [`Browser`] trait and [`ChromiumBrowser`], a real
//! headless Chromium spoken to over the DevTools protocol.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams,
    DispatchMouseEventPointerType, DispatchMouseEventType, InsertTextParams, MouseButton,
};
use chromiumoxide::keys;
use chromiumoxide::layout::Point;
use chromiumoxide::page::ScreenshotParams;
use chromiumoxide::{BrowserConfig, Page};
use futures::StreamExt as _;
use serde::Deserialize;
use serde_json::Value;
use tokio::task::JoinHandle;

/// Where Debian installs the Chromium binary (`/usr/bin/chromium` is a shell wrapper).
pub const DEBIAN_CHROMIUM: &str = "/usr/lib/chromium/chromium";

/// The flags Chromium is started with, without their leading `--` (chromiumoxide adds it;
/// `--headless` is its default and `--no-sandbox` comes from `no_sandbox()`).
const FLAGS: [&str; 5] = [
    "disable-gpu",
    "disable-background-networking",
    "disable-component-update",
    "disable-sync",
    "no-first-run",
];

/// How long the DOM must stay quiet for the page to count as settled.
const QUIET: Duration = Duration::from_millis(300);

/// How often the page is polled while waiting.
const POLL: Duration = Duration::from_millis(50);

/// Installed in every document before its own scripts: counts `fetch` and `XMLHttpRequest`
/// requests in flight in `window.__peInflight`.
const INFLIGHT_JS: &str = "(() => {
    if (window.__peInflight !== undefined) return;
    window.__peInflight = 0;
    const done = () => { window.__peInflight = Math.max(0, window.__peInflight - 1); };
    const fetch = window.fetch;
    if (fetch) {
        window.fetch = function (...args) {
            window.__peInflight++;
            return fetch.apply(this, args).finally(done);
        };
    }
    const send = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = function (...args) {
        window.__peInflight++;
        this.addEventListener('loadend', done, { once: true });
        return send.apply(this, args);
    };
})();";

/// What can go wrong driving a browser.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// No browser could start.
    #[error("no browser could start: {reason}; install Chromium: apt-get install -y chromium")]
    Launch {
        /// Why it did not start.
        reason: String,
    },
    /// No element matches the selector.
    #[error("no element matches {selector:?}")]
    ElementNotFound {
        /// The selector that matched nothing.
        selector: String,
    },
    /// The browser did not answer in time.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The browser answered with an error, or something it could not be asked.
    #[error("browser protocol error: {0}")]
    Protocol(String),
}

impl BrowserError {
    fn protocol(context: &str, error: impl std::fmt::Display) -> Self {
        BrowserError::Protocol(format!("{context}: {error}"))
    }
}

/// One browser tab as the explorer sees it. Object safe: used as `&dyn Browser`.
///
/// Selectors are CSS selectors; a selector of the form `A >>> B` means "the element `B`
/// inside the same-origin iframe or open shadow root of the element `A`".
#[async_trait]
pub trait Browser: Send + Sync {
    /// Navigates to `url` and waits for it to load.
    async fn open(&self, url: &str) -> Result<(), BrowserError>;
    /// The URL shown now.
    async fn url(&self) -> Result<String, BrowserError>;
    /// The document's title.
    async fn title(&self) -> Result<String, BrowserError>;
    /// Evaluates a JavaScript expression in the page (promises are awaited) and returns its
    /// value as JSON (`null` for `undefined`).
    async fn evaluate(&self, js: &str) -> Result<Value, BrowserError>;
    /// Scrolls the element into view and clicks its centre with the mouse.
    async fn click(&self, selector: &str) -> Result<(), BrowserError>;
    /// Turns the mouse wheel by (`dx`, `dy`) pixels over the middle of the viewport.
    async fn scroll(&self, dx: f64, dy: f64) -> Result<(), BrowserError>;
    /// Clicks the field, clears it and types `text` into it.
    async fn type_text(&self, selector: &str, text: &str) -> Result<(), BrowserError>;
    /// Waits until the document is loaded, no `fetch` or `XMLHttpRequest` is in flight and
    /// the DOM has been quiet for about 300 ms, or `timeout` has passed (which is not an error).
    async fn wait_for_settle(&self, timeout: Duration) -> Result<(), BrowserError>;
    /// A PNG of the viewport.
    async fn screenshot(&self) -> Result<Vec<u8>, BrowserError>;
}

/// How to start Chromium.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// The browser binary; `None` uses [`DEBIAN_CHROMIUM`] when it exists, else whichever
    /// chromiumoxide finds.
    pub executable: Option<PathBuf>,
    /// The window size in CSS pixels.
    pub window: (u32, u32),
    /// How long a navigation or command may take.
    pub timeout: Duration,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions {
            executable: None,
            window: (1280, 900),
            timeout: Duration::from_secs(20),
        }
    }
}

/// A headless Chromium with its own temporary profile and one tab. Call
/// [`ChromiumBrowser::close`] at the end, or the Chromium process outlives the program.
pub struct ChromiumBrowser {
    browser: chromiumoxide::Browser,
    page: Page,
    handler: JoinHandle<()>,
    profile: Option<tempfile::TempDir>,
    timeout: Duration,
}

impl std::fmt::Debug for ChromiumBrowser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChromiumBrowser")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl ChromiumBrowser {
    /// Starts Chromium headless (`--headless --no-sandbox --disable-gpu
    /// --disable-background-networking --disable-component-update --disable-sync
    /// --no-first-run`) with a fresh temporary profile, and opens a blank tab.
    pub async fn launch(options: LaunchOptions) -> Result<Self, BrowserError> {
        let launch = |reason: String| BrowserError::Launch { reason };
        let executable = match &options.executable {
            Some(path) => {
                if !path.exists() {
                    return Err(launch(format!("{} does not exist", path.display())));
                }
                Some(path.clone())
            }
            None => Path::new(DEBIAN_CHROMIUM)
                .exists()
                .then(|| PathBuf::from(DEBIAN_CHROMIUM)),
        };
        let profile = tempfile::tempdir()
            .map_err(|error| launch(format!("no temporary profile directory: {error}")))?;
        // chromiumoxide's own long list of default flags is left out: only ours are given.
        let mut config = BrowserConfig::builder()
            .disable_default_args()
            .no_sandbox()
            .user_data_dir(profile.path())
            .window_size(options.window.0, options.window.1)
            .request_timeout(options.timeout)
            .args(FLAGS);
        if let Some(executable) = &executable {
            config = config.chrome_executable(executable);
        }
        let config = config.build().map_err(launch)?;
        let (mut browser, mut handler) = chromiumoxide::Browser::launch(config)
            .await
            .map_err(|error| launch(error.to_string()))?;
        let handler = tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                if let Err(error) = event {
                    tracing::trace!(%error, "CDP handler");
                }
            }
        });
        let page = match browser.new_page("about:blank").await {
            Ok(page) => page,
            Err(error) => {
                let _ = browser.close().await;
                let _ = browser.wait().await;
                handler.abort();
                return Err(launch(format!("no tab could open: {error}")));
            }
        };
        // Count the page's requests in flight from the start of every document, for
        // `wait_for_settle`.
        if let Err(error) = page.evaluate_on_new_document(INFLIGHT_JS).await {
            tracing::warn!(%error, "requests in flight will not be counted");
        }
        tracing::debug!(executable = ?executable, "Chromium started");
        Ok(ChromiumBrowser {
            browser,
            page,
            handler,
            profile: Some(profile),
            timeout: options.timeout,
        })
    }

    /// Closes the browser, waits for its process to end and removes its profile.
    pub async fn close(mut self) {
        let closed = tokio::time::timeout(Duration::from_secs(10), async {
            let _ = self.browser.close().await;
            let _ = self.browser.wait().await;
        })
        .await;
        if closed.is_err() {
            tracing::warn!("Chromium did not close in time: killing it");
            let _ = self.browser.kill().await;
            let _ = self.browser.wait().await;
        }
        self.handler.abort();
        if let Some(profile) = self.profile.take()
            && let Err(error) = profile.close()
        {
            tracing::warn!(%error, "the Chromium profile could not be removed");
        }
    }

    async fn with_timeout<T>(
        &self,
        what: &str,
        future: impl Future<Output = Result<T, BrowserError>>,
    ) -> Result<T, BrowserError> {
        tokio::time::timeout(self.timeout, future)
            .await
            .map_err(|_| BrowserError::Timeout(format!("{what} took over {:?}", self.timeout)))?
    }

    /// Finds the element (through `>>>` frames and shadow roots), scrolls it into view and
    /// returns its centre in viewport coordinates.
    async fn locate(&self, selector: &str) -> Result<Point, BrowserError> {
        #[derive(Deserialize)]
        struct Located {
            found: bool,
            x: f64,
            y: f64,
        }
        let script = format!(
            "(() => {{
                const parts = {parts};
                let root = document, offX = 0, offY = 0, el = null;
                for (let i = 0; i < parts.length; i++) {{
                    el = root.querySelector(parts[i]);
                    if (!el) return {{ found: false, x: 0, y: 0 }};
                    if (i + 1 < parts.length) {{
                        if (el.tagName === 'IFRAME') {{
                            el.scrollIntoView({{ block: 'center', inline: 'center' }});
                            const r = el.getBoundingClientRect();
                            offX += r.left + el.clientLeft; offY += r.top + el.clientTop;
                            root = el.contentDocument;
                        }} else {{
                            root = el.shadowRoot;
                        }}
                        if (!root) return {{ found: false, x: 0, y: 0 }};
                    }}
                }}
                el.scrollIntoView({{ block: 'center', inline: 'center' }});
                const r = el.getBoundingClientRect();
                return {{ found: true, x: offX + r.left + r.width / 2, y: offY + r.top + r.height / 2 }};
            }})()",
            parts = Value::from(split_selector(selector))
        );
        let located: Located = serde_json::from_value(self.evaluate(&script).await?)
            .map_err(|error| BrowserError::protocol("locating an element", error))?;
        if !located.found {
            return Err(BrowserError::ElementNotFound {
                selector: selector.to_owned(),
            });
        }
        Ok(Point::new(located.x, located.y))
    }
}

/// Splits `A >>> B >>> C` into its parts.
pub(crate) fn split_selector(selector: &str) -> Vec<String> {
    selector
        .split(">>>")
        .map(|part| part.trim().to_owned())
        .collect()
}

#[async_trait]
impl Browser for ChromiumBrowser {
    async fn open(&self, url: &str) -> Result<(), BrowserError> {
        self.with_timeout("opening the page", async {
            self.page
                .goto(url)
                .await
                .map_err(|error| BrowserError::protocol(&format!("opening {url}"), error))?;
            Ok(())
        })
        .await
    }

    async fn url(&self) -> Result<String, BrowserError> {
        let url = self
            .page
            .url()
            .await
            .map_err(|error| BrowserError::protocol("reading the URL", error))?;
        Ok(url.unwrap_or_default())
    }

    async fn title(&self) -> Result<String, BrowserError> {
        let title = self
            .page
            .get_title()
            .await
            .map_err(|error| BrowserError::protocol("reading the title", error))?;
        Ok(title.unwrap_or_default())
    }

    async fn evaluate(&self, js: &str) -> Result<Value, BrowserError> {
        self.with_timeout("evaluating a script", async {
            let result = self
                .page
                .evaluate_expression(js)
                .await
                .map_err(|error| BrowserError::protocol("evaluating a script", error))?;
            Ok(result.value().cloned().unwrap_or(Value::Null))
        })
        .await
    }

    async fn click(&self, selector: &str) -> Result<(), BrowserError> {
        let point = self.locate(selector).await?;
        self.with_timeout("clicking", async {
            self.page
                .click(point)
                .await
                .map_err(|error| BrowserError::protocol(&format!("clicking {selector}"), error))?;
            Ok(())
        })
        .await
    }

    async fn scroll(&self, dx: f64, dy: f64) -> Result<(), BrowserError> {
        let size: Value = self
            .evaluate("[window.innerWidth, window.innerHeight]")
            .await?;
        let x = size.get(0).and_then(Value::as_f64).unwrap_or(0.0) / 2.0;
        let y = size.get(1).and_then(Value::as_f64).unwrap_or(0.0) / 2.0;
        // The pointer goes over the page first, as a person's would.
        let hover = DispatchMouseEventParams::new(DispatchMouseEventType::MouseMoved, x, y);
        let mut wheel = DispatchMouseEventParams::new(DispatchMouseEventType::MouseWheel, x, y);
        wheel.pointer_type = Some(DispatchMouseEventPointerType::Mouse);
        wheel.button = Some(MouseButton::None);
        wheel.delta_x = Some(dx);
        wheel.delta_y = Some(dy);
        self.with_timeout("scrolling", async {
            self.page
                .execute(hover)
                .await
                .map_err(|error| BrowserError::protocol("moving the mouse", error))?;
            self.page
                .execute(wheel)
                .await
                .map_err(|error| BrowserError::protocol("turning the mouse wheel", error))?;
            Ok(())
        })
        .await
    }

    async fn type_text(&self, selector: &str, text: &str) -> Result<(), BrowserError> {
        self.click(selector).await?;
        // Clear what the field holds, so typing replaces it.
        let parts = Value::from(split_selector(selector));
        let clear = format!(
            "(() => {{
                const parts = {parts};
                let root = document, el = null;
                for (let i = 0; i < parts.length; i++) {{
                    el = root.querySelector(parts[i]);
                    if (!el) return false;
                    if (i + 1 < parts.length) root = el.tagName === 'IFRAME' ? el.contentDocument : el.shadowRoot;
                }}
                el.focus();
                if ('value' in el) {{
                    el.value = '';
                    el.dispatchEvent(new Event('input', {{ bubbles: true }}));
                }}
                return true;
            }})()"
        );
        if self.evaluate(&clear).await? != Value::Bool(true) {
            return Err(BrowserError::ElementNotFound {
                selector: selector.to_owned(),
            });
        }
        self.with_timeout("typing", async {
            let failed = |error| BrowserError::protocol(&format!("typing into {selector}"), error);
            // Key by key, as a person types: pages that listen for keydown or keyup (search as
            // you type) see them. A character with no key (é, emoji) is inserted as text.
            for c in text.chars() {
                let character = c.to_string();
                match keys::get_key_definition(&character) {
                    Some(key) => {
                        for (kind, with_text) in [
                            (DispatchKeyEventType::KeyDown, true),
                            (DispatchKeyEventType::KeyUp, false),
                        ] {
                            let mut event = DispatchKeyEventParams::builder()
                                .r#type(kind)
                                .key(key.key)
                                .code(key.code)
                                .windows_virtual_key_code(key.key_code)
                                .native_virtual_key_code(key.key_code);
                            if with_text {
                                event = event.text(key.text.unwrap_or(key.key));
                            }
                            let event = event.build().map_err(|e| {
                                BrowserError::Protocol(format!("a key event for {c:?}: {e}"))
                            })?;
                            self.page.execute(event).await.map_err(failed)?;
                        }
                    }
                    None => {
                        self.page
                            .execute(InsertTextParams::new(character))
                            .await
                            .map_err(failed)?;
                    }
                }
            }
            Ok(())
        })
        .await
    }

    async fn wait_for_settle(&self, timeout: Duration) -> Result<(), BrowserError> {
        // A MutationObserver counts DOM changes; the page is settled once the document is
        // complete and the count has not moved for `QUIET`.
        const PROBE: &str = "(() => {
            if (!window.__peSettle) {
                window.__peSettle = { changes: 0 };
                try {
                    new MutationObserver(() => { window.__peSettle.changes++; })
                        .observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
                } catch (e) {}
            }
            return [document.readyState, window.__peSettle.changes, window.__peInflight || 0];
        })()";
        let deadline = Instant::now() + timeout;
        let mut last: Option<(Value, Instant)> = None;
        loop {
            match self.evaluate(PROBE).await {
                Ok(state) => {
                    let ready = state.get(0).and_then(Value::as_str) == Some("complete")
                        && state.get(2).and_then(Value::as_u64) == Some(0);
                    match &last {
                        Some((seen, since)) if *seen == state => {
                            if ready && since.elapsed() >= QUIET {
                                return Ok(());
                            }
                        }
                        _ => last = Some((state, Instant::now())),
                    }
                }
                // A navigation can leave no document to ask for a moment.
                Err(error) => tracing::trace!(%error, "settling"),
            }
            if Instant::now() >= deadline {
                tracing::debug!(?timeout, "the page did not settle in time");
                return Ok(());
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn screenshot(&self) -> Result<Vec<u8>, BrowserError> {
        self.with_timeout("taking a screenshot", async {
            self.page
                .screenshot(ScreenshotParams::builder().build())
                .await
                .map_err(|error| BrowserError::protocol("taking a screenshot", error))
        })
        .await
    }
}
