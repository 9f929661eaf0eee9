//! Delivery through an SMTP server.

use std::time::Duration;

use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use url::{Host, Url};

use super::{Email, MailError, Mailer, SentMail, build_message, message_id};

/// How the connection to the server is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Security {
    /// Plain text, for a local or otherwise trusted server.
    Plain,
    /// Plain text upgraded with STARTTLS, which the server must offer.
    StartTls,
    /// TLS from the first byte (SMTPS).
    Tls,
}

/// Sends email through an SMTP server, one connection per message.
///
/// Built from a URL by [`SmtpMailer::from_url`]. The user name and password are kept
/// out of [`describe`](Mailer::describe), `Debug` and error messages.
pub struct SmtpMailer {
    server: Server,
    transport: AsyncSmtpTransport<Tokio1Executor>,
}

/// Everything needed to (re)build the transport.
struct Server {
    security: Security,
    tls: Tls,
    host: String,
    port: u16,
    hello_name: Option<String>,
    credentials: Option<Credentials>,
    timeout: Duration,
}

impl Server {
    fn transport(&self) -> AsyncSmtpTransport<Tokio1Executor> {
        let mut builder =
            AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(self.host.as_str())
                .port(self.port)
                .tls(self.tls.clone())
                .timeout(Some(self.timeout));
        if let Some(credentials) = &self.credentials {
            builder = builder.credentials(credentials.clone());
        }
        if let Some(name) = &self.hello_name {
            builder = builder.hello_name(ClientId::Domain(name.clone()));
        }
        builder.build()
    }
}

impl SmtpMailer {
    /// How long one connection attempt or SMTP command may take by default.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

    /// A mailer for an SMTP URL:
    ///
    /// - `smtp://[user:pass@]host[:port]`: plain SMTP (port 587 by default), meant for a
    ///   local or trusted server;
    /// - `smtp://[user:pass@]host[:port]?tls=starttls` (or `?tls=required`): STARTTLS
    ///   is required, the certificate checked against the web PKI roots;
    /// - `smtps://[user:pass@]host[:port]`: TLS from the start (port 465 by default).
    ///
    /// User and password are percent-decoded (write `@` as `%40`). A path names the
    /// host sent in `EHLO` (`smtp://host/mail.example.com`). The timeout is
    /// [`Self::DEFAULT_TIMEOUT`]; change it with [`Self::with_timeout`].
    ///
    /// ```no_run
    /// use job_capabilities::mail::{Email, Mailer, SmtpMailer};
    ///
    /// # async fn run() -> Result<(), job_capabilities::mail::MailError> {
    /// let mailer = SmtpMailer::from_url("smtps://me%40example.com:secret@smtp.example.com")?;
    /// assert_eq!(mailer.describe(), "smtps://smtp.example.com:465");
    /// let email = Email {
    ///     from: "me@example.com".into(),
    ///     to: vec!["you@example.com".into()],
    ///     subject: "Hello".into(),
    ///     text_body: "Hi!".into(),
    ///     ..Email::default()
    /// };
    /// let sent = mailer.send(&email).await?;
    /// assert_eq!(sent.transport, "smtps://smtp.example.com:465");
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_url(url: &str) -> Result<Self, MailError> {
        let invalid = |reason: String| MailError::InvalidUrl { reason };
        // Never echo the URL itself: it may hold a password.
        let parsed = Url::parse(url).map_err(|e| invalid(format!("cannot parse it: {e}")))?;

        let mut security = match parsed.scheme() {
            "smtp" => Security::Plain,
            "smtps" => Security::Tls,
            other => {
                return Err(invalid(format!(
                    "unsupported scheme {other:?}: use smtp:// or smtps://"
                )));
            }
        };
        for (key, value) in parsed.query_pairs() {
            match (key.as_ref(), value.as_ref(), security) {
                ("tls", "starttls" | "required", Security::Plain | Security::StartTls) => {
                    security = Security::StartTls;
                }
                ("tls", "none" | "off", Security::Plain) => {}
                ("tls", value, _) => {
                    return Err(invalid(format!(
                        "tls={value} is not supported with {}:// (use ?tls=starttls with \
                         smtp://, or smtps:// for TLS from the start)",
                        parsed.scheme()
                    )));
                }
                (key, _, _) => {
                    return Err(invalid(format!("unknown parameter {key:?}")));
                }
            }
        }

        let host = match parsed.host() {
            Some(Host::Domain(domain)) if !domain.is_empty() => domain.to_owned(),
            Some(Host::Ipv4(ip)) => ip.to_string(),
            Some(Host::Ipv6(ip)) => ip.to_string(),
            _ => return Err(invalid("it has no host".into())),
        };
        let port = parsed.port().unwrap_or(match security {
            Security::Tls => 465,
            Security::Plain | Security::StartTls => 587,
        });
        let credentials = match (parsed.username(), parsed.password()) {
            ("", None) => None,
            (user, Some(pass)) => Some(Credentials::new(
                percent_decode(user).map_err(|r| invalid(format!("user name: {r}")))?,
                percent_decode(pass).map_err(|r| invalid(format!("password: {r}")))?,
            )),
            (_, None) => {
                return Err(invalid(
                    "a user name needs a password (smtp://user:pass@host)".into(),
                ));
            }
        };
        let hello_name = match parsed.path().trim_matches('/') {
            "" => None,
            name => Some(percent_decode(name).map_err(|r| invalid(format!("EHLO name: {r}")))?),
        };

        if security == Security::Plain && credentials.is_some() {
            tracing::warn!(
                host,
                "SMTP credentials will be sent unencrypted: use ?tls=starttls or smtps:// \
                 for anything but a local server"
            );
        }
        let tls_parameters = || {
            TlsParameters::new(host.clone())
                .map_err(|e| invalid(format!("cannot set up TLS for {host}: {e}")))
        };
        let tls = match security {
            Security::Plain => Tls::None,
            Security::StartTls => Tls::Required(tls_parameters()?),
            Security::Tls => Tls::Wrapper(tls_parameters()?),
        };

        let server = Server {
            security,
            tls,
            host,
            port,
            hello_name,
            credentials,
            timeout: Self::DEFAULT_TIMEOUT,
        };
        Ok(SmtpMailer {
            transport: server.transport(),
            server,
        })
    }

    /// The same mailer with another timeout for connecting and for each SMTP command.
    ///
    /// ```
    /// use std::time::Duration;
    /// use job_capabilities::mail::SmtpMailer;
    ///
    /// # fn main() -> Result<(), job_capabilities::mail::MailError> {
    /// let mailer = SmtpMailer::from_url("smtp://127.0.0.1:2525")?.with_timeout(Duration::from_secs(5));
    /// assert_eq!(mailer.timeout(), Duration::from_secs(5));
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.server.timeout = timeout;
        self.transport = self.server.transport();
        self
    }

    /// The timeout for connecting and for each SMTP command.
    pub fn timeout(&self) -> Duration {
        self.server.timeout
    }
}

impl std::fmt::Debug for SmtpMailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpMailer")
            .field("server", &self.describe())
            .field("authenticated", &self.server.credentials.is_some())
            .field("timeout", &self.server.timeout)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl Mailer for SmtpMailer {
    /// `smtp://host:port`, `smtp://host:port?tls=starttls` or `smtps://host:port`.
    fn describe(&self) -> String {
        let Server {
            security,
            host,
            port,
            ..
        } = &self.server;
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.clone()
        };
        match security {
            Security::Plain => format!("smtp://{host}:{port}"),
            Security::StartTls => format!("smtp://{host}:{port}?tls=starttls"),
            Security::Tls => format!("smtps://{host}:{port}"),
        }
    }

    async fn send(&self, email: &Email) -> Result<SentMail, MailError> {
        let message = build_message(email)?;
        let id = message_id(&message);
        let server = self.describe();
        let response = self
            .transport
            .send(message)
            .await
            .map_err(|e| MailError::Smtp(format!("{server}: {e}")))?;
        tracing::info!(
            server,
            message_id = id.as_deref().unwrap_or(""),
            recipients = email.to.len(),
            reply = response.first_line().unwrap_or(""),
            "mail sent"
        );
        Ok(SentMail {
            message_id: id,
            transport: server,
            eml_path: None,
        })
    }
}

/// Why a `%XX`-escaped part of an SMTP URL could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum PercentDecodeError {
    /// A `%` with fewer than two characters after it.
    #[error("a % escape is cut short")]
    CutShort,
    /// A `%` not followed by two hexadecimal digits.
    #[error("a % escape is not hexadecimal")]
    NotHex,
    /// The decoded bytes are not UTF-8.
    #[error("it is not UTF-8 once decoded")]
    NotUtf8,
}

/// Decodes `%XX` escapes (URL user info and paths keep them encoded); a malformed escape
/// is an error rather than kept as written, so a mistyped password is named.
fn percent_decode(text: &str) -> Result<String, PercentDecodeError> {
    for escape in text.split('%').skip(1) {
        let digits = escape
            .as_bytes()
            .get(..2)
            .ok_or(PercentDecodeError::CutShort)?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return Err(PercentDecodeError::NotHex);
        }
    }
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .map(|decoded| decoded.into_owned())
        .map_err(|_| PercentDecodeError::NotUtf8)
}
