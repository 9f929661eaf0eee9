//! Email: building MIME messages with attachments, and sending them through SMTP or
//! into `.eml` files.
//!
//! An [`Email`] is plain data. [`build_message`] turns it into a MIME message
//! (`text/plain`, or `multipart/alternative` with an HTML body, wrapped in
//! `multipart/mixed` when there are attachments, which are always base64 so their bytes
//! arrive intact). A [`Mailer`] delivers it: [`SmtpMailer`] to an SMTP server,
//! [`EmlFileMailer`] into a directory of `.eml` files (for dry runs and review).
//!
//! ```
//! use job_capabilities::mail::{Attachment, Email, render_eml};
//!
//! # fn main() -> Result<(), job_capabilities::mail::MailError> {
//! let email = Email {
//!     from: "Job Hunter <hunter@example.com>".into(),
//!     to: vec!["me@example.com".into()],
//!     subject: "New jobs".into(),
//!     text_body: "3 new jobs attached.".into(),
//!     html_body: Some("<p>3 new jobs attached.</p>".into()),
//!     attachments: vec![Attachment::new("jobs.csv", "text/csv", b"title\nEngineer\n".to_vec())],
//! };
//! let eml = String::from_utf8_lossy(&render_eml(&email)?).into_owned();
//! assert!(eml.contains("Subject: New jobs"));
//! assert!(eml.contains("multipart/mixed"));
//! # Ok(())
//! # }
//! ```

mod eml;
mod smtp;
#[cfg(feature = "testing")]
pub mod testing;

use std::path::PathBuf;

use lettre::Message;
use lettre::message::header::ContentType;
use lettre::message::{Body, Mailbox, MultiPart, SinglePart};

pub use eml::EmlFileMailer;
pub use smtp::SmtpMailer;

/// A file attached to an [`Email`].
#[derive(Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The file name the recipient sees (`jobs.csv`).
    pub filename: String,
    /// The MIME type (`text/csv`); empty means `application/octet-stream`.
    pub content_type: String,
    /// The file's bytes, sent unchanged (base64 encoded on the wire).
    pub bytes: Vec<u8>,
}

impl Attachment {
    /// An attachment with this name, MIME type and content.
    pub fn new(
        filename: impl Into<String>,
        content_type: impl Into<String>,
        bytes: impl Into<Vec<u8>>,
    ) -> Self {
        Attachment {
            filename: filename.into(),
            content_type: content_type.into(),
            bytes: bytes.into(),
        }
    }
}

impl std::fmt::Debug for Attachment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attachment")
            .field("filename", &self.filename)
            .field("content_type", &self.content_type)
            .field("bytes", &format_args!("{} bytes", self.bytes.len()))
            .finish()
    }
}

/// An email to send.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Email {
    /// The sender: `user@example.com` or `Name <user@example.com>`.
    pub from: String,
    /// The recipients, each in the same forms as `from`; at least one.
    pub to: Vec<String>,
    /// The subject line.
    pub subject: String,
    /// The plain-text body (always sent).
    pub text_body: String,
    /// An HTML alternative of the body.
    pub html_body: Option<String>,
    /// Files to attach.
    pub attachments: Vec<Attachment>,
}

/// What a [`Mailer`] did with an email.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SentMail {
    /// The `Message-ID` header of the message (with its angle brackets).
    pub message_id: Option<String>,
    /// Where it went: `smtp://host:port` (see [`SmtpMailer::describe`]) or the `.eml`
    /// file's path.
    pub transport: String,
    /// The `.eml` file written, for [`EmlFileMailer`].
    pub eml_path: Option<PathBuf>,
}

/// Why an email could not be built or sent.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// A sender or recipient is not a valid address (or there is no recipient).
    #[error("invalid email address {address:?}: {reason}")]
    InvalidAddress {
        /// The address as given.
        address: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The SMTP URL could not be used (the reason never repeats the password).
    #[error("invalid SMTP URL: {reason}")]
    InvalidUrl {
        /// What is wrong with it.
        reason: String,
    },
    /// The message could not be built (for example an invalid attachment type).
    #[error("cannot build the message: {0}")]
    Build(String),
    /// The SMTP server could not be reached or refused the message; includes the
    /// server's reply when there was one.
    #[error("SMTP delivery failed: {0}")]
    Smtp(String),
    /// Writing an `.eml` file failed.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file or directory being written.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Something that delivers an [`Email`].
#[async_trait::async_trait]
pub trait Mailer: Send + Sync {
    /// Where this mailer delivers, for logs and dry-run reports (never credentials).
    fn describe(&self) -> String;

    /// Builds and delivers the email.
    async fn send(&self, email: &Email) -> Result<SentMail, MailError>;
}

/// Builds the MIME message for an email, validating every address.
///
/// The body is `text/plain`, or `multipart/alternative` (text, then HTML) when
/// `html_body` is set; with attachments it is wrapped in `multipart/mixed`, each
/// attachment base64-encoded. A `Message-ID` and a `Date` are added.
///
/// Errors: [`MailError::InvalidAddress`] for a malformed `from` or `to` entry or an
/// empty `to`; [`MailError::Build`] for an attachment without a file name or with an
/// invalid content type.
///
/// ```
/// use job_capabilities::mail::{Email, MailError, build_message};
///
/// let mut email = Email {
///     from: "hunter@example.com".into(),
///     to: vec!["me@example.com".into()],
///     subject: "Hello".into(),
///     text_body: "Hi!".into(),
///     ..Email::default()
/// };
/// assert!(build_message(&email).is_ok());
///
/// email.to = vec!["not an address".into()];
/// assert!(matches!(build_message(&email), Err(MailError::InvalidAddress { .. })));
/// ```
pub fn build_message(email: &Email) -> Result<Message, MailError> {
    let mut builder = Message::builder()
        .from(parse_mailbox(&email.from)?)
        .subject(email.subject.as_str())
        .message_id(None);
    if email.to.is_empty() {
        return Err(MailError::InvalidAddress {
            address: String::new(),
            reason: "the email has no recipient".into(),
        });
    }
    for to in &email.to {
        builder = builder.to(parse_mailbox(to)?);
    }

    let text = SinglePart::plain(email.text_body.clone());
    let built = match (&email.html_body, email.attachments.is_empty()) {
        (None, true) => builder.singlepart(text),
        (Some(html), true) => builder.multipart(alternative(text, html)),
        (html, false) => {
            let mut mixed = match html {
                Some(html) => MultiPart::mixed().multipart(alternative(text, html)),
                None => MultiPart::mixed().singlepart(text),
            };
            for attachment in &email.attachments {
                mixed = mixed.singlepart(attachment_part(attachment)?);
            }
            builder.multipart(mixed)
        }
    };
    built.map_err(|e| MailError::Build(e.to_string()))
}

/// The email as an RFC 5322 message (`.eml` bytes, CRLF line endings).
///
/// ```
/// use job_capabilities::mail::{Email, render_eml};
///
/// # fn main() -> Result<(), job_capabilities::mail::MailError> {
/// let email = Email {
///     from: "hunter@example.com".into(),
///     to: vec!["me@example.com".into()],
///     subject: "Hello".into(),
///     text_body: "Hi!".into(),
///     ..Email::default()
/// };
/// let eml = render_eml(&email)?;
/// assert!(String::from_utf8_lossy(&eml).contains("To: me@example.com\r\n"));
/// # Ok(())
/// # }
/// ```
pub fn render_eml(email: &Email) -> Result<Vec<u8>, MailError> {
    Ok(build_message(email)?.formatted())
}

/// The `Message-ID` header of a built message.
pub(crate) fn message_id(message: &Message) -> Option<String> {
    message
        .headers()
        .get_raw("Message-ID")
        .map(|id| id.trim().to_owned())
}

fn alternative(text: SinglePart, html: &str) -> MultiPart {
    MultiPart::alternative()
        .singlepart(text)
        .singlepart(SinglePart::html(html.to_owned()))
}

fn attachment_part(attachment: &Attachment) -> Result<SinglePart, MailError> {
    if attachment.filename.trim().is_empty() {
        return Err(MailError::Build("an attachment has no file name".into()));
    }
    let content_type = if attachment.content_type.trim().is_empty() {
        "application/octet-stream"
    } else {
        attachment.content_type.trim()
    };
    let content_type = ContentType::parse(content_type).map_err(|e| {
        MailError::Build(format!(
            "attachment {:?} has an invalid content type {:?}: {e}",
            attachment.filename, attachment.content_type
        ))
    })?;
    // `Vec<u8>` bodies are always base64: bytes and line endings arrive unchanged.
    let body = Body::new(attachment.bytes.clone());
    Ok(lettre::message::Attachment::new(attachment.filename.clone()).body(body, content_type))
}

/// Parses `user@domain` or `Name <user@domain>`, with a reason a person can act on.
fn parse_mailbox(address: &str) -> Result<Mailbox, MailError> {
    let invalid = |reason: &str| MailError::InvalidAddress {
        address: address.to_owned(),
        reason: reason.to_owned(),
    };
    let trimmed = address.trim();
    if trimmed.is_empty() {
        return Err(invalid("the address is empty"));
    }
    trimmed.parse::<Mailbox>().map_err(|err| {
        use lettre::address::AddressError;
        let reason = match err {
            AddressError::MissingParts => "it needs a user and a domain, as in user@example.com",
            AddressError::Unbalanced => "an angle bracket is not closed",
            AddressError::InvalidUser => "the part before @ is not valid",
            AddressError::InvalidDomain => "the domain after @ is not valid",
            _ => "expected user@example.com or Name <user@example.com> (one address per entry)",
        };
        invalid(reason)
    })
}
