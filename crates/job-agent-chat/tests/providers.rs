//! The job providers against local servers: SerpAPI's client against the replay of the
//! recorded bodies (filters, pages, a refused key, no results, a dead server), and the
//! company-board search against the Greenhouse and Lever bodies recorded from the real
//! services (read in place from `../shared/realdata`).
#![cfg(test)]

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use axum::http::StatusCode;
use axum::routing::get;
use common::fixtures;
use job_agent_chat::dry_run::{REPLAY_KEY, SerpApiReplay};
use job_agent_chat::providers::{
    BoardsProvider, JobProvider, ProviderError, SearchCriteria, SerpApiProvider,
};
use job_capabilities::ats::{AtsClient, AtsEndpoints};
use job_capabilities::http::{PoliteClient, PolitePolicy};

fn criteria(query: &str) -> SearchCriteria {
    SearchCriteria {
        query: query.into(),
        ..SearchCriteria::default()
    }
}

#[tokio::test]
async fn serpapi_reads_pages_filters_and_reports_what_it_left_out() {
    let replay = SerpApiReplay::start(&fixtures().join("serpapi"))
        .await
        .unwrap();
    let serp = SerpApiProvider::new(&replay.base, REPLAY_KEY);

    let two = serp
        .search(&SearchCriteria {
            max_results: Some(2),
            ..criteria("rust backend engineer")
        })
        .await
        .unwrap();
    assert_eq!(two.jobs.len(), 2);
    assert_eq!(replay.received().len(), 1, "one page was enough");

    let floor = serp
        .search(&SearchCriteria {
            min_salary: Some(100_000),
            ..criteria("rust backend engineer")
        })
        .await
        .unwrap();
    let companies: Vec<&str> = floor.jobs.iter().map(|j| j.company.as_str()).collect();
    assert_eq!(
        companies,
        ["Lumen Maps", "Northfield Robotics"],
        "no pay stated is kept"
    );
    assert_eq!(
        floor.notes,
        ["2 jobs left out: remote only or below the pay floor"]
    );
    let tidewater = &two.jobs[0];
    assert_eq!(tidewater.requirements[0], "Rust");
    assert_eq!(
        tidewater.url,
        "https://www.linkedin.com/jobs/view/4100000001"
    );
    assert_eq!(tidewater.source, "serpapi (LinkedIn)");
    assert_eq!(tidewater.posted, "4 days ago");

    let none = serp
        .search(&criteria("underwater basket weaving director"))
        .await
        .unwrap();
    assert!(none.jobs.is_empty());
}

#[tokio::test]
async fn serpapi_failures_are_clear() {
    let replay = SerpApiReplay::start(&fixtures().join("serpapi"))
        .await
        .unwrap();
    let refused = SerpApiProvider::new(&replay.base, "wrong-key")
        .search(&criteria("rust"))
        .await
        .unwrap_err();
    assert!(matches!(
        refused,
        ProviderError::Refused { status: 401, .. }
    ));
    assert!(refused.to_string().contains("Invalid API key"), "{refused}");
    assert!(
        !refused.to_string().contains("wrong-key"),
        "the key is never repeated"
    );

    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let unreachable = SerpApiProvider::new(base, "k")
        .search(&criteria("rust"))
        .await
        .unwrap_err();
    assert!(
        matches!(unreachable, ProviderError::Unreachable { .. }),
        "{unreachable}"
    );
    assert!(
        !unreachable.to_string().contains("api_key"),
        "{unreachable}"
    );

    let empty = SerpApiProvider::new(&replay.base, REPLAY_KEY)
        .search(&criteria(" "))
        .await;
    assert!(matches!(empty, Err(ProviderError::Unusable(_))));
}

fn realdata(path: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/realdata")
        .join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Greenhouse knows `vercel`, Lever knows `spotify`; every other board is 404.
async fn boards() -> String {
    let greenhouse = realdata("ats/hunt/greenhouse.json");
    let lever = realdata("ats/hunt/lever.json");
    let app = axum::Router::new()
        .route(
            "/v1/boards/vercel/jobs",
            get(move || async move { greenhouse }),
        )
        .route("/v0/postings/spotify", get(move || async move { lever }))
        .fallback(|| async { (StatusCode::NOT_FOUND, "{}") });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

fn board_provider(base: &str) -> BoardsProvider {
    let endpoints = AtsEndpoints::from_lookup(|name| match name {
        "GREENHOUSE_API_BASE" | "LEVER_API_BASE" | "ASHBY_API_BASE" => Some(base.to_owned()),
        _ => None,
    });
    let policy = PolitePolicy {
        min_interval_per_host: std::time::Duration::ZERO,
        ..PolitePolicy::default()
    };
    BoardsProvider::new(Arc::new(AtsClient::new(
        PoliteClient::new(policy),
        endpoints,
    )))
}

#[tokio::test]
async fn named_companies_boards_are_searched_without_a_search_api() {
    let base = boards().await;
    let provider = board_provider(&base);

    let none = provider.search(&criteria("engineer")).await.unwrap_err();
    assert!(none.to_string().contains("name the companies"), "{none}");

    // Vercel's board is found on Greenhouse, Spotify's on Lever, by their names.
    let found = provider
        .search(&SearchCriteria {
            companies: vec!["Vercel".into(), "Spotify".into(), "Nowhere Inc".into()],
            ..criteria("engineer")
        })
        .await
        .unwrap();
    let titles: Vec<&str> = found.jobs.iter().map(|j| j.title.as_str()).collect();
    assert_eq!(titles, ["Android Engineer - Experience"]);
    assert_eq!(found.jobs[0].source, "lever");
    assert!(
        found.notes.iter().any(|n| n.starts_with("Nowhere Inc:")),
        "{:?}",
        found.notes
    );

    let account = provider
        .search(&SearchCriteria {
            companies: vec!["Vercel".into()],
            location: Some("London".into()),
            ..criteria("account executive")
        })
        .await
        .unwrap();
    assert_eq!(account.jobs.len(), 2);
    assert_eq!(account.jobs[0].company, "Vercel");

    // A configured board is read directly.
    let configured = board_provider(&base).with_boards("Acme Audio=lever:spotify");
    assert_eq!(configured.companies(), ["acme audio"]);
    let found = configured.search(&criteria("android")).await.unwrap();
    assert_eq!(found.jobs.len(), 1);
}
