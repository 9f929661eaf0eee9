//! Mail: MIME building, `.eml` files, and delivery to a real local SMTP server
//! (aiosmtpd, run as a child process: `pip install aiosmtpd`).
#![cfg(test)]

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use job_capabilities::export::{Cell, Column, Table, write_xlsx};
use job_capabilities::mail::testing::SmtpServer;
use job_capabilities::mail::{
    Attachment, Email, EmlFileMailer, MailError, Mailer, SmtpMailer, build_message, render_eml,
};

const XLSX_TYPE: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

/// A local port nothing listens on (bound, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

// Minimal MIME reading: find an attachment by file name and decode its base64.

/// The decoded bytes of the attachment named `filename` in a raw message.
fn attachment_bytes(raw: &str, filename: &str) -> Vec<u8> {
    let text = raw.replace("\r\n", "\n");
    let at = text
        .find(&format!("filename=\"{filename}\""))
        .unwrap_or_else(|| panic!("no attachment {filename} in:\n{text}"));
    let part_start = text[..at]
        .rfind("\n--")
        .expect("a boundary before the part");
    let body_start = at + text[at..].find("\n\n").expect("end of the part's headers") + 2;
    let headers = &text[part_start..body_start];
    assert!(
        headers.contains("Content-Transfer-Encoding: base64"),
        "{headers}"
    );
    let body_end = body_start + text[body_start..].find("\n--").expect("a closing boundary");
    base64_decode(&text[body_start..body_end])
}

/// Standard base64 (RFC 4648), whitespace ignored.
fn base64_decode(text: &str) -> Vec<u8> {
    fn value(c: u8) -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            other => panic!("not base64: {:?}", other as char),
        }
    }
    let symbols: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .collect();
    let mut out = Vec::new();
    for chunk in symbols.chunks(4) {
        let mut n = 0u32;
        for (k, c) in chunk.iter().enumerate() {
            n |= value(*c) << (18 - 6 * k);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

#[test]
fn base64_decoder_matches_known_vectors() {
    assert_eq!(base64_decode("TWFu"), b"Man");
    assert_eq!(base64_decode("TWE="), b"Ma");
    assert_eq!(base64_decode("TQ==\n"), b"M");
    assert_eq!(base64_decode("AP8A\r\n/w=="), [0, 255, 0, 255]);
}

// Fixtures

/// CSV bytes with LF line endings and non-ASCII text (must not become CRLF).
fn csv_bytes() -> Vec<u8> {
    "company,title,salary\nAcme,Ingénieur backend,120000\n\"Beta, Inc.\",Data,95000\n"
        .as_bytes()
        .to_vec()
}

/// A real XLSX workbook's bytes (binary, zip).
fn xlsx_bytes(dir: &Path) -> Vec<u8> {
    let mut table = Table::new(vec![Column::new("Title", 20.0), Column::new("Pay", 10.0)]);
    table
        .push_row(vec![Cell::from("Engineer"), Cell::Number(120_000.0)])
        .unwrap();
    let path = dir.join("jobs.xlsx");
    write_xlsx(&table, &path, "Jobs").unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.starts_with(b"PK\x03\x04"));
    bytes
}

fn email_with_attachments(dir: &Path) -> Email {
    Email {
        from: "Job Hunter <hunter@example.com>".into(),
        to: vec!["alice@example.com".into(), "Bob <bob@example.org>".into()],
        subject: "Weekly jobs digest".into(),
        text_body: "Hello,\nthree new jobs match your profile.\n".into(),
        html_body: Some("<p>Hello,<br>three new jobs match your profile.</p>".into()),
        attachments: vec![
            Attachment::new("jobs.csv", "text/csv", csv_bytes()),
            Attachment::new("jobs.xlsx", XLSX_TYPE, xlsx_bytes(dir)),
        ],
    }
}

fn simple_email() -> Email {
    Email {
        from: "hunter@example.com".into(),
        to: vec!["me@example.com".into()],
        subject: "Hello".into(),
        text_body: "Hi there".into(),
        ..Email::default()
    }
}

// SMTP against aiosmtpd

#[tokio::test]
async fn smtp_delivers_bodies_and_attachments_intact() {
    let server = SmtpServer::start();
    let files = tempfile::tempdir().unwrap();
    let email = email_with_attachments(files.path());
    let mailer = SmtpMailer::from_url(&server.url()).unwrap();
    assert_eq!(mailer.describe(), server.url());

    let sent = mailer.send(&email).await.unwrap();
    assert_eq!(sent.transport, server.url());
    assert_eq!(sent.eml_path, None);
    let id = sent.message_id.expect("a Message-ID");
    assert!(
        id.starts_with('<') && id.ends_with('>') && id.contains('@'),
        "{id}"
    );

    let messages = server.messages_when(1);
    assert_eq!(messages.len(), 1);
    let raw = &messages[0];
    let text = raw.replace("\r\n", "\n");
    assert!(text.contains("\nSubject: Weekly jobs digest\n"), "{text}");
    assert!(
        text.contains("From: \"Job Hunter\" <hunter@example.com>"),
        "{text}"
    );
    assert!(
        text.contains("To: alice@example.com, Bob <bob@example.org>"),
        "{text}"
    );
    assert!(text.contains("X-MailFrom: hunter@example.com"), "{text}");
    assert!(
        text.contains("X-RcptTo: alice@example.com, bob@example.org"),
        "{text}"
    );
    assert!(text.contains(&format!("Message-ID: {id}")), "{text}");
    assert!(text.contains("multipart/mixed"), "{text}");
    assert!(text.contains("multipart/alternative"), "{text}");
    assert!(
        text.contains("Hello,\nthree new jobs match your profile.\n"),
        "{text}"
    );
    assert!(
        text.contains("<p>Hello,<br>three new jobs match your profile.</p>"),
        "{text}"
    );

    assert_eq!(attachment_bytes(raw, "jobs.csv"), csv_bytes());
    assert_eq!(
        attachment_bytes(raw, "jobs.xlsx"),
        email.attachments[1].bytes
    );
}

#[tokio::test]
async fn smtp_delivers_several_plain_messages() {
    let server = SmtpServer::start();
    let mailer = SmtpMailer::from_url(&server.url()).unwrap();
    for n in 0..3 {
        let mut email = simple_email();
        email.subject = format!("Message {n}");
        mailer.send(&email).await.unwrap();
    }
    let messages = server.messages_when(3);
    assert_eq!(messages.len(), 3);
    for n in 0..3 {
        assert!(
            messages
                .iter()
                .any(|m| m.contains(&format!("Subject: Message {n}"))),
            "message {n} missing"
        );
    }
    assert!(messages.iter().all(|m| m.contains("text/plain")));
    assert!(messages.iter().all(|m| !m.contains("multipart")));
}

#[tokio::test]
async fn dead_server_fails_fast_with_a_clear_message() {
    let port = free_port();
    let mailer = SmtpMailer::from_url(&format!("smtp://user:hunter2@127.0.0.1:{port}")).unwrap();
    let started = Instant::now();
    let err = tokio::time::timeout(Duration::from_secs(10), mailer.send(&simple_email()))
        .await
        .expect("no hang")
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let MailError::Smtp(message) = &err else {
        panic!("expected Smtp, got {err:?}");
    };
    assert!(
        message.contains(&format!("smtp://127.0.0.1:{port}")),
        "{message}"
    );
    assert!(message.to_lowercase().contains("refused"), "{message}");
    let shown = format!("{err} {err:?}");
    assert!(
        !shown.contains("hunter2") && !shown.contains("user"),
        "{shown}"
    );
}

// SMTP URLs

#[test]
fn smtp_urls_describe_server_and_security() {
    let cases = [
        ("smtp://localhost:2525", "smtp://localhost:2525"),
        ("smtp://mail.example.com", "smtp://mail.example.com:587"),
        (
            "smtp://mail.example.com?tls=starttls",
            "smtp://mail.example.com:587?tls=starttls",
        ),
        (
            "smtp://u:p@mail.example.com:25?tls=required",
            "smtp://mail.example.com:25?tls=starttls",
        ),
        ("smtps://mail.example.com", "smtps://mail.example.com:465"),
        (
            "smtps://me%40example.com:s%3Acret@smtp.example.com:2465",
            "smtps://smtp.example.com:2465",
        ),
        ("smtp://[::1]:2525", "smtp://[::1]:2525"),
        (
            "smtp://127.0.0.1:2525/client.example.com",
            "smtp://127.0.0.1:2525",
        ),
    ];
    for (url, described) in cases {
        let mailer = SmtpMailer::from_url(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(mailer.describe(), described, "{url}");
        assert_eq!(mailer.timeout(), SmtpMailer::DEFAULT_TIMEOUT);
    }
}

#[test]
fn bad_smtp_urls_are_refused_without_echoing_secrets() {
    let cases = [
        (
            "http://secret-user:secret-pass@example.com",
            "unsupported scheme",
        ),
        ("not a url", "cannot parse"),
        ("smtp://secret-user@example.com", "needs a password"),
        ("smtp://example.com?tls=bogus", "tls=bogus"),
        ("smtps://example.com?tls=starttls", "tls=starttls"),
        (
            "smtp://secret-user:secret-pass@example.com?port=1",
            "unknown parameter",
        ),
        (
            "smtp://secret-user:secret-pass@example.com:99999",
            "cannot parse",
        ),
        ("smtp:mail.example.com", "no host"),
        ("smtp://:secret-pass@/", "empty host"),
    ];
    for (url, expected) in cases {
        let err = SmtpMailer::from_url(url).unwrap_err();
        let shown = format!("{err} | {err:?}");
        assert!(
            matches!(err, MailError::InvalidUrl { .. }),
            "{url}: {shown}"
        );
        assert!(shown.contains(expected), "{url}: {shown}");
        assert!(!shown.contains("secret"), "{url}: {shown}");
    }
}

#[test]
fn credentials_stay_out_of_describe_and_debug() {
    let mailer = SmtpMailer::from_url("smtps://alice%40example.com:pa55word@smtp.example.com")
        .unwrap()
        .with_timeout(Duration::from_secs(3));
    assert_eq!(mailer.timeout(), Duration::from_secs(3));
    let shown = format!("{} {:?} {:#?}", mailer.describe(), mailer, mailer);
    assert!(!shown.contains("pa55word"), "{shown}");
    assert!(!shown.contains("alice"), "{shown}");
    assert!(shown.contains("authenticated: true"), "{shown}");
}

// .eml files

#[tokio::test]
async fn eml_mailer_writes_subject_and_both_attachments() {
    let files = tempfile::tempdir().unwrap();
    let out = files.path().join("outbox");
    let email = email_with_attachments(files.path());
    let mailer = EmlFileMailer::new(&out);
    assert_eq!(mailer.dir(), out);
    assert!(mailer.describe().contains("outbox"));

    let sent = mailer.send(&email).await.unwrap();
    let path = sent.eml_path.clone().unwrap();
    assert_eq!(sent.transport, path.display().to_string());
    assert_eq!(path.parent().unwrap(), out);
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.ends_with("-weekly-jobs-digest.eml"), "{name}");
    assert!(name.starts_with("20"), "{name}");

    let raw = String::from_utf8(std::fs::read(&path).unwrap()).unwrap();
    assert!(raw.contains("Subject: Weekly jobs digest\r\n"), "{raw}");
    assert!(raw.contains(&format!("Message-ID: {}", sent.message_id.unwrap())));
    assert_eq!(attachment_bytes(&raw, "jobs.csv"), csv_bytes());
    assert_eq!(
        attachment_bytes(&raw, "jobs.xlsx"),
        email.attachments[1].bytes
    );
    // Only the .eml itself: no temporary file left behind.
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
}

#[tokio::test]
async fn eml_mailer_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let mailer = EmlFileMailer::new(dir.path());
    let mut paths = Vec::new();
    for _ in 0..5 {
        paths.push(
            mailer
                .send(&simple_email())
                .await
                .unwrap()
                .eml_path
                .unwrap(),
        );
    }
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), 5);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 5);
}

#[tokio::test]
async fn eml_mailer_reports_an_unwritable_directory() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "not a directory").unwrap();
    let err = EmlFileMailer::new(blocker.join("outbox"))
        .send(&simple_email())
        .await
        .unwrap_err();
    assert!(matches!(err, MailError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("outbox"), "{err}");
}

// Building messages

#[tokio::test]
async fn invalid_addresses_are_refused_before_any_delivery() {
    let cases: [(&str, Vec<&str>, &str); 6] = [
        ("not an address", vec!["me@example.com"], "not an address"),
        ("", vec!["me@example.com"], ""),
        ("hunter@example.com", vec!["me@example.com", "you@"], "you@"),
        (
            "hunter@example.com",
            vec!["a@example.com, b@example.com"],
            "a@example.com, b@example.com",
        ),
        ("hunter@example.com", vec!["me@-bad-.com"], "me@-bad-.com"),
        ("hunter@example.com", vec![], ""),
    ];
    let dir = tempfile::tempdir().unwrap();
    let eml = EmlFileMailer::new(dir.path());
    // A port nothing listens on: validation must fail before any connection.
    let smtp = SmtpMailer::from_url(&format!("smtp://127.0.0.1:{}", free_port())).unwrap();
    for (from, to, bad) in cases {
        let email = Email {
            from: from.into(),
            to: to.iter().map(|s| s.to_string()).collect(),
            ..simple_email()
        };
        for err in [
            build_message(&email).unwrap_err(),
            eml.send(&email).await.unwrap_err(),
            smtp.send(&email).await.unwrap_err(),
        ] {
            match &err {
                MailError::InvalidAddress { address, reason } => {
                    assert_eq!(address, bad);
                    assert!(!reason.is_empty());
                }
                other => panic!("{from:?} {to:?}: expected InvalidAddress, got {other:?}"),
            }
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    let err = build_message(&Email {
        to: vec!["you@".into()],
        ..simple_email()
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid email address \"you@\": "),
        "{err}"
    );
}

#[test]
fn message_structure_follows_the_content() {
    let formatted = |email: &Email| String::from_utf8(render_eml(email).unwrap()).unwrap();

    let plain = formatted(&simple_email());
    assert!(
        plain.contains("Content-Type: text/plain; charset=utf-8"),
        "{plain}"
    );
    assert!(!plain.contains("multipart"), "{plain}");
    assert!(plain.contains("Date: "), "{plain}");
    assert!(plain.contains("MIME-Version: 1.0") || !plain.contains("multipart"));

    let html = formatted(&Email {
        html_body: Some("<b>Hi</b>".into()),
        ..simple_email()
    });
    assert!(html.contains("multipart/alternative"), "{html}");
    assert!(!html.contains("multipart/mixed"), "{html}");
    assert!(html.find("text/plain").unwrap() < html.find("text/html").unwrap());

    let with_file = formatted(&Email {
        attachments: vec![Attachment::new("notes.bin", "", vec![0u8, 1, 2, 255])],
        ..simple_email()
    });
    assert!(with_file.contains("multipart/mixed"), "{with_file}");
    assert!(!with_file.contains("multipart/alternative"), "{with_file}");
    assert!(
        with_file.contains("application/octet-stream"),
        "{with_file}"
    );
    assert_eq!(attachment_bytes(&with_file, "notes.bin"), [0, 1, 2, 255]);
}

#[test]
fn bad_attachments_are_build_errors() {
    let bad_type = Email {
        attachments: vec![Attachment::new("a.csv", "not a type", b"x".to_vec())],
        ..simple_email()
    };
    let err = build_message(&bad_type).unwrap_err();
    assert!(matches!(err, MailError::Build(_)), "{err:?}");
    assert!(err.to_string().contains("a.csv"), "{err}");

    let no_name = Email {
        attachments: vec![Attachment::new(" ", "text/csv", b"x".to_vec())],
        ..simple_email()
    };
    assert!(matches!(build_message(&no_name), Err(MailError::Build(_))));
}

#[test]
fn attachment_debug_shows_size_not_bytes() {
    let attachment = Attachment::new("big.bin", "application/octet-stream", vec![7u8; 4096]);
    assert_eq!(
        format!("{attachment:?}"),
        r#"Attachment { filename: "big.bin", content_type: "application/octet-stream", bytes: 4096 bytes }"#
    );
}
