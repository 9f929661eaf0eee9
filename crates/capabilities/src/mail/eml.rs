//! "Delivery" into `.eml` files, for dry runs and review.

use std::path::{Path, PathBuf};

use super::{Email, MailError, Mailer, SentMail, build_message, message_id};
use crate::export::write_atomic;

/// Writes each email as a `.eml` file into a directory instead of sending it.
///
/// Files are named `<UTC timestamp>-<slug of the subject>.eml`
/// (`20250314T101500.123Z-new-jobs-for-you.eml`), written atomically (a temporary file
/// renamed into place), and never overwrite one another: a name already taken gets a
/// `-2`, `-3`, ... suffix. Any mail client opens them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmlFileMailer {
    dir: PathBuf,
}

impl EmlFileMailer {
    /// A mailer writing into `dir` (created on first send when missing).
    ///
    /// ```
    /// use job_capabilities::mail::{Email, EmlFileMailer, Mailer};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = std::env::temp_dir().join(format!("eml-doc-{}", std::process::id()));
    /// let mailer = EmlFileMailer::new(&dir);
    /// let email = Email {
    ///     from: "hunter@example.com".into(),
    ///     to: vec!["me@example.com".into()],
    ///     subject: "New jobs for you".into(),
    ///     text_body: "Hi!".into(),
    ///     ..Email::default()
    /// };
    /// let sent = mailer.send(&email).await?;
    /// let path = sent.eml_path.ok_or("no path")?;
    /// assert!(path.to_string_lossy().ends_with("-new-jobs-for-you.eml"));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        EmlFileMailer { dir: dir.into() }
    }

    /// The directory the files go to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes the message into a new file and returns its path.
    fn write(&self, subject: &str, bytes: &[u8]) -> Result<PathBuf, MailError> {
        std::fs::create_dir_all(&self.dir).map_err(|source| MailError::Io {
            path: self.dir.clone(),
            source,
        })?;
        let path = self.free_path(subject);
        write_atomic(&path, bytes).map_err(|source| MailError::Io {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }

    /// A file name in the directory that is not taken yet.
    fn free_path(&self, subject: &str) -> PathBuf {
        let stem = format!(
            "{}-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ"),
            slug(subject)
        );
        let mut path = self.dir.join(format!("{stem}.eml"));
        let mut n = 2;
        while path.exists() {
            path = self.dir.join(format!("{stem}-{n}.eml"));
            n += 1;
        }
        path
    }
}

#[async_trait::async_trait]
impl Mailer for EmlFileMailer {
    /// `eml files in <dir>`.
    fn describe(&self) -> String {
        format!("eml files in {}", self.dir.display())
    }

    async fn send(&self, email: &Email) -> Result<SentMail, MailError> {
        let message = build_message(email)?;
        let id = message_id(&message);
        let bytes = message.formatted();
        let mailer = self.clone();
        let subject = email.subject.clone();
        // File system work off the async runtime's threads.
        let path = tokio::task::spawn_blocking(move || mailer.write(&subject, &bytes))
            .await
            .map_err(|e| MailError::Io {
                path: self.dir.clone(),
                source: std::io::Error::other(e),
            })??;
        tracing::info!(path = %path.display(), message_id = id.as_deref().unwrap_or(""), "mail written");
        Ok(SentMail {
            message_id: id,
            transport: path.display().to_string(),
            eml_path: Some(path),
        })
    }
}

/// Lower-case ASCII letters and digits joined by single dashes, at most 60 chars;
/// `message` when nothing is left.
fn slug(subject: &str) -> String {
    let mut slug = String::new();
    for c in subject.chars() {
        if c.is_ascii_alphanumeric() {
            if slug.len() == 60 {
                break;
            }
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        "message".to_owned()
    } else {
        slug.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::slug;

    #[test]
    fn slugs() {
        assert_eq!(
            slug("New jobs: 3 matches (Rust)!"),
            "new-jobs-3-matches-rust"
        );
        assert_eq!(slug("Ünïcode only ✓"), "n-code-only");
        assert_eq!(slug("***"), "message");
        assert_eq!(slug(&"a".repeat(100)).len(), 60);
    }
}
