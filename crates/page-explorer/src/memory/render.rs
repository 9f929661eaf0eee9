//! The memory as text: the summary the agents read (spec 002, "Memory Summary Format") and
//! the page graph as a Mermaid flowchart.

use std::fmt::Write as _;

use super::{MemoryStore, PatternStatus};

/// Default character cap for [`MemoryStore::summary_for_model`].
pub const DEFAULT_SUMMARY_CHARS: usize = 4_000;

/// At most this many recent observations of a page appear in the summary.
const OBSERVATIONS_SHOWN: usize = 6;

impl MemoryStore {
    /// The memory summary for the model, capped at [`DEFAULT_SUMMARY_CHARS`] characters.
    pub fn summary_for_model(&self) -> String {
        self.summary_for_model_capped(DEFAULT_SUMMARY_CHARS)
    }

    /// The memory summary in the spec's format:
    ///
    /// ```text
    /// EXPLORED PAGES:
    /// [homepage]: Landing page with a Jobs link.
    ///   → leads to: [job_search] via "clicked Jobs nav"
    ///
    /// [job_search]: Job list with filters.
    ///   ← from: [homepage] via "clicked Jobs nav"
    ///
    /// CURRENT PAGE: [job_search]
    /// PATH: homepage → job_search
    /// ```
    ///
    /// followed by confirmed patterns, known selectors and the current page's recent
    /// observations; cut to at most `max_chars` characters (whole lines are dropped from
    /// the end, marked with `...`).
    pub fn summary_for_model_capped(&self, max_chars: usize) -> String {
        let mut out = String::from("EXPLORED PAGES:\n");
        if self.pages.is_empty() {
            out.push_str("(none yet)\n");
        }
        for (i, page) in self.pages.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            let _ = writeln!(
                out,
                "[{}]: {}",
                page.id,
                one_line(page.best_understanding())
            );
            for e in self.edges.iter().filter(|e| e.to == page.id) {
                let _ = writeln!(out, "  ← from: [{}] via \"{}\"", e.from, e.description);
            }
            for e in self.edges.iter().filter(|e| e.from == page.id) {
                let _ = writeln!(out, "  → leads to: [{}] via \"{}\"", e.to, e.description);
            }
        }
        if let Some(page) = self.current_page() {
            let _ = writeln!(out, "\nCURRENT PAGE: [{}]", page.id);
            let start = page.observations.len().saturating_sub(OBSERVATIONS_SHOWN);
            if !page.observations[start..].is_empty() {
                out.push_str("SEEN ON THIS PAGE:\n");
                for o in &page.observations[start..] {
                    let _ = writeln!(out, "- {}", one_line(o));
                }
            }
        }
        if !self.path.is_empty() {
            let path: Vec<&str> = self.path.iter().map(|s| s.page.as_str()).collect();
            let _ = writeln!(out, "PATH: {}", path.join(" → "));
        }
        let confirmed: Vec<_> = self
            .patterns
            .values()
            .filter(|p| p.status() == PatternStatus::Confirmed)
            .collect();
        if !confirmed.is_empty() {
            out.push_str("\nCONFIRMED PATTERNS:\n");
            for p in confirmed {
                let _ = write!(out, "- {}", p.description);
                if let Some(s) = &p.selector {
                    let _ = write!(out, " ({s})");
                }
                out.push('\n');
            }
        }
        if !self.selectors.is_empty() {
            out.push_str("\nKNOWN SELECTORS:\n");
            for (purpose, sels) in &self.selectors {
                let _ = writeln!(out, "- {purpose}: {}", sels.join(", "));
            }
        }
        truncate_lines(&out, max_chars)
    }

    /// The page graph as a Mermaid flowchart. Node ids (`p0`, `p1`, ...) follow first-visit
    /// order, so they are stable across calls; labels are escaped.
    pub fn to_mermaid(&self) -> String {
        let mut out = String::from("flowchart LR\n");
        for (i, p) in self.pages.iter().enumerate() {
            let mut label = escape_mermaid(&p.id);
            if let Some(url) = p.urls.first() {
                let _ = write!(label, "<br/>{}", escape_mermaid(url));
            }
            if p.visits > 1 {
                let _ = write!(label, "<br/>visits: {}", p.visits);
            }
            let _ = writeln!(out, "    p{i}[\"{label}\"]");
        }
        for e in &self.edges {
            let (Some(from), Some(to)) = (self.node_index(&e.from), self.node_index(&e.to)) else {
                continue;
            };
            let mut label = e.action.as_str().to_owned();
            if let Some(s) = &e.selector {
                label.push(' ');
                label.push_str(s);
            }
            if e.count > 1 {
                let _ = write!(label, " x{}", e.count);
            }
            let _ = writeln!(out, "    p{from} -->|\"{}\"| p{to}", escape_mermaid(&label));
        }
        out
    }

    fn node_index(&self, id: &str) -> Option<usize> {
        self.pages.iter().position(|p| p.id == id)
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Escapes text for a quoted Mermaid label (quotes, brackets, pipes and angle brackets become
/// entity codes).
pub fn escape_mermaid(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '|' => out.push_str("#124;"),
            '[' => out.push_str("#91;"),
            ']' => out.push_str("#93;"),
            '{' => out.push_str("#123;"),
            '}' => out.push_str("#125;"),
            '#' => out.push_str("#35;"),
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

fn truncate_lines(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    const MARK: &str = "...\n";
    let budget = max_chars.saturating_sub(MARK.len());
    let mut out = String::new();
    let mut used = 0;
    for line in text.split_inclusive('\n') {
        let n = line.chars().count();
        if used + n > budget {
            break;
        }
        out.push_str(line);
        used += n;
    }
    if max_chars >= MARK.len() {
        out.push_str(MARK);
    }
    out
}
