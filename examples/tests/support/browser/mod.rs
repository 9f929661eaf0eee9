//! Drives the resume page (`crates/resume-coordinator/assets/index.html`) in a real headless
//! Chromium, as a person would: fill the start form, click Start, answer every gate the
//! page shows with canned answers, and read the finished resume and its DOCX download.
//!
//! It knows the page only by its stable hooks: `#resume`, `#job`, `#company`,
//! `#fast-draft`, `#start`, `#error`, `#session-view`, `#timeline` (`li[data-type]`),
//! the gate forms `form[data-gate-name][data-gate-id]` with named fields, buttons
//! `button[data-action=approve|edit|revise|submit]` and an error box `[data-role=error]`,
//! `#result` and `#download`. Any server that serves the page at `/` with the resume API
//! behind it can be driven: a stand-in product or the real one.
//!
//! ```ignore
//! let chromium = Chromium::launch().await.expect("a browser");
//! let page = chromium.open(&format!("{base}/")).await.expect("the page");
//! let outcome = run_session(&page, &StartInput::sample(), &Canned::default(), PATIENCE).await;
//! chromium.close().await;
//! let outcome = outcome.expect("a finished resume");
//! ```

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use chromiumoxide::{Browser, BrowserConfig, Page};
use futures::StreamExt as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

mod gates;

use gates::{answer_gates, snapshot};

/// Where Debian installs the Chromium binary (`/usr/bin/chromium` is a shell wrapper).
const DEBIAN_CHROMIUM: &str = "/usr/lib/chromium/chromium";
/// What to do when no browser starts.
const INSTALL_HINT: &str = "Chromium is needed: apt-get install -y chromium";
/// How often the page is polled.
const POLL: Duration = Duration::from_millis(50);
/// How long a gate form may take to go away once answered.
const ANSWER_PATIENCE: Duration = Duration::from_secs(15);

/// A headless Chromium with its own throwaway profile. Call [`Chromium::close`] at the end,
/// or Chromium processes outlive the test.
pub struct Chromium {
    browser: Browser,
    handler: JoinHandle<()>,
    _profile: tempfile::TempDir,
}

impl Chromium {
    /// Starts Chromium (`/usr/lib/chromium/chromium` when it exists, else whichever
    /// chromiumoxide finds). The error says how to install one when none starts.
    pub async fn launch() -> anyhow::Result<Self> {
        let profile = tempfile::tempdir().context("a profile directory for Chromium")?;
        let mut config = BrowserConfig::builder()
            .no_sandbox()
            .user_data_dir(profile.path())
            .window_size(1200, 900)
            .args([
                "disable-gpu",
                "disable-background-networking",
                "disable-component-update",
                "disable-sync",
                "no-first-run",
            ]);
        if Path::new(DEBIAN_CHROMIUM).exists() {
            config = config.chrome_executable(DEBIAN_CHROMIUM);
        }
        let config = config
            .build()
            .map_err(|error| anyhow!("{INSTALL_HINT} ({error})"))?;
        let (browser, mut handler) = Browser::launch(config)
            .await
            .map_err(|error| anyhow!("{INSTALL_HINT} (Chromium did not start: {error})"))?;
        // The handler carries every CDP message: it must be polled for the browser to work.
        let handler = tokio::spawn(async move { while handler.next().await.is_some() {} });
        Ok(Chromium {
            browser,
            handler,
            _profile: profile,
        })
    }

    /// A new tab showing `url`, loaded.
    pub async fn open(&self, url: &str) -> anyhow::Result<Page> {
        let page = self
            .browser
            .new_page(url)
            .await
            .with_context(|| format!("opening {url}"))?;
        page.wait_for_navigation()
            .await
            .with_context(|| format!("loading {url}"))?;
        Ok(page)
    }

    /// Closes the browser and waits for its process to end.
    pub async fn close(mut self) {
        let closed = tokio::time::timeout(Duration::from_secs(10), async {
            let _ = self.browser.close().await;
            let _ = self.browser.wait().await;
        })
        .await;
        if closed.is_err() {
            let _ = self.browser.kill().await;
        }
        self.handler.abort();
    }
}

/// What the start form is filled with.
#[derive(Debug, Clone)]
pub struct StartInput {
    /// `#resume`.
    pub resume_text: String,
    /// `#job`.
    pub job_description: String,
    /// `#company` (left empty when `None`).
    pub company: Option<String>,
    /// `#fast-draft`.
    pub fast_draft: bool,
}

impl StartInput {
    /// A short resume and job description.
    pub fn sample() -> Self {
        StartInput {
            resume_text: "Jane Doe\njane@example.com\n\nEXPERIENCE\nSenior Engineer, Acme (2019-2024)\n- Built the billing platform in Rust\n- Led a team of five\n".to_owned(),
            job_description: "Staff Backend Engineer at Globex. You will design distributed systems in Rust and mentor engineers.".to_owned(),
            company: Some("Globex".to_owned()),
            fast_draft: false,
        }
    }
}

/// How a `section_review_*` gate is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SectionAnswer {
    /// `Approve`.
    Approve,
    /// `Edit`: this text is appended to the section's Markdown in the editor.
    Edit {
        /// Appended to the editor's text.
        append: String,
    },
    /// `Request changes` with this feedback.
    Revise {
        /// The feedback.
        feedback: String,
    },
}

/// The canned answers: every questionnaire field and positioning question answered,
/// everything else approved, unless said otherwise here.
#[derive(Debug, Clone)]
pub struct Canned {
    /// Written into every questionnaire field, followed by ` (<question id>)`.
    pub questionnaire: String,
    /// The answer to every `positioning_q_*` question.
    pub positioning: String,
    /// Sent as feedback to the first `architect_review` (later ones are approved).
    pub architect_feedback: Option<String>,
    /// Answers to the `section_review_*` gates, in the order they open; `Approve` after.
    pub sections: Vec<SectionAnswer>,
    /// Reload the page once after this many answers (the page must reconnect).
    pub reload_after: Option<usize>,
}

impl Default for Canned {
    fn default() -> Self {
        Canned {
            questionnaire: "I owned this end to end and can give numbers".to_owned(),
            positioning:
                "I want to be seen as the engineer who makes billing systems reliable at scale."
                    .to_owned(),
            architect_feedback: None,
            sections: Vec::new(),
            reload_after: None,
        }
    }
}

/// One gate the driver answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// `gate_open.gate_id` (the form's `data-gate-id`).
    pub id: String,
    /// `gate_open.name` (the form's `data-gate-name`).
    pub name: String,
    /// The button clicked (`data-action`).
    pub action: String,
}

/// One `#timeline` item.
#[derive(Debug, Clone, Deserialize)]
pub struct TimelineItem {
    /// Its `data-type` (the event's type).
    #[serde(rename = "type")]
    pub kind: String,
    /// Its text.
    pub text: String,
}

/// What a finished session left on the page.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The gates answered, in order.
    pub answered: Vec<Answered>,
    /// `#result` as the person sees it (`innerText`).
    pub result_text: String,
    /// `#result`'s HTML.
    pub result_html: String,
    /// The bytes behind `#download` (a Blob URL), fetched in the page.
    pub docx: Vec<u8>,
    /// The timeline.
    pub timeline: Vec<TimelineItem>,
}

impl Outcome {
    /// The timeline items of one event type.
    pub fn events(&self, kind: &str) -> Vec<&TimelineItem> {
        self.timeline.iter().filter(|i| i.kind == kind).collect()
    }
}

/// Runs a whole session: start, answer every gate, wait for the resume and check the DOCX
/// download (a `blob:` URL named `resume.docx` whose bytes start with `PK`). Fails with
/// the page's text when the page shows an error, a gate has no canned answer, or
/// `patience` runs out.
pub async fn run_session(
    page: &Page,
    input: &StartInput,
    canned: &Canned,
    patience: Duration,
) -> anyhow::Result<Outcome> {
    let deadline = Instant::now() + patience;
    start(page, input).await?;
    let answered = answer_gates(page, canned, deadline).await?;
    let patience = deadline.saturating_duration_since(Instant::now());
    let mut outcome = read_outcome(page, patience).await?;
    outcome.answered = answered;
    if !outcome.docx.starts_with(b"PK") {
        bail!(
            "the download is not a DOCX (zip): {} bytes starting {:?}",
            outcome.docx.len(),
            &outcome.docx[..outcome.docx.len().min(8)]
        );
    }
    Ok(outcome)
}

/// Fills the start form and clicks Start; returns once the live view shows. Fails with the
/// page's `#error` when the server refuses the start.
pub async fn start(page: &Page, input: &StartInput) -> anyhow::Result<()> {
    submit_start(page, input).await?;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let snapshot = snapshot(page).await?;
        if snapshot.session {
            return Ok(());
        }
        if let Some(error) = snapshot.error {
            bail!("the page refused the start: {error}");
        }
        if Instant::now() > deadline {
            bail!(
                "the live view did not show after Start\n{}",
                page_text(page).await
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Fills the start form, clicks Start and returns the error the page shows.
pub async fn start_expecting_error(page: &Page, input: &StartInput) -> anyhow::Result<String> {
    submit_start(page, input).await?;
    wait_for_error(page, Duration::from_secs(15)).await
}

/// Waits until `#error` shows, and returns its text.
pub async fn wait_for_error(page: &Page, patience: Duration) -> anyhow::Result<String> {
    let deadline = Instant::now() + patience;
    loop {
        if let Some(error) = snapshot(page).await?.error {
            return Ok(error);
        }
        if Instant::now() > deadline {
            bail!("no error showed\n{}", page_text(page).await);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The page's visible text (the first 4,000 characters), to explain a failure.
pub async fn page_text(page: &Page) -> String {
    let text: String = match page.evaluate("document.body.innerText").await {
        Ok(result) => result.into_value().unwrap_or_default(),
        Err(error) => format!("(the page could not be read: {error})"),
    };
    let text: String = text.chars().take(4000).collect();
    format!("--- the page shows ---\n{text}\n---")
}

async fn submit_start(page: &Page, input: &StartInput) -> anyhow::Result<()> {
    wait_for_selector(page, "#start", Duration::from_secs(10)).await?;
    let values = json!({
        "#resume": input.resume_text,
        "#job": input.job_description,
        "#company": input.company.clone().unwrap_or_default(),
    });
    let script = format!(
        "() => {{
            const values = {values};
            for (const [selector, value] of Object.entries(values)) {{
                const field = document.querySelector(selector);
                if (!field) return 'missing ' + selector;
                field.value = value;
                field.dispatchEvent(new Event('input', {{ bubbles: true }}));
            }}
            const fast = document.querySelector('#fast-draft');
            if (!fast) return 'missing #fast-draft';
            if (fast.checked !== {fast}) fast.click();
            return 'ok';
        }}",
        fast = input.fast_draft,
    );
    let filled: String = page
        .evaluate_function(script)
        .await
        .context("filling the start form")?
        .into_value()?;
    if filled != "ok" {
        bail!("the start form is incomplete: {filled}");
    }
    click(page, "#start").await
}

/// Clicks the element `selector` with the mouse, as a person would.
async fn click(page: &Page, selector: &str) -> anyhow::Result<()> {
    page.find_element(selector)
        .await
        .with_context(|| format!("finding {selector}"))?
        .click()
        .await
        .with_context(|| format!("clicking {selector}"))?;
    Ok(())
}

async fn wait_for_selector(page: &Page, selector: &str, patience: Duration) -> anyhow::Result<()> {
    let script = format!(
        "() => !!document.querySelector({})",
        serde_json::to_string(selector)?
    );
    let deadline = Instant::now() + patience;
    loop {
        let found = match page.evaluate_function(script.as_str()).await {
            Ok(result) => result.into_value::<bool>().unwrap_or(false),
            Err(_) => false,
        };
        if found {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{selector} did not appear\n{}", page_text(page).await);
        }
        tokio::time::sleep(POLL).await;
    }
}

#[derive(Debug, Deserialize)]
struct Shown {
    text: String,
    html: String,
    href: String,
    download: Option<String>,
    bytes: Vec<u8>,
    terminal: bool,
    timeline: Vec<TimelineItem>,
}

const OUTCOME_JS: &str = "async () => {
    const result = document.getElementById('result');
    const link = document.getElementById('download');
    const href = link ? link.getAttribute('href') || '' : '';
    let bytes = [];
    if (href.startsWith('blob:')) {
        const buffer = await fetch(href).then((response) => response.arrayBuffer());
        bytes = Array.from(new Uint8Array(buffer));
    }
    return {
        text: result ? result.innerText : '',
        html: result ? result.innerHTML : '',
        href,
        download: link ? link.getAttribute('download') : null,
        bytes,
        terminal: !!document.querySelector(
            '#timeline [data-type=session_complete], #timeline [data-type=session_failed]'),
        timeline: Array.from(document.querySelectorAll('#timeline > li')).map((item) => ({
            type: item.dataset.type || '',
            text: item.textContent.trim(),
        })),
    };
}";

/// Reads a finished session off the page (after [`run_session`], or after reloading a
/// finished page): waits for the terminal event in the timeline, then fetches the
/// download. `answered` is left empty.
pub async fn read_outcome(page: &Page, patience: Duration) -> anyhow::Result<Outcome> {
    let deadline = Instant::now() + patience.max(Duration::from_secs(10));
    loop {
        // While a reloaded page loads there may be no document to ask yet.
        let shown = match page.evaluate_function(OUTCOME_JS).await {
            Ok(result) => Some(result.into_value::<Shown>()?),
            Err(error) if Instant::now() > deadline => {
                return Err(error).context("reading the result");
            }
            Err(_) => None,
        };
        if let Some(shown) = shown.filter(|shown| shown.terminal) {
            if !shown.href.starts_with("blob:") {
                bail!("#download is not a blob URL: {:?}", shown.href);
            }
            if shown.download.as_deref() != Some("resume.docx") {
                bail!("#download saves as {:?}, not resume.docx", shown.download);
            }
            if shown.bytes.is_empty() {
                bail!("the download is empty");
            }
            return Ok(Outcome {
                answered: Vec::new(),
                result_text: shown.text,
                result_html: shown.html,
                docx: shown.bytes,
                timeline: shown.timeline,
            });
        }
        if Instant::now() > deadline {
            bail!(
                "the resume shows but the session did not end\n{}",
                page_text(page).await
            );
        }
        tokio::time::sleep(POLL).await;
    }
}
