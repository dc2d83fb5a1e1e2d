//! Routes with prices: the lanes' declaration of what a provider takes, plus how it bills.

use mcpl_classify::Dimensions;
use mcpl_lanes::{LiveCopy, Part, Route, RouteId};

use crate::image::ImageCalculator;
use crate::text::TokenEstimator;

/// Everything mcpl needs to know about one provider route: what it takes at each place (the
/// lanes' [`Route`], with its per-image limit) and how it prices images.
#[derive(Debug, Clone, PartialEq)]
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
}

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
    };

    /// OpenAI's Chat Completions API, priced as the gpt-5.4 family at `detail: auto` (which is
    /// high for it): 32 px patches, at most 2,500, 1.2 tokens each. Tile models (gpt-4o,
    /// gpt-4.1, gpt-5.1) cost less; a host on one sets its row of `OPENAI_TABLE`.
    pub const OPENAI_CHAT: PricedRoute = PricedRoute {
        lanes: Route::OPENAI_CHAT,
        images: Some(ImageCalculator::OPENAI_GPT_5_4),
        image_overhead: MOVED_IMAGE_OVERHEAD,
    };

    /// OpenAI's Responses API, priced as [`PricedRoute::OPENAI_CHAT`] is.
    pub const OPENAI_RESPONSES: PricedRoute = PricedRoute {
        lanes: Route::OPENAI_RESPONSES,
        images: Some(ImageCalculator::OPENAI_GPT_5_4),
        image_overhead: 0,
    };

    /// Gemini's `generateContent`, priced as Gemini 3 at its default media resolution for
    /// images (high: 1,120 tokens an image, whatever its size). Gemini 2.x tiles cost less for
    /// small images; a host on one sets `ImageCalculator::GeminiTiles`.
    pub const GEMINI: PricedRoute = PricedRoute {
        lanes: Route::GEMINI,
        images: Some(ImageCalculator::GEMINI_3_DEFAULT),
        image_overhead: MOVED_IMAGE_OVERHEAD,
    };

    /// Text only: images never go native, so no image is ever priced.
    pub const TEXT_ONLY: PricedRoute = PricedRoute {
        lanes: Route::TEXT_ONLY,
        images: None,
        image_overhead: 0,
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
}

/// Why something cannot be priced on a route.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unpriceable {
    /// The route has no image calculator.
    #[error("route {route} cannot price images")]
    NoImageCalculator {
        /// The route.
        route: RouteId,
    },
    /// The route declares no price for native audio.
    #[error("route {route} cannot price audio")]
    Audio {
        /// The route.
        route: RouteId,
    },
}

/// Prices what a route sends: text by an estimator, images by the route's calculator.
#[derive(Clone, Copy)]
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

impl Pricer<'_> {
    /// The price of one part as the route sends it.
    pub fn part(&self, part: &Part<'_>) -> Result<u64, Unpriceable> {
        match part {
            Part::Text(text) => Ok(self.text.count(text)),
            Part::Image { dimensions, .. } => self.image(*dimensions),
            Part::Audio { .. } => Err(Unpriceable::Audio {
                route: self.route.id(),
            }),
        }
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
    use crate::text::Heuristic;
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
                text: &Heuristic,
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
            text: &Heuristic,
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
    fn every_route_is_priced_with_its_own_table() {
        for id in RouteId::ALL {
            let route = PricedRoute::of(id);
            assert_eq!(route.id(), id);
            assert_eq!(&route.lanes, id.route());
            // A route that sends images natively can price them; one that cannot sends none.
            assert_eq!(route.images.is_some(), route.lanes.images_in_messages);
        }
    }
}
