//! The rewriter (spec 003 sections 3.4, 3.7.2 and 3.7.3), primary tier: one full rewrite
//! on a compact context, then targeted repairs of the weak bullets only. Every bullet
//! names the chunks it rewrites and passes the fabrication check, or is dropped with
//! its reason.

use agent_llm::ModelTier;
use agent_runtime::graph::NodeError;
use job_capabilities::documents::strip_bullet;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bullets::{BulletSlot, Draft, assign_slots, bullet_slots};
use crate::deps::Deps;
use crate::events::OptimizeEvent;
use crate::fabrication::{Fabrication, check_bullet};
use crate::llm::{Ask, CallError, Node};
use crate::records::{AttemptKind, DroppedBullet, ResumeChunk, RewrittenBullet, ScoreBreakdown};
use crate::state::OptimizationState;

/// The agent's name in token counts and errors.
pub const AGENT: &str = "resume_rewriter";

/// Characters per token, for the input cap.
const CHARS_PER_TOKEN: usize = 4;
/// A chunk shorter than this after cutting is left out rather than cut.
const MIN_CUT_CHARS: usize = 160;

/// The system prompt of a full rewrite.
pub const SYSTEM: &str = "You are the Resume Rewriter. Rewrite the resume bullets asked ([C2.1]...) for the target job, each once: an action verb first, 12 to 28 words, the job's keywords where the chunks support them, its numbers kept. Leave out a bullet you would not change. Never add a skill, employer, title or number the chunks do not state. replaces: the bullet's id; sources: the chunk ids (C1...) whose facts it uses.";

/// Answer tokens a rewrite asks for per bullet, and for the answer around them.
const TOKENS_PER_BULLET: u32 = 70;
/// See [`TOKENS_PER_BULLET`].
const ANSWER_OVERHEAD_TOKENS: u32 = 80;

/// The system prompt of a targeted repair.
pub const REPAIR_SYSTEM: &str = "You are the Resume Rewriter, repairing weak bullets. Rewrite only the bullets listed, for the weak categories, with the missing keywords their sources hold; facts only from the sources. An action verb first, 12 to 28 words. replaces: the bullet id; sources: the chunk ids used.";

/// A bullet as the model writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BulletDraft {
    /// The id of the resume's bullet it rewrites (`C2.1`); when missing or wrong, the
    /// bullet of its chunks it shares most words with.
    #[serde(default)]
    pub replaces: String,
    /// The bullet.
    pub text: String,
    /// Ids of the chunks it rewrites.
    pub sources: Vec<String>,
}

/// A full rewrite's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RewriteAnswer {
    /// The bullets.
    pub bullets: Vec<BulletDraft>,
}

/// A repaired bullet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BulletPatch {
    /// The id of the bullet it replaces (`B2`).
    pub replaces: String,
    /// The new bullet.
    pub text: String,
    /// Ids of the chunks it rewrites.
    pub sources: Vec<String>,
}

/// A repair's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepairAnswer {
    /// The repaired bullets.
    pub bullets: Vec<BulletPatch>,
}

/// A chunk's text on one line, each of its bullets among `slots` marked with its id
/// (`[C2.1] Led 4 people`).
fn marked_text(chunk: &ResumeChunk, slots: &[BulletSlot]) -> String {
    let mut own = slots.iter().filter(|s| s.chunk_id == chunk.id).peekable();
    chunk
        .content
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| match own.peek() {
            Some(slot) if strip_bullet(line) == slot.text => {
                let marked = format!("[{}] {}", slot.id, slot.text);
                own.next();
                marked
            }
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The chunks as prompt text, most relevant first, each cut to `max_chunk_chars`,
/// within `budget_chars`: low-relevance chunks are dropped first, then the last one
/// kept is shortened. The bullets among `slots` are marked with their ids.
pub fn chunk_lines(
    chunks: &[ResumeChunk],
    slots: &[BulletSlot],
    max_chunk_chars: usize,
    budget_chars: usize,
) -> String {
    let mut ranked: Vec<&ResumeChunk> = chunks.iter().collect();
    ranked.sort_by(|a, b| b.relevance_score.total_cmp(&a.relevance_score));
    let mut out = String::new();
    for chunk in ranked {
        let left = budget_chars.saturating_sub(out.len());
        let room = left
            .saturating_sub(chunk.id.len() + 16)
            .min(max_chunk_chars);
        if room < MIN_CUT_CHARS.min(chunk.content.len()) {
            break;
        }
        let marked = marked_text(chunk, slots);
        let text = cut(&marked, room);
        out.push_str(&format!(
            "{} ({}): {}\n",
            chunk.id, chunk.section_type, text
        ));
    }
    out
}

fn cut(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => text[..at]
            .rsplit_once(' ')
            .map_or(&text[..at], |(head, _)| head),
        None => text,
    }
}

/// What a full rewrite asks: its prompt and the bullets it asks to rewrite.
#[derive(Debug, Clone, PartialEq)]
pub struct RewritePlan {
    /// The user prompt.
    pub prompt: String,
    /// The bullets asked for, every one shown whole in the prompt, in resume order.
    pub slots: Vec<BulletSlot>,
}

/// The bullets of the most relevant chunks, whole chunks only, `max_bullets` at most
/// (but always one chunk's): what a rewrite asks for when the budget is short.
fn slots_within(
    state: &OptimizationState,
    slots: Vec<BulletSlot>,
    max_bullets: usize,
) -> Vec<BulletSlot> {
    let mut ranked: Vec<&ResumeChunk> = state
        .rewrite_sources()
        .iter()
        .filter(|c| slots.iter().any(|s| s.chunk_id == c.id))
        .collect();
    ranked.sort_by(|a, b| b.relevance_score.total_cmp(&a.relevance_score));
    let mut chosen: Vec<&str> = Vec::new();
    let mut count = 0;
    for chunk in ranked {
        let own = slots.iter().filter(|s| s.chunk_id == chunk.id).count();
        if !chosen.is_empty() && count + own > max_bullets {
            continue;
        }
        chosen.push(&chunk.id);
        count += own;
    }
    slots
        .iter()
        .filter(|s| chosen.contains(&s.chunk_id.as_str()))
        .cloned()
        .collect()
}

/// The full rewrite's plan: the top keywords, the skills, the duties, the chunks within
/// the input cap with the resume's bullets marked by id, and the bullets to rewrite
/// (every bullet shown, or those of the most relevant chunks up to `max_bullets`); on a
/// second rewrite, the kept score's breakdown.
pub fn rewrite_plan(state: &OptimizationState, max_bullets: Option<usize>) -> RewritePlan {
    let config = &state.config;
    let analysis = state.jd_analysis.clone().unwrap_or_default();
    let mut head = format!(
        "{}Duties: {}\n",
        analysis.keywords_and_other_skills(config.prompt_keywords),
        analysis
            .responsibilities
            .iter()
            .take(6)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ")
    );
    if let (Some(score), Some(breakdown)) = (state.ats_score, state.score_breakdown) {
        head.push_str(&format!(
            "The best version so far scored {:.0}%: {}. Improve the weakest.\n",
            score * 100.0,
            breakdown_line(&breakdown)
        ));
    }
    if !state.user_facts.is_empty() {
        head.push_str(&format!(
            "The candidate's own answers (usable as sources U1..): {}\n",
            numbered_facts(&state.user_facts)
        ));
    }
    let all = bullet_slots(state);
    let asked = match max_bullets {
        Some(max) => slots_within(state, all.clone(), max),
        None => all.clone(),
    };
    // The tail names at most every bullet: its length bounds the chunks' room.
    let tail_room = 80 + asked.iter().map(|s| s.id.len() + 2).sum::<usize>();
    let budget_chars = (config.max_rewriter_input_tokens * CHARS_PER_TOKEN)
        .saturating_sub(SYSTEM.len() + head.len() + tail_room);
    let chunks = chunk_lines(
        state.rewrite_sources(),
        &all,
        config.max_chunk_chars,
        budget_chars,
    );
    let slots: Vec<BulletSlot> = asked
        .into_iter()
        .filter(|s| chunks.contains(&format!("[{}] {}", s.id, s.text)))
        .collect();
    let ids: Vec<&str> = slots.iter().map(|s| s.id.as_str()).collect();
    // Every bullet shown is marked: when all are asked, the marks say which.
    let tail = if slots.len() == all.len() {
        "Rewrite the marked bullets.".to_owned()
    } else {
        format!(
            "Rewrite only {}; the others stay as they are.",
            ids.join(", ")
        )
    };
    RewritePlan {
        prompt: format!("{head}Resume chunks:\n{chunks}{tail}"),
        slots,
    }
}

fn numbered_facts(facts: &[String]) -> String {
    facts
        .iter()
        .enumerate()
        .map(|(i, f)| format!("U{}: {f}", i + 1))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// `keywords 62%, skills 70%, experience 55%, formatting 90%`.
pub fn breakdown_line(b: &ScoreBreakdown) -> String {
    format!(
        "keywords {:.0}%, skills {:.0}%, experience {:.0}%, formatting {:.0}%",
        b.keywords * 100.0,
        b.skills * 100.0,
        b.experience * 100.0,
        b.formatting * 100.0
    )
}

/// The texts a draft may draw on: the chunks it cites (`C3`, or a bullet of it, `C3.2`; any chunk of the resume:
/// all of it is what the candidate says), the chunk of the bullet it replaces, and every
/// user answer; an error when it has none of these.
pub fn sources_of(
    state: &OptimizationState,
    cited: &[String],
    own_chunk: Option<&str>,
) -> Result<Vec<String>, Fabrication> {
    // A bullet's id (`C2.1`) cites its chunk.
    let chunk_of = |id: &str| id.trim().split('.').next().unwrap_or_default().to_owned();
    let chunks: Vec<String> = state
        .resume_sections
        .iter()
        .filter(|c| own_chunk == Some(c.id.as_str()) || cited.iter().any(|id| chunk_of(id) == c.id))
        .map(|c| c.content.clone())
        .collect();
    let cites_fact = cited.iter().any(|id| id.trim().starts_with('U'));
    if chunks.is_empty() && !cites_fact {
        return Err(Fabrication::NoSource(cited.join(", ")));
    }
    Ok(chunks
        .into_iter()
        .chain(state.user_facts.iter().cloned())
        .collect())
}

/// Checks a draft that replaces a bullet of `own_chunk`: `Ok`, or the reason it is
/// dropped.
pub fn accept(
    state: &OptimizationState,
    text: &str,
    cited: &[String],
    own_chunk: Option<&str>,
) -> Result<(), DroppedBullet> {
    let analysis = state.jd_analysis.clone().unwrap_or_default();
    let drop = |reason: Fabrication| DroppedBullet {
        text: text.to_owned(),
        sources: cited.to_vec(),
        reason: reason.to_string(),
    };
    let sources = sources_of(state, cited, own_chunk).map_err(drop)?;
    check_bullet(text, &sources, &analysis).map_err(drop)
}

fn report_dropped(ctx: &Node, dropped: &[DroppedBullet]) {
    if dropped.is_empty() {
        return;
    }
    ctx.emit(OptimizeEvent::BulletsDropped {
        count: dropped.len(),
        reasons: dropped.iter().map(|d| d.reason.clone()).collect(),
    });
}

/// What a failed call does to the run: a budget stop, or (for a first rewrite) a
/// failed run; a repair's failure keeps the bullets it had.
fn on_failure(ctx: &Node, error: CallError, first: bool) -> Result<(), NodeError> {
    if let CallError::Budget { limit, message } = &error {
        crate::guards::stop_for_budget(ctx, *limit, message.clone());
        return Ok(());
    }
    ctx.update(|s| s.record_error(AGENT, error.kind(), error.to_string(), !first));
    if first {
        return Err(NodeError::fatal(format!("the rewrite failed: {error}")));
    }
    ctx.emit(OptimizeEvent::Warning {
        agent: AGENT.into(),
        message: format!("the repair failed ({error}); the previous bullets are kept"),
    });
    Ok(())
}

/// A full rewrite of every bullet the rewriter is given, or of the most relevant
/// chunks' bullets up to `max_bullets` when the budget is short. Each bullet the model
/// writes replaces the resume's bullet it names (or, when it names none it was asked
/// for, the one it shares most words with); a bullet it leaves out, or whose rewrite the
/// fabrication check refuses, keeps its own text.
pub async fn rewrite(ctx: &Node, deps: &Deps, max_bullets: Option<usize>) -> Result<(), NodeError> {
    let (plan, first) = ctx.read(|s| {
        (
            rewrite_plan(s, max_bullets),
            s.rewrite_attempts == 0 && s.repair_attempts == 0,
        )
    });
    if plan.slots.is_empty() {
        let message = "the resume has no bullet the rewriter could be shown: it is kept as it is";
        ctx.update(|s| {
            s.rewrite_attempts += 1;
            s.optimized_bullets = Vec::new();
            s.bullets_from = Some(AttemptKind::FullRewrite);
            s.warnings.push(message.to_owned());
        });
        ctx.emit(OptimizeEvent::Warning {
            agent: AGENT.into(),
            message: message.into(),
        });
        return Ok(());
    }
    let asked = u32::try_from(plan.slots.len()).unwrap_or(u32::MAX);
    let ask = Ask {
        agent: AGENT,
        tier: ModelTier::Primary,
        system: SYSTEM.to_owned(),
        prompt: plan.prompt,
        temperature: 0.3,
        max_tokens: TOKENS_PER_BULLET.saturating_mul(asked) + ANSWER_OVERHEAD_TOKENS,
        fields_in_system: true,
    };
    let answer = match deps.caller.ask::<RewriteAnswer>(ctx, ask).await {
        Ok(answer) => answer,
        Err(error) => return on_failure(ctx, error, first),
    };
    let slots = plan.slots;
    let drafts: Vec<Draft<'_>> = answer
        .bullets
        .iter()
        .map(|b| Draft {
            replaces: &b.replaces,
            text: b.text.trim(),
            sources: &b.sources,
        })
        .collect();
    let assigned = assign_slots(&slots, &drafts);
    let dropped = ctx.update(|s| {
        let mut kept: Vec<(usize, RewrittenBullet)> = Vec::new();
        let mut dropped = Vec::new();
        for (draft, slot) in drafts.iter().zip(assigned) {
            let Some(slot) = slot.map(|i| (i, &slots[i])) else {
                dropped.push(DroppedBullet {
                    text: draft.text.to_owned(),
                    sources: draft.sources.to_vec(),
                    reason: "replaces no bullet of the resume it was asked to rewrite".into(),
                });
                continue;
            };
            let (index, slot) = slot;
            if draft.text == slot.text {
                // The bullet as it was: not a rewrite.
                continue;
            }
            match accept(s, draft.text, draft.sources, Some(&slot.chunk_id)) {
                Ok(()) => kept.push((
                    index,
                    RewrittenBullet {
                        id: String::new(),
                        replaces: slot.id.clone(),
                        original: slot.text.clone(),
                        text: draft.text.to_owned(),
                        sources: draft.sources.to_vec(),
                    },
                )),
                Err(drop) => dropped.push(drop),
            }
        }
        kept.sort_by_key(|(index, _)| *index);
        s.optimized_bullets = kept
            .into_iter()
            .enumerate()
            .map(|(n, (_, bullet))| RewrittenBullet {
                id: format!("B{}", n + 1),
                ..bullet
            })
            .collect();
        s.rewrite_attempts += 1;
        s.bullets_from = Some(AttemptKind::FullRewrite);
        s.dropped_bullets.extend(dropped.iter().cloned());
        dropped
    });
    report_dropped(ctx, &dropped);
    Ok(())
}

/// The repair's prompt: the score now, the weak categories, each source once (the
/// cited chunks and the listed skills), then each bullet to patch with its issues and the
/// missing keywords its sources hold.
pub fn repair_prompt(state: &OptimizationState, targets: &[crate::repair::RepairTarget]) -> String {
    let mut prompt = String::new();
    if let Some(breakdown) = state.score_breakdown {
        prompt.push_str(&format!("Score now: {}\n", breakdown_line(&breakdown)));
    }
    let weak: Vec<&str> = targets
        .first()
        .map(|t| t.weak_categories.iter().map(|c| c.as_str()).collect())
        .unwrap_or_default();
    prompt.push_str(&format!("Weak categories: {}\n", weak.join(", ")));
    let bullets: Vec<&RewrittenBullet> = targets
        .iter()
        .filter_map(|t| state.optimized_bullets.iter().find(|b| b.id == t.bullet_id))
        .collect();
    prompt.push_str("Sources:\n");
    for chunk in state
        .rewrite_sources()
        .iter()
        .filter(|c| c.section_type == "skills" || bullets.iter().any(|b| b.sources.contains(&c.id)))
    {
        prompt.push_str(&format!(
            "{} ({}): {}\n",
            chunk.id,
            chunk.section_type,
            cut(&chunk.content, state.config.max_chunk_chars).replace('\n', " ")
        ));
    }
    prompt.push_str("Bullets to repair:\n");
    for (target, bullet) in targets.iter().zip(&bullets) {
        let or_none = |items: &[String]| {
            if items.is_empty() {
                "none".to_owned()
            } else {
                items.join(", ")
            }
        };
        prompt.push_str(&format!(
            "{}: {}\n  cites {}; issues: {}; missing keywords its sources hold: {}\n",
            bullet.id,
            bullet.text,
            bullet.sources.join(", "),
            or_none(&target.issues),
            or_none(&target.keywords),
        ));
    }
    prompt
}

/// A targeted repair of the weak bullets; each accepted patch replaces its bullet, a
/// refused one leaves the bullet as it was.
pub async fn repair(
    ctx: &Node,
    deps: &Deps,
    targets: &[crate::repair::RepairTarget],
) -> Result<(), NodeError> {
    let prompt = ctx.read(|s| repair_prompt(s, targets));
    let ask = Ask {
        agent: AGENT,
        tier: ModelTier::Primary,
        system: REPAIR_SYSTEM.to_owned(),
        prompt,
        temperature: 0.3,
        max_tokens: 120 * targets.len().max(1) as u32 + 100,
        fields_in_system: true,
    };
    let answer = match deps.caller.ask::<RepairAnswer>(ctx, ask).await {
        Ok(answer) => answer,
        Err(error) => {
            ctx.update(|s| s.repair_attempts += 1);
            return on_failure(ctx, error, false);
        }
    };
    let dropped = ctx.update(|s| {
        let mut dropped = Vec::new();
        for patch in &answer.bullets {
            let id = patch.replaces.trim();
            if !targets.iter().any(|t| t.bullet_id == id) {
                continue;
            }
            let Some(index) = s.optimized_bullets.iter().position(|b| b.id == id) else {
                continue;
            };
            let own_chunk = s.optimized_bullets[index]
                .replaces
                .split_once('.')
                .map(|(chunk, _)| chunk.to_owned());
            match accept(s, patch.text.trim(), &patch.sources, own_chunk.as_deref()) {
                Ok(()) => {
                    let bullet = &mut s.optimized_bullets[index];
                    bullet.text = patch.text.trim().to_owned();
                    bullet.sources = patch.sources.clone();
                }
                Err(drop) => dropped.push(drop),
            }
        }
        s.repair_attempts += 1;
        s.bullets_from = Some(AttemptKind::TargetedRepair);
        s.dropped_bullets.extend(dropped.iter().cloned());
        dropped
    });
    report_dropped(ctx, &dropped);
    Ok(())
}
