//! Routes with prices: the lanes' declaration of what a provider takes, plus how it bills.

use mcpl_classify::{Dimensions, Sniffed};
use mcpl_lanes::{LiveCopy, Part, Route, RouteId};

use crate::image::ImageCalculator;
use crate::text::TokenEstimator;

/// Everything mcpl needs to know about one provider route: what it takes at each place (the
/// lanes' [`Route`], with its per-image limit) and how it prices images.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PricedRoute {
    /// What the route takes, as the lanes read it.
    pub lanes: Route,
    /// How it prices an image from its dimensions; `None` for a route that cannot price one.
    pub images: Option<ImageCalculator>,
    /// The most tokens the route's encoder adds around one native image of a tool result: the
    /// pointer left in the result's text, the label naming the call, and its share of the
    /// header, where the route moves images out of the tool result. Counted in each image's
    /// price, so a fitted result stays within budget as it is sent.
    pub image_overhead: u64,
    /// How it prices one page of a PDF; `None` for a route that takes no document.
    pub pages: Option<PageRule>,
    /// The tokens one second of native audio costs; `None` for a route that takes no audio.
    pub audio_tokens_per_second: Option<u64>,
}

/// How a route prices one page of a PDF (dated 2026-12-01; `docs/budget.md` has the table and
/// its sources).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PageRule {
    /// The page's extracted text, at most this many tokens, plus the page as an image, priced by
    /// the route's image calculator at [`PageRule::PAGE_WIDTH`] x [`PageRule::PAGE_HEIGHT`].
    TextAndImage {
        /// The most tokens of a page's text.
        text: u64,
    },
    /// A flat price per page.
    Flat(u64),
}

impl PageRule {
    /// A US Letter page rendered at 150 dpi: the page image the text-and-image rule prices.
    pub const PAGE_WIDTH: u32 = 1275;
    /// See [`PageRule::PAGE_WIDTH`].
    pub const PAGE_HEIGHT: u32 = 1650;
    /// Anthropic's "1,500-3,000 tokens per page" of text, at its top, with the page's image
    /// (<https://docs.claude.com/en/docs/build-with-claude/pdf-support>). OpenAI says its models
    /// see "both the extracted text and an image of each page" and gives no figure, so it is
    /// priced the same way with its own calculator
    /// (<https://platform.openai.com/docs/guides/pdf-files>).
    pub const TEXT_AND_IMAGE: PageRule = PageRule::TextAndImage { text: 3000 };
    /// Gemini 3's default media resolution for PDFs, medium: 560 tokens a page
    /// (<https://ai.google.dev/gemini-api/docs/media-resolution>; Gemini 2.x counted 258).
    pub const GEMINI_3: PageRule = PageRule::Flat(560);
}

/// Gemini's "each second of audio as 32 tokens" (<https://ai.google.dev/gemini-api/docs/audio>).
pub const GEMINI_AUDIO_TOKENS_PER_SECOND: u64 = 32;
/// OpenAI's "1 token per 100 ms" of user audio: the only per-second figure OpenAI publishes, in
/// its Realtime cost guide (<https://platform.openai.com/docs/guides/realtime-costs>); Chat
/// Completions gives none.
pub const OPENAI_AUDIO_TOKENS_PER_SECOND: u64 = 10;

/// The bound on the text around one moved image (see [`PricedRoute::image_overhead`]): the
/// host's encoders test that their pointer, label and header for a call id and a tool name of
/// 64 characters each stay within it.
pub const MOVED_IMAGE_OVERHEAD: u64 = 128;

impl PricedRoute {
    /// Anthropic's Messages API, standard tier (the high-resolution tier costs more per image;
    /// a host on Opus 4.7 or later sets `ImageCalculator::ANTHROPIC_HIGH_RES`).
    pub const ANTHROPIC: PricedRoute = PricedRoute {
        lanes: Route::ANTHROPIC,
        images: Some(ImageCalculator::ANTHROPIC_STANDARD),
        image_overhead: 0,
        pages: Some(PageRule::TEXT_AND_IMAGE),
        audio_tokens_per_second: None,
    };

    /// OpenAI's Chat Completions API, priced as the gpt-5.4 family at `detail: auto` (which is
    /// high for it): 32 px patches, at most 2,500, 1.2 tokens each. Tile models (gpt-4o,
    /// gpt-4.1, gpt-5.1) cost less; a host on one sets its row of `OPENAI_TABLE`.
    pub const OPENAI_CHAT: PricedRoute = PricedRoute {
        lanes: Route::OPENAI_CHAT,
        images: Some(ImageCalculator::OPENAI_GPT_5_4),
        image_overhead: MOVED_IMAGE_OVERHEAD,
        pages: Some(PageRule::TEXT_AND_IMAGE),
        audio_tokens_per_second: Some(OPENAI_AUDIO_TOKENS_PER_SECOND),
    };

    /// OpenAI's Responses API, priced as [`PricedRoute::OPENAI_CHAT`] is.
    pub const OPENAI_RESPONSES: PricedRoute = PricedRoute {
        lanes: Route::OPENAI_RESPONSES,
        images: Some(ImageCalculator::OPENAI_GPT_5_4),
        image_overhead: 0,
        pages: Some(PageRule::TEXT_AND_IMAGE),
        audio_tokens_per_second: None,
    };

    /// Gemini's `generateContent`, priced as Gemini 3 at its default media resolution for
    /// images (high: 1,120 tokens an image, whatever its size). Gemini 2.x tiles cost less for
    /// small images; a host on one sets `ImageCalculator::GeminiTiles`.
    pub const GEMINI: PricedRoute = PricedRoute {
        lanes: Route::GEMINI,
        images: Some(ImageCalculator::GEMINI_3_DEFAULT),
        image_overhead: MOVED_IMAGE_OVERHEAD,
        pages: Some(PageRule::GEMINI_3),
        audio_tokens_per_second: Some(GEMINI_AUDIO_TOKENS_PER_SECOND),
    };

    /// Text only: images never go native, so no image is ever priced.
    pub const TEXT_ONLY: PricedRoute = PricedRoute {
        lanes: Route::TEXT_ONLY,
        images: None,
        image_overhead: 0,
        pages: None,
        audio_tokens_per_second: None,
    };

    /// The priced route of that id.
    pub const fn of(id: RouteId) -> &'static PricedRoute {
        match id {
            RouteId::Anthropic => &PricedRoute::ANTHROPIC,
            RouteId::OpenAiChat => &PricedRoute::OPENAI_CHAT,
            RouteId::OpenAiResponses => &PricedRoute::OPENAI_RESPONSES,
            RouteId::Gemini => &PricedRoute::GEMINI,
            RouteId::TextOnly => &PricedRoute::TEXT_ONLY,
        }
    }

    /// The route's identity.
    pub fn id(&self) -> RouteId {
        self.lanes.id
    }

    /// The route held to what one model takes: images, PDFs and audio go natively only where
    /// both the route and the model take them; the rest is described in text.
    pub fn narrowed(&self, model: NativeMedia) -> PricedRoute {
        let mut narrowed = self.clone();
        let lanes = &mut narrowed.lanes;
        lanes.images_in_tool_results &= model.images;
        lanes.images_in_messages &= model.images;
        lanes.documents_in_tool_results &= model.pdf;
        if !model.images {
            lanes.image_types = &[];
        }
        if !model.audio {
            lanes.audio_in_messages = &[];
            lanes.audio_in_tool_results = &[];
        }
        narrowed
    }
}

/// What a model takes natively, for [`PricedRoute::narrowed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct NativeMedia {
    /// Images.
    pub images: bool,
    /// PDF documents.
    pub pdf: bool,
    /// Audio clips.
    pub audio: bool,
}

impl NativeMedia {
    /// A model that takes images, PDFs and audio natively as these say (and nothing else a
    /// later version names).
    pub const fn new(images: bool, pdf: bool, audio: bool) -> NativeMedia {
        NativeMedia { images, pdf, audio }
    }
}

/// Why something cannot be priced on a route.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unpriceable {
    /// The route has no image calculator.
    #[error("route {route} cannot price images")]
    NoImageCalculator {
        /// The route.
        route: RouteId,
    },
    /// The route declares no price for native audio, or the audio's header says no duration.
    #[error("route {route} cannot price audio")]
    Audio {
        /// The route.
        route: RouteId,
    },
    /// The route declares no price for a document.
    #[error("route {route} cannot price documents")]
    Document {
        /// The route.
        route: RouteId,
    },
}

/// Prices what a route sends: text by an estimator, images by the route's calculator.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct Pricer<'r> {
    /// The text estimator.
    pub text: &'r dyn TokenEstimator,
    /// The route.
    pub route: &'r PricedRoute,
}

impl std::fmt::Debug for Pricer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pricer")
            .field("route", &self.route.id())
            .finish_non_exhaustive()
    }
}

impl<'r> Pricer<'r> {
    /// A pricer of what `route` sends, its text counted by `text` (most hosts take [`Bound`],
    /// an upper bound of o200k).
    ///
    /// [`Bound`]: crate::Bound
    pub fn new(text: &'r dyn TokenEstimator, route: &'r PricedRoute) -> Pricer<'r> {
        Pricer { text, route }
    }

    /// The price of one part as the route sends it.
    pub fn part(&self, part: &Part<'_>) -> Result<u64, Unpriceable> {
        match part {
            Part::Text(text) => Ok(self.text.count(text)),
            Part::Image { dimensions, .. } => self.image(*dimensions),
            Part::Audio { sniffed, data } => self.audio(*sniffed, data),
            Part::Document { pages, .. } => self.document(*pages),
        }
    }

    /// The price of audio: its duration, read from its header, at the route's tokens per
    /// second, rounded up, plus the text around it where the route moves it.
    pub fn audio(&self, sniffed: Sniffed, data: &str) -> Result<u64, Unpriceable> {
        let unpriceable = Unpriceable::Audio {
            route: self.route.id(),
        };
        let per_second = self
            .route
            .audio_tokens_per_second
            .ok_or(unpriceable.clone())?;
        let ms = mcpl_classify::audio_duration_ms(data, sniffed).ok_or(unpriceable)?;
        Ok((ms * per_second).div_ceil(1000) + self.route.image_overhead)
    }

    /// The price of a PDF of `pages` pages by the route's [`PageRule`]. Its pages were counted:
    /// a PDF whose pages could not be counted does not go natively (decision 0109).
    pub fn document(&self, pages: u32) -> Result<u64, Unpriceable> {
        let rule = self.route.pages.ok_or(Unpriceable::Document {
            route: self.route.id(),
        })?;
        let pages = u64::from(pages);
        let per_page = match rule {
            PageRule::Flat(tokens) => tokens,
            PageRule::TextAndImage { text } => {
                let calculator = self.route.images.ok_or(Unpriceable::NoImageCalculator {
                    route: self.route.id(),
                })?;
                text + calculator.tokens(PageRule::PAGE_WIDTH, PageRule::PAGE_HEIGHT)
            }
        };
        Ok(pages * per_page + self.route.image_overhead)
    }

    /// The price of an image of these dimensions (as its part carries them: the header is read
    /// once, when the image is classified).
    pub fn image(&self, dimensions: Dimensions) -> Result<u64, Unpriceable> {
        let calculator = self.route.images.ok_or(Unpriceable::NoImageCalculator {
            route: self.route.id(),
        })?;
        Ok(calculator.tokens(dimensions.width, dimensions.height) + self.route.image_overhead)
    }

    /// The price of parts sent together: each text and each image at its own price.
    pub fn parts(&self, parts: &[Part<'_>]) -> Result<u64, Unpriceable> {
        parts.iter().map(|part| self.part(part)).sum()
    }

    /// The price of a tool result's live copy: a string counts its text; native parts count
    /// each text and each image.
    pub fn live(&self, live: &LiveCopy<'_>, stored: &str) -> Result<u64, Unpriceable> {
        match live {
            LiveCopy::Stored => Ok(self.text.count(stored)),
            LiveCopy::Native(parts) => self.parts(parts),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bound::Bound;
    use mcpl_classify::Sniffed;

    /// An image is priced from the dimensions its part carries: its header was read when it was
    /// classified, and pricing never reads the payload (here there is none to read).
    #[test]
    fn an_image_is_priced_from_the_dimensions_its_part_carries() {
        let dimensions = Dimensions {
            width: 1000,
            height: 500,
        };
        for id in [RouteId::Anthropic, RouteId::OpenAiChat, RouteId::Gemini] {
            let route = PricedRoute::of(id);
            let pricer = Pricer {
                text: &Bound,
                route,
            };
            let expected = route
                .images
                .map(|c| c.tokens(1000, 500) + route.image_overhead);
            for data in ["", "AAAA"] {
                let part = Part::Image {
                    sniffed: Sniffed::Png,
                    dimensions,
                    data,
                };
                assert_eq!(pricer.part(&part).ok(), expected, "{id}");
            }
        }
        let text_only = Pricer {
            text: &Bound,
            route: PricedRoute::of(RouteId::TextOnly),
        };
        assert_eq!(
            text_only.image(dimensions),
            Err(Unpriceable::NoImageCalculator {
                route: RouteId::TextOnly
            })
        );
        assert_eq!(
            Unpriceable::NoImageCalculator {
                route: RouteId::TextOnly
            }
            .to_string(),
            "route text-only cannot price images"
        );
    }

    #[test]
    fn a_document_is_priced_per_page() {
        let pricer = |id| Pricer {
            text: &Bound,
            route: PricedRoute::of(id),
        };
        let gemini = pricer(RouteId::Gemini);
        assert_eq!(gemini.document(3), Ok(3 * 560 + MOVED_IMAGE_OVERHEAD));
        let anthropic = pricer(RouteId::Anthropic);
        let page = 3000 + ImageCalculator::ANTHROPIC_STANDARD.tokens(1275, 1650);
        assert_eq!(anthropic.document(2), Ok(2 * page));
        let chat = pricer(RouteId::OpenAiChat);
        let page = 3000 + ImageCalculator::OPENAI_GPT_5_4.tokens(1275, 1650);
        assert_eq!(chat.document(2), Ok(2 * page + MOVED_IMAGE_OVERHEAD));
        assert_eq!(
            pricer(RouteId::TextOnly).document(1),
            Err(Unpriceable::Document {
                route: RouteId::TextOnly
            })
        );
    }

    #[test]
    fn audio_is_priced_by_the_seconds_its_header_says() {
        use base64::Engine as _;
        // A 16-bit mono WAV at 8 kHz of 2.5 seconds.
        let mut wav = b"RIFF\0\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0".to_vec();
        wav.extend_from_slice(&8000u32.to_le_bytes());
        wav.extend_from_slice(&16_000u32.to_le_bytes());
        wav.extend_from_slice(b"\x02\0\x10\0data");
        wav.extend_from_slice(&40_000u32.to_le_bytes());
        wav.resize(wav.len() + 40_000, 0);
        let data = base64::engine::general_purpose::STANDARD.encode(&wav);
        let part = Part::Audio {
            sniffed: Sniffed::Wav,
            data: &data,
        };
        let price = |id| {
            Pricer {
                text: &Bound,
                route: PricedRoute::of(id),
            }
            .part(&part)
        };
        assert_eq!(price(RouteId::Gemini), Ok(80 + MOVED_IMAGE_OVERHEAD));
        assert_eq!(price(RouteId::OpenAiChat), Ok(25 + MOVED_IMAGE_OVERHEAD));
        assert_eq!(
            price(RouteId::Anthropic),
            Err(Unpriceable::Audio {
                route: RouteId::Anthropic
            })
        );
        let cut = Part::Audio {
            sniffed: Sniffed::Wav,
            data: "UklGRg==",
        };
        assert!(
            Pricer {
                text: &Bound,
                route: &PricedRoute::GEMINI
            }
            .part(&cut)
            .is_err()
        );
    }

    #[test]
    fn every_route_is_priced_with_its_own_table() {
        for id in RouteId::ALL {
            let route = PricedRoute::of(id);
            assert_eq!(route.id(), id);
            assert_eq!(&route.lanes, id.route());
            // A route that sends images natively can price them; one that cannot sends none.
            assert_eq!(route.images.is_some(), route.lanes.images_in_messages);
            assert_eq!(route.pages.is_some(), route.lanes.documents_in_tool_results);
            assert_eq!(
                route.audio_tokens_per_second.is_some(),
                !route.lanes.audio_in_tool_results.is_empty()
            );
        }
    }
}
