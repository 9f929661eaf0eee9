//! The resume as it is delivered: the candidate's own resume ([`ResumeLayout`]) with the
//! approved sections put in place of the sections they rewrite.
//!
//! - The name and the contact lines stay as given.
//! - Every section of the input stays, in the input's order, under its own heading. A
//!   written section takes the place of the input section it rewrites (same name, a
//!   usual synonym such as "Profile" for "Summary", or else the section most of its
//!   bullets cite); a written section the input does not have goes where the blueprint
//!   puts it.
//! - Inside a section, each role keeps its heading (title, employer, place, dates) and
//!   gets its own bullets: a bullet goes where the first line it cites was, and the lines
//!   it cites are replaced by it; a line no bullet cites stays as it was. A bullet citing
//!   no line of the section goes to the end of its first role (or of the section).
//! - A section the user edited is their text, as is.
//!
//! The same placement gives the `section_draft` the user approves and the final document,
//! so what was approved is what is delivered.

use std::collections::{HashMap, HashSet};

use crate::layout::{Block, LayoutSection, Line, ResumeLayout, joined};
use crate::types::{Bullet, ResumeState, Section};

/// How a paragraph of the resume is styled: the DOCX paragraph style job-capabilities
/// writes and checks (`Title`, `Heading1` for sections, `Heading2` for roles, list items,
/// plain lines).
pub use job_capabilities::documents::DocxStyle as Style;

/// One paragraph of the resume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paragraph {
    /// Its style.
    pub style: Style,
    /// Its text, without a Markdown marker.
    pub text: String,
}

impl Paragraph {
    /// A paragraph on one line (a model's text may hold line breaks).
    fn new(style: Style, text: impl Into<String>) -> Self {
        let text: String = text.into();
        Paragraph {
            style,
            text: text.split_whitespace().collect::<Vec<_>>().join(" "),
        }
    }

    /// A written bullet's paragraph, without a list marker the model may have typed.
    fn written(style: Style, bullet: &Bullet) -> Self {
        Paragraph::new(style, crate::intake::strip_bullet(&bullet.text))
    }

    /// The Markdown line.
    pub fn markdown(&self) -> String {
        format!("{}{}", self.style.markdown_prefix(), self.text.trim())
    }
}

/// Markdown of paragraphs: a blank line before each heading.
pub fn markdown_of(paragraphs: &[Paragraph]) -> String {
    let mut out = String::new();
    for (i, paragraph) in paragraphs.iter().enumerate() {
        if i > 0 && matches!(paragraph.style, Style::Heading1 | Style::Heading2) {
            out.push('\n');
        }
        out.push_str(&paragraph.markdown());
        out.push('\n');
    }
    out
}

/// The paragraphs of Markdown written by a person (a user's edit): `#`, `##`, `###`
/// headings, `-`/`*`/`•` items, plain lines.
pub fn paragraphs_of_markdown(markdown: &str) -> Vec<Paragraph> {
    markdown
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| {
            if let Some(text) = line.strip_prefix("### ") {
                Paragraph::new(Style::Heading2, text.trim())
            } else if let Some(text) = line.strip_prefix("## ") {
                Paragraph::new(Style::Heading1, text.trim())
            } else if let Some(text) = line.strip_prefix("# ") {
                Paragraph::new(Style::Title, text.trim())
            } else if line.starts_with(['-', '*', '•']) {
                Paragraph::new(Style::ListItem, crate::intake::strip_bullet(line))
            } else {
                Paragraph::new(Style::Plain, line)
            }
        })
        .collect()
}

/// A heading's words for matching: lowercase letters and spaces.
fn normalized(name: &str) -> String {
    name.to_lowercase()
        .chars()
        .map(|c| if c.is_alphabetic() { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The usual kind of a section heading: "Professional Experience" and "Work History" are
/// both `experience`.
fn kind(name: &str) -> String {
    known_kind(name).map_or_else(|| normalized(name), str::to_owned)
}

/// The usual kind of a heading, when it is one of them.
fn known_kind(name: &str) -> Option<&'static str> {
    let name = normalized(name);
    const KINDS: &[(&str, &[&str])] = &[
        (
            "experience",
            &["experience", "employment", "work history", "career history"],
        ),
        (
            "summary",
            &["summary", "profile", "about", "objective", "overview"],
        ),
        (
            "skills",
            &["skill", "competenc", "technolog", "expertise", "tools"],
        ),
        ("education", &["education", "academic", "degree"]),
        ("projects", &["project"]),
        ("certifications", &["certif", "licen"]),
        ("languages", &["language"]),
    ];
    KINDS
        .iter()
        .find(|(_, words)| words.iter().any(|w| name.contains(w)))
        .map(|(kind, _)| *kind)
}

/// Which input section each written section rewrites (by the written section's name,
/// lowercase); a name not in the map is a section the input does not have.
fn matches(
    layout: &ResumeLayout,
    order: &[String],
    sections: &[Section],
) -> HashMap<String, usize> {
    let mut found: HashMap<String, usize> = HashMap::new();
    let claimed =
        |found: &HashMap<String, usize>, index: &usize| found.values().any(|i| i == index);
    // Same heading first, then the same kind of heading.
    for same in [
        |a: &str, b: &str| normalized(a) == normalized(b),
        |a: &str, b: &str| kind(a) == kind(b),
    ] {
        for name in order {
            if found.contains_key(&name.to_lowercase()) {
                continue;
            }
            if let Some(index) = (0..layout.sections.len())
                .find(|i| !claimed(&found, i) && same(name, &layout.sections[*i].heading))
            {
                found.insert(name.to_lowercase(), index);
            }
        }
    }
    // Then the section most of its bullets cite.
    for name in order {
        if found.contains_key(&name.to_lowercase()) {
            continue;
        }
        let Some(section) = sections.iter().find(|s| s.name.eq_ignore_ascii_case(name)) else {
            continue;
        };
        let cited: Vec<&str> = section
            .bullets
            .iter()
            .flat_map(|b| b.evidence.iter().map(String::as_str))
            .filter(|id| id.starts_with('R'))
            .collect();
        // Never a section of another usual kind (Skills does not take over Education).
        let other_kind = |i: &usize| {
            known_kind(name)
                .zip(known_kind(&layout.sections[*i].heading))
                .is_some_and(|(a, b)| a != b)
        };
        let best = (0..layout.sections.len())
            .filter(|i| !claimed(&found, i) && !other_kind(i))
            .map(|i| {
                let ids = layout.sections[i].line_ids();
                (i, cited.iter().filter(|id| ids.contains(id)).count())
            })
            .max_by_key(|(i, count)| (*count, usize::MAX - i));
        if let Some((index, count)) = best
            && count > 0
            && count * 2 >= cited.len()
        {
            found.insert(name.to_lowercase(), index);
        }
    }
    found
}

/// Where a bullet goes in its section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Anchor {
    /// In place of the line of block `block` (an entry's item `item`, or the block's line).
    At { block: usize, item: Option<usize> },
    /// At the end of entry `block`.
    EndOf(usize),
    /// At the end of the section.
    End,
}

/// The paragraphs of a written section's body, put into the input section it rewrites
/// (or as a list of bullets when the input has no such section).
fn placed(input: Option<&LayoutSection>, bullets: &[Bullet]) -> Vec<Paragraph> {
    let Some(input) = input else {
        return bullets
            .iter()
            .map(|b| Paragraph::written(Style::ListItem, b))
            .collect();
    };
    // Every line's place.
    let mut places: HashMap<&str, Anchor> = HashMap::new();
    for (block, part) in input.blocks.iter().enumerate() {
        match part {
            Block::Entry { heading, items } => {
                for line in heading {
                    places.insert(&line.evidence, Anchor::EndOf(block));
                }
                for (item, line) in items.iter().enumerate() {
                    places.insert(
                        &line.evidence,
                        Anchor::At {
                            block,
                            item: Some(item),
                        },
                    );
                }
            }
            Block::Line(line) => {
                places.insert(&line.evidence, Anchor::At { block, item: None });
            }
        }
    }
    let first_entry = input
        .blocks
        .iter()
        .position(|b| matches!(b, Block::Entry { .. }));
    let mut replaced: HashSet<&str> = HashSet::new();
    let mut at: HashMap<Anchor, Vec<&Bullet>> = HashMap::new();
    for bullet in bullets {
        let cited: Vec<Anchor> = bullet
            .evidence
            .iter()
            .filter_map(|id| places.get(id.as_str()).copied())
            .collect();
        for id in &bullet.evidence {
            if let Some(Anchor::At { .. }) = places.get(id.as_str()) {
                replaced.insert(id.as_str());
            }
        }
        let anchor = cited
            .iter()
            .find(|a| matches!(a, Anchor::At { .. }))
            .or(cited.first())
            .copied()
            .unwrap_or(match first_entry {
                Some(block) => Anchor::EndOf(block),
                None => Anchor::End,
            });
        at.entry(anchor).or_default().push(bullet);
    }
    let any_bullet = input.blocks.iter().any(|b| match b {
        Block::Line(line) => line.bullet,
        Block::Entry { .. } => true,
    });
    // The bullets anchored at `anchor` in `rewritten` style, else the original line (in
    // its own style) unless a bullet replaced it.
    let emit = |out: &mut Vec<Paragraph>,
                anchor: Anchor,
                original: Option<&Line>,
                rewritten: Style| {
        match (at.get(&anchor), original) {
            (Some(bullets), _) => {
                out.extend(bullets.iter().map(|b| Paragraph::written(rewritten, b)))
            }
            (None, Some(line)) if !replaced.contains(line.evidence.as_str()) => {
                let style = if line.bullet {
                    Style::ListItem
                } else {
                    Style::Plain
                };
                out.push(Paragraph::new(style, line.text.as_str()));
            }
            _ => {}
        }
    };
    let mut out = Vec::new();
    for (block, part) in input.blocks.iter().enumerate() {
        match part {
            Block::Entry { heading, items } => {
                out.push(Paragraph::new(Style::Heading2, joined(heading)));
                for (item, line) in items.iter().enumerate() {
                    let anchor = Anchor::At {
                        block,
                        item: Some(item),
                    };
                    emit(&mut out, anchor, Some(line), Style::ListItem);
                }
                emit(&mut out, Anchor::EndOf(block), None, Style::ListItem);
            }
            Block::Line(line) => {
                let style = if line.bullet {
                    Style::ListItem
                } else {
                    Style::Plain
                };
                emit(
                    &mut out,
                    Anchor::At { block, item: None },
                    Some(line),
                    style,
                );
            }
        }
    }
    let style = if any_bullet {
        Style::ListItem
    } else {
        Style::Plain
    };
    emit(&mut out, Anchor::End, None, style);
    out
}

/// The paragraphs of an input section as given.
fn as_given(input: &LayoutSection) -> Vec<Paragraph> {
    placed(Some(input), &[])
}

/// The section names in the order they are placed: the blueprint's, then any other
/// written section.
fn order(state: &ResumeState) -> Vec<String> {
    let mut order = state.planned_sections();
    for section in &state.sections {
        if !order.iter().any(|n| n.eq_ignore_ascii_case(&section.name)) {
            order.push(section.name.clone());
        }
    }
    order
}

/// The body of a written section as it will stand in the resume (what `section_draft`
/// shows): the user's own text when they edited it, else its bullets put into the
/// input's section, roles and lines.
pub fn section_markdown(state: &ResumeState, section: &Section) -> String {
    markdown_of(&section_paragraphs(
        state,
        &ResumeLayout::parse(&state.resume_text),
        section,
    ))
}

fn section_paragraphs(
    state: &ResumeState,
    layout: &ResumeLayout,
    section: &Section,
) -> Vec<Paragraph> {
    if section.user_edited {
        return paragraphs_of_markdown(&section.markdown);
    }
    let found = matches(layout, &order(state), &state.sections_with(section));
    let input = found
        .get(&section.name.to_lowercase())
        .and_then(|i| layout.sections.get(*i));
    placed(input, &section.bullets)
}

/// Where a written section the input lacks goes, by input section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Slot {
    Before(usize),
    After(usize),
}

/// Every paragraph of the resume, in order: the name, the contact lines, then each
/// section's heading and body (see the module's documentation).
pub fn paragraphs(state: &ResumeState) -> Vec<Paragraph> {
    let layout = ResumeLayout::parse(&state.resume_text);
    let order = order(state);
    let found = matches(&layout, &order, &state.sections);
    let name = if layout.name.trim().is_empty() {
        state.candidate_name.trim().to_owned()
    } else {
        layout.name.clone()
    };
    let mut out = vec![Paragraph::new(Style::Title, name)];
    out.extend(
        layout
            .contact
            .iter()
            .map(|line| Paragraph::new(Style::Plain, line.text.as_str())),
    );
    let written = |name: &str| {
        state
            .sections
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
    };
    // A written section the input lacks goes after the input section of the written
    // section before it in the blueprint, or else before that of the one after it.
    let mut slots: HashMap<Slot, Vec<&Section>> = HashMap::new();
    for (i, name) in order.iter().enumerate() {
        let Some(section) = written(name) else {
            continue;
        };
        if found.contains_key(&name.to_lowercase()) {
            continue;
        }
        let matched = |later: &String| found.get(&later.to_lowercase()).copied();
        let slot = match order[..i].iter().rev().find_map(matched) {
            Some(previous) => Slot::After(previous),
            None => order[i + 1..]
                .iter()
                .find_map(matched)
                .map_or(Slot::After(usize::MAX), Slot::Before),
        };
        slots.entry(slot).or_default().push(section);
    }
    let mut add_new = |out: &mut Vec<Paragraph>, slot: Slot| {
        for section in slots.remove(&slot).unwrap_or_default() {
            out.push(Paragraph::new(Style::Heading1, section.name.trim()));
            out.extend(section_paragraphs(state, &layout, section));
        }
    };
    let by_input: HashMap<usize, &str> =
        found.iter().map(|(name, i)| (*i, name.as_str())).collect();
    for (index, input) in layout.sections.iter().enumerate() {
        add_new(&mut out, Slot::Before(index));
        let section = by_input.get(&index).and_then(|name| written(name));
        let heading = match (input.heading.trim(), section) {
            ("", Some(section)) => section.name.trim().to_owned(),
            (heading, _) => heading.to_owned(),
        };
        if !heading.is_empty() {
            out.push(Paragraph::new(Style::Heading1, heading));
        }
        match section {
            Some(section) => out.extend(section_paragraphs(state, &layout, section)),
            None => out.extend(as_given(input)),
        }
        add_new(&mut out, Slot::After(index));
    }
    add_new(&mut out, Slot::After(usize::MAX));
    out
}

/// The resume as Markdown (see [`paragraphs`]).
pub fn resume_markdown(state: &ResumeState) -> String {
    markdown_of(&paragraphs(state))
}

impl ResumeState {
    /// The written sections with `section` in place of the one of its name.
    fn sections_with(&self, section: &Section) -> Vec<Section> {
        let mut sections: Vec<Section> = self
            .sections
            .iter()
            .filter(|s| !s.name.eq_ignore_ascii_case(&section.name))
            .cloned()
            .collect();
        sections.push(section.clone());
        sections
    }
}

#[cfg(test)]
mod tests;
