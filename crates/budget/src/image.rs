//! Image prices: one `ImageCalculator` per provider rule, and the dated tables that say which
//! model takes which rule. Figures and worked examples are the providers' own documents, each
//! table row naming its source and date.

/// OpenAI's `detail` setting for an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Detail {
    /// A 512 px version of the image.
    Low,
    /// The full rule (`auto` behaves as `high` on tile models).
    High,
}

/// How one provider prices an image from its dimensions.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum ImageCalculator {
    /// Anthropic's current rule: resize to the largest aspect-preserving size whose 28-rounded
    /// sides are within `max_edge` and whose 28 x 28 patches number at most `max_tokens`, then
    /// one token per patch.
    AnthropicPatches {
        /// The tier's long-edge limit in pixels.
        max_edge: u32,
        /// The tier's visual-token limit.
        max_tokens: u32,
    },
    /// Anthropic's older rule: `ceil(w * h / 750)` after scaling to a 1568 px long edge and
    /// to at most about 1,600 tokens (1.2 megapixels; 1092 x 1092 is the largest square).
    AnthropicLegacy,
    /// OpenAI's tile models: fit 2048 x 2048, shorten the short side to `short_side`, then
    /// `base + per_tile * ceil(w / 512) * ceil(h / 512)`; `Detail::Low` costs `base`.
    OpenAiTiles {
        /// Tokens every image costs.
        base: u32,
        /// Tokens per 512 px tile.
        per_tile: u32,
        /// The short side's target (768; 512 for gpt-image-1).
        short_side: u32,
        /// The detail requested.
        detail: Detail,
    },
    /// OpenAI's 32 px patch models: fit a `max_dim` box, shrink to at most `budget` patches
    /// when there is one, then `ceil(patches * multiplier)`.
    OpenAiPatches {
        /// The pixel box the image is fitted into, keeping its aspect, never enlarged.
        max_dim: u32,
        /// The patch budget, if the detail level has one.
        budget: Option<u32>,
        /// The billing multiplier in thousandths (1.62 is 1620).
        multiplier_milli: u32,
    },
    /// Gemini 3's fixed budget per image by `media_resolution`, whatever its size.
    GeminiFixed {
        /// Tokens per image (280, 560, 1120 or 2240).
        tokens: u32,
    },
    /// Gemini 2.x: 258 tokens when both sides are at most 384 px, else 258 per 768 px tile.
    GeminiTiles,
    /// Gemini 1.5: 258 when both sides are at most 384 px, else tiles of `min(w, h) / 1.5`
    /// clamped to 256..=768, 258 each.
    Gemini15Tiles,
}

impl ImageCalculator {
    /// Claude's standard tier (most models).
    pub const ANTHROPIC_STANDARD: ImageCalculator = ImageCalculator::AnthropicPatches {
        max_edge: 1568,
        max_tokens: 1568,
    };
    /// Claude's high-resolution tier (Opus 4.7 and later).
    pub const ANTHROPIC_HIGH_RES: ImageCalculator = ImageCalculator::AnthropicPatches {
        max_edge: 2576,
        max_tokens: 4784,
    };

    /// OpenAI's gpt-5.4 family (gpt-5.4, -mini, -nano; gpt-5.5 and gpt-5.2 at `detail: high`):
    /// fit 2048 x 2048, at most 2,500 patches of 32 px, 1.2 tokens per patch. For gpt-5.4,
    /// `detail: auto` (what an image sent without `detail` gets) means high.
    pub const OPENAI_GPT_5_4: ImageCalculator = patches(2048, 2500, 1200);
    /// Gemini 3 at its default `media_resolution` for images (high): 1,120 tokens an image.
    pub const GEMINI_3_DEFAULT: ImageCalculator = ImageCalculator::GeminiFixed { tokens: 1120 };

    /// The tokens an image of `width` x `height` pixels costs.
    pub fn tokens(&self, width: u32, height: u32) -> u64 {
        let (w, h) = (u64::from(width.max(1)), u64::from(height.max(1)));
        match *self {
            ImageCalculator::AnthropicPatches {
                max_edge,
                max_tokens,
            } => {
                let (w, h) = anthropic_resize(w, h, u64::from(max_edge), u64::from(max_tokens));
                w.div_ceil(28) * h.div_ceil(28)
            }
            ImageCalculator::AnthropicLegacy => {
                let (w, h) = fit_box(w, h, 1568, 1568);
                let (w, h) = fit_area(w, h, 1_200_000);
                (w * h).div_ceil(750)
            }
            ImageCalculator::OpenAiTiles {
                base,
                per_tile,
                short_side,
                detail,
            } => match detail {
                Detail::Low => u64::from(base),
                Detail::High => {
                    let (w, h) = fit_box(w, h, 2048, 2048);
                    let (w, h) = shorten(w, h, u64::from(short_side));
                    u64::from(base) + u64::from(per_tile) * w.div_ceil(512) * h.div_ceil(512)
                }
            },
            ImageCalculator::OpenAiPatches {
                max_dim,
                budget,
                multiplier_milli,
            } => {
                let (w, h) = fit_box(w, h, u64::from(max_dim), u64::from(max_dim));
                let patches = openai_patches(w, h, budget.map(u64::from));
                (patches * u64::from(multiplier_milli)).div_ceil(1000)
            }
            ImageCalculator::GeminiFixed { tokens } => u64::from(tokens),
            ImageCalculator::GeminiTiles if w <= 384 && h <= 384 => 258,
            ImageCalculator::GeminiTiles => w.div_ceil(768) * h.div_ceil(768) * 258,
            ImageCalculator::Gemini15Tiles if w <= 384 && h <= 384 => 258,
            ImageCalculator::Gemini15Tiles => {
                let tile = (w.min(h) * 2 / 3).clamp(256, 768);
                w.div_ceil(tile) * h.div_ceil(tile) * 258
            }
        }
    }
}

/// Anthropic's documented resize: the largest aspect-preserving size that fits both limits,
/// found by binary search along the long edge.
fn anthropic_resize(w: u64, h: u64, max_edge: u64, max_tokens: u64) -> (u64, u64) {
    let fits = |w: u64, h: u64| {
        w.div_ceil(28) * 28 <= max_edge
            && h.div_ceil(28) * 28 <= max_edge
            && w.div_ceil(28) * h.div_ceil(28) <= max_tokens
    };
    if fits(w, h) {
        return (w, h);
    }
    if h > w {
        let (a, b) = anthropic_resize(h, w, max_edge, max_tokens);
        return (b, a);
    }
    // As the reference implementation computes it: the aspect ratio as a float, and Python's
    // round, which rounds halves to even (2000 x 1500 gives 1270 x 952, not 953).
    let aspect = w as f64 / h as f64;
    let other = |long: u64| ((long as f64 / aspect).round_ties_even() as u64).max(1);
    let (mut lo, mut hi) = (1, w);
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if fits(mid, other(mid)) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo, other(lo))
}

/// Scales down to fit a box, keeping the aspect, never enlarging; sides round down.
fn fit_box(w: u64, h: u64, max_w: u64, max_h: u64) -> (u64, u64) {
    if w <= max_w && h <= max_h {
        return (w, h);
    }
    let scale = (max_w as f64 / w as f64).min(max_h as f64 / h as f64);
    (
        ((w as f64 * scale).floor() as u64).max(1),
        ((h as f64 * scale).floor() as u64).max(1),
    )
}

/// Scales down so the area is at most `max_area`, keeping the aspect.
fn fit_area(w: u64, h: u64, max_area: u64) -> (u64, u64) {
    if w * h <= max_area {
        return (w, h);
    }
    let scale = (max_area as f64 / (w * h) as f64).sqrt();
    (
        ((w as f64 * scale).floor() as u64).max(1),
        ((h as f64 * scale).floor() as u64).max(1),
    )
}

/// Shortens the short side to `target` when it is longer, the other side rounding down.
fn shorten(w: u64, h: u64, target: u64) -> (u64, u64) {
    let short = w.min(h);
    if short <= target {
        return (w, h);
    }
    let scale = target as f64 / short as f64;
    if w <= h {
        (target, ((h as f64 * scale).floor() as u64).max(1))
    } else {
        (((w as f64 * scale).floor() as u64).max(1), target)
    }
}

/// OpenAI's patch count, shrinking to the budget as its guide does.
fn openai_patches(w: u64, h: u64, budget: Option<u64>) -> u64 {
    let patches = w.div_ceil(32) * h.div_ceil(32);
    match budget {
        Some(budget) if patches > budget => {
            let (wf, hf) = (w as f64, h as f64);
            let shrink = (32.0 * 32.0 * budget as f64 / (wf * hf)).sqrt();
            let (sw, sh) = (wf * shrink / 32.0, hf * shrink / 32.0);
            let adjusted = shrink * (sw.floor() / sw).min(sh.floor() / sh);
            let (w, h) = (
                (wf * adjusted).floor() as u64,
                (hf * adjusted).floor() as u64,
            );
            w.max(1).div_ceil(32) * h.max(1).div_ceil(32)
        }
        _ => patches,
    }
}

/// One row of a dated pricing table: the models a rule applies to, and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct PricedModels {
    /// Model names or families the row covers.
    pub models: &'static [&'static str],
    /// The rule.
    pub calculator: ImageCalculator,
    /// The date of the provider documentation the figures come from.
    pub as_of: &'static str,
    /// Where they come from.
    pub source: &'static str,
}

const CLAUDE_VISION: &str = "platform.claude.com/docs/en/build-with-claude/vision";
const OPENAI_VISION: &str = "developers.openai.com/api/docs/guides/images-vision";
const GEMINI_TOKENS: &str = "ai.google.dev/gemini-api/docs/tokens, /media-resolution";

/// Anthropic's tiers, current and legacy.
pub const ANTHROPIC_TABLE: &[PricedModels] = &[
    PricedModels {
        models: &[
            "claude-opus-4-7",
            "claude-opus-4-8",
            "claude-sonnet-5",
            "claude-fable-5",
            "claude-mythos-5",
        ],
        calculator: ImageCalculator::ANTHROPIC_HIGH_RES,
        as_of: "2026-07-13",
        source: CLAUDE_VISION,
    },
    PricedModels {
        models: &["claude (all other models)"],
        calculator: ImageCalculator::ANTHROPIC_STANDARD,
        as_of: "2026-07-13",
        source: CLAUDE_VISION,
    },
    PricedModels {
        models: &["claude (legacy w*h/750 rule)"],
        calculator: ImageCalculator::AnthropicLegacy,
        as_of: "2026-04-26",
        source: "docs.anthropic.com/en/docs/vision",
    },
];

const fn tiles(base: u32, per_tile: u32) -> ImageCalculator {
    ImageCalculator::OpenAiTiles {
        base,
        per_tile,
        short_side: 768,
        detail: Detail::High,
    }
}

const fn patches(max_dim: u32, budget: u32, multiplier_milli: u32) -> ImageCalculator {
    ImageCalculator::OpenAiPatches {
        max_dim,
        budget: Some(budget),
        multiplier_milli,
    }
}

/// OpenAI's models, at `detail: high` (or `auto` where it means high).
pub const OPENAI_TABLE: &[PricedModels] = &[
    PricedModels {
        models: &["gpt-4o", "gpt-4.1", "gpt-4.5"],
        calculator: tiles(85, 170),
        as_of: "2026-10",
        source: OPENAI_VISION,
    },
    PricedModels {
        models: &["gpt-4o-mini"],
        calculator: tiles(2833, 5667),
        as_of: "2026-10",
        source: OPENAI_VISION,
    },
    PricedModels {
        models: &["o1", "o1-pro", "o3"],
        calculator: tiles(75, 150),
        as_of: "2026-10",
        source: OPENAI_VISION,
    },
    PricedModels {
        models: &["computer-use-preview"],
        calculator: tiles(65, 129),
        as_of: "2026-06",
        source: OPENAI_VISION,
    },
    PricedModels {
        models: &["gpt-5", "gpt-5-chat-latest", "gpt-5.1"],
        calculator: tiles(70, 140),
        as_of: "2026-10",
        source: OPENAI_VISION,
    },
    PricedModels {
        models: &["gpt-image-1"],
        calculator: ImageCalculator::OpenAiTiles {
            base: 65,
            per_tile: 129,
            short_side: 512,
            detail: Detail::High,
        },
        as_of: "2026-10",
        source: OPENAI_VISION,
    },
    PricedModels {
        models: &[
            "gpt-5.4",
            "gpt-5.5",
            "gpt-5.2",
            "gpt-5.4-mini",
            "gpt-5.4-nano",
        ],
        calculator: ImageCalculator::OPENAI_GPT_5_4,
        as_of: "2026-10",
        source: OPENAI_VISION,
    },
    PricedModels {
        models: &["gpt-4.1-mini"],
        calculator: patches(2048, 1536, 1620),
        as_of: "2025",
        source: OPENAI_VISION,
    },
    PricedModels {
        models: &["gpt-4.1-nano"],
        calculator: patches(2048, 1536, 2460),
        as_of: "2025",
        source: OPENAI_VISION,
    },
    PricedModels {
        models: &["o4-mini"],
        calculator: patches(2048, 1536, 1720),
        as_of: "2025",
        source: OPENAI_VISION,
    },
];

/// Gemini's rules by generation and media resolution.
pub const GEMINI_TABLE: &[PricedModels] = &[
    PricedModels {
        models: &["gemini-3 (media_resolution low)"],
        calculator: ImageCalculator::GeminiFixed { tokens: 280 },
        as_of: "2026-09",
        source: GEMINI_TOKENS,
    },
    PricedModels {
        models: &["gemini-3 (media_resolution medium)"],
        calculator: ImageCalculator::GeminiFixed { tokens: 560 },
        as_of: "2026-09",
        source: GEMINI_TOKENS,
    },
    PricedModels {
        models: &["gemini-3 (media_resolution high, the default)"],
        calculator: ImageCalculator::GEMINI_3_DEFAULT,
        as_of: "2026-09",
        source: GEMINI_TOKENS,
    },
    PricedModels {
        models: &["gemini-3 (media_resolution ultra high)"],
        calculator: ImageCalculator::GeminiFixed { tokens: 2240 },
        as_of: "2026-09",
        source: GEMINI_TOKENS,
    },
    PricedModels {
        models: &["gemini-2.0", "gemini-2.5"],
        calculator: ImageCalculator::GeminiTiles,
        as_of: "2026-09",
        source: GEMINI_TOKENS,
    },
    PricedModels {
        models: &["gemini-1.5"],
        calculator: ImageCalculator::Gemini15Tiles,
        as_of: "2025",
        source: GEMINI_TOKENS,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[rstest::rstest]
    #[case(200, 200, 64, 64)]
    #[case(1000, 1000, 1296, 1296)]
    #[case(1092, 1092, 1521, 1521)]
    #[case(1920, 1080, 1560, 2691)]
    #[case(2000, 1500, 1564, 3888)]
    #[case(3840, 2160, 1560, 4784)]
    fn anthropic_current_rule_matches_every_documented_example(
        #[case] width: u32,
        #[case] height: u32,
        #[case] standard: u64,
        #[case] high: u64,
    ) {
        let std = ImageCalculator::ANTHROPIC_STANDARD;
        let hi = ImageCalculator::ANTHROPIC_HIGH_RES;
        assert_eq!(std.tokens(width, height), standard, "standard");
        assert_eq!(hi.tokens(width, height), high, "high-res");
    }

    #[rstest::rstest]
    #[case(1075, 1520, 1568, 1568, (924, 1307))]
    #[case(1920, 1080, 1568, 1568, (1456, 819))]
    #[case(2000, 1500, 1568, 1568, (1270, 952))]
    #[case(3840, 2160, 1568, 1568, (1456, 819))]
    #[case(3840, 2160, 2576, 4784, (2576, 1449))]
    fn anthropic_resizes_within_its_bounds(
        #[case] width: u64,
        #[case] height: u64,
        #[case] max_edge: u64,
        #[case] max_tokens: u64,
        #[case] resized: (u64, u64),
    ) {
        assert_eq!(
            anthropic_resize(width, height, max_edge, max_tokens),
            resized
        );
    }

    #[test]
    fn anthropic_legacy_rule_matches_its_examples() {
        let legacy = ImageCalculator::AnthropicLegacy;
        assert_eq!(legacy.tokens(200, 200), 54);
        assert_eq!(legacy.tokens(1000, 1000), 1334);
        assert_eq!(legacy.tokens(1092, 1092), 1590);
    }

    #[test]
    fn openai_tiles_match_the_guides_examples() {
        let gpt4o = tiles(85, 170);
        assert_eq!(gpt4o.tokens(1024, 1024), 765);
        assert_eq!(gpt4o.tokens(2048, 4096), 1105);
        let low = ImageCalculator::OpenAiTiles {
            base: 85,
            per_tile: 170,
            short_side: 768,
            detail: Detail::Low,
        };
        assert_eq!(low.tokens(4096, 8192), 85);
    }

    #[test]
    fn openai_patches_match_the_guides_examples() {
        assert_eq!(openai_patches(1024, 1024, Some(1536)), 1024);
        assert_eq!(openai_patches(1800, 2400, Some(1536)), 1452);
        let gpt54 = patches(2048, 2500, 1200);
        assert_eq!(gpt54.tokens(1024, 1024), 1229);
        assert_eq!(gpt54.tokens(2048, 2048), 3000);
        assert_eq!(openai_patches(2048, 2048, Some(2500)), 2500);
    }

    #[test]
    fn gemini_rules() {
        assert_eq!(ImageCalculator::GeminiTiles.tokens(384, 384), 258);
        assert_eq!(ImageCalculator::GeminiTiles.tokens(1000, 700), 2 * 258);
        assert_eq!(
            ImageCalculator::GeminiFixed { tokens: 1120 }.tokens(12_000, 9_000),
            1120
        );
        assert_eq!(ImageCalculator::Gemini15Tiles.tokens(300, 300), 258);
        // min side 900 -> tile 600 -> 2 x 2 tiles.
        assert_eq!(ImageCalculator::Gemini15Tiles.tokens(1200, 900), 4 * 258);
    }
}
