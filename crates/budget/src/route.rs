//! Routes with prices: the lanes' declaration of what a provider takes, plus how it bills.

use mcpl_classify::Media;
use mcpl_lanes::{LiveCopy, Part, Route};

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
pub const MOVED_IMAGE_OVERHEAD: u64 = 96;

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

    /// Every route, in the lanes' order.
    pub const ALL: &'static [PricedRoute] = &[
        PricedRoute::ANTHROPIC,
        PricedRoute::OPENAI_CHAT,
        PricedRoute::OPENAI_RESPONSES,
        PricedRoute::GEMINI,
        PricedRoute::TEXT_ONLY,
    ];

    /// The route of that name.
    pub fn named(name: &str) -> Option<&'static PricedRoute> {
        PricedRoute::ALL
            .iter()
            .find(|route| route.lanes.name == name)
    }
}

/// Why something cannot be priced on a route.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unpriceable {
    /// The route has no image calculator.
    #[error("route {route} cannot price images")]
    NoImageCalculator {
        /// The route's name.
        route: &'static str,
    },
    /// The image's header gives no dimensions.
    #[error("an image's dimensions cannot be read")]
    NoDimensions,
    /// The route declares no price for native audio.
    #[error("route {route} cannot price audio")]
    Audio {
        /// The route's name.
        route: &'static str,
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
            .field("route", &self.route.lanes.name)
            .finish_non_exhaustive()
    }
}

impl Pricer<'_> {
    /// The price of one part as the route sends it.
    pub fn part(&self, part: &Part<'_>) -> Result<u64, Unpriceable> {
        match part {
            Part::Text(text) => Ok(self.text.count(text)),
            Part::Image { data, .. } => self.image(data),
            Part::Audio { .. } => Err(Unpriceable::Audio {
                route: self.route.lanes.name,
            }),
        }
    }

    /// The price of a base64 image, from the dimensions in its header (no decode).
    pub fn image(&self, data: &str) -> Result<u64, Unpriceable> {
        let calculator = self.route.images.ok_or(Unpriceable::NoImageCalculator {
            route: self.route.lanes.name,
        })?;
        let dimensions = Media::inspect(data, None)
            .dimensions
            .ok_or(Unpriceable::NoDimensions)?;
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

    #[test]
    fn every_lanes_route_is_priced_once_in_the_same_order() {
        let priced: Vec<&Route> = PricedRoute::ALL.iter().map(|r| &r.lanes).collect();
        let lanes: Vec<&Route> = Route::ALL.iter().collect();
        assert_eq!(priced, lanes);
        for route in PricedRoute::ALL {
            assert_eq!(PricedRoute::named(route.lanes.name), Some(route));
            // A route that sends images natively can price them; one that cannot sends none.
            assert_eq!(route.images.is_some(), route.lanes.images_in_messages);
        }
    }
}
