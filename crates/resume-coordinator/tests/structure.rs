//! The delivered resume keeps the structure of the candidate's own: contact line, roles
//! with their dates and their own bullets, education and every other section, in order;
//! in the Markdown and in the DOCX (read back with its paragraph styles).
#![cfg(test)]

mod common;

use common::{
    TestServer, approve_all, base64_decode, dry_run_product, fixture_text, named, sample_body,
};
use job_capabilities::documents::docx_paragraphs;
use resume_coordinator::document::{Style, paragraphs, resume_markdown};
use resume_coordinator::types::{Blueprint, Bullet, ResumeState, Section, SectionPlan};

/// The position of the first paragraph at or after `from` with this style and text.
fn find(paragraphs: &[(Option<String>, String)], from: usize, style: &str, text: &str) -> usize {
    paragraphs[from..]
        .iter()
        .position(|(s, t)| s.as_deref() == Some(style) && t.trim_start_matches("• ") == text)
        .map(|i| from + i)
        .unwrap_or_else(|| panic!("no {style} paragraph {text:?} after {from}: {paragraphs:#?}"))
}

/// Lines of the input that carry dates the way roles and degrees do ("(2020-2025)",
/// "(2017)"), read here independently of the product's parser.
fn dated_lines(resume: &str) -> Vec<String> {
    resume
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.starts_with('-')
                && l.split(['(', ')']).nth(1).is_some_and(|inside| {
                    inside
                        .split('-')
                        .all(|y| y.len() == 4 && y.chars().all(|c| c.is_ascii_digit()))
                })
        })
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_final_resume_keeps_the_inputs_contact_line_roles_and_education() {
    let resume = fixture_text("resume.txt");
    let server = TestServer::with_product(dry_run_product()).await;
    let session = server.start(sample_body()).await;
    let events = server.drive(&session, approve_all).await;
    assert_eq!(events.last().unwrap().event, "session_complete");
    let complete = named(&events, "pipeline_complete")[0];
    let markdown = complete.data["resume_markdown"].as_str().unwrap();

    let lines: Vec<&str> = resume
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let (name, contact) = (lines[0], lines[1]);
    let headings: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.chars().all(|c| c.is_ascii_uppercase() || c == ' '))
        .collect();
    assert_eq!(headings, ["SUMMARY", "EXPERIENCE", "SKILLS", "EDUCATION"]);
    let dated = dated_lines(&resume);
    assert_eq!(dated.len(), 3, "two roles and a degree: {dated:?}");

    // The Markdown: the name, the contact line as given, each heading and role in order.
    assert!(
        markdown.starts_with(&format!("# {name}\n{contact}\n")),
        "{markdown}"
    );
    let mut from = 0;
    for heading in &headings {
        let at = markdown[from..]
            .find(&format!("\n## {heading}\n"))
            .unwrap_or_else(|| panic!("## {heading} missing or out of order:\n{markdown}"));
        from += at;
    }
    for role in &dated {
        assert!(
            markdown.contains(&format!("\n### {role}\n")),
            "{role}:\n{markdown}"
        );
    }

    // The DOCX, read back: the same paragraphs, in order, with their styles.
    let docx = base64_decode(complete.data["docx_base64"].as_str().unwrap());
    let found: Vec<(Option<String>, String)> = docx_paragraphs(&docx)
        .unwrap()
        .into_iter()
        .map(|p| (p.style, p.text))
        .collect();
    let title = find(&found, 0, "Title", name);
    assert_eq!(found[title + 1], (None, contact.to_owned()), "{found:#?}");
    let experience = find(&found, title, "Heading1", "EXPERIENCE");
    let tidewater = find(&found, experience, "Heading2", &dated[0]);
    let parcelo = find(&found, tidewater, "Heading2", &dated[1]);
    let skills = find(&found, parcelo, "Heading1", "SKILLS");
    let education = find(&found, skills, "Heading1", "EDUCATION");
    find(&found, education, "Heading2", &dated[2]);
    // Each role has its own bullets: a line no rewrite touched stays under its role, and
    // a rewrite citing a role's line is under that role.
    let kept = find(
        &found,
        tidewater,
        "ListBullet",
        "Led the migration of 40 services to Kubernetes with zero customer-facing downtime",
    );
    assert!(kept < parcelo);
    let kept = find(
        &found,
        parcelo,
        "ListBullet",
        "Introduced CI with automated integration tests, cutting release time from a week to a day",
    );
    assert!(kept < skills);
    let rewritten = find(
        &found,
        parcelo,
        "ListBullet",
        "Wrote the Python routing engine that assigns 15,000 deliveries a day to drivers at Parcelo",
    );
    assert!(rewritten < skills);
    let rewritten = find(
        &found,
        tidewater,
        "ListBullet",
        "Built a Go settlement service processing 2 million transactions a day at Tidewater Payments",
    );
    assert!(rewritten < parcelo);
    // The original Tidewater line the rewrite replaced is gone.
    assert!(
        !markdown
            .contains("- Built a Go settlement service processing 2 million transactions a day\n")
    );
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
    resume_coordinator::docx::check_docx(&bytes, &paragraphs).unwrap();
}
