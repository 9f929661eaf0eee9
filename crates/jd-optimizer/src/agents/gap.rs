//! The gap analyzer (spec 003 section 3.6), light tier: what rewording cannot close.
//! The deterministic diff of the description's skills and the resume runs first; when
//! it finds no skill missing, under budget pressure, or when the model fails, it is the
//! report. The model weighs the missing skills only; qualifications and soft skills are
//! checked by code either way.

use agent_llm::ModelTier;

use crate::analysis::JdAnalysis;
use crate::budget::{GAP_MODEL, NOTHING, affords};
use crate::deps::Deps;
use crate::events::OptimizeEvent;
use crate::llm::{Ask, CallError, Node, spent};
use crate::qualifications::{Verdict, check};
use crate::records::{Degrade, GapReport, GapSource, Priority};
use crate::state::OptimizationState;
use crate::text::{Found, content_stems, find_keyword};

/// The agent's name in token counts and errors.
pub const AGENT: &str = "gap_analyzer";

/// The system prompt.
pub const SYSTEM: &str = "You are the Gap Analyzer. Of the skills a text check found missing, give: missing_skills, the ones really missing; transferable_skills, skills the candidate shows that partly cover one (\"X (related to Y)\"); recommendations, one concrete step per gap.";

/// What the model is asked: the skill gaps only. Qualifications and soft skills are
/// checked against the resume by code ([`add_qualifications_and_soft_skills`]), so the
/// model is not sent them nor asked for them; a gap's priority follows from the
/// description's weight of the skill, so code sets it too.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize, schemars::JsonSchema)]
pub struct SkillGaps {
    /// Required skills the resume does not show.
    pub missing_skills: Vec<String>,
    /// Skills that partly cover a gap.
    pub transferable_skills: Vec<String>,
    /// What to do about each gap.
    pub recommendations: Vec<String>,
}

impl From<SkillGaps> for GapReport {
    fn from(gaps: SkillGaps) -> Self {
        GapReport {
            missing_skills: gaps.missing_skills,
            recommendations: gaps.recommendations,
            transferable_skills: gaps.transferable_skills,
            ..GapReport::default()
        }
    }
}

fn priority_of(weight: f64) -> Priority {
    if weight >= 0.75 {
        Priority::High
    } else if weight >= 0.45 {
        Priority::Medium
    } else {
        Priority::Low
    }
}

/// The description's weight of `skill` (0.5 when it gives none).
fn weight_of(analysis: &JdAnalysis, skill: &str) -> f64 {
    analysis
        .keyword_weights
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(skill))
        .map_or(0.5, |(_, w)| *w)
}

/// The deterministic gap diff: the hard skills `resume` (all of it, the rewritten
/// bullets and the user's answers) does not mention are missing, prioritised by their
/// weight; skills it mentions only by related word forms are transferable.
pub fn gap_diff(analysis: &JdAnalysis, resume: &str) -> GapReport {
    let mut report = GapReport::default();
    let mut skills: Vec<(&str, f64)> = analysis
        .hard_skills
        .iter()
        .map(|s| (s.as_str(), weight_of(analysis, s)))
        .collect();
    skills.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    for (skill, weight) in skills {
        match find_keyword(resume, skill) {
            Found::Exactly => {}
            Found::ByStem => report
                .transferable_skills
                .push(format!("{skill} (related wording in the resume)")),
            Found::No => {
                report.missing_skills.push(skill.to_owned());
                report
                    .priority
                    .insert(skill.to_owned(), priority_of(weight));
                report.recommendations.push(format!(
                    "Show {skill} if you have used it (a project, a course or a certification); the description weighs it {weight:.2}."
                ));
            }
        }
    }
    add_qualifications_and_soft_skills(&mut report, analysis, resume);
    report
}

/// Adds to `report` the qualifications (years, degrees, certifications) and the soft
/// skills `resume` does not show, with a recommendation each, unless the report names
/// them already.
pub fn add_qualifications_and_soft_skills(
    report: &mut GapReport,
    analysis: &JdAnalysis,
    resume: &str,
) {
    if report.missing_qualifications.is_empty() {
        for qualification in &analysis.qualifications {
            if let Verdict::Missing(why) = check(qualification, resume) {
                report.recommendations.push(format!(
                    "The description asks for {qualification}: say where you meet it (or an equivalent) if you do; rewording cannot add it."
                ));
                report.missing_qualifications.push(why);
            }
        }
    }
    if report.missing_soft_skills.is_empty() {
        // A soft skill is shown by any of its words ("technical direction" shows some
        // "technical leadership"): only one the resume says nothing of is reported.
        let resume_words = content_stems(resume);
        for skill in &analysis.soft_skills {
            let shown = find_keyword(resume, skill) != Found::No
                || content_stems(skill)
                    .iter()
                    .any(|w| resume_words.contains(w));
            if !shown {
                report.recommendations.push(format!(
                    "Show {skill} with an example from your work (a bullet that shows it rather than names it)."
                ));
                report.missing_soft_skills.push(skill.clone());
            }
        }
    }
}

/// Whether `item` names one of `asked` (either contains the other, ignoring case).
fn names_one_of(item: &str, asked: &[String]) -> bool {
    let item = item.to_lowercase();
    !item.trim().is_empty()
        && asked.iter().any(|a| {
            let a = a.to_lowercase();
            a.contains(&item) || item.contains(&a)
        })
}

/// Drops from the model's report what the description never asked for: a missing skill
/// that is neither a hard skill of the analysis nor one the text check found missing, a
/// qualification that is none of the analysis's, a soft skill that is none of its soft
/// skills, and empty recommendations.
fn keep_asked(report: &mut GapReport, analysis: &JdAnalysis, diff: &GapReport) {
    let skills: Vec<String> = analysis
        .hard_skills
        .iter()
        .chain(&diff.missing_skills)
        .cloned()
        .collect();
    report
        .missing_skills
        .retain(|s| skills.iter().any(|k| k.eq_ignore_ascii_case(s.trim())));
    report
        .missing_qualifications
        .retain(|q| names_one_of(q, &analysis.qualifications));
    report
        .missing_soft_skills
        .retain(|s| names_one_of(s, &analysis.soft_skills));
    report.recommendations.retain(|r| {
        r.split_once(':')
            .map_or(r.as_str(), |(_, rest)| rest)
            .trim()
            .len()
            > 3
    });
}

/// The skills the candidate shows: the description's hard skills the candidate's material
/// names (exactly or by a related word form), then the resume's skills section as written.
fn shown_skills(state: &OptimizationState, analysis: &JdAnalysis) -> Vec<String> {
    let material = state.candidate_text();
    let mut shown: Vec<String> = analysis
        .hard_skills
        .iter()
        .filter(|skill| find_keyword(&material, skill) != Found::No)
        .cloned()
        .collect();
    for section in state
        .resume_sections
        .iter()
        .filter(|c| c.section_type == "skills")
    {
        shown.extend(
            section
                .content
                .split([',', '\n', ';', '|'])
                .map(|s| s.trim().trim_start_matches(['-', '*', '•']).trim())
                .filter(|s| !s.is_empty() && !s.ends_with(':'))
                .filter(|s| {
                    !analysis
                        .hard_skills
                        .iter()
                        .any(|k| k.eq_ignore_ascii_case(s))
                })
                .map(str::to_owned),
        );
    }
    shown
}

/// The gap analyzer's prompt: skill lists, not the resume's bullets (what is missing,
/// heaviest first, and what the candidate shows).
pub fn prompt(state: &OptimizationState, diff: &GapReport) -> String {
    let analysis = state.jd_analysis.clone().unwrap_or_default();
    let shown = shown_skills(state, &analysis);
    format!(
        "Missing by a text check: {}\nThe candidate shows: {}\n",
        diff.missing_skills.join(", "),
        shown.join(", "),
    )
}

/// Runs the gap analysis.
pub async fn run(ctx: &Node, deps: &Deps) {
    let (diff, skip, budget) = ctx.read(|s| {
        let analysis = s.jd_analysis.clone().unwrap_or_default();
        (
            gap_diff(&analysis, &s.candidate_text()),
            s.degrades.contains(&Degrade::SkipGapModel),
            s.config.budget,
        )
    });
    let spent = spent(ctx);
    let use_diff = |ctx: &Node, report: GapReport| {
        ctx.update(|s| {
            s.gap_report = Some(report);
            s.gap_source = Some(GapSource::Deterministic);
        });
    };
    // The model weighs missing skills only; without any, the text check is the report.
    if diff.missing_skills.is_empty() || skip {
        use_diff(ctx, diff);
        return;
    }
    if !affords(&budget, &spent, GAP_MODEL, NOTHING) {
        crate::guards::degrade(
            ctx,
            Degrade::SkipGapModel,
            "the budget left does not cover the gap analyzer",
        );
        use_diff(ctx, diff);
        return;
    }
    let ask = Ask {
        agent: AGENT,
        tier: ModelTier::Light,
        system: SYSTEM.to_owned(),
        prompt: ctx.read(|s| prompt(s, &diff)),
        temperature: 0.2,
        max_tokens: 500,
        fields_in_system: true,
    };
    match deps.caller.ask::<SkillGaps>(ctx, ask).await {
        Ok(gaps) => {
            let mut report = GapReport::from(gaps);
            // The model may only confirm what the description asks for: skills of the
            // analysis or the text check, its qualifications, its soft skills.
            let analysis = ctx.read(|s| s.jd_analysis.clone().unwrap_or_default());
            keep_asked(&mut report, &analysis, &diff);
            report.priority = report
                .missing_skills
                .iter()
                .map(|skill| (skill.clone(), priority_of(weight_of(&analysis, skill))))
                .collect();
            ctx.update(|s| {
                let analysis = s.jd_analysis.clone().unwrap_or_default();
                add_qualifications_and_soft_skills(&mut report, &analysis, &s.candidate_text());
                s.gap_report = Some(report);
                s.gap_source = Some(GapSource::Model);
            });
        }
        Err(error) => {
            if let CallError::Budget { limit, message } = &error {
                crate::guards::stop_for_budget(ctx, *limit, message.clone());
            } else {
                let message = format!(
                    "the gap analyzer failed ({error}); the text check's gaps are reported"
                );
                ctx.update(|s| s.record_error(AGENT, error.kind(), message.clone(), true));
                ctx.emit(OptimizeEvent::Warning {
                    agent: AGENT.into(),
                    message,
                });
            }
            use_diff(ctx, diff);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_names_the_skills_the_resume_does_not_show() {
        use crate::agents::gap::gap_diff;
        use crate::analysis::JdAnalysis;
        let jd = JdAnalysis {
            hard_skills: vec!["Rust".into(), "Kafka".into()],
            ..Default::default()
        }
        .normalized();
        let report = gap_diff(&jd, "Built Rust services");
        assert_eq!(report.missing_skills, ["Kafka"]);
    }

    #[test]
    fn the_diff_names_missing_qualifications_and_soft_skills_not_only_hard_skills() {
        let analysis = JdAnalysis {
            hard_skills: vec!["Go".into()],
            soft_skills: vec!["mentoring".into(), "communication".into()],
            qualifications: vec![
                "8+ years of backend engineering".into(),
                "Master's degree in Computer Science".into(),
                "CKA certification".into(),
                "Fluent English".into(),
            ],
            ..JdAnalysis::default()
        }
        .normalized();
        let resume = "Engineer, Acme (2019 - present)\n- Built Go services\n- Mentoring 2 juniors\nB.Sc. Physics, 2019";
        let report = gap_diff(&analysis, resume);
        assert!(report.missing_skills.is_empty());
        assert_eq!(report.missing_qualifications.len(), 3, "{report:?}");
        assert!(report.missing_qualifications[0].starts_with("8+ years"));
        assert!(report.missing_qualifications[0].contains("about"));
        assert!(report.missing_qualifications[1].contains("lower degree"));
        assert!(report.missing_qualifications[2].contains("no such certification"));
        assert_eq!(report.missing_soft_skills, ["communication"]);
        assert_eq!(report.recommendations.len(), 4);
    }
}
