//! No fabrication: a rewritten bullet may say only what its sources (the chunks it names)
//! or the user's own answers say, checked by [`job_capabilities::grounding`] against the
//! description's hard skills and weighted keywords (soft skills are phrasing, not facts).
//! A bullet that names no source it was given is refused too. A refused bullet is dropped
//! with its reason and never shown as fact.

use crate::analysis::JdAnalysis;
pub use job_capabilities::grounding::Fabrication;
use job_capabilities::grounding::check_claims;

/// Checks `bullet` against `sources` (the texts of the chunks it cites, and the user's
/// answers): `Ok` when it introduces nothing they do not say.
pub fn check_bullet<S: AsRef<str>>(
    bullet: &str,
    sources: &[S],
    analysis: &JdAnalysis,
) -> Result<(), Fabrication> {
    let skills: Vec<&str> = analysis
        .hard_skills
        .iter()
        .map(String::as_str)
        .chain(analysis.keyword_weights.keys().map(String::as_str))
        .filter(|k| !analysis.is_soft_skill(k))
        .collect();
    check_claims(bullet, sources, &skills)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_bullet_refuses_a_skill_no_source_names() {
        use crate::analysis::JdAnalysis;
        use crate::fabrication::{Fabrication, check_bullet};
        let jd = JdAnalysis {
            hard_skills: vec!["Kubernetes".into(), "Docker".into()],
            ..Default::default()
        }
        .normalized();
        let sources = ["Moved 12 services to Docker at Acme"];
        assert!(
            check_bullet(
                "Containerized 12 services with Docker at Acme",
                &sources,
                &jd
            )
            .is_ok()
        );
        assert_eq!(
            check_bullet(
                "Containerized 12 services with Docker on Kubernetes",
                &sources,
                &jd
            ),
            Err(Fabrication::Skill("Kubernetes".into()))
        );
    }

    fn jd() -> JdAnalysis {
        JdAnalysis {
            hard_skills: vec!["Python".into(), "AWS".into(), "Terraform".into()],
            soft_skills: vec!["leadership".into()],
            ..JdAnalysis::default()
        }
        .normalized()
    }

    #[test]
    fn rewording_what_the_sources_say_passes() {
        let sources = ["- Wrote Python jobs that cut the AWS bill by 30% (team of 4)"];
        let bullet = "Reduced AWS spend 30% by writing Python automation with a team of 4";
        assert_eq!(check_bullet(bullet, &sources, &jd()), Ok(()));
    }

    #[test]
    fn soft_skills_are_phrasing_not_facts() {
        let sources = ["Mentored 3 engineers"];
        let bullet = "Showed leadership by mentoring 3 engineers";
        assert_eq!(check_bullet(bullet, &sources, &jd()), Ok(()));
    }

    #[test]
    fn a_new_employer_or_title_is_refused() {
        let sources = ["Built Python services"];
        assert_eq!(
            check_bullet("Built Python services at Google", &sources, &jd()),
            Err(Fabrication::Name("Google".into()))
        );
        assert_eq!(
            check_bullet(
                "Built Python services as principal engineer",
                &sources,
                &jd()
            ),
            Err(Fabrication::Title("principal".into()))
        );
        assert_eq!(
            check_bullet("Senior engineer building Python services", &sources, &jd()),
            Err(Fabrication::Title("Senior".into()))
        );
    }

    #[test]
    fn a_new_sentence_may_start_with_a_capital() {
        let sources = ["Cut the AWS bill by 30% with Python jobs; saved a team of 4 a day a week"];
        let bullet = "Cut the AWS bill by 30% with Python jobs. Saved a team of 4 a day a week";
        assert_eq!(check_bullet(bullet, &sources, &jd()), Ok(()));
        let invented = "Cut the AWS bill by 30%. Praised by Google";
        assert_eq!(
            check_bullet(invented, &sources, &jd()),
            Err(Fabrication::Name("Google".into()))
        );
    }

    #[test]
    fn user_answers_count_as_sources() {
        let sources = [
            "Built Python services",
            "I wrote the Terraform modules for our AWS accounts",
        ];
        assert_eq!(
            check_bullet(
                "Built Python services on AWS provisioned with Terraform",
                &sources,
                &jd()
            ),
            Ok(())
        );
    }
}
