//! Intake: the resume read into numbered evidence, with no model call.

use crate::types::Evidence;

/// Why a resume was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntakeError {
    /// Nothing but whitespace.
    #[error("the resume text is empty")]
    Empty,
    /// Too few letters, mostly symbols, or no line with words: not a readable resume.
    #[error("the resume text is unreadable: {0}")]
    Unreadable(String),
}

/// The resume as evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Intake {
    /// The first non-empty line.
    pub candidate_name: String,
    /// One item per non-empty line (`R1..Rn`), bullets stripped.
    pub evidence: Vec<Evidence>,
}

/// Reads `text` into evidence. Refuses empty text, text with fewer than 30 letters, text
/// whose letters are under half its non-space characters, and text with no line of three
/// or more words.
pub fn read_resume(text: &str) -> Result<Intake, IntakeError> {
    if text.trim().is_empty() {
        return Err(IntakeError::Empty);
    }
    let non_space = text.chars().filter(|c| !c.is_whitespace()).count();
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    if letters < 30 {
        return Err(IntakeError::Unreadable(format!(
            "it has only {letters} letters; paste the full resume text"
        )));
    }
    if letters * 2 < non_space {
        return Err(IntakeError::Unreadable(format!(
            "only {letters} of its {non_space} characters are letters; it looks like symbols or a damaged file"
        )));
    }
    let has_sentence = text.lines().any(|line| {
        line.split_whitespace()
            .filter(|w| w.chars().any(char::is_alphabetic))
            .count()
            >= 3
    });
    if !has_sentence {
        return Err(IntakeError::Unreadable(
            "no line has three or more words".to_owned(),
        ));
    }
    let lines: Vec<String> = text
        .lines()
        .map(strip_bullet)
        .filter(|line| !line.is_empty())
        .collect();
    let candidate_name = lines.first().cloned().unwrap_or_default();
    let evidence = lines
        .into_iter()
        .enumerate()
        .map(|(i, text)| Evidence {
            id: format!("R{}", i + 1),
            text,
        })
        .collect();
    Ok(Intake {
        candidate_name,
        evidence,
    })
}

/// A line without its bullet marker (`-`, `*`, `•`, `–`) and surrounding spaces.
pub fn strip_bullet(line: &str) -> String {
    job_capabilities::documents::strip_bullet(line).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_resume_numbers_the_evidence_and_refuses_what_is_not_a_resume() {
        use crate::intake::read_resume;
        let intake = read_resume(
            "Ada Lovelace\n- Wrote the first published program for the Analytical Engine\n",
        )
        .unwrap();
        assert_eq!(intake.candidate_name, "Ada Lovelace");
        assert_eq!(intake.evidence[1].id, "R2");
        assert_eq!(
            intake.evidence[1].text,
            "Wrote the first published program for the Analytical Engine"
        );
        assert!(read_resume("  \n").is_err());
        assert!(read_resume("#$%^&*()!@#$%^&*()_+{}|:<>?~`-=[]\\;',./ xx yy zz").is_err());
    }

    #[test]
    fn garbled_text_is_refused_with_a_reason() {
        let symbols =
            "@@@@ #### $$$$ %%%% ^^^^ &&&& **** (((( )))) abc def ghi jkl mno pqr stu vwx";
        let error = read_resume(symbols).unwrap_err();
        assert!(error.to_string().contains("letters"), "{error}");
        let no_words = "Aaaaaaaaaaaaaaaaaaaa\nBbbbbbbbbbbbbbbbbbbbbbb\nCcccccccc";
        assert!(matches!(
            read_resume(no_words),
            Err(IntakeError::Unreadable(_))
        ));
        assert_eq!(read_resume(""), Err(IntakeError::Empty));
    }
}
