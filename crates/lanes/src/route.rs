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

    /// What one request on the route may carry in all (see [`RequestLimits`]).
    pub const fn request_limits(self) -> RequestLimits {
        match self {
            RouteId::Anthropic | RouteId::TextOnly => RequestLimits::ANTHROPIC,
            RouteId::OpenAiChat | RouteId::OpenAiResponses => RequestLimits::OPENAI,
            RouteId::Gemini => RequestLimits::GEMINI,
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
#[non_exhaustive]
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
#[non_exhaustive]
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
    /// The audio types a tool result takes natively (moved by the encoder into the message after
    /// it), by what the bytes are; empty for none.
    pub audio_in_tool_results: &'static [Sniffed],
    /// Whether a PDF may go natively in a tool result (directly, or moved after it).
    pub documents_in_tool_results: bool,
    /// The per-image and opaque limits on this route.
    pub limits: Limits,
}

/// PNG, JPEG, GIF and WebP: what Anthropic's and OpenAI's vision APIs take.
const WEB_IMAGES: &[Sniffed] = &[Sniffed::Png, Sniffed::Jpeg, Sniffed::Gif, Sniffed::Webp];

impl Route {
    /// Anthropic's Messages API: images in tool results and user messages, PDFs as `document`
    /// blocks in tool results, no audio; 5 MiB per
    /// image (the API takes 10 MB of base64 per image, Bedrock and Vertex 5 MB).
    pub const ANTHROPIC: Route = Route {
        id: RouteId::Anthropic,
        images_in_tool_results: true,
        images_in_messages: true,
        image_types: WEB_IMAGES,
        audio_in_messages: &[],
        audio_in_tool_results: &[],
        documents_in_tool_results: true,
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
        audio_in_tool_results: &[Sniffed::Wav, Sniffed::Mp3],
        documents_in_tool_results: true,
        limits: OPENAI_LIMITS,
    };

    /// OpenAI's Responses API: `input_image` in user messages and in a `function_call_output`,
    /// `input_file` for a PDF there; no audio (its input content types are text, image and file).
    pub const OPENAI_RESPONSES: Route = Route {
        id: RouteId::OpenAiResponses,
        images_in_tool_results: true,
        images_in_messages: true,
        image_types: WEB_IMAGES,
        audio_in_messages: &[],
        audio_in_tool_results: &[],
        documents_in_tool_results: true,
        limits: OPENAI_LIMITS,
    };

    /// Google's Gemini `generateContent`: a tool result is a `functionResponse` whose images
    /// follow it as `inline_data` parts of the same user turn, and so do its PDFs, WAV and MP3
    /// audio; user messages take WAV, MP3, AAC,
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
        audio_in_tool_results: &[Sniffed::Wav, Sniffed::Mp3],
        documents_in_tool_results: true,
        limits: Limits::DEFAULT.with_native_image_bytes(7_000_000),
    };

    /// A model that takes text only: every image and audio becomes its stored text.
    pub const TEXT_ONLY: Route = Route {
        id: RouteId::TextOnly,
        images_in_tool_results: false,
        images_in_messages: false,
        image_types: &[],
        audio_in_messages: &[],
        audio_in_tool_results: &[],
        documents_in_tool_results: false,
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

    /// Whether a tool result on this route takes audio whose bytes are `sniffed` natively.
    pub fn takes_tool_audio(&self, sniffed: Option<Sniffed>) -> bool {
        sniffed.is_some_and(|s| self.audio_in_tool_results.contains(&s))
    }

    /// Whether the route's API takes an image whose bytes are `sniffed` natively.
    pub fn takes_image_type(&self, sniffed: Option<Sniffed>) -> bool {
        sniffed.is_some_and(|s| self.image_types.contains(&s))
    }
}

/// What one whole request on a route may carry: the providers' documented request limits, read
/// by the one request-level check in `mcpl-encode` as a request is assembled. `None` is no limit.
///
/// Dated 2026-12-01, from the providers' documents:
///
/// - anthropic, <https://docs.claude.com/en/docs/build-with-claude/vision> and
///   <https://docs.claude.com/en/api/overview>: at most 8000 px per side, or 2000 px when a
///   request carries more than 20 images; 100 images per request on models with a 200k window
///   (600 on the others); 10 MB of base64 per image on the direct API but 5 MB on Amazon Bedrock
///   and Vertex AI, so 5,242,880 characters holds everywhere Claude is served (the API's error
///   reads `image exceeds 5 MB maximum: 6521204 bytes > 5242880 bytes`); a 32 MB request body.
///   [`RequestLimits::with_image_base64`] and [`RequestLimits::with_max_images`] raise the two
///   that depend on the platform and model.
/// - openai-chat and openai-responses,
///   <https://platform.openai.com/docs/guides/images-vision>: 500 images and 50 MB of image
///   bytes per request, GIF only when not animated. The page has given 1,500 images and 512 MB
///   of payload since late April 2026, but 50 MB of image bytes is still enforced (`Total image
///   size is 50.56MB, which exceeds the allowed limit of 50MB`), so the older figures stand.
///   No per-side limit is documented; 8000 px is kept as everywhere.
/// - gemini, <https://ai.google.dev/gemini-api/docs/image-understanding> and
///   <https://ai.google.dev/gemini-api/docs/file-input-methods>: inline data up to 20 MB per
///   request. The second page now gives 100 MB per request; 20 MB is kept as the conservative
///   bound, counted as base64 characters (what the request carries).
/// - everywhere: an image with no pixels, or a side over [`RequestLimits::max_side`], never goes
///   natively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestLimits {
    /// The longest side of a native image, in pixels.
    pub max_side: u32,
    /// Over this many native images in one request, each side must be at most
    /// [`RequestLimits::many_images_side`] pixels.
    pub many_images: Option<usize>,
    /// The longest side of each image in a request of more than
    /// [`RequestLimits::many_images`] images.
    pub many_images_side: u32,
    /// The most base64 characters of one image.
    pub image_base64: Option<u64>,
    /// The most native images in one request.
    pub max_images: Option<usize>,
    /// The most decoded image bytes in one request, all images together.
    pub image_bytes: Option<u64>,
    /// The most base64 characters of inline data in one request, images and user-message
    /// audio together.
    pub inline_base64: Option<u64>,
    /// The largest request body, in bytes of JSON.
    pub body_bytes: Option<u64>,
    /// Whether an animated GIF may go natively.
    pub animated_gif: bool,
    /// The most pages of one native document.
    pub document_pages: Option<u32>,
    /// The most decoded bytes of one native document.
    pub document_bytes: Option<u64>,
    /// The most pages of native documents in one request, all together.
    pub request_pages: Option<u32>,
}

impl RequestLimits {
    /// The per-side cap every route keeps.
    pub const MAX_SIDE: u32 = 8000;

    /// Anthropic's Messages API, on every platform that serves Claude.
    pub const ANTHROPIC: RequestLimits = RequestLimits {
        max_side: RequestLimits::MAX_SIDE,
        many_images: Some(20),
        many_images_side: 2000,
        image_base64: Some(5_242_880),
        max_images: Some(100),
        image_bytes: None,
        inline_base64: None,
        body_bytes: Some(32 * 1000 * 1000),
        animated_gif: true,
        document_pages: Some(100),
        document_bytes: Some(24 * 1000 * 1000),
        request_pages: Some(100),
    };

    /// The direct Claude API's per-image limit: 10 MB of base64.
    pub const ANTHROPIC_DIRECT_IMAGE_BASE64: u64 = 10 * 1024 * 1024;

    /// OpenAI's Chat Completions and Responses APIs.
    pub const OPENAI: RequestLimits = RequestLimits {
        max_side: RequestLimits::MAX_SIDE,
        many_images: None,
        many_images_side: RequestLimits::MAX_SIDE,
        image_base64: None,
        max_images: Some(500),
        image_bytes: Some(50 * 1000 * 1000),
        inline_base64: None,
        body_bytes: None,
        animated_gif: false,
        document_pages: Some(100),
        document_bytes: Some(32 * 1000 * 1000),
        request_pages: Some(100),
    };

    /// Gemini's `generateContent`.
    pub const GEMINI: RequestLimits = RequestLimits {
        max_side: RequestLimits::MAX_SIDE,
        many_images: None,
        many_images_side: RequestLimits::MAX_SIDE,
        image_base64: None,
        max_images: None,
        image_bytes: None,
        inline_base64: Some(20 * 1000 * 1000),
        body_bytes: None,
        animated_gif: true,
        document_pages: Some(1000),
        document_bytes: Some(50 * 1000 * 1000),
        request_pages: None,
    };

    /// The same limits with another per-image base64 cap (the route setting that raises
    /// Anthropic's to [`RequestLimits::ANTHROPIC_DIRECT_IMAGE_BASE64`] on the direct API).
    pub const fn with_image_base64(self, chars: u64) -> RequestLimits {
        RequestLimits {
            image_base64: Some(chars),
            ..self
        }
    }

    /// The same limits with another image count per request (the route setting for models
    /// that take more, 600 on Anthropic's larger-window models).
    pub const fn with_max_images(self, images: usize) -> RequestLimits {
        RequestLimits {
            max_images: Some(images),
            ..self
        }
    }
}

/// OpenAI's documented 20 MB per image.
const OPENAI_LIMITS: Limits = Limits::DEFAULT.with_native_image_bytes(20_000_000);

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
        assert!(Route::OPENAI_CHAT.takes_tool_audio(Some(Sniffed::Wav)));
        assert!(Route::GEMINI.takes_tool_audio(Some(Sniffed::Mp3)));
        assert!(!Route::GEMINI.takes_tool_audio(Some(Sniffed::Flac)));
        assert!(!Route::ANTHROPIC.takes_tool_audio(Some(Sniffed::Wav)));
        assert!(!Route::OPENAI_RESPONSES.takes_tool_audio(Some(Sniffed::Wav)));
        for route in RouteId::ALL.map(RouteId::route) {
            // Documents go natively wherever images do in a tool result.
            assert_eq!(
                route.documents_in_tool_results,
                route.images_in_tool_results
            );
        }
        for route in RouteId::ALL.map(RouteId::route) {
            assert_eq!(route.images_in_messages, !route.image_types.is_empty());
        }
    }

    #[test]
    fn request_limits_per_route() {
        let anthropic = RouteId::Anthropic.request_limits();
        assert_eq!(anthropic.image_base64, Some(5_242_880));
        assert_eq!(
            (anthropic.many_images, anthropic.many_images_side),
            (Some(20), 2000)
        );
        assert_eq!(anthropic.max_images, Some(100));
        assert_eq!(anthropic.body_bytes, Some(32_000_000));
        let direct = anthropic
            .with_image_base64(RequestLimits::ANTHROPIC_DIRECT_IMAGE_BASE64)
            .with_max_images(600);
        assert_eq!(
            (direct.image_base64, direct.max_images),
            (Some(10_485_760), Some(600))
        );
        for id in [RouteId::OpenAiChat, RouteId::OpenAiResponses] {
            let openai = id.request_limits();
            assert_eq!(openai.max_images, Some(500));
            assert_eq!(openai.image_bytes, Some(50_000_000));
            assert!(!openai.animated_gif);
        }
        assert_eq!(
            RouteId::Gemini.request_limits().inline_base64,
            Some(20_000_000)
        );
        for id in RouteId::ALL {
            assert_eq!(id.request_limits().max_side, 8000);
        }
        assert_eq!(anthropic.document_pages, Some(100));
        assert_eq!(anthropic.document_bytes, Some(24_000_000));
        assert_eq!(
            RouteId::OpenAiChat.request_limits().request_pages,
            Some(100)
        );
        assert_eq!(RouteId::Gemini.request_limits().document_pages, Some(1000));
        assert_eq!(RouteId::Gemini.request_limits().request_pages, None);
    }
}
