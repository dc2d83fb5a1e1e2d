//! The window projection: what a round adds to the context window, before it is sent.

use mcpl_lanes::{Part, ToolResultCopies};

use crate::route::{Pricer, Unpriceable};

/// What one round appends: its tool results as their live copies will be sent, and the text
/// and messages injected with it.
#[derive(Debug, Clone, Default)]
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
