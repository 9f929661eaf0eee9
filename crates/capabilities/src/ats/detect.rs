//! Recognising a job board from a URL, or from a careers page that embeds one.

use url::Url;

use super::{AtsBoard, AtsKind, WorkdaySite};

/// The vendor domains looked for in careers pages.
const MARKERS: &[&str] = &[
    "greenhouse.io",
    "lever.co",
    "ashbyhq.com",
    "myworkdayjobs.com",
];

/// The job board a URL belongs to, if it is a Greenhouse, Lever, Ashby or Workday board,
/// posting, application or API address. Pure: no request is made.
///
/// Hosts are compared case-insensitively and matched exactly or as subdomains, never by
/// substring; only `http` and `https` URLs count (a URL written without a scheme is read
/// as `https`). The token is kept as written (percent-decoded). A company's own page
/// with a `?gh_jid=` posting id does not name its Greenhouse board, so it is only
/// recognised when a `for=` parameter names the board too.
///
/// ```
/// use job_capabilities::ats::{detect_ats, AtsKind};
///
/// let board = detect_ats("https://boards.greenhouse.io/vercel/jobs/5432101").unwrap();
/// assert_eq!((board.kind, board.token.as_str()), (AtsKind::Greenhouse, "vercel"));
///
/// let board = detect_ats("https://nvidia.wd5.myworkdayjobs.com/en-US/NVIDIAExternalCareerSite").unwrap();
/// let site = board.workday.unwrap();
/// assert_eq!((site.tenant.as_str(), site.site.as_str()), ("nvidia", "NVIDIAExternalCareerSite"));
/// assert_eq!(site.locale.as_deref(), Some("en-US"));
///
/// assert!(detect_ats("https://notgreenhouse.io.evil.com/vercel").is_none());
/// assert!(detect_ats("https://www.acme.com/careers?gh_jid=123").is_none());
/// ```
pub fn detect_ats(url: &str) -> Option<AtsBoard> {
    let url = parse_web_url(url)?;
    let host = url.host_str()?.trim_end_matches('.').to_ascii_lowercase();
    let segments: Vec<String> = url
        .path_segments()
        .map(|segments| {
            segments
                .filter(|s| !s.is_empty())
                .map(percent_decode)
                .collect()
        })
        .unwrap_or_default();
    let first_label = host.split('.').next().unwrap_or_default();
    if is_domain(&host, "greenhouse.io") {
        greenhouse(&url, first_label, &segments)
    } else if is_domain(&host, "lever.co") {
        match first_label {
            "jobs" => board(AtsKind::Lever, segments.first()),
            "api" => api_token(AtsKind::Lever, &segments, &["v0", "postings"]),
            _ => None,
        }
    } else if is_domain(&host, "ashbyhq.com") {
        match first_label {
            "jobs" => board(
                AtsKind::Ashby,
                segments.first().filter(|s| !matches!(s.as_str(), "api")),
            ),
            "api" => api_token(AtsKind::Ashby, &segments, &["posting-api", "job-board"]),
            _ => None,
        }
    } else if is_domain(&host, "myworkdayjobs.com") {
        workday(&host, &segments)
    } else {
        // A company's own page: `?gh_jid=` alone does not name the board.
        let has_job_id = url.query_pairs().any(|(key, _)| key == "gh_jid");
        has_job_id
            .then(|| board(AtsKind::Greenhouse, query_value(&url, "for").as_ref()))
            .flatten()
    }
}

/// The first job board a careers page links to or embeds: Greenhouse embed scripts and
/// iframes (`…/embed/job_board?for=acme`, as used with the `grnhse_app` div), and links
/// or embeds of Greenhouse, Lever, Ashby and Workday boards, in document order. URLs in
/// attributes (`&amp;`) and in JSON strings (`\/`) are read too.
///
/// ```
/// use job_capabilities::ats::{detect_ats_in_html, AtsKind};
/// let html = r#"<div id="grnhse_app"></div>
/// <script src="https://boards.greenhouse.io/embed/job_board/js?for=acme"></script>"#;
/// let board = detect_ats_in_html(html).unwrap();
/// assert_eq!((board.kind, board.token.as_str()), (AtsKind::Greenhouse, "acme"));
/// ```
pub fn detect_ats_in_html(html: &str) -> Option<AtsBoard> {
    let lower = html.to_ascii_lowercase();
    let mut hits: Vec<usize> = MARKERS
        .iter()
        .flat_map(|marker| lower.match_indices(marker).map(|(at, _)| at))
        .collect();
    hits.sort_unstable();
    hits.dedup();
    hits.into_iter()
        .find_map(|at| detect_ats(&candidate_url(html, at)))
}

/// The URL-looking text around byte `at` of `html`, with HTML and JSON escapes undone.
fn candidate_url(html: &str, at: usize) -> String {
    let bytes = html.as_bytes();
    let mut start = at;
    while start > 0 {
        let b = bytes[start - 1];
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':' | b'/' | b'\\') {
            start -= 1;
        } else {
            break;
        }
    }
    let end = bytes[at..]
        .iter()
        .position(|&b| {
            b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'<' | b'>' | b'`' | b')')
        })
        .map_or(bytes.len(), |len| at + len);
    // `start` and `end` sit next to ASCII bytes, so they are character boundaries.
    html.get(start..end)
        .unwrap_or_default()
        .replace("\\/", "/")
        .replace("&amp;", "&")
        .replace("&#38;", "&")
}

/// `input` as an http(s) URL; a URL written without a scheme is read as `https`.
fn parse_web_url(input: &str) -> Option<Url> {
    let input = input.trim();
    let url = match Url::parse(input) {
        Ok(url) => url,
        Err(url::ParseError::RelativeUrlWithoutBase) => {
            let rest = input.strip_prefix("//").unwrap_or(input);
            Url::parse(&format!("https://{rest}")).ok()?
        }
        Err(_) => return None,
    };
    matches!(url.scheme(), "http" | "https").then_some(url)
}

/// Whether `host` is `domain` or one of its subdomains.
fn is_domain(host: &str, domain: &str) -> bool {
    host == domain
        || host
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.'))
}

fn greenhouse(url: &Url, first_label: &str, segments: &[String]) -> Option<AtsBoard> {
    if let Some(token) = query_value(url, "for") {
        return board(AtsKind::Greenhouse, Some(&token));
    }
    match first_label {
        "boards" | "job-boards" => board(
            AtsKind::Greenhouse,
            segments
                .first()
                .filter(|s| !matches!(s.as_str(), "embed" | "v1")),
        ),
        "boards-api" | "api" => api_token(AtsKind::Greenhouse, segments, &["v1", "boards"]),
        _ => None,
    }
}

fn workday(host: &str, segments: &[String]) -> Option<AtsBoard> {
    let tenant_from_host = host.split('.').next().filter(|l| *l != "www")?;
    if host.split('.').count() < 3 {
        return None;
    }
    let (tenant, site, locale) = match segments {
        [wday, cxs, tenant, site, ..] if wday == "wday" && cxs == "cxs" => {
            (tenant.clone(), site.clone(), None)
        }
        [locale, site, ..] if is_locale(locale) => (
            tenant_from_host.to_owned(),
            site.clone(),
            Some(locale.clone()),
        ),
        [site, ..] if !is_locale(site) && site != "wday" => {
            (tenant_from_host.to_owned(), site.clone(), None)
        }
        _ => return None,
    };
    Some(AtsBoard {
        kind: AtsKind::Workday,
        token: tenant.clone(),
        workday: Some(WorkdaySite {
            host: host.to_owned(),
            tenant,
            site,
            locale,
        }),
    })
}

/// Whether a path segment is a Workday locale such as `en-US` or `es-419`.
fn is_locale(segment: &str) -> bool {
    match segment.split_once('-') {
        Some((language, region)) => {
            language.len() == 2
                && language.bytes().all(|b| b.is_ascii_alphabetic())
                && (2..=3).contains(&region.len())
                && region.bytes().all(|b| b.is_ascii_alphanumeric())
        }
        None => false,
    }
}

/// The board named by the segment after `prefix` in an API path.
fn api_token(kind: AtsKind, segments: &[String], prefix: &[&str]) -> Option<AtsBoard> {
    let starts = segments.len() > prefix.len() && segments.iter().zip(prefix).all(|(s, p)| s == p);
    if starts {
        board(kind, segments.get(prefix.len()))
    } else {
        None
    }
}

fn board(kind: AtsKind, token: Option<&String>) -> Option<AtsBoard> {
    let token = token?.trim();
    (!token.is_empty()).then(|| AtsBoard {
        kind,
        token: token.to_owned(),
        workday: None,
    })
}

fn query_value(url: &Url, key: &str) -> Option<String> {
    url.query_pairs()
        .find(|(k, v)| k == key && !v.trim().is_empty())
        .map(|(_, v)| v.trim().to_owned())
}

/// Undoes `%XX` escapes; leaves the text as it was if the result is not UTF-8.
fn percent_decode(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .map_or_else(|_| segment.to_owned(), |decoded| decoded.into_owned())
}

#[cfg(test)]
mod tests {

    use super::*;

    type Expected = Option<(AtsKind, &'static str)>;

    const GH: AtsKind = AtsKind::Greenhouse;
    const LV: AtsKind = AtsKind::Lever;
    const AB: AtsKind = AtsKind::Ashby;

    #[test]
    fn url_table() {
        let uuid = "2193db3f-77c5-43b8-b030-8f92c9882bf1";
        let table: Vec<(String, Expected)> = vec![
            (
                "https://boards.greenhouse.io/vercel".into(),
                Some((GH, "vercel")),
            ),
            (
                "https://boards.greenhouse.io/vercel/jobs/5432101".into(),
                Some((GH, "vercel")),
            ),
            (
                "https://job-boards.greenhouse.io/anthropic".into(),
                Some((GH, "anthropic")),
            ),
            (
                "https://job-boards.eu.greenhouse.io/acme/jobs/123".into(),
                Some((GH, "acme")),
            ),
            (
                "https://boards.greenhouse.io/embed/job_board?for=stripe".into(),
                Some((GH, "stripe")),
            ),
            (
                "https://boards.greenhouse.io/embed/job_board/js?for=acme".into(),
                Some((GH, "acme")),
            ),
            (
                "https://boards.greenhouse.io/embed/job_app?for=acme&token=123".into(),
                Some((GH, "acme")),
            ),
            (
                "https://boards-api.greenhouse.io/v1/boards/vercel/jobs".into(),
                Some((GH, "vercel")),
            ),
            (
                "https://boards-api.greenhouse.io/v1/boards/vercel/jobs?content=true".into(),
                Some((GH, "vercel")),
            ),
            (
                "HTTPS://BOARDS.GREENHOUSE.IO/Vercel".into(),
                Some((GH, "Vercel")),
            ),
            ("boards.greenhouse.io/vercel".into(), Some((GH, "vercel"))),
            ("//boards.greenhouse.io/vercel".into(), Some((GH, "vercel"))),
            ("https://www.acme.com/careers?gh_jid=123".into(), None),
            (
                "https://www.acme.com/careers?gh_jid=123&for=acme".into(),
                Some((GH, "acme")),
            ),
            ("https://www.acme.com/careers?for=acme".into(), None),
            (
                "https://boards.greenhouse.io/embed/job_app?token=123".into(),
                None,
            ),
            ("https://boards.greenhouse.io/".into(), None),
            ("https://www.greenhouse.io/careers".into(), None),
            ("https://notgreenhouse.io.evil.com/vercel".into(), None),
            ("https://evilgreenhouse.io/vercel".into(), None),
            ("https://boards.greenhouse.io.evil.com/vercel".into(), None),
            ("https://boards.greenhouse.io@evil.com/vercel".into(), None),
            ("ftp://boards.greenhouse.io/vercel".into(), None),
            (
                "javascript:alert('boards.greenhouse.io/vercel')".into(),
                None,
            ),
            (
                "https://jobs.lever.co/spotify".into(),
                Some((LV, "spotify")),
            ),
            (
                format!("https://jobs.lever.co/spotify/{uuid}"),
                Some((LV, "spotify")),
            ),
            (
                format!("https://jobs.lever.co/spotify/{uuid}/apply"),
                Some((LV, "spotify")),
            ),
            ("https://jobs.eu.lever.co/acme".into(), Some((LV, "acme"))),
            (
                "https://api.lever.co/v0/postings/spotify".into(),
                Some((LV, "spotify")),
            ),
            (
                "https://api.lever.co/v0/postings/spotify?mode=json".into(),
                Some((LV, "spotify")),
            ),
            ("http://jobs.lever.co/spotify".into(), Some((LV, "spotify"))),
            ("https://jobs.lever.co/".into(), None),
            ("https://www.lever.co/spotify".into(), None),
            ("https://jobs.clever.co/spotify".into(), None),
            (
                "https://jobs.ashbyhq.com/linear".into(),
                Some((AB, "linear")),
            ),
            (
                format!("https://jobs.ashbyhq.com/linear/{uuid}"),
                Some((AB, "linear")),
            ),
            (
                format!("https://jobs.ashbyhq.com/linear/{uuid}/application"),
                Some((AB, "linear")),
            ),
            (
                "https://jobs.ashbyhq.com/linear/embed?version=2".into(),
                Some((AB, "linear")),
            ),
            (
                "https://jobs.ashbyhq.com/The%20Browser%20Company".into(),
                Some((AB, "The Browser Company")),
            ),
            (
                "https://api.ashbyhq.com/posting-api/job-board/linear".into(),
                Some((AB, "linear")),
            ),
            (
                "https://api.ashbyhq.com/posting-api/job-board/linear?includeCompensation=true"
                    .into(),
                Some((AB, "linear")),
            ),
            ("https://api.ashbyhq.com/posting-api/".into(), None),
            ("https://app.ashbyhq.com/linear".into(), None),
            ("https://jobs.ashbyhq.com.evil.com/linear".into(), None),
            ("https://example.com/jobs.lever.co/spotify".into(), None),
        ];
        for (url, expected) in table {
            let found = detect_ats(&url).map(|b| {
                assert!(b.workday.is_none(), "{url}");
                (b.kind, b.token)
            });
            let expected = expected.map(|(k, t)| (k, t.to_owned()));
            assert_eq!(found, expected, "{url}");
        }
    }

    #[test]
    fn workday_table() {
        // (URL, Some((host, tenant, site, locale)))
        type Site = (
            &'static str,
            &'static str,
            &'static str,
            Option<&'static str>,
        );
        let table: &[(&str, Option<Site>)] = &[
            (
                "https://nvidia.wd5.myworkdayjobs.com/NVIDIAExternalCareerSite",
                Some((
                    "nvidia.wd5.myworkdayjobs.com",
                    "nvidia",
                    "NVIDIAExternalCareerSite",
                    None,
                )),
            ),
            (
                "https://nvidia.wd5.myworkdayjobs.com/en-US/NVIDIAExternalCareerSite/job/US-CA-Santa-Clara/Senior-Engineer_JR1234",
                Some((
                    "nvidia.wd5.myworkdayjobs.com",
                    "nvidia",
                    "NVIDIAExternalCareerSite",
                    Some("en-US"),
                )),
            ),
            (
                "https://salesforce.wd12.myworkdayjobs.com/External_Career_Site",
                Some((
                    "salesforce.wd12.myworkdayjobs.com",
                    "salesforce",
                    "External_Career_Site",
                    None,
                )),
            ),
            (
                "https://salesforce.wd12.myworkdayjobs.com/Futureforce_Internships/job/California---San-Francisco/Summer-2027-Intern---Software-Engineer_JR340771",
                Some((
                    "salesforce.wd12.myworkdayjobs.com",
                    "salesforce",
                    "Futureforce_Internships",
                    None,
                )),
            ),
            (
                "https://workday.wd5.myworkdayjobs.com/wday/cxs/workday/Workday/jobs",
                Some(("workday.wd5.myworkdayjobs.com", "workday", "Workday", None)),
            ),
            (
                "https://NVIDIA.WD5.MyWorkdayJobs.com/es-419/NVIDIAExternalCareerSite",
                Some((
                    "nvidia.wd5.myworkdayjobs.com",
                    "nvidia",
                    "NVIDIAExternalCareerSite",
                    Some("es-419"),
                )),
            ),
            ("https://nvidia.wd5.myworkdayjobs.com/", None),
            ("https://nvidia.wd5.myworkdayjobs.com/en-US", None),
            ("https://nvidia.wd5.myworkdayjobs.com/wday/cxs/nvidia", None),
            ("https://myworkdayjobs.com/NVIDIAExternalCareerSite", None),
            (
                "https://www.myworkdayjobs.com/NVIDIAExternalCareerSite",
                None,
            ),
            (
                "https://nvidia.wd5.myworkdayjobs.com.evil.com/NVIDIAExternalCareerSite",
                None,
            ),
        ];
        for (url, expected) in table {
            let found = detect_ats(url).map(|b| {
                assert_eq!(b.kind, AtsKind::Workday, "{url}");
                let site = b.workday.unwrap();
                assert_eq!(b.token, site.tenant, "{url}");
                (site.host, site.tenant, site.site, site.locale)
            });
            let expected = expected.map(|(h, t, s, l)| {
                (
                    h.to_owned(),
                    t.to_owned(),
                    s.to_owned(),
                    l.map(str::to_owned),
                )
            });
            assert_eq!(found, expected, "{url}");
        }
    }

    #[test]
    fn html_table() {
        let table: &[(&str, Expected)] = &[
            (
                r#"<div id="grnhse_app"></div><script src="https://boards.greenhouse.io/embed/job_board/js?for=acme"></script>"#,
                Some((GH, "acme")),
            ),
            (
                r#"<iframe src="https://job-boards.greenhouse.io/embed/job_board?for=acme&amp;b=https%3A%2F%2Facme.com"></iframe>"#,
                Some((GH, "acme")),
            ),
            (
                r#"<script src='//boards.greenhouse.io/embed/job_board/js?for=Acme'></script>"#,
                Some((GH, "Acme")),
            ),
            (
                r#"<a href="https://www.acme.com/careers?gh_jid=42">Engineer</a><a href="https://jobs.lever.co/acme">All jobs</a>"#,
                Some((LV, "acme")),
            ),
            (
                r#"<script src="https://jobs.ashbyhq.com/acme/embed?version=2"></script><div id="ashby_embed"></div>"#,
                Some((AB, "acme")),
            ),
            (
                r#"<script>window.__DATA__={"jobsUrl":"https:\/\/jobs.ashbyhq.com\/acme"}</script>"#,
                Some((AB, "acme")),
            ),
            (
                r#"<p>Powered by <a href="https://www.greenhouse.io">Greenhouse</a></p><a href="https://jobs.lever.co/second">x</a><a href="https://boards.greenhouse.io/third">y</a>"#,
                Some((LV, "second")),
            ),
            (
                r#"<a href="https://www.acme.com/careers?gh_jid=42">Engineer</a><a href="https://clever.com">x</a>"#,
                None,
            ),
            ("<p>No board here. Café ☕ jobs.</p>", None),
        ];
        for (html, expected) in table {
            let found = detect_ats_in_html(html).map(|b| (b.kind, b.token));
            let expected = expected.map(|(k, t)| (k, t.to_owned()));
            assert_eq!(found, expected, "{html}");
        }
        let workday = detect_ats_in_html(
            r#"<a href="https://nvidia.wd5.myworkdayjobs.com/en-US/NVIDIAExternalCareerSite">Careers</a>"#,
        )
        .unwrap();
        assert_eq!(workday.workday.unwrap().site, "NVIDIAExternalCareerSite");
    }

    #[test]
    fn non_ascii_around_markers_is_safe() {
        assert_eq!(
            detect_ats_in_html("é→jobs.lever.co/acmé←").map(|b| b.token),
            Some("acmé←".to_owned())
        );
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("%E2%98%95"), "☕");
        assert_eq!(percent_decode("%FF"), "%FF");
    }
}
