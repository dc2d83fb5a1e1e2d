//! What a provider's API takes, declared once per route and read by every lane: [`RouteId`]
//! names a route, [`Route`] is its table.

use std::fmt;
use std::str::FromStr;

use mcpl_classify::{Limits, Sniffed};

/// Which provider API requests are for. The one identity of a route: lanes read its [`Route`],
/// the budget prices it, and the encoders write its JSON. A name a person typed becomes one
/// with [`str::parse`], which refuses a name no route has ([`UnknownRoute`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RouteId {
    /// Anthropic's Messages API.
    Anthropic,
    /// OpenAI's Chat Completions API.
    OpenAiChat,
    /// OpenAI's Responses API.
    OpenAiResponses,
    /// Google's Gemini `generateContent`.
    Gemini,
    /// A model that takes text only, in the Messages API's shape.
    TextOnly,
}

impl RouteId {
    /// Every route, in the order `--route` lists them.
    pub const ALL: [RouteId; 5] = [
        RouteId::Anthropic,
        RouteId::OpenAiChat,
        RouteId::OpenAiResponses,
        RouteId::Gemini,
        RouteId::TextOnly,
    ];

    /// The route's name, as `--route` spells it.
    pub const fn name(self) -> &'static str {
        match self {
            RouteId::Anthropic => "anthropic",
            RouteId::OpenAiChat => "openai-chat",
            RouteId::OpenAiResponses => "openai-responses",
            RouteId::Gemini => "gemini",
            RouteId::TextOnly => "text-only",
        }
    }

    /// What the route takes at each place content can go.
    pub const fn route(self) -> &'static Route {
        match self {
            RouteId::Anthropic => &Route::ANTHROPIC,
            RouteId::OpenAiChat => &Route::OPENAI_CHAT,
            RouteId::OpenAiResponses => &Route::OPENAI_RESPONSES,
            RouteId::Gemini => &Route::GEMINI,
            RouteId::TextOnly => &Route::TEXT_ONLY,
        }
    }
}

impl fmt::Display for RouteId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for RouteId {
    type Err = UnknownRoute;

    /// The route of that exact name.
    fn from_str(name: &str) -> Result<RouteId, UnknownRoute> {
        RouteId::ALL
            .into_iter()
            .find(|id| id.name() == name)
            .ok_or_else(|| UnknownRoute {
                name: name.to_owned(),
            })
    }
}

/// A route name no route has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown route {name}; routes: {}", route_names())]
pub struct UnknownRoute {
    /// The name as given.
    pub name: String,
}

/// Every route's name, comma-separated, in the order of [`RouteId::ALL`].
fn route_names() -> String {
    RouteId::ALL.map(RouteId::name).join(", ")
}

/// What one route (a provider API, or none) takes at each place content can go. Lanes read this
/// declaration rather than guessing; the budget and encode crates extend it with prices and
/// encoders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The route this table is for.
    pub id: RouteId,
    /// Whether images may go natively in a tool result (directly, or moved by the encoder into a
    /// message right after it).
    pub images_in_tool_results: bool,
    /// Whether images may go natively in a user message (push, channel, user-position injection).
    pub images_in_messages: bool,
    /// The image types the route's API takes natively, by what the bytes are; empty for none.
    /// An image of another type is described in text by the host's encoder.
    pub image_types: &'static [Sniffed],
    /// The audio types a user message takes natively, by what the bytes are; empty for none.
    pub audio_in_messages: &'static [Sniffed],
    /// The per-image and opaque limits on this route.
    pub limits: Limits,
}

/// PNG, JPEG, GIF and WebP: what Anthropic's and OpenAI's vision APIs take.
const WEB_IMAGES: &[Sniffed] = &[Sniffed::Png, Sniffed::Jpeg, Sniffed::Gif, Sniffed::Webp];

impl Route {
    /// Anthropic's Messages API: images in tool results and user messages, no audio; 5 MiB per
    /// image (the API takes 10 MB of base64 per image, Bedrock and Vertex 5 MB).
    pub const ANTHROPIC: Route = Route {
        id: RouteId::Anthropic,
        images_in_tool_results: true,
        images_in_messages: true,
        image_types: WEB_IMAGES,
        audio_in_messages: &[],
        limits: Limits::DEFAULT,
    };

    /// OpenAI's Chat Completions API. A tool message is text only, so the encoder moves a tool
    /// result's images into one labelled user message after the contiguous tool messages; user
    /// messages take `input_audio` in WAV and MP3 only. 20 MB per image, as the vision guide
    /// says (a request's images together must also stay under about 50 MB).
    pub const OPENAI_CHAT: Route = Route {
        id: RouteId::OpenAiChat,
        images_in_tool_results: true,
        images_in_messages: true,
        image_types: WEB_IMAGES,
        audio_in_messages: &[Sniffed::Wav, Sniffed::Mp3],
        limits: OPENAI_LIMITS,
    };

    /// OpenAI's Responses API: `input_image` in user messages and in a `function_call_output`;
    /// no audio (its input content types are text, image and file).
    pub const OPENAI_RESPONSES: Route = Route {
        id: RouteId::OpenAiResponses,
        images_in_tool_results: true,
        images_in_messages: true,
        image_types: WEB_IMAGES,
        audio_in_messages: &[],
        limits: OPENAI_LIMITS,
    };

    /// Google's Gemini `generateContent`: a tool result is a `functionResponse` whose images
    /// follow it as `inline_data` parts of the same user turn; user messages take WAV, MP3, AAC,
    /// Ogg Vorbis and FLAC audio. Gemini lists PNG, JPEG and WebP images (not GIF). 7 MB per
    /// image (Vertex's inline limit), so several fit the 20 MB a request may carry inline.
    pub const GEMINI: Route = Route {
        id: RouteId::Gemini,
        images_in_tool_results: true,
        images_in_messages: true,
        image_types: &[Sniffed::Png, Sniffed::Jpeg, Sniffed::Webp],
        audio_in_messages: &[
            Sniffed::Wav,
            Sniffed::Mp3,
            Sniffed::Aac,
            Sniffed::Ogg,
            Sniffed::Flac,
        ],
        limits: Limits {
            native_image_bytes: 7_000_000,
            ..Limits::DEFAULT
        },
    };

    /// A model that takes text only: every image and audio becomes its stored text.
    pub const TEXT_ONLY: Route = Route {
        id: RouteId::TextOnly,
        images_in_tool_results: false,
        images_in_messages: false,
        image_types: &[],
        audio_in_messages: &[],
        limits: Limits::DEFAULT,
    };

    /// The route's name, as `--route` spells it.
    pub fn name(&self) -> &'static str {
        self.id.name()
    }

    /// Whether a user message on this route takes audio whose bytes are `sniffed`.
    pub fn takes_audio(&self, sniffed: Option<Sniffed>) -> bool {
        sniffed.is_some_and(|s| self.audio_in_messages.contains(&s))
    }

    /// Whether the route's API takes an image whose bytes are `sniffed` natively.
    pub fn takes_image_type(&self, sniffed: Option<Sniffed>) -> bool {
        sniffed.is_some_and(|s| self.image_types.contains(&s))
    }
}

/// OpenAI's documented 20 MB per image.
const OPENAI_LIMITS: Limits = Limits {
    native_image_bytes: 20_000_000,
    ..Limits::DEFAULT
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_named_once_and_parses_back() {
        for id in RouteId::ALL {
            assert_eq!(id.name().parse::<RouteId>(), Ok(id));
            assert_eq!(id.to_string(), id.name());
            assert_eq!(id.route().id, id);
        }
        let names: std::collections::BTreeSet<_> = RouteId::ALL.map(RouteId::name).into();
        assert_eq!(names.len(), RouteId::ALL.len());
    }

    #[test]
    fn an_unknown_name_is_an_error_that_lists_the_routes() {
        for name in ["nowhere", "", "Anthropic", " anthropic", "openai"] {
            let error = name.parse::<RouteId>().unwrap_err();
            assert_eq!(error.name, name);
            assert_eq!(
                error.to_string(),
                format!(
                    "unknown route {name}; routes: anthropic, openai-chat, openai-responses, gemini, text-only"
                )
            );
        }
    }

    #[test]
    fn what_each_route_takes() {
        assert!(Route::OPENAI_CHAT.takes_audio(Some(Sniffed::Mp3)));
        assert!(!Route::OPENAI_CHAT.takes_audio(Some(Sniffed::Ogg)));
        assert!(!Route::OPENAI_RESPONSES.takes_audio(Some(Sniffed::Wav)));
        assert!(Route::GEMINI.takes_audio(Some(Sniffed::Flac)));
        assert!(!Route::GEMINI.takes_image_type(Some(Sniffed::Gif)));
        assert!(Route::ANTHROPIC.takes_image_type(Some(Sniffed::Gif)));
        assert!(!Route::TEXT_ONLY.takes_image_type(Some(Sniffed::Png)));
        for route in RouteId::ALL.map(RouteId::route) {
            assert_eq!(route.images_in_messages, !route.image_types.is_empty());
        }
    }
}
