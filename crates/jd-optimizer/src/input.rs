//! What an optimization starts from: a resume, a job description, who asks, and the
//! settings; checked before any model call.

use job_capabilities::retrieval::{SectionKind, chunk_document};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::analysis::{JdRefused, check_jd, text_hash};
use crate::config::OptimizeConfig;
use crate::records::ResumeChunk;

/// An optimization request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OptimizeRequest {
    /// The tenant (default `default`).
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    /// The user (default `anonymous`).
    #[serde(default = "default_user")]
    pub user_id: String,
    /// The resume's id; by default the hash of its text.
    #[serde(default)]
    pub resume_id: Option<String>,
    /// The resume, as text.
    pub resume_text: String,
    /// The job description.
    pub jd_text: String,
    /// Facts the user adds that the resume does not say ("I also ran the on-call
    /// rotation"); a rewrite may use them as it uses the resume.
    #[serde(default)]
    pub user_facts: Vec<String>,
    /// The settings (the V2 profile by default).
    #[serde(default)]
    pub config: OptimizeConfig,
}

fn default_tenant() -> String {
    "default".to_owned()
}

fn default_user() -> String {
    "anonymous".to_owned()
}

impl OptimizeRequest {
    /// A request for the default tenant and user with the default settings.
    pub fn new(resume_text: impl Into<String>, jd_text: impl Into<String>) -> Self {
        OptimizeRequest {
            tenant_id: default_tenant(),
            user_id: default_user(),
            resume_id: None,
            resume_text: resume_text.into(),
            jd_text: jd_text.into(),
            user_facts: Vec::new(),
            config: OptimizeConfig::default(),
        }
    }

    /// The same request for `tenant`.
    pub fn for_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant_id = tenant.into();
        self
    }

    /// Checks the request before any model call: a usable job description, a resume
    /// with text, ids that can go in a cache key.
    pub fn check(&self) -> Result<(), InputError> {
        check_jd(&self.jd_text)?;
        if resume_chunks(&self.resume_text).is_empty() {
            return Err(InputError::EmptyResume);
        }
        for (field, value) in [("tenant_id", &self.tenant_id), ("user_id", &self.user_id)] {
            check_id(field, value)?;
        }
        if let Some(resume_id) = &self.resume_id {
            check_id("resume_id", resume_id)?;
        }
        Ok(())
    }

    /// The resume's id: the one given, or its text's hash.
    pub fn resume_id(&self) -> String {
        self.resume_id
            .clone()
            .unwrap_or_else(|| format!("resume-{}", text_hash(&self.resume_text)))
    }
}

fn check_id(field: &'static str, value: &str) -> Result<(), InputError> {
    let fine = !value.is_empty()
        && value.len() <= 128
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if fine {
        Ok(())
    } else {
        Err(InputError::BadId { field })
    }
}

/// Why a request is refused before any model call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The job description cannot be analysed.
    #[error(transparent)]
    Jd(#[from] JdRefused),
    /// The resume has no text.
    #[error("the resume has no text to optimize")]
    EmptyResume,
    /// An id holds characters other than letters, digits, `-`, `_` and `.`, or is empty
    /// or longer than 128 characters.
    #[error("{field} must be 1 to 128 letters, digits, '-', '_' or '.'")]
    BadId {
        /// The field.
        field: &'static str,
    },
}

/// The resume cut into chunks (`C1..`, in order), its header (name and contact lines)
/// left out when it has sections: it is never rewritten.
pub fn resume_chunks(resume_text: &str) -> Vec<ResumeChunk> {
    let chunks = chunk_document("resume", resume_text);
    // A resume without headings is all "header": then every chunk is kept.
    let has_sections = chunks.iter().any(|c| c.section != SectionKind::Header);
    chunks
        .into_iter()
        .filter(|chunk| !has_sections || chunk.section != SectionKind::Header)
        .filter(|chunk| chunk.text.chars().any(char::is_alphabetic))
        .enumerate()
        .map(|(i, chunk)| ResumeChunk {
            id: format!("C{}", i + 1),
            section_type: chunk.section.as_str().to_owned(),
            content: chunk.text,
            relevance_score: 0.0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn resume_chunks_drop_the_contact_lines() {
        let chunks = crate::input::resume_chunks(
            "Ada Lovelace\nada@example.com\n\nExperience\n- Built the engine\n- Wrote the notes\n",
        );
        assert_eq!(chunks[0].section_type, "experience");
        assert!(chunks.iter().all(|c| !c.content.contains("ada@")));
    }
}
