//! The resume's own bullets that a rewrite works on, one slot each, and how rewrites
//! take their place one for one.
//!
//! A slot is a bullet of a chunk the rewriter is given (`C3.2` is the second bullet of
//! chunk `C3`). Every attempt, the resume as it is included, is the same list of slots:
//! a slot holds its rewrite when an attempt has one and its own text otherwise, so every
//! attempt is scored on the same bullets and the document replaces line for line.

use std::collections::BTreeSet;

use job_capabilities::documents::strip_bullet;

use crate::records::{ResumeChunk, RewrittenBullet};
use crate::state::OptimizationState;
use crate::text::{content_stems, is_bullet, is_dated};

/// One of the resume's own bullets, as a rewrite may replace it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulletSlot {
    /// `C3.2`: the chunk's id, a dot, the bullet's place in the chunk from 1.
    pub id: String,
    /// The chunk it is in (`C3`).
    pub chunk_id: String,
    /// The bullet as the resume writes it, its list marker removed.
    pub text: String,
}

/// The chunk's position in the resume (`C3` is 3).
fn position(chunk_id: &str) -> usize {
    chunk_id
        .trim_start_matches('C')
        .parse()
        .unwrap_or(usize::MAX)
}

/// The slots of `state`'s rewrite: the bullets of the experience and project chunks the
/// rewriter is given (of every chunk given when none is one of those), in resume order.
/// A chunk's marked list items are its bullets; when no chunk marks any, every line is.
pub fn bullet_slots(state: &OptimizationState) -> Vec<BulletSlot> {
    slots_of(state.rewrite_sources())
}

/// The slots of `chunks` (see [`bullet_slots`]).
pub fn slots_of(chunks: &[ResumeChunk]) -> Vec<BulletSlot> {
    let wanted = |c: &&ResumeChunk| matches!(c.section_type.as_str(), "experience" | "projects");
    let mut chosen: Vec<&ResumeChunk> = if chunks.iter().any(|c| wanted(&c)) {
        chunks.iter().filter(wanted).collect()
    } else {
        chunks.iter().collect()
    };
    chosen.sort_by_key(|c| position(&c.id));
    chosen.dedup_by(|a, b| a.id == b.id);
    let marked = chosen.iter().flat_map(|c| c.content.lines()).any(is_bullet);
    let mut slots = Vec::new();
    for chunk in chosen {
        let lines = chunk
            .content
            .lines()
            .filter(|l| {
                if marked {
                    is_bullet(l)
                } else {
                    !is_dated_heading(l)
                }
            })
            .map(strip_bullet)
            .filter(|l| !l.is_empty());
        for (n, text) in lines.enumerate() {
            slots.push(BulletSlot {
                id: format!("{}.{}", chunk.id, n + 1),
                chunk_id: chunk.id.clone(),
                text: text.to_owned(),
            });
        }
    }
    slots
}

/// A line that heads an entry rather than says something: a few words dated as a role
/// or a degree is ([`is_dated`]: "Lead | 2019 – Present", "B.Sc. Physics, 2015"). In a
/// resume without list markers these are the role and degree lines, never rewritten.
///
/// ```
/// use jd_optimizer::bullets::is_dated_heading;
/// assert!(is_dated_heading("Principal ML Engineer, Vistaloop (2018 - present)"));
/// assert!(is_dated_heading("M.Sc. Artificial Intelligence, UPC, 2014"));
/// assert!(!is_dated_heading("Cut costs 30% in 2022 across the platform team"));
/// assert!(!is_dated_heading("Led a team of 4"));
/// ```
pub fn is_dated_heading(line: &str) -> bool {
    let text = strip_bullet(line);
    text.split_whitespace().count() <= MAX_HEADING_WORDS && is_dated(text)
}

/// The most words a dated heading has.
const MAX_HEADING_WORDS: usize = 14;

/// The bullets of an attempt: each slot's rewrite among `rewrites`, or its own text.
///
/// ```
/// use jd_optimizer::bullets::{BulletSlot, bullet_texts};
/// use jd_optimizer::records::RewrittenBullet;
/// let slot = |id: &str, text: &str| BulletSlot { id: id.into(), chunk_id: "C1".into(), text: text.into() };
/// let slots = [slot("C1.1", "Wrote notes"), slot("C1.2", "Ran numbers")];
/// let rewrite = RewrittenBullet { id: "B1".into(), replaces: "C1.2".into(), original: "Ran numbers".into(),
///     text: "Ran the numbers for the engine".into(), sources: vec!["C1".into()] };
/// assert_eq!(bullet_texts(&slots, &[rewrite]), ["Wrote notes", "Ran the numbers for the engine"]);
/// ```
pub fn bullet_texts(slots: &[BulletSlot], rewrites: &[RewrittenBullet]) -> Vec<String> {
    slots
        .iter()
        .map(|slot| {
            rewrites
                .iter()
                .find(|r| r.replaces == slot.id)
                .map_or_else(|| slot.text.clone(), |r| r.text.clone())
        })
        .collect()
}

/// The bullets of the resume as it stands in `state`: every slot, with the current
/// rewrites in place (the kept attempt's once scoring is done).
pub fn current_bullets(state: &OptimizationState) -> Vec<String> {
    bullet_texts(&bullet_slots(state), &state.optimized_bullets)
}

/// What a rewritten bullet says it is and replaces, as the model wrote it.
#[derive(Debug, Clone, Copy)]
pub struct Draft<'a> {
    /// The slot it names (`C3.2`), possibly empty or wrong.
    pub replaces: &'a str,
    /// The bullet.
    pub text: &'a str,
    /// The chunks it cites.
    pub sources: &'a [String],
}

/// The share of the smaller side's content words two texts have in common.
fn overlap(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let smaller = a.len().min(b.len());
    if smaller == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / smaller as f64
}

/// The slot each draft replaces, in draft order (`None`: it matches no free slot): the
/// slot it names when that slot is free; else the free slot of the chunks it cites whose
/// words it shares most; else the free slot of any chunk it shares most with. A slot
/// takes one draft at most.
///
/// ```
/// use jd_optimizer::bullets::{BulletSlot, Draft, assign_slots};
/// let slot = |id: &str, text: &str| BulletSlot { id: id.into(), chunk_id: "C1".into(), text: text.into() };
/// let slots = [slot("C1.1", "Wrote the notes on the engine"), slot("C1.2", "Ran numbers for Babbage")];
/// let cites = vec!["C1".to_owned()];
/// let drafts = [
///     Draft { replaces: "", text: "Ran the numbers for Babbage's engine", sources: &cites },
///     Draft { replaces: "C1.1", text: "Wrote the first notes", sources: &cites },
///     Draft { replaces: "C1.1", text: "Wrote notes again", sources: &cites },
/// ];
/// assert_eq!(assign_slots(&slots, &drafts), [Some(1), Some(0), None]);
/// ```
pub fn assign_slots(slots: &[BulletSlot], drafts: &[Draft<'_>]) -> Vec<Option<usize>> {
    let mut taken = vec![false; slots.len()];
    let mut assigned = vec![None; drafts.len()];
    // Named slots first, so a draft matched by its words cannot take another's slot.
    for (d, draft) in drafts.iter().enumerate() {
        let named = slots
            .iter()
            .position(|s| s.id.eq_ignore_ascii_case(draft.replaces.trim()));
        if let Some(i) = named
            && !taken[i]
        {
            taken[i] = true;
            assigned[d] = Some(i);
        }
    }
    let slot_words: Vec<BTreeSet<String>> = slots.iter().map(|s| content_stems(&s.text)).collect();
    for (d, draft) in drafts.iter().enumerate() {
        if assigned[d].is_some() {
            continue;
        }
        let words = content_stems(draft.text);
        let best = |cited_only: bool| {
            slots
                .iter()
                .enumerate()
                .filter(|(i, s)| {
                    !taken[*i]
                        && (!cited_only || draft.sources.iter().any(|c| c.trim() == s.chunk_id))
                })
                .map(|(i, _)| (i, overlap(&words, &slot_words[i])))
                .filter(|(_, share)| *share > 0.0)
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
                .map(|(i, _)| i)
        };
        if let Some(i) = best(true).or_else(|| best(false)) {
            taken[i] = true;
            assigned[d] = Some(i);
        }
    }
    assigned
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bullet_slots_are_the_experience_bullets_in_order() {
        use crate::bullets::bullet_slots;
        use crate::state::OptimizationState;
        let resume = "Ada\n\nExperience\nAnalyst, Engines (1842)\n- Wrote notes\n- Ran numbers\n\nSkills\nMaths";
        let state = OptimizationState::of_resume(resume);
        let slots = bullet_slots(&state);
        let texts: Vec<_> = slots
            .iter()
            .map(|s| (s.id.as_str(), s.text.as_str()))
            .collect();
        assert_eq!(texts, [("C1.1", "Wrote notes"), ("C1.2", "Ran numbers")]);
    }

    fn chunk(id: &str, section: &str, content: &str) -> ResumeChunk {
        ResumeChunk {
            id: id.into(),
            section_type: section.into(),
            content: content.into(),
            relevance_score: 0.0,
        }
    }

    #[test]
    fn slots_are_the_bullets_of_experience_and_projects_in_resume_order() {
        let chunks = [
            chunk("C4", "projects", "Atlas\n- Mapped 3 cities"),
            chunk("C1", "summary", "Engineer of ten years"),
            chunk(
                "C2",
                "experience",
                "Lead, Acme (2020 - 2024)\n- Led 4 people\n- Cut costs 30%",
            ),
        ];
        let slots = slots_of(&chunks);
        let ids: Vec<&str> = slots.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["C2.1", "C2.2", "C4.1"]);
        assert_eq!(slots[1].text, "Cut costs 30%");
    }

    #[test]
    fn without_list_markers_every_line_but_a_dated_heading_is_a_slot() {
        let chunks = [chunk("C1", "summary", "Built things\nRan things")];
        assert_eq!(slots_of(&chunks).len(), 2);
        let chunks = [chunk(
            "C2",
            "experience",
            "Lead, Acme (2020 - 2024)\nLed 4 people\nCut costs 30% in 2022 across the whole platform team",
        )];
        let texts: Vec<String> = slots_of(&chunks).into_iter().map(|s| s.text).collect();
        assert_eq!(
            texts,
            [
                "Led 4 people",
                "Cut costs 30% in 2022 across the whole platform team"
            ]
        );
    }

    #[test]
    fn a_draft_matching_nothing_is_left_out() {
        let slots = slots_of(&[chunk("C1", "experience", "- Led 4 people")]);
        let none: Vec<String> = Vec::new();
        let drafts = [Draft {
            replaces: "C9.9",
            text: "Sang opera",
            sources: &none,
        }];
        assert_eq!(assign_slots(&slots, &drafts), [None]);
    }
}
