//! Clean-up of extracted text.

use unicode_normalization::UnicodeNormalization;

/// A list item's text, its marker ("-", "*", "•", "–", "·") and the spaces after it
/// removed; other lines trimmed.
///
/// ```
/// use job_capabilities::documents::strip_bullet;
/// assert_eq!(strip_bullet("  • Led 4 people "), "Led 4 people");
/// assert_eq!(strip_bullet("Plain line"), "Plain line");
/// ```
pub fn strip_bullet(line: &str) -> &str {
    let trimmed = line.trim();
    trimmed
        .strip_prefix(['-', '*', '•', '–', '·'])
        .map_or(trimmed, str::trim_start)
}

/// Clean text extracted from a document, so that words, lines and paragraphs survive and
/// layout artefacts do not:
///
/// - NFKC normalization (ligatures such as "ﬁ" become "fi", no-break and other Unicode
///   spaces become plain spaces);
/// - soft hyphens (U+00AD) and zero-width characters dropped; U+2010 and U+2011 hyphens
///   become `-`, or vanish right after a `-` (Word writes "-", U+00AD, U+2010 for one
///   hyphen);
/// - private-use characters (U+E000 to U+F8FF and the supplementary private-use planes,
///   which icon fonts use) removed;
/// - other control characters dropped; form feeds and Unicode line separators end a line;
/// - every run of spaces, tabs, carriage returns and no-break spaces becomes one space;
/// - each line trimmed; runs of blank lines collapsed to one blank line; leading and
///   trailing blank lines removed. The result has no trailing newline.
///
/// ```
/// use job_capabilities::documents::normalize_text;
/// let raw = "\n\n  Jane\t\r \u{a0}Doe  \n\u{f0e0} jane@example.com\n\n\n\n\
///            Of\u{fb01}ce \u{2010} lead\u{ad}er\n";
/// assert_eq!(normalize_text(raw), "Jane Doe\njane@example.com\n\nOffice - leader");
/// ```
pub fn normalize_text(raw: &str) -> String {
    let mut cleaned = String::with_capacity(raw.len());
    for c in raw.nfkc() {
        match c {
            '\u{ad}' | '\u{200b}' | '\u{2060}' | '\u{feff}' => {}
            // Word writes a hyphen as "-", a soft hyphen and U+2010: keep one.
            '\u{2010}' | '\u{2011}' if cleaned.ends_with('-') => {}
            '\u{2010}' | '\u{2011}' => cleaned.push('-'),
            '\n' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}' => cleaned.push('\n'),
            ' ' | '\t' | '\r' | '\u{a0}' => cleaned.push(' '),
            c if is_private_use(c) => cleaned.push(' '),
            c if c.is_control() => {}
            c if c.is_whitespace() => cleaned.push(' '),
            c => cleaned.push(c),
        }
    }

    let mut out = String::with_capacity(cleaned.len());
    let mut blank_pending = false;
    for line in cleaned.split('\n') {
        let line = line.trim();
        if line.is_empty() {
            blank_pending = !out.is_empty();
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
            if blank_pending {
                out.push('\n');
            }
        }
        blank_pending = false;
        push_collapsing_spaces(&mut out, line);
    }
    out
}

/// Appends `line` with every run of spaces shortened to one.
fn push_collapsing_spaces(out: &mut String, line: &str) {
    let mut previous_space = false;
    for c in line.chars() {
        let space = c == ' ';
        if !(space && previous_space) {
            out.push(c);
        }
        previous_space = space;
    }
}

/// Private-use code points: the Basic Multilingual Plane area and planes 15 and 16.
fn is_private_use(c: char) -> bool {
    matches!(c, '\u{e000}'..='\u{f8ff}' | '\u{f0000}'..='\u{ffffd}' | '\u{100000}'..='\u{10fffd}')
}

#[cfg(test)]
mod tests {
    use super::normalize_text;

    #[test]
    fn resume_pdf_space_artefact_collapses() {
        assert_eq!(
            normalize_text("Jane\t\r \u{a0}Doe\t\r \u{a0}Smith"),
            "Jane Doe Smith"
        );
    }

    #[test]
    fn crlf_text_keeps_its_lines() {
        assert_eq!(normalize_text("a\r\nb\r\n\r\nc\r\n"), "a\nb\n\nc");
    }

    #[test]
    fn icons_between_words_leave_a_space() {
        assert_eq!(
            normalize_text("555-1234\u{f0e0}jane@example.com"),
            "555-1234 jane@example.com"
        );
    }

    #[test]
    fn word_hyphen_triplet_is_one_hyphen() {
        assert_eq!(
            normalize_text("(909) 555-\u{ad}\u{2010}5555 on\u{2010}campus"),
            "(909) 555-5555 on-campus"
        );
    }

    #[test]
    fn only_whitespace_is_empty() {
        assert_eq!(normalize_text(" \n\t\r\n\u{a0}\u{f0e0}\n"), "");
    }

    #[test]
    fn idempotent() {
        let once = normalize_text("  A\u{fb02}ow \n\n\n\n b\u{2011}c ");
        assert_eq!(normalize_text(&once), once);
    }
}
