//! Salary reading from posting text and from structured API fields.
#![cfg(test)]

use job_capabilities::salary::{parse_interval, parse_salary_text, structured_salary};
use job_capabilities::{PayInterval, Salary, SalaryOrigin};

use PayInterval::{Day, Hour, Month, Week, Year};

/// `(text, Some((min, max, currency, interval)))` or `(text, None)`.
type Case = (&'static str, Expected);

type Expected = Option<(Option<f64>, Option<f64>, &'static str, PayInterval)>;

fn range(min: f64, max: f64, currency: &'static str, interval: PayInterval) -> Expected {
    Some((Some(min), Some(max), currency, interval))
}

fn positives() -> Vec<Case> {
    vec![
        (
            "$120,000 - $150,000",
            range(120_000.0, 150_000.0, "USD", Year),
        ),
        (
            "$120,000–$150,000 USD",
            range(120_000.0, 150_000.0, "USD", Year),
        ),
        (
            "$120K - $150K per year",
            range(120_000.0, 150_000.0, "USD", Year),
        ),
        (
            "$180k–$220k + equity",
            range(180_000.0, 220_000.0, "USD", Year),
        ),
        (
            "USD 150,000 to 190,000",
            range(150_000.0, 190_000.0, "USD", Year),
        ),
        ("€60.000 - €75.000", range(60_000.0, 75_000.0, "EUR", Year)),
        ("€60,000", range(60_000.0, 60_000.0, "EUR", Year)),
        (
            "£45,000 - £55,000 per annum",
            range(45_000.0, 55_000.0, "GBP", Year),
        ),
        (
            "CA$110,000 - CA$130,000",
            range(110_000.0, 130_000.0, "CAD", Year),
        ),
        ("$45 - $60 per hour", range(45.0, 60.0, "USD", Hour)),
        ("$50/hr", range(50.0, 50.0, "USD", Hour)),
        (
            "8,000 - 10,000 EUR per month",
            range(8_000.0, 10_000.0, "EUR", Month),
        ),
        (
            "The base salary range for this role is $160,000 to $200,000",
            range(160_000.0, 200_000.0, "USD", Year),
        ),
        (
            "Salary: 95 000 - 110 000 SEK",
            range(95_000.0, 110_000.0, "SEK", Year),
        ),
        ("$150,000", range(150_000.0, 150_000.0, "USD", Year)),
        // More phrasings seen in postings.
        (
            "Pay range: $45-60/hr depending on experience.",
            range(45.0, 60.0, "USD", Hour),
        ),
        ("$120-150k DOE", range(120_000.0, 150_000.0, "USD", Year)),
        (
            "A$140,000 – A$160,000 + super",
            range(140_000.0, 160_000.0, "AUD", Year),
        ),
        ("AU$95k - AU$110k", range(95_000.0, 110_000.0, "AUD", Year)),
        (
            "NZ$90,000 - NZ$105,000",
            range(90_000.0, 105_000.0, "NZD", Year),
        ),
        (
            "S$7,000 - S$9,000 monthly",
            range(7_000.0, 9_000.0, "SGD", Month),
        ),
        (
            "HK$45,000 - 60,000 per month",
            range(45_000.0, 60_000.0, "HKD", Month),
        ),
        (
            "$110,000 - $130,000 CAD",
            range(110_000.0, 130_000.0, "CAD", Year),
        ),
        (
            "$20–$22/hour CAD (about $40,000–$44,000 a year)",
            range(20.0, 22.0, "CAD", Hour),
        ),
        (
            "CHF 120'000 - 140'000",
            range(120_000.0, 140_000.0, "CHF", Year),
        ),
        (
            "60 000 € - 70 000 € brut annuel",
            range(60_000.0, 70_000.0, "EUR", Year),
        ),
        ("€50/h freelance", range(50.0, 50.0, "EUR", Hour)),
        (
            "£350 - £450 per day (outside IR35)",
            range(350.0, 450.0, "GBP", Day),
        ),
        (
            "$2,000 - $2,500 a week",
            range(2_000.0, 2_500.0, "USD", Week),
        ),
        (
            "₹1,500,000 - ₹2,000,000 per annum",
            range(1_500_000.0, 2_000_000.0, "INR", Year),
        ),
        (
            "Compensation: between $90,000 and $110,000 annually",
            range(90_000.0, 110_000.0, "USD", Year),
        ),
        ("Hourly rate: $35 - $42", range(35.0, 42.0, "USD", Hour)),
        (
            "¥6,000,000 - ¥8,000,000",
            range(6_000_000.0, 8_000_000.0, "JPY", Year),
        ),
        (
            "£40,000 - £50,000 p.a. + benefits",
            range(40_000.0, 50_000.0, "GBP", Year),
        ),
        (
            "$120,000.00 - $150,000.00 per year",
            range(120_000.0, 150_000.0, "USD", Year),
        ),
        ("Up to $180,000", Some((None, Some(180_000.0), "USD", Year))),
        (
            "Starting at $85,000 per year",
            Some((Some(85_000.0), None, "USD", Year)),
        ),
        ("$150k+ base", Some((Some(150_000.0), None, "USD", Year))),
        // The range wins over an earlier single amount; the bonus is not pay.
        (
            "A $10,000 signing bonus. Salary: $130,000 - $160,000.",
            range(130_000.0, 160_000.0, "USD", Year),
        ),
        // Funding mentioned first, then pay.
        (
            "We raised $100M in 2021 and are 10,000+ customers strong. Pay: $140k to $170k.",
            range(140_000.0, 170_000.0, "USD", Year),
        ),
        // A range split across bullets is two things, not a range.
        (
            "- $120,000\n- 401(k) match",
            range(120_000.0, 120_000.0, "USD", Year),
        ),
    ]
}

fn negatives() -> Vec<&'static str> {
    vec![
        "401(k) with 4% match",
        "Founded in 2015, we now serve 10,000+ customers.",
        "After our $5B valuation we raised $100M.",
        "We raised $100 million in Series C funding.",
        "raised $2,000,000 from investors",
        "2-3 years of experience, 50% remote",
        "Call +1 (555) 123-4567 or 555-123-4567",
        "Posted 2024-03-15, closes 03/15/2024",
        "Salary: 120,000 - 150,000",
        "Competitive salary and benefits",
        "$1,000 learning budget and $500 home office stipend",
        "$5,000 annual bonus",
        "$2,500 - $5,000 signing bonus",
        "$45",
        "$500 - $700",
        "$100,000 - €120,000",
        "€60,000 - $70,000",
        "$120,000 per hour",
        "$1 - $2 per item",
        "Revenue of $50,000,000 a year",
        "$3.5 bn ARR",
        "Education allowance of up to $5,250 per year",
        "We donated $1,000,000 last year",
        "$20,000 in grants",
        "Free lunches worth $3,000 per year",
        "Earn $500 per referral",
        "Series B ($30M) led by investors",
        "B2B SaaS with 2nd-round funding",
        "",
    ]
}

fn check(text: &str, expected: Expected) -> Result<(), String> {
    let got = parse_salary_text(text);
    let got_tuple = got
        .as_ref()
        .map(|s| (s.min, s.max, s.currency.as_str(), s.interval));
    if got_tuple != expected {
        return Err(format!(
            "{text:?}: expected {expected:?}, got {got_tuple:?}"
        ));
    }
    if let Some(salary) = got
        && salary.origin != SalaryOrigin::Description
    {
        return Err(format!("{text:?}: origin {:?}", salary.origin));
    }
    Ok(())
}

#[test]
fn salary_text_table() {
    let mut failures = Vec::new();
    let cases = positives();
    let negatives = negatives();
    assert!(cases.len() + negatives.len() >= 30);
    for (text, expected) in cases {
        if let Err(e) = check(text, expected) {
            failures.push(e);
        }
    }
    for text in negatives {
        if let Err(e) = check(text, None) {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn annualized_bounds_follow_the_interval() {
    let hourly = parse_salary_text("$45 - $60 per hour").unwrap();
    assert_eq!(hourly.annual_min(), Some(45.0 * 2080.0));
    assert_eq!(hourly.annual_max(), Some(60.0 * 2080.0));
    let monthly = parse_salary_text("8,000 - 10,000 EUR per month").unwrap();
    assert_eq!(monthly.annual_max(), Some(120_000.0));
}

#[test]
fn salary_in_a_long_description() {
    let text = "About us\nFounded in 2015, Acme has 250 employees and raised $40M.\n\
        What you'll do\n- Build APIs (2-3 years of Rust)\n- 50% remote\n\
        Benefits\n- 401(k) with 4% match\n- $1,500 learning budget\n\
        Compensation\nThe base salary range for this role is $160,000 to $200,000, \
        plus equity and a $10k signing bonus.";
    let salary = parse_salary_text(text).unwrap();
    assert_eq!(
        salary,
        Salary {
            min: Some(160_000.0),
            max: Some(200_000.0),
            currency: "USD".into(),
            interval: Year,
            origin: SalaryOrigin::Description,
        }
    );
}

#[test]
fn structured_salary_reads_intervals_and_currencies() {
    let cases: &[(&str, PayInterval)] = &[
        ("year", Year),
        ("yearly", Year),
        ("annual", Year),
        ("per-year-salary", Year),
        ("1 YEAR", Year),
        ("YEARLY", Year),
        ("hour", Hour),
        ("hourly", Hour),
        ("per-hour-wage", Hour),
        ("1 HOUR", Hour),
        ("month", Month),
        ("per-month-salary", Month),
        ("MONTHLY", Month),
        ("week", Week),
        ("1 WEEK", Week),
        ("day", Day),
        ("DAILY", Day),
    ];
    for (interval, expected) in cases {
        assert_eq!(parse_interval(interval), Some(*expected), "{interval}");
        let salary = structured_salary(Some(100.0), Some(200.0), "usd", interval).unwrap();
        assert_eq!(salary.interval, *expected, "{interval}");
        assert_eq!(salary.currency, "USD");
        assert_eq!(salary.origin, SalaryOrigin::Structured);
    }
    assert_eq!(parse_interval("once"), None);
    assert_eq!(parse_interval(""), None);
}

#[test]
fn structured_salary_refuses_missing_data() {
    assert_eq!(structured_salary(None, None, "USD", "year"), None);
    assert_eq!(structured_salary(Some(100_000.0), None, "", "year"), None);
    assert_eq!(structured_salary(Some(100_000.0), None, "  ", "year"), None);
    assert_eq!(
        structured_salary(Some(100_000.0), None, "dollars", "year"),
        None
    );
    assert_eq!(
        structured_salary(Some(f64::NAN), Some(0.0), "USD", "year"),
        None
    );
    // No period, and a magnitude that does not settle it.
    assert_eq!(structured_salary(Some(5_000.0), None, "EUR", ""), None);
}

#[test]
fn structured_salary_keeps_one_bound_and_falls_back_on_magnitude() {
    let s = structured_salary(None, Some(150_000.0), "€", "").unwrap();
    assert_eq!(
        s,
        Salary {
            min: None,
            max: Some(150_000.0),
            currency: "EUR".into(),
            interval: Year,
            origin: SalaryOrigin::Structured,
        }
    );
    let s = structured_salary(Some(25.0), None, "gbp", "whatever").unwrap();
    assert_eq!((s.currency.as_str(), s.interval), ("GBP", Hour));
}
