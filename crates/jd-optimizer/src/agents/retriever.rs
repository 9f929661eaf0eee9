//! The retriever (spec 003 section 3.3), no model call: the resume's chunks embedded
//! once per resume in the tenant's part of a vector store, searched by a query built
//! from the weighted JD keywords (hybrid: cosine above the floor and full text, fused),
//! top 6 (8 for a long description), de-duplicated; cached per tenant, resume and JD.
//! Without an embedding model, or when the store fails or finds nothing, the raw
//! sections ranked by the keywords they contain are used, with a recorded warning.

use agent_runtime::graph::NodeError;
use job_capabilities::retrieval::RetrievalOptions;

use crate::analysis::{JdAnalysis, is_long_jd, text_hash};
use crate::cache::{CacheKind, RETRIEVAL_TTL, retrieval_key};
use crate::deps::Deps;
use crate::events::OptimizeEvent;
use crate::llm::Node;
use crate::records::{ResumeChunk, RetrievalSource};
use crate::text::{Found, find_keyword};

/// The agent's name in errors.
pub const AGENT: &str = "resume_retriever";

/// Keywords in the retrieval query.
const QUERY_KEYWORDS: usize = 12;

/// The retrieval query: the heaviest keywords, heaviest first.
pub fn query_text(analysis: &JdAnalysis) -> String {
    analysis.top_keywords(QUERY_KEYWORDS).join(" ")
}

/// Each section's relevance as the weighted share of the keywords it contains; the
/// `top_k` most relevant (those with none left out, unless none has any).
pub fn rank_raw_sections(
    analysis: &JdAnalysis,
    sections: &[ResumeChunk],
    top_k: usize,
) -> Vec<ResumeChunk> {
    let total: f64 = analysis.keyword_weights.values().sum();
    let mut ranked: Vec<ResumeChunk> = sections
        .iter()
        .map(|section| {
            let share: f64 = analysis
                .keyword_weights
                .iter()
                .filter(|(k, _)| find_keyword(&section.content, k) != Found::No)
                .map(|(_, w)| w)
                .sum();
            let mut chunk = section.clone();
            chunk.relevance_score = if total > 0.0 { share / total } else { 0.0 };
            chunk
        })
        .collect();
    ranked.sort_by(|a, b| b.relevance_score.total_cmp(&a.relevance_score));
    if ranked.iter().any(|c| c.relevance_score > 0.0) {
        ranked.retain(|c| c.relevance_score > 0.0);
    }
    ranked.truncate(top_k);
    // In resume order, as a reader meets them.
    ranked.sort_by_key(|c| position(&c.id));
    ranked
}

fn position(id: &str) -> usize {
    id.trim_start_matches('C').parse().unwrap_or(usize::MAX)
}

/// Runs the retriever.
pub async fn run(ctx: &Node, deps: &Deps) -> Result<(), NodeError> {
    let (tenant, resume_id, jd_text, sections, analysis, config) = ctx.read(|s| {
        (
            s.tenant_id.clone(),
            s.resume_id.clone(),
            s.jd_text.clone(),
            s.resume_sections.clone(),
            s.jd_analysis.clone().unwrap_or_default(),
            s.config.clone(),
        )
    });
    let top_k = if is_long_jd(&jd_text, &analysis) {
        config.long_jd_top_k
    } else {
        config.top_k
    };
    let key = retrieval_key(&tenant, &resume_id, &text_hash(&jd_text));
    if deps.index.is_configured() {
        if let Some(chunks) = deps
            .cache
            .get::<Vec<ResumeChunk>>(CacheKind::Retrieval, &key)
            .await
        {
            ctx.update(|s| {
                s.relevant_chunks = chunks;
                s.retrieval_source = RetrievalSource::Cache;
                s.cache.retrieval = Some(true);
            });
            ctx.emit(OptimizeEvent::Cache {
                what: "retrieval".into(),
                hit: true,
            });
            return Ok(());
        }
        ctx.update(|s| s.cache.retrieval = Some(false));
        ctx.emit(OptimizeEvent::Cache {
            what: "retrieval".into(),
            hit: false,
        });
    }
    let options = RetrievalOptions {
        top_k,
        min_similarity: config.relevance_floor,
        ..RetrievalOptions::default()
    };
    let query = query_text(&analysis);
    let fallback_reason = match deps
        .index
        .search(&tenant, &resume_id, &sections, &query, &options)
        .await
    {
        Ok(Some(chunks)) if !chunks.is_empty() => {
            deps.cache.put(&key, &chunks, RETRIEVAL_TTL).await;
            ctx.update(|s| {
                s.relevant_chunks = chunks;
                s.retrieval_source = RetrievalSource::Hybrid;
            });
            return Ok(());
        }
        Ok(Some(_)) => {
            "retrieval found no chunk of the resume above the relevance floor".to_owned()
        }
        Ok(None) => "no embedding model is configured".to_owned(),
        Err(error) => {
            let message = format!("the vector store failed: {error}");
            ctx.update(|s| s.record_error(AGENT, "store_unavailable", message.clone(), true));
            message
        }
    };
    let chunks = rank_raw_sections(&analysis, &sections, top_k);
    let warning = format!("{fallback_reason}; the resume's sections were ranked by keywords");
    tracing::warn!(%tenant, %resume_id, "{warning}");
    ctx.emit(OptimizeEvent::Warning {
        agent: AGENT.into(),
        message: warning.clone(),
    });
    ctx.update(|s| {
        s.relevant_chunks = chunks;
        s.retrieval_source = RetrievalSource::RawSections;
        s.warnings.push(warning);
    });
    Ok(())
}
