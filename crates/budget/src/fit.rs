//! Head/tail fitting: a tool result over its budget keeps a contiguous head and tail, the
//! middle is replaced by a notice saying what was left out and where the whole result is.

use mcpl_lanes::{LiveCopy, Part, Projector, ToolResult, ToolResultCopies};

use crate::route::{Pricer, Unpriceable};
use crate::spill::{Spill, SpillId, SpillStore, write_spill_of};

/// The default tool-result budget, in estimated tokens.
pub const DEFAULT_BUDGET: u64 = 12_500;

/// How far back (or forward) from a cut a line break is looked for, in bytes: a cut moves to a
/// line boundary only when one is this close.
const LINE_WINDOW: usize = 240;

/// `[… <n> tokens omitted (<c> characters, <i> images); the full result is in <path>]`
pub fn omission_notice(tokens: u64, characters: u64, images: u64, path: &str) -> String {
    format!(
        "[… {tokens} tokens omitted ({characters} characters, {images} images); the full result is in {path}]"
    )
}

/// `[… <n> tokens omitted (<c> characters, <i> images); read the rest with read_result("<id>")]`:
/// the notice for a model whose host offers `read_result`.
pub fn read_back_notice(tokens: u64, characters: u64, images: u64, id: &SpillId) -> String {
    format!(
        "[… {tokens} tokens omitted ({characters} characters, {images} images); read the rest with read_result(\"{id}\")]"
    )
}

/// Words an omission notice from what was left out: tokens, characters, images.
type NoticeOf<'n> = &'n dyn Fn(u64, u64, u64) -> String;

/// Why a result over its budget could not be cut to fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CutError {
    /// Something the result shows cannot be priced on the route.
    #[error(transparent)]
    Unpriceable(#[from] Unpriceable),
    /// The budget is smaller than the omission notice that would replace the middle.
    #[error("the budget cannot hold the omission notice ({reserve} tokens)")]
    NoticeOverBudget {
        /// The price of the longest notice and its separators.
        reserve: u64,
    },
    /// No head and tail around the notice came within the budget.
    #[error("no cut within the budget was found")]
    NoCut,
}

/// A tool result fitted to its budget, or kept whole with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted<'a> {
    /// The copies as they go: fitted when cut, else the originals.
    pub copies: ToolResultCopies<'a>,
    /// The live copy's price on the route, when it can be priced.
    pub price: Option<u64>,
    /// The stored copy's price: the text every later request carries, fitted to the same
    /// budget independently of the live copy.
    pub stored_price: u64,
    /// The spill file and its attachments, when one was written.
    pub spill: Option<Spill>,
    /// Whether the middle was cut.
    pub cut: bool,
    /// What happened, when anything did: why a result over budget was kept whole, say.
    pub diagnostics: Vec<String>,
}

/// Projects a tool result on the tool-result lanes and fits both copies to `budget` estimated
/// tokens, each priced and cut on its own: the live copy (sent once) by its native parts'
/// prices, the stored copy (kept in history, so carried by every later request) by its text.
/// When either is over budget, the whole result is spilled first (through `store`), then the
/// middle of each copy over budget is cut. A result that cannot be priced, or whose spill cannot
/// be written, keeps its original content, and a diagnostic says why.
pub fn fit_tool_result<'a>(
    projector: &mut Projector<'_>,
    result: &ToolResult<'a>,
    pricer: Pricer<'_>,
    budget: u64,
    store: Option<&mut dyn SpillStore>,
) -> Fitted<'a> {
    let copies = projector.tool_result(result);
    let stored_price = pricer.text.count(&copies.stored);
    // The copies stay in one place until the end: the cut reads them while it makes the fitted
    // ones, and a big result's copies are most of its memory, so they are never cloned.
    let whole = |copies, price, diagnostics| Fitted {
        copies,
        price,
        stored_price,
        spill: None,
        cut: false,
        diagnostics,
    };
    // Each shown thing is priced once; the cut reuses the prices.
    let items = match items_of(&copies, pricer, Some(stored_price)) {
        Ok(items) => items,
        Err(error) => {
            let reason = format!("the result cannot be priced ({error}); it is kept whole");
            return whole(copies, None, vec![reason]);
        }
    };
    let price: u64 = items.iter().map(|i| i.price).sum();
    if price <= budget && stored_price <= budget {
        return whole(copies, Some(price), Vec::new());
    }
    let over = if price > budget {
        format!("the result is {price} estimated tokens, over its budget of {budget}")
    } else {
        format!(
            "the result's stored copy is {stored_price} estimated tokens, over its budget of {budget}"
        )
    };
    let Some(store) = store else {
        let reason = format!("{over}, and no spill store is set; it is kept whole");
        return whole(copies, Some(price), vec![reason]);
    };
    let spill = match write_spill_of(projector, result, &copies, store) {
        Ok(spill) => spill,
        Err(error) => {
            let reason =
                format!("{over}, and its spill could not be written ({error}); it is kept whole");
            return whole(copies, Some(price), vec![reason]);
        }
    };
    let mut diagnostics = Vec::new();
    let notice = |tokens, characters, images| spill.omission_notice(tokens, characters, images);
    let mut live_cut = None;
    if price > budget {
        match cut_items(&copies, &items, pricer, budget, &notice) {
            Ok(cut) => live_cut = Some(cut),
            Err(reason) => diagnostics.push(format!(
                "{over}, and {reason}; it is kept whole, and spilled"
            )),
        }
    }
    drop(items);
    let mut fitted_price = price;
    let mut fitted_stored_price = stored_price;
    if let Some((cut, cut_price)) = &live_cut {
        fitted_price = *cut_price;
        fitted_stored_price = pricer.text.count(&cut.stored);
    }
    // Where the live copy is the stored text, its cut was the stored copy's too.
    let mut stored_cut = None;
    if fitted_stored_price > budget && matches!(copies.live, LiveCopy::Native(_)) {
        // The stored copy is cut from the original's pieces on its own prices: a tiny image
        // costs the live copy little, but its placeholder costs the stored copy more. The cut
        // reads only the items and `is_error` of the copies it is given.
        let stored_items = stored_items_of(&copies, pricer);
        match cut_items(&copies, &stored_items, pricer, budget, &notice) {
            Ok((cut, price)) => {
                fitted_stored_price = price;
                stored_cut = Some(cut);
            }
            Err(reason) => diagnostics.push(format!(
                "the stored copy is {fitted_stored_price} estimated tokens, over its budget of {budget}, and {reason}; it is kept whole, and spilled"
            )),
        }
    }
    let cut = live_cut.is_some() || stored_cut.is_some();
    let mut fitted = match live_cut {
        Some((cut, _)) => cut,
        None => copies,
    };
    if let Some(stored) = stored_cut {
        fitted.stored = stored.stored;
        fitted.part_ends = stored.part_ends;
    }
    Fitted {
        copies: fitted,
        price: Some(fitted_price),
        stored_price: fitted_stored_price,
        spill: Some(spill),
        cut,
        diagnostics,
    }
}

/// Every piece of a result's stored copy, priced as the text it is; an image's or audio's
/// placeholder is kept whole or left out, never split.
fn stored_items_of<'c, 'a>(
    copies: &'c ToolResultCopies<'a>,
    pricer: Pricer<'_>,
) -> Vec<Item<'c, 'a>> {
    let media = |index: usize| match &copies.live {
        LiveCopy::Native(parts) => matches!(
            parts.get(index),
            Some(Part::Image { .. } | Part::Audio { .. })
        ),
        LiveCopy::Stored => false,
    };
    copies
        .stored_parts()
        .enumerate()
        .map(|(index, stored)| Item {
            live: None,
            media: media(index),
            stored,
            price: pricer.text.count(stored),
        })
        .collect()
}

/// One shown thing: its live part (none when the live copy is the stored text), its stored
/// text, and its price.
struct Item<'c, 'a> {
    live: Option<&'c Part<'a>>,
    /// Whether it stands for an image or audio (its placeholder, in a stored-only cut).
    media: bool,
    stored: &'c str,
    price: u64,
}

impl Item<'_, '_> {
    fn is_text(&self) -> bool {
        !self.media
    }
}

/// What a result holds in all: its price, its text's characters, its images.
struct Totals {
    tokens: u64,
    characters: u64,
    images: u64,
}

impl Totals {
    fn of(items: &[Item<'_, '_>]) -> Totals {
        Totals {
            tokens: items.iter().map(|i| i.price).sum(),
            characters: items
                .iter()
                .filter(|i| i.is_text())
                .map(|i| i.stored.chars().count() as u64)
                .sum(),
            images: items.iter().filter(|i| !i.is_text()).count() as u64,
        }
    }
}

/// Where a cut falls: whole items kept from each end, and a part of the next text item.
#[derive(Debug, Clone, Copy)]
struct Cut {
    head_items: usize,
    head_partial: Option<usize>,
    tail_items: usize,
    tail_partial: Option<usize>,
}

/// Prices a result's copies once and, when the live copy is over `budget`, cuts the middle of
/// both so it fits, with the omission notice naming `spill_path` between head and tail.
/// Returns `None` when the copies already fit, else the fitted copies and their price.
pub fn cut<'a>(
    copies: &ToolResultCopies<'a>,
    pricer: Pricer<'_>,
    budget: u64,
    spill_path: &str,
) -> Result<Option<(ToolResultCopies<'a>, u64)>, CutError> {
    let items = items_of(copies, pricer, None)?;
    if items.iter().map(|i| i.price).sum::<u64>() <= budget {
        return Ok(None);
    }
    let notice =
        |tokens, characters, images| omission_notice(tokens, characters, images, spill_path);
    cut_items(copies, &items, pricer, budget, &notice).map(Some)
}

/// Every shown thing of a result's copies, priced once: a live copy that is the stored text
/// costs `stored_price` when the caller has counted it already.
fn items_of<'c, 'a>(
    copies: &'c ToolResultCopies<'a>,
    pricer: Pricer<'_>,
    stored_price: Option<u64>,
) -> Result<Vec<Item<'c, 'a>>, Unpriceable> {
    match &copies.live {
        LiveCopy::Stored => Ok(vec![Item {
            live: None,
            media: false,
            stored: &copies.stored,
            price: stored_price.unwrap_or_else(|| pricer.text.count(&copies.stored)),
        }]),
        LiveCopy::Native(parts) => parts
            .iter()
            .zip(copies.stored_parts())
            .map(|(part, stored)| {
                Ok(Item {
                    live: Some(part),
                    media: matches!(part, Part::Image { .. } | Part::Audio { .. }),
                    stored,
                    price: pricer.part(part)?,
                })
            })
            .collect(),
    }
}

fn cut_items<'a>(
    copies: &ToolResultCopies<'a>,
    items: &[Item<'_, 'a>],
    pricer: Pricer<'_>,
    budget: u64,
    notice: NoticeOf<'_>,
) -> Result<(ToolResultCopies<'a>, u64), CutError> {
    let whole = Totals::of(items);
    let (total, characters, images) = (whole.tokens, whole.characters, whole.images);
    // The notice's numbers can only be smaller than these, so this prices the longest notice;
    // the separators around it cost the rest of the reserve.
    let reserve = pricer.text.count(&notice(total, characters, images)) + pricer.text.count("\n\n");
    if reserve >= budget {
        return Err(CutError::NoticeOverBudget { reserve });
    }
    let mut available = budget - reserve;
    for _ in 0..8 {
        let head_budget = available / 2;
        let cut = find_cut(items, pricer, head_budget, available - head_budget);
        let fitted = assemble(copies, items, &whole, cut, pricer, notice);
        let price = pricer.live(&fitted.live, &fitted.stored)?;
        if price <= budget {
            return Ok((fitted, price));
        }
        // Joining pieces can cost a little more than their sum; give the excess back and cut
        // again.
        available = available.saturating_sub(price - budget);
    }
    Err(CutError::NoCut)
}

fn find_cut(items: &[Item<'_, '_>], pricer: Pricer<'_>, head_budget: u64, tail_budget: u64) -> Cut {
    let mut cut = Cut {
        head_items: 0,
        head_partial: None,
        tail_items: 0,
        tail_partial: None,
    };
    let mut remaining = head_budget;
    for item in items {
        if item.price <= remaining {
            remaining -= item.price;
            cut.head_items += 1;
            continue;
        }
        if item.is_text() {
            let end = pricer.text.prefix_within(item.stored, remaining);
            let end = line_before(item.stored, end);
            cut.head_partial = (end > 0).then_some(end);
        }
        // An image that does not fit ends the head; the space left stays unused.
        break;
    }
    let mut remaining = tail_budget;
    let first_free = cut.head_items;
    for (index, item) in items.iter().enumerate().rev() {
        if index < first_free {
            break;
        }
        let shared = index == first_free && cut.head_partial.is_some();
        if item.price <= remaining && !shared {
            remaining -= item.price;
            cut.tail_items += 1;
            continue;
        }
        if item.is_text() {
            let start = pricer.text.suffix_within(item.stored, remaining);
            let start = line_after(item.stored, start);
            let start = if shared {
                start.max(cut.head_partial.unwrap_or(0))
            } else {
                start
            };
            cut.tail_partial = (start < item.stored.len()).then_some(start);
        }
        break;
    }
    cut
}

/// Moves a head's end back to just after a line break, when one is close.
fn line_before(text: &str, end: usize) -> usize {
    let window_start = floor_boundary(text, end.saturating_sub(LINE_WINDOW));
    match text[window_start..end].rfind('\n') {
        Some(offset) if end < text.len() => window_start + offset + 1,
        _ => end,
    }
}

/// Moves a tail's start forward to just after a line break, when one is close.
fn line_after(text: &str, start: usize) -> usize {
    let window_end = floor_boundary(text, (start + LINE_WINDOW).min(text.len()));
    match text[start..window_end].find('\n') {
        Some(offset) if start > 0 && start + offset + 1 < text.len() => start + offset + 1,
        _ => start,
    }
}

fn floor_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn assemble<'a>(
    original: &ToolResultCopies<'a>,
    items: &[Item<'_, 'a>],
    whole: &Totals,
    cut: Cut,
    pricer: Pricer<'_>,
    notice_of: NoticeOf<'_>,
) -> ToolResultCopies<'a> {
    let n = items.len();
    let tail_start = n - cut.tail_items;
    let mut kept_price = 0;
    let mut kept_characters = 0u64;
    let mut kept_images = 0u64;
    // (live part, stored text) for every kept piece, in order, with the notice's place marked.
    let mut head: Vec<(Option<Part<'a>>, String)> = Vec::new();
    let mut tail: Vec<(Option<Part<'a>>, String)> = Vec::new();
    let mut keep =
        |item: &Item<'_, 'a>, text: Option<&str>, out: &mut Vec<(Option<Part<'a>>, String)>| {
            match text {
                Some(piece) => {
                    kept_price += pricer.text.count(piece);
                    kept_characters += piece.chars().count() as u64;
                    out.push((
                        item.live.map(|_| Part::Text(piece.to_owned())),
                        piece.to_owned(),
                    ));
                }
                None => {
                    kept_price += item.price;
                    if item.is_text() {
                        kept_characters += item.stored.chars().count() as u64;
                    } else {
                        kept_images += 1;
                    }
                    out.push((item.live.cloned(), item.stored.to_owned()));
                }
            }
        };
    for item in &items[..cut.head_items] {
        keep(item, None, &mut head);
    }
    if let Some(end) = cut.head_partial {
        let item = &items[cut.head_items];
        keep(item, Some(&item.stored[..end]), &mut head);
    }
    if let Some(start) = cut.tail_partial {
        let item = &items[tail_start - 1];
        keep(item, Some(&item.stored[start..]), &mut tail);
    }
    for item in &items[tail_start..] {
        keep(item, None, &mut tail);
    }
    let (total, characters, images) = (whole.tokens, whole.characters, whole.images);
    let notice = notice_of(
        total.saturating_sub(kept_price),
        characters.saturating_sub(kept_characters),
        images - kept_images,
    );
    let native = items.first().is_some_and(|i| i.live.is_some());
    let pieces: Vec<(Option<Part<'a>>, String)> = head
        .into_iter()
        .chain(std::iter::once((
            native.then(|| Part::Text(notice.clone())),
            notice.clone(),
        )))
        .chain(tail)
        .collect();
    let (stored, part_ends) = ToolResultCopies::join_parts(pieces.iter().map(|(_, s)| s.as_str()));
    let keeps_an_image = pieces
        .iter()
        .any(|(p, _)| matches!(p, Some(Part::Image { .. } | Part::Audio { .. })));
    let live = if keeps_an_image {
        LiveCopy::Native(pieces.into_iter().filter_map(|(p, _)| p).collect())
    } else {
        LiveCopy::Stored
    };
    ToolResultCopies {
        stored: stored.into(),
        part_ends,
        live,
        is_error: original.is_error,
        spills_as_stored: false,
    }
}
