#![allow(clippy::unwrap_used, clippy::panic)]
//! The structure of resumes of several shapes, read without a model.

use resume_coordinator::layout::{Block, LayoutSection, ResumeLayout, joined};

fn entries(section: &LayoutSection) -> Vec<(String, Vec<String>)> {
    section
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Entry { heading, items } => Some((
                joined(heading),
                items.iter().map(|l| l.text.clone()).collect(),
            )),
            Block::Line(_) => None,
        })
        .collect()
}

#[test]
fn the_fixture_resume_reads_into_its_roles() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/resume/resume.txt"),
    )
    .unwrap();
    let layout = ResumeLayout::parse(&text);
    assert_eq!(layout.name, "Maya Okafor");
    assert_eq!(layout.contact.len(), 1);
    let headings: Vec<&str> = layout.sections.iter().map(|s| s.heading.as_str()).collect();
    assert_eq!(headings, ["SUMMARY", "EXPERIENCE", "SKILLS", "EDUCATION"]);
    let roles = entries(&layout.sections[1]);
    assert_eq!(roles.len(), 2);
    assert_eq!(
        roles[0].0,
        "Senior Backend Engineer, Tidewater Payments (2020-2025)"
    );
    assert_eq!(roles[0].1.len(), 4);
    assert_eq!(roles[1].1.len(), 2);
    assert_eq!(layout.sections[1].evidence.as_deref(), Some("R5"));
}

#[test]
fn other_layouts_read_too() {
    let text = "\
JOHN SMITH | john@smith.dev | +1 415 555 0100
https://github.com/jsmith

## Work Experience
Staff Engineer — Globex, Springfield, Mar 2021 – Present
* Scaled the billing platform to 3 regions
* Led 6 engineers

Globex Labs
Engineer | 2018 - 2021
* Built the ingestion pipeline

Projects
Open-source tracer
- 2,000 stars on GitHub

Certifications:
CKA (2022)
Languages
English, Spanish
";
    let layout = ResumeLayout::parse(text);
    assert_eq!(layout.name, "JOHN SMITH");
    let contact: Vec<&str> = layout.contact.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(
        contact,
        [
            "john@smith.dev | +1 415 555 0100",
            "https://github.com/jsmith"
        ]
    );
    let headings: Vec<&str> = layout.sections.iter().map(|s| s.heading.as_str()).collect();
    assert_eq!(
        headings,
        ["Work Experience", "Projects", "Certifications", "Languages"]
    );
    let roles = entries(&layout.sections[0]);
    assert_eq!(
        roles,
        [
            (
                "Staff Engineer — Globex, Springfield, Mar 2021 – Present".to_owned(),
                vec![
                    "Scaled the billing platform to 3 regions".to_owned(),
                    "Led 6 engineers".to_owned()
                ]
            ),
            (
                "Globex Labs | Engineer | 2018 - 2021".to_owned(),
                vec!["Built the ingestion pipeline".to_owned()]
            ),
        ]
    );
    assert_eq!(entries(&layout.sections[1])[0].0, "Open-source tracer");
    assert_eq!(entries(&layout.sections[2])[0].0, "CKA (2022)");
    assert!(
        matches!(&layout.sections[3].blocks[0], Block::Line(l) if l.text == "English, Spanish")
    );
}

#[test]
fn roles_without_list_markers_keep_their_lines() {
    let text = "Ana Lima\nana@lima.pt\nExperience\nEngineer, Acme (2019-2024)\nBuilt the billing service\nCut costs by 30%\nIntern, Initech (2018)\nWrote tests\n";
    let layout = ResumeLayout::parse(text);
    let roles = entries(&layout.sections[0]);
    assert_eq!(roles.len(), 2);
    assert_eq!(
        roles[0].1,
        ["Built the billing service", "Cut costs by 30%"]
    );
    assert_eq!(roles[1].1, ["Wrote tests"]);
}

#[test]
fn underlined_headings_and_a_resume_without_headings() {
    let text = "Li Wei\nli@wei.example\n\nExperience\n----------\nEngineer, Acme (2019-2024)\n- Built the billing service\n\nEducation\n=========\nBSc Physics (2018)\n";
    let layout = ResumeLayout::parse(text);
    let headings: Vec<&str> = layout.sections.iter().map(|s| s.heading.as_str()).collect();
    assert_eq!(headings, ["Experience", "Education"]);
    assert_eq!(
        entries(&layout.sections[0])[0].1,
        ["Built the billing service"]
    );

    let bare = "Li Wei\nli@wei.example\nEngineer, Acme (2019-2024)\n- Built the billing service\n";
    let layout = ResumeLayout::parse(bare);
    assert_eq!(layout.contact.len(), 1);
    assert_eq!(layout.sections.len(), 1);
    assert_eq!(layout.sections[0].heading, "");
    assert_eq!(
        entries(&layout.sections[0])[0].0,
        "Engineer, Acme (2019-2024)"
    );
}
