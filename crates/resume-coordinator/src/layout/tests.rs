//! The structure of resumes of several shapes, read without a model.
use super::{Block, LayoutSection, ResumeLayout, joined};

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

#[test]
fn capitals_employers_markdown_sub_headings_and_stacked_headings() {
    // An employer in capitals above its title and dates; a summary without a heading.
    let layout = ResumeLayout::parse(
        "Jane Roe\njane@roe.dev | (555) 123-4567 | Austin, TX\n\nBackend engineer with ten years of experience building APIs in Go and Rust for fintech companies.\n\nEXPERIENCE\nACME CORP\nSenior Engineer | Jan 2019 – Present\n- Built the ledger\n- Led 5 engineers\nINITECH\nEngineer | 2015 – 2018\n- Wrote TPS reports\n\nEDUCATION\nUniversity of Texas — BS Computer Science (2011–2015)\n",
    );
    assert_eq!(layout.contact.len(), 1);
    let headings: Vec<&str> = layout.sections.iter().map(|s| s.heading.as_str()).collect();
    assert_eq!(headings, ["", "EXPERIENCE", "EDUCATION"]);
    let roles = entries(&layout.sections[1]);
    assert_eq!(
        roles[0].0,
        "ACME CORP | Senior Engineer | Jan 2019 – Present"
    );
    assert_eq!(
        roles[1],
        (
            "INITECH | Engineer | 2015 – 2018".to_owned(),
            vec!["Wrote TPS reports".to_owned()]
        )
    );

    // Markdown: `###` is a role (with or without dates), `##` a section.
    let layout = ResumeLayout::parse(
        "# Sam Lee\nsam@lee.io · linkedin.com/in/samlee\n\n## Experience\n### Staff Engineer, Globex (2020–2024)\n- Scaled search\n### Engineer, Hooli\n2016 - 2020\n- Built feeds\n\n## Projects\n### Tiny DB\n- A toy database in Rust\n",
    );
    assert_eq!(layout.name, "Sam Lee");
    let roles = entries(&layout.sections[0]);
    assert_eq!(roles[1].0, "Engineer, Hooli | 2016 - 2020");
    assert_eq!(entries(&layout.sections[1])[0].0, "Tiny DB");

    // Title, employer and dates on lines of their own, with and without list markers.
    let layout = ResumeLayout::parse(
        "Maria Garcia\nmaria@example.es\n\nEXPERIENCE\nSenior Data Scientist\nTelefonica, Madrid\n2020 - Present\n• Built churn models\n\nEDUCATION\nMSc Statistics\nUniversidad Complutense de Madrid\n2015 - 2017\n\nEARLIER WORK\nData Analyst\nBBVA, Madrid\n2017 - 2020\nBuilt dashboards in Tableau\nAutomated reports\nEngineer\nAcme\n2014 - 2017\nWrote code\n",
    );
    assert_eq!(
        entries(&layout.sections[0])[0].0,
        "Senior Data Scientist | Telefonica, Madrid | 2020 - Present"
    );
    assert_eq!(
        entries(&layout.sections[1])[0].0,
        "MSc Statistics | Universidad Complutense de Madrid | 2015 - 2017"
    );
    let earlier = entries(&layout.sections[2]);
    assert_eq!(earlier[0].0, "Data Analyst | BBVA, Madrid | 2017 - 2020");
    assert_eq!(
        earlier[0].1,
        ["Built dashboards in Tableau", "Automated reports"]
    );
    assert_eq!(
        earlier[1],
        (
            "Engineer | Acme | 2014 - 2017".to_owned(),
            vec!["Wrote code".to_owned()]
        )
    );
}

#[test]
fn a_resume_parses_into_name_contact_and_sections_of_entries() {
    use crate::layout::{Block, ResumeLayout};
    let layout = ResumeLayout::parse(
        "Ada Lovelace\nada@example.com | London\n\nEXPERIENCE\nAnalyst, Babbage & Co (1842-1843)\n- Wrote the first program\n\nEducation\nPrivate tutoring in mathematics (1830)\n",
    );
    assert_eq!(layout.name, "Ada Lovelace");
    assert_eq!(layout.contact[0].text, "ada@example.com | London");
    assert_eq!(layout.sections[0].heading, "EXPERIENCE");
    let Block::Entry { heading, items } = &layout.sections[0].blocks[0] else {
        panic!()
    };
    assert_eq!(heading[0].text, "Analyst, Babbage & Co (1842-1843)");
    assert_eq!(items[0].evidence, "R5");
    assert_eq!(layout.sections[1].heading, "Education");
}
