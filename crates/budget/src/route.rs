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
}

impl PricedRoute {
    /// Anthropic's Messages API, standard tier (the high-resolution tier costs more per image;
    /// a host on Opus 4.7 or later sets `ImageCalculator::ANTHROPIC_HIGH_RES`).
    pub const ANTHROPIC: PricedRoute = PricedRoute {
        lanes: Route::ANTHROPIC,
        images: Some(ImageCalculator::ANTHROPIC_STANDARD),
    };

    /// Text only: images never go native, so no image is ever priced.
    pub const TEXT_ONLY: PricedRoute = PricedRoute {
        lanes: Route::TEXT_ONLY,
        images: None,
    };

    /// The routes built so far.
    pub const ALL: &'static [PricedRoute] = &[PricedRoute::ANTHROPIC, PricedRoute::TEXT_ONLY];

    /// The route of that name, if it is built.
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
        Ok(calculator.tokens(dimensions.width, dimensions.height))
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
