//! A fetched page: decoding its bytes, its title and its links.

use std::collections::HashMap;

use scraper::{Html, Selector};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::html::html_to_text;

/// A fetched HTML page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchedPage {
    /// The final address, after redirects.
    pub url: String,
    /// The HTTP status (always a success).
    pub status: u16,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The decoded body.
    pub html: String,
    /// The `<title>`, trimmed and with runs of whitespace collapsed; `None` when absent
    /// or empty.
    pub title: Option<String>,
}

/// A link found on a page.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PageLink {
    /// The link text (whitespace collapsed), or its `aria-label` or `title` when the
    /// text is empty.
    pub text: String,
    /// The absolute http(s) address, without fragment.
    pub url: String,
}

impl FetchedPage {
    /// A page from HTML already in hand (a recorded page, a test): status 200, type
    /// `text/html`, the title read from the document.
    ///
    /// ```
    /// use job_capabilities::fetch::FetchedPage;
    /// let page = FetchedPage::from_html("https://example.com/", "<title> Jobs </title><p>Hi</p>");
    /// assert_eq!(page.title.as_deref(), Some("Jobs"));
    /// ```
    pub fn from_html(url: impl Into<String>, html: impl Into<String>) -> Self {
        let html = html.into();
        FetchedPage {
            url: url.into(),
            status: 200,
            content_type: Some("text/html".into()),
            title: title(&html),
            html,
        }
    }

    /// The readable text of the page (see [`html_to_text`]).
    pub fn text(&self) -> String {
        html_to_text(&self.html)
    }

    /// The page's http(s) links, resolved against the page address (or its `<base>`),
    /// fragments stripped, in document order and without duplicates. In-page anchors
    /// (`href="#..."`) and other schemes (`mailto:`, `javascript:`) are left out.
    ///
    /// ```
    /// use job_capabilities::fetch::FetchedPage;
    /// let page = FetchedPage {
    ///     url: "https://example.com/careers/".into(),
    ///     status: 200,
    ///     content_type: Some("text/html".into()),
    ///     html: r##"<a href="jobs/1#apply">Engineer</a> <a href="#top">Top</a> <a href="mailto:a@b.c">Mail</a>"##.into(),
    ///     title: None,
    /// };
    /// let links = page.links();
    /// assert_eq!(links.len(), 1);
    /// assert_eq!(links[0].url, "https://example.com/careers/jobs/1");
    /// assert_eq!(links[0].text, "Engineer");
    /// ```
    pub fn links(&self) -> Vec<PageLink> {
        extract_links(&self.html, &self.url)
    }
}

fn extract_links(html: &str, page_url: &str) -> Vec<PageLink> {
    let (Ok(anchors), Ok(base_tag), Ok(mut base)) = (
        Selector::parse("a[href]"),
        Selector::parse("base[href]"),
        Url::parse(page_url),
    ) else {
        return Vec::new();
    };
    let document = Html::parse_document(html);
    if let Some(href) = document
        .select(&base_tag)
        .next()
        .and_then(|base| base.attr("href"))
        && let Ok(resolved) = base.join(href.trim())
    {
        base = resolved;
    }
    let mut links: Vec<PageLink> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for anchor in document.select(&anchors) {
        let href = anchor.attr("href").unwrap_or_default().trim();
        if href.is_empty() || href.starts_with('#') {
            continue;
        }
        let Ok(mut url) = base.join(href) else {
            continue;
        };
        if !matches!(url.scheme(), "http" | "https") {
            continue;
        }
        url.set_fragment(None);
        let mut text = collapse(&anchor.text().collect::<String>());
        if text.is_empty() {
            text = ["aria-label", "title"]
                .iter()
                .find_map(|name| anchor.attr(name).map(collapse).filter(|t| !t.is_empty()))
                .unwrap_or_default();
        }
        let url = url.to_string();
        match index.get(&url) {
            Some(&at) => {
                if links[at].text.is_empty() {
                    links[at].text = text;
                }
            }
            None => {
                index.insert(url.clone(), links.len());
                links.push(PageLink { text, url });
            }
        }
    }
    links
}

/// The `<title>` of a document, whitespace collapsed.
pub(super) fn title(html: &str) -> Option<String> {
    let selector = Selector::parse("title").ok()?;
    let document = Html::parse_document(html);
    let title = collapse(
        &document
            .select(&selector)
            .next()?
            .text()
            .collect::<String>(),
    );
    (!title.is_empty()).then_some(title)
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Decodes a body: a byte-order mark wins, then the `charset` of the content type, then
/// a `<meta charset>` near the start, then UTF-8. UTF-8 and UTF-16 are decoded lossily;
/// Latin-1, ASCII and Windows-1252 (which the HTML standard treats as one) byte by byte;
/// any other charset falls back to lossy UTF-8.
pub(super) fn decode(bytes: &[u8], content_type: Option<&str>) -> String {
    if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        return String::from_utf8_lossy(rest).into_owned();
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        return utf16(rest, u16::from_le_bytes);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        return utf16(rest, u16::from_be_bytes);
    }
    let label = content_type
        .and_then(charset_param)
        .or_else(|| meta_charset(bytes))
        .unwrap_or_else(|| "utf-8".to_owned());
    match label.as_str() {
        "utf-8" | "utf8" | "unicode-1-1-utf-8" => String::from_utf8_lossy(bytes).into_owned(),
        "utf-16le" | "utf-16" => utf16(bytes, u16::from_le_bytes),
        "utf-16be" => utf16(bytes, u16::from_be_bytes),
        "iso-8859-1" | "iso8859-1" | "latin1" | "l1" | "us-ascii" | "ascii" | "windows-1252"
        | "cp1252" | "x-cp1252" | "iso_8859-1" | "cp819" => windows_1252(bytes),
        other => {
            tracing::debug!(charset = other, "unsupported charset, decoding as UTF-8");
            String::from_utf8_lossy(bytes).into_owned()
        }
    }
}

fn charset_param(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| normalise_label(value))
            .filter(|label| !label.is_empty())
    })
}

/// A `charset=` in the first 1024 bytes, as `<meta charset>` or `http-equiv` puts it.
fn meta_charset(bytes: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(1024)]).to_ascii_lowercase();
    let at = head.find("<meta")?;
    let after = &head[at..];
    let value = &after[after.find("charset")? + "charset".len()..];
    let value = value.trim_start().strip_prefix('=')?;
    let label = normalise_label(
        value
            .trim_start()
            .trim_start_matches(['"', '\''])
            .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.')))
            .next()?,
    );
    (!label.is_empty()).then_some(label)
}

fn normalise_label(label: &str) -> String {
    label
        .trim()
        .trim_matches(['"', '\''])
        .trim()
        .to_ascii_lowercase()
}

fn utf16(bytes: &[u8], unit: fn([u8; 2]) -> u16) -> String {
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|pair| unit([pair[0], pair[1]]))
        .collect();
    String::from_utf16_lossy(&units)
}

/// Windows-1252, of which ISO-8859-1 and ASCII are subsets as browsers decode them.
fn windows_1252(bytes: &[u8]) -> String {
    const HIGH: [char; 32] = [
        '\u{20AC}', '\u{81}', '\u{201A}', '\u{192}', '\u{201E}', '\u{2026}', '\u{2020}',
        '\u{2021}', '\u{2C6}', '\u{2030}', '\u{160}', '\u{2039}', '\u{152}', '\u{8D}', '\u{17D}',
        '\u{8F}', '\u{90}', '\u{2018}', '\u{2019}', '\u{201C}', '\u{201D}', '\u{2022}', '\u{2013}',
        '\u{2014}', '\u{2DC}', '\u{2122}', '\u{161}', '\u{203A}', '\u{153}', '\u{9D}', '\u{17E}',
        '\u{178}',
    ];
    bytes
        .iter()
        .map(|&b| match b {
            0x80..=0x9F => HIGH[usize::from(b - 0x80)],
            _ => char::from(b),
        })
        .collect()
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn charsets_come_from_the_bom_the_header_or_a_meta_tag() {
        assert_eq!(
            decode(b"caf\xE9", Some("text/html; charset=ISO-8859-1")),
            "café"
        );
        assert_eq!(
            decode(b"\x93hi\x94", Some("text/html;charset=\"windows-1252\"")),
            "\u{201C}hi\u{201D}"
        );
        assert_eq!(decode("café".as_bytes(), Some("text/html")), "café");
        assert_eq!(
            decode(b"\xEF\xBB\xBFok", Some("text/html; charset=latin1")),
            "ok"
        );
        assert_eq!(decode(b"\xFF\xFEo\0k\0", None), "ok");
        let meta = b"<html><head><meta charset=\"iso-8859-1\"></head><body>caf\xE9</body></html>";
        assert!(decode(meta, None).contains("café"));
        let equiv =
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1252\">\x80";
        assert!(decode(equiv, Some("text/html")).ends_with('\u{20AC}'));
        // Unknown charsets fall back to lossy UTF-8.
        assert_eq!(
            decode("ok é".as_bytes(), Some("text/html; charset=koi8-r")),
            "ok é"
        );
    }

    #[test]
    fn titles_are_collapsed_and_empty_ones_dropped() {
        assert_eq!(
            title("<html><head><title>\n  Careers |\n Acme </title></head></html>").as_deref(),
            Some("Careers | Acme")
        );
        assert_eq!(title("<title>  </title>"), None);
        assert_eq!(title("<p>no title</p>"), None);
    }

    #[test]
    fn links_honour_base_and_dedupe_keeping_the_first_text() {
        let html = r#"<html><head><base href="https://cdn.example.org/site/"></head><body>
            <a href="jobs"><img alt=""></a>
            <a href="jobs#x">  Open
               jobs </a>
            <a href="//other.example/a" aria-label="Other">  </a>
            <a href="javascript:void(0)">JS</a>
            <a href="">empty</a>
        </body></html>"#;
        let links = extract_links(html, "https://example.com/careers");
        assert_eq!(
            links,
            vec![
                PageLink {
                    text: "Open jobs".into(),
                    url: "https://cdn.example.org/site/jobs".into()
                },
                PageLink {
                    text: "Other".into(),
                    url: "https://other.example/a".into()
                },
            ]
        );
    }
}
