//! Finding pay in tokens: amounts with a currency, joined into ranges, with the pay
//! period read from nearby words and every candidate checked for plausibility.

use super::lex::{Amount, Currency, Tok, Token};
use crate::job::PayInterval;

/// Pay found in text, before it becomes a [`crate::Salary`].
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Found {
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub currency: &'static str,
    pub interval: PayInterval,
}

/// An amount and the currency markers written right before or after it.
#[derive(Debug, Clone)]
struct Money {
    amount: Amount,
    currencies: Vec<Currency>,
    /// Index of the first token (a currency or the amount).
    first: usize,
    /// Index of the last token (the amount or a trailing currency).
    last: usize,
}

/// One or two amounts that read as a unit: `$120k`, `$120k - $150k`.
#[derive(Debug, Clone)]
struct Candidate {
    low: Money,
    high: Option<Money>,
}

impl Candidate {
    fn first(&self) -> usize {
        self.low.first
    }

    fn last(&self) -> usize {
        self.high.as_ref().map_or(self.low.last, |h| h.last)
    }
}

/// Tokens may be this many whitespace characters apart and still be one amount.
const MAX_GAP: usize = 2;

/// Dollar currencies: a bare `$` agrees with any of them.
const DOLLARS: &[&str] = &["USD", "CAD", "AUD", "NZD", "SGD", "HKD"];

/// Currencies whose unit is small enough that yearly pay runs into the millions.
const SMALL_UNITS: &[&str] = &["JPY", "INR"];

/// Words next to an amount that say it is not pay (funding, perks, prices, counts).
#[rustfmt::skip]
const NOT_PAY: &[&str] = &[
    // Funding and company size.
    "raised", "raise", "raising", "funding", "funded", "valuation", "valued", "revenue",
    "revenues", "arr", "investment", "invested", "investors", "customers", "users",
    "employees", "members", "downloads",
    // Perks and one-off payments.
    "bonus", "bonuses", "signing", "sign", "stipend", "allowance", "budget", "credit",
    "credits", "reimbursement", "grant", "grants", "relocation", "referral", "prize", "gift",
    "voucher",
    // Prices and money that is not earned.
    "fee", "fees", "cost", "costs", "price", "donate", "donated", "donation", "saved",
];

/// Words after an amount that end the "what is this amount" look-ahead: what follows
/// them is something else (`$150k plus bonus`).
const JOINERS: &[&str] = &["plus", "and", "with", "or"];

/// The first plausible pay range in the tokens; failing that, the first plausible
/// single amount.
pub(super) fn find(tokens: &[Token]) -> Option<Found> {
    let candidates = candidates(tokens);
    let ranges = candidates.iter().filter(|c| c.high.is_some());
    let singles = candidates.iter().filter(|c| c.high.is_none());
    ranges
        .chain(singles)
        .find_map(|candidate| evaluate(tokens, candidate))
}

/// Every amount with its currency markers, joined with the next one into a range
/// when a dash, `to` (or `and`, after `between`) stands between them. Candidates do
/// not overlap, so the bounds of a rejected range are never taken one by one.
fn candidates(tokens: &[Token]) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let Some(low) = money_at(tokens, i) else {
            i += 1;
            continue;
        };
        let high = range_separator(tokens, &low).and_then(|sep| money_at(tokens, sep + 1));
        let candidate = Candidate { low, high };
        i = candidate.last() + 1;
        out.push(candidate);
    }
    out
}

/// The token after `low` when it joins two amounts into a range.
fn range_separator(tokens: &[Token], low: &Money) -> Option<usize> {
    let at = low.last + 1;
    let token = tokens.get(at)?;
    let joins = match &token.tok {
        Tok::Dash => true,
        Tok::Word(w) if w == "to" || w == "through" => true,
        Tok::Word(w) if w == "and" => {
            let before = low.first.checked_sub(1).and_then(|b| tokens.get(b));
            before.and_then(Token::word) == Some("between")
        }
        _ => false,
    };
    joins.then_some(at)
}

/// An amount starting at `i`, with up to two currency markers right before it and one
/// right after it.
fn money_at(tokens: &[Token], i: usize) -> Option<Money> {
    let mut currencies = Vec::new();
    let mut at = i;
    while let Some(Tok::Currency(c)) = tokens.get(at).map(|t| &t.tok) {
        if currencies.len() == 2 || !adjacent(tokens, at, at + 1) {
            return None;
        }
        currencies.push(*c);
        at += 1;
    }
    let Some(Tok::Amount(amount)) = tokens.get(at).map(|t| &t.tok) else {
        return None;
    };
    let mut last = at;
    if let Some(Tok::Currency(c)) = tokens.get(at + 1).map(|t| &t.tok)
        && adjacent(tokens, at, at + 1)
        // `$150k USD $10k`: that currency belongs to the next amount.
        && !matches!(tokens.get(at + 2).map(|t| &t.tok), Some(Tok::Amount(_)))
    {
        currencies.push(*c);
        last = at + 1;
    }
    Some(Money {
        amount: *amount,
        currencies,
        first: i,
        last,
    })
}

/// Whether tokens `a` and `b` are at most [`MAX_GAP`] characters apart.
fn adjacent(tokens: &[Token], a: usize, b: usize) -> bool {
    match (tokens.get(a), tokens.get(b)) {
        (Some(x), Some(y)) => y.start.saturating_sub(x.end) <= MAX_GAP,
        _ => false,
    }
}

/// The candidate as pay, when it is plausible pay.
fn evaluate(tokens: &[Token], candidate: &Candidate) -> Option<Found> {
    let mut low = candidate.low.amount;
    let mut high = candidate.high.as_ref().map(|h| h.amount);
    let all = std::iter::once(&low).chain(high.as_ref());
    if all
        .clone()
        .any(|a| a.big || a.percent || !a.value.is_finite() || a.value <= 0.0)
    {
        return None;
    }
    if let Some(h) = high.as_mut() {
        share_thousands(&mut low, h);
    }

    let currency = resolve_currency(
        &candidate.low,
        candidate.high.as_ref(),
        written_dollar_code(tokens),
    )?;
    if mentions_not_pay(tokens, candidate) {
        return None;
    }

    let (min, max) = match high {
        Some(h) => {
            if h.value < low.value || h.value > low.value * 5.0 {
                return None;
            }
            (Some(low.value), Some(h.value))
        }
        None => single_bounds(tokens, candidate.first(), &low),
    };
    let values = [min, max];
    let values = values.iter().flatten().copied();
    let smallest = values.clone().fold(f64::INFINITY, f64::min);
    let largest = values.fold(0.0, f64::max);

    let interval = match interval_near(tokens, candidate) {
        Some(interval) => interval,
        None if largest < 300.0 && smallest >= 7.0 && candidate.high.is_some() => PayInterval::Hour,
        None if smallest >= 10_000.0 => PayInterval::Year,
        None => return None,
    };

    let (floor, cap) = if SMALL_UNITS.contains(&currency) {
        (100_000.0, 1e9)
    } else {
        (10_000.0, 2e6)
    };
    let per_year = interval.per_year();
    if smallest * per_year < floor || largest * per_year > cap {
        return None;
    }
    Some(Found {
        min,
        max,
        currency,
        interval,
    })
}

/// `$120-150k`: a `k` on one bound alone applies to both.
fn share_thousands(low: &mut Amount, high: &mut Amount) {
    if high.thousands && !low.thousands && low.value < 1000.0 {
        low.value *= 1000.0;
        low.thousands = true;
    } else if low.thousands && !high.thousands && high.value < 1000.0 {
        high.value *= 1000.0;
        high.thousands = true;
    }
}

/// The one dollar code the text writes anywhere (`$20/hour CAD`: `CAD`), when it writes
/// exactly one; a bare `$` with no code of its own is that currency.
fn written_dollar_code(tokens: &[Token]) -> Option<&'static str> {
    let mut codes = tokens.iter().filter_map(|t| match &t.tok {
        Tok::Currency(c) if !c.bare_dollar && DOLLARS.contains(&c.code) => Some(c.code),
        _ => None,
    });
    let first = codes.next()?;
    codes.all(|code| code == first).then_some(first)
}

/// The one currency the markers agree on. A bare `$` agrees with any dollar code
/// (`$130,000 CAD`), and alone it is `bare_dollar` (the dollar code the text writes
/// elsewhere, else USD); two different symbols or codes do not agree.
fn resolve_currency(
    low: &Money,
    high: Option<&Money>,
    bare_dollar_code: Option<&'static str>,
) -> Option<&'static str> {
    let markers = low
        .currencies
        .iter()
        .chain(high.iter().flat_map(|h| h.currencies.iter()));
    let mut named: Option<&'static str> = None;
    let mut bare_dollar = false;
    for marker in markers {
        if marker.bare_dollar {
            bare_dollar = true;
        } else if named.is_some_and(|n| n != marker.code) {
            return None;
        } else {
            named = Some(marker.code);
        }
    }
    match named {
        Some(code) if bare_dollar && !DOLLARS.contains(&code) => None,
        Some(code) => Some(code),
        None if bare_dollar => Some(bare_dollar_code.unwrap_or("USD")),
        None => None,
    }
}

/// A single amount's bounds: `up to $X` is a maximum; `from $X`, `at least $X`,
/// `starting at $X` and `$X+` are a minimum; otherwise the amount is both.
fn single_bounds(tokens: &[Token], first: usize, amount: &Amount) -> (Option<f64>, Option<f64>) {
    let word = |back: usize| {
        first
            .checked_sub(back)
            .and_then(|i| tokens.get(i))
            .and_then(Token::word)
    };
    let value = Some(amount.value);
    match (word(2), word(1)) {
        (Some("up"), Some("to")) | (_, Some("max" | "maximum")) => (None, value),
        (Some("at"), Some("least"))
        | (Some("starting" | "starts"), Some("at"))
        | (_, Some("from" | "min" | "minimum")) => (value, None),
        _ if amount.plus => (value, None),
        _ => (value, value),
    }
}

/// Whether the words right around the candidate say it is not pay: up to four words
/// before it, and up to two after it (stopping at `plus`, `and`, `+`, `,`, ...).
fn mentions_not_pay(tokens: &[Token], candidate: &Candidate) -> bool {
    let before = words_before(tokens, candidate.first(), 4);
    let mut after = Vec::new();
    for token in tokens.iter().skip(candidate.last() + 1) {
        match &token.tok {
            Tok::Word(w) if JOINERS.contains(&w.as_str()) => break,
            Tok::Word(w) => after.push(w.as_str()),
            Tok::Dash | Tok::Punct('/') => {}
            _ => break,
        }
        if after.len() == 2 {
            break;
        }
    }
    before
        .into_iter()
        .chain(after)
        .any(|w| NOT_PAY.contains(&w))
}

/// Up to `limit` words before token `first`, nearest first, within the sentence.
fn words_before(tokens: &[Token], first: usize, limit: usize) -> Vec<&str> {
    let mut words = Vec::new();
    for token in tokens[..first.min(tokens.len())].iter().rev() {
        match &token.tok {
            Tok::Word(w) => words.push(w.as_str()),
            Tok::Break | Tok::Amount(_) => break,
            _ => {}
        }
        if words.len() == limit {
            break;
        }
    }
    words
}

/// The pay period named by words after the candidate (up to four words, within the
/// sentence), or failing that by words before it (up to four).
fn interval_near(tokens: &[Token], candidate: &Candidate) -> Option<PayInterval> {
    let mut seen = 0;
    let mut after_slash = false;
    for token in tokens.iter().skip(candidate.last() + 1) {
        match &token.tok {
            Tok::Word(w) => {
                if let Some(interval) = interval_word(w, after_slash) {
                    return Some(interval);
                }
                seen += 1;
                if seen == 4 {
                    break;
                }
            }
            Tok::Break | Tok::Amount(_) | Tok::Currency(_) => break,
            Tok::Dash | Tok::Punct(_) => {}
        }
        after_slash = token.tok == Tok::Punct('/');
    }
    words_before(tokens, candidate.first(), 4)
        .into_iter()
        .find_map(|w| interval_word(w, false))
}

/// The pay period a word names. A lone `h` or `d` counts only right after `/`
/// (`€50/h`).
pub(super) fn interval_word(word: &str, after_slash: bool) -> Option<PayInterval> {
    match word {
        "hour" | "hr" | "hourly" => Some(PayInterval::Hour),
        "h" if after_slash => Some(PayInterval::Hour),
        "day" | "daily" => Some(PayInterval::Day),
        "d" if after_slash => Some(PayInterval::Day),
        "week" | "weekly" | "wk" => Some(PayInterval::Week),
        "month" | "monthly" | "mo" | "mth" => Some(PayInterval::Month),
        "year" | "yearly" | "yr" | "annum" | "annual" | "annually" | "pa" => {
            Some(PayInterval::Year)
        }
        _ => None,
    }
}
