//! The optional interaction points of a session: the deployment's feature flags
//! (`FF_*`), which a start request may narrow.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Optional interaction points; every flag defaults to `true`.
///
/// The deployment sets them with `FF_INTAKE_QUIZ`, `FF_RESEARCH_VALIDATION`,
/// `FF_GAP_ANALYSIS_QUIZ`, `FF_QUALITY_REVIEW_APPROVAL` and `FF_BLUEPRINT_APPROVAL`
/// ([`Flags::from_env`]); a start request's `flags` can turn one off, never on
/// ([`Flags::narrowed_by`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Flags {
    /// The batch questionnaire after intake (`questionnaire_{n}`).
    pub intake_quiz: bool,
    /// The user confirms or corrects the job analysis and company research
    /// (`research_validation`).
    pub research_validation: bool,
    /// Interview questions on the gaps (`positioning_q_{n}`).
    pub gap_analysis_quiz: bool,
    /// The blueprint approval gate (`architect_review`).
    pub blueprint_approval: bool,
    /// A `section_review_{section}` gate per section.
    pub section_review: bool,
    /// The final `quality_review` gate.
    pub quality_review_approval: bool,
}

impl Default for Flags {
    fn default() -> Self {
        Flags {
            intake_quiz: true,
            research_validation: true,
            gap_analysis_quiz: true,
            blueprint_approval: true,
            section_review: true,
            quality_review_approval: true,
        }
    }
}

/// A feature flag variable whose value is not a boolean.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}={value:?}: expected true or false (1/0, on/off, yes/no)")]
pub struct FlagError {
    /// The variable.
    pub variable: String,
    /// Its value.
    pub value: String,
}

impl Flags {
    /// The deployment's flags from the process environment (unset: `true`).
    pub fn from_env() -> Result<Self, FlagError> {
        Flags::from_lookup(|name| std::env::var(name).ok())
    }

    /// The deployment's flags read through `lookup`.
    ///
    /// ```
    /// use resume_coordinator::Flags;
    /// let flags = Flags::from_lookup(|name| (name == "FF_INTAKE_QUIZ").then(|| "false".into())).unwrap();
    /// assert!(!flags.intake_quiz);
    /// assert!(flags.research_validation);
    /// assert!(Flags::from_lookup(|_| Some("maybe".into())).is_err());
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, FlagError> {
        let read = |variable: &str| -> Result<bool, FlagError> {
            let Some(value) = lookup(variable).filter(|v| !v.trim().is_empty()) else {
                return Ok(true);
            };
            match value.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "on" | "yes" => Ok(true),
                "false" | "0" | "off" | "no" => Ok(false),
                _ => Err(FlagError {
                    variable: variable.to_owned(),
                    value,
                }),
            }
        };
        Ok(Flags {
            intake_quiz: read("FF_INTAKE_QUIZ")?,
            research_validation: read("FF_RESEARCH_VALIDATION")?,
            gap_analysis_quiz: read("FF_GAP_ANALYSIS_QUIZ")?,
            blueprint_approval: read("FF_BLUEPRINT_APPROVAL")?,
            section_review: true,
            quality_review_approval: read("FF_QUALITY_REVIEW_APPROVAL")?,
        })
    }

    /// These flags, each on only where `allowed` has it on too: a start request narrows
    /// the deployment's flags, it cannot widen them.
    ///
    /// ```
    /// use resume_coordinator::Flags;
    /// let deployment = Flags { intake_quiz: false, ..Flags::default() };
    /// let asked = Flags { blueprint_approval: false, ..Flags::default() };
    /// let used = asked.narrowed_by(deployment);
    /// assert!(!used.intake_quiz && !used.blueprint_approval && used.section_review);
    /// ```
    pub fn narrowed_by(self, allowed: Flags) -> Flags {
        Flags {
            intake_quiz: self.intake_quiz && allowed.intake_quiz,
            research_validation: self.research_validation && allowed.research_validation,
            gap_analysis_quiz: self.gap_analysis_quiz && allowed.gap_analysis_quiz,
            blueprint_approval: self.blueprint_approval && allowed.blueprint_approval,
            section_review: self.section_review && allowed.section_review,
            quality_review_approval: self.quality_review_approval
                && allowed.quality_review_approval,
        }
    }
}
