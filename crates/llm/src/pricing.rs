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

    /// A model that costs nothing (a local one).
    pub const FREE: ModelPrice = ModelPrice::new(0.0, 0.0, 0.0, 0.0);

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
/// [`PricingTable::from_env`] adds prices from configuration to the built-in list.
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
    /// Prices from `LLM_PRICE_<MODEL>` variables, by `<MODEL>`.
    configured: BTreeMap<String, ModelPrice>,
}

impl Default for PricingTable {
    /// The built-in list prices.
    fn default() -> Self {
        PricingTable {
            prices: BUILTIN
                .iter()
                .map(|(model, price)| ((*model).to_owned(), *price))
                .collect(),
            configured: BTreeMap::new(),
        }
    }
}

impl PricingTable {
    /// A table with no prices.
    pub fn empty() -> Self {
        PricingTable {
            prices: BTreeMap::new(),
            configured: BTreeMap::new(),
        }
    }

    /// Adds or replaces a model's price.
    pub fn with_price(mut self, model: impl Into<String>, price: ModelPrice) -> Self {
        self.prices.insert(model.into(), price);
        self
    }

    /// The built-in prices, with those configured in the environment added or replacing
    /// them (see [`PricingTable::from_lookup`]).
    pub fn from_env() -> Result<Self, PricingConfigError> {
        PricingTable::from_lookup(
            std::env::vars().filter(|(name, _)| name.starts_with(PRICE_VAR_PREFIX)),
            |name| std::env::var(name).ok(),
        )
    }

    /// The built-in prices plus configured ones:
    ///
    /// - `LLM_PRICING_FILE`: a JSON object from model id to price, each either
    ///   `{"input": 0.4, "output": 1.6, "cache_read": 0.1, "cache_write": 0.4}` (USD per
    ///   million tokens; the cache prices default to the input price) or `"free"`;
    /// - `LLM_PRICE_<MODEL>`: one model's price as `input,output[,cache_read[,cache_write]]`
    ///   or `free`, `<MODEL>` being the model id in upper case with every other character
    ///   than a letter or digit written `_` (`LLM_PRICE_QWEN2_5_CODER_1_5B=free`).
    ///
    /// Variables win over the file, the file over the built-in list. `vars` are the
    /// `LLM_PRICE_*` variables, `lookup` reads any other.
    ///
    /// ```
    /// use agent_llm::{PricingTable, ModelPrice};
    /// let vars = [("LLM_PRICE_QWEN2_5_CODER_1_5B".to_owned(), "free".to_owned()),
    ///             ("LLM_PRICE_MY_MODEL".to_owned(), "0.5, 2".to_owned())];
    /// let table = PricingTable::from_lookup(vars, |_| None).unwrap();
    /// assert_eq!(table.price("qwen2.5-coder-1.5b"), Some(&ModelPrice::FREE));
    /// assert_eq!(table.price("my-model"), Some(&ModelPrice::new(0.5, 2.0, 0.5, 0.5)));
    /// assert!(PricingTable::from_lookup([("LLM_PRICE_X".to_owned(), "cheap".to_owned())], |_| None).is_err());
    /// ```
    pub fn from_lookup(
        vars: impl IntoIterator<Item = (String, String)>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, PricingConfigError> {
        let mut table = PricingTable::default();
        if let Some(path) = lookup(PRICING_FILE_VAR).filter(|path| !path.trim().is_empty()) {
            table.prices.extend(read_pricing_file(path.trim())?);
        }
        for (name, value) in vars {
            let Some(key) = name.strip_prefix(PRICE_VAR_PREFIX) else {
                continue;
            };
            let price = parse_price(&value).map_err(|reason| PricingConfigError::Variable {
                name: name.clone(),
                reason,
            })?;
            table.configured.insert(key.to_owned(), price);
        }
        Ok(table)
    }

    /// The price of a model, if known.
    pub fn price(&self, model: &str) -> Option<&ModelPrice> {
        if let Some(price) = self.configured.get(&price_var_key(model)) {
            return Some(price);
        }
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

/// The variable naming a JSON pricing file.
pub const PRICING_FILE_VAR: &str = "LLM_PRICING_FILE";

/// The prefix of the variables that price one model each.
pub const PRICE_VAR_PREFIX: &str = "LLM_PRICE_";

/// A price in the configuration could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PricingConfigError {
    /// The pricing file could not be read.
    #[error("cannot read the pricing file {path} ({PRICING_FILE_VAR}): {source}")]
    File {
        /// Its path.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The pricing file is not a JSON object of prices.
    #[error(
        "the pricing file {path} ({PRICING_FILE_VAR}) is not a JSON object of prices: {reason}"
    )]
    FileFormat {
        /// Its path.
        path: String,
        /// What is wrong, with the line and column.
        reason: String,
    },
    /// An `LLM_PRICE_<MODEL>` variable does not hold a price.
    #[error("{name}: {reason}")]
    Variable {
        /// The variable.
        name: String,
        /// What is wrong.
        reason: String,
    },
}

/// The `<MODEL>` of `LLM_PRICE_<MODEL>` for a model id.
///
/// ```
/// assert_eq!(agent_llm::pricing::price_var_key("qwen2.5-coder-1.5b"), "QWEN2_5_CODER_1_5B");
/// ```
pub fn price_var_key(model: &str) -> String {
    model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// `free`, or `input,output[,cache_read[,cache_write]]` in USD per million tokens.
fn parse_price(text: &str) -> Result<ModelPrice, String> {
    if text.trim().eq_ignore_ascii_case("free") {
        return Ok(ModelPrice::FREE);
    }
    let numbers = text
        .split(',')
        .map(|part| {
            part.trim()
                .parse::<f64>()
                .ok()
                .filter(|n| n.is_finite() && *n >= 0.0)
                .ok_or_else(|| {
                    format!("{:?} is not a price in USD per million tokens", part.trim())
                })
        })
        .collect::<Result<Vec<f64>, String>>()?;
    match numbers.as_slice() {
        [input, output] => Ok(ModelPrice::new(*input, *output, *input, *input)),
        [input, output, read] => Ok(ModelPrice::new(*input, *output, *read, *input)),
        [input, output, read, write] => Ok(ModelPrice::new(*input, *output, *read, *write)),
        _ => Err(format!(
            "{text:?} is not `free` or `input,output[,cache_read[,cache_write]]` (USD per million tokens)"
        )),
    }
}

/// One entry of a pricing file.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum FilePrice {
    Keyword(String),
    Price {
        input: f64,
        output: f64,
        cache_read: Option<f64>,
        cache_write: Option<f64>,
    },
}

fn read_pricing_file(path: &str) -> Result<BTreeMap<String, ModelPrice>, PricingConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| PricingConfigError::File {
        path: path.to_owned(),
        source,
    })?;
    let format_error = |reason: String| PricingConfigError::FileFormat {
        path: path.to_owned(),
        reason,
    };
    let entries: BTreeMap<String, FilePrice> =
        serde_json::from_str(&text).map_err(|e| format_error(e.to_string()))?;
    entries
        .into_iter()
        .map(|(model, entry)| {
            let price = match entry {
                FilePrice::Keyword(word) if word.eq_ignore_ascii_case("free") => ModelPrice::FREE,
                FilePrice::Keyword(word) => {
                    return Err(format_error(format!(
                        "{model}: {word:?} is not a price (an object or \"free\")"
                    )));
                }
                FilePrice::Price {
                    input,
                    output,
                    cache_read,
                    cache_write,
                } => ModelPrice::new(
                    input,
                    output,
                    cache_read.unwrap_or(input),
                    cache_write.unwrap_or(input),
                ),
            };
            Ok((model, price))
        })
        .collect()
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
    fn configured_prices_come_from_a_file_and_variables_variables_winning() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prices.json");
        std::fs::write(
            &path,
            r#"{"gpt-4.1": {"input": 1.0, "output": 4.0}, "qwen2.5-coder-1.5b": "free", "mine": {"input": 2, "output": 3, "cache_read": 0.5}}"#,
        )
        .unwrap();
        let file = path.to_str().unwrap().to_owned();
        let vars = [("LLM_PRICE_MINE".to_owned(), "7,8".to_owned())];
        let table = PricingTable::from_lookup(vars, |name| {
            (name == PRICING_FILE_VAR).then(|| file.clone())
        })
        .unwrap();
        assert_eq!(
            table.price("gpt-4.1-2025-04-14"),
            Some(&ModelPrice::new(1.0, 4.0, 1.0, 1.0))
        );
        assert_eq!(table.price("qwen2.5-coder-1.5b"), Some(&ModelPrice::FREE));
        assert_eq!(
            table.price("mine"),
            Some(&ModelPrice::new(7.0, 8.0, 7.0, 7.0))
        );
        assert!(table.price("claude-haiku-4-5").is_some());
    }

    #[test]
    fn a_bad_price_names_where_it_came_from() {
        let error =
            PricingTable::from_lookup([("LLM_PRICE_M".to_owned(), "1,x".to_owned())], |_| None)
                .unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"LLM_PRICE_M: "x" is not a price in USD per million tokens"#
        );
        let error =
            PricingTable::from_lookup(Vec::new(), |_| Some("/nonexistent/prices.json".into()))
                .unwrap_err();
        assert!(
            error.to_string().starts_with(
                "cannot read the pricing file /nonexistent/prices.json (LLM_PRICING_FILE)"
            ),
            "{error}"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prices.json");
        std::fs::write(&path, r#"{"m": "cheap"}"#).unwrap();
        let file = path.to_str().unwrap().to_owned();
        let error = PricingTable::from_lookup(Vec::new(), |_| Some(file.clone())).unwrap_err();
        assert!(
            error.to_string().contains(r#"m: "cheap" is not a price"#),
            "{error}"
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
