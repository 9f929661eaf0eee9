//! The tokenizer under the salary scanner: it turns posting text into amounts,
//! currencies, words, dashes, sentence breaks and other punctuation.
//!
//! Positions are char indices (not byte offsets), so a gap between two tokens is the
//! number of whitespace characters between them.

/// A number as written, with what was glued to it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Amount {
    /// The value, already multiplied by 1,000 for a `k` suffix.
    pub value: f64,
    /// Written with a `k`/`K` suffix (`$120k`).
    pub thousands: bool,
    /// Written with a million/billion suffix (`$5B`, `$100M`, `$2 million`): never pay.
    pub big: bool,
    /// Followed by `%`: never pay.
    pub percent: bool,
    /// Followed directly by `+` (`$150k+`): a lower bound.
    pub plus: bool,
}

/// A currency marker: a symbol (`$`, `€`, `CA$`, ...) or an ISO code (`USD`, `SEK`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Currency {
    /// The ISO 4217 code.
    pub code: &'static str,
    /// A bare `$`: some dollar, USD unless a code says which.
    pub bare_dollar: bool,
}

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    /// A number that may be money.
    Amount(Amount),
    /// A currency symbol or code.
    Currency(Currency),
    /// `-`, `–`, `—` and kin.
    Dash,
    /// A run of letters, lower-cased.
    Word(String),
    /// A newline, a bullet, a `|`, or `.`/`!`/`?`/`;` ending a sentence.
    Break,
    /// Any other character, or a number glued to letters (`B2B`, `2nd`, `k8s`).
    Punct(char),
}

/// A token and where it sits in the text (char indices, `end` exclusive).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Token {
    pub tok: Tok,
    pub start: usize,
    pub end: usize,
}

impl Token {
    /// The lower-cased word, when this token is one.
    pub fn word(&self) -> Option<&str> {
        match &self.tok {
            Tok::Word(w) => Some(w),
            _ => None,
        }
    }
}

/// ISO codes recognized when written in capitals as a word of their own.
const ISO_CODES: &[&str] = &[
    "USD", "EUR", "GBP", "CAD", "AUD", "NZD", "CHF", "SEK", "NOK", "DKK", "INR", "JPY", "SGD",
    "HKD", "PLN",
];

/// Letters written before `$` that name a dollar (`CA$`, `AU$`, ...).
const DOLLAR_PREFIXES: &[(&str, &str)] = &[
    ("US", "USD"),
    ("CA", "CAD"),
    ("C", "CAD"),
    ("A", "AUD"),
    ("AU", "AUD"),
    ("NZ", "NZD"),
    ("S", "SGD"),
    ("SG", "SGD"),
    ("HK", "HKD"),
];

/// Words after a number that make it a million or a billion.
const BIG_WORDS: &[&str] = &[
    "m", "mm", "mn", "mil", "million", "millions", "b", "bn", "billion",
];

/// Splits `text` into tokens. Whitespace separates tokens and is dropped, except
/// newlines, which become [`Tok::Break`].
pub(super) fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        let tok = if c == '\n' || c == '\r' {
            i += 1;
            Tok::Break
        } else if c.is_whitespace() {
            i += 1;
            continue;
        } else if c.is_ascii_digit() {
            let (tok, end) = lex_number(&chars, i);
            i = end;
            tok
        } else if c.is_alphabetic() {
            let (tok, end) = lex_word(&chars, i);
            i = end;
            tok
        } else {
            i += 1;
            lex_symbol(&chars, start)
        };
        // Collapse runs of breaks: one is enough to stop a scan.
        if tok == Tok::Break && tokens.last().is_some_and(|t: &Token| t.tok == Tok::Break) {
            continue;
        }
        tokens.push(Token { tok, start, end: i });
    }
    tokens
}

/// A single non-alphanumeric, non-space character.
fn lex_symbol(chars: &[char], i: usize) -> Tok {
    let next_is_space = chars.get(i + 1).is_none_or(|n| n.is_whitespace());
    match chars[i] {
        '$' => Tok::Currency(Currency {
            code: "USD",
            bare_dollar: true,
        }),
        '€' => currency("EUR"),
        '£' => currency("GBP"),
        '¥' => currency("JPY"),
        '₹' => currency("INR"),
        '-' | '–' | '—' | '‒' | '−' => Tok::Dash,
        '.' if next_is_space => Tok::Break,
        '!' | '?' | ';' | '•' | '·' | '|' => Tok::Break,
        other => Tok::Punct(other),
    }
}

fn currency(code: &'static str) -> Tok {
    Tok::Currency(Currency {
        code,
        bare_dollar: false,
    })
}

/// A run of letters starting at `start`: a word, an ISO code, a dollar prefix
/// (`CA$`), or `p.a.` (per annum).
fn lex_word(chars: &[char], start: usize) -> (Tok, usize) {
    let mut end = start;
    while end < chars.len() && chars[end].is_alphabetic() {
        end += 1;
    }
    let raw: String = chars[start..end].iter().collect();

    if chars.get(end) == Some(&'$') {
        let code = DOLLAR_PREFIXES
            .iter()
            .find(|(prefix, _)| *prefix == raw)
            .map(|(_, code)| *code);
        return match code {
            Some(code) => (currency(code), end + 1),
            // An unknown dollar (`R$`, `MX$`): not one we can name.
            None => (Tok::Punct('$'), end + 1),
        };
    }
    if let Some(code) = ISO_CODES.iter().find(|code| **code == raw) {
        return (currency(code), end);
    }
    if (raw == "p" || raw == "P") && matches_ascii_ci(chars, end, ".a") {
        let mut after = end + 2;
        if chars.get(after) == Some(&'.') {
            after += 1;
        }
        if chars.get(after).is_none_or(|c| !c.is_alphanumeric()) {
            return (Tok::Word("pa".to_owned()), after);
        }
    }
    (Tok::Word(raw.to_lowercase()), end)
}

fn matches_ascii_ci(chars: &[char], at: usize, pattern: &str) -> bool {
    pattern.chars().enumerate().all(|(k, p)| {
        chars
            .get(at + k)
            .is_some_and(|c| c.eq_ignore_ascii_case(&p))
    })
}

/// Characters that may separate groups of three digits.
fn is_group_separator(c: char) -> bool {
    matches!(c, ',' | '.' | ' ' | '\u{a0}' | '\u{202f}' | '\'' | '’')
}

fn is_space_separator(c: char) -> bool {
    matches!(c, ' ' | '\u{a0}' | '\u{202f}')
}

/// How many ASCII digits start at `at`.
fn digit_run(chars: &[char], at: usize) -> usize {
    chars[at.min(chars.len())..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count()
}

/// A number starting at `start` (a digit), with its grouping, decimals and suffixes.
///
/// Grouping: after a first group of 1–3 digits, a separator (`,` `.` space `'`)
/// followed by exactly three digits continues the number; every separator must be the
/// same one. Decimals: one or two digits after `.` (or after `,` when the groups used
/// `.` or spaces, European style).
fn lex_number(chars: &[char], start: usize) -> (Tok, usize) {
    let glued_before = start > 0 && chars[start - 1].is_alphanumeric();
    let first = digit_run(chars, start);
    let mut digits: String = chars[start..start + first].iter().collect();
    let mut i = start + first;

    let mut group: Option<char> = None;
    if first <= 3 {
        while let Some(&sep) = chars.get(i) {
            let same = group.is_none_or(|g| g == sep);
            let three = digit_run(chars, i + 1) == 3;
            let after = chars.get(i + 4).copied();
            let percent_after = is_space_separator(sep) && after == Some('%');
            if !is_group_separator(sep) || !same || !three || percent_after {
                break;
            }
            digits.extend(&chars[i + 1..i + 4]);
            group = Some(sep);
            i += 4;
        }
    }

    if let Some(&sep) = chars.get(i) {
        let decimal_ok = match group {
            Some('.') => sep == ',',
            Some(',') => sep == '.',
            Some(_) | None => sep == '.' || sep == ',',
        };
        let frac = digit_run(chars, i + 1);
        // A comma decimal must have exactly two digits ("45,50"), a point one or two.
        let frac_ok = if sep == ',' {
            frac == 2
        } else {
            (1..=2).contains(&frac)
        };
        if decimal_ok && frac_ok {
            digits.push('.');
            digits.extend(&chars[i + 1..i + 1 + frac]);
            i += 1 + frac;
        }
    }

    let mut amount = Amount {
        value: digits.parse().unwrap_or(f64::NAN),
        thousands: false,
        big: false,
        percent: false,
        plus: false,
    };

    let letters = chars[i..].iter().take_while(|c| c.is_alphabetic()).count();
    if letters > 0 {
        let suffix: String = chars[i..i + letters]
            .iter()
            .collect::<String>()
            .to_lowercase();
        if suffix == "k" {
            amount.thousands = true;
            amount.value *= 1000.0;
        } else if BIG_WORDS.contains(&suffix.as_str()) {
            amount.big = true;
        } else {
            // `2nd`, `10x`, `5yrs`: not an amount.
            return (Tok::Punct('#'), i + letters);
        }
        i += letters;
    }
    if glued_before {
        return (Tok::Punct('#'), i);
    }

    match chars.get(i) {
        Some('%') => amount.percent = true,
        Some('+') => {
            amount.plus = true;
            i += 1;
        }
        _ => {}
    }
    // "50 %", "$2 million", "$3.5 bn": look at the next word without consuming it.
    let mut next = i;
    while chars.get(next).is_some_and(|c| is_space_separator(*c)) {
        next += 1;
    }
    if next > i {
        if chars.get(next) == Some(&'%') {
            amount.percent = true;
        }
        let word: String = chars[next..]
            .iter()
            .take_while(|c| c.is_alphabetic())
            .collect::<String>()
            .to_lowercase();
        if matches!(
            word.as_str(),
            "million" | "millions" | "billion" | "bn" | "mn"
        ) {
            amount.big = true;
        }
    }

    (Tok::Amount(amount), i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amounts(text: &str) -> Vec<f64> {
        tokenize(text)
            .into_iter()
            .filter_map(|t| match t.tok {
                Tok::Amount(a) => Some(a.value),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn numbers_with_every_grouping() {
        assert_eq!(amounts("120,000"), [120_000.0]);
        assert_eq!(amounts("60.000"), [60_000.0]);
        assert_eq!(amounts("95 000 - 110 000"), [95_000.0, 110_000.0]);
        assert_eq!(amounts("1'250'000"), [1_250_000.0]);
        assert_eq!(amounts("120,000.50"), [120_000.5]);
        assert_eq!(amounts("60.000,50"), [60_000.5]);
        assert_eq!(amounts("45.5 and 45,50"), [45.5, 45.5]);
        assert_eq!(amounts("120k"), [120_000.0]);
        assert_eq!(amounts("2015."), [2015.0]);
        assert_eq!(amounts("1,2345"), [1.0, 2345.0]);
    }

    #[test]
    fn glued_numbers_are_not_amounts() {
        assert!(amounts("B2B 2nd k8s").is_empty());
    }

    #[test]
    fn currencies_and_per_annum() {
        let toks: Vec<Tok> = tokenize("CA$1 R$2 SEK p.a.")
            .into_iter()
            .map(|t| t.tok)
            .collect();
        assert_eq!(toks[0], currency("CAD"));
        assert_eq!(toks[2], Tok::Punct('$'));
        assert_eq!(toks[4], currency("SEK"));
        assert_eq!(toks[5], Tok::Word("pa".into()));
    }
}
