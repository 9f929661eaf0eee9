//! The structure of the resume as the candidate gave it, read with no model: the name,
//! the contact lines under it, and each section with its entries (a role, a degree, a
//! project: a heading such as "Senior Engineer, Acme (2019-2024)" with its own bullets)
//! and its plain lines. Every line keeps its evidence id (`R<n>`, numbered as intake
//! numbers them), so a bullet that cites `R7` can be put back where line 7 was.
//!
//! Sections are recognised by their headings (Markdown `#`, underlined, ALL CAPS, or a
//! usual resume heading such as "Work Experience" or "Education:"); entries by their
//! dates ("2019-2024", "Jan 2020 – Present", "(2017)") or by being the lines right above
//! a list of bullets.

use serde::{Deserialize, Serialize};

use crate::intake::strip_bullet;

mod lines;

use job_capabilities::text::is_dated;
use lines::{
    dates_only, heading_text, is_heading, is_paragraph, is_rule, looks_like_contact, split_name,
};

/// One line of the resume, as given (bullet marker removed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// Its evidence id (`R5`).
    pub evidence: String,
    /// The text, trimmed, without its bullet marker.
    pub text: String,
    /// Whether it was a list item (`-`, `*`, `•`, `–`, `·`).
    pub bullet: bool,
}

/// A part of a section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Block {
    /// A role, degree or project: its heading lines (title, employer, place, dates) and
    /// the lines under it.
    Entry {
        /// The heading lines, in order.
        heading: Vec<Line>,
        /// The bullets and lines under the heading.
        items: Vec<Line>,
    },
    /// A line of the section outside any entry.
    Line(Line),
}

/// A section of the resume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutSection {
    /// The heading as given ("EXPERIENCE", "Work history"), without `#` or a final
    /// colon; empty for the lines of a resume that has no headings.
    pub heading: String,
    /// The heading's evidence id, when there is a heading line.
    pub evidence: Option<String>,
    /// Its entries and lines, in order.
    pub blocks: Vec<Block>,
}

impl LayoutSection {
    /// The evidence ids of every line of the section (heading included).
    pub fn line_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.evidence.iter().map(String::as_str).collect();
        for block in &self.blocks {
            match block {
                Block::Entry { heading, items } => {
                    ids.extend(heading.iter().chain(items).map(|l| l.evidence.as_str()));
                }
                Block::Line(line) => ids.push(&line.evidence),
            }
        }
        ids
    }
}

/// The resume's structure.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ResumeLayout {
    /// The candidate's name (the first line, or its part before a contact detail).
    pub name: String,
    /// The lines between the name and the first section (contact details, links, a
    /// headline), as given; a contact detail written on the name's line comes first.
    pub contact: Vec<Line>,
    /// The sections, in the resume's order.
    pub sections: Vec<LayoutSection>,
}

/// A raw line with its id.
struct Raw {
    evidence: String,
    text: String,
    bullet: bool,
    /// A Markdown section heading (`#`, `##`).
    markdown_heading: bool,
    /// A Markdown sub-heading (`###` and deeper): an entry's heading.
    markdown_entry: bool,
}

impl Raw {
    fn line(&self) -> Line {
        Line {
            evidence: self.evidence.clone(),
            text: self.text.clone(),
            bullet: self.bullet,
        }
    }
}

impl ResumeLayout {
    /// Reads the structure of `text`, numbering lines as intake does (`R1` is the first
    /// non-empty line).
    pub fn parse(text: &str) -> ResumeLayout {
        let mut raw: Vec<Raw> = Vec::new();
        for line in text.lines() {
            let stripped = strip_bullet(line);
            if stripped.is_empty() {
                continue;
            }
            let trimmed = line.trim();
            let level = trimmed.chars().take_while(|c| *c == '#').count();
            let markdown = level > 0 && trimmed[level..].starts_with(' ');
            let plain = markdown || is_rule(trimmed);
            let text = if markdown {
                trimmed.trim_start_matches('#').trim().to_owned()
            } else if plain {
                trimmed.to_owned()
            } else {
                stripped.clone()
            };
            raw.push(Raw {
                evidence: format!("R{}", raw.len() + 1),
                bullet: !plain && stripped != trimmed,
                text,
                markdown_heading: markdown && level <= 2,
                markdown_entry: markdown && level > 2,
            });
        }
        let Some((first, rest)) = raw.split_first() else {
            return ResumeLayout::default();
        };
        let (name, on_name_line) = split_name(&first.text);
        let mut contact: Vec<Line> = on_name_line
            .map(|text| Line {
                evidence: first.evidence.clone(),
                text,
                bullet: false,
            })
            .into_iter()
            .collect();
        let headings: Vec<bool> = rest
            .iter()
            .enumerate()
            .map(|(i, line)| is_heading(line, rest.get(i + 1)))
            .collect();
        // The header ends at the first heading, or at the first bullet, paragraph or
        // entry before it (a resume without a summary heading, or without headings).
        let first_heading = headings.iter().position(|h| *h).unwrap_or(rest.len());
        let body_start = rest[..first_heading]
            .iter()
            .position(|line| {
                line.bullet
                    || line.markdown_entry
                    || is_paragraph(&line.text)
                    || (is_dated(&line.text) && !looks_like_contact(&line.text))
            })
            .unwrap_or(first_heading);
        let header_end = if first_heading == rest.len() && body_start == rest.len() {
            rest.iter()
                .position(|line| !looks_like_contact(&line.text))
                .unwrap_or(rest.len())
        } else {
            body_start
        };
        contact.extend(
            rest[..header_end]
                .iter()
                .filter(|l| !is_rule(&l.text))
                .map(Raw::line),
        );
        let mut sections = Vec::new();
        let mut i = header_end;
        while i < rest.len() {
            let (heading, evidence, start) = if headings[i] {
                (
                    heading_text(&rest[i].text),
                    Some(rest[i].evidence.clone()),
                    i + 1,
                )
            } else {
                (String::new(), None, i)
            };
            let end = (start..rest.len())
                .find(|j| headings[*j])
                .unwrap_or(rest.len());
            let body: Vec<&Raw> = rest[start..end]
                .iter()
                .filter(|l| !is_rule(&l.text))
                .collect();
            sections.push(LayoutSection {
                heading,
                evidence,
                blocks: blocks(&body),
            });
            i = end;
        }
        ResumeLayout {
            name,
            contact,
            sections,
        }
    }
}

impl LayoutSection {
    /// The section's entries (roles with their dates) as the evidence id of their first
    /// heading line and the heading as one line: what a section's writer is told so that
    /// each bullet can cite the role it belongs to.
    pub fn entry_headings(&self) -> Vec<(String, String)> {
        self.blocks
            .iter()
            .filter_map(|block| match block {
                Block::Entry { heading, .. } => heading
                    .first()
                    .map(|first| (first.evidence.clone(), joined(heading))),
                Block::Line(_) => None,
            })
            .collect()
    }
}

/// An entry's heading lines as one line, joined by " | ".
pub fn joined(heading: &[Line]) -> String {
    heading
        .iter()
        .map(|l| l.text.as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The blocks of a section's lines.
fn blocks(lines: &[&Raw]) -> Vec<Block> {
    let marked = lines.iter().any(|l| l.bullet);
    let sub_headings: std::collections::HashSet<&str> = lines
        .iter()
        .filter(|l| l.markdown_entry)
        .map(|l| l.evidence.as_str())
        .collect();
    // A line that makes its group an entry's heading: dates, or a Markdown sub-heading.
    let anchors = |l: &Line| is_dated(&l.text) || sub_headings.contains(l.evidence.as_str());
    let mut out: Vec<Block> = Vec::new();
    // Whether the last block is an entry that takes the lines that follow.
    let mut open = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if marked && line.bullet {
            push_item(&mut out, open, line.line());
            i += 1;
            continue;
        }
        if !marked {
            // No list markers: a dated line starts an entry, the lines after are its own.
            if line.markdown_entry || (!is_paragraph(&line.text) && is_dated(&line.text)) {
                let mut heading = pull_heading(&mut out, dates_only(&line.text));
                heading.push(line.line());
                out.push(Block::Entry {
                    heading,
                    items: Vec::new(),
                });
                open = true;
            } else {
                push_item(&mut out, open, line.line());
            }
            i += 1;
            continue;
        }
        // A run of lines without markers, up to the next bullet.
        let end = (i..lines.len())
            .find(|j| lines[*j].bullet)
            .unwrap_or(lines.len());
        let run = &lines[i..end];
        let followed_by_bullets = end < lines.len();
        let mut group: Vec<Line> = Vec::new();
        let mut groups: Vec<(Vec<Line>, bool)> = Vec::new();
        for line in run {
            // A Markdown sub-heading starts an entry's heading.
            if line.markdown_entry && !group.is_empty() {
                groups.push((std::mem::take(&mut group), true));
            }
            if is_paragraph(&line.text) && !line.markdown_entry {
                if !group.is_empty() {
                    groups.push((std::mem::take(&mut group), true));
                }
                groups.push((vec![line.line()], false));
                continue;
            }
            group.push(line.line());
            if is_dated(&line.text) {
                groups.push((std::mem::take(&mut group), true));
            }
        }
        if !group.is_empty() {
            groups.push((group, true));
        }
        // Lines after a dated line join its heading when bullets follow them ("Acme,
        // 2019-2024" then "Senior Engineer").
        if followed_by_bullets && groups.len() >= 2 {
            let last = groups.len() - 1;
            let dated = groups[last].0.iter().any(anchors);
            if !dated && groups[last].1 && groups[last - 1].1 && groups[last].0.len() <= 2 {
                let (tail, _) = groups.remove(last);
                groups[last - 1].0.extend(tail);
            }
        }
        let count = groups.len();
        for (n, (group, headable)) in groups.into_iter().enumerate() {
            let dated = group.iter().any(anchors);
            let last = n + 1 == count;
            if headable && (dated || (last && followed_by_bullets)) {
                out.push(Block::Entry {
                    heading: group,
                    items: Vec::new(),
                });
                open = true;
            } else {
                for line in group {
                    push_item(&mut out, open && !headable, line);
                }
                open = open && !headable;
            }
        }
        i = end;
    }
    out
}

/// The short lines right above a dated line that belong to its heading ("MSc
/// Statistics" and "Universidad Complutense" above "2015 - 2017"), taken off the end of
/// `out`: up to two lines of the section, or, when the dated line holds nothing but dates,
/// of the entry above.
fn pull_heading(out: &mut Vec<Block>, dates_only: bool) -> Vec<Line> {
    let short = |l: &Line| {
        !l.bullet
            && l.text.split_whitespace().count() <= 8
            && !l.text.ends_with('.')
            && !is_dated(&l.text)
    };
    let mut pulled = Vec::new();
    while pulled.len() < 2 {
        let taken = match out.last_mut() {
            Some(Block::Line(line)) if short(line) => out.pop().and_then(|b| match b {
                Block::Line(line) => Some(line),
                Block::Entry { .. } => None,
            }),
            Some(Block::Entry { items, .. }) if dates_only && items.len() > 1 => {
                items.pop_if(|l| short(l))
            }
            _ => None,
        };
        match taken {
            Some(line) => pulled.insert(0, line),
            None => break,
        }
    }
    pulled
}

/// Adds a line to the open entry, or to the section.
fn push_item(out: &mut Vec<Block>, open: bool, line: Line) {
    if open && let Some(Block::Entry { items, .. }) = out.last_mut() {
        items.push(line);
        return;
    }
    out.push(Block::Line(line));
}

#[cfg(test)]
mod tests;
