//! Resumes of other shapes keep their structure in the Markdown and the DOCX, with a new
//! summary, rewritten roles, a section the user edited, and a model's stray markers.

use super::{Style, paragraphs, resume_markdown};
use crate::types::{Blueprint, Bullet, ResumeState, Section, SectionPlan};

fn fixture_text(name: &str) -> String {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/resume");
    std::fs::read_to_string(fixtures.join(name)).unwrap()
}

fn plan(names: &[&str]) -> Option<Blueprint> {
    Some(Blueprint {
        positioning: String::new(),
        sections: names
            .iter()
            .map(|n| SectionPlan {
                name: (*n).to_owned(),
                goal: String::new(),
            })
            .collect(),
    })
}

fn section(name: &str, bullets: &[(&str, &[&str])]) -> Section {
    Section {
        name: name.to_owned(),
        bullets: bullets
            .iter()
            .map(|(text, evidence)| Bullet {
                text: (*text).to_owned(),
                evidence: evidence.iter().map(|e| (*e).to_owned()).collect(),
            })
            .collect(),
        markdown: String::new(),
        approved: true,
        user_edited: false,
    }
}

/// A resume of another shape: contact details on the name's line, a link line,
/// "Title — Employer, Place, dates" roles under a Markdown heading, no summary, and
/// projects, certifications and languages after education.
const OTHER_RESUME: &str = "\
Priya Raman | priya.raman@mail.example | +44 20 7946 0000
linkedin.com/in/priyaraman

## Professional Experience
Data Engineer — Orbital Analytics, London, Sep 2021 – Present
• Built the Spark pipelines behind the daily revenue report
• Cut warehouse costs by 35% by partitioning the largest tables
Analytics Engineer — Bramble, Manchester, 2018 – 2021
• Modelled 120 dbt models for finance and marketing

Education
MSc Data Science, University of Leeds, 2018

Projects
Open data portal
• Indexed 4,000 public datasets

Certifications
Google Cloud Professional Data Engineer (2022)

Languages
English, Tamil
";

#[test]
fn another_resume_keeps_its_shape_with_a_new_summary_and_rewritten_roles() {
    let mut state = ResumeState {
        resume_text: OTHER_RESUME.to_owned(),
        candidate_name: "Priya Raman | priya.raman@mail.example | +44 20 7946 0000".to_owned(),
        blueprint: plan(&["Summary", "Experience", "Skills"]),
        ..ResumeState::default()
    };
    state.sections = vec![
        section(
            "Summary",
            &[(
                "Data engineer with Spark and dbt in production",
                &["R5", "R8"],
            )],
        ),
        section(
            "Experience",
            &[
                (
                    "Modelled 120 dbt models used by finance and marketing",
                    &["R8"],
                ),
                (
                    "Built Spark pipelines that produce the daily revenue report",
                    &["R5"],
                ),
                ("Ran the on-call rotation for the data platform", &["A1"]),
            ],
        ),
        section("Skills", &[("Spark, dbt, SQL, GCP", &["R5", "R8", "R17"])]),
    ];
    let markdown = resume_markdown(&state);
    let expected = "\
# Priya Raman
priya.raman@mail.example | +44 20 7946 0000
linkedin.com/in/priyaraman

## Summary
- Data engineer with Spark and dbt in production

## Professional Experience

### Data Engineer — Orbital Analytics, London, Sep 2021 – Present
- Built Spark pipelines that produce the daily revenue report
- Cut warehouse costs by 35% by partitioning the largest tables
- Ran the on-call rotation for the data platform

### Analytics Engineer — Bramble, Manchester, 2018 – 2021
- Modelled 120 dbt models used by finance and marketing

## Skills
- Spark, dbt, SQL, GCP

## Education

### MSc Data Science, University of Leeds, 2018

## Projects

### Open data portal
- Indexed 4,000 public datasets

## Certifications

### Google Cloud Professional Data Engineer (2022)

## Languages
English, Tamil
";
    assert_eq!(markdown, expected);
    // The styles the DOCX gets.
    let styles: Vec<Style> = paragraphs(&state).iter().map(|p| p.style).collect();
    assert_eq!(&styles[..3], [Style::Title, Style::Plain, Style::Plain]);
}

#[test]
fn a_section_the_user_edited_is_their_text_in_the_inputs_place() {
    let mut state = ResumeState {
        resume_text: OTHER_RESUME.to_owned(),
        blueprint: plan(&["Experience"]),
        ..ResumeState::default()
    };
    let mut edited = section("Experience", &[]);
    edited.user_edited = true;
    edited.markdown = "### Data Engineer, Orbital (2021-now)\n- My own words".to_owned();
    state.sections = vec![edited];
    let markdown = resume_markdown(&state);
    assert!(
        markdown.contains("## Professional Experience\n\n### Data Engineer, Orbital (2021-now)\n- My own words\n\n## Education\n"),
        "{markdown}"
    );
}

#[test]
fn a_written_section_never_takes_over_an_input_section_of_another_kind() {
    // Skills cites the education lines (a model's mistake): it is a new section after
    // the experience, and Education stays as given.
    let mut state = ResumeState {
        resume_text: OTHER_RESUME.to_owned(),
        blueprint: plan(&["Experience", "Skills"]),
        ..ResumeState::default()
    };
    state.sections = vec![
        section("Experience", &[("Built Spark pipelines", &["R5"])]),
        section("Skills", &[("Python, SQL", &["R10", "R9"])]),
    ];
    let markdown = resume_markdown(&state);
    assert!(
        markdown.contains("- Modelled 120 dbt models for finance and marketing\n\n## Skills\n- Python, SQL\n\n## Education\n\n### MSc Data Science, University of Leeds, 2018\n\n## Projects"),
        "{markdown}"
    );
}

#[test]
fn a_models_line_breaks_and_typed_markers_do_not_break_the_documents_structure() {
    let mut state = ResumeState {
        resume_text: fixture_text("resume.txt"),
        blueprint: plan(&["Summary"]),
        ..ResumeState::default()
    };
    state.sections = vec![section(
        "Summary",
        &[("- Backend engineer,\n7 years in Go", &["R4"])],
    )];
    let paragraphs = paragraphs(&state);
    let summary = paragraphs
        .iter()
        .find(|p| p.text.starts_with("Backend engineer,"))
        .unwrap();
    // In the summary's own style (a plain line), on one line, without the typed marker.
    assert_eq!(summary.style, Style::Plain);
    assert_eq!(summary.text, "Backend engineer, 7 years in Go");
    let markdown = resume_markdown(&state);
    let bytes = job_capabilities::documents::build_docx(&markdown).unwrap();
    crate::docx::check_docx(&bytes, &paragraphs).unwrap();
}

#[test]
fn section_markdown_puts_the_rewritten_bullets_under_the_inputs_role() {
    use crate::document::section_markdown;
    use crate::types::{Blueprint, Bullet, ResumeState, Section, SectionPlan};
    let state = ResumeState {
        resume_text: "Ada\nada@example.com\nEXPERIENCE\nAnalyst, Babbage & Co (1842-1843)\n- Wrote a program\n- Translated a paper\n".into(),
        blueprint: Some(Blueprint {
            positioning: String::new(),
            sections: vec![SectionPlan { name: "Experience".into(), goal: String::new() }],
        }),
        ..ResumeState::default()
    };
    let section = Section {
        name: "Experience".into(),
        bullets: vec![Bullet {
            text: "Wrote the first published program".into(),
            evidence: vec!["R5".into()],
        }],
        markdown: String::new(),
        approved: false,
        user_edited: false,
    };
    assert_eq!(
        section_markdown(&state, &section),
        "### Analyst, Babbage & Co (1842-1843)\n- Wrote the first published program\n- Translated a paper\n",
    );
}
