//! The lanes: one exhaustive match on the classifier's answer in each.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use mcpl_classify::{
    Block, BlockView, ContentView, DataView, Dimensions, EmbeddedBlob, ImageDefect, Invalid,
    InvalidReason, Limits, Media, Reference, ResultView, Sniffed, SourceBytes, classify,
    raw_members, raw_str,
};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::ledger::ImageLedger;
use crate::markers;
use crate::markers::WITHHELD_LINK;
use crate::registry::Registry;
use crate::route::Route;
use mcpl_redact::internal::Scope;
use mcpl_redact::{
    HiddenUris, PassCheck, PieceCheck, ServerName, UriPolicy, is_content_block, names_a_block,
};

/// What a spill writer does with each payload: given the payload and the text the stored copy
/// would show for it, returns the text the spill file shows in its place (an attachment's path).
pub type Attach<'f> = dyn FnMut(&Media<'_>, &str) -> String + 'f;

/// Where a reference arrived, as its stub says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Provenance {
    /// In a tool result (both copies, and a script's view).
    ToolResult,
    /// In a push event.
    PushEvent,
    /// In a channel message.
    ChannelMessage,
    /// In a context injection.
    ContextInjection,
}

impl Provenance {
    /// The words a stub uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::ToolResult => "from tool result",
            Provenance::PushEvent => "attachment on push event",
            Provenance::ChannelMessage => "attachment on channel message",
            Provenance::ContextInjection => "attachment on context injection",
        }
    }
}

/// One thing a model sees in a message or a native tool result, before a provider's encoder
/// writes it in that provider's JSON. Payloads are borrowed from the input, never copied.
///
/// A native part carries what classification learnt of its bytes (the type they are, and an
/// image's size in pixels), so nothing after the lane reads the payload's header again: the
/// budget prices an image from its [`Dimensions`], and an encoder names its type from its
/// [`Sniffed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part<'a> {
    /// Text.
    Text(String),
    /// A native image: what its bytes are, its size, and its base64 as sent.
    Image {
        /// PNG, JPEG, GIF or WebP, as the bytes say.
        sniffed: Sniffed,
        /// The size in pixels, as the image's header records it.
        dimensions: Dimensions,
        /// The base64 data.
        data: &'a str,
    },
    /// Native audio, where the route takes it.
    Audio {
        /// The audio's type, as the bytes say.
        sniffed: Sniffed,
        /// The base64 data.
        data: &'a str,
    },
    /// A native document: a PDF, as its magic bytes say, where the route takes one.
    Document {
        /// Its pages as `lopdf` counted them: a PDF whose pages could not be counted does not go
        /// natively.
        pages: u32,
        /// The base64 data.
        data: &'a str,
    },
}

impl Part<'_> {
    /// The media type a native part goes as (`image/png`, `audio/wav`, ...); `None` for text.
    pub fn media_type(&self) -> Option<&'static str> {
        match self {
            Part::Text(_) => None,
            Part::Image { sniffed, .. } | Part::Audio { sniffed, .. } => Some(sniffed.mime()),
            Part::Document { .. } => Some(Sniffed::Pdf.mime()),
        }
    }
}

/// A tool result's live copy: what goes to the provider on the turn it lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveCopy<'a> {
    /// No block goes native on this route: the live copy is the stored copy, byte for byte.
    Stored,
    /// At least one block goes native: one part per shown thing, in order.
    Native(Vec<Part<'a>>),
}

/// Both copies of a tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolResultCopies<'a> {
    /// The text kept in history and recompiled every later turn. The same result always gives
    /// the same text while the image ledger holds its images. A result whose stored copy is one
    /// server text with nothing redacted borrows that text (decision 0091): a 200 MB text is
    /// not copied to be priced, cut and spilled.
    pub stored: Cow<'a, str>,
    /// Where each of the stored copy's parts (before they were joined with `\n`) ends in
    /// `stored`: one per shown thing, in the order of the live copy's parts when it is native
    /// (an image's part is its placeholder). The first part starts at 0 and each other one
    /// byte after the one before it ends (past the `\n`). Ends rather than strings or ranges,
    /// so a result of a million small blocks holds its text once (decision 0083) and four bytes
    /// a part beside it while the copy is under 4 GiB (decision 0088, [`PartEnds`]);
    /// [`ToolResultCopies::stored_parts`] and
    /// [`ToolResultCopies::part_spans`] read them. Empty where no one needs the parts (a host
    /// pricing its window).
    pub part_ends: PartEnds,
    /// What goes to the provider on this turn.
    pub live: LiveCopy<'a>,
    /// Whether the server marked the result an error.
    pub is_error: bool,
    /// Whether a spill of the same result, made right after these copies, is `stored` with
    /// each payload's part replaced by its attachment line: the result has no data a spill
    /// shows otherwise (structured content, content that is not an array), and redaction found
    /// no url for the session to hide from then on. A spill then needs no second pass over the
    /// result ([`Projector::tool_result_spill_of`]), and the references and images it names
    /// keep the ids the stored copy gave them. `false` wherever that is not known (a cut copy,
    /// copies made elsewhere).
    pub spills_as_stored: bool,
    /// The blocks from the first to the last with a payload (image, audio, embedded blob), as
    /// the pass that made these copies found them: empty when none has one. A spill then reads
    /// only these blocks again, not every block of a result of many texts.
    payload_blocks: Range<usize>,
}

impl<'a> ToolResultCopies<'a> {
    /// Copies made outside the lanes (a cut, say): `stored` with its parts ending at
    /// `part_ends`, and the live copy. A spill of them is not known to be `stored` with its
    /// attachment lines ([`ToolResultCopies::spills_as_stored`] is `false`).
    pub fn new(
        stored: Cow<'a, str>,
        part_ends: PartEnds,
        live: LiveCopy<'a>,
        is_error: bool,
    ) -> ToolResultCopies<'a> {
        ToolResultCopies {
            stored,
            part_ends,
            live,
            is_error,
            spills_as_stored: false,
            payload_blocks: 0..0,
        }
    }

    /// The stored copy's parts, in order (see [`ToolResultCopies::part_ends`]).
    pub fn stored_parts(&self) -> impl Iterator<Item = &str> {
        self.part_spans()
            .map(|span| self.stored.get(span).unwrap_or_default())
    }

    /// Each of the stored copy's parts as a byte range of `stored`, in order (see
    /// [`ToolResultCopies::part_ends`]).
    pub fn part_spans(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        part_spans(&self.part_ends)
    }

    /// For copies a projector has just made of `result` and that say
    /// [`ToolResultCopies::spills_as_stored`], calls `each` with every payload (image, audio,
    /// embedded blob) and its part's span in the stored copy, in order: the spill text is the
    /// stored copy with each of those parts replaced by its attachment's line. `false`, before
    /// `each` is called, when the copies do not say so or their parts are not one a block.
    pub fn each_payload<'r>(
        &self,
        result: &ToolResult<'r>,
        each: &mut dyn FnMut(Range<usize>, &Media<'r>),
    ) -> bool {
        // Structured content the stored copy shows is its last part, the same in a spill.
        let parts = result.block_count() + usize::from(result.structured.is_some());
        if !self.spills_as_stored || self.part_ends.len() != parts {
            return false;
        }
        // Only the blocks the pass found payloads among are read again; each span is the
        // stored copy's own, found by decoding the ends before it.
        let start = self.payload_blocks.start;
        let spans = self.part_spans().skip(start);
        let blocks = result.blocks_from(start).zip(spans);
        for (block, span) in blocks.take(self.payload_blocks.len()) {
            if let Some(media) = block.media().filter(|media| !media.is_empty()) {
                // The spans are the stored copy's own, in order.
                each(span, media);
            }
        }
        true
    }

    /// Parts joined with `\n` as a stored copy holds them: the text and where each part ends.
    pub fn join_parts<'p>(parts: impl IntoIterator<Item = &'p str>) -> (String, PartEnds) {
        let mut stored = StoredText {
            ends: Some(PartEnds::default()),
            ..StoredText::default()
        };
        for part in parts {
            stored.push(part);
        }
        (stored.text.into_owned(), stored.ends.unwrap_or_default())
    }
}

impl ToolResultCopies<'_> {
    /// These copies, just made of `result` by [`Projector::tool_result`], holding nothing
    /// borrowed, when that takes no copy of a text and their spill is their stored copy as it
    /// is: they [spill as stored](ToolResultCopies::spills_as_stored), with a part a block and
    /// no payload to attach, their stored copy is a text of their own, and no native part
    /// borrows a payload. A caller may then free the result (and the bytes it was read from)
    /// before the copies are priced, cut and spilled. Else the copies, as they were.
    pub fn detach(self, result: &ToolResult<'_>) -> Result<DetachedCopies, Self> {
        // The pass that made the copies found every payload (`payload_blocks`).
        let stands_alone = self.spills_as_stored
            && self.part_ends.len() == result.block_count()
            && matches!(self.stored, Cow::Owned(_))
            && self.payload_blocks.is_empty();
        let live = match &self.live {
            LiveCopy::Stored => Some(LiveCopy::Stored),
            LiveCopy::Native(parts) => parts
                .iter()
                .map(|part| match part {
                    Part::Text(text) => Some(Part::Text(text.clone())),
                    Part::Image { .. } | Part::Audio { .. } | Part::Document { .. } => None,
                })
                .collect::<Option<Vec<_>>>()
                .map(LiveCopy::Native),
        };
        match (stands_alone, live) {
            (true, Some(live)) => Ok(DetachedCopies(ToolResultCopies {
                stored: Cow::Owned(self.stored.into_owned()),
                part_ends: self.part_ends,
                live,
                is_error: self.is_error,
                spills_as_stored: true,
                payload_blocks: 0..0,
            })),
            _ => Err(self),
        }
    }
}

/// Tool-result copies that borrow nothing and whose spill is their stored copy as it is
/// ([`ToolResultCopies::detach`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetachedCopies(ToolResultCopies<'static>);

impl DetachedCopies {
    /// The copies.
    pub fn copies(&self) -> &ToolResultCopies<'static> {
        &self.0
    }

    /// The copies, taken out.
    pub fn into_copies(self) -> ToolResultCopies<'static> {
        self.0
    }
}

/// Parts' byte ranges from where they end, each part after the one before and a `\n`.
fn part_spans(ends: &PartEnds) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut before: Option<usize> = None;
    ends.iter().map(move |end| {
        let start = before.map_or(0, |before| before + 1);
        before = Some(end);
        start.min(end)..end
    })
}

/// Where each part of a stored copy ends in it ([`ToolResultCopies::part_ends`]), each end kept
/// as its distance from the one before in as few bytes as it needs (seven bits a byte): a part
/// of under 128 bytes costs one byte. A result of millions of small blocks holds its ends in
/// about a byte a block, not four or eight.
#[derive(Debug, Clone, Default)]
pub struct PartEnds {
    /// Each end less the one before (wrapping), little end first, seven bits a byte, the high
    /// bit set on every byte but a number's last.
    steps: Vec<u8>,
    parts: usize,
    last: usize,
}

impl PartialEq for PartEnds {
    fn eq(&self, other: &PartEnds) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for PartEnds {}

impl PartialEq<Vec<usize>> for PartEnds {
    fn eq(&self, other: &Vec<usize>) -> bool {
        self.iter().eq(other.iter().copied())
    }
}

impl FromIterator<usize> for PartEnds {
    fn from_iter<I: IntoIterator<Item = usize>>(ends: I) -> PartEnds {
        let mut out = PartEnds::default();
        ends.into_iter().for_each(|end| out.push(end));
        out
    }
}

impl From<Vec<usize>> for PartEnds {
    fn from(ends: Vec<usize>) -> PartEnds {
        ends.into_iter().collect()
    }
}

/// The steps in `bytes`, each with where the next begins.
fn steps_in(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let mut step = 0usize;
        let mut shift = 0u32;
        loop {
            let byte = *bytes.get(at)?;
            at += 1;
            // A step is a `usize` written whole, so no shift reaches past its width.
            step |= usize::from(byte & 0x7f).checked_shl(shift).unwrap_or(0);
            shift += 7;
            if byte & 0x80 == 0 {
                return Some(step);
            }
        }
    })
}

impl PartEnds {
    /// Room for `parts` ends of a byte each.
    pub fn with_capacity(parts: usize) -> PartEnds {
        PartEnds {
            steps: Vec::with_capacity(parts),
            ..PartEnds::default()
        }
    }

    /// Adds where the next part ends.
    pub fn push(&mut self, end: usize) {
        let mut step = end.wrapping_sub(self.last);
        while step >= 0x80 {
            self.steps.push((step & 0x7f) as u8 | 0x80);
            step >>= 7;
        }
        self.steps.push(step as u8);
        self.last = end;
        self.parts += 1;
    }

    /// How many parts there are.
    pub fn len(&self) -> usize {
        self.parts
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.parts == 0
    }

    /// Each part's end, in order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        steps_in(&self.steps).scan(0usize, |end, step| {
            *end = end.wrapping_add(step);
            Some(*end)
        })
    }

    /// Keeps the first `parts` ends. It reads back only over the ends it takes away.
    fn truncate(&mut self, parts: usize) {
        let mut cut = self.steps.len();
        for _ in parts..self.parts {
            // `cut` is just past a number's last byte: back over it, then over the bytes
            // before it that have their high bit set.
            cut = cut.saturating_sub(1);
            while cut > 0 && self.steps[cut - 1] & 0x80 != 0 {
                cut -= 1;
            }
        }
        if parts >= self.parts {
            return;
        }
        let taken = steps_in(&self.steps[cut..]).fold(0usize, usize::wrapping_add);
        self.last = self.last.wrapping_sub(taken);
        self.steps.truncate(cut);
        self.parts = parts;
    }

    /// Gives back spare room.
    fn shrink_to_fit(&mut self) {
        self.steps.shrink_to_fit();
    }
}

/// A stored copy being written: its text, how many parts it has, and where each part ends in it
/// when they are kept.
#[derive(Default)]
struct StoredText<'a> {
    text: Cow<'a, str>,
    parts: usize,
    ends: Option<PartEnds>,
    /// The capacity the text takes when it is first copied ([`ToolResult::stored_hint`]).
    reserve: usize,
}

/// What [`ToolResult::stored_hint`] guesses a block other than a plain text shows: about a
/// resource link's line.
const STORED_BYTES_PER_BLOCK: usize = 96;

/// The room a reference's line is given up front.
const STUB_BYTES: usize = 128;

/// The most [`ToolResult::stored_hint`] reserves, whatever the blocks: a guess never asks for
/// more than this up front.
const MAX_STORED_HINT: usize = 256 << 20;

/// Where a stored copy being written is: its text's length and how many parts it has.
#[derive(Debug, Clone, Copy)]
struct StoredMark {
    text: usize,
    parts: usize,
}

/// A run of adjacent texts in a tool result's content: where it began (the block's index, and
/// the stored copy there), the index past its last text, and whether a text redaction may
/// change is in it, so that the run is redacted as one (its texts are read from the result
/// again, not listed).
#[derive(Default)]
struct TextRun {
    start: Option<(usize, StoredMark)>,
    end: usize,
    redacted: bool,
}

impl<'a> StoredText<'a> {
    /// Where the text is now.
    fn mark(&self) -> StoredMark {
        StoredMark {
            text: self.text.len(),
            parts: self.parts,
        }
    }

    /// Takes back every part pushed since `mark` (a borrowed text is cut, not copied).
    fn roll_back(&mut self, mark: StoredMark) {
        match &mut self.text {
            Cow::Borrowed(text) => *text = text.get(..mark.text).unwrap_or_default(),
            Cow::Owned(text) => text.truncate(mark.text),
        }
        self.parts = mark.parts;
        if let Some(ends) = &mut self.ends {
            ends.truncate(mark.parts);
        }
    }

    /// Appends a part, after a `\n` unless it is the first.
    fn push(&mut self, part: &str) {
        self.push_with(part.len(), |text| text.push_str(part));
    }

    /// Appends a part `write` writes, about `len` bytes long, as [`StoredText::push`] does.
    fn push_with(&mut self, len: usize, write: impl FnOnce(&mut String)) {
        if let Cow::Borrowed(first) = self.text {
            // Copied once, into the room the whole text is guessed to take.
            let needed = first.len() + 1 + len;
            let mut owned = String::with_capacity(self.reserve.max(needed));
            owned.push_str(first);
            self.text = Cow::Owned(owned);
        }
        let text = self.text.to_mut();
        // Past the guess, the text grows by an eighth, not by doubling: a guess a little short
        // costs a little more room, not twice the text.
        let needed = len.saturating_add(1);
        if text.capacity() - text.len() < needed {
            text.reserve_exact(needed.max(text.len() / 8));
        }
        if self.parts > 0 {
            text.push('\n');
        }
        write(text);
        self.parts += 1;
        if let Some(ends) = &mut self.ends {
            ends.push(text.len());
        }
    }

    /// Appends a part as [`StoredText::push`] does; a borrowed first part stays borrowed until
    /// another part follows it.
    fn push_cow(&mut self, part: Cow<'a, str>) {
        if self.parts > 0 {
            return self.push(&part);
        }
        self.text = part;
        self.parts = 1;
        if let Some(ends) = &mut self.ends {
            ends.push(self.text.len());
        }
    }

    /// The text, its spare capacity given back.
    fn into_text(self) -> Cow<'a, str> {
        match self.text {
            Cow::Owned(mut text) => {
                text.shrink_to_fit();
                Cow::Owned(text)
            }
            borrowed => borrowed,
        }
    }
}

/// What a push event, a channel message or a user-position injection shows.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MessageView<'a> {
    /// The user message's content, one part per block, in order.
    pub parts: Vec<Part<'a>>,
    /// The text the lane keeps in history.
    pub stored: String,
}

/// Why a push event is refused: its content is visibly empty. How the refusal travels back to
/// the server (a JSON-RPC error) is the host's to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushRefusal;

impl PushRefusal {
    /// The refusal in words.
    pub const MESSAGE: &'static str = "push event content is visibly empty";
}

/// Why one channel message is refused while its siblings are accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelRefusal;

impl ChannelRefusal {
    /// The per-message result's `reason`.
    pub const REASON: &'static str = "empty_content";
}

/// What a render step's result comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderOutcome<'a> {
    /// The result was visibly empty: nothing happened.
    NothingHappened,
    /// The result is shown as a push event's content is.
    Shown(MessageView<'a>),
}

/// A tool result as a server sent it, read leniently, its content array's blocks classified as
/// a lane reads them.
///
/// It is read through one reader, [`ResultView`]: from the bytes the server sent
/// ([`ResultView::parse`]), or from a `Value` a host already holds ([`ResultView::of_value`]),
/// whose blocks borrow the `Value`'s strings (decision 0128). The blocks are classified as each
/// pass over them needs them rather than kept: a result of a million small blocks would hold
/// more in its classified blocks than in its bytes (decision 0083). Classifying reads only a
/// payload's header, never the whole of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult<'a> {
    /// `content` when it is not an array: data. `None` when it is absent or an array.
    pub content: Option<&'a Value>,
    /// `structuredContent`, when the key is present (`null` included): raw JSON when read
    /// from bytes.
    pub structured: Option<&'a DataView<'a>>,
    /// `isError: true`.
    pub is_error: bool,
    /// The content array's elements, when it is one.
    views: Option<&'a [BlockView<'a>]>,
    /// The bytes the result was read from, when it was (empty otherwise).
    source: SourceBytes<'a>,
}

impl<'a> ToolResult<'a> {
    /// Takes a `CallToolResult` as [`ResultView`] read it, from bytes or from a `Value`.
    pub fn from_view(view: &'a ResultView<'a>) -> ToolResult<'a> {
        let (content, views) = match &view.content {
            None => (None, None),
            Some(ContentView::Data(data)) => (Some(&**data), None),
            Some(ContentView::Blocks(blocks)) => (None, Some(blocks.as_slice())),
        };
        ToolResult {
            content,
            structured: view.structured.as_ref(),
            is_error: view.is_error,
            views,
            source: view.source,
        }
    }

    /// The content array's blocks as the classifier reads them, in order; none when the
    /// content is not an array.
    pub fn blocks(&self) -> impl Iterator<Item = Block<'a>> + 'a {
        self.blocks_from(0)
    }

    /// The references among the content array's blocks (not those nested in data), in order.
    pub fn references(&self) -> impl Iterator<Item = Reference<'a>> + 'a {
        self.blocks().filter_map(|block| match block {
            Block::Reference(reference) => Some(reference),
            _ => None,
        })
    }

    /// The content array's blocks from the one at `start`, as [`ToolResult::blocks`] gives
    /// them.
    fn blocks_from(&self, start: usize) -> impl Iterator<Item = Block<'a>> + Clone + 'a {
        let views: &'a [BlockView<'a>] = self.views.unwrap_or_default();
        views
            .get(start..)
            .unwrap_or_default()
            .iter()
            .map(BlockView::classify)
    }

    /// The texts of the content array's blocks `start..end`, which are all texts (a run), as
    /// [`ToolResult::blocks`] gives them; an iterator that may be cloned to read them again.
    fn texts_in(&self, start: usize, end: usize) -> impl Iterator<Item = &'a str> + Clone + 'a {
        self.blocks_from(start)
            .take(end.saturating_sub(start))
            .filter_map(|block| text_of(&block))
    }

    /// How many blocks the content array holds; none when it is not an array.
    fn block_count(&self) -> usize {
        self.views.map_or(0, <[_]>::len)
    }

    /// About how long the stored copy of the content array will be, in bytes, to reserve its
    /// text once rather than grow it by doubling (each copy of a growing text of megabytes
    /// stays resident): each plain text's length (an embedded resource's text's too), and
    /// [`STORED_BYTES_PER_BLOCK`] for any other block (a reference's line, a placeholder). A
    /// text longer than the guess grows an eighth at a time; a shorter one gives the rest back
    /// when it is done.
    fn stored_hint(&self) -> usize {
        // One more byte a part for the line break that joins it.
        self.views
            .unwrap_or_default()
            .iter()
            .map(|view| match view {
                BlockView::Text(text) => text.len(),
                // An embedded text resource is shown as its text, as a text block is.
                BlockView::Object(object) => object
                    .text()
                    .or_else(|| object.resource_object()?.text())
                    .and_then(mcpl_classify::Slot::as_str)
                    .map_or(STORED_BYTES_PER_BLOCK, str::len),
                BlockView::Other(_) => STORED_BYTES_PER_BLOCK,
            })
            .fold(0usize, |sum, bytes| {
                sum.saturating_add(bytes).saturating_add(1)
            })
            .min(MAX_STORED_HINT)
    }

    /// Whether the content is an array of blocks.
    fn has_blocks(&self) -> bool {
        self.views.is_some()
    }

    /// What the result's uris are read from: its content and its structured content.
    fn scope(&self) -> Scope<'a> {
        let (value, raw) = match self.structured {
            Some(DataView::Value(value)) => (Some(&**value), None),
            Some(DataView::Raw(raw)) => (None, Some(&**raw)),
            None => (None, None),
        };
        Scope {
            values: self.content.into_iter().chain(value).collect(),
            views: self.views.unwrap_or_default(),
            raw: raw.into_iter().collect(),
            source: self.source,
        }
    }
}

/// Whether content holds nothing to see: not an array, or every block a text or embedded text
/// that trims to "", a text block without string text, or not an object.
pub fn is_visibly_empty(content: &Value) -> bool {
    let Some(blocks) = content.as_array() else {
        return true;
    };
    blocks
        .iter()
        .all(|block| shows_nothing(block, &classify(block)))
}

/// Whether one block, as the classifier read it, shows nothing (see [`is_visibly_empty`]).
fn shows_nothing(raw: &Value, block: &Block<'_>) -> bool {
    match block {
        Block::Text(text) => text.trim().is_empty(),
        Block::EmbeddedText(embedded) => embedded.text.trim().is_empty(),
        Block::Invalid(Invalid {
            reason: InvalidReason::TextWithoutString,
            ..
        }) => true,
        Block::Invalid(_) => !raw.is_object(),
        Block::InlineImage(_)
        | Block::InlineAudio(_)
        | Block::InlineContradiction(_)
        | Block::Reference(_)
        | Block::EmbeddedBlob(_)
        | Block::EmbeddedUnreadable(_) => false,
    }
}

/// A message's content blocks, classified once for both the emptiness check and the lane.
struct MessageBlocks<'a> {
    raw: &'a [Value],
    blocks: Vec<Block<'a>>,
}

impl<'a> MessageBlocks<'a> {
    fn of(content: &'a Value) -> MessageBlocks<'a> {
        let raw = content.as_array().map(Vec::as_slice).unwrap_or_default();
        MessageBlocks {
            raw,
            blocks: raw.iter().map(classify).collect(),
        }
    }

    /// [`is_visibly_empty`] on the classified blocks (content that is not an array has none).
    fn visibly_empty(&self) -> bool {
        self.raw
            .iter()
            .zip(&self.blocks)
            .all(|(raw, block)| shows_nothing(raw, block))
    }
}

/// What an embedded blob is shown as: the inline block it makes, or text.
enum BlobAs<'m, 'a> {
    Image(&'m Media<'a>),
    Audio(&'m Media<'a>),
    /// A PDF by its magic bytes, and its label (redacted), which the marker it shows where it
    /// does not go natively names.
    Document(&'m Media<'a>, String),
    Text(String),
}

/// Everything a lane needs besides the content: the host's registries, the route, the server
/// the content came from, and the server's uri policy.
#[derive(Debug)]
#[non_exhaustive]
pub struct Projector<'h> {
    /// The host's reference registry; every reference shown is registered with `server`.
    pub registry: &'h mut Registry,
    /// The host's image ledger; every image placeholder names bytes it keeps.
    pub ledger: &'h mut ImageLedger,
    /// What the provider takes.
    pub route: &'h Route,
    /// The server that delivered the content.
    pub server: &'h ServerName,
    /// Whether this server's credential-free uris may be shown.
    pub uri_policy: UriPolicy,
}

/// One block of a tool result as both copies show it.
struct Piece<'a> {
    /// Borrowed where it is a server text redaction left as it was, or a marker.
    text: Cow<'a, str>,
    native: Option<Part<'a>>,
}

impl<'a> Piece<'a> {
    fn text(text: impl Into<Cow<'a, str>>) -> Piece<'a> {
        Piece {
            text: text.into(),
            native: None,
        }
    }
}

/// How many passes a lane makes at most while each finds a credential-shaped url the session
/// did not hide yet ([`Projector::settled`]).
const LANE_PASSES: usize = 4;

impl<'h> Projector<'h> {
    /// A projector for content `server` delivered, over the host's registry and ledger.
    pub fn new(
        registry: &'h mut Registry,
        ledger: &'h mut ImageLedger,
        route: &'h Route,
        server: &'h ServerName,
        uri_policy: UriPolicy,
    ) -> Projector<'h> {
        Projector {
            registry,
            ledger,
            route,
            server,
            uri_policy,
        }
    }

    fn limits(&self) -> Limits {
        self.route.limits
    }

    /// What the session hides in content made of `values`, this server's scan setting applied.
    fn hidden(&mut self, values: &[&Value]) -> HiddenUris<'static> {
        let scan = self.registry.hidden().scans(self.server);
        HiddenUris::in_session(values, self.uri_policy, self.registry.hidden_mut(), scan)
    }

    /// [`Projector::hidden`] for a result, whose blocks may have been read from bytes (whose
    /// uris it borrows).
    fn hidden_in<'s>(&mut self, scope: &Scope<'s>) -> HiddenUris<'s> {
        let scan = self.registry.hidden().scans(self.server);
        HiddenUris::in_scope(scope, self.uri_policy, self.registry.hidden_mut(), scan)
    }

    /// [`Projector::hidden_in`] for a tool result's blocks, and, for a result of many blocks,
    /// what each block's text (or reference's name) alone decides of its pass check
    /// ([`PieceCheck`]), by the block's place: a second thread asks it from the first block on
    /// while this one reads the hidden uris, and stops when they are read (decision 0172).
    /// Empty when no second thread was worth it.
    fn hidden_and_pieces<'a>(
        &mut self,
        result: &ToolResult<'a>,
    ) -> (HiddenUris<'a>, Vec<Option<PieceCheck>>) {
        let ahead = result.block_count() >= PIECES_AHEAD_BLOCKS
            && self.registry.hidden().scans(self.server)
            && mcpl_classify::two_cores();
        if !ahead {
            return (self.hidden_in(&result.scope()), Vec::new());
        }
        let read = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let pieces = std::thread::Builder::new()
                .spawn_scoped(scope, || pieces_until(result, &read))
                .ok();
            let hidden = self.hidden_in(&result.scope());
            read.store(true, Ordering::Relaxed);
            // A second thread that failed leaves every piece to be asked whole.
            let known = pieces.and_then(|pieces| pieces.join().ok());
            (hidden, known.unwrap_or_default())
        })
    }

    /// Keeps the credential-shaped urls a lane found, so they stay hidden for the session;
    /// whether the session did not hide one of them yet, and another pass would search for it.
    fn remember(&mut self, hidden: &HiddenUris) -> bool {
        self.remember_found(hidden, hidden.take_found())
    }

    /// [`Projector::remember`] for urls already taken from `hidden`'s search, in order.
    fn remember_found(
        &mut self,
        hidden: &HiddenUris,
        keys: impl IntoIterator<Item = String>,
    ) -> bool {
        let secrets = self.registry.hidden().secrets().len();
        let mut learned = 0;
        for key in keys {
            learned += usize::from(self.registry.hidden_mut().insert_found(key));
        }
        // A result with more uris than the session holds replaces the session's set with them
        // each time it is read: another pass would not search for the urls this one learned,
        // only for the secrets their parts added. Without one, it would read exactly as this
        // one (decision 0159).
        let searched_again =
            hidden.learns_for_another_pass() || self.registry.hidden().secrets().len() > secrets;
        // A pass that teaches more urls than the session holds evicts the first of them, so
        // the next would teach those again, and so on: no pass can settle it, and it is not run
        // again (a result with thousands of credential-shaped urls ran four times over).
        learned > 0 && learned <= mcpl_redact::HIDDEN_SET_CAPACITY && searched_again
    }

    /// Runs one pass of a lane again while it teaches the session a credential-shaped url it
    /// did not hide yet: the url may have been spelled another way (scheme-less, say) earlier
    /// in the same content, where the pass had gone by before it found it. The next pass hides
    /// every spelling, so a lane's output is the same on a second call (decision 0104). The
    /// session's set only grows, and the passes are bounded.
    fn settled<T>(&mut self, mut pass: impl FnMut(&mut Self) -> (T, bool)) -> T {
        let (mut shown, mut learned) = pass(self);
        for _ in 1..LANE_PASSES {
            if !learned {
                break;
            }
            (shown, learned) = pass(self);
        }
        shown
    }

    // ----- The tool-result lanes: stored copy and live copy. -----

    /// Both copies of a tool result.
    pub fn tool_result<'a>(&mut self, result: &ToolResult<'a>) -> ToolResultCopies<'a> {
        self.tool_result_with(result, &mut None)
    }

    /// The whole of a tool result as a spill file holds it: the stored copy, except that every
    /// payload (image, audio, embedded blob; at any depth) shows what `attach` returns for it,
    /// given the payload and the text the stored copy would show, and structured content is
    /// always included. Withheld data is not a payload. Hidden uris stay hidden: a model may
    /// read the spill file.
    ///
    /// A result that is one server text with nothing redacted borrows that text.
    pub fn tool_result_spill<'a>(
        &mut self,
        result: &ToolResult<'a>,
        attach: &mut Attach<'_>,
    ) -> Cow<'a, str> {
        self.tool_result_with(result, &mut Some(attach)).stored
    }

    /// The spill text [`Projector::tool_result_spill`] makes, from copies this projector has
    /// just made of the same result and that say [`ToolResultCopies::spills_as_stored`]: the
    /// stored copy, each payload's part replaced by what `attach` returns for it (given the
    /// payload and the part), with no second pass over the result: no uri is hidden again and
    /// no reference or image is registered again. `None`, before `attach` is called, when the
    /// copies do not say so or their parts are not one a block.
    pub fn tool_result_spill_of<'c>(
        &mut self,
        result: &ToolResult<'_>,
        copies: &'c ToolResultCopies<'_>,
        attach: &mut Attach<'_>,
    ) -> Option<Cow<'c, str>> {
        let stored: &'c str = &copies.stored;
        let mut spill: Option<String> = None;
        let mut copied = 0;
        let spills_as_stored = copies.each_payload(result, &mut |span, media| {
            let shown = stored.get(span.clone()).unwrap_or_default();
            let text = spill.get_or_insert_with(|| String::with_capacity(stored.len()));
            text.push_str(stored.get(copied..span.start).unwrap_or_default());
            text.push_str(&attach(media, shown));
            copied = span.end;
        });
        if !spills_as_stored {
            return None;
        }
        match spill {
            None => Some(Cow::Borrowed(stored)),
            Some(mut text) => {
                text.push_str(stored.get(copied..).unwrap_or_default());
                Some(Cow::Owned(text))
            }
        }
    }

    fn tool_result_with<'a>(
        &mut self,
        result: &ToolResult<'a>,
        attach: &mut Option<&mut Attach<'_>>,
    ) -> ToolResultCopies<'a> {
        if attach.is_none() {
            return self.settled(|lanes| lanes.tool_result_pass(result, &mut None));
        }
        // A spill pass writes an attachment each time it meets a payload, so it runs once: the
        // passes that teach the session a url first attach nothing and write nothing. A spill
        // made after its copies (the usual case) teaches nothing, and they end at the first.
        let mut quiet = |_: &Media<'_>, shown: &str| shown.to_owned();
        self.settled(|lanes| lanes.tool_result_pass(result, &mut Some(&mut quiet)));
        self.tool_result_pass(result, attach).0
    }

    /// One pass of [`Projector::tool_result_with`], and whether it taught the session a url.
    fn tool_result_pass<'a>(
        &mut self,
        result: &ToolResult<'a>,
        attach: &mut Option<&mut Attach<'_>>,
    ) -> (ToolResultCopies<'a>, bool) {
        let (hidden, known) = self.hidden_and_pieces(result);
        // One pass over the blocks, each classified as it comes (decision 0083): each piece's
        // text goes straight into the stored copy, and only native parts are kept beside it,
        // with the index of the piece they stand for.
        let mut stored = StoredText {
            // A spill pass keeps only the text: its parts and live copy are not read. Otherwise
            // there is a part a block, and one for structured content.
            ends: attach
                .is_none()
                .then(|| PartEnds::with_capacity(result.block_count() + 1)),
            reserve: result.stored_hint(),
            ..StoredText::default()
        };
        let mut natives: Vec<(usize, Part<'a>)> = Vec::new();
        // The blocks from the first to the last with a payload, for a spill to read again.
        let mut payload_blocks: Option<Range<usize>> = None;
        // The credential-shaped urls redaction finds reach the session in the order a pass
        // over the texts first, then over the rest, would find them.
        let mut found_in_texts: Vec<String> = Vec::new();
        let mut found_elsewhere: Vec<String> = Vec::new();
        let mut server_text = false;
        // Whether a spill pass would show data the stored copy leaves out, or redact more.
        let mut spill_differs = false;
        match result.content {
            _ if result.has_blocks() => {
                // Adjacent texts are redacted as one, so that a uri split across them is found.
                // A text redaction surely leaves as it is goes straight into the stored copy;
                // a run is redacted as one from its first text that redaction may change, when
                // the texts before it are taken back out (decision 0088). Its texts are read
                // from the result again, and redaction lists them only when it changes them: a
                // million tiny texts cost no list of a million texts. A lone text redaction
                // leaves as it is stays borrowed (decision 0091).
                let mut run = TextRun::default();
                let mut flush = |run: &mut TextRun, stored: &mut StoredText<'a>| {
                    if let Some((start, _)) = run.start
                        && run.redacted
                    {
                        let texts = result.texts_in(start, run.end);
                        match hidden.redact_run_changed(texts.clone()) {
                            Some(redacted) => redacted.into_iter().for_each(|t| stored.push_cow(t)),
                            None => texts.for_each(|text| stored.push_cow(Cow::Borrowed(text))),
                        }
                        found_in_texts.extend(hidden.take_found());
                    }
                    *run = TextRun::default();
                };
                // The blocks come in batches, whose texts may be sorted on a second core while
                // the batch before them is read (decision 0163).
                let check = hidden.pass_check();
                std::thread::scope(|scope| {
                    let mut blocks = result.blocks().enumerate();
                    let mut batch: Vec<(usize, Block<'a>)> = Vec::new();
                    let mut verdicts = Verdicts::new(scope, check, &known);
                    while verdicts.next_batch(&mut blocks, &mut batch) {
                        for (at, (index, block)) in batch.drain(..).enumerate() {
                            if let Some(text) = text_of(&block) {
                                server_text |= !text.trim().is_empty();
                                let start = *run.start.get_or_insert((index, stored.mark()));
                                run.end = index + 1;
                                if !run.redacted && verdicts.passes(at, index, text) {
                                    stored.push_cow(Cow::Borrowed(text));
                                } else if !run.redacted {
                                    // The run's texts so far go back out, to be redacted with it.
                                    stored.roll_back(start.1);
                                    run.redacted = true;
                                }
                                continue;
                            }
                            flush(&mut run, &mut stored);
                            // A reference's line is written straight into the stored copy: the same
                            // line its piece would hold, with no string of its own.
                            if let Block::Reference(reference) = &block {
                                let passed = reference.name.filter(|_| verdicts.label_passed(at));
                                stored.push_with(STUB_BYTES, |text| {
                                    self.stub_into(
                                        text,
                                        reference,
                                        Provenance::ToolResult,
                                        &hidden,
                                        passed,
                                    );
                                });
                                found_elsewhere.extend(hidden.take_found());
                                continue;
                            }
                            if block.media().is_some_and(|media| !media.is_empty()) {
                                let blocks = payload_blocks.get_or_insert(index..index);
                                blocks.end = index + 1;
                            }
                            let piece = self.tool_result_piece(&block, &hidden, attach);
                            found_elsewhere.extend(hidden.take_found());
                            if let Some(part) = piece.native {
                                natives.push((stored.parts, part));
                            }
                            stored.push(&piece.text);
                        }
                    }
                });
                flush(&mut run, &mut stored);
            }
            None | Some(Value::Null) => {}
            Some(data) => {
                spill_differs = true;
                let text = self.data_text(data, &hidden, attach, &mut false);
                stored.push(&text);
            }
        }
        // The model's view shows structured content only when the server wrote no text of its
        // own; a spill keeps the whole result, so it always does. Where both show it, they show
        // the same text, unless a block inside it shows its payload attached in the spill.
        let mut blocks_in_structured = false;
        if let Some(structured) = result.structured
            && (!server_text || attach.is_some())
        {
            let blocks = &mut blocks_in_structured;
            let text = match structured {
                DataView::Raw(raw) => self.raw_data_text(raw, &hidden, attach, blocks),
                DataView::Value(value) => self.data_text(value, &hidden, attach, blocks),
            };
            // The first part is moved in, not copied: it may be most of the result.
            stored.push_cow(Cow::Owned(text));
        }
        spill_differs |= result.structured.is_some() && (server_text || blocks_in_structured);
        found_elsewhere.extend(hidden.take_found());
        // A url found that the session did not hide yet is hidden from now on, so a second
        // pass could redact more.
        let learned =
            self.remember_found(&hidden, found_in_texts.into_iter().chain(found_elsewhere));
        spill_differs |= learned;
        // A piece is native only where the route takes it (a text-only route takes nothing);
        // only a native live copy needs the texts twice.
        let mut ends = stored.ends.take().unwrap_or_default();
        ends.shrink_to_fit();
        let live = if natives.is_empty() || attach.is_some() {
            LiveCopy::Stored
        } else {
            let mut natives = natives.into_iter().peekable();
            let parts = part_spans(&ends)
                .enumerate()
                .map(
                    |(index, span)| match natives.next_if(|(at, _)| *at == index) {
                        Some((_, part)) => part,
                        None => Part::Text(stored.text[span].to_owned()),
                    },
                )
                .collect();
            LiveCopy::Native(parts)
        };
        let copies = ToolResultCopies {
            stored: stored.into_text(),
            part_ends: ends,
            live,
            is_error: result.is_error,
            spills_as_stored: attach.is_none() && !spill_differs,
            payload_blocks: payload_blocks.unwrap_or(0..0),
        };
        (copies, learned)
    }

    fn tool_result_piece<'a>(
        &mut self,
        block: &Block<'a>,
        hidden: &HiddenUris,
        attach: &mut Option<&mut Attach<'_>>,
    ) -> Piece<'a> {
        let piece = self.tool_result_piece_shown(block, hidden);
        match (attach, block.media()) {
            (Some(attach), Some(media)) if !media.is_empty() => {
                Piece::text(attach(media, &piece.text))
            }
            _ => piece,
        }
    }

    fn tool_result_piece_shown<'a>(&mut self, block: &Block<'a>, hidden: &HiddenUris) -> Piece<'a> {
        match block {
            Block::Text(text) => Piece::text(hidden.redact(text)),
            Block::InlineImage(media) => self.image_piece(media, hidden),
            Block::InlineAudio(media) => self.audio_piece(media, hidden),
            Block::InlineContradiction(_) => Piece::text(markers::WITHHELD),
            Block::Reference(reference) => {
                Piece::text(self.stub(reference, Provenance::ToolResult, hidden))
            }
            Block::EmbeddedText(embedded) => Piece::text(hidden.redact(embedded.text)),
            Block::EmbeddedBlob(blob) => match self.blob_as(blob, hidden) {
                BlobAs::Image(media) => self.image_piece(media, hidden),
                BlobAs::Audio(media) => self.audio_piece(media, hidden),
                BlobAs::Document(media, label) => self.document_piece(media, &label),
                BlobAs::Text(text) => Piece::text(text),
            },
            Block::EmbeddedUnreadable(_) => Piece::text(markers::RESOURCE_UNREADABLE),
            Block::Invalid(invalid) => Piece::text(invalid_text(invalid, hidden)),
        }
    }

    fn image_piece<'a>(&mut self, media: &Media<'a>, hidden: &HiddenUris) -> Piece<'a> {
        match image_fate(media, self.limits(), hidden) {
            // A type the route does not take (a GIF to Gemini) goes as its placeholder, as every
            // image does on a text-only route.
            Ok((sniffed, _)) if !self.route.takes_image_type(Some(sniffed)) => {
                Piece::text(self.image_placeholder(media, sniffed))
            }
            Ok((sniffed, dimensions)) => Piece {
                text: self.image_placeholder(media, sniffed).into(),
                native: Some(Part::Image {
                    sniffed,
                    dimensions,
                    data: media.data,
                }),
            },
            Err(marker) => Piece::text(marker),
        }
    }

    /// Audio in a tool result: native where the route takes its type there and
    /// [`Projector::native_audio`] says; else its line. The stored copy keeps the line.
    fn audio_piece<'a>(&mut self, media: &Media<'a>, hidden: &HiddenUris) -> Piece<'a> {
        let line = audio_text(media, hidden);
        let takes = self.route.takes_tool_audio(media.sniffed);
        Piece {
            text: line.into(),
            native: self.native_audio(media, takes),
        }
    }

    /// Audio as a native part where the route `takes` its type: only when its type was read
    /// from its bytes, its base64 is sound, it is within the per-payload limit and its header
    /// says how long it plays (its price).
    fn native_audio<'a>(&self, media: &Media<'a>, takes: bool) -> Option<Part<'a>> {
        let sniffed = media.sniffed?;
        let verified = takes
            && !media.is_empty()
            && media.base64.is_none()
            && media.within(self.limits().native_image_bytes)
            && mcpl_classify::audio_duration_ms(media.data, sniffed).is_some();
        verified.then_some(Part::Audio {
            sniffed,
            data: media.data,
        })
    }

    /// A PDF in a tool result: native only where the route takes documents there and the PDF
    /// was verified ([`crate::native_pages`]: sound base64, within the route's bytes and pages
    /// per document, its pages counted, not encrypted); its stored copy is then a placeholder
    /// naming the ledger's `doc_` ref. Otherwise it is the other-type marker for its `label`,
    /// saying why where the route takes documents.
    fn document_piece<'a>(&mut self, media: &Media<'a>, label: &str) -> Piece<'a> {
        if !self.route.documents_in_tool_results {
            return Piece::text(other_type(media, label));
        }
        let pages = match crate::document::native_pages(media, &self.route.id.request_limits()) {
            Ok(pages) => pages,
            Err(refusal) => {
                return Piece::text(markers::resource_not_native(
                    label,
                    size_of(media),
                    &refusal.to_string(),
                ));
            }
        };
        let mime = Sniffed::Pdf.mime();
        let doc_ref = self.ledger.retain_document(media.data, mime);
        Piece {
            text: markers::document_placeholder(mime, size_of(media), &doc_ref).into(),
            native: Some(Part::Document {
                pages,
                data: media.data,
            }),
        }
    }

    fn image_placeholder(&mut self, media: &Media<'_>, sniffed: Sniffed) -> String {
        let image_ref = self.ledger.retain(media.data, sniffed.mime());
        markers::image_placeholder(sniffed.mime(), size_of(media), &image_ref)
    }

    /// A result's data (structured content, or content that is not an array) as the stored copy
    /// shows it: JSON in which every content block at any depth is the text its stored copy
    /// shows; a block that is the whole of the data is just that text.
    fn data_text(
        &mut self,
        data: &Value,
        hidden: &HiddenUris,
        attach: &mut Option<&mut Attach<'_>>,
        blocks: &mut bool,
    ) -> String {
        if is_content_block(data) {
            *blocks = true;
            return self
                .tool_result_piece(&classify(data), hidden, attach)
                .text
                .into_owned();
        }
        let shown = self.map_blocks(data, hidden, &mut 0, &mut |this, block, hidden| {
            this.block_string(block, hidden, attach, blocks)
        });
        serde_json::to_string(&shown).unwrap_or_default()
    }

    /// What a content block inside data is replaced by: the text its stored copy shows.
    fn block_string(
        &mut self,
        block: &Value,
        hidden: &HiddenUris,
        attach: &mut Option<&mut Attach<'_>>,
        blocks: &mut bool,
    ) -> Value {
        *blocks = true;
        Value::String(
            self.tool_result_piece(&classify(block), hidden, attach)
                .text
                .into_owned(),
        )
    }

    /// [`Projector::data_text`] on raw JSON (structured content read from bytes): the same text,
    /// written as the data is read, one member at a time, so neither a `Value` of the data nor
    /// its copy is held (decision 0142). An object with a member `type` that names a block type
    /// is parsed and read as a `Value`, as there.
    fn raw_data_text(
        &mut self,
        raw: &RawValue,
        hidden: &HiddenUris,
        attach: &mut Option<&mut Attach<'_>>,
        blocks: &mut bool,
    ) -> String {
        let mut writer = DataWriter {
            hidden,
            attach,
            keys: 0,
            blocks: false,
            // Room for the text as long as the JSON; past it, each member adds an eighth.
            out: Vec::with_capacity(raw.get().len()),
        };
        let written = self.write_raw(raw, &mut writer);
        *blocks |= writer.blocks;
        if written {
            // Only strings and the text of checked JSON were written.
            if let Ok(text) = String::from_utf8(writer.out) {
                return text;
            }
        }
        // The data is one block (or could not be walked): read as a value, as it always was.
        let value = serde_json::from_str::<Value>(raw.get()).unwrap_or_default();
        self.data_text(&value, hidden, attach, blocks)
    }

    /// Writes raw JSON as [`Projector::map_blocks`], then `serde_json::to_string`, would: false,
    /// with the writer's text and key count as they were, where `raw` is an object with a member
    /// `type` naming a block type, or could not be walked, for the caller to read as a `Value`.
    fn write_raw(&mut self, raw: &RawValue, w: &mut DataWriter<'_, '_, '_>) -> bool {
        let (start, keys_before) = (w.out.len(), w.keys);
        let walked = match raw.get().as_bytes().first() {
            Some(b'{') => {
                w.out.push(b'{');
                let (mut block, mut first) = (false, true);
                let mut shown = std::collections::HashSet::new();
                let walked = raw_members(raw, &mut |key, value| {
                    let Some(key) = key.filter(|_| !block) else {
                        return;
                    };
                    block = names_a_block(&key, value);
                    if block {
                        return;
                    }
                    let key = shown_key(w.hidden, &key, &mut w.keys, |key| shown.contains(key));
                    w.member(&mut first);
                    write_json_str(&mut w.out, &key);
                    w.out.push(b':');
                    self.write_raw_value(value, w);
                    shown.insert(key);
                });
                w.out.push(b'}');
                walked.is_ok() && !block
            }
            Some(b'[') => {
                w.out.push(b'[');
                let mut first = true;
                let walked = raw_members(raw, &mut |_, value| {
                    w.member(&mut first);
                    self.write_raw_value(value, w);
                });
                w.out.push(b']');
                walked.is_ok()
            }
            Some(b'"') => match raw_str(raw) {
                Some(text) => {
                    let text = w.hidden.redact(&text);
                    w.out.reserve_exact(text.len() + 2);
                    write_json_str(&mut w.out, &text);
                    true
                }
                None => false,
            },
            // A number, `true`, `false` or `null`, written as its `Value` writes it.
            _ => serde_json::from_str::<Value>(raw.get())
                .ok()
                .and_then(|value| serde_json::to_writer(&mut w.out, &value).ok())
                .is_some(),
        };
        if !walked {
            w.out.truncate(start);
            w.keys = keys_before;
        }
        walked
    }

    /// [`Projector::write_raw`] on a member, which a block, or JSON that could not be walked,
    /// is read into a `Value` for.
    fn write_raw_value(&mut self, raw: &RawValue, w: &mut DataWriter<'_, '_, '_>) {
        if self.write_raw(raw, w) {
            return;
        }
        let value = serde_json::from_str::<Value>(raw.get()).unwrap_or_default();
        let DataWriter {
            hidden,
            attach,
            keys,
            blocks,
            out,
        } = w;
        let shown = self.map_blocks(&value, hidden, keys, &mut |this, block, hidden| {
            this.block_string(block, hidden, attach, blocks)
        });
        let _ = serde_json::to_writer(out, &shown);
    }

    /// Copies data, replacing each content block at any depth by what `replace` makes of it and
    /// redacting hidden uris from every string. A key that held a hidden uri takes a numbered
    /// placeholder (`[withheld link 1]`, counted by `keys` over the whole data), so no two keys
    /// become one and no value is lost.
    fn map_blocks(
        &mut self,
        data: &Value,
        hidden: &HiddenUris,
        keys: &mut usize,
        replace: &mut dyn FnMut(&mut Self, &Value, &HiddenUris) -> Value,
    ) -> Value {
        if is_content_block(data) {
            return replace(self, data, hidden);
        }
        match data {
            Value::Object(object) => {
                let mut shown = Map::new();
                for (key, value) in object {
                    let key = shown_key(hidden, key, keys, |key| shown.contains_key(key));
                    let value = self.map_blocks(value, hidden, keys, replace);
                    shown.insert(key, value);
                }
                Value::Object(shown)
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| self.map_blocks(v, hidden, keys, replace))
                    .collect(),
            ),
            Value::String(s) => Value::String(hidden.redact(s).into_owned()),
            Value::Null | Value::Bool(_) | Value::Number(_) => data.clone(),
        }
    }

    // ----- The message lanes: push events, channel messages, user-position injections. -----

    /// A push event's `payload.content` (or the params holding it), or its refusal.
    pub fn push<'a>(&mut self, content: &'a Value) -> Result<MessageView<'a>, PushRefusal> {
        let blocks = MessageBlocks::of(content);
        if blocks.visibly_empty() {
            return Err(PushRefusal);
        }
        Ok(self.message(content, &blocks, Provenance::PushEvent))
    }

    /// A render step's result, shown as a push event's content is, or nothing.
    pub fn render_result<'a>(&mut self, content: &'a Value) -> RenderOutcome<'a> {
        match self.push(content) {
            Ok(view) => RenderOutcome::Shown(view),
            Err(PushRefusal) => RenderOutcome::NothingHappened,
        }
    }

    /// One channel message's `content`, or its own refusal.
    pub fn channel_message<'a>(
        &mut self,
        content: &'a Value,
    ) -> Result<MessageView<'a>, ChannelRefusal> {
        let blocks = MessageBlocks::of(content);
        if blocks.visibly_empty() {
            return Err(ChannelRefusal);
        }
        Ok(self.message(content, &blocks, Provenance::ChannelMessage))
    }

    /// A `beforeUser` or `afterUser` injection's `content` (an array, or a plain string that is
    /// one text block).
    pub fn injection_user<'a>(&mut self, content: &'a Value) -> MessageView<'a> {
        match content {
            Value::String(text) => {
                let text = self.settled(|lanes| {
                    let hidden = lanes.hidden(&[]);
                    let text = hidden.redact(text).into_owned();
                    (text, lanes.remember(&hidden))
                });
                MessageView {
                    parts: vec![Part::Text(text.clone())],
                    stored: text,
                }
            }
            _ => self.message(
                content,
                &MessageBlocks::of(content),
                Provenance::ContextInjection,
            ),
        }
    }

    fn message<'a>(
        &mut self,
        content: &'a Value,
        blocks: &MessageBlocks<'a>,
        provenance: Provenance,
    ) -> MessageView<'a> {
        self.settled(|lanes| lanes.message_pass(content, blocks, provenance))
    }

    /// One pass of [`Projector::message`], and whether it taught the session a url.
    fn message_pass<'a>(
        &mut self,
        content: &'a Value,
        blocks: &MessageBlocks<'a>,
        provenance: Provenance,
    ) -> (MessageView<'a>, bool) {
        let hidden = self.hidden(&[content]);
        let mut parts = Vec::new();
        let mut stored = Vec::new();
        let texts = joined_texts(&blocks.blocks, &hidden);
        for (block, text) in blocks.blocks.iter().zip(texts) {
            let (part, text) = match text {
                Some(text) => (Part::Text(text.clone()), text),
                None => self.message_part(block, provenance, &hidden),
            };
            parts.push(part);
            stored.push(text);
        }
        let learned = self.remember(&hidden);
        let view = MessageView {
            parts,
            stored: stored.join("\n"),
        };
        (view, learned)
    }

    /// One block of a message: the part sent, and the text kept in history.
    fn message_part<'a>(
        &mut self,
        block: &Block<'a>,
        provenance: Provenance,
        hidden: &HiddenUris,
    ) -> (Part<'a>, String) {
        let text = |t: String| (Part::Text(t.clone()), t);
        match block {
            Block::Text(t) => text(hidden.redact(t).into_owned()),
            Block::InlineImage(media) => self.message_image(media, hidden),
            Block::InlineAudio(media) => self.message_audio(media, hidden),
            Block::InlineContradiction(_) => text(markers::WITHHELD.to_owned()),
            Block::Reference(reference) => text(self.stub(reference, provenance, hidden)),
            Block::EmbeddedText(embedded) => text(hidden.redact(embedded.text).into_owned()),
            Block::EmbeddedBlob(blob) => match self.blob_as(blob, hidden) {
                BlobAs::Image(media) => self.message_image(media, hidden),
                BlobAs::Audio(media) => self.message_audio(media, hidden),
                BlobAs::Document(media, label) => text(other_type(media, &label)),
                BlobAs::Text(t) => text(t),
            },
            Block::EmbeddedUnreadable(_) => text(markers::RESOURCE_UNREADABLE.to_owned()),
            Block::Invalid(invalid) => text(invalid_text(invalid, hidden)),
        }
    }

    fn message_image<'a>(&mut self, media: &Media<'a>, hidden: &HiddenUris) -> (Part<'a>, String) {
        match image_fate(media, self.limits(), hidden) {
            Ok((sniffed, dimensions)) => {
                let placeholder = self.image_placeholder(media, sniffed);
                if self.route.images_in_messages && self.route.takes_image_type(Some(sniffed)) {
                    let part = Part::Image {
                        sniffed,
                        dimensions,
                        data: media.data,
                    };
                    (part, placeholder)
                } else {
                    (Part::Text(placeholder.clone()), placeholder)
                }
            }
            Err(marker) => (Part::Text(marker.clone()), marker),
        }
    }

    /// Audio in a message: native where the route takes its type in a message and
    /// [`Projector::native_audio`] says; else its line.
    fn message_audio<'a>(&mut self, media: &Media<'a>, hidden: &HiddenUris) -> (Part<'a>, String) {
        let line = audio_text(media, hidden);
        match self.native_audio(media, self.route.takes_audio(media.sniffed)) {
            Some(part) => (part, line),
            None => (Part::Text(line.clone()), line),
        }
    }

    // ----- The system-position injection. -----

    /// A `system` injection's texts, joined with `\n`: what the host appends to its system
    /// prompt. Images and audio become the system-position lines.
    pub fn injection_system(&mut self, content: &Value) -> String {
        self.settled(|lanes| lanes.injection_system_pass(content))
    }

    /// One pass of [`Projector::injection_system`], and whether it taught the session a url.
    fn injection_system_pass(&mut self, content: &Value) -> (String, bool) {
        if let Value::String(text) = content {
            let hidden = self.hidden(&[]);
            let text = hidden.redact(text).into_owned();
            return (text, self.remember(&hidden));
        }
        let hidden = self.hidden(&[content]);
        let mut lines = Vec::new();
        let blocks = content.as_array().map(Vec::as_slice).unwrap_or_default();
        let classified: Vec<Block<'_>> = blocks.iter().map(classify).collect();
        let texts = joined_texts(&classified, &hidden);
        for (block, text) in classified.into_iter().zip(texts) {
            if let Some(text) = text {
                lines.push(text);
                continue;
            }
            let line = match block {
                Block::Text(t) => hidden.redact(t).into_owned(),
                Block::InlineImage(_) => markers::SYSTEM_IMAGE.to_owned(),
                Block::InlineAudio(_) => markers::SYSTEM_AUDIO.to_owned(),
                Block::InlineContradiction(_) => markers::WITHHELD.to_owned(),
                Block::Reference(reference) => {
                    self.stub(&reference, Provenance::ContextInjection, &hidden)
                }
                Block::EmbeddedText(embedded) => hidden.redact(embedded.text).into_owned(),
                Block::EmbeddedBlob(blob) => match self.blob_as(&blob, &hidden) {
                    BlobAs::Image(_) => markers::SYSTEM_IMAGE.to_owned(),
                    BlobAs::Audio(_) => markers::SYSTEM_AUDIO.to_owned(),
                    BlobAs::Document(media, label) => other_type(media, &label),
                    BlobAs::Text(text) => text,
                },
                Block::EmbeddedUnreadable(_) => markers::RESOURCE_UNREADABLE.to_owned(),
                Block::Invalid(invalid) => invalid_text(&invalid, &hidden),
            };
            lines.push(line);
        }
        let learned = self.remember(&hidden);
        (lines.join("\n"), learned)
    }

    // ----- A server's free-standing string. -----

    /// A string a server sent outside any content (a JSON-RPC error's message) as a model may
    /// see it: control and format characters removed, then every uri the session hides, and
    /// every credential-shaped url, withheld.
    pub fn server_text(&mut self, text: &str) -> String {
        self.settled(|lanes| {
            let hidden = lanes.hidden(&[]);
            let shown = hidden.redact_label(text).into_owned();
            (shown, lanes.remember(&hidden))
        })
    }

    // ----- The script view. -----

    /// What a script reading a tool result whole receives: its content as blocks a script can
    /// use (text, images and audio with their data, everything else as its text), its data with
    /// every content block at any depth made the same way, and never a uri.
    pub fn script_result(&mut self, result: &Value) -> Value {
        self.settled(|lanes| lanes.script_result_pass(result))
    }

    /// One pass of [`Projector::script_result`], and whether it taught the session a url.
    fn script_result_pass(&mut self, result: &Value) -> (Value, bool) {
        let read = ResultView::of_value(result);
        let parsed = ToolResult::from_view(&read);
        let hidden = self.hidden_in(&parsed.scope());
        let classified: Vec<Block<'_>> = parsed.blocks().collect();
        let shown = match result {
            Value::Object(object) if !is_content_block(result) => {
                let mut view = Map::new();
                for (key, value) in object {
                    let shown = match (key.as_str(), value) {
                        // Every element of a content array is a block, odd ones included.
                        ("content", Value::Array(blocks)) => {
                            self.script_blocks(blocks, &classified, &hidden)
                        }
                        ("content" | "structuredContent", _) => self.script_data(value, &hidden),
                        // A boolean flag as sent; anything else there is not a flag, and a
                        // server's data in it would pass unredacted.
                        ("isError", Value::Bool(_)) => value.clone(),
                        // Other fields (`_meta`, extensions) are not the model's view.
                        _ => continue,
                    };
                    view.insert(key.clone(), shown);
                }
                Value::Object(view)
            }
            Value::Array(blocks) => self.script_blocks(blocks, &classified, &hidden),
            other => self.script_data(other, &hidden),
        };
        let learned = self.remember(&hidden);
        (shown, learned)
    }

    /// A content array as a script receives it: one block per element, adjacent texts redacted
    /// as one.
    fn script_blocks(
        &mut self,
        blocks: &[Value],
        classified: &[Block<'_>],
        hidden: &HiddenUris,
    ) -> Value {
        let texts = joined_texts(classified, hidden);
        Value::Array(
            classified
                .iter()
                .zip(blocks)
                .zip(texts)
                .map(|((block, raw), text)| match text {
                    Some(text) => serde_json::json!({"type": "text", "text": text}),
                    None => self.script_block(block, raw, hidden),
                })
                .collect(),
        )
    }

    /// What a script picking one field of a result, at any depth, receives: `pointer` is a JSON
    /// pointer into the result (`/structuredContent/items/0`). `None` when nothing is there.
    /// The whole result's `never` marks apply.
    pub fn script_field(&mut self, result: &Value, pointer: &str) -> Option<Value> {
        let field = result.pointer(pointer)?;
        Some(self.settled(|lanes| lanes.script_field_pass(result, field, pointer)))
    }

    /// One pass of [`Projector::script_field`] on the field found, and whether it taught the
    /// session a url.
    fn script_field_pass(&mut self, result: &Value, field: &Value, pointer: &str) -> (Value, bool) {
        let read = ResultView::of_value(result);
        let hidden = self.hidden_in(&ToolResult::from_view(&read).scope());
        // An element of the content array is a block, whatever it holds.
        let in_content = match result {
            Value::Array(_) => pointer.matches('/').count() == 1,
            _ => pointer.starts_with("/content/") && pointer.matches('/').count() == 2,
        } && result
            .pointer(pointer.rsplit_once('/').map_or("", |(parent, _)| parent))
            .is_some_and(Value::is_array);
        let shown = if in_content {
            self.script_block(&classify(field), field, &hidden)
        } else {
            self.script_data(field, &hidden)
        };
        let learned = self.remember(&hidden);
        (shown, learned)
    }

    fn script_data(&mut self, data: &Value, hidden: &HiddenUris) -> Value {
        self.map_blocks(data, hidden, &mut 0, &mut |this, block, hidden| {
            this.script_block(&classify(block), block, hidden)
        })
    }

    fn script_block(&mut self, block: &Block<'_>, raw: &Value, hidden: &HiddenUris) -> Value {
        let text = |t: &str| serde_json::json!({"type": "text", "text": t});
        match block {
            Block::Text(t) => text(&hidden.redact(t)),
            Block::InlineImage(media) => script_media("image", media, raw, hidden),
            Block::InlineAudio(media) => script_media("audio", media, raw, hidden),
            Block::InlineContradiction(_) => text(markers::WITHHELD),
            Block::Reference(reference) => {
                text(&self.stub(reference, Provenance::ToolResult, hidden))
            }
            Block::EmbeddedText(embedded) => text(&hidden.redact(embedded.text)),
            Block::EmbeddedBlob(blob) => match self.blob_as(blob, hidden) {
                BlobAs::Image(media) => script_media("image", media, raw, hidden),
                BlobAs::Audio(media) => script_media("audio", media, raw, hidden),
                BlobAs::Document(media, label) => text(&other_type(media, &label)),
                BlobAs::Text(t) => text(&t),
            },
            Block::EmbeddedUnreadable(_) => text(markers::RESOURCE_UNREADABLE),
            Block::Invalid(invalid) => text(&invalid_text(invalid, hidden)),
        }
    }

    // ----- Shared by the lanes. -----

    /// A reference's stub, registering it with this projector's server.
    fn stub(
        &mut self,
        reference: &Reference<'_>,
        provenance: Provenance,
        hidden: &HiddenUris,
    ) -> String {
        let mut stub = String::with_capacity(STUB_BYTES);
        self.stub_into(&mut stub, reference, provenance, hidden, None);
        stub
    }

    /// [`Projector::stub`], written at the end of `stub`.
    ///
    /// `passed` is a name known to pass redaction as it is
    /// ([`PassCheck::label_passes_unchanged`]), asked on a second core: the record's name, when
    /// it is that one, is written as it is.
    fn stub_into(
        &mut self,
        stub: &mut String,
        reference: &Reference<'_>,
        provenance: Provenance,
        hidden: &HiddenUris,
        passed: Option<&str>,
    ) {
        const SEPARATOR: &str = " — ";
        let show_uri = hidden.shows(reference.uri);
        let record = self.registry.register(reference, self.server);
        let claims = &record.claims;
        // `[<id>] <name> — <uri> — <mime>, <size> claimed — <provenance> — <hint>`, each part
        // but the last two only when there is something to say, written in one string.
        stub.push('[');
        stub.push_str(record.id.as_str());
        stub.push_str("] ");
        if let Some(name) = &claims.name {
            if passed == Some(name.as_str()) {
                markers::sanitize_into(stub, name);
            } else {
                markers::sanitize_into(stub, &hidden.redact_label(name));
            }
            stub.push_str(SEPARATOR);
        }
        if show_uri {
            markers::sanitize_into(stub, &claims.uri);
            stub.push_str(SEPARATOR);
        }
        if let Some(m) = claims.mime_type.as_deref() {
            let essence = mcpl_classify::ClaimedType::parse(m).essence;
            markers::sanitize_into(stub, &hidden.redact_label(essence.as_deref().unwrap_or(m)));
        }
        if let Some(size) = claims.size_bytes {
            if claims.mime_type.is_some() {
                stub.push_str(", ");
            }
            stub.push_str(&markers::size_label(size));
        }
        if claims.mime_type.is_some() || claims.size_bytes.is_some() {
            stub.push_str(" claimed");
            stub.push_str(SEPARATOR);
        }
        stub.push_str(provenance.as_str());
        stub.push_str(SEPARATOR);
        match &record.fetched {
            Some(fetched) => {
                stub.push_str("saved: ");
                markers::sanitize_into(stub, &fetched.path);
            }
            None => stub.push_str(markers::FETCH_HINT),
        }
    }

    /// What an embedded blob is shown as, by its claimed type: an image or audio type makes the
    /// inline block; SVG is its text within the opaque limit; PDF bytes are a document where
    /// the lane takes one; anything else is a marker.
    fn blob_as<'m, 'a>(
        &mut self,
        blob: &'m EmbeddedBlob<'a>,
        hidden: &HiddenUris,
    ) -> BlobAs<'m, 'a> {
        let media = &blob.media;
        let Some(claimed) = &media.claimed else {
            return BlobAs::Text(markers::RESOURCE_NO_TYPE.to_owned());
        };
        let essence = claimed.essence.as_deref();
        let svg = essence == Some("image/svg+xml") || media.sniffed == Some(Sniffed::Svg);
        if svg {
            return BlobAs::Text(match svg_text(media, self.limits().opaque_bytes) {
                Some(text) => hidden.redact(&text).into_owned(),
                None => markers::resource_other_type(
                    &hidden.redact(essence.unwrap_or(claimed.raw)),
                    size_of(media),
                ),
            });
        }
        if claimed.is_under("image") {
            BlobAs::Image(media)
        } else if claimed.is_under("audio") {
            BlobAs::Audio(media)
        } else if media.sniffed == Some(Sniffed::Pdf) {
            // A PDF by its magic bytes, whatever else its label says; the label is named by the
            // marker it shows where it does not go natively.
            BlobAs::Document(
                media,
                hidden.redact(essence.unwrap_or(claimed.raw)).into_owned(),
            )
        } else {
            BlobAs::Text(markers::resource_other_type(
                &hidden.redact(essence.unwrap_or(claimed.raw)),
                size_of(media),
            ))
        }
    }
}

/// The most blocks a batch of [`next_batch`] holds.
const BATCH_BLOCKS: usize = 2048;
/// A batch ends after the block that brings its texts to this many bytes.
const BATCH_TEXT_BYTES: usize = 1 << 20;
/// A batch whose texts and link names hold fewer bytes is sorted on one core, as its blocks are
/// met: a thread costs more than it would spare.
const PARALLEL_TEXT_BYTES: usize = 16 << 10;

/// A result of at least this many blocks has its pieces asked ahead while its hidden uris are
/// read ([`Projector::hidden_and_pieces`]): a batch's worth.
const PIECES_AHEAD_BLOCKS: usize = BATCH_BLOCKS;

/// What each block's text or name alone decides of its pass check, from the first block on,
/// until `stop` is set.
fn pieces_until(result: &ToolResult<'_>, stop: &AtomicBool) -> Vec<Option<PieceCheck>> {
    let mut known = Vec::new();
    for block in result.blocks() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        known.push(Ask::of(&block).map(Ask::piece_check));
    }
    known
}

/// Fills `batch` with the next blocks, up to [`BATCH_BLOCKS`] or [`BATCH_TEXT_BYTES`] of text;
/// `false` when none are left.
fn next_batch<'a>(
    blocks: &mut impl Iterator<Item = (usize, Block<'a>)>,
    batch: &mut Vec<(usize, Block<'a>)>,
) -> bool {
    let mut bytes = 0;
    for (index, block) in blocks.by_ref() {
        bytes += text_of(&block).map_or(0, str::len);
        batch.push((index, block));
        if batch.len() >= BATCH_BLOCKS || bytes >= BATCH_TEXT_BYTES {
            break;
        }
    }
    !batch.is_empty()
}

/// Whether each text of a batch passes redaction unchanged
/// ([`HiddenUris::passes_unchanged`]), and each reference's name
/// ([`PassCheck::label_passes_unchanged`]), asked on two cores for batches with much text
/// (decisions 0144, 0163, 0168). Each batch is read one ahead: its questions are shared
/// ([`Shared`]) before the batch before it is read, so a second thread answers them while
/// this one reads that batch; then this thread answers what is left, and both finish
/// together. The answers are the same either way; a text met inside a run redaction changes
/// is never asked on one core.
struct Verdicts<'scope, 'env, 'a> {
    scope: &'scope std::thread::Scope<'scope, 'env>,
    check: PassCheck<'scope>,
    /// What each block's piece alone decides, by the block's place, for the first blocks
    /// ([`Projector::hidden_and_pieces`]).
    known: &'scope [Option<PieceCheck>],
    /// The second thread's end, once a batch asked for it; `None` before, and once it is gone.
    helper: Option<std::sync::mpsc::Sender<Arc<Shared<'scope>>>>,
    /// Whether a second thread was asked for (it is made once, at most).
    helper_made: bool,
    /// By the block's place in the batch; empty when the batch is sorted as it is read.
    passes: Vec<bool>,
    /// The batch after the one being read, once the first is read: empty when none is left.
    ahead: Vec<(usize, Block<'a>)>,
    /// Whether the first batch was read, and the questions of `ahead` when they were shared.
    started: bool,
    ahead_shared: Option<Arc<Shared<'scope>>>,
}

/// How many questions one thread takes from a [`Shared`] batch at a time.
const SHARED_CHUNK: usize = 32;

/// A batch's questions, answered by both threads: each takes the next [`SHARED_CHUNK`] of them
/// until none is left.
struct Shared<'t> {
    asks: Vec<Option<(Ask<'t>, Option<PieceCheck>)>>,
    /// The next chunk to take.
    next: AtomicUsize,
    /// By question: whether it passes. Written once, by the thread that took its chunk.
    answers: Vec<AtomicBool>,
    /// How many chunks were answered, and which, and whether the second thread stopped in one.
    state: std::sync::Mutex<SharedState>,
    answered: std::sync::Condvar,
}

#[derive(Default)]
struct SharedState {
    chunks_answered: usize,
    /// By chunk.
    answered: Vec<bool>,
    /// The second thread panicked while it answered a chunk, which no one else will answer.
    abandoned: bool,
}

impl<'t> Shared<'t> {
    fn new(asks: Vec<Option<(Ask<'t>, Option<PieceCheck>)>>) -> Shared<'t> {
        let chunks = asks.len().div_ceil(SHARED_CHUNK);
        Shared {
            answers: asks.iter().map(|_| AtomicBool::new(false)).collect(),
            asks,
            next: AtomicUsize::new(0),
            state: std::sync::Mutex::new(SharedState {
                answered: vec![false; chunks],
                ..SharedState::default()
            }),
            answered: std::sync::Condvar::new(),
        }
    }

    fn chunks(&self) -> usize {
        self.asks.len().div_ceil(SHARED_CHUNK)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, SharedState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Answers chunks until none is left to take.
    fn answer(&self, check: PassCheck<'_>) {
        loop {
            let chunk = self.next.fetch_add(1, Ordering::Relaxed);
            if chunk >= self.chunks() {
                return;
            }
            self.answer_chunk(chunk, check);
        }
    }

    fn answer_chunk(&self, chunk: usize, check: PassCheck<'_>) {
        let start = chunk * SHARED_CHUNK;
        let end = (start + SHARED_CHUNK).min(self.asks.len());
        for (ask, answer) in self.asks[start..end].iter().zip(&self.answers[start..end]) {
            let passes = ask.is_some_and(|(ask, known)| ask.passes(check, known));
            answer.store(passes, Ordering::Relaxed);
        }
        // The lock orders the answers before whoever reads them after it.
        let mut state = self.state();
        state.answered[chunk] = true;
        state.chunks_answered += 1;
        if state.chunks_answered == self.chunks() {
            self.answered.notify_all();
        }
    }

    /// Every answer, once each chunk is answered; this thread answers what is left, and any
    /// chunk the second thread abandoned.
    fn answers(&self, check: PassCheck<'_>) -> Vec<bool> {
        self.answer(check);
        let mut state = self.state();
        while state.chunks_answered < self.chunks() && !state.abandoned {
            state = self
                .answered
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        if state.chunks_answered < self.chunks() {
            let left: Vec<usize> = (0..self.chunks())
                .filter(|&chunk| !state.answered[chunk])
                .collect();
            drop(state);
            for chunk in left {
                self.answer_chunk(chunk, check);
            }
        }
        self.answers
            .iter()
            .map(|answer| answer.load(Ordering::Relaxed))
            .collect()
    }
}

/// Marks a batch abandoned when the second thread panics while it answers it, so that the
/// lane's thread answers the rest and does not wait for ever.
struct AbandonOnPanic<'s, 't>(&'s Shared<'t>);

impl Drop for AbandonOnPanic<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.state().abandoned = true;
            self.0.answered.notify_all();
        }
    }
}

impl<'scope, 'env, 'a: 'scope> Verdicts<'scope, 'env, 'a> {
    fn new(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        check: PassCheck<'scope>,
        known: &'scope [Option<PieceCheck>],
    ) -> Self {
        Verdicts {
            scope,
            check,
            known,
            helper: None,
            helper_made: false,
            passes: Vec::new(),
            ahead: Vec::new(),
            started: false,
            ahead_shared: None,
        }
    }

    /// Fills `batch` with the next blocks, as [`next_batch`] does, with the answers for its
    /// texts and names when they were asked on two cores; `false` when no block is left.
    fn next_batch(
        &mut self,
        blocks: &mut impl Iterator<Item = (usize, Block<'a>)>,
        batch: &mut Vec<(usize, Block<'a>)>,
    ) -> bool {
        self.passes.clear();
        batch.clear();
        let shared = if self.started {
            if self.ahead.is_empty() {
                return false;
            }
            std::mem::swap(batch, &mut self.ahead);
            self.ahead_shared.take()
        } else {
            self.started = true;
            if !next_batch(blocks, batch) {
                return false;
            }
            self.share(batch)
        };
        // The next batch is read, and its questions shared, before this one is answered.
        let mut ahead = std::mem::take(&mut self.ahead);
        ahead.clear();
        self.ahead_shared = match next_batch(blocks, &mut ahead) {
            true => self.share(&ahead),
            false => None,
        };
        self.ahead = ahead;
        if let Some(shared) = shared {
            self.passes = shared.answers(self.check);
        }
        true
    }

    /// Shares a batch's questions with the second thread, made on the first call, when they
    /// are worth it ([`wants_two_cores`]); `None` when they are asked one at a time.
    fn share(&mut self, batch: &[(usize, Block<'a>)]) -> Option<Arc<Shared<'scope>>> {
        if !wants_two_cores(batch) {
            return None;
        }
        if !self.helper_made {
            self.helper_made = true;
            self.helper = self.make_helper();
        }
        let shared = Arc::new(Shared::new(asks_of(batch, self.known)));
        match &self.helper {
            Some(helper) if helper.send(Arc::clone(&shared)).is_ok() => Some(shared),
            _ => {
                self.helper = None;
                None
            }
        }
    }

    /// A second thread that answers what it can of each batch it is sent, in order, until
    /// its sender is dropped; `None` when no thread can be made.
    fn make_helper(&self) -> Option<std::sync::mpsc::Sender<Arc<Shared<'scope>>>> {
        let (share, shared) = std::sync::mpsc::channel::<Arc<Shared<'scope>>>();
        let check = self.check;
        std::thread::Builder::new()
            .spawn_scoped(self.scope, move || {
                for batch in shared {
                    let _abandon = AbandonOnPanic(&batch);
                    batch.answer(check);
                }
            })
            .ok()?;
        Some(share)
    }

    /// Whether the text of the block at `at` in the batch (at `index` in the result) passes
    /// redaction unchanged.
    fn passes(&self, at: usize, index: usize, text: &str) -> bool {
        match self.passes.get(at) {
            Some(&passes) => passes,
            None => self
                .check
                .passes_unchanged_given(text, known_at(self.known, index)),
        }
    }

    /// Whether the name of the reference at `at` in the batch was asked on two cores and
    /// passes redaction unchanged; `false` when it was not asked.
    fn label_passed(&self, at: usize) -> bool {
        self.passes.get(at).copied().unwrap_or(false)
    }
}

/// What a block asks: whether its text, or a reference's name, passes redaction unchanged.
#[derive(Clone, Copy)]
enum Ask<'t> {
    Text(&'t str),
    Name(&'t str),
}

impl<'t> Ask<'t> {
    fn of(block: &Block<'t>) -> Option<Ask<'t>> {
        match block {
            Block::Reference(reference) => reference.name.map(Ask::Name),
            block => text_of(block).map(Ask::Text),
        }
    }

    fn len(self) -> usize {
        match self {
            Ask::Text(text) | Ask::Name(text) => text.len(),
        }
    }

    fn passes(self, check: PassCheck<'_>, known: Option<PieceCheck>) -> bool {
        match self {
            Ask::Text(text) => check.passes_unchanged_given(text, known),
            Ask::Name(name) => check.label_passes_unchanged_given(name, known),
        }
    }

    /// What the text or name alone decides of [`Ask::passes`].
    fn piece_check(self) -> PieceCheck {
        match self {
            Ask::Text(text) | Ask::Name(text) => PieceCheck::of(text),
        }
    }
}

/// What each block of a batch asks, `None` for a block with neither text nor name, with what
/// its piece alone decides when that was asked ahead.
fn asks_of<'t>(
    blocks: &[(usize, Block<'t>)],
    known: &[Option<PieceCheck>],
) -> Vec<Option<(Ask<'t>, Option<PieceCheck>)>> {
    blocks
        .iter()
        .map(|(index, block)| Ask::of(block).map(|ask| (ask, known_at(known, *index))))
        .collect()
}

/// What the piece of the block at `index` alone decides, when it was asked ahead.
fn known_at(known: &[Option<PieceCheck>], index: usize) -> Option<PieceCheck> {
    known.get(index).copied().flatten()
}

/// Whether a batch's texts and names are worth a second core: they hold enough bytes, and the
/// machine has one.
fn wants_two_cores(batch: &[(usize, Block<'_>)]) -> bool {
    let bytes: usize = batch
        .iter()
        .map(|(_, block)| Ask::of(block).map_or(0, Ask::len))
        .sum();
    bytes >= PARALLEL_TEXT_BYTES && mcpl_classify::two_cores()
}

/// A text block's text, or an embedded text resource's: what a lane redacts as a run.
fn text_of<'a>(block: &Block<'a>) -> Option<&'a str> {
    match block {
        Block::Text(text) => Some(text),
        Block::EmbeddedText(embedded) => Some(embedded.text),
        _ => None,
    }
}

/// The texts of a message's text blocks (text and embedded text), each run of adjacent ones
/// redacted as one, so that a uri split across them is found; `None` for other blocks.
fn joined_texts<'a>(blocks: &[Block<'a>], hidden: &HiddenUris) -> Vec<Option<String>> {
    let mut out = vec![None; blocks.len()];
    let mut i = 0;
    while i < blocks.len() {
        let start = i;
        let mut run = Vec::new();
        while let Some(text) = blocks.get(i).and_then(text_of) {
            run.push(text);
            i += 1;
        }
        if run.is_empty() {
            i += 1;
            continue;
        }
        for (k, text) in hidden.redact_run(&run).into_iter().enumerate() {
            out[start + k] = Some(text.into_owned());
        }
    }
    out
}

/// A redacted key with each placeholder numbered: `[withheld link 1]`, `[withheld link 2]`, ...
/// A key of data as shown: redacted, a hidden uri in it numbered (`keys` counts them over the
/// whole data), and numbered again while `taken` says an earlier key of its object is the same.
fn shown_key(
    hidden: &HiddenUris,
    key: &str,
    keys: &mut usize,
    taken: impl Fn(&str) -> bool,
) -> String {
    let mut key = match hidden.redact(key) {
        Cow::Borrowed(key) => key.to_owned(),
        Cow::Owned(redacted) => numbered(&redacted, keys),
    };
    while taken(&key) {
        key = numbered(WITHHELD_LINK, keys);
    }
    key
}

/// What writing raw data carries from member to member: what it hides, its payloads' way out,
/// the hidden-uri keys numbered so far, whether it met a block, and the text.
struct DataWriter<'w, 'x, 'f> {
    hidden: &'w HiddenUris<'w>,
    attach: &'w mut Option<&'x mut Attach<'f>>,
    keys: usize,
    blocks: bool,
    out: Vec<u8>,
}

impl DataWriter<'_, '_, '_> {
    /// Begins a member: a comma unless it is the `first`, and room for it, an eighth of what the
    /// text holds at a time, so a text a little longer than its JSON does not double its room.
    /// A string makes its own room.
    fn member(&mut self, first: &mut bool) {
        const ROOM: usize = 4096;
        if self.out.capacity() - self.out.len() < ROOM {
            self.out.reserve_exact(ROOM.max(self.out.len() / 8));
        }
        if !std::mem::take(first) {
            self.out.push(b',');
        }
    }
}

/// Writes `text` as a JSON string.
fn write_json_str(out: &mut Vec<u8>, text: &str) {
    // Writing a string into a `Vec` cannot fail.
    let _ = mcpl_classify::write_json_str(out, text);
}

fn numbered(redacted: &str, count: &mut usize) -> String {
    let mut out = String::with_capacity(redacted.len() + 4);
    let mut rest = redacted;
    while let Some(at) = rest.find(WITHHELD_LINK) {
        *count += 1;
        out.push_str(&rest[..at]);
        out.push_str(&markers::withheld_link_numbered(*count));
        rest = &rest[at + WITHHELD_LINK.len()..];
    }
    out.push_str(rest);
    out
}

/// The image or audio block a script receives: its data, and the type its bytes say (else its
/// label). An image with empty data is the block as it came.
fn script_media(kind: &str, media: &Media<'_>, raw: &Value, hidden: &HiddenUris) -> Value {
    let mut block = Map::new();
    block.insert("type".to_owned(), Value::from(kind));
    // Sound base64 is bytes, and no uri with a scheme can be spelled in its alphabet; data that
    // is not base64 is a server's text shown as sent, so it is redacted as text is.
    let data = match media.base64 {
        Some(_) => hidden.redact(media.data),
        None => Cow::Borrowed(media.data),
    };
    block.insert("data".to_owned(), Value::from(data.into_owned()));
    let media_type = media
        .sniffed
        .filter(|_| !media.is_empty())
        .map(Sniffed::mime)
        .or_else(|| media.claimed.as_ref().map(|c| c.raw))
        .or_else(|| raw.get("mimeType").and_then(Value::as_str));
    if let Some(media_type) = media_type {
        block.insert(
            "mimeType".to_owned(),
            Value::from(hidden.redact(media_type)),
        );
    }
    Value::Object(block)
}

/// What remains of a result a host policy withholds: the reason and the kinds of its blocks,
/// and nothing of any block's fields, so nothing of an embedded resource survives.
pub fn withheld(result: &ToolResult<'_>, reason: &str) -> String {
    let blocks: Vec<&'static str> = result.blocks().map(|block| block.kind_name()).collect();
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for kind in &blocks {
        match kinds.iter_mut().find(|(k, _)| k == kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((kind, 1)),
        }
    }
    let kinds = kinds
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ");
    markers::withheld_result(reason, &kinds, blocks.len())
}

/// Whether an image payload shows on a route: what its bytes are and its size, as classification
/// read them, or the marker that stands in its place (no data, not renderable, over the
/// per-image limit, in that order).
fn image_fate(
    media: &Media<'_>,
    limits: Limits,
    hidden: &HiddenUris,
) -> Result<(Sniffed, Dimensions), String> {
    match (media.sniffed, media.dimensions) {
        _ if media.is_empty() => Err(markers::IMAGE_NO_DATA.to_owned()),
        (Some(sniffed), Some(dimensions)) if media.renderable() => {
            if media.within(limits.native_image_bytes) {
                Ok((sniffed, dimensions))
            } else {
                Err(markers::image_over_limit(
                    size_of(media),
                    limits.native_image_bytes,
                ))
            }
        }
        _ => Err(markers::image_not_renderable(
            &hidden.redact(&describe_bytes(media)),
            size_of(media),
        )),
    }
}

/// What the bytes of an unrenderable image are, for its marker.
fn describe_bytes(media: &Media<'_>) -> String {
    if media.base64.is_some() {
        return "invalid base64".to_owned();
    }
    match (media.sniffed, media.defect) {
        (Some(sniffed), Some(ImageDefect::Truncated)) => format!("truncated {}", sniffed.mime()),
        (Some(sniffed), Some(ImageDefect::NoDimensions)) => {
            format!("{} without readable dimensions", sniffed.mime())
        }
        (Some(sniffed), Some(defect)) => format!("{} ({})", sniffed.mime(), defect.as_str()),
        (Some(sniffed), None) => sniffed.mime().to_owned(),
        (None, _) => match &media.claimed {
            Some(claimed) => format!(
                "unrecognised bytes labelled {}",
                claimed.essence.as_deref().unwrap_or(claimed.raw)
            ),
            None => "unrecognised bytes".to_owned(),
        },
    }
}

/// `[Resource not shown: this host can't display its data (<label>, <size>).]`: a PDF where
/// documents do not go natively.
fn other_type(media: &Media<'_>, label: &str) -> String {
    markers::resource_other_type(label, size_of(media))
}

/// A payload's size: exact when its base64 is sound, else estimated from its length.
fn size_of(media: &Media<'_>) -> u64 {
    media
        .decoded_bytes
        .unwrap_or(media.data.len() as u64 / 4 * 3)
}

fn audio_text(media: &Media<'_>, hidden: &HiddenUris) -> String {
    if media.is_empty() {
        return markers::AUDIO_NO_DATA.to_owned();
    }
    let mime = media
        .best_type()
        .or_else(|| media.claimed.as_ref().map(|c| c.raw))
        .unwrap_or("unknown type");
    markers::audio_line(&hidden.redact(mime), size_of(media))
}

fn invalid_text(invalid: &Invalid<'_>, hidden: &HiddenUris) -> String {
    match invalid.reason {
        InvalidReason::ReferenceWithoutUri {
            block_type: "resource",
        } => markers::NO_LINK.to_owned(),
        reason => markers::unrecognized(&hidden.redact(&reason.to_string())),
    }
}

/// An SVG blob's text, when it decodes as UTF-8 within `limit` bytes.
fn svg_text(media: &Media<'_>, limit: u64) -> Option<String> {
    if !media.within(limit) || media.base64.is_some() {
        return None;
    }
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(media.data)
        .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    Some(text.strip_prefix('\u{FEFF}').unwrap_or(&text).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::RouteId;
    use base64::Engine as _;
    use serde_json::json;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 24,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Batches with much text are sorted on two cores when the machine has them (each
        /// batch's questions shared while the one before it is read): each text's answer is
        /// the one [`HiddenUris::passes_unchanged`] gives it alone, each link name's the one
        /// [`PassCheck::label_passes_unchanged`] gives it, every block comes once and in
        /// order, and a batch asked on two cores has its answers. Texts draw on plain words, a
        /// hidden uri, other urls, a token, escapes and characters outside ASCII; some are
        /// short, so some batches hold too little text to be asked; images and links (named
        /// with words, a hidden uri, a control character, or not at all) come between;
        /// results span one batch to four. What each piece alone decides is known ahead for
        /// the blocks before a drawn place, as a second thread leaves it (decision 0172).
        #[test]
        fn batches_sorted_on_two_cores_answer_as_each_text_alone(
            texts in proptest::collection::vec(
                (
                    proptest::collection::vec(
                        // Plain words half the time, so that some texts pass and some do not.
                        proptest::prop_oneof![
                            proptest::sample::select(vec![
                                "the quick brown fox ",
                                "jumps over the lazy dog ",
                                "and keeps running ",
                                "through fields of data ",
                            ]),
                            proptest::sample::select(vec![
                                "https://h.example/files/report.csv ",
                                "h.example/files/report.csv",
                                "https://other.example/page ",
                                "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 ",
                                "%68ttps%3A%2F%2F",
                                "é ü 漢字 ",
                                "QUJDREVGR0hJSktMTU5PUA== ",
                            ]),
                        ],
                        1..4,
                    ),
                    proptest::bool::weighted(0.8),
                ),
                200..320,
            ),
            blocks in 1usize..7000,
            others in proptest::collection::vec((0usize..7000, 0usize..5), 0..60),
            ahead in 0usize..8000,
        ) {
            let link = json!({"type": "resource_link", "uri": "https://h.example/files/report.csv"});
            let hidden = HiddenUris::of(&[&json!({"content": [link]})], UriPolicy::Hidden);
            let filler = "plain words to make the batch long enough ".repeat(10);
            let texts: Vec<String> = texts
                .iter()
                .map(|(pieces, long)| match long {
                    true => format!("{}{filler}", pieces.concat()),
                    false => pieces.concat(),
                })
                .collect();
            let mut between = vec![json!({"type": "image", "data": "aGk=", "mimeType": "image/png"})];
            for name in ["report.csv", "h.example/files/report.csv", "tab\tname", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"] {
                between.push(json!({"type": "resource_link", "uri": "https://h.example/n", "name": name}));
            }
            let mut all: Vec<Block<'_>> =
                (0..blocks).map(|i| Block::Text(&texts[i % texts.len()])).collect();
            for (at, which) in others {
                let at = at.min(all.len());
                all.insert(at, mcpl_classify::classify(&between[which]));
            }
            let known: Vec<Option<PieceCheck>> = all
                .iter()
                .take(ahead)
                .map(|block| Ask::of(block).map(Ask::piece_check))
                .collect();
            let mut read = Vec::new();
            let check = hidden.pass_check();
            let mut outcome = Ok(());
            std::thread::scope(|scope| {
                let mut verdicts = Verdicts::new(scope, check, &known);
                let mut blocks = all.iter().cloned().enumerate();
                let mut batch = Vec::new();
                while verdicts.next_batch(&mut blocks, &mut batch) {
                    let asked = mcpl_classify::two_cores() && wants_two_cores(&batch);
                    if verdicts.passes.is_empty() == asked {
                        outcome = Err(format!("asked {asked}: {} answers", verdicts.passes.len()));
                    }
                    for (at, (index, block)) in batch.iter().enumerate() {
                        read.push(*index);
                        if let Some(text) = text_of(block)
                            && verdicts.passes(at, *index, text) != hidden.passes_unchanged(text)
                        {
                            outcome = Err(format!("block {index}: {text}"));
                        }
                        if let Block::Reference(reference) = block
                            && let Some(name) = reference.name
                            && verdicts.label_passed(at) != (asked && check.label_passes_unchanged(name))
                        {
                            outcome = Err(format!("block {index}: name {name}"));
                        }
                    }
                }
            });
            proptest::prop_assert_eq!(outcome, Ok(()));
            proptest::prop_assert_eq!(read, (0..all.len()).collect::<Vec<_>>());
            // A text with the hidden uri never passes: the test reads both answers.
            proptest::prop_assert!(!hidden.passes_unchanged("see h.example/files/report.csv"));
            proptest::prop_assert!(hidden.passes_unchanged(&filler));
            proptest::prop_assert!(check.label_passes_unchanged("report.csv"));
            proptest::prop_assert!(!check.label_passes_unchanged("tab\tname"));
        }
    }

    /// A tool result is classified once, when it is read: the lanes project the blocks it holds,
    /// and a native image's part carries the type and size classification read from its header,
    /// so nothing downstream reads the payload again.
    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        /// Ends pushed and taken back read as a list of them does: small steps, steps of many
        /// bytes, ends past 4 GiB, and ends before the last (a step that wraps).
        #[test]
        fn part_ends_read_as_the_list_of_them(
            operations in proptest::collection::vec(
                proptest::prop_oneof![
                    (0usize..300).prop_map(Some),
                    proptest::prelude::any::<usize>().prop_map(Some),
                    proptest::strategy::Just(None),
                ],
                0..60,
            ),
            cuts in proptest::collection::vec(0usize..70, 0..6),
        ) {
            let mut ends = PartEnds::with_capacity(4);
            let mut list: Vec<usize> = Vec::new();
            let mut cuts = cuts.into_iter();
            for operation in operations {
                match (operation, list.last()) {
                    (Some(step), Some(&last)) if step < 300 => list.push(last + step),
                    (Some(end), _) => list.push(end),
                    (None, _) => {
                        let keep = cuts.next().unwrap_or(0);
                        ends.truncate(keep);
                        list.truncate(keep);
                        continue;
                    }
                }
                ends.push(*list.last().unwrap_or(&0));
            }
            proptest::prop_assert_eq!(ends.len(), list.len());
            proptest::prop_assert_eq!(ends.iter().collect::<Vec<_>>(), list.clone());
            // What is pushed after a cut follows what was kept.
            ends.push(7);
            list.push(7);
            proptest::prop_assert_eq!(ends.iter().collect::<Vec<_>>(), list);
        }
    }

    #[test]
    fn part_ends_past_4_gib_keep_every_end() {
        let big = u32::MAX as usize + 10;
        let mut ends = PartEnds::with_capacity(3);
        ends.push(5);
        ends.push(big);
        ends.push(big + 7);
        assert_eq!(ends, vec![5, big, big + 7]);
        assert_eq!(ends.len(), 3);
        ends.truncate(2);
        assert_eq!(ends.iter().collect::<Vec<_>>(), [5, big]);
        let narrow: PartEnds = vec![1, 2, 5].into();
        let spans: Vec<_> = part_spans(&narrow).collect();
        assert_eq!(spans, [0..1, 2..2, 3..5]);
    }
    #[test]
    fn an_image_part_carries_what_classification_read() {
        let png =
            base64::engine::general_purpose::STANDARD.encode(mcpl_testkit::fixture("image.png"));
        let value = json!({"content": [
            {"type": "image", "mimeType": "image/jpeg", "data": png},
            {"type": "resource_link", "uri": "https://files.example/a", "name": "a.csv"},
        ], "structuredContent": {"nested": {"type": "resource_link", "uri": "https://files.example/b"}}});
        let read = crate::ResultView::of_value(&value);
        let result = ToolResult::from_view(&read);
        let first = result.blocks().next();
        let Some(Block::InlineImage(media)) = &first else {
            panic!("not an image: {first:?}");
        };
        let (sniffed, dimensions) = (media.sniffed, media.dimensions);
        assert_eq!(sniffed, Some(Sniffed::Png));
        assert_eq!(
            dimensions,
            Some(Dimensions {
                width: 16,
                height: 12
            })
        );
        // Only the content array's references are the result's own (the eager fetch reads
        // these); a nested one is data.
        let uris: Vec<&str> = result.references().map(|r| r.uri).collect();
        assert_eq!(uris, ["https://files.example/a"]);

        let mut parts = TestParts::new();
        let mut projector = parts.projector(RouteId::Anthropic);
        let copies = projector.tool_result(&result);
        let LiveCopy::Native(parts) = &copies.live else {
            panic!("not native: {:?}", copies.live);
        };
        assert_eq!(
            parts[0],
            Part::Image {
                sniffed: Sniffed::Png,
                dimensions: Dimensions {
                    width: 16,
                    height: 12
                },
                data: &png,
            }
        );
        // The bytes are a PNG whatever the label says.
        assert_eq!(parts[0].media_type(), Some("image/png"));
        assert_eq!(parts[1].media_type(), None);
    }

    /// A result with more uris than the session holds replaces the session's set with them
    /// each time it is read: a pass over it that learns a url runs again only when the url's
    /// parts added a secret the next pass searches for (decision 0159). One such result of
    /// embedded texts with credential-shaped urls ran nine passes over its blocks.
    #[test]
    fn a_pass_over_more_uris_than_the_session_holds_runs_again_only_for_new_secrets() {
        let mut parts = TestParts::new();
        let mut projector = parts.projector(RouteId::Anthropic);
        let capacity = mcpl_redact::HIDDEN_SET_CAPACITY;
        let links: Vec<Value> = (0..=capacity)
            .map(|i| json!({"type": "resource_link", "uri": format!("demo://r/{i}")}))
            .collect();
        let content = Value::Array(links);
        let crowded = HiddenUris::in_session(
            &[&content],
            UriPolicy::Hidden,
            projector.registry.hidden_mut(),
            true,
        );
        assert!(!crowded.learns_for_another_pass());
        // Its part is too short to be a secret: another pass would read as this one.
        let short = ["https://a.example/x?token=t1".to_owned()];
        assert!(!projector.remember_found(&crowded, short));
        // Its part is a secret now searched for.
        let secret = ["https://a.example/x?token=a8f3k2j9x7q1zw".to_owned()];
        assert!(projector.remember_found(&crowded, secret));
        // A result the session holds whole searches for what its pass learned.
        let few = HiddenUris::in_session(
            &[&json!([{"type": "resource_link", "uri": "demo://r/1"}])],
            UriPolicy::Hidden,
            projector.registry.hidden_mut(),
            true,
        );
        assert!(few.learns_for_another_pass());
        let again = ["https://b.example/x?token=t2".to_owned()];
        assert!(projector.remember_found(&few, again));
    }

    /// A pass that teaches the session more urls than it holds is not run again: the next
    /// would teach again the first it evicted, and so on (a result of thousands of
    /// credential-shaped urls ran four times over). One that teaches fewer runs again until
    /// it teaches none.
    #[test]
    fn a_pass_that_teaches_more_urls_than_the_session_holds_is_not_run_again() {
        let mut parts = TestParts::new();
        let mut projector = parts.projector(RouteId::Anthropic);
        let capacity = mcpl_redact::HIDDEN_SET_CAPACITY;
        let searched_none = HiddenUris::of(&[], UriPolicy::Hidden);
        for (count, passes) in [(10, 2), (capacity, 2), (capacity + 1, 1), (3 * capacity, 1)] {
            let keys: Vec<String> = (0..count)
                .map(|i| format!("https://a.example/{count}/x?token=t{i}"))
                .collect();
            let mut ran = 0;
            projector.settled(|projector| {
                ran += 1;
                (
                    (),
                    projector.remember_found(&searched_none, keys.iter().cloned()),
                )
            });
            assert_eq!(ran, passes, "{count} urls");
        }
    }

    /// What a test's projector borrows: a seeded registry and ledger, and a server.
    struct TestParts {
        registry: Registry,
        ledger: ImageLedger,
        server: ServerName,
    }

    impl TestParts {
        fn new() -> TestParts {
            TestParts {
                registry: Registry::with_seed(1),
                ledger: ImageLedger::with_seed(2),
                server: ServerName::new("s"),
            }
        }

        /// A projector on `route` that hides every uri a block carries.
        fn projector(&mut self, route: RouteId) -> Projector<'_> {
            Projector::new(
                &mut self.registry,
                &mut self.ledger,
                route.route(),
                &self.server,
                UriPolicy::Hidden,
            )
        }
    }

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Both copies of `result` on `route`.
    fn copies_on<'a>(route: RouteId, read: &'a ResultView<'a>) -> (String, LiveCopy<'a>) {
        let mut parts = TestParts::new();
        let mut projector = parts.projector(route);
        let parsed = ToolResult::from_view(read);
        let copies = projector.tool_result(&parsed);
        (copies.stored.into_owned(), copies.live)
    }

    #[test]
    fn a_url_begun_in_a_text_redaction_would_leave_alone_is_still_found_across_the_run() {
        // "see https" holds nothing a url is made of, so it goes into the stored copy at once;
        // the next text's ":" takes it back out, to be redacted with its run.
        let result = json!({"content": [
            {"type": "text", "text": "plain"},
            {"type": "image", "mimeType": "image/png", "data": ""},
            {"type": "text", "text": "one"},
            {"type": "text", "text": "see https"},
            {"type": "text", "text": "://api.example.com/v1?access_token=ya29SECRET"},
            {"type": "text", "text": " two"},
        ]});
        let bytes = result.to_string();
        let view = mcpl_classify::ResultView::parse(bytes.as_bytes()).unwrap();
        let read = crate::ResultView::of_value(&result);
        for parsed in [ToolResult::from_view(&read), ToolResult::from_view(&view)] {
            let mut parts = TestParts::new();
            let mut projector = parts.projector(RouteId::Anthropic);
            let copies = projector.tool_result(&parsed);
            let parts: Vec<&str> = copies.stored_parts().collect();
            assert_eq!(parts.len(), 6, "{parts:?}");
            assert_eq!([parts[0], parts[2], parts[5]], ["plain", "one", " two"]);
            assert_eq!(parts[3], format!("see {WITHHELD_LINK}"));
            assert_eq!(parts[4], "");
            assert_eq!(parts.join("\n"), copies.stored);
        }
    }

    /// A result of more links than the session holds, read from bytes, borrows its uris from
    /// them (decision 0164) and withholds each one quoted in a text, in any case, as the same
    /// result read from a `Value` does.
    #[test]
    fn a_result_borrowing_its_uris_withholds_them_as_one_that_copies_them() {
        let count = mcpl_redact::HIDDEN_SET_CAPACITY + 100;
        let mut content: Vec<Value> = (0..count)
            .map(|i| {
                json!({
                    "type": "resource_link",
                    "uri": format!("https://B.example/Docs/{i}?X-Amz-Signature=ab{i:08}"),
                    "name": format!("f{i}"),
                })
            })
            .collect();
        content.push(json!({"type": "text", "text": concat!(
            "see HTTPS://b.EXAMPLE/docs/17?x-amz-signature=AB00000017 and then ",
            "https://b.example/Docs/4150?X-Amz-Signature=ab00004150 too, ",
            "and the signature ab00000042 alone",
        )}));
        let result = json!({ "content": content });
        let bytes = result.to_string();
        let view = mcpl_classify::ResultView::parse(bytes.as_bytes()).unwrap();
        let read = crate::ResultView::of_value(&result);
        let (from_bytes, _) = copies_on(RouteId::Anthropic, &view);
        let (from_value, _) = copies_on(RouteId::Anthropic, &read);
        assert_eq!(from_bytes, from_value);
        let last = from_bytes.lines().last().unwrap_or_default();
        assert_eq!(
            last,
            format!(
                "see {WITHHELD_LINK} and then {WITHHELD_LINK} too, and the signature {WITHHELD_LINK} alone"
            )
        );
        assert!(!from_bytes.to_ascii_lowercase().contains("b.example"));
    }

    #[test]
    fn copies_name_the_blocks_from_the_first_to_the_last_payload() {
        let png = b64(&mcpl_testkit::fixture("image.png"));
        let image = json!({"type": "image", "mimeType": "image/png", "data": png});
        let empty = json!({"type": "image", "mimeType": "image/png", "data": ""});
        let text = json!({"type": "text", "text": "t"});
        let link = json!({"type": "resource_link", "uri": "file:///a", "name": "a"});
        for (content, blocks) in [
            (vec![text.clone(), link.clone(), text.clone()], 0..0),
            (vec![empty.clone(), text.clone()], 0..0),
            (vec![text.clone(), image.clone(), text.clone()], 1..2),
            (
                vec![text.clone(), image.clone(), link, empty, image, text],
                1..5,
            ),
        ] {
            let result = json!({ "content": content });
            let read = crate::ResultView::of_value(&result);
            let parsed = ToolResult::from_view(&read);
            let mut parts = TestParts::new();
            let copies = parts.projector(RouteId::Anthropic).tool_result(&parsed);
            assert_eq!(copies.payload_blocks, blocks, "{result}");
            // A spill of the copies reads those blocks alone, and finds each payload in them.
            let mut found = 0;
            assert!(copies.each_payload(&parsed, &mut |_, _| found += 1));
            let payloads = parsed
                .blocks()
                .filter(|block| block.media().is_some_and(|media| !media.is_empty()))
                .count();
            assert_eq!(found, payloads, "{result}");
        }
    }

    #[test]
    fn the_stored_parts_are_ranges_of_the_stored_copy_one_per_shown_thing() {
        let png =
            base64::engine::general_purpose::STANDARD.encode(mcpl_testkit::fixture("image.png"));
        let result = json!({"content": [
            {"type": "text", "text": "first"},
            {"type": "text", "text": "sec\nond"},
            {"type": "image", "mimeType": "image/png", "data": png},
            {"type": "text", "text": ""},
        ]});
        let mut parts = TestParts::new();
        let mut projector = parts.projector(RouteId::Anthropic);
        let read = crate::ResultView::of_value(&result);
        let parsed = ToolResult::from_view(&read);
        let copies = projector.tool_result(&parsed);
        let parts: Vec<&str> = copies.stored_parts().collect();
        assert_eq!(parts.len(), 4, "{parts:?}");
        assert_eq!(&parts[..2], ["first", "sec\nond"]);
        assert!(parts[2].starts_with("[image: image/png, "), "{}", parts[2]);
        assert_eq!(parts[3], "");
        assert_eq!(parts.join("\n"), copies.stored);
        // The live copy's parts stand in the same order: a text part is its stored part.
        let LiveCopy::Native(live) = &copies.live else {
            panic!("the image goes native on anthropic")
        };
        assert_eq!(live.len(), 4);
        assert_eq!(live[1], Part::Text("sec\nond".to_owned()));
        assert!(matches!(live[2], Part::Image { .. }));
        // The spill pass keeps only the text.
        let spill = projector.tool_result_spill(&parsed, &mut |_, shown| shown.to_owned());
        assert_eq!(spill, copies.stored);
        assert_eq!(
            ToolResultCopies::join_parts(["a", "", "bc"]),
            ("a\n\nbc".to_owned(), PartEnds::from(vec![1, 2, 5]))
        );
        let (stored, part_ends) = ToolResultCopies::join_parts(["", "a", "\n", ""]);
        let copies = ToolResultCopies {
            stored: stored.into(),
            part_ends,
            live: LiveCopy::Stored,
            is_error: false,
            spills_as_stored: false,
            payload_blocks: 0..0,
        };
        assert_eq!(
            copies.part_spans().collect::<Vec<_>>(),
            [0..0, 1..2, 3..4, 5..5]
        );
        assert_eq!(
            copies.stored_parts().collect::<Vec<_>>(),
            ["", "a", "\n", ""]
        );
    }

    #[test]
    fn tool_result_audio_is_native_where_the_route_takes_it_there() {
        let wav = b64(&mcpl_testkit::fixture("tone.wav"));
        let result = json!({"content": [{"type": "audio", "data": wav, "mimeType": "audio/wav"}]});
        for route in RouteId::ALL {
            let read = ResultView::of_value(&result);
            let (stored, live) = copies_on(route, &read);
            assert_eq!(stored, "[audio: audio/wav, ~4KB]", "{route}");
            let native = matches!(&live, LiveCopy::Native(parts)
                if matches!(parts[0], Part::Audio { sniffed: Sniffed::Wav, .. }));
            assert_eq!(
                native,
                matches!(route, RouteId::OpenAiChat | RouteId::Gemini),
                "{route}"
            );
        }
        // Audio whose header says no duration keeps its line.
        let cut = b64(&mcpl_testkit::fixture("tone.wav")[..20]);
        let result = json!({"content": [{"type": "audio", "data": cut, "mimeType": "audio/wav"}]});
        let read = ResultView::of_value(&result);
        assert_eq!(copies_on(RouteId::Gemini, &read).1, LiveCopy::Stored);
    }

    #[test]
    fn a_pdf_goes_natively_within_the_route_limits_and_keeps_its_marker_otherwise() {
        let pdf = b64(&mcpl_testkit::fixture("three-pages.pdf"));
        let blob = |data: &str| {
            json!({"content": [{"type": "resource", "resource": {
                "uri": "file:///r.pdf", "mimeType": "application/octet-stream", "blob": data}}]})
        };
        let result = blob(&pdf);
        let read = ResultView::of_value(&result);
        let (stored, live) = copies_on(RouteId::Gemini, &read);
        assert!(
            stored.starts_with("[document: application/pdf, ~4KB, ref doc_"),
            "{stored}"
        );
        assert_eq!(
            live,
            LiveCopy::Native(vec![Part::Document {
                pages: 3,
                data: &pdf
            }])
        );
        let marker = "[Resource not shown: this host can't display its data (application/octet-stream, ~4KB).]";
        assert_eq!(
            copies_on(RouteId::TextOnly, &read),
            (marker.to_owned(), LiveCopy::Stored)
        );
        // Base64 that is not sound keeps the marker.
        let broken = blob(&format!("{}!", &pdf[..pdf.len() - 4]));
        let read = ResultView::of_value(&broken);
        let (stored, live) = copies_on(RouteId::Anthropic, &read);
        assert!(stored.starts_with("[Resource not shown"), "{stored}");
        assert_eq!(live, LiveCopy::Stored);
    }
}
