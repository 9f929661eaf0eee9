//! Deterministic salary reading: pay ranges from posting text, and pay from an ATS's
//! structured fields.
//!
//! Nothing here guesses. A figure without a currency, a period that neither words nor
//! magnitude settle, or an amount next to words like "raised" or "bonus" yields `None`.
//!
//! Text is read by a hand-written scanner (no regular expressions):
//!
//! 1. The tokenizer turns the text into amounts (`120,000`, `60.000`, `95 000`, `120k`),
//!    currency markers (`$`, `€`, `£`, `¥`, `₹`, `CA$`, `A$`, `AU$`, `NZ$`, `S$`,
//!    `HK$`, and ISO codes written in capitals such as `USD` or `SEK`), words, dashes
//!    and sentence breaks.
//! 2. Each amount takes the currency markers written right before or after it; two
//!    amounts joined by a dash, `to`, or `and` after `between` form a range.
//! 3. The first plausible range wins, else the first plausible single amount.
//!    Plausible means: one currency (a bare `$` is USD unless a dollar code such as
//!    `CAD` is also written), no million/billion suffix or `%`, no "not pay" word
//!    nearby (raised, valuation, bonus, stipend, budget, customers, ...), a period
//!    (from words such as hour/hr/hourly, day, week, month/mo, year/yr/annum/annual,
//!    else by magnitude: a range below 300 is hourly, 10,000 and up is yearly,
//!    anything else is not read; a single amount is hourly only when words say so), an
//!    upper bound at most five times the lower, and a yearly equivalent between 10,000
//!    and 2,000,000 (100,000 and 1,000,000,000 for JPY and INR).

mod lex;
mod scan;

use crate::job::{PayInterval, Salary, SalaryOrigin};

/// The first plausible pay range (or single amount) in posting text, with
/// [`SalaryOrigin::Description`].
///
/// A single amount is both bounds (`$150,000`), only the upper one after "up to", and
/// only the lower one after "from", "at least", "starting at" or with a `+`
/// (`$150k+`). See the [module documentation](self) for what counts as pay.
///
/// ```
/// use job_capabilities::salary::parse_salary_text;
/// use job_capabilities::{PayInterval, SalaryOrigin};
///
/// let salary = parse_salary_text("The base salary range is $160,000 to $200,000 plus equity.")
///     .ok_or("no salary")?;
/// assert_eq!((salary.min, salary.max), (Some(160_000.0), Some(200_000.0)));
/// assert_eq!(salary.currency, "USD");
/// assert_eq!(salary.interval, PayInterval::Year);
/// assert_eq!(salary.origin, SalaryOrigin::Description);
///
/// let hourly = parse_salary_text("€45 - €60 per hour").ok_or("no salary")?;
/// assert_eq!((hourly.currency.as_str(), hourly.interval), ("EUR", PayInterval::Hour));
///
/// assert_eq!(parse_salary_text("We raised $100M and offer a 401(k)."), None);
/// # Ok::<(), &str>(())
/// ```
pub fn parse_salary_text(text: &str) -> Option<Salary> {
    let tokens = lex::tokenize(text);
    let found = scan::find(&tokens)?;
    tracing::trace!(?found, "salary found in text");
    Some(Salary {
        min: found.min,
        max: found.max,
        currency: found.currency.to_owned(),
        interval: found.interval,
        origin: SalaryOrigin::Description,
    })
}

/// Pay from an API's structured fields, with [`SalaryOrigin::Structured`].
///
/// `currency` is an ISO code in any case (`usd`) or a symbol (`$`, `€`, `£`, `¥`,
/// `₹`); `interval` is read by [`parse_interval`]. When the interval is empty or not
/// understood, the magnitude decides as for text (below 300 hourly, 10,000 and up
/// yearly) and anything between yields `None`. Bounds that are not finite positive
/// numbers count as missing.
///
/// Returns `None` when both bounds are missing or the currency is empty or unknown.
///
/// ```
/// use job_capabilities::salary::structured_salary;
/// use job_capabilities::PayInterval;
///
/// let salary = structured_salary(Some(50.0), Some(65.0), "usd", "per-hour-wage").ok_or("none")?;
/// assert_eq!(salary.currency, "USD");
/// assert_eq!(salary.interval, PayInterval::Hour);
/// assert_eq!(salary.annual_max(), Some(65.0 * 2080.0));
///
/// assert_eq!(structured_salary(None, None, "USD", "year"), None);
/// assert_eq!(structured_salary(Some(1.0), None, "", "year"), None);
/// # Ok::<(), &str>(())
/// ```
pub fn structured_salary(
    min: Option<f64>,
    max: Option<f64>,
    currency: &str,
    interval: &str,
) -> Option<Salary> {
    let valid = |v: Option<f64>| v.filter(|v| v.is_finite() && *v > 0.0);
    let (min, max) = (valid(min), valid(max));
    if min.is_none() && max.is_none() {
        return None;
    }
    let currency = currency_code(currency)?;
    let interval = match parse_interval(interval) {
        Some(interval) => interval,
        None => {
            let largest = min.into_iter().chain(max).fold(0.0, f64::max);
            let smallest = min.into_iter().chain(max).fold(f64::INFINITY, f64::min);
            if largest < 300.0 {
                PayInterval::Hour
            } else if smallest >= 10_000.0 {
                PayInterval::Year
            } else {
                tracing::debug!(interval, ?min, ?max, "pay period not understood");
                return None;
            }
        }
    };
    Some(Salary {
        min,
        max,
        currency,
        interval,
        origin: SalaryOrigin::Structured,
    })
}

/// The pay period an API's interval string names, in any case and with any
/// punctuation: `year`, `yearly`, `annual`, `per-year-salary`, `1 YEAR`, `hour`,
/// `hourly`, `per-hour-wage`, `1 HOUR`, `month`, `per-month-salary`, `week`, `day`,
/// `YEARLY`, ... `None` when no word names a period.
///
/// ```
/// use job_capabilities::salary::parse_interval;
/// use job_capabilities::PayInterval;
///
/// assert_eq!(parse_interval("per-year-salary"), Some(PayInterval::Year));
/// assert_eq!(parse_interval("1 HOUR"), Some(PayInterval::Hour));
/// assert_eq!(parse_interval("once"), None);
/// ```
pub fn parse_interval(interval: &str) -> Option<PayInterval> {
    interval
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .find_map(|word| match word.as_str() {
            "hours" => Some(PayInterval::Hour),
            "days" => Some(PayInterval::Day),
            "weeks" | "weekly" => Some(PayInterval::Week),
            "months" => Some(PayInterval::Month),
            "years" => Some(PayInterval::Year),
            other => scan::interval_word(other, false),
        })
}

/// An ISO code from a code in any case or a currency symbol.
fn currency_code(currency: &str) -> Option<String> {
    let currency = currency.trim();
    let code = match currency {
        "$" | "US$" => "USD",
        "€" => "EUR",
        "£" => "GBP",
        "¥" => "JPY",
        "₹" => "INR",
        "CA$" | "C$" => "CAD",
        "A$" | "AU$" => "AUD",
        other if other.len() == 3 && other.chars().all(|c| c.is_ascii_alphabetic()) => {
            return Some(other.to_ascii_uppercase());
        }
        _ => return None,
    };
    Some(code.to_owned())
}
