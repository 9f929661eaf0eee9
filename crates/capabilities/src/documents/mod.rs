//! Resume text from PDF, DOCX and plain-text files.
//!
//! [`read_resume_text`] reads a file, recognises its kind by its content (then by its
//! extension), extracts the text and normalizes it with [`normalize_text`]. Every failure
//! is a [`DocumentError`] whose message is one line a user understands and names the file.
//!
//! - PDF: text through `pdf-extract` (reading order and whole lines), page by page, with
//!   parser panics caught. A PDF that needs a password is [`DocumentError::Encrypted`];
//!   one that only restricts permissions (empty user password) opens normally. A PDF
//!   without a text layer (a scan) is [`DocumentError::Empty`].
//! - DOCX: `word/document.xml` (plus page headers and footers) walked with `quick-xml`:
//!   paragraphs, runs, tabs and breaks; list items (Word numbering or a list style) as
//!   "• item"; text boxes once, deleted revisions left out. [`docx_paragraphs`] gives the
//!   body's paragraphs with their styles.
//! - TXT (also `.md`, `.text`): UTF-8 (byte-order mark stripped), UTF-16 with a byte-order
//!   mark, or Windows-1252; binary data is refused.
//!
//! Inputs above [`MAX_DOCUMENT_BYTES`] are refused before they are read.

mod docx;
mod docx_writer;
mod normalize;
mod pdf;
mod text;

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub use docx::{DocxParagraph, docx_paragraphs};
pub use docx_writer::{DocxError, DocxStyle, build_docx, check_docx_paragraphs, document_xml};
pub use normalize::{normalize_text, strip_bullet};

/// The largest document accepted, in bytes (20 MiB). A resume is far smaller; anything
/// bigger is refused with [`DocumentError::TooLarge`] before it is read.
pub const MAX_DOCUMENT_BYTES: u64 = 20 * 1024 * 1024;

/// The kinds of document resume text can be extracted from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DocumentKind {
    /// A PDF file with a text layer.
    Pdf,
    /// A Word document in Office Open XML format (`.docx`).
    Docx,
    /// Plain text: `.txt`, `.text` or Markdown `.md`.
    Txt,
}

impl DocumentKind {
    /// The kind a file name's extension stands for, case-insensitively: `pdf`; `docx`;
    /// `txt`, `text` and `md`. `None` for any other extension or none.
    ///
    /// ```
    /// use std::path::Path;
    /// use job_capabilities::documents::DocumentKind;
    /// assert_eq!(DocumentKind::from_path(Path::new("cv/Jane.PDF")), Some(DocumentKind::Pdf));
    /// assert_eq!(DocumentKind::from_path(Path::new("notes.md")), Some(DocumentKind::Txt));
    /// assert_eq!(DocumentKind::from_path(Path::new("old.doc")), None);
    /// ```
    pub fn from_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "pdf" => Some(Self::Pdf),
            "docx" => Some(Self::Docx),
            "txt" | "text" | "md" => Some(Self::Txt),
            _ => None,
        }
    }

    /// The kind the content's magic bytes show: `%PDF-` within the first 1024 bytes is a
    /// PDF; a ZIP archive holding `word/document.xml` is a DOCX. Plain text has no magic,
    /// so this never returns [`DocumentKind::Txt`].
    ///
    /// ```
    /// use job_capabilities::documents::DocumentKind;
    /// assert_eq!(DocumentKind::sniff(b"%PDF-1.7\n..."), Some(DocumentKind::Pdf));
    /// assert_eq!(DocumentKind::sniff(b"Jane Doe, engineer"), None);
    /// ```
    pub fn sniff(bytes: &[u8]) -> Option<Self> {
        if pdf::has_pdf_header(bytes) {
            Some(Self::Pdf)
        } else if bytes.starts_with(b"PK\x03\x04") && contains(bytes, b"word/document.xml") {
            Some(Self::Docx)
        } else {
            None
        }
    }

    /// A short name for messages: `PDF`, `DOCX` or `plain text`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Pdf => "PDF",
            Self::Docx => "DOCX",
            Self::Txt => "plain text",
        }
    }
}

impl fmt::Display for DocumentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Why no resume text could be had from a document. Each message is one line that names
/// the file when there is one (errors from [`extract_text`], which sees only bytes, say
/// "the document" instead; [`read_resume_text`] fills the path in).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentError {
    /// The file could not be opened or read.
    #[error("could not read resume file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// Neither the content nor the extension is PDF, DOCX or plain text.
    #[error(
        "unsupported resume file {}: {description}; use a PDF, DOCX or plain-text (.txt, .md) file",
        path.display()
    )]
    UnsupportedFormat {
        /// The file.
        path: PathBuf,
        /// What the file appears to be, for the user.
        description: String,
    },
    /// The document needs a password to open.
    #[error(
        "{} is password-protected; save a copy without a password and try again",
        file_label(path.as_deref(), "the document")
    )]
    Encrypted {
        /// The file, when the document came from one.
        path: Option<PathBuf>,
    },
    /// The document opened but holds no text, e.g. a scanned PDF made only of images.
    #[error("{}", empty_message(path.as_deref(), *kind))]
    Empty {
        /// The file, when the document came from one.
        path: Option<PathBuf>,
        /// The kind of document.
        kind: DocumentKind,
    },
    /// The document is damaged or is not what its kind says.
    #[error(
        "could not read {} as {kind}: {reason}",
        file_label(path.as_deref(), "the document")
    )]
    Unreadable {
        /// The file, when the document came from one.
        path: Option<PathBuf>,
        /// The kind the document was read as.
        kind: DocumentKind,
        /// What is wrong, for the user.
        reason: String,
    },
    /// The document is larger than [`MAX_DOCUMENT_BYTES`].
    #[error(
        "{} is too large for a resume ({:.1} MB; the limit is {:.0} MB)",
        file_label(path.as_deref(), "the document"),
        mebibytes(*size),
        mebibytes(*limit)
    )]
    TooLarge {
        /// The file, when the document came from one.
        path: Option<PathBuf>,
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
}

impl DocumentError {
    /// The file the error is about, if known.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::Io { path, .. } | Self::UnsupportedFormat { path, .. } => Some(path),
            Self::Encrypted { path }
            | Self::Empty { path, .. }
            | Self::Unreadable { path, .. }
            | Self::TooLarge { path, .. } => path.as_deref(),
        }
    }

    /// The same error, naming `file` if it named none.
    fn in_file(mut self, file: &Path) -> Self {
        match &mut self {
            Self::Io { .. } | Self::UnsupportedFormat { .. } => {}
            Self::Encrypted { path }
            | Self::Empty { path, .. }
            | Self::Unreadable { path, .. }
            | Self::TooLarge { path, .. } => {
                if path.is_none() {
                    *path = Some(file.to_path_buf());
                }
            }
        }
        self
    }

    pub(crate) fn unreadable(kind: DocumentKind, reason: impl Into<String>) -> Self {
        Self::Unreadable {
            path: None,
            kind,
            reason: reason.into(),
        }
    }
}

fn file_label(path: Option<&Path>, fallback: &str) -> String {
    match path {
        Some(path) => path.display().to_string(),
        None => fallback.to_owned(),
    }
}

fn empty_message(path: Option<&Path>, kind: DocumentKind) -> String {
    match kind {
        DocumentKind::Pdf => format!(
            "{} has no extractable text: no text layer; scanned documents need OCR",
            file_label(path, "the PDF")
        ),
        DocumentKind::Docx | DocumentKind::Txt => {
            format!("{} contains no text", file_label(path, "the document"))
        }
    }
}

fn mebibytes(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The normalized text of the resume in the file at `path`.
///
/// The kind is taken from the content's magic bytes ([`DocumentKind::sniff`]), then from
/// the extension ([`DocumentKind::from_path`]). The text is extracted with
/// [`extract_text`] and normalized with [`normalize_text`].
///
/// # Errors
///
/// [`DocumentError::Io`] if the file cannot be read, [`DocumentError::TooLarge`] above
/// [`MAX_DOCUMENT_BYTES`], [`DocumentError::UnsupportedFormat`] if it is not PDF, DOCX or
/// text, and otherwise the errors of [`extract_text`], naming the file.
///
/// ```no_run
/// use std::path::Path;
/// use job_capabilities::documents::{read_resume_text, DocumentError};
///
/// let outcome = match read_resume_text(Path::new("resume.pdf")) {
///     Ok(text) => text,
///     // A scanned PDF: "resume.pdf has no extractable text: no text layer; ..."
///     Err(err @ DocumentError::Empty { .. }) => format!("needs OCR: {err}"),
///     Err(err) => err.to_string(),
/// };
/// # let _ = outcome;
/// ```
pub fn read_resume_text(path: &Path) -> Result<String, DocumentError> {
    let bytes = read_capped(path)?;
    read_resume_bytes(&bytes, path)
}

/// The normalized text of a resume held in memory (an upload, a chat attachment),
/// `name` being the file's name as given (or any path): its kind is taken from the
/// content's magic bytes, then from the name's extension; errors name the file as
/// `name`. Nothing is read from disk.
///
/// ```
/// use std::path::Path;
/// use job_capabilities::documents::{read_resume_bytes, DocumentError};
/// let text = read_resume_bytes(b"Jane Doe\nEngineer", Path::new("cv.txt"))?;
/// assert_eq!(text, "Jane Doe\nEngineer");
/// let refused = read_resume_bytes(b"\x00\x01binary", Path::new("cv.bin")).unwrap_err();
/// assert!(refused.to_string().contains("cv.bin"));
/// # Ok::<(), DocumentError>(())
/// ```
pub fn read_resume_bytes(bytes: &[u8], name: &Path) -> Result<String, DocumentError> {
    let path = name;
    let started = Instant::now();
    let size = bytes.len() as u64;
    if size > MAX_DOCUMENT_BYTES {
        return Err(DocumentError::TooLarge {
            path: Some(path.to_path_buf()),
            size,
            limit: MAX_DOCUMENT_BYTES,
        });
    }
    let Some(kind) = DocumentKind::sniff(bytes).or_else(|| DocumentKind::from_path(path)) else {
        return Err(DocumentError::UnsupportedFormat {
            path: path.to_path_buf(),
            description: describe_unknown(path, bytes),
        });
    };
    tracing::debug!(path = %path.display(), %kind, bytes = bytes.len(), "reading resume");
    let text = extract_text(bytes, kind).map_err(|err| err.in_file(path))?;
    tracing::debug!(
        path = %path.display(),
        %kind,
        chars = text.chars().count(),
        elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
        "resume text extracted"
    );
    Ok(text)
}

/// The normalized text of a document held in memory, read as `kind`.
///
/// # Errors
///
/// [`DocumentError::TooLarge`] above [`MAX_DOCUMENT_BYTES`];
/// [`DocumentError::Encrypted`] for a PDF or Office file that needs a password;
/// [`DocumentError::Unreadable`] for damaged input, binary data posing as text, or a ZIP
/// archive without `word/document.xml`; [`DocumentError::Empty`] when no text remains
/// after normalization (for a PDF: no text layer, the document needs OCR).
///
/// ```
/// use job_capabilities::documents::{extract_text, DocumentError, DocumentKind};
///
/// let text = extract_text(b"\xEF\xBB\xBF  Jane Doe \r\n\r\n\r\n\r\nEngineer", DocumentKind::Txt)?;
/// assert_eq!(text, "Jane Doe\n\nEngineer");
///
/// let err = extract_text(b"not a zip", DocumentKind::Docx).unwrap_err();
/// assert!(matches!(err, DocumentError::Unreadable { .. }));
/// # Ok::<(), DocumentError>(())
/// ```
pub fn extract_text(bytes: &[u8], kind: DocumentKind) -> Result<String, DocumentError> {
    let size = bytes.len() as u64;
    if size > MAX_DOCUMENT_BYTES {
        return Err(DocumentError::TooLarge {
            path: None,
            size,
            limit: MAX_DOCUMENT_BYTES,
        });
    }
    let raw = match kind {
        DocumentKind::Pdf => pdf::extract(bytes)?,
        DocumentKind::Docx => docx::extract(bytes)?,
        DocumentKind::Txt => text::decode(bytes)?,
    };
    let text = normalize_text(&raw);
    if text.is_empty() {
        return Err(DocumentError::Empty { path: None, kind });
    }
    Ok(text)
}

/// The whole file, refusing files above [`MAX_DOCUMENT_BYTES`] without reading them.
fn read_capped(path: &Path) -> Result<Vec<u8>, DocumentError> {
    let io_error = |source| DocumentError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io_error)?;
    let metadata = file.metadata().map_err(io_error)?;
    if metadata.is_dir() {
        return Err(io_error(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "it is a directory, not a file",
        )));
    }
    let too_large = |size| DocumentError::TooLarge {
        path: Some(path.to_path_buf()),
        size,
        limit: MAX_DOCUMENT_BYTES,
    };
    if metadata.len() > MAX_DOCUMENT_BYTES {
        return Err(too_large(metadata.len()));
    }
    // The size can change under us; never read more than one byte past the limit.
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(MAX_DOCUMENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > MAX_DOCUMENT_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// What an unsupported file seems to be, for [`DocumentError::UnsupportedFormat`].
fn describe_unknown(path: &Path, bytes: &[u8]) -> String {
    const OLE: &[u8] = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1";
    if bytes.starts_with(OLE) {
        return "it is a legacy Microsoft Office file (such as .doc); save it as .docx or PDF"
            .to_owned();
    }
    if bytes.starts_with(b"{\\rtf") {
        return "it is an RTF document; save it as .docx or PDF".to_owned();
    }
    if bytes.starts_with(b"PK\x03\x04") {
        if contains(bytes, b"application/vnd.oasis.opendocument") {
            return "it is an OpenDocument file; save it as .docx or PDF".to_owned();
        }
        return "it is a ZIP archive but not a Word document".to_owned();
    }
    if bytes.starts_with(b"\x89PNG")
        || bytes.starts_with(b"\xFF\xD8\xFF")
        || bytes.starts_with(b"GIF8")
    {
        return "it is an image; a scanned resume needs OCR before its text can be read".to_owned();
    }
    match path.extension().and_then(|ext| ext.to_str()) {
        Some(ext) => format!("'.{ext}' files are not supported and the content is not recognised"),
        None => "the file has no extension and its content is not recognised".to_owned(),
    }
}

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty()
        && haystack
            .windows(needle.len())
            .any(|window| window == needle)
}
