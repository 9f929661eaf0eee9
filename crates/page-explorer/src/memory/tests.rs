use super::*;
use chrono::TimeZone;

fn t(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + secs, 0)
        .single()
        .unwrap_or_default()
}

fn click(selector: &str, description: &str) -> Transition {
    Transition::new(NavAction::Click, Some(selector), description)
}

/// homepage → job_search (clicked Jobs) → job_details (clicked a job).
fn sample() -> MemoryStore {
    let mut m = MemoryStore::new();
    let home = Classification::new("homepage", true, "Landing page.");
    assert_eq!(
        m.apply_classification_at(&home, "https://x.test/", Some("Home"), None, t(0)),
        PageChange::NewPage
    );
    let mut jobs = Classification::new("Job Search", true, "Job list with filters.");
    jobs.came_from = Some("homepage".into());
    jobs.via_action = Some("clicked Jobs nav".into());
    let via = click("a#jobs", "clicked \"Jobs\"");
    assert_eq!(
        m.apply_classification_at(&jobs, "https://x.test/jobs", None, Some(&via), t(5)),
        PageChange::NewPage
    );
    m
}

#[test]
fn classifications_build_a_graph_keyed_by_page_id() {
    let mut m = sample();
    assert_eq!(m.page_ids(), ["homepage", "job_search"]);
    assert_eq!(m.current_page_id(), Some("job_search"));
    // The classifier's description of the action wins over ours.
    assert_eq!(m.edges()[0].description, "clicked Jobs nav");
    assert_eq!(m.edges()[0].selector.as_deref(), Some("a#jobs"));

    // Same page, other data: no node, no edge, no step; the URL is remembered.
    let same = Classification::new("job_search", false, "Job list, page 2.");
    assert_eq!(
        m.apply_classification_at(
            &same,
            "https://x.test/jobs?page=2",
            None,
            Some(&click("a[rel=next]", "next")),
            t(6)
        ),
        PageChange::SamePage
    );
    // A new id that the classifier says is not a new page is the same page too.
    let renamed = Classification::new("job_results", false, "Filtered list.");
    assert_eq!(
        m.apply_classification_at(&renamed, "https://x.test/jobs?remote=1", None, None, t(7)),
        PageChange::SamePage
    );
    let page = m.page("job_search").unwrap();
    assert_eq!(
        page.urls,
        [
            "https://x.test/jobs",
            "https://x.test/jobs?page=2",
            "https://x.test/jobs?remote=1"
        ]
    );
    assert_eq!(page.visits, 1);
    assert_eq!(m.edges().len(), 1);
    assert_eq!(m.path().len(), 2);

    // Back home and into the jobs again: a revisit counts, and the edge is counted twice.
    let home = Classification::new("homepage", false, "Landing page.");
    let back = Transition::new(NavAction::Navigate, None, "went back");
    assert_eq!(
        m.apply_classification_at(&home, "https://x.test/", None, Some(&back), t(10)),
        PageChange::Revisit
    );
    let jobs = Classification::new("job_search", false, "Job list.");
    m.apply_classification_at(
        &jobs,
        "https://x.test/jobs",
        None,
        Some(&click("a#jobs", "clicked \"Jobs\"")),
        t(20),
    );
    assert_eq!(m.page("homepage").unwrap().visits, 2);
    assert_eq!(m.page("homepage").unwrap().last_seen, t(10));
    assert_eq!(m.page("homepage").unwrap().title.as_deref(), Some("Home"));
    assert_eq!(m.edges().len(), 2);
    let jobs_edge = m
        .edges()
        .iter()
        .find(|e| e.to == "job_search" && e.from == "homepage")
        .unwrap();
    assert_eq!(jobs_edge.count, 2);
    let path: Vec<&str> = m.path().iter().map(|s| s.page.as_str()).collect();
    assert_eq!(path, ["homepage", "job_search", "homepage", "job_search"]);
    assert_eq!(m.path()[0].action, None);
    assert_eq!(m.path()[2].action, Some(NavAction::Navigate));
}

fn change(
    selector: &str,
    element_type: &str,
    effect: &str,
    change_type: &str,
) -> ChangeObservation {
    ChangeObservation {
        action: NavAction::Click,
        selector: Some(selector.into()),
        element_type: element_type.into(),
        effect: effect.into(),
        change_type: change_type.into(),
    }
}

#[test]
fn pattern_observations_confirm_on_the_second_sighting_and_feed_selectors() {
    let mut m = sample();
    let first = change(
        "[data-testid=\"job-1\"]",
        "job listing",
        "Updates the details panel",
        "content_updated",
    );
    assert_eq!(m.add_pattern_observation(&first), PatternStatus::Observed);
    let second = change(
        "[data-testid=\"job-2\"]",
        "job_listing",
        "updates the details panel.",
        "content_updated",
    );
    assert_eq!(m.add_pattern_observation(&second), PatternStatus::Confirmed);
    assert_eq!(
        m.selectors_for("job_listing"),
        ["[data-testid=\"job-1\"]", "[data-testid=\"job-2\"]"]
    );
    // A vague element type records the behavior but no selector.
    m.add_pattern_observation(&change("#x", "unknown element", "nothing visible", "none"));
    assert!(m.selectors_for("unknown_element").is_empty());
    let out = m.phase1_output("https://x.test/", None);
    assert_eq!(out.key_elements.job_listings.len(), 2);
    let behavior = &out.behaviors["job_listing"];
    assert!(behavior.confirmed);
    assert_eq!(behavior.action, "click");
    assert_eq!(behavior.effect, "Updates the details panel");
    assert!(!out.behaviors["unknown_element"].confirmed);
    assert!(
        m.summary_for_model()
            .contains("CONFIRMED PATTERNS:\n- click job_listing: Updates the details panel")
    );
    assert_eq!(m.current_page().unwrap().observations.len(), 3);
}

#[test]
fn summaries_replace_observations() {
    let mut m = sample();
    m.enrich_current_page("clicking a job opens the panel");
    assert!(
        m.summary_for_model()
            .contains("- clicking a job opens the panel")
    );
    assert!(m.set_summary("job_search", "Twelve jobs; a filter dialog."));
    assert!(!m.set_summary("nowhere", "x"));
    let page = m.page("job_search").unwrap();
    assert!(page.observations.is_empty());
    assert_eq!(page.best_understanding(), "Twelve jobs; a filter dialog.");
    assert!(
        m.summary_for_model()
            .contains("[job_search]: Twelve jobs; a filter dialog.")
    );
}

#[test]
fn summary_follows_the_spec_shape() {
    let m = sample();
    let expected = "EXPLORED PAGES:\n\
        [homepage]: Landing page.\n  → leads to: [job_search] via \"clicked Jobs nav\"\n\n\
        [job_search]: Job list with filters.\n  ← from: [homepage] via \"clicked Jobs nav\"\n\n\
        CURRENT PAGE: [job_search]\nPATH: homepage → job_search\n";
    assert_eq!(m.summary_for_model(), expected);
    assert_eq!(
        MemoryStore::new().summary_for_model(),
        "EXPLORED PAGES:\n(none yet)\n"
    );
}

#[test]
fn summary_respects_its_cap() {
    let mut m = sample();
    for i in 0..200 {
        m.add_selector("job_listing", &format!("#job-{i}"));
    }
    let capped = m.summary_for_model_capped(300);
    assert!(capped.chars().count() <= 300);
    assert!(capped.ends_with("...\n"));
    assert!(capped.starts_with("EXPLORED PAGES:"));
}

#[test]
fn finish_merges_the_explorers_key_elements_and_findings() {
    let mut m = sample();
    m.add_selector("filter button", "#open-filters");
    let mut keys = BTreeMap::new();
    keys.insert("search_input".to_owned(), vec!["#search".to_owned()]);
    keys.insert(
        "job_listings".to_owned(),
        vec!["#j1".to_owned(), "#j2".to_owned()],
    );
    m.finish(
        "A single-page board.",
        "Job Search",
        &[
            "Filters open a dialog".to_owned(),
            "Filters open a dialog".to_owned(),
        ],
        &keys,
    );
    m.add_filter_options("level", ["Senior", "Junior", "Senior"]);
    let out = m.phase1_output("https://x.test/", None);
    assert_eq!(out.page_type, "job_search");
    assert_eq!(out.understanding, "A single-page board.");
    assert_eq!(out.key_findings, ["Filters open a dialog"]);
    assert_eq!(
        out.key_elements.filter_button.as_deref(),
        Some("#open-filters")
    );
    assert_eq!(out.key_elements.search_input.as_deref(), Some("#search"));
    assert_eq!(out.key_elements.job_listings, ["#j1", "#j2"]);
    assert_eq!(out.filter_options["level"], ["Senior", "Junior"]);
    assert_eq!(out.pages.len(), 2);
    assert_eq!(out.start_url, "https://x.test/");
    assert_eq!(
        MemoryStore::new().phase1_output("", None).page_type,
        "unknown"
    );
}

#[test]
fn mermaid_is_stable_and_escaped() {
    let mut m = sample();
    let details = Classification::new("job_details", true, "One job.");
    m.apply_classification_at(
        &details,
        "https://x.test/jobs/1",
        None,
        Some(&click("a[href=\"jobs/1\"]", "clicked a job")),
        t(30),
    );
    let graph = m.to_mermaid();
    assert_eq!(graph, m.to_mermaid());
    assert!(graph.starts_with("flowchart LR\n    p0[\"homepage<br/>https://x.test/\"]\n"));
    assert!(graph.contains("p1 -->|\"click a#91;href=#quot;jobs/1#quot;#93;\"| p2"));
    assert_eq!(page_key("  Job-Search page "), "job_search_page");
    assert_eq!(page_key("!!"), "page");
}
