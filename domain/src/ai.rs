//! AI generation attempts: each attempt's background status, cancel requested versus confirmed, usage and a
//! cost estimate. A cancelled or abandoned generation is not assumed free: every attempt's usage counts for
//! cost; only the adopted one counts as the result.
use super::names::named;
use serde::{Deserialize, Serialize};

/// Tokens one generation used, as the provider reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Usage {
    #[cfg_attr(feature = "ssr", schema(minimum = 0))]
    pub input_tokens: i64,
    #[cfg_attr(feature = "ssr", schema(minimum = 0))]
    pub output_tokens: i64,
}

/// Yen per million tokens, from the connector's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    pub input_yen_per_million: f64,
    pub output_yen_per_million: f64,
}

/// The estimate in millionths of a yen (money stays an integer; one generation often costs under a yen).
pub fn cost_micro_yen(usage: Usage, prices: Prices) -> i64 {
    let micro = usage.input_tokens as f64 * prices.input_yen_per_million
        + usage.output_tokens as f64 * prices.output_yen_per_million;
    micro.round() as i64
}

/// `¥0.31`, `¥1,204.50`: yen with separators and two decimals.
pub fn format_yen(micro_yen: i64) -> String {
    let hundredths = (micro_yen as f64 / 10_000.0).round() as i64;
    let (whole, cents) = (hundredths / 100, (hundredths % 100).abs());
    let digits = whole.abs().to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if micro_yen < 0 { "-" } else { "" };
    format!("{sign}¥{grouped}.{cents:02}")
}

named! {
    /// A generation's background status, in the words of an AI responses API with background mode (stored as
    /// the provider said it; a word outside this list is kept and shown as unknown).
    #[cfg_attr(feature = "ssr", derive(utoipa::ToSchema), schema(rename_all = "snake_case"))]
    pub enum AiStatus {
        Queued => "queued",
        InProgress => "in_progress",
        Completed => "completed",
        Failed => "failed",
        Cancelled => "cancelled",
        /// Stopped part-way (a token limit): output exists and was billed.
        Incomplete => "incomplete",
    }
}

impl AiStatus {
    /// Still generating: a cancel can be asked for.
    pub const RUNNING: [AiStatus; 2] = [AiStatus::Queued, AiStatus::InProgress];

    /// Only a completed generation can be the step's result.
    pub fn may_be_adopted(self) -> bool {
        self == AiStatus::Completed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_counts_input_and_output_at_their_prices() {
        let prices = Prices { input_yen_per_million: 375.0, output_yen_per_million: 1500.0 };
        let usage = Usage { input_tokens: 812, output_tokens: 143 };
        assert_eq!(cost_micro_yen(usage, prices), 812 * 375 + 143 * 1500);
        assert_eq!(format_yen(cost_micro_yen(usage, prices)), "¥0.52");
    }

    #[test]
    fn yen_have_separators_and_two_decimals() {
        assert_eq!(format_yen(1_204_500_000), "¥1,204.50");
        assert_eq!(format_yen(0), "¥0.00");
        assert_eq!(format_yen(4_000_000_000), "¥4,000.00");
    }

    #[test]
    fn only_a_completed_generation_may_be_adopted_and_only_queued_or_running_ones_cancelled() {
        let adoptable: Vec<_> = AiStatus::ALL.iter().filter(|s| s.may_be_adopted()).collect();
        assert_eq!(adoptable, [&AiStatus::Completed]);
        assert_eq!(AiStatus::parse("in_progress"), Some(AiStatus::InProgress));
        assert!(AiStatus::RUNNING.iter().all(|s| !s.may_be_adopted()));
    }
}
