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
        name: "anthropic",
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
        name: "openai-chat",
        images_in_tool_results: true,
        images_in_messages: true,
        image_types: WEB_IMAGES,
        audio_in_messages: &[Sniffed::Wav, Sniffed::Mp3],
        limits: OPENAI_LIMITS,
    };

    /// OpenAI's Responses API: `input_image` in user messages and in a `function_call_output`;
    /// no audio (its input content types are text, image and file).
    pub const OPENAI_RESPONSES: Route = Route {
        name: "openai-responses",
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
        name: "gemini",
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
        name: "text-only",
        images_in_tool_results: false,
        images_in_messages: false,
        image_types: &[],
        audio_in_messages: &[],
        limits: Limits::DEFAULT,
    };

    /// Every route, in the order `mcpl project --route` lists them.
    pub const ALL: &'static [Route] = &[
        Route::ANTHROPIC,
        Route::OPENAI_CHAT,
        Route::OPENAI_RESPONSES,
        Route::GEMINI,
        Route::TEXT_ONLY,
    ];

    /// The route of that name.
    pub fn named(name: &str) -> Option<&'static Route> {
        Route::ALL.iter().find(|route| route.name == name)
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
    fn every_route_is_named_once() {
        for route in Route::ALL {
            assert_eq!(Route::named(route.name), Some(route));
        }
        let names: std::collections::BTreeSet<_> = Route::ALL.iter().map(|r| r.name).collect();
        assert_eq!(names.len(), Route::ALL.len());
        assert_eq!(Route::named("nowhere"), None);
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
        for route in Route::ALL {
            assert_eq!(route.images_in_messages, !route.image_types.is_empty());
        }
    }
}
