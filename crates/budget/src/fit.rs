//! Head/tail fitting: a tool result over its budget keeps a contiguous head and tail, the
//! middle is replaced by a notice saying what was left out and where the whole result is.

use std::sync::atomic::{AtomicU64, Ordering};

use mcpl_lanes::{DetachedCopies, LiveCopy, Part, Projector, ToolResult, ToolResultCopies};

use crate::route::{Pricer, Unpriceable};
use crate::spill::{Spill, SpillError, SpillId, SpillStore, write_spill_of, write_stored_spill};

/// The default tool-result budget, in estimated tokens.
pub const DEFAULT_BUDGET: u64 = 12_500;

/// The budget of one push event, channel message or injection unless the server's config says
/// otherwise: a server's messages enter every later request, so each is held to less than a
/// result.
pub const DEFAULT_MESSAGE_BUDGET: u64 = 4_000;

/// The most estimated tokens a tool's own budget (a size its server declares, or the config's
/// for the tool) may be unless the config says otherwise: four times [`DEFAULT_BUDGET`], a
/// quarter of a 200,000-token window (decision 0134).
pub const DEFAULT_TOOL_BUDGET_CEILING: u64 = 50_000;

/// How far back (or forward) from a cut a line break is looked for, in bytes: a cut moves to a
/// line boundary only when one is this close.
const LINE_WINDOW: usize = 240;

/// What a cut left out of a result, as its omission notice counts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Omitted {
    /// Tokens: o200k's count of what was priced, a quick estimate of the rest.
    pub tokens: u64,
    /// Characters of text.
    pub characters: u64,
    /// Images.
    pub images: u64,
    /// Documents (PDFs).
    pub documents: u64,
    /// Audio clips.
    pub audio: u64,
}

impl std::fmt::Display for Omitted {
    /// `<n> tokens omitted (<c> characters, <i> images)`, with `, <d> documents` and
    /// `, <a> audio clips` when a cut left any out.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Omitted {
            tokens,
            characters,
            images,
            documents,
            audio,
        } = self;
        write!(
            f,
            "{tokens} tokens omitted ({characters} characters, {images} images"
        )?;
        if *documents > 0 {
            write!(f, ", {documents} documents")?;
        }
        if *audio > 0 {
            write!(f, ", {audio} audio clips")?;
        }
        f.write_str(")")
    }
}

/// `[… <n> tokens omitted (<c> characters, <i> images); the full result is in <path>]`
pub fn omission_notice(omitted: Omitted, path: &str) -> String {
    format!("[… {omitted}; the full result is in {path}]")
}

/// `[… <n> tokens omitted (<c> characters, <i> images); read the rest with read_result("<id>")]`:
/// the notice for a model whose host offers `read_result`.
pub fn read_back_notice(omitted: Omitted, id: &SpillId) -> String {
    format!("[… {omitted}; read the rest with read_result(\"{id}\")]")
}

/// Words an omission notice from what was left out.
type NoticeOf<'n> = &'n dyn Fn(Omitted) -> String;

/// Why a result over its budget could not be cut to fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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
#[non_exhaustive]
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
    /// Why the whole could not be kept, when a spill was needed and could not be written (the
    /// result is cut all the same).
    pub unsaved: Option<String>,
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
///
/// A text is read only until the budget is spent: a result far over it costs the price of
/// what is kept, not of what is left out.
pub fn fit_tool_result<'a>(
    projector: &mut Projector<'_>,
    result: &ToolResult<'a>,
    pricer: Pricer<'_>,
    budget: u64,
    store: Option<&mut dyn SpillStore>,
) -> Fitted<'a> {
    let copies = projector.tool_result(result);
    fit_tool_result_copies(projector, result, copies, pricer, budget, store)
}

/// [`fit_tool_result`] for `copies` the same projector has just made of `result`
/// ([`Projector::tool_result`]): a caller that made them to try [`ToolResultCopies::detach`]
/// fits them here when they do not detach, without a second projection.
pub fn fit_tool_result_copies<'a>(
    projector: &mut Projector<'_>,
    result: &ToolResult<'a>,
    copies: ToolResultCopies<'a>,
    pricer: Pricer<'_>,
    budget: u64,
    store: Option<&mut dyn SpillStore>,
) -> Fitted<'a> {
    fit_copies(
        projector,
        copies,
        pricer,
        budget,
        store,
        |projector, copies, store| write_spill_of(projector, result, copies, store),
    )
}

/// [`fit_tool_result`] for copies [`ToolResultCopies::detach`] took from their result: the
/// same fitted copies, spill and diagnostics, with the result (and what it was read from)
/// already freed. A big result of small blocks is then held once, as its stored copy, while it
/// is priced, cut and spilled.
pub fn fit_detached(
    projector: &mut Projector<'_>,
    copies: DetachedCopies,
    pricer: Pricer<'_>,
    budget: u64,
    store: Option<&mut dyn SpillStore>,
) -> Fitted<'static> {
    // Detached copies spill as their stored copy is.
    fit_copies(
        projector,
        copies.into_copies(),
        pricer,
        budget,
        store,
        |projector, copies, store| write_stored_spill(projector, &copies.stored, store),
    )
}

/// Fits copies just made of a result, as [`fit_tool_result`] says; `write_spill` writes their
/// result's spill when one is needed.
fn fit_copies<'a>(
    projector: &mut Projector<'_>,
    copies: ToolResultCopies<'a>,
    pricer: Pricer<'_>,
    budget: u64,
    store: Option<&mut dyn SpillStore>,
    write_spill: impl FnOnce(
        &mut Projector<'_>,
        &ToolResultCopies<'a>,
        &mut dyn SpillStore,
    ) -> Result<Spill, SpillError>,
) -> Fitted<'a> {
    let stored_within = pricer.text.count_within(&copies.stored, budget);
    // The copies stay in one place until the end: the cut reads them while it makes the fitted
    // ones, and a big result's copies are most of its memory, so they are never cloned.
    let whole = |copies: ToolResultCopies<'a>, price, diagnostics| {
        let stored_price = stored_within.unwrap_or_else(|| pricer.text.count(&copies.stored));
        Fitted {
            copies,
            price,
            stored_price,
            spill: None,
            unsaved: None,
            cut: false,
            diagnostics,
        }
    };
    // Each shown thing is priced once, when it is first needed; the cut reuses the prices.
    let items = match items_of(&copies, pricer, stored_within) {
        Ok(items) => items,
        Err(error) => {
            let reason = format!("the result cannot be priced ({error}); it is kept whole");
            return whole(copies, None, vec![reason]);
        }
    };
    let live_within = price_within(&items, pricer, budget);
    if let (Some(price), Some(_)) = (live_within, stored_within) {
        return whole(copies, Some(price), Vec::new());
    }
    // Only a result kept whole says its whole price, so only then is all of it counted.
    let full_price = |items: &[Item<'_, '_>]| items.iter().map(|i| i.price(pricer)).sum::<u64>();
    let over = |items: &[Item<'_, '_>]| match live_within {
        None => format!(
            "the result is {} estimated tokens, over its budget of {budget}",
            full_price(items)
        ),
        Some(_) => format!(
            "the result's stored copy is {} estimated tokens, over its budget of {budget}",
            pricer.text.count(&copies.stored)
        ),
    };
    let Some(store) = store else {
        let reason = format!(
            "{}, and no spill store is set; it is kept whole",
            over(&items)
        );
        let price = full_price(&items);
        drop(items);
        return whole(copies, Some(price), vec![reason]);
    };
    // A spill that cannot be written does not lift the budget: the result is cut all the same,
    // and its notice says the whole could not be kept.
    let mut diagnostics = Vec::new();
    // A result to be cut has its totals counted on a second core while its spill is written.
    let count_totals = live_within.is_none() && copies.stored.len() >= TOTALS_BESIDE_BYTES;
    let (written, mut whole) = beside_totals(&items, pricer, count_totals, || {
        write_spill(projector, &copies, store)
    });
    let (spill, unsaved) = match written {
        Ok(spill) => (Some(spill), None),
        Err(error) => {
            // What the diagnostic counts is counted again by the cut: its prices change the
            // totals.
            whole = None;
            diagnostics.push(format!(
                "{}, and its spill could not be written ({error}); it is cut, and the whole is not kept",
                over(&items)
            ));
            (None, Some(error.to_string()))
        }
    };
    let notice = |omitted| match (&spill, &unsaved) {
        (Some(spill), _) => spill.omission_notice(omitted),
        (None, error) => format!(
            "[… {omitted}; the whole could not be kept: {}]",
            error.as_deref().unwrap_or("")
        ),
    };
    let reference = match (&spill, &unsaved) {
        (Some(spill), _) => spill.reference(),
        (None, error) => format!(
            "the whole could not be kept: {}",
            error.as_deref().unwrap_or("")
        ),
    };
    let mut live_cut = None;
    let mut left_out = false;
    let mut fitted_price = live_within;
    if live_within.is_none() {
        match cut_items(&copies, &items, pricer, budget, &notice, whole) {
            Ok(cut) => live_cut = Some(cut),
            Err(reason) => {
                // Nothing of it fits beside a notice: it goes as one line naming its spill, the
                // least a model can be sent about it, never whole.
                let line = format!("[the result was left out: {reference}]");
                let (stored, part_ends) =
                    ToolResultCopies::join_parts(std::iter::once(line.as_str()));
                let price = pricer.text.count(&line);
                left_out = true;
                live_cut = Some((
                    ToolResultCopies::new(
                        stored.into(),
                        part_ends,
                        LiveCopy::Stored,
                        copies.is_error,
                    ),
                    price,
                ));
                diagnostics.push(format!(
                    "{}, and {reason}; only a line naming its spill is sent",
                    over(&items)
                ));
            }
        }
    }
    drop(items);
    let mut fitted_stored_price = stored_within;
    if let Some((cut, cut_price)) = &live_cut {
        fitted_price = Some(*cut_price);
        fitted_stored_price = pricer.text.count_within(&cut.stored, budget);
    }
    // Where the live copy is the stored text, its cut was the stored copy's too.
    let mut stored_cut = None;
    let mut stored_price = None;
    if fitted_stored_price.is_none() && !left_out && matches!(copies.live, LiveCopy::Native(_)) {
        // The stored copy is cut from the original's pieces on its own prices: a tiny image
        // costs the live copy little, but its placeholder costs the stored copy more. The cut
        // reads only the items and `is_error` of the copies it is given.
        let stored_items = stored_items_of(&copies);
        match cut_items(&copies, &stored_items, pricer, budget, &notice, None) {
            Ok((cut, price)) => {
                stored_price = Some(price);
                stored_cut = Some(cut);
            }
            Err(reason) => {
                let stored = live_cut.as_ref().map_or(&copies.stored, |(c, _)| &c.stored);
                diagnostics.push(format!(
                    "the stored copy is {} estimated tokens, over its budget of {budget}, and {reason}; it is kept whole, and spilled",
                    pricer.text.count(stored)
                ))
            }
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
    let stored_price = stored_price
        .or(fitted_stored_price)
        .unwrap_or_else(|| pricer.text.count(&fitted.stored));
    Fitted {
        copies: fitted,
        price: fitted_price,
        stored_price,
        spill,
        unsaved,
        cut,
        diagnostics,
    }
}

/// What a shown thing is, for the cut and the notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Image,
    Document,
    Audio,
}

impl Kind {
    fn of(part: &Part<'_>) -> Kind {
        match part {
            Part::Text(_) => Kind::Text,
            Part::Image { .. } => Kind::Image,
            Part::Document { .. } => Kind::Document,
            Part::Audio { .. } => Kind::Audio,
        }
    }
}

/// Every piece of a result's stored copy, priced as the text it is; an image's, document's or
/// audio's placeholder is kept whole or left out, never split.
fn stored_items_of<'c, 'a>(copies: &'c ToolResultCopies<'a>) -> Vec<Item<'c, 'a>> {
    let kind = |index: usize| match &copies.live {
        LiveCopy::Native(parts) => parts.get(index).map_or(Kind::Text, Kind::of),
        LiveCopy::Stored => Kind::Text,
    };
    copies
        .stored_parts()
        .enumerate()
        .map(|(index, stored)| Item {
            live: None,
            kind: kind(index),
            stored,
            price: Price::new(None),
            capped: false,
        })
        .collect()
}

/// A price counted once and kept, which another thread may read (decision 0173).
#[derive(Debug)]
struct Price(
    /// The price plus one; zero while it is not counted. A price of `u64::MAX` is never kept,
    /// and so is counted each time it is asked.
    AtomicU64,
);

impl Price {
    fn new(price: Option<u64>) -> Price {
        Price(AtomicU64::new(Price::kept(price)))
    }

    /// What the atomic holds for `price`.
    fn kept(price: Option<u64>) -> u64 {
        price.and_then(|price| price.checked_add(1)).unwrap_or(0)
    }

    fn get(&self) -> Option<u64> {
        self.0.load(Ordering::Relaxed).checked_sub(1)
    }

    fn set(&self, price: Option<u64>) {
        self.0.store(Price::kept(price), Ordering::Relaxed);
    }
}

impl Clone for Price {
    fn clone(&self) -> Price {
        Price::new(self.get())
    }
}

/// One shown thing: its live part (none when the live copy is the stored text), its stored
/// text, and its price once known. A text's price is counted when a cut first needs it; a
/// native part's is known from the start.
#[derive(Clone)]
struct Item<'c, 'a> {
    live: Option<&'c Part<'a>>,
    kind: Kind,
    stored: &'c str,
    price: Price,
    /// A native part over the hard cap: it goes as its stored placeholder, a text kept whole
    /// or left out.
    capped: bool,
}

impl<'c, 'a> Item<'c, 'a> {
    /// The item as the cut sees it when `room` is all a kept thing may cost: a native image,
    /// document or audio clip dearer than that can never be sent, so it becomes its placeholder.
    fn capped_at(&self, pricer: Pricer<'_>, room: u64) -> Item<'c, 'a> {
        if !self.is_over(pricer, room) {
            return self.clone();
        }
        Item {
            price: Price::new(None),
            capped: true,
            ..self.clone()
        }
    }

    /// Whether it is a native image, document or clip that costs more than `room`.
    fn is_over(&self, pricer: Pricer<'_>, room: u64) -> bool {
        self.live.is_some() && self.kind != Kind::Text && self.price(pricer) > room
    }

    /// Whether it is cut as text: a text, or any stored piece but a media placeholder.
    fn is_text(&self) -> bool {
        self.kind == Kind::Text
    }

    /// Its price, counted now if it was not yet.
    fn price(&self, pricer: Pricer<'_>) -> u64 {
        if let Some(price) = self.price.get() {
            return price;
        }
        let price = pricer.text.count(self.stored);
        self.price.set(Some(price));
        price
    }

    /// Its price when it is at most `limit`: a text is read only until the limit is spent.
    fn price_within(&self, pricer: Pricer<'_>, limit: u64) -> Option<u64> {
        if let Some(price) = self.price.get() {
            return (price <= limit).then_some(price);
        }
        let price = pricer.text.count_within(self.stored, limit)?;
        self.price.set(Some(price));
        Some(price)
    }

    /// Its price if known, else a quick estimate: for what a notice reports.
    fn reported(&self, pricer: Pricer<'_>) -> u64 {
        self.price
            .get()
            .unwrap_or_else(|| pricer.text.estimate(self.stored))
    }
}

/// The price of all `items`, or `None` as soon as it is over `limit`.
fn price_within(items: &[Item<'_, '_>], pricer: Pricer<'_>, limit: u64) -> Option<u64> {
    let mut total = 0u64;
    for item in items {
        total += item.price_within(pricer, limit - total)?;
    }
    Some(total)
}

impl Omitted {
    /// Counts one whole shown thing: its reported tokens, and its characters or itself.
    fn add(&mut self, item: &Item<'_, '_>, pricer: Pricer<'_>) {
        self.tokens += item.reported(pricer);
        if item.capped {
            // Its placeholder was kept; the thing itself was left out.
            return;
        }
        match item.kind {
            Kind::Text => self.characters += item.stored.chars().count() as u64,
            Kind::Image => self.images += 1,
            Kind::Document => self.documents += 1,
            Kind::Audio => self.audio += 1,
        }
    }
}

/// A stored copy of at least this many bytes has its totals counted beside its spill
/// ([`beside_totals`]): a thread costs less than counting them.
const TOTALS_BESIDE_BYTES: usize = 512 << 10;

/// Runs `write` (a spill) on this thread and, when `count` says the totals are wanted, the
/// machine has two cores and the estimator may be shared, counts the [`totals`] of `items` on a
/// second thread meanwhile (decision 0173). Nothing prices an item while the spill is written,
/// so the totals are what the cut would count after it. `None` when they were not counted.
fn beside_totals<T>(
    items: &[Item<'_, '_>],
    pricer: Pricer<'_>,
    count: bool,
    write: impl FnOnce() -> T,
) -> (T, Option<Omitted>) {
    let shared = match count && mcpl_classify::two_cores() {
        true => pricer.text.as_sync(),
        false => None,
    };
    let Some(text) = shared else {
        return (write(), None);
    };
    let route = pricer.route;
    std::thread::scope(|scope| {
        let counted = std::thread::Builder::new()
            .spawn_scoped(scope, move || totals(items, Pricer { text, route }))
            .ok();
        let written = write();
        // A thread that failed leaves the totals to the cut.
        (written, counted.and_then(|counted| counted.join().ok()))
    })
}

/// What a result holds in all, as its notice counts it.
fn totals(items: &[Item<'_, '_>], pricer: Pricer<'_>) -> Omitted {
    let mut whole = Omitted::default();
    for item in items {
        whole.add(item, pricer);
    }
    whole
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
    if price_within(&items, pricer, budget).is_some() {
        return Ok(None);
    }
    let notice = |omitted| omission_notice(omitted, spill_path);
    cut_items(copies, &items, pricer, budget, &notice, None).map(Some)
}

/// As [`cut`], with the notice worded by `notice` from what was left out: for content that is
/// no tool result (a server's message), whose spill a host writes itself.
pub fn cut_with<'a>(
    copies: &ToolResultCopies<'a>,
    pricer: Pricer<'_>,
    budget: u64,
    notice: &dyn Fn(Omitted) -> String,
) -> Result<Option<(ToolResultCopies<'a>, u64)>, CutError> {
    let items = items_of(copies, pricer, None)?;
    if price_within(&items, pricer, budget).is_some() {
        return Ok(None);
    }
    cut_items(copies, &items, pricer, budget, notice, None).map(Some)
}

/// Every shown thing of a result's copies: a native part priced now, a text when first needed
/// (a live copy that is the stored text costs `stored_price` when the caller has counted it).
fn items_of<'c, 'a>(
    copies: &'c ToolResultCopies<'a>,
    pricer: Pricer<'_>,
    stored_price: Option<u64>,
) -> Result<Vec<Item<'c, 'a>>, Unpriceable> {
    match &copies.live {
        LiveCopy::Stored => Ok(vec![Item {
            live: None,
            kind: Kind::Text,
            stored: &copies.stored,
            price: Price::new(stored_price),
            capped: false,
        }]),
        LiveCopy::Native(parts) => parts
            .iter()
            .zip(copies.stored_parts())
            .map(|(part, stored)| {
                let kind = Kind::of(part);
                let price = match part {
                    Part::Text(_) => None,
                    _ => Some(pricer.part(part)?),
                };
                Ok(Item {
                    live: Some(part),
                    kind,
                    stored,
                    price: Price::new(price),
                    capped: false,
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
    whole: Option<Omitted>,
) -> Result<(ToolResultCopies<'a>, u64), CutError> {
    let whole = whole.unwrap_or_else(|| totals(items, pricer));
    // The notice's numbers can only be smaller than these, so this prices the longest notice
    // (a spill id is a long word, priced by its length, so the reserve is the same whatever id
    // the spill drew); the separators around it cost the rest of the reserve.
    let reserve = pricer.text.count(&notice(whole)) + pricer.text.count("\n\n");
    if reserve >= budget {
        return Err(CutError::NoticeOverBudget { reserve });
    }
    let mut available = budget - reserve;
    // The hard cap: what costs more than all the room beside the notice goes as its placeholder.
    // Copied only when one is over: a result of a million small blocks is not copied for nothing.
    let capped: Option<Vec<Item<'_, 'a>>> = items
        .iter()
        .any(|item| item.is_over(pricer, available))
        .then(|| {
            items
                .iter()
                .map(|item| item.capped_at(pricer, available))
                .collect()
        });
    let items = capped.as_deref().unwrap_or(items);
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
        if let Some(price) = item.price_within(pricer, remaining) {
            remaining -= price;
            cut.head_items += 1;
            continue;
        }
        if item.is_text() {
            let end = pricer.text.prefix_within(item.stored, remaining);
            let end = line_before(item.stored, end);
            cut.head_partial = (end > 0).then_some(end);
        }
        // An image, document or audio clip that does not fit ends the head; the space left
        // stays unused.
        break;
    }
    let mut remaining = tail_budget;
    let first_free = cut.head_items;
    for (index, item) in items.iter().enumerate().rev() {
        if index < first_free {
            break;
        }
        let shared = index == first_free && cut.head_partial.is_some();
        if !shared && let Some(price) = item.price_within(pricer, remaining) {
            remaining -= price;
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
    let window_start = text.floor_char_boundary(end.saturating_sub(LINE_WINDOW));
    match text[window_start..end].rfind('\n') {
        Some(offset) if end < text.len() => window_start + offset + 1,
        _ => end,
    }
}

/// Moves a tail's start forward to just after a line break, when one is close.
fn line_after(text: &str, start: usize) -> usize {
    let window_end = text.floor_char_boundary(start + LINE_WINDOW);
    match text[start..window_end].find('\n') {
        Some(offset) if start > 0 && start + offset + 1 < text.len() => start + offset + 1,
        _ => start,
    }
}

fn assemble<'a>(
    original: &ToolResultCopies<'a>,
    items: &[Item<'_, 'a>],
    whole: &Omitted,
    cut: Cut,
    pricer: Pricer<'_>,
    notice_of: NoticeOf<'_>,
) -> ToolResultCopies<'a> {
    let n = items.len();
    let tail_start = n - cut.tail_items;
    let mut kept = Omitted::default();
    // (live part, stored text) for every kept piece, in order, with the notice's place marked.
    let mut head: Vec<(Option<Part<'a>>, String)> = Vec::new();
    let mut tail: Vec<(Option<Part<'a>>, String)> = Vec::new();
    let mut keep =
        |item: &Item<'_, 'a>, text: Option<&str>, out: &mut Vec<(Option<Part<'a>>, String)>| {
            match text {
                Some(piece) => {
                    kept.tokens += pricer.text.count(piece);
                    kept.characters += piece.chars().count() as u64;
                    out.push((
                        item.live.map(|_| Part::Text(piece.to_owned())),
                        piece.to_owned(),
                    ));
                }
                None => {
                    kept.add(item, pricer);
                    let live = match item.live {
                        Some(_) if item.capped => Some(Part::Text(item.stored.to_owned())),
                        live => live.cloned(),
                    };
                    out.push((live, item.stored.to_owned()));
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
    let notice = notice_of(Omitted {
        tokens: whole.tokens.saturating_sub(kept.tokens),
        characters: whole.characters.saturating_sub(kept.characters),
        images: whole.images - kept.images,
        documents: whole.documents - kept.documents,
        audio: whole.audio - kept.audio,
    });
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
    let keeps_native = pieces.iter().any(|(p, _)| {
        matches!(
            p,
            Some(Part::Image { .. } | Part::Audio { .. } | Part::Document { .. })
        )
    });
    let live = if keeps_native {
        LiveCopy::Native(pieces.into_iter().filter_map(|(p, _)| p).collect())
    } else {
        LiveCopy::Stored
    };
    ToolResultCopies::new(stored.into(), part_ends, live, original.is_error)
}
