//! What calls cost: USD per million tokens, by model.

use crate::types::Usage;
use std::collections::BTreeMap;

/// Prices of one model in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ModelPrice {
    /// Uncached input.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Input read from the prompt cache.
    pub cache_read: f64,
    /// Input written to the prompt cache.
    pub cache_write: f64,
}

impl ModelPrice {
    /// A price; cache reads and writes priced separately.
    pub const fn new(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Self {
        ModelPrice {
            input,
            output,
            cache_read,
            cache_write,
        }
    }

    /// The cost of `usage` at this price.
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_read_input_tokens as f64 * self.cache_read
            + usage.cache_creation_input_tokens as f64 * self.cache_write)
            / 1_000_000.0
    }
}

/// No price is known for a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no price known for model {model:?}; add one with PricingTable::with_price")]
pub struct UnknownModel {
    /// The model id asked about.
    pub model: String,
}

/// List prices (USD per million tokens) as published by the vendors in 2025-2026.
/// Anthropic cache writes are the 5-minute rate (1.25x input); OpenAI-style providers do
/// not bill cache writes separately, so their write price equals the input price.
const BUILTIN: &[(&str, ModelPrice)] = &[
    ("claude-opus-4-5", ModelPrice::new(5.0, 25.0, 0.5, 6.25)),
    ("claude-opus-4-1", ModelPrice::new(15.0, 75.0, 1.5, 18.75)),
    ("claude-opus-4", ModelPrice::new(15.0, 75.0, 1.5, 18.75)),
    ("claude-sonnet-4-5", ModelPrice::new(3.0, 15.0, 0.3, 3.75)),
    ("claude-sonnet-4", ModelPrice::new(3.0, 15.0, 0.3, 3.75)),
    ("claude-3-7-sonnet", ModelPrice::new(3.0, 15.0, 0.3, 3.75)),
    ("claude-haiku-4-5", ModelPrice::new(1.0, 5.0, 0.1, 1.25)),
    ("claude-3-5-haiku", ModelPrice::new(0.8, 4.0, 0.08, 1.0)),
    ("gpt-5", ModelPrice::new(1.25, 10.0, 0.125, 1.25)),
    ("gpt-5.1", ModelPrice::new(1.25, 10.0, 0.125, 1.25)),
    ("gpt-5-mini", ModelPrice::new(0.25, 2.0, 0.025, 0.25)),
    ("gpt-5-nano", ModelPrice::new(0.05, 0.4, 0.005, 0.05)),
    ("gpt-4.1", ModelPrice::new(2.0, 8.0, 0.5, 2.0)),
    ("gpt-4.1-mini", ModelPrice::new(0.4, 1.6, 0.1, 0.4)),
    ("gpt-4.1-nano", ModelPrice::new(0.1, 0.4, 0.025, 0.1)),
    ("gpt-4o", ModelPrice::new(2.5, 10.0, 1.25, 2.5)),
    ("gpt-4o-mini", ModelPrice::new(0.15, 0.6, 0.075, 0.15)),
    ("deepseek-chat", ModelPrice::new(0.28, 0.42, 0.028, 0.28)),
    (
        "deepseek-reasoner",
        ModelPrice::new(0.28, 0.42, 0.028, 0.28),
    ),
    ("glm-4.7", ModelPrice::new(0.6, 2.2, 0.11, 0.6)),
    ("glm-4.6", ModelPrice::new(0.6, 2.2, 0.11, 0.6)),
    ("glm-4.5-air", ModelPrice::new(0.2, 1.1, 0.03, 0.2)),
    ("glm-4.7-flashx", ModelPrice::new(0.07, 0.4, 0.01, 0.07)),
    ("glm-4.7-flash", ModelPrice::new(0.0, 0.0, 0.0, 0.0)),
    (
        "text-embedding-3-small",
        ModelPrice::new(0.02, 0.0, 0.0, 0.02),
    ),
    (
        "text-embedding-3-large",
        ModelPrice::new(0.13, 0.0, 0.0, 0.13),
    ),
];

/// Prices by model id.
///
/// A model id matches an entry exactly or as the entry followed by a version suffix
/// (`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`, `...-latest`); `gpt-4o-mini` is
/// never priced as `gpt-4o`. An unknown model is an error, never a cost of zero.
///
/// ```
/// use agent_llm::{PricingTable, Usage};
/// let table = PricingTable::default();
/// let usage = Usage { input_tokens: 1_000_000, output_tokens: 0, cache_read_input_tokens: 1_000_000, cache_creation_input_tokens: 0 };
/// assert_eq!(table.cost("claude-sonnet-4-5-20250929", &usage).unwrap(), 3.3);
/// assert!(table.cost("my-private-model", &usage).is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PricingTable {
    prices: BTreeMap<String, ModelPrice>,
}

impl Default for PricingTable {
    /// The built-in list prices.
    fn default() -> Self {
        PricingTable {
            prices: BUILTIN
                .iter()
                .map(|(model, price)| ((*model).to_owned(), *price))
                .collect(),
        }
    }
}

impl PricingTable {
    /// A table with no prices.
    pub fn empty() -> Self {
        PricingTable {
            prices: BTreeMap::new(),
        }
    }

    /// Adds or replaces a model's price.
    pub fn with_price(mut self, model: impl Into<String>, price: ModelPrice) -> Self {
        self.prices.insert(model.into(), price);
        self
    }

    /// The price of a model, if known.
    pub fn price(&self, model: &str) -> Option<&ModelPrice> {
        if let Some(price) = self.prices.get(model) {
            return Some(price);
        }
        self.prices
            .iter()
            .filter(|(known, _)| {
                model
                    .strip_prefix(known.as_str())
                    .is_some_and(is_version_suffix)
            })
            .max_by_key(|(known, _)| known.len())
            .map(|(_, price)| price)
    }

    /// The cost of `usage` on `model`, in USD.
    pub fn cost(&self, model: &str, usage: &Usage) -> Result<f64, UnknownModel> {
        self.price(model)
            .map(|price| price.cost(usage))
            .ok_or_else(|| UnknownModel {
                model: model.to_owned(),
            })
    }
}

/// `-20250929`, `-2024-08-06`, `-latest` or `@20250929`.
fn is_version_suffix(suffix: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if suffix == "-latest" {
        return true;
    }
    if let Some(date) = suffix
        .strip_prefix('-')
        .or_else(|| suffix.strip_prefix('@'))
    {
        let parts: Vec<&str> = date.split('-').collect();
        return match parts.as_slice() {
            [compact] => compact.len() == 8 && digits(compact),
            [y, m, d] => {
                y.len() == 4 && m.len() == 2 && d.len() == 2 && [y, m, d].iter().all(|p| digits(p))
            }
            _ => false,
        };
    }
    false
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn usage(input: u64, output: u64, read: u64, write: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_input_tokens: read,
            cache_creation_input_tokens: write,
        }
    }

    #[test]
    fn cache_reads_and_writes_are_counted() {
        let table = PricingTable::default();
        let cost = table
            .cost("claude-haiku-4-5", &usage(1000, 2000, 10_000, 4000))
            .unwrap();
        // 1000*1 + 2000*5 + 10000*0.1 + 4000*1.25 = 17000 per million
        assert!((cost - 0.017).abs() < 1e-12);
    }

    #[test]
    fn dated_ids_match_but_other_variants_do_not() {
        let table = PricingTable::default();
        assert_eq!(table.price("gpt-4o-2024-08-06"), table.price("gpt-4o"));
        assert_eq!(
            table.price("gpt-4o-mini-2024-07-18"),
            table.price("gpt-4o-mini")
        );
        assert_ne!(table.price("gpt-4o-mini"), table.price("gpt-4o"));
        assert!(table.price("gpt-5-pro").is_none());
        assert!(table.price("claude-sonnet-4-5@20250929").is_some());
        assert_eq!(
            table.cost("unknown", &Usage::default()),
            Err(UnknownModel {
                model: "unknown".into()
            })
        );
    }

    #[test]
    fn custom_prices_override() {
        let table = PricingTable::empty().with_price("mine", ModelPrice::new(1.0, 1.0, 0.0, 0.0));
        assert_eq!(
            table.cost("mine", &usage(500_000, 500_000, 0, 0)).unwrap(),
            1.0
        );
    }
}
