//! The delivered resume keeps the structure of the candidate's own: contact line, roles
//! with their dates and their own bullets, education and every other section, in order;
//! in the Markdown and in the DOCX (read back with its paragraph styles). Resumes of
//! other shapes are unit-tested in `src/document/tests.rs`.
#![cfg(test)]

mod common;

use common::{
    TestServer, approve_all, base64_decode, dry_run_product, fixture_text, named, sample_body,
};
use job_capabilities::documents::docx_paragraphs;

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
