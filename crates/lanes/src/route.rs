//! What a provider's API takes, declared once per route and read by every lane.

use mcpl_classify::{Limits, Sniffed};

/// What one route (a provider API, or none) takes at each place content can go. Lanes read this
/// declaration rather than guessing; the budget and host crates extend it with prices and
/// encoders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The route's name, as `mcpl project --route` spells it.
    pub name: &'static str,
    /// Whether images may go natively in a tool result (directly, or moved by the encoder into a
    /// message right after it).
    pub images_in_tool_results: bool,
    /// Whether images may go natively in a user message (push, channel, user-position injection).
    pub images_in_messages: bool,
    /// The audio types a user message takes natively, by what the bytes are; empty for none.
    pub audio_in_messages: &'static [Sniffed],
    /// The per-image and opaque limits on this route.
    pub limits: Limits,
}

impl Route {
    /// Anthropic's Messages API: images in tool results and user messages, no audio.
    pub const ANTHROPIC: Route = Route {
        name: "anthropic",
        images_in_tool_results: true,
        images_in_messages: true,
        audio_in_messages: &[],
        limits: Limits::DEFAULT,
    };

    /// A model that takes text only: every image and audio becomes its stored text.
    pub const TEXT_ONLY: Route = Route {
        name: "text-only",
        images_in_tool_results: false,
        images_in_messages: false,
        audio_in_messages: &[],
        limits: Limits::DEFAULT,
    };

    /// The routes built so far.
    pub const ALL: &'static [Route] = &[Route::ANTHROPIC, Route::TEXT_ONLY];

    /// The route of that name, if it is built.
    pub fn named(name: &str) -> Option<&'static Route> {
        Route::ALL.iter().find(|route| route.name == name)
    }

    /// Whether a user message on this route takes audio whose bytes are `sniffed`.
    pub fn takes_audio(&self, sniffed: Option<Sniffed>) -> bool {
        sniffed.is_some_and(|s| self.audio_in_messages.contains(&s))
    }
}
