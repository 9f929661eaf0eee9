//! Reading what a page shows: the listings, a job's own page, and how applying works.

use std::time::Duration;

use serde_json::Value;

use super::{ApplyType, CollectedJob};
use crate::browser::{Browser, BrowserError};
use crate::selectors::{
    BODY_CHARS, DetailMode, DetailSelectors, ListingSelectors, RawListing, TEXT_JS, read_fields,
};

/// Whether the job's details come from its panel.
pub(crate) fn uses_panel(mode: DetailMode, job: &CollectedJob) -> bool {
    match mode {
        DetailMode::Auto => job.url.is_empty(),
        DetailMode::Page => false,
        DetailMode::Panel => true,
    }
}

/// Reads the listings shown now.
pub(crate) async fn extract_listings(
    browser: &dyn Browser,
    selectors: &ListingSelectors,
) -> Result<Vec<RawListing>, BrowserError> {
    let js = format!(
        "(() => {{
            {TEXT_JS}
            const pick = (item, sel) => sel === null ? null : (sel === '' ? item : item.querySelector(sel));
            // A link that goes nowhere (`#`, `javascript:`) is a button in disguise.
            const real = a => {{
                const h = (a.getAttribute('href') || '').trim();
                return h !== '' && h !== '#' && !/^javascript:/i.test(h);
            }};
            const href = e => {{
                if (!e) return '';
                const links = e.matches('a[href]') ? [e] : Array.from(e.querySelectorAll('a[href]'));
                const up = e.closest('a[href]');
                if (up) links.push(up);
                const a = links.find(real);
                return a ? a.href : '';
            }};
            return Array.from(document.querySelectorAll({item})).map(item => ({{
                title: text(pick(item, {title})),
                link: href(pick(item, {link})),
                company: text(pick(item, {company})),
                location: text(pick(item, {location})),
                salary: text(pick(item, {salary})),
                posted: text(pick(item, {posted})),
                body: text(item).slice(0, {BODY_CHARS}),
            }}));
        }})()",
        item = Value::from(selectors.item.as_str()),
        title = Value::from(selectors.title.as_str()),
        link = Value::from(selectors.link.as_str()),
        company = Value::from(selectors.company.clone()),
        location = Value::from(selectors.location.clone()),
        salary = Value::from(selectors.salary.clone()),
        posted = Value::from(selectors.posted_date.clone()),
    );
    let value = browser.evaluate(&js).await?;
    serde_json::from_value(value)
        .map_err(|error| BrowserError::Protocol(format!("reading the listings: {error}")))
}

/// Opens the job's link, when on the board's own site, and replaces its fields with those
/// found on the detail page.
pub(crate) async fn read_detail(
    browser: &dyn Browser,
    job: &mut CollectedJob,
    selectors: &DetailSelectors,
    settle: Duration,
) -> Result<(), BrowserError> {
    // Another site's page is the employer's, not one the selectors were made for.
    let own_site = host_of(&job.url).is_some_and(|h| Some(h) == host_of(&job.source_page));
    if !job.url.starts_with("http") || !own_site {
        return Ok(());
    }
    browser.open(&job.url).await?;
    browser.wait_for_settle(settle).await?;
    let page = browser.url().await?;
    let found = read_fields(browser, selectors).await?;
    apply_details(job, found, host_of(&page).as_deref());
    Ok(())
}

/// Replaces the job's fields with those found (non-empty) in its details, then completes
/// what the job's own words show ([`fields`](super::fields)). The job's own page stays
/// its `url`; an apply control found becomes its `apply_url`.
pub(crate) fn apply_details(job: &mut CollectedJob, found: RawListing, board_host: Option<&str>) {
    let replace = |field: &mut String, found: String| {
        if !found.is_empty() {
            *field = found;
        }
    };
    replace(&mut job.title, found.title);
    replace(&mut job.company, found.company);
    replace(&mut job.location, found.location);
    replace(&mut job.salary_text, found.salary);
    if !found.posted.is_empty() {
        job.posted_date = Some(found.posted);
    }
    if !found.link.is_empty() {
        job.apply_type = apply_type(&found.link, board_host, true);
        job.apply_url = found.link;
    }
    if !found.body.is_empty() {
        // The panel's or page's words describe the job better than its listing's.
        job.details_text = found.body;
        job.description = None;
    }
    super::fields::complete(job);
    if let Some(described) = super::fields::description_from(&found.prose, job) {
        job.description = Some(described);
    }
}

/// The host (and port) of an absolute URL.
pub(crate) fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let host = rest.split(['/', '?', '#']).next()?;
    Some(host.rsplit('@').next().unwrap_or(host).to_lowercase())
}

/// How applying at `url` works: `external` for `mailto:` or another host; on the board's
/// own host `easy_apply` when `url` was found as the apply control (`apply_control`), else
/// `unknown` (it is the job's own page there); `unknown` for no URL.
pub fn apply_type(url: &str, board_host: Option<&str>, apply_control: bool) -> ApplyType {
    let url = url.trim();
    if url.is_empty() {
        ApplyType::Unknown
    } else if url.to_lowercase().starts_with("mailto:") {
        ApplyType::External
    } else if board_host.is_some() && host_of(url).as_deref() == board_host {
        if apply_control {
            ApplyType::EasyApply
        } else {
            ApplyType::Unknown
        }
    } else {
        ApplyType::External
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_types() {
        let host = host_of("http://127.0.0.1:8080/index.html");
        let host = host.as_deref();
        assert_eq!(apply_type("mailto:a@b.c", host, false), ApplyType::External);
        let own = "http://127.0.0.1:8080/jobs/1.html";
        assert_eq!(apply_type(own, host, false), ApplyType::Unknown);
        assert_eq!(apply_type(own, host, true), ApplyType::EasyApply);
        let other = "https://careers.example.com/1";
        assert_eq!(apply_type(other, host, true), ApplyType::External);
        assert_eq!(apply_type("", host, true), ApplyType::Unknown);
        assert_eq!(
            serde_json::to_value(ApplyType::EasyApply).unwrap(),
            "easy_apply"
        );
    }
}
