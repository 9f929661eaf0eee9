//! The rewriter (spec 003 sections 3.4, 3.7.2 and 3.7.3), primary tier: one full rewrite
//! on a compact context, then targeted repairs of the weak bullets only. Every bullet
//! names the chunks it rewrites and passes the fabrication check, or is dropped with
//! its reason.

use agent_llm::ModelTier;
use agent_runtime::graph::NodeError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::deps::Deps;
use crate::events::OptimizeEvent;
use crate::fabrication::{Fabrication, check_bullet};
use crate::llm::{Ask, CallError, Node};
use crate::state::{
    AttemptKind, DroppedBullet, OptimizationState, ResumeChunk, RewrittenBullet, ScoreBreakdown,
};

/// The agent's name in token counts and errors.
pub const AGENT: &str = "resume_rewriter";

/// Characters per token, for the input cap.
const CHARS_PER_TOKEN: usize = 4;
/// A chunk shorter than this after cutting is left out rather than cut.
const MIN_CUT_CHARS: usize = 160;

/// The system prompt of a full rewrite.
pub const SYSTEM: &str = "You are the Resume Rewriter. Rewrite the resume chunks as bullets for the target job: an action verb first, 12 to 28 words, the job's keywords where a chunk supports them, its numbers kept. Never add a skill, employer, title or number the chunks do not state. sources: the chunk ids (C1...) each bullet rewrites. JSON only.";

/// The system prompt of a targeted repair.
pub const REPAIR_SYSTEM: &str = "You are the Resume Rewriter, repairing weak bullets. Rewrite only the bullets listed, for the weak categories, with the missing keywords their sources hold; facts only from the sources. An action verb first, 12 to 28 words. replaces: the bullet id; sources: the chunk ids used. JSON only.";

/// A bullet as the model writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BulletDraft {
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

/// The chunks as prompt text, most relevant first, each cut to `max_chunk_chars`,
/// within `budget_chars`: low-relevance chunks are dropped first, then the last one
/// kept is shortened.
pub fn chunk_lines(chunks: &[ResumeChunk], max_chunk_chars: usize, budget_chars: usize) -> String {
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
        let text = cut(&chunk.content, room);
        out.push_str(&format!(
            "{} ({}): {}\n",
            chunk.id,
            chunk.section_type,
            text.replace('\n', " ")
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

/// The full rewrite's prompt: the top keywords, the skills, the duties, the chunks
/// within the input cap, the bullet count, and, on a second rewrite, the previous
/// score breakdown.
pub fn rewrite_prompt(state: &OptimizationState, bullets: usize) -> String {
    let config = &state.config;
    let analysis = state.jd_analysis.clone().unwrap_or_default();
    let mut head = format!(
        "Target keywords (heaviest first): {}\nHard skills: {}\nDuties: {}\n",
        analysis.top_keywords(config.prompt_keywords).join(", "),
        sorted(&analysis.hard_skills),
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
            "The previous rewrite scored {:.0}%: {}. Improve the weakest.\n",
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
    let tail = format!("Write at most {bullets} bullets.");
    let budget_chars = (config.max_rewriter_input_tokens * CHARS_PER_TOKEN)
        .saturating_sub(SYSTEM.len() + head.len() + tail.len() + 40);
    let chunks = chunk_lines(
        state.rewrite_sources(),
        config.max_chunk_chars,
        budget_chars,
    );
    format!("{head}Resume chunks:\n{chunks}{tail}")
}

fn sorted(items: &[String]) -> String {
    let mut items = items.to_vec();
    items.sort_by_key(|s| s.to_lowercase());
    items.join(", ")
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

/// The texts a draft may draw on: the chunks it cites (`C..`) and every user answer;
/// an error when it cites none it was given.
pub fn sources_of(state: &OptimizationState, cited: &[String]) -> Result<Vec<String>, Fabrication> {
    let given = state.rewrite_sources();
    let chunks: Vec<String> = cited
        .iter()
        .filter_map(|id| given.iter().find(|c| c.id == id.trim()))
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

/// Checks a draft: `Ok` with the bullet, or the reason it is dropped.
pub fn accept(
    state: &OptimizationState,
    text: &str,
    cited: &[String],
) -> Result<(), DroppedBullet> {
    let analysis = state.jd_analysis.clone().unwrap_or_default();
    let drop = |reason: Fabrication| DroppedBullet {
        text: text.to_owned(),
        sources: cited.to_vec(),
        reason: reason.to_string(),
    };
    let sources = sources_of(state, cited).map_err(drop)?;
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
        crate::nodes::stop_for_budget(ctx, *limit, message.clone());
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

/// A full rewrite: `bullets` at most, `max_tokens` for the answer (both smaller when
/// the budget is short).
pub async fn rewrite(
    ctx: &Node,
    deps: &Deps,
    bullets: usize,
    max_tokens: u32,
) -> Result<(), NodeError> {
    let (prompt, first) =
        ctx.read(|s| (rewrite_prompt(s, bullets), s.optimized_bullets.is_empty()));
    let ask = Ask {
        agent: AGENT,
        tier: ModelTier::Primary,
        system: SYSTEM.to_owned(),
        prompt,
        temperature: 0.3,
        max_tokens,
    };
    let answer = match deps.caller.ask::<RewriteAnswer>(ctx, ask).await {
        Ok(answer) => answer,
        Err(error) => return on_failure(ctx, error, first),
    };
    let dropped = ctx.update(|s| {
        let mut kept = Vec::new();
        let mut dropped = Vec::new();
        for draft in answer.bullets.iter().take(bullets) {
            match accept(s, draft.text.trim(), &draft.sources) {
                Ok(()) => kept.push(RewrittenBullet {
                    id: format!("B{}", kept.len() + 1),
                    text: draft.text.trim().to_owned(),
                    sources: draft.sources.clone(),
                }),
                Err(drop) => dropped.push(drop),
            }
        }
        s.rewrite_attempts += 1;
        if !kept.is_empty() || s.optimized_bullets.is_empty() {
            s.optimized_bullets = kept;
            s.bullets_from = Some(AttemptKind::FullRewrite);
        }
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
            match accept(s, patch.text.trim(), &patch.sources) {
                Ok(()) => {
                    if let Some(bullet) = s.optimized_bullets.iter_mut().find(|b| b.id == id) {
                        bullet.text = patch.text.trim().to_owned();
                        bullet.sources = patch.sources.clone();
                    }
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
