//! HTML to readable plain text.

use scraper::{ElementRef, Html, Node};

/// Elements whose content is never text for a reader.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "head", "iframe", "canvas", "button", "form",
    "select", "nav",
];

/// Elements that start a new line.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "header",
    "footer",
    "main",
    "aside",
    "ul",
    "ol",
    "li",
    "table",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "br",
    "hr",
    "dl",
    "dt",
    "dd",
    "blockquote",
    "pre",
    "address",
    "figure",
    "figcaption",
];

/// The readable text of an HTML document or fragment: scripts, styles, navigation and
/// forms dropped, entities decoded, one line per block element, list items marked
/// `- `, runs of spaces collapsed and blank lines dropped.
///
/// ```
/// use job_capabilities::html::html_to_text;
/// let html = "<h2>About</h2><p>We build&nbsp;tools.</p><ul><li>Rust</li><li>Go</li></ul><script>x()</script>";
/// assert_eq!(html_to_text(html), "About\nWe build tools.\n- Rust\n- Go");
/// ```
pub fn html_to_text(html: &str) -> String {
    let document = if looks_like_document(html) {
        Html::parse_document(html)
    } else {
        Html::parse_fragment(html)
    };
    let mut out = String::with_capacity(html.len() / 2);
    walk(document.root_element(), &mut out);
    tidy(&out)
}

fn looks_like_document(html: &str) -> bool {
    let head = html
        .trim_start()
        .get(..256)
        .unwrap_or(html)
        .to_ascii_lowercase();
    head.starts_with("<!doctype") || head.contains("<html")
}

fn walk(element: ElementRef<'_>, out: &mut String) {
    for child in element.children() {
        match child.value() {
            Node::Text(text) => out.push_str(text),
            Node::Element(el) => {
                let name = el.name();
                if SKIPPED.contains(&name) {
                    continue;
                }
                let Some(child) = ElementRef::wrap(child) else {
                    continue;
                };
                let block = BLOCKS.contains(&name);
                if block {
                    out.push('\n');
                }
                if name == "li" {
                    out.push_str("- ");
                }
                if matches!(name, "td" | "th") {
                    out.push(' ');
                }
                walk(child, out);
                if block {
                    out.push('\n');
                }
            }
            _ => {}
        }
    }
}

/// Collapses spaces within lines, trims lines and drops blank ones.
fn tidy(raw: &str) -> String {
    let mut text = String::with_capacity(raw.len());
    // A list item whose content is a block (`<li><p>..</p></li>`) leaves its marker
    // alone on a line: carry it to the item's first line of text.
    let mut bullet = false;
    for line in raw.lines() {
        let line = line
            .split(|c: char| c.is_whitespace())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if line == "-" {
            bullet = true;
            continue;
        }
        if line.is_empty() {
            continue;
        }
        if !text.is_empty() {
            text.push('\n');
        }
        if std::mem::take(&mut bullet) && !line.starts_with("- ") {
            text.push_str("- ");
        }
        text.push_str(&line);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_greenhouse_content_decodes_once_unescaped() {
        // Greenhouse sends HTML whose tags are entity-escaped; the client unescapes once.
        let html = "<div class=\"content-intro\"><p><strong>Vercel</strong> is hiring.</p></div>\n<h3>What you will do</h3><ul><li>Ship &amp; iterate</li></ul>";
        assert_eq!(
            html_to_text(html),
            "Vercel is hiring.\nWhat you will do\n- Ship & iterate"
        );
    }

    #[test]
    fn list_items_holding_paragraphs_keep_their_marker() {
        let html = "<ul><li><p>Design APIs</p></li><li>\n<p>Run them</p>\n</li></ul>";
        assert_eq!(html_to_text(html), "- Design APIs\n- Run them");
    }

    #[test]
    fn documents_drop_head_scripts_and_navigation() {
        let html = "<!DOCTYPE html><html><head><title>T</title><style>p{}</style></head><body><nav>Home | Jobs</nav><main><h1>Careers</h1><p>Open   roles</p></main></body></html>";
        assert_eq!(html_to_text(html), "Careers\nOpen roles");
    }
}
