//! Career-page fetching against real servers on loopback: pages, links, redirects, the
//! address guard, size and type limits, refusals and timeouts.
#![cfg(test)]

use std::net::IpAddr;
use std::time::Duration;

use job_capabilities::fetch::{
    FetchError, FetchPolicy, PageFetcher, PageLink, PageSource, is_public_address,
};
use job_capabilities::http::HttpError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Loopback allowed (the test servers live there), no spacing between requests.
fn loopback_policy() -> FetchPolicy {
    FetchPolicy {
        allow_loopback: true,
        min_interval_per_host: Duration::from_millis(1),
        ..FetchPolicy::default()
    }
}

fn fetcher(policy: FetchPolicy) -> PageFetcher {
    PageFetcher::new(policy).unwrap()
}

fn html(body: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.as_bytes().to_vec(), "text/html; charset=utf-8")
}

fn redirect(status: u16, location: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).insert_header("location", location)
}

async fn requests(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

const CAREERS: &str = r##"<!DOCTYPE html>
<html><head><title>
  Careers  at
  Acme </title><style>body{}</style></head>
<body>
<nav><a href="/">Home</a></nav>
<main>
  <h1>Open roles</h1>
  <ul>
    <li><a href="/jobs/rust-engineer#apply">Rust Engineer</a> (Berlin)</li>
    <li><a href="jobs/designer">Product   Designer</a></li>
    <li><a href="https://boards.example.com/acme/123?src=site">Data Engineer</a></li>
    <li><a href="/jobs/rust-engineer">Rust Engineer (again)</a></li>
  </ul>
  <p>Questions? <a href="mailto:jobs@acme.example">Mail us</a> or <a href="#faq">read the FAQ</a>.</p>
  <script>track()</script>
</main></body></html>"##;

#[tokio::test]
async fn a_page_is_fetched_with_its_title_text_and_absolute_links() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/careers/"))
        .respond_with(html(CAREERS))
        .mount(&server)
        .await;
    let page = fetcher(loopback_policy())
        .fetch_page(&format!("{}/careers/", server.uri()))
        .await
        .unwrap();
    assert_eq!(page.url, format!("{}/careers/", server.uri()));
    assert_eq!(page.status, 200);
    assert_eq!(
        page.content_type.as_deref(),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(page.title.as_deref(), Some("Careers at Acme"));
    assert_eq!(
        page.text(),
        "Open roles\n- Rust Engineer (Berlin)\n- Product Designer\n- Data Engineer\n- Rust Engineer (again)\nQuestions? Mail us or read the FAQ."
    );
    let base = server.uri();
    let link = |text: &str, url: String| PageLink {
        text: text.into(),
        url,
    };
    assert_eq!(
        page.links(),
        vec![
            link("Home", format!("{base}/")),
            link("Rust Engineer", format!("{base}/jobs/rust-engineer")),
            link("Product Designer", format!("{base}/careers/jobs/designer")),
            link(
                "Data Engineer",
                "https://boards.example.com/acme/123?src=site".into()
            ),
        ]
    );
    let request = &server.received_requests().await.unwrap()[0];
    let accept = request.headers.get("accept").unwrap().to_str().unwrap();
    assert!(accept.starts_with("text/html"), "{accept}");
}

#[tokio::test]
async fn charsets_are_decoded_and_a_missing_content_type_is_accepted() {
    let server = MockServer::start().await;
    Mock::given(path("/latin1"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            b"<html><head><title>Caf\xE9 jobs</title></head><body><p>Se\xF1or developer</p></body></html>".to_vec(),
            "text/html; charset=ISO-8859-1",
        ))
        .mount(&server)
        .await;
    Mock::given(path("/untyped"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(b"<p>plain</p>".to_vec()))
        .mount(&server)
        .await;
    let fetcher = fetcher(loopback_policy());
    let latin1 = fetcher
        .fetch_page(&format!("{}/latin1", server.uri()))
        .await
        .unwrap();
    assert_eq!(latin1.title.as_deref(), Some("Café jobs"));
    assert_eq!(latin1.text(), "Señor developer");
    let untyped = fetcher
        .fetch_page(&format!("{}/untyped", server.uri()))
        .await
        .unwrap();
    assert_eq!(untyped.content_type, None);
    assert_eq!(untyped.text(), "plain");
}

#[tokio::test]
async fn a_redirect_chain_is_followed_and_the_final_url_reported() {
    let server = MockServer::start().await;
    Mock::given(path("/old"))
        .respond_with(redirect(301, "/jobs"))
        .mount(&server)
        .await;
    Mock::given(path("/jobs"))
        .respond_with(redirect(302, &format!("{}/jobs/", server.uri())))
        .mount(&server)
        .await;
    Mock::given(path("/jobs/"))
        .respond_with(html("<title>Jobs</title>"))
        .mount(&server)
        .await;
    let page = fetcher(loopback_policy())
        .fetch_page(&format!("{}/old", server.uri()))
        .await
        .unwrap();
    assert_eq!(page.url, format!("{}/jobs/", server.uri()));
    assert_eq!(page.title.as_deref(), Some("Jobs"));
    assert_eq!(requests(&server).await, 3);
}

#[tokio::test]
async fn redirects_stop_at_the_limit_and_loops_are_too_many() {
    let server = MockServer::start().await;
    // /hop/N redirects to /hop/N-1; /hop/0 is the page.
    for n in 1..=4 {
        Mock::given(path(format!("/hop/{n}")))
            .respond_with(redirect(302, &format!("/hop/{}", n - 1)))
            .mount(&server)
            .await;
    }
    Mock::given(path("/hop/0"))
        .respond_with(html("<p>here</p>"))
        .mount(&server)
        .await;
    Mock::given(path("/loop"))
        .respond_with(redirect(302, "/loop"))
        .mount(&server)
        .await;
    let fetcher = fetcher(FetchPolicy {
        max_redirects: 3,
        ..loopback_policy()
    });
    let three = fetcher
        .fetch_page(&format!("{}/hop/3", server.uri()))
        .await
        .unwrap();
    assert!(three.url.ends_with("/hop/0"));

    let four = format!("{}/hop/4", server.uri());
    let err = fetcher.fetch_page(&four).await.unwrap_err();
    assert_eq!(err, FetchError::TooManyRedirects { url: four });

    let before = requests(&server).await;
    let err = fetcher
        .fetch_page(&format!("{}/loop", server.uri()))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::TooManyRedirects { .. }), "{err}");
    // The first request and three redirects, then it stops.
    assert_eq!(requests(&server).await - before, 4);
}

#[tokio::test]
async fn redirects_to_non_public_ip_literals_are_refused_before_connecting() {
    let server = MockServer::start().await;
    let targets = [
        (
            "/metadata",
            "http://169.254.169.254/latest/meta-data",
            "169.254.169.254",
        ),
        ("/private", "http://10.0.0.1/admin", "10.0.0.1"),
        (
            "/mapped",
            "http://[::ffff:192.168.0.1]/",
            "::ffff:192.168.0.1",
        ),
        ("/zero", "http://0.0.0.0:8080/", "0.0.0.0"),
    ];
    for (from, to, _) in targets {
        Mock::given(path(from))
            .respond_with(redirect(302, to))
            .mount(&server)
            .await;
    }
    Mock::given(path("/ftp"))
        .respond_with(redirect(302, "ftp://files.example.com/jobs.html"))
        .mount(&server)
        .await;
    // Loopback is allowed here so the test server can be reached; link-local, private
    // and unspecified addresses are refused regardless.
    let fetcher = fetcher(loopback_policy());
    for (from, to, address) in targets {
        let started = Instant::now();
        let err = fetcher
            .fetch_page(&format!("{}{from}", server.uri()))
            .await
            .unwrap_err();
        let expected = FetchError::ForbiddenAddress {
            url: url::Url::parse(to).unwrap().to_string(),
            address: address.into(),
        };
        assert_eq!(err, expected, "{from}");
        // Refused without trying to connect (which would hang or fail differently).
        assert!(started.elapsed() < Duration::from_secs(2));
    }
    let err = fetcher
        .fetch_page(&format!("{}/ftp", server.uri()))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, FetchError::InvalidUrl { url, .. } if url.starts_with("ftp://")),
        "{err}"
    );
}

#[tokio::test]
async fn non_public_ip_literals_and_bad_urls_are_refused_before_sending() {
    let fetcher = fetcher(FetchPolicy::default());
    let cases = [
        ("http://10.0.0.1/", "10.0.0.1"),
        ("http://[::ffff:192.168.0.1]/", "::ffff:192.168.0.1"),
        ("http://169.254.169.254/latest/meta-data", "169.254.169.254"),
        ("http://2130706433/", "127.0.0.1"),
        ("http://[::1]:8080/", "::1"),
    ];
    for (url, address) in cases {
        let err = fetcher.fetch_page(url).await.unwrap_err();
        assert!(
            matches!(&err, FetchError::ForbiddenAddress { address: a, .. } if a == address),
            "{url}: {err}"
        );
    }
    for url in [
        "not a url",
        "/relative/path",
        "file:///etc/passwd",
        "ftp://example.com/",
    ] {
        let err = fetcher.fetch_page(url).await.unwrap_err();
        assert!(matches!(err, FetchError::InvalidUrl { .. }), "{url}: {err}");
    }
}

#[tokio::test]
async fn loopback_is_refused_by_default_by_address_and_by_name() {
    let server = MockServer::start().await;
    Mock::given(path("/"))
        .respond_with(html("<p>secret</p>"))
        .mount(&server)
        .await;
    let fetcher = fetcher(FetchPolicy::default());
    let port = server.address().port();

    // An IP literal, checked before sending.
    let err = fetcher.fetch_page(&server.uri()).await.unwrap_err();
    assert!(
        matches!(&err, FetchError::ForbiddenAddress { address, .. } if address == "127.0.0.1"),
        "{err}"
    );

    // A name that resolves to loopback, refused by the guarded resolver.
    let by_name = format!("http://localhost:{port}/");
    let err = fetcher.fetch_page(&by_name).await.unwrap_err();
    match &err {
        FetchError::ForbiddenAddress { url, address } => {
            assert_eq!(url, &by_name);
            let ip: IpAddr = address.parse().unwrap();
            assert!(ip.is_loopback(), "{address}");
        }
        other => panic!("expected ForbiddenAddress, got {other:?}"),
    }
    assert_eq!(requests(&server).await, 0);

    // The same name is fine when loopback is allowed.
    let page = self::fetcher(loopback_policy())
        .fetch_page(&by_name)
        .await
        .unwrap();
    assert_eq!(page.text(), "secret");
}

#[tokio::test]
async fn a_body_over_the_cap_is_too_large_with_a_content_length() {
    let server = MockServer::start().await;
    let big = format!("<p>{}</p>", "x".repeat(4096));
    Mock::given(path("/big"))
        .respond_with(html(&big))
        .mount(&server)
        .await;
    Mock::given(path("/small"))
        .respond_with(html("<p>ok</p>"))
        .mount(&server)
        .await;
    let fetcher = fetcher(FetchPolicy {
        max_body_bytes: 1024,
        ..loopback_policy()
    });
    let url = format!("{}/big", server.uri());
    let err = fetcher.fetch_page(&url).await.unwrap_err();
    assert_eq!(err, FetchError::TooLarge { url, limit: 1024 });
    fetcher
        .fetch_page(&format!("{}/small", server.uri()))
        .await
        .unwrap();
}

/// A server that answers every connection with a chunked HTML body that never ends (no
/// Content-Length), until the client hangs up.
async fn endless_chunked_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ntransfer-encoding: chunked\r\n\r\n";
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = format!("400\r\n{}\r\n", "y".repeat(0x400));
                while socket.write_all(chunk.as_bytes()).await.is_ok() {}
            });
        }
    });
    format!("http://{address}/stream")
}

#[tokio::test]
async fn a_streamed_body_without_content_length_is_cut_off_at_the_cap() {
    let url = endless_chunked_server().await;
    let fetcher = fetcher(FetchPolicy {
        max_body_bytes: 64 * 1024,
        timeout: Duration::from_secs(10),
        ..loopback_policy()
    });
    let err = tokio::time::timeout(Duration::from_secs(5), fetcher.fetch_page(&url))
        .await
        .expect("the read stops at the cap")
        .unwrap_err();
    assert_eq!(
        err,
        FetchError::TooLarge {
            url,
            limit: 64 * 1024
        }
    );
}

#[tokio::test]
async fn non_html_is_refused() {
    let server = MockServer::start().await;
    Mock::given(path("/cv.pdf"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(b"%PDF-1.7".to_vec(), "application/pdf"),
        )
        .mount(&server)
        .await;
    let url = format!("{}/cv.pdf", server.uri());
    let err = fetcher(loopback_policy())
        .fetch_page(&url)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        FetchError::NotHtml {
            url,
            content_type: "application/pdf".into()
        }
    );
}

#[tokio::test]
async fn a_403_is_blocked_and_other_statuses_are_http_errors() {
    let server = MockServer::start().await;
    Mock::given(path("/forbidden"))
        .respond_with(ResponseTemplate::new(403))
        .mount(&server)
        .await;
    Mock::given(path("/gone"))
        .respond_with(ResponseTemplate::new(404))
        .mount(&server)
        .await;
    let fetcher = fetcher(loopback_policy());
    let err = fetcher
        .fetch_page(&format!("{}/forbidden", server.uri()))
        .await
        .unwrap_err();
    assert!(err.is_blocked(), "{err}");
    assert!(matches!(
        err,
        FetchError::Http(HttpError::Blocked { status: 403, .. })
    ));
    let err = fetcher
        .fetch_page(&format!("{}/gone", server.uri()))
        .await
        .unwrap_err();
    assert!(!err.is_blocked());
    assert!(
        matches!(err, FetchError::Http(HttpError::Status { status: 404, .. })),
        "{err}"
    );
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let server = MockServer::start().await;
    Mock::given(path("/slow"))
        .respond_with(html("<p>late</p>").set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    let fetcher = fetcher(FetchPolicy {
        timeout: Duration::from_millis(200),
        ..loopback_policy()
    });
    let started = Instant::now();
    let err = fetcher
        .fetch_page(&format!("{}/slow", server.uri()))
        .await
        .unwrap_err();
    assert!(
        matches!(err, FetchError::Http(HttpError::Timeout { .. })),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn requests_to_one_host_are_spaced() {
    let server = MockServer::start().await;
    Mock::given(path("/"))
        .respond_with(html("<p>hi</p>"))
        .mount(&server)
        .await;
    let fetcher = fetcher(FetchPolicy {
        min_interval_per_host: Duration::from_millis(300),
        ..loopback_policy()
    });
    let started = Instant::now();
    for _ in 0..3 {
        fetcher.fetch_page(&server.uri()).await.unwrap();
    }
    assert!(started.elapsed() >= Duration::from_millis(600));
}

#[test]
fn public_and_non_public_addresses() {
    let cases: &[(&str, bool)] = &[
        // Public.
        ("93.184.215.14", true),
        ("8.8.8.8", true),
        ("1.1.1.1", true),
        ("172.32.0.1", true),
        ("100.128.0.1", true),
        ("192.169.0.1", true),
        ("2606:4700:4700::1111", true),
        ("2a00:1450:4001:82a::200e", true),
        ("::ffff:8.8.8.8", true),
        // Private.
        ("10.0.0.1", false),
        ("10.255.255.255", false),
        ("172.16.0.1", false),
        ("172.31.255.254", false),
        ("192.168.0.1", false),
        // Loopback, link-local and the metadata address.
        ("127.0.0.1", false),
        ("127.1.2.3", false),
        ("::1", false),
        ("169.254.169.254", false),
        ("169.254.0.1", false),
        ("fe80::1", false),
        // Unspecified, "this network", broadcast, reserved.
        ("0.0.0.0", false),
        ("0.1.2.3", false),
        ("::", false),
        ("255.255.255.255", false),
        ("240.0.0.1", false),
        // Carrier-grade NAT.
        ("100.64.0.1", false),
        ("100.127.255.254", false),
        // Documentation and benchmarking.
        ("192.0.2.1", false),
        ("198.51.100.7", false),
        ("203.0.113.9", false),
        ("198.18.0.1", false),
        ("2001:db8::1", false),
        // Multicast.
        ("224.0.0.1", false),
        ("239.255.255.250", false),
        ("ff02::1", false),
        // Unique-local.
        ("fc00::1", false),
        ("fd12:3456:789a::1", false),
        // IPv4 embedded in IPv6: mapped, NAT64, 6to4.
        ("::ffff:10.0.0.1", false),
        ("::ffff:127.0.0.1", false),
        ("::ffff:169.254.169.254", false),
        ("::ffff:192.168.0.1", false),
        ("64:ff9b::a9fe:a9fe", false),
        ("64:ff9b::808:808", true),
        ("2002:c0a8:0001::1", false),
        ("2002:0808:0808::1", true),
    ];
    for (ip, public) in cases {
        let parsed: IpAddr = ip.parse().unwrap();
        assert_eq!(is_public_address(parsed), *public, "{ip}");
    }
}
