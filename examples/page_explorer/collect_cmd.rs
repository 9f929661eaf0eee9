//! `collect`: Phase 2 of the page explorer. Reads what Phase 1 found, opens the board,
//! generalizes the job listings it named into selectors for every listing (unless Phase 1
//! already did), walks the pages with the paginator, reads each job's details panel (a
//! single-page board) or its own page on the board's site, and writes `jobs.json` and
//! `jobs.csv`. A checkpoint is kept in `<out>/checkpoints` after every page: `--resume`
//! goes on from it after an interruption.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use agent_llm::{ChatModel, ModelTier, ProviderConfig};
use agent_runtime::checkpoint::FileCheckpointStore;
use agent_runtime::{CostLimits, CostMeter, Session};
use anyhow::Context as _;
use page_explorer::CollectedJob;
use page_explorer::agents::extractor::extract_jobs;
use page_explorer::collect::{DetailMode, write_csv, write_json};
use page_explorer::listing::{infer_detail_page, infer_panel};
use page_explorer::search::search;
use page_explorer::{
    Browser, ChromiumBrowser, CollectCheckpoints, CollectEnd, CollectOptions, Collection,
    DetailSelectors, FilterError, LaunchOptions, ListingSelectors, Phase1Output, StopReason,
    apply_filters, collect_checkpointed, infer_listing, resume_collection,
};
use serde_json::Value;
use std::sync::Arc;

use crate::target::Target;

/// How long a page may take to settle.
const SETTLE: Duration = Duration::from_secs(5);

/// How many jobs the summary lists.
const SHOWN: usize = 10;

/// Arguments of `collect`.
#[derive(Debug, clap::Args)]
pub struct CollectArgs {
    /// The job board: a URL, or a directory of static files served on loopback.
    url: String,
    /// The Phase 1 output written by `explore` (its `phase1.json`).
    #[arg(long)]
    phase1: PathBuf,
    /// Where to write `jobs.json` and `jobs.csv`.
    #[arg(long, default_value = "collect-out")]
    out: PathBuf,
    /// Collect at most this many jobs.
    #[arg(long, default_value_t = 100)]
    max_jobs: usize,
    /// Read at most this many listing pages (or loads of more listings).
    #[arg(long, default_value_t = 10)]
    max_pages: usize,
    /// Only read the listings: neither click them open nor visit the jobs' own pages.
    #[arg(long)]
    no_details: bool,
    /// Turn on the filter labelled LABEL (e.g. "Remote only") before collecting, in the
    /// filters Phase 1's filter button opens (or on the page when it names none). Repeatable.
    #[arg(long = "filter", value_name = "LABEL")]
    filters: Vec<String>,
    /// Search for QUERY first, in Phase 1's search box (or one detected when Phase 1 named
    /// none that is here).
    #[arg(long, value_name = "QUERY")]
    search: Option<String>,
    /// Go on with the collection interrupted in --out (its checkpoints) instead of starting
    /// afresh; the board is opened, searched and filtered as asked, then the collection
    /// continues from the page it stopped on.
    #[arg(long)]
    resume: bool,
    /// Run the Extractor agent over every job's text: it corrects and completes the fields
    /// the selectors read (values not in the text are refused). Uses the configured
    /// provider, or recorded answers with --dry-run.
    #[arg(long)]
    extract: bool,
    /// With --extract: answer from recorded responses
    /// (fixtures/page-explorer/dry-run/<site>-collect.json, or --responses).
    #[arg(long, requires = "extract")]
    dry_run: bool,
    /// The recording to answer from with --dry-run.
    #[arg(long, requires = "dry_run")]
    responses: Option<PathBuf>,
    /// With --dry-run: wait this many milliseconds before every recorded answer, as a real
    /// model would.
    #[arg(long, value_name = "MS", requires = "dry_run")]
    latency: Option<u64>,
}

/// Where the selectors came from, and what the details are read from: for the summary.
struct Plan {
    listing: ListingSelectors,
    listing_from: String,
    detail: Option<DetailSelectors>,
    detail_from: String,
}

/// Runs `collect`: always closes the browser, also on error.
pub async fn run(args: CollectArgs) -> anyhow::Result<ExitCode> {
    let phase1 = Phase1Output::read(&args.phase1)?;
    let target = Target::resolve(&args.url).await?;
    let browser = Arc::new(ChromiumBrowser::launch(LaunchOptions::default()).await?);
    let outcome = collect_with(&browser, &args, &phase1, target.url()).await;
    // The collection is over: this is the last handle on the browser.
    if let Some(browser) = Arc::into_inner(browser) {
        browser.close().await;
    }
    let (plan, mut collection) =
        outcome.with_context(|| format!("collecting from {}", args.url))?;
    if args.extract {
        extract(&args, target.name(), &mut collection.jobs).await?;
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let json = args.out.join("jobs.json");
    let csv = args.out.join("jobs.csv");
    write_json(&collection.jobs, &json)?;
    write_csv(&collection.jobs, &csv)?;
    print_summary(target.url(), &plan, &collection, &[&json, &csv]);
    let stopped_early = matches!(
        collection.end,
        CollectEnd::TooManyErrors | CollectEnd::CheckpointFailed
    );
    if stopped_early {
        println!("  go on with: the same command and --resume");
    }
    Ok(if collection.jobs.is_empty() || stopped_early {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The Extractor over the jobs: recorded answers in job order, or the provider's light
/// tier four at a time.
async fn extract(args: &CollectArgs, site: &str, jobs: &mut [CollectedJob]) -> anyhow::Result<()> {
    let meter = if args.dry_run {
        crate::explore_cmd::recorded_meter(CostLimits::default())
    } else {
        CostMeter::from_env(CostLimits::default())?
            .with_labels(crate::explore_cmd::page_explorer_labels())
    };
    let (model, concurrency): (Arc<dyn ChatModel>, usize) = if args.dry_run {
        let path = match args.responses.clone() {
            Some(path) => path,
            None => crate::fixtures::recording(&format!("{site}-collect.json")).context(
                "finding the recorded answers (give --responses, or run inside the workspace)",
            )?,
        };
        println!("Extractor: recorded answers from {}", path.display());
        (crate::explore_cmd::recorded_model(&path, args.latency)?, 1)
    } else {
        let mut provider = ProviderConfig::from_env()?.context(
            "--extract needs an LLM provider: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or add --dry-run",
        )?;
        provider
            .discover()
            .await
            .context("asking the model server which model it serves")?;
        println!("LIVE: {}", provider.describe());
        (provider.chat_model(ModelTier::Light)?, 4)
    };
    let session: Session<(), ()> = Session::new(format!("collect {site}"), ())
        .with_model(model)
        .with_meter(meter.clone());
    let report = extract_jobs(&session, jobs, concurrency).await;
    let cost = meter.snapshot();
    println!(
        "Extractor: {} job(s) read, {} field(s) corrected, {} value(s) refused as not in the text, {} failed; {} call(s), {} in / {} out tokens",
        report.extracted,
        report.fields_changed,
        report.refused.len(),
        report.failed.len(),
        cost.calls,
        cost.usage.input_tokens,
        cost.usage.output_tokens
    );
    for refused in &report.refused {
        println!("  refused: {refused}");
    }
    for failed in &report.failed {
        println!("  failed: {failed}");
    }
    Ok(())
}

/// Opens the board, plans the selectors and collects.
async fn collect_with(
    browser: &Arc<ChromiumBrowser>,
    args: &CollectArgs,
    phase1: &Phase1Output,
    url: &str,
) -> anyhow::Result<(Plan, Collection)> {
    open(browser, url).await?;
    let plan = plan(browser, args, phase1, url).await?;
    filter(browser, args, phase1).await?;
    if let Some(query) = &args.search {
        let known = phase1.key_elements.search_input.as_deref();
        let searched = search(&**browser, known, query, SETTLE)
            .await
            .with_context(|| format!("searching for {query:?}"))?;
        let from = if searched.detected {
            "detected"
        } else {
            "Phase 1's"
        };
        println!(
            "Searched {query:?} in {} ({from}; {:?})",
            searched.selector, searched.submitted
        );
    }
    let mut options = CollectOptions::new(plan.listing.clone());
    options.detail = plan.detail.clone();
    options.detail_mode = DetailMode::Auto;
    options.max_jobs = args.max_jobs;
    options.max_pages = args.max_pages;
    options.settle = SETTLE;
    // Phase 1's pagination control first; detected again only when it is not here.
    options.pagination = phase1.key_elements.pagination.clone();
    let store = FileCheckpointStore::new(args.out.join("checkpoints"));
    let checkpoints = CollectCheckpoints::new(Arc::new(store), "collect");
    let collection = if args.resume {
        resume_collection(browser.clone(), &options, &checkpoints).await?
    } else {
        collect_checkpointed(browser.clone(), &options, &checkpoints).await?
    };
    Ok((plan, collection))
}

/// Turns on the filters asked for with `--filter` (the board is open as at the start) and
/// prints what was applied. Labels found nowhere are reported with the filter options
/// Phase 1 knows; none found at all is an error.
async fn filter(
    browser: &ChromiumBrowser,
    args: &CollectArgs,
    phase1: &Phase1Output,
) -> anyhow::Result<()> {
    if args.filters.is_empty() {
        return Ok(());
    }
    let button = phase1.key_elements.filter_button.as_deref();
    let applied = match apply_filters(browser, button, &args.filters, SETTLE).await {
        Ok(applied) => applied,
        Err(FilterError::NothingApplied { missing }) => anyhow::bail!(
            "no filter control here is labelled {} (Phase 1 knows {})",
            quoted(&missing),
            known_filters(phase1)
        ),
        Err(error) => {
            return Err(error).with_context(|| match button {
                Some(button) => {
                    format!("opening the filters with Phase 1's filter button {button:?}")
                }
                None => "applying filters (Phase 1 names no filter button)".to_owned(),
            });
        }
    };
    let how = if applied.submitted {
        "submitted"
    } else {
        "not submitted: no apply button"
    };
    println!("Filters: {} ({how})", quoted(&applied.applied));
    if !applied.missing.is_empty() {
        println!(
            "  not found, left out: {} (Phase 1 knows {})",
            quoted(&applied.missing),
            known_filters(phase1)
        );
    }
    Ok(())
}

/// `"a", "b"`.
fn quoted(labels: &[String]) -> String {
    let quoted: Vec<String> = labels.iter().map(|label| format!("{label:?}")).collect();
    quoted.join(", ")
}

/// The filter options Phase 1 found, e.g. `level: "Senior", "Junior"; remote: "Remote only"`.
fn known_filters(phase1: &Phase1Output) -> String {
    if phase1.filter_options.is_empty() {
        return "no filter options".to_owned();
    }
    let known: Vec<String> = phase1
        .filter_options
        .iter()
        .map(|(name, options)| format!("{name}: {}", quoted(options)))
        .collect();
    known.join("; ")
}

async fn open(browser: &ChromiumBrowser, url: &str) -> anyhow::Result<()> {
    browser.open(url).await?;
    browser.wait_for_settle(SETTLE).await?;
    Ok(())
}

/// The listing selectors (Phase 1's when they match listings here, else inferred from its
/// example listings) and the detail selectors (guessed from the first listing's panel or
/// page). Leaves the board open as it was at the start.
async fn plan(
    browser: &ChromiumBrowser,
    args: &CollectArgs,
    phase1: &Phase1Output,
    url: &str,
) -> anyhow::Result<Plan> {
    let given = match &phase1.listing {
        Some(listing) if count(browser, &listing.item).await? > 0 => Some(listing.clone()),
        Some(listing) => {
            tracing::warn!(item = %listing.item, "Phase 1's listing selector matches nothing here");
            None
        }
        None => None,
    };
    let examples = &phase1.key_elements.job_listings;
    let (listing, listing_from) = match given {
        Some(listing) => (listing, "Phase 1".to_owned()),
        None => {
            let inferred = infer_listing(browser, examples).await?.with_context(|| {
                if examples.is_empty() {
                    "the Phase 1 output names no job listings (neither `listing` nor \
                     `keyElements.jobListings`)"
                        .to_owned()
                } else {
                    format!(
                        "the Phase 1 output names no job listings found here (its {} \
                         example(s) in `keyElements.jobListings` give no repeated listing)",
                        examples.len()
                    )
                }
            })?;
            (
                inferred,
                format!("inferred from {} example(s)", examples.len()),
            )
        }
    };
    let none = |why: &str| {
        Ok(Plan {
            listing: listing.clone(),
            listing_from: listing_from.clone(),
            detail: None,
            detail_from: why.to_owned(),
        })
    };
    if args.no_details {
        return none("not read (--no-details)");
    }
    let (detail, detail_from) = if listing.link.is_empty() {
        let Some(mut panel) = infer_panel(browser, &listing, SETTLE).await? else {
            open(browser, url).await?;
            return none("none: selecting a listing shows no details panel");
        };
        if panel.apply.is_none() {
            panel.apply = phase1.key_elements.apply_button.clone();
        }
        (panel, "the details panel each listing fills when clicked")
    } else {
        let Some(first) = first_link(browser, &listing).await? else {
            return none("none: the first listing has no link");
        };
        if host(&first) != host(url) {
            return none("none: the jobs link to other sites");
        }
        open(browser, &first).await?;
        (
            infer_detail_page(browser).await?,
            "each job's own page on the board's site",
        )
    };
    // Back to the board as it was, for collecting.
    open(browser, url).await?;
    Ok(Plan {
        listing,
        listing_from,
        detail: Some(detail),
        detail_from: detail_from.to_owned(),
    })
}

/// How many elements `selector` matches (0 for an invalid selector).
async fn count(browser: &ChromiumBrowser, selector: &str) -> anyhow::Result<u64> {
    let js = format!(
        "(() => {{ try {{ return document.querySelectorAll({}).length; }} catch (e) {{ return 0; }} }})()",
        Value::from(selector)
    );
    Ok(browser.evaluate(&js).await?.as_u64().unwrap_or(0))
}

/// The absolute URL of the first listing's link.
async fn first_link(
    browser: &ChromiumBrowser,
    listing: &ListingSelectors,
) -> anyhow::Result<Option<String>> {
    let js = format!(
        "(() => {{
            const item = document.querySelector({item});
            if (!item) return null;
            const e = {link} === '' ? item : item.querySelector({link});
            const a = e && (e.matches('a[href]') ? e : e.querySelector('a[href]'));
            return a ? a.href : null;
        }})()",
        item = Value::from(listing.item.as_str()),
        link = Value::from(listing.link.as_str()),
    );
    Ok(browser.evaluate(&js).await?.as_str().map(str::to_owned))
}

/// The host (and port) of a URL.
fn host(url: &str) -> Option<&str> {
    url.split_once("://")?.1.split(['/', '?', '#']).next()
}

/// Prints what was collected, on one screen.
fn print_summary(url: &str, plan: &Plan, collection: &Collection, files: &[&Path]) {
    let listing = &plan.listing;
    let optional = [
        ("company", &listing.company),
        ("location", &listing.location),
        ("salary", &listing.salary),
        ("posted", &listing.posted_date),
    ];
    let mut fields = format!("title {:?}, link {:?}", listing.title, listing.link);
    for (name, selector) in optional {
        if let Some(selector) = selector {
            fields.push_str(&format!(", {name} {selector:?}"));
        }
    }
    println!(
        "Collected {} job(s) from {} page(s) of {url}",
        collection.jobs.len(),
        collection.pages
    );
    println!("  listings:   {} ({})", listing.item, plan.listing_from);
    println!("  fields:     {fields}");
    println!("  details:    {}", plan.detail_from);
    println!("  duplicates: {} skipped", collection.duplicates);
    println!("  ended:      {}", ended(collection.end));
    if collection.resumed_jobs > 0 {
        println!(
            "  resumed:    {} job(s) from the checkpoint",
            collection.resumed_jobs
        );
    }
    if !collection.errors.is_empty() {
        println!("  failures:   {} (retried)", collection.errors.len());
        for error in collection.errors.iter().rev().take(3).rev() {
            println!("    {error}");
        }
    }
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    println!("  wrote:      {}", files.join(", "));
    for (i, job) in collection.jobs.iter().take(SHOWN).enumerate() {
        let company = if job.company.is_empty() {
            String::new()
        } else {
            format!(" — {}", job.company)
        };
        println!(
            "  {:>3}. {}{company}  <{}>",
            i + 1,
            job.title,
            job.apply_url
        );
    }
    if collection.jobs.len() > SHOWN {
        println!("  ... and {} more", collection.jobs.len() - SHOWN);
    }
}

/// Why collecting ended, in words.
fn ended(end: CollectEnd) -> &'static str {
    match end {
        CollectEnd::MaxJobs => "reached --max-jobs",
        CollectEnd::Pages(StopReason::MaxPages) => "reached --max-pages",
        CollectEnd::Pages(StopReason::NoNextControl) => "no next page",
        CollectEnd::Pages(StopReason::Unchanged) => "the listings stopped changing",
        CollectEnd::Pages(StopReason::Revisited) => "a page came round again",
        CollectEnd::TooManyErrors => "too many failures in a row (the jobs so far are kept)",
        CollectEnd::CheckpointFailed => "a checkpoint could not be written",
    }
}
