//! Plain-text decoding: UTF-8, UTF-16 with a byte-order mark, or Windows-1252.

use super::{DocumentError, DocumentKind};

/// Above this share of invalid bytes a file is not taken for damaged UTF-8.
const MAX_INVALID_UTF8_PERCENT: usize = 10;

/// Above this share of control characters a file is taken for binary data.
const MAX_CONTROL_PERCENT: usize = 5;

fn unreadable(reason: &str) -> DocumentError {
    DocumentError::unreadable(DocumentKind::Txt, reason)
}

/// The text of a plain-text file, with its line endings made `\n`, not yet normalized.
///
/// UTF-8 (a byte-order mark is dropped) is read as is; UTF-16 needs a byte-order mark.
/// Bytes that are not UTF-8 are read as Windows-1252 when the file holds no UTF-8
/// sequence at all (a legacy Western file), else replaced with U+FFFD when they are few.
/// Anything else, or text full of control characters, is binary data.
pub(super) fn decode(bytes: &[u8]) -> Result<String, DocumentError> {
    let text = if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        decode_8bit(rest)?
    } else if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        decode_utf16(rest, u16::from_le_bytes)
    } else if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        decode_utf16(rest, u16::from_be_bytes)
    } else {
        decode_8bit(bytes)?
    };

    let total = text.chars().count();
    let control = text
        .chars()
        .filter(|&c| c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\u{c}'))
        .count();
    if control * 100 > total * MAX_CONTROL_PERCENT {
        return Err(unreadable(
            "it is binary data, not text; save the resume as UTF-8 text, PDF or DOCX",
        ));
    }
    Ok(unify_line_endings(text))
}

/// UTF-8, damaged UTF-8 or Windows-1252.
fn decode_8bit(bytes: &[u8]) -> Result<String, DocumentError> {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Ok(text.to_owned());
    }
    let mut multibyte = 0usize;
    let mut invalid = 0usize;
    for chunk in bytes.utf8_chunks() {
        multibyte += chunk.valid().chars().filter(|c| !c.is_ascii()).count();
        invalid += chunk.invalid().len();
    }
    if multibyte == 0 {
        tracing::debug!(invalid, "text is not UTF-8; reading it as Windows-1252");
        return Ok(bytes.iter().map(|&b| windows_1252(b)).collect());
    }
    if invalid * 100 <= bytes.len() * MAX_INVALID_UTF8_PERCENT {
        tracing::warn!(invalid, "text has invalid UTF-8; replacing those bytes");
        return Ok(String::from_utf8_lossy(bytes).into_owned());
    }
    Err(unreadable(
        "it is neither UTF-8 text nor a known encoding (it may be binary data); \
         save the resume as UTF-8 text, PDF or DOCX",
    ))
}

/// UTF-16 in the byte order `unit` reads; a trailing odd byte and unpaired surrogates
/// become U+FFFD.
fn decode_utf16(bytes: &[u8], unit: fn([u8; 2]) -> u16) -> String {
    let units = bytes.chunks(2).map(|pair| match pair {
        [a, b] => unit([*a, *b]),
        _ => 0xFFFD,
    });
    char::decode_utf16(units)
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

/// `\r\n` becomes `\n`, and so does a lone `\r` in a file that has no `\n` at all
/// (classic Mac line endings).
fn unify_line_endings(text: String) -> String {
    let text = if text.contains("\r\n") {
        text.replace("\r\n", "\n")
    } else {
        text
    };
    if text.contains('\r') && !text.contains('\n') {
        text.replace('\r', "\n")
    } else {
        text
    }
}

/// A Windows-1252 byte as a character; the five undefined bytes become U+FFFD.
fn windows_1252(byte: u8) -> char {
    const HIGH: [char; 32] = [
        '€', '\u{fffd}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{fffd}', 'Ž',
        '\u{fffd}', '\u{fffd}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ',
        '\u{fffd}', 'ž', 'Ÿ',
    ];
    match byte {
        0x80..=0x9F => HIGH[usize::from(byte - 0x80)],
        _ => char::from(byte),
    }
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn windows_1252_is_read_as_such() {
        assert_eq!(
            decode(b"Caf\xE9 \x93quoted\x94 \x96 x").ok().as_deref(),
            Some("Café “quoted” – x")
        );
    }

    #[test]
    fn utf16_with_bom_is_read() {
        let mut bytes = vec![0xFF, 0xFE];
        bytes.extend("Jané\r\nDoe".encode_utf16().flat_map(u16::to_le_bytes));
        assert_eq!(decode(&bytes).ok().as_deref(), Some("Jané\nDoe"));
    }

    #[test]
    fn a_few_bad_bytes_in_utf8_are_replaced() {
        let mut bytes = "Zoë Müller, Zürich \u{2014} engineer ".as_bytes().to_vec();
        bytes.push(0xFF);
        assert_eq!(
            decode(&bytes).ok().as_deref(),
            Some("Zoë Müller, Zürich \u{2014} engineer \u{fffd}")
        );
    }

    #[test]
    fn classic_mac_line_endings_become_newlines() {
        assert_eq!(decode(b"a\rb\rc").ok().as_deref(), Some("a\nb\nc"));
    }
}
