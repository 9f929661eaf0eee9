//! [`CostSummary`]: what a product's run cost, per unit of its work, in one line every
//! product prints the same way.

use std::fmt;

use crate::cost::CostSnapshot;

/// A [`CostSnapshot`] told what its work was: tokens, the cached-prefix share, and the
/// cost, in all and per unit (a job, an optimization, a resume session, a chat turn).
///
/// ```
/// use agent_llm::Usage;
/// use agent_runtime::{CostLimits, CostMeter, PrefixReuse};
/// let meter = CostMeter::new(CostLimits::default());
/// meter.record("claude-haiku-4-5", Usage { input_tokens: 40_000, output_tokens: 10_000, ..Default::default() });
/// meter.record_prefix(PrefixReuse { input_tokens: 40_000, repeated_tokens: 30_000 });
/// let line = meter.snapshot().per_unit("job", 50).to_string();
/// assert_eq!(
///     line,
///     "50,000 tokens (40,000 in, 10,000 out; 75% of input a repeated prefix), $0.0900: 1,000 tokens and $0.0018 per job"
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CostSummary {
    /// Input tokens, cached or not.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// The share of input that repeated the previous call of its loop, if any input.
    pub repeated_share: Option<f64>,
    /// USD of the priced models.
    pub usd: f64,
    /// Models without a price (their cost is not in `usd`).
    pub unpriced_models: Vec<String>,
    /// What one unit of work is called.
    pub unit: String,
    /// Units of work done.
    pub units: u64,
}

impl CostSummary {
    /// Input and output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Tokens per unit, `None` with no unit done.
    pub fn tokens_per_unit(&self) -> Option<u64> {
        (self.units > 0).then(|| self.total_tokens().div_ceil(self.units))
    }

    /// USD per unit, `None` with no unit done.
    pub fn usd_per_unit(&self) -> Option<f64> {
        (self.units > 0).then(|| self.usd / self.units as f64)
    }
}

impl CostSnapshot {
    /// This spending as the cost of `units` units of work called `unit`.
    pub fn per_unit(&self, unit: &str, units: u64) -> CostSummary {
        CostSummary {
            input_tokens: self.usage.prompt_tokens(),
            output_tokens: self.usage.output_tokens,
            repeated_share: self.prefix_reuse.share(),
            usd: self.usd,
            unpriced_models: self.unpriced_models.clone(),
            unit: unit.to_owned(),
            units,
        }
    }
}

/// `1234567` as `1,234,567`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

impl fmt::Display for CostSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} tokens ({} in, {} out",
            grouped(self.total_tokens()),
            grouped(self.input_tokens),
            grouped(self.output_tokens)
        )?;
        if let Some(share) = self.repeated_share {
            write!(f, "; {:.0}% of input a repeated prefix", share * 100.0)?;
        }
        f.write_str(")")?;
        let cost = if self.unpriced_models.is_empty() {
            format!("${:.4}", self.usd)
        } else {
            format!(
                "cost unknown (no price for {})",
                self.unpriced_models.join(", ")
            )
        };
        match (self.tokens_per_unit(), self.usd_per_unit()) {
            (Some(tokens), Some(usd)) if self.unpriced_models.is_empty() => write!(
                f,
                ", {cost}: {} tokens and ${usd:.4} per {}",
                grouped(tokens),
                self.unit
            ),
            (Some(tokens), _) => {
                write!(f, ", {cost}: {} tokens per {}", grouped(tokens), self.unit)
            }
            _ => write!(f, ", {cost}; no {} done", self.unit),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(95_757), "95,757");
        assert_eq!(grouped(1_234_567), "1,234,567");
    }

    #[test]
    fn an_unpriced_model_says_so_and_no_work_says_none() {
        let summary = CostSummary {
            input_tokens: 900,
            output_tokens: 100,
            repeated_share: None,
            usd: 0.0,
            unpriced_models: vec!["local-qwen".into()],
            unit: "chat turn".into(),
            units: 4,
        };
        assert_eq!(
            summary.to_string(),
            "1,000 tokens (900 in, 100 out), cost unknown (no price for local-qwen): 250 tokens per chat turn"
        );
        let idle = CostSummary {
            units: 0,
            unpriced_models: Vec::new(),
            ..summary
        };
        assert_eq!(
            idle.to_string(),
            "1,000 tokens (900 in, 100 out), $0.0000; no chat turn done"
        );
    }
}
