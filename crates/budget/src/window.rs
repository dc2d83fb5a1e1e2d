//! The window projection: what a round adds to the context window, before it is sent.

use mcpl_lanes::{Part, ToolResultCopies};

use crate::route::{Pricer, Unpriceable};

/// What one round appends: its tool results as their live copies will be sent, and the text
/// and messages injected with it.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Round<'r, 'a> {
    /// The round's tool results, fitted.
    pub tool_results: Vec<&'r ToolResultCopies<'a>>,
    /// Text injected into the round (user-position injections as text, system text).
    pub injected_text: Vec<&'r str>,
    /// Messages the round adds as parts (push events, channel messages, user injections).
    pub messages: Vec<&'r [Part<'a>]>,
}

/// The tokens a round appends on a route: each tool result as its live copy will be sent (a
/// string counts its text; native blocks count each text and each image at the route's price;
/// an image that goes as stored text counts only as that text), plus injected text and
/// messages. A host compares this with the model's context window before it sends.
pub fn project_round(pricer: Pricer<'_>, round: &Round<'_, '_>) -> Result<u64, Unpriceable> {
    let mut total = 0;
    for copies in &round.tool_results {
        total += pricer.live(&copies.live, &copies.stored)?;
    }
    for text in &round.injected_text {
        total += pricer.text.count(text);
    }
    for parts in &round.messages {
        total += pricer.parts(parts)?;
    }
    Ok(total)
}

/// A bounded correction of estimates from a provider's own counts, since provider usage is
/// authoritative: the ratio of the input tokens a provider reported for a request to mcpl's
/// estimate of it, kept between 1.0 and 2.0, by which later estimates of the window are
/// multiplied and by which a result's budget is divided before it is fitted
/// ([`Correction::budget`]). Never below 1.0, so a provider that counts fewer tokens never loosens the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Correction {
    milli: u64,
}

impl Default for Correction {
    fn default() -> Correction {
        Correction::NONE
    }
}

impl Correction {
    /// No correction: a factor of 1.0.
    pub const NONE: Correction = Correction { milli: 1000 };
    /// The largest correction: a factor of 2.0.
    pub const MAX: Correction = Correction { milli: 2000 };

    /// Takes a provider's report: `reported` input tokens for a request estimated at
    /// `estimated`. The latest report sets the factor, within its bounds; a request estimated
    /// at nothing says nothing.
    pub fn observe(&mut self, estimated: u64, reported: u64) {
        if estimated > 0 {
            let ratio = reported.saturating_mul(1000).div_ceil(estimated);
            self.milli = ratio.clamp(Correction::NONE.milli, Correction::MAX.milli);
        }
    }

    /// An estimate corrected, rounded up.
    pub fn apply(self, tokens: u64) -> u64 {
        let corrected = (u128::from(tokens) * u128::from(self.milli)).div_ceil(1000);
        u64::try_from(corrected).unwrap_or(u64::MAX)
    }

    /// The most estimated tokens a result may cost so that, corrected, it costs at most
    /// `budget`: what a result is fitted to, so a budget holds by the provider's count too.
    pub fn budget(self, budget: u64) -> u64 {
        let held = u128::from(budget) * 1000 / u128::from(self.milli);
        u64::try_from(held).unwrap_or(u64::MAX)
    }

    /// The factor, in thousandths.
    pub fn milli(self) -> u64 {
        self.milli
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_correction_follows_the_provider_within_its_bounds() {
        let mut correction = Correction::default();
        assert_eq!(correction.apply(1_001), 1_001);
        correction.observe(1_000, 1_300);
        assert_eq!(
            (correction.milli(), correction.apply(1_001)),
            (1_300, 1_302)
        );
        correction.observe(1_000, 9_000);
        assert_eq!(correction, Correction::MAX);
        correction.observe(1_000, 400);
        assert_eq!(correction, Correction::NONE);
        correction.observe(0, 400);
        assert_eq!(correction, Correction::NONE);
        correction.observe(3, u64::MAX);
        assert_eq!(correction, Correction::MAX);
        assert_eq!(Correction::MAX.apply(u64::MAX), u64::MAX);
    }

    #[test]
    fn a_budget_is_held_by_the_corrected_count() {
        let mut correction = Correction::NONE;
        assert_eq!(correction.budget(12_500), 12_500);
        correction.observe(1_000, 1_300);
        // 9,615 tokens corrected are 12,499.5, rounded up to 12,500; one more would pass it.
        assert_eq!(correction.budget(12_500), 9_615);
        assert_eq!(correction.apply(9_615), 12_500);
        assert_eq!(correction.apply(9_616), 12_501);
        assert_eq!(Correction::MAX.budget(2_001), 1_000);
        assert_eq!(Correction::MAX.budget(u64::MAX), u64::MAX / 2);
        for budget in [0, 1, 7, 999, 1_000_003] {
            for milli in [1_000, 1_001, 1_333, 1_999, 2_000] {
                let mut c = Correction::NONE;
                c.observe(1_000, milli);
                let held = c.budget(budget);
                assert!(c.apply(held) <= budget, "{budget} {milli}");
                assert!(c.apply(held + 1) > budget, "{budget} {milli}");
            }
        }
    }
}
