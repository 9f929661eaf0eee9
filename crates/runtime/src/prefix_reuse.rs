//! [`PrefixReuse`]: of the input tokens sent, how many repeated the previous call of the
//! same loop from its start, the part a provider's prompt cache can serve.

use agent_llm::PromptLayout;
use serde::{Deserialize, Serialize};

/// Input tokens sent, and how many of them were a byte-identical prefix of the previous
/// call in the same loop (an agent loop's previous round; for one-off calls, the
/// previous call of the same step). Counted by [`CostMeter`](crate::CostMeter).
///
/// ```
/// use agent_llm::{ChatRequest, Message, PromptLayout};
/// use agent_runtime::PrefixReuse;
/// let first = ChatRequest::from_prompt("Plan the trip.").with_system("You plan trips.");
/// let mut second = first.clone();
/// second.messages.push(Message::assistant("Where to?"));
/// let (a, b) = (PromptLayout::of(&first), PromptLayout::of(&second));
/// let reuse = PrefixReuse::of_call(&a, None, 100) + PrefixReuse::of_call(&b, Some(&a), 120);
/// assert_eq!(reuse.input_tokens, 220);
/// assert!(reuse.share().unwrap() > 0.3 && reuse.share().unwrap() < 0.55);
/// assert_eq!(PrefixReuse::default().share(), None);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrefixReuse {
    /// Input tokens of the calls counted (cached or not).
    pub input_tokens: u64,
    /// Of those, the tokens that repeated the previous call's prompt from its start.
    pub repeated_tokens: u64,
}

impl PrefixReuse {
    /// One call of `prompt_tokens` input tokens laid out as `layout`, after `previous`
    /// (`None` for a loop's first call: nothing repeats).
    pub fn of_call(
        layout: &PromptLayout,
        previous: Option<&PromptLayout>,
        prompt_tokens: u64,
    ) -> Self {
        PrefixReuse {
            input_tokens: prompt_tokens,
            repeated_tokens: previous.map_or(0, |previous| {
                layout.repeated_tokens(previous, prompt_tokens)
            }),
        }
    }

    /// The repeated share of the input, `None` before any input.
    pub fn share(&self) -> Option<f64> {
        (self.input_tokens > 0).then(|| self.repeated_tokens as f64 / self.input_tokens as f64)
    }

    /// What `self` counted beyond `earlier`.
    pub fn saturating_sub(&self, earlier: &PrefixReuse) -> PrefixReuse {
        PrefixReuse {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            repeated_tokens: self.repeated_tokens.saturating_sub(earlier.repeated_tokens),
        }
    }
}

impl std::ops::Add for PrefixReuse {
    type Output = PrefixReuse;
    fn add(self, other: PrefixReuse) -> PrefixReuse {
        PrefixReuse {
            input_tokens: self.input_tokens + other.input_tokens,
            repeated_tokens: self.repeated_tokens + other.repeated_tokens,
        }
    }
}

impl std::ops::AddAssign for PrefixReuse {
    fn add_assign(&mut self, other: PrefixReuse) {
        *self = *self + other;
    }
}
