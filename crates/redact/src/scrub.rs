//! The second pass every server string takes: what the host knows is secret, credential
//! parameters and known token formats, withheld in any spelling.
//!
//! The uri pass ([`crate::HiddenUris`]) finds hidden and credential-shaped urls by their shape.
//! This pass finds secrets by their content, so it needs no url around them: a token a server
//! echoes, a hidden uri's path segment quoted alone, a key in a log line, a JWT in prose. It
//! runs on what the uri pass left, and replaces each finding with [`WITHHELD_SECRET`].

use std::borrow::Cow;
use std::sync::{Arc, PoisonError, RwLock};

use crate::beside::{TWO_THREADS_FROM, both};
use crate::decoded;
use crate::formats;
use crate::hidden::REDACT_WINDOW;
use crate::params;
use crate::secrets::{self, Admitted};

/// What a secret becomes wherever it appears.
pub const WITHHELD_SECRET: &str = "[withheld secret]";

/// The secrets a host holds, shared: the session's [`crate::HiddenSet`] and the host's log
/// writer hold the same set, so a secret registered once is withheld in both. Cloning shares.
#[derive(Clone, Default)]
pub struct Secrets {
    inner: Arc<RwLock<secrets::Secrets>>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl Secrets {
    /// An empty set.
    pub fn new() -> Secrets {
        Secrets::default()
    }

    /// Registers a secret the host holds (a token it sends, a key it reads), and says whether
    /// it is searched for (see [`Admitted`]).
    pub fn insert(&self, secret: &str) -> Admitted {
        self.inner
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(secret)
    }

    /// How many secrets are searched for.
    pub fn len(&self) -> usize {
        self.inner
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether no secret is searched for.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A text with every registered secret, credential parameter and known token format in it
    /// replaced by [`WITHHELD_SECRET`]: what a log line passes through.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        Scrubber {
            secrets: self.clone(),
            scan: true,
        }
        .apply(Cow::Borrowed(text))
    }

    /// Adds every secret of this set to `other`.
    pub(crate) fn move_into(&self, other: &Secrets) {
        if Arc::ptr_eq(&self.inner, &other.inner) {
            return;
        }
        let mine = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        other
            .inner
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .absorb(&mine);
    }

    fn hits(&self, text: &str) -> Vec<(usize, usize)> {
        self.inner
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .hits(text)
    }
}

/// The second pass for one server: the session's secrets always, credential parameters and
/// token formats unless the server turned credential scanning off.
#[derive(Debug, Clone)]
pub(crate) struct Scrubber {
    pub(crate) secrets: Secrets,
    pub(crate) scan: bool,
}

impl Scrubber {
    /// The byte ranges of `text` to withhold, sorted and merged.
    pub(crate) fn spans(&self, text: &str) -> Vec<(usize, usize)> {
        self.spans_of_run([text], text)
    }

    /// The byte ranges of `joined`, the pieces side by side, to withhold. A registered secret
    /// is searched in the whole run, so one split across pieces is found; parameters and token
    /// formats in each piece alone, so a token at a piece's end never runs on into the next.
    pub(crate) fn spans_of_run<'t>(
        &self,
        pieces: impl IntoIterator<Item = &'t str>,
        joined: &str,
    ) -> Vec<(usize, usize)> {
        self.spans_of_pieces(pieces, self.hits(joined), &[])
    }

    /// The registered secrets' hits in `joined`, sorted and merged.
    pub(crate) fn hits(&self, joined: &str) -> Vec<(usize, usize)> {
        self.secrets.hits(joined)
    }

    /// [`Scrubber::spans_of_run`], given the registered secrets' hits in the joined text
    /// ([`Scrubber::hits`]) and ranges of it the caller withholds anyway (`withheld`, sorted
    /// and apart): a piece that lies whole in one is not read, as whatever it holds is
    /// withheld with it. A run of a million texts each in one withheld url costs no range a
    /// text.
    pub(crate) fn spans_of_pieces<'t>(
        &self,
        pieces: impl IntoIterator<Item = &'t str>,
        hits: Vec<(usize, usize)>,
        withheld: &[(usize, usize)],
    ) -> Vec<(usize, usize)> {
        spans_of_pieces(self.scan, pieces, hits, withheld)
    }

    /// Whether a scanning pass leaves `piece` as it is when no registered secret is hit in
    /// it: what the piece alone decides of [`Scrubber::passes`] (decision 0172).
    pub(crate) fn formats_pass(piece: &str) -> bool {
        spans_of_pieces(true, [piece], Vec::new(), &[]).is_empty()
    }

    /// Whether the pass leaves `text` as it is.
    pub(crate) fn passes(&self, text: &str) -> bool {
        self.spans(text).is_empty()
    }

    /// [`Scrubber::passes`], given [`Scrubber::formats_pass`] of the same piece: without a
    /// registered secret's hit the pass reads the piece as the piece alone did; with one, the
    /// whole pass is made with it (decision 0172).
    pub(crate) fn passes_given(&self, piece: &str, formats_pass: bool) -> bool {
        let hits = self.hits(piece);
        match hits.is_empty() {
            true => !self.scan || formats_pass,
            false => self.spans_of_pieces([piece], hits, &[]).is_empty(),
        }
    }

    /// `text` with every finding replaced by [`WITHHELD_SECRET`].
    pub(crate) fn apply<'t>(&self, text: Cow<'t, str>) -> Cow<'t, str> {
        let spans = self.spans(&text);
        if spans.is_empty() {
            return text;
        }
        Cow::Owned(replaced(&text, &spans, WITHHELD_SECRET))
    }
}

/// [`Scrubber::spans_of_pieces`], for a pass that scans parameters and token formats or not.
fn spans_of_pieces<'t>(
    scan: bool,
    pieces: impl IntoIterator<Item = &'t str>,
    hits: Vec<(usize, usize)>,
    withheld: &[(usize, usize)],
) -> Vec<(usize, usize)> {
    spans_of_pieces_from(scan, pieces, hits, withheld, TWO_THREADS_FROM)
}

/// [`spans_of_pieces`], a piece of `split_from` bytes or more read on two threads.
fn spans_of_pieces_from<'t>(
    scan: bool,
    pieces: impl IntoIterator<Item = &'t str>,
    hits: Vec<(usize, usize)>,
    withheld: &[(usize, usize)],
    split_from: usize,
) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    if scan {
        // The registered secrets' hits, read beside each piece in turn: a run of many pieces
        // and many hits costs their sum, not their product.
        let mut hits = Sweep::new(&hits);
        let mut offset = 0;
        let mut cover = 0;
        for piece in pieces {
            let piece_end = offset + piece.len();
            while withheld.get(cover).is_some_and(|range| range.1 < piece_end) {
                cover += 1;
            }
            if withheld
                .get(cover)
                .is_some_and(|range| range.0 <= offset && piece_end <= range.1)
            {
                offset = piece_end;
                continue;
            }
            let shift = |(start, end): (usize, usize)| (offset + start, offset + end);
            // A long piece's decoded layers are read on a second thread meanwhile (decision
            // 0174): they read the piece alone.
            let (credentials, decoded) = both(
                split_from <= piece.len(),
                || credentials_of(piece),
                || decoded_spans(piece),
            );
            spans.extend(credentials.iter().copied().map(shift));
            // A parameter's name never reaches into what the other rules withhold (nor,
            // `values_in` sees to it, into a marker).
            let mut within = hits.within(offset, offset + piece.len());
            within.extend(
                credentials
                    .iter()
                    .copied()
                    .filter(|&(start, end)| start < piece.len() && 0 < end),
            );
            spans.extend(params::values_in(piece, &within).into_iter().map(shift));
            spans.extend(decoded.into_iter().map(shift));
            offset += piece.len();
        }
    }
    spans.extend(hits);
    merge(spans)
}

/// The token formats' findings in `text`, as ranges.
fn credentials_of(text: &str) -> Vec<(usize, usize)> {
    formats::credentials_in(text)
        .iter()
        .map(|f| (f.start, f.end))
        .collect()
}

/// What `piece` decodes to beyond the view: a parameter or a token in quoted-printable,
/// octal, base64 or base32, as ranges of the piece.
fn decoded_spans(piece: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    for window in decoded::windows(piece, REDACT_WINDOW) {
        decoded::for_each(window.text, window.edge, |d| {
            // A name never reaches into what a rule withholds, in a decoded text as in the
            // piece.
            let credentials = credentials_of(&d.text);
            let found = credentials
                .iter()
                .copied()
                .chain(params::values_in(&d.text, &credentials))
                .map(|(start, end)| d.origin(start, end))
                .map(|(start, end)| window.whole_span(start, end));
            spans.extend(found);
        });
    }
    spans
}

/// `text` with each of `spans` (sorted, apart) replaced by `marker`.
pub(crate) fn replaced(text: &str, spans: &[(usize, usize)], marker: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for &(start, end) in spans {
        out.push_str(&text[at..start]);
        out.push_str(marker);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// Where the markers redaction writes are in a text: `[withheld secret]`, `[withheld link]`
/// and `[withheld link N]`.
pub(crate) fn markers_in(text: &str) -> Vec<(usize, usize)> {
    // One searcher for every text: a short text's search does not build its own.
    static OPENING: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"[withheld "));
    OPENING
        .find_iter(text.as_bytes())
        .filter_map(|start| {
            let rest = &text[start + "[withheld ".len()..];
            let close = rest.find(']')?;
            let inner = &rest[..close];
            let numbered = inner
                .strip_prefix("link ")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            (inner == "secret" || inner == "link" || numbered)
                .then_some((start, start + "[withheld ".len() + close + 1))
        })
        .collect()
}

/// Ranges sorted by their start, read against windows that move forward: each window's share
/// of them costs what it finds, so reading many windows against many ranges stays linear.
pub(crate) struct Sweep<'s> {
    ranges: &'s [(usize, usize)],
    next: usize,
    open: Vec<(usize, usize)>,
}

impl<'s> Sweep<'s> {
    /// `ranges` must be sorted by their start.
    pub(crate) fn new(ranges: &'s [(usize, usize)]) -> Self {
        Sweep {
            ranges,
            next: 0,
            open: Vec::new(),
        }
    }

    /// The ranges that overlap `start..end`, clipped to it, in its own bytes. Each call's
    /// `start` is at or after the last call's.
    pub(crate) fn within(&mut self, start: usize, end: usize) -> Vec<(usize, usize)> {
        while let Some(&range) = self.ranges.get(self.next).filter(|range| range.0 < end) {
            self.open.push(range);
            self.next += 1;
        }
        self.open.retain(|&(_, stop)| start < stop);
        self.open
            .iter()
            .filter(|&&(begin, stop)| begin < end && start < stop)
            .map(|&(begin, stop)| (begin.saturating_sub(start), stop.min(end) - start))
            .collect()
    }
}

/// Sorted ranges with overlapping and touching ones joined, in place: a run of a million
/// texts may give a million ranges.
pub(crate) fn merge(mut spans: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    spans.retain(|&(start, end)| start < end);
    spans.sort_unstable();
    let mut kept: usize = 0;
    for at in 0..spans.len() {
        let (start, end) = spans[at];
        match kept.checked_sub(1).map(|last| &mut spans[last]) {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => {
                spans[kept] = (start, end);
                kept += 1;
            }
        }
    }
    spans.truncate(kept);
    spans.shrink_to_fit();
    spans
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::Sweep;

    /// Ranges in a text of 200 bytes, some empty, some long, some overlapping.
    fn ranges() -> impl Strategy<Value = Vec<(usize, usize)>> {
        proptest::collection::vec((0usize..200, 0usize..80), 0..40).prop_map(|drawn| {
            let mut ranges: Vec<(usize, usize)> = drawn
                .into_iter()
                .map(|(start, length)| (start, start + length))
                .collect();
            ranges.sort_unstable();
            ranges
        })
    }

    /// Windows whose starts only move on; they may overlap, touch or leave gaps.
    fn windows() -> impl Strategy<Value = Vec<(usize, usize)>> {
        proptest::collection::vec((0usize..30, 0usize..60), 0..20).prop_map(|steps| {
            let mut start = 0;
            steps
                .into_iter()
                .map(|(step, length)| {
                    start += step;
                    (start, start + length)
                })
                .collect()
        })
    }

    /// Pieces of text the second pass finds things in, spelled plainly and encoded, and
    /// pieces it finds nothing in.
    const SCRUB_FRAGMENTS: &[&str] = &[
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",
        "password=hunter2secret",
        "Authorization: Bearer d3b07384d113edec49eaa6238ad5ff00",
        // `password=hunter2secret` in base64 and in quoted-printable.
        "cGFzc3dvcmQ9aHVudGVyMnNlY3JldA==",
        "password=3Dhunter2secret",
        "api_key",
        "token: ",
        "the quick brown fox ",
        "\\n",
        "\\u0041",
        " ",
    ];

    proptest! {
        /// A piece whose decoded layers are read on a second thread gives the spans the
        /// same piece gives read on one (decision 0174), in a run of pieces or alone.
        #[test]
        fn a_piece_read_on_two_threads_gives_what_one_thread_finds(
            pieces in proptest::collection::vec(
                proptest::collection::vec((0..SCRUB_FRAGMENTS.len(), "\\PC{0,4}"), 0..10),
                1..4,
            ),
            split_from in 0usize..128,
        ) {
            let pieces: Vec<String> = pieces
                .iter()
                .map(|picks| {
                    picks
                        .iter()
                        .map(|(i, extra)| format!("{}{extra}", SCRUB_FRAGMENTS[*i]))
                        .collect()
                })
                .collect();
            let read = |split_from| {
                super::spans_of_pieces_from(
                    true,
                    pieces.iter().map(String::as_str),
                    Vec::new(),
                    &[],
                    split_from,
                )
            };
            prop_assert_eq!(read(split_from), read(usize::MAX));
        }
    }

    proptest! {
        /// The sweep gives each window exactly what filtering every range against it gives.
        #[test]
        fn a_sweep_finds_what_a_filter_of_every_range_finds(
            ranges in ranges(),
            windows in windows(),
        ) {
            let mut sweep = Sweep::new(&ranges);
            for (start, end) in windows {
                let mut expected: Vec<(usize, usize)> = ranges
                    .iter()
                    .filter(|&&(begin, stop)| begin < end && start < stop)
                    .map(|&(begin, stop)| (begin.saturating_sub(start), stop.min(end) - start))
                    .collect();
                let mut found = sweep.within(start, end);
                expected.sort_unstable();
                found.sort_unstable();
                prop_assert_eq!(found, expected);
            }
        }
    }
}
