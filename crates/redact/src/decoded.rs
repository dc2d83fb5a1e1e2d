//! The texts a string spells that the uri view does not read: what quoted-printable and octal
//! escapes decode to, and what base64 and base32 runs decode to, at any depth.
//!
//! The uri view ([`crate::view::View`]) decodes percent, JSON and HTML escapes in place, since
//! a uri is full of `%`, `\` and `&`. Quoted-printable cannot join it: in `?id=41` the `=41`
//! is the context's `=` before `41` as often as it is an `A`. So the other decodings are read
//! as texts of their own, beside the view: the layers the secrets matcher reads
//! ([`crate::secrets::view::decode_layer`], every escape at once, up to four layers) and the
//! base64 and base32 runs of each. The uri rules, the credential parameters and the token
//! formats search each such text too, and a finding there withholds the original bytes that
//! spelled it (a whole run, for a text decoded from one). Every check so reads one canonical
//! view: the text as it came, and every text it decodes to.

use crate::secrets::encoded::{self, Hidden};
use crate::secrets::view::{self, MAX_LAYERS, Unit, View};

/// A text decoded from a string, with the way back to the string's bytes.
pub(crate) struct Decoded {
    pub(crate) text: String,
    /// Where each unit's character starts in `text`.
    offsets: Vec<u32>,
    units: Vec<Unit>,
}

impl Decoded {
    fn of(units: Vec<Unit>) -> Decoded {
        let mut text = String::with_capacity(units.len());
        let mut offsets = Vec::with_capacity(units.len());
        for u in &units {
            offsets.push(text.len() as u32);
            text.push(u.ch);
        }
        Decoded {
            text,
            offsets,
            units,
        }
    }

    /// The original byte range a byte range of `text` came from.
    pub(crate) fn origin(&self, start: usize, end: usize) -> (usize, usize) {
        let unit = |at: usize| {
            self.offsets
                .partition_point(|&o| o as usize <= at)
                .saturating_sub(1)
        };
        let first = &self.units[unit(start)];
        let last = &self.units[unit(end.saturating_sub(1).max(start))];
        let (from, to) = (first.start.min(last.start), first.end.max(last.end));
        (from as usize, to as usize)
    }
}

/// Where the word of `text` that holds byte `end - 1` ends: at white space (but not a line
/// break just after an `=`, a quoted-printable soft line break), a quote, `<`, `>` or a
/// backtick. A finding in a decoded text withholds up to there: a layer that decodes one more
/// escape may cut a url or a value (`=5E` is `^`, which ends a url) where a layer that decodes
/// one fewer still holds a line break of a soft line break spelled twice, so no one layer need
/// hold all of it.
pub(crate) fn word_end(text: &str, end: usize) -> usize {
    let b = text.as_bytes();
    let mut at = end;
    while at < b.len() {
        let c = b[at];
        let soft_break = matches!(c, b'\r' | b'\n')
            && at > 0
            && (b[at - 1] == b'=' || (b[at - 1] == b'\r' && at > 1 && b[at - 2] == b'='));
        if (c.is_ascii_whitespace() && !soft_break)
            || matches!(c, b'"' | b'\'' | b'<' | b'>' | b'`')
        {
            break;
        }
        at += 1;
    }
    at
}

/// Whether `text` may decode to anything: like the secrets matcher, a text of ASCII without
/// `%`, `\`, `&` or `=` and without a run long enough to be base64 spells only itself.
pub(crate) fn may_decode(text: &str) -> bool {
    let b = text.as_bytes();
    !text.is_ascii()
        || memchr::memchr3(b'%', b'\\', b'&', b).is_some()
        || memchr::memchr(b'=', b).is_some()
        || encoded::has_base64_run(b)
}

/// Whether a piece of text may spell something that only its decoded texts show: a
/// quoted-printable escape or soft line break, an octal escape, or a run long enough to be
/// base64. The fast paths that skip a piece without a url ask this too.
pub(crate) fn may_spell_more(piece: &str) -> bool {
    let b = piece.as_bytes();
    let hex = |at: usize| b.get(at).is_some_and(u8::is_ascii_hexdigit);
    let escape = |at: usize| match b[at] {
        b'=' => (hex(at + 1) && hex(at + 2)) || matches!(b.get(at + 1), Some(b'\r' | b'\n')),
        _ => b.get(at + 1).is_some_and(|d| (b'0'..=b'7').contains(d)),
    };
    memchr::memchr2_iter(b'=', b'\\', b).any(escape) || encoded::has_base64_run(b)
}

/// A window of a long text: where it begins, its text, and whether it begins inside a stretch
/// that had no place to cut (`edge`), reaching back over the window before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window<'t> {
    pub(crate) at: usize,
    pub(crate) text: &'t str,
    pub(crate) edge: bool,
    /// Where the word that holds the window's last byte ends in the whole text ([`word_end`]).
    reach: usize,
    /// At an edge, where the base64 run the window begins inside begins in the whole text.
    run_from: usize,
}

/// `text` in windows of about a quarter of `size` bytes: the whole text when it is at most half
/// `size`, else cut after white space that ends no soft line break (`=` then a line break), or
/// between two characters outside ASCII (a line of CJK text has no space): no escape or encoded
/// run reaches across either, as each is spelled in ASCII. Where the first such place is
/// further on, the window runs to it; a text of at most twice `size` with no such place is one
/// window.
///
/// A stretch with no such place for twice `size` (one line of base64, of minified JSON) is cut
/// anyway, every quarter of `size`, and each window after such a cut begins a sixteenth of
/// `size` before it, at its `edge` (decisions 0143, 0157): an escape cut there is whole in the
/// next window, as is a finding no longer than that, and a run the cut falls in is read from the
/// edge at every alignment. Its views, several bytes for each of its bytes, are never made
/// whole, and a text with places to cut makes views of a quarter of `size` at a time.
pub(crate) fn windows(text: &str, size: usize) -> impl Iterator<Item = Window<'_>> {
    let size = size.max(1);
    let forced = (size / 4).max(2);
    windows_cut_at(
        text,
        (size / 4).max(1),
        size,
        forced,
        (size / 16).clamp(1, forced / 2),
    )
}

/// [`windows`], a stretch with no place to cut cut every `forced` bytes, each window after such
/// a cut reaching `overlap` bytes back over the one before it, and a window with a place to cut
/// cut at the first one `size` bytes on.
#[cfg(test)]
pub(crate) fn windows_forced(
    text: &str,
    size: usize,
    forced: usize,
    overlap: usize,
) -> impl Iterator<Item = Window<'_>> {
    windows_cut_at(text, size, size, forced, overlap)
}

/// The windows of [`windows`]: a window with a place to cut ends at the first one `first_cut`
/// bytes on (at most `size`), and one with none for twice `size` is cut anyway, every `forced`
/// bytes, the next window reaching `overlap` bytes back.
fn windows_cut_at(
    text: &str,
    first_cut: usize,
    size: usize,
    forced: usize,
    overlap: usize,
) -> impl Iterator<Item = Window<'_>> {
    let first_cut = first_cut.clamp(1, size.max(1));
    let (mut at, mut edge) = (0, false);
    // The end of the last word [`word_end`] read to: a word that runs on past several windows
    // is read once, not once a window.
    let mut known = 0;
    let mut runs = Runs::default();
    std::iter::from_fn(move || {
        if at >= text.len() {
            return None;
        }
        let (start, starts_at_edge) = (at, edge);
        let rest = text.len() - start;
        // The rest of a stretch already cut anyway is cut on as it was, not read in one window
        // of up to twice `size`.
        let end = if rest <= 2 * first_cut && (!starts_at_edge || rest <= forced) {
            text.len()
        } else {
            let last = (start + 2 * size).min(text.len());
            match (start + first_cut..=last).find(|&cut| cuts_at(text, cut)) {
                Some(cut) => cut,
                // No place to cut in a text of at most twice `size`: one window, as it was.
                None if rest <= 2 * size && !starts_at_edge => text.len(),
                None => forced_end(text, start, forced),
            }
        };
        edge = false;
        at = end;
        if end < text.len() && !cuts_at(text, end) {
            // A forced cut: the next window reaches back over this one's end.
            let back = floor_char_boundary(text, end - overlap);
            if back > start {
                (at, edge) = (back, true);
            }
        }
        if known < end {
            known = word_end(text, end);
        }
        Some(Window {
            at: start,
            text: &text[start..end],
            edge: starts_at_edge,
            reach: known,
            run_from: match starts_at_edge {
                true => runs.start_at(text, start),
                false => start,
            },
        })
    })
}

impl Window<'_> {
    /// A finding's bytes `start..end` of the window, as the bytes of `whole`, the text it is a
    /// window of, that it withholds: up to the end of its word ([`word_end`], which may lie past
    /// the window), and, where it reads the run a window at an edge begins inside, from where
    /// that run begins ([`Runs::start_at`]).
    pub(crate) fn whole_span(&self, start: usize, end: usize) -> (usize, usize) {
        let end = match word_end(self.text, end) {
            end if end == self.text.len() => self.reach.max(self.at + end),
            end => self.at + end,
        };
        match self.edge && reads_the_first_run(self.text, start) {
            true => (self.run_from, end),
            false => (self.at + start, end),
        }
    }
}

/// Whether a finding that begins at `start` of a text is the run the text begins with, read
/// from one of its first eight bytes (base32's alignments): every byte before it is base64.
pub(crate) fn reads_the_first_run(text: &str, start: usize) -> bool {
    start < 8
        && text
            .as_bytes()
            .get(..start)
            .is_some_and(|b| b.iter().copied().all(in_run))
}

/// Whether a byte may be part of a base64 run.
pub(crate) fn in_run(b: u8) -> bool {
    encoded::is_base64(char::from(b))
}

/// Where the base64 runs around the cuts of a text begin and end, asked at places that only
/// move forward: each byte is read a bounded number of times, however many windows ask.
#[derive(Debug, Default)]
pub(crate) struct Runs {
    /// The last place asked by [`Runs::start_at`], and where the run before it began.
    begins: (usize, usize),
    /// The last place asked by [`Runs::end_at`], and where the run after it ended.
    ends: (usize, usize),
}

impl Runs {
    /// Where the run of base64 bytes that ends at `at` begins in `text` (`at` itself when the
    /// byte before it is none). `at` is never less than the last one asked.
    pub(crate) fn start_at(&mut self, text: &str, at: usize) -> usize {
        let b = text.as_bytes();
        let (last, last_start) = self.begins;
        if at == last {
            return last_start;
        }
        let mut from = at;
        while from > last && from > 0 && in_run(b[from - 1]) {
            from -= 1;
        }
        let start = match from == last {
            true => last_start,
            false => from,
        };
        self.begins = (at, start);
        start
    }

    /// Where the run of base64 bytes that begins at `at` ends in `text` (`at` itself when the
    /// byte there is none). `at` is never less than the last one asked.
    pub(crate) fn end_at(&mut self, text: &str, at: usize) -> usize {
        let b = text.as_bytes();
        let (last, last_end) = self.ends;
        let end = match last <= at && at <= last_end && last < last_end {
            true => last_end,
            false => (at..b.len()).find(|&i| !in_run(b[i])).unwrap_or(b.len()),
        };
        self.ends = (at, end);
        end
    }
}

/// Where a window that begins at `start` in a stretch with no place to cut is cut: `forced`
/// bytes on, at a character's start, and at least one character on.
pub(crate) fn forced_end(text: &str, start: usize, forced: usize) -> usize {
    (start + forced.max(1)..=text.len())
        .find(|&at| text.is_char_boundary(at))
        .unwrap_or(text.len())
}

/// The last character boundary of `text` at or before `at`.
pub(crate) fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The first place at or after `from` that [`windows`] may cut `text` at.
pub(crate) fn next_cut(text: &str, from: usize) -> Option<usize> {
    (from.max(1)..=text.len()).find(|&at| cuts_at(text, at))
}

/// Whether [`windows`] may cut `text` just before `at`: after white space that ends no soft
/// line break, or between two characters outside ASCII.
pub(crate) fn cuts_at(text: &str, at: usize) -> bool {
    let b = text.as_bytes();
    if at == 0 || at >= b.len() {
        return false;
    }
    let i = at - 1;
    // `=` then a line break is a soft line break, `=\r\n` too: the text goes on after it.
    let soft_break = |i: usize| {
        i >= 1
            && (b[i - 1] == b'='
                || (b[i] == b'\n' && b[i - 1] == b'\r' && i >= 2 && b[i - 2] == b'='))
    };
    // A byte that begins a character outside ASCII, after the last byte of another.
    (b[i].is_ascii_whitespace() && !soft_break(i)) || (b[at] >= 0xC0 && b[i] >= 0x80)
}

/// `text` in windows of about `size` bytes, each with its offset: the whole text when it is
/// at most twice as long, else cut where `cut(text, from)` says, the first cut at or after
/// `from`; a text with no cut after a window's start is its last window.
pub(crate) fn windows_cut(
    text: &str,
    size: usize,
    cut: impl Fn(&str, usize) -> Option<usize>,
) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= text.len() {
            return None;
        }
        let start = at;
        let end = if text.len() - start <= 2 * size {
            text.len()
        } else {
            cut(text, start + size).map_or(text.len(), |end| end)
        };
        at = end;
        Some((start, &text[start..end]))
    })
}

/// Calls `visit` with every text `text` decodes to: each layer of escapes below the text
/// itself, and each base64 or base32 run's text with its own layers, four decodings deep in
/// all. The work is bounded by the text's length, as the secrets matcher's is.
///
/// The caller keeps `text` under 4 GiB. With `edge`, the text begins where a longer one with
/// no place to cut was cut anyway ([`Window::edge`]).
pub(crate) fn for_each(text: &str, edge: bool, mut visit: impl FnMut(&Decoded)) {
    if !may_decode(text) {
        return;
    }
    let mut walk = Walk {
        visit: &mut visit,
        budget: text.len().saturating_mul(16).saturating_add(1 << 20),
    };
    walk.chain(
        View {
            units: view::units_of(text),
            alts: Vec::new(),
        },
        0,
        false,
        edge,
    );
}

struct Walk<'v> {
    visit: &'v mut dyn FnMut(&Decoded),
    /// Units that texts decoded from runs may still take, so that nesting cannot make the
    /// work grow faster than the text.
    budget: usize,
}

/// A text decoded from a run is read in windows of about this many bytes ([`windows`]): each
/// of its characters stands for the whole run, so a finding in any window withholds all of it,
/// and the run's views are never made whole.
const RUN_WINDOW: usize = 64 << 10;

impl Walk<'_> {
    /// Visits `layer` and the layers below it. With `edge`, the layer begins at a forced cut
    /// ([`Window::edge`]).
    fn chain(&mut self, mut layer: View, mut depth: usize, charged: bool, edge: bool) {
        loop {
            if depth > 0 || charged {
                (self.visit)(&Decoded::of(layer.units.clone()));
            }
            if depth >= MAX_LAYERS {
                return;
            }
            let seen = depth > 0 && !charged;
            let mut runs = Vec::new();
            encoded::for_each_hidden(&layer, seen, edge, |h| runs.push(h));
            for run in runs {
                self.run(run, depth + 1);
            }
            let Some(next) = view::decode_layer(&layer) else {
                return;
            };
            if charged && !self.charge(next.units.len()) {
                return;
            }
            layer = next;
            depth += 1;
        }
    }

    fn run(&mut self, run: Hidden, depth: usize) {
        for window in windows(&run.text, RUN_WINDOW) {
            let units = view::units_spanning(window.text, run.start, run.end);
            if !self.charge(units.len()) {
                return;
            }
            let layer = View {
                units,
                alts: Vec::new(),
            };
            self.chain(layer, depth, true, window.edge);
        }
    }

    fn charge(&mut self, units: usize) -> bool {
        let ok = units <= self.budget;
        self.budget = self.budget.saturating_sub(units);
        ok
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;

    fn texts(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each(text, false, |d| out.push(d.text.clone()));
        out
    }

    /// A stretch with no place to cut is cut every quarter window, the next window reaching a
    /// sixteenth back, and prose is read a quarter window at a time, whole (decision 0157).
    #[test]
    fn long_texts_are_walked_a_quarter_window_at_a_time() {
        use crate::hidden::REDACT_WINDOW;
        let text = "x".repeat(3 * REDACT_WINDOW);
        let cut: Vec<_> = windows(&text, REDACT_WINDOW).collect();
        assert_eq!(cut[1].at, REDACT_WINDOW / 4 - REDACT_WINDOW / 16);
        assert!(cut.iter().all(|w| w.text.len() <= 2 * REDACT_WINDOW));
        let prose = "a few words ".repeat(3 * REDACT_WINDOW / 12);
        let cut: Vec<_> = windows(&prose, REDACT_WINDOW).collect();
        assert!(cut.len() >= 10, "{}", cut.len());
        assert!(cut.iter().all(|w| w.text.len() <= REDACT_WINDOW / 2));
        assert_eq!(cut.iter().map(|w| w.text.len()).sum::<usize>(), prose.len());
    }

    #[test]
    fn quoted_printable_and_octal_decode_to_texts_of_their_own() {
        assert!(texts("a=3Db").contains(&"a=b".to_owned()));
        assert!(texts(r"\150\164\164\160").contains(&"http".to_owned()));
    }

    #[test]
    fn base64_runs_decode_with_their_escapes() {
        let run = STANDARD.encode("https://x.example/?q=%74oken");
        let found = texts(&format!("cursor {run} next"));
        assert!(found.iter().any(|t| t == "https://x.example/?q=%74oken"));
        assert!(found.iter().any(|t| t == "https://x.example/?q=token"));
    }

    #[test]
    fn a_finding_maps_to_the_bytes_that_spelled_it() {
        let text = "go =68=74tp now";
        let mut seen = false;
        for_each(text, false, |d| {
            if let Some(at) = d.text.find("http") {
                assert_eq!(d.origin(at, at + 4), (3, 11));
                seen = true;
            }
        });
        assert!(seen);
        let run = STANDARD.encode("see https://x.example/a");
        let text = format!("id {run} ok");
        for_each(&text, false, |d| {
            if let Some(at) = d.text.find("https") {
                assert_eq!(d.origin(at, at + 5), (3, 3 + run.len()));
            }
        });
    }

    #[test]
    fn a_word_ends_at_white_space_but_not_at_a_soft_line_break() {
        let text = "a=3D=\r\nb=5E=\nc d";
        assert_eq!(word_end(text, 1), text.len() - 2);
        assert_eq!(word_end("x'y", 0), 1);
    }

    /// The characters every decoded text of `text` holds that escapes or runs spelled, each
    /// with the original bytes it came from, shifted by `offset`.
    fn decoded_units(text: &str, offset: u32) -> BTreeSet<(char, u32, u32)> {
        let mut out = BTreeSet::new();
        for_each(text, false, |d| {
            for u in d.units.iter().filter(|u| !u.is_raw()) {
                out.insert((u.ch, offset + u.start, offset + u.end));
            }
        });
        out
    }

    const PIECES: &[&str] = &[
        "token ",
        "=3D",
        "=\n",
        "=\r\n",
        "%41",
        "%25",
        "%2",
        "4",
        r"\150",
        r"\u00e9",
        r"\",
        "&#x41;",
        "&amp;",
        "aHR0cHM6Ly94LmV4YW1wbGUvP3Q9MQ==",
        "MFRGGZDF",
        "\u{4e2d}\u{6587}",
        "\u{e9}",
        "\u{ff05}",
        "\u{3000}",
        " ",
        "\t",
        "x",
    ];

    proptest::proptest! {
        /// A text read a window at a time decodes, window by window, to every character its
        /// whole walk decodes from an escape or an encoded run, from the same bytes: no cut
        /// falls inside an escape or a run, in any layer.
        #[test]
        fn windows_decode_what_the_whole_text_decodes(
            picks in proptest::collection::vec(0..PIECES.len(), 0..120),
            size in 1usize..40,
        ) {
            let text: String = picks.iter().map(|&i| PIECES[i]).collect();
            let whole = decoded_units(&text, 0);
            let mut windowed = BTreeSet::new();
            let mut next = 0;
            let mut forced = false;
            for window in windows(&text, size) {
                proptest::prop_assert!(window.at <= next);
                forced |= window.edge;
                next = window.at + window.text.len();
                windowed.extend(decoded_units(window.text, window.at as u32));
            }
            proptest::prop_assert_eq!(next, text.len());
            // A forced cut may fall in a run: windows then read it in parts (see below).
            if !forced {
                proptest::prop_assert_eq!(windowed, whole);
            }
        }
    }

    /// The bytes of a text that the credential rules withhold in what it decodes to, read in
    /// `windows` of it, as the redaction of a text takes them.
    fn withheld<'t>(windows: impl Iterator<Item = Window<'t>>) -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        for window in windows {
            for_each(window.text, window.edge, |d| {
                let credentials: Vec<(usize, usize)> = crate::formats::credentials_in(&d.text)
                    .iter()
                    .map(|f| (f.start, f.end))
                    .collect();
                for (start, end) in credentials
                    .iter()
                    .copied()
                    .chain(crate::params::values_in(&d.text, &credentials))
                {
                    let (start, end) = d.origin(start, end);
                    spans.push(window.whole_span(start, end));
                }
            });
        }
        spans
    }

    /// A stretch with no place to cut: base64 letters, escapes and punctuation.
    fn uncut_stretch() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::strategy::Strategy as _;
        let pieces = [
            "QUJD", "x9", "+/", "-_", "%41", r"\u0041", "=3D", "&#x41;", "\"", ",",
        ];
        proptest::collection::vec(proptest::sample::select(pieces.to_vec()), 3000..8000)
            .prop_map(|p| p.concat())
    }

    /// A credential spelled the ways only a decoded text shows it.
    fn spelled_credential() -> impl proptest::strategy::Strategy<Value = String> {
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        use proptest::strategy::Strategy as _;
        ("[a-z0-9]{12,24}", 0usize..5).prop_map(|(value, how)| {
            let plain = format!("password={value}");
            match how {
                0 => STANDARD.encode(&plain),
                1 => URL_SAFE_NO_PAD.encode(format!("x{plain}")),
                2 => format!("password=3D{value}"),
                3 => plain.bytes().map(|b| format!(r"\{b:o}")).collect(),
                _ => plain.bytes().map(|b| format!("%{b:02X}")).collect(),
            }
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 96, ..Default::default() })]

        /// A credential spelled anywhere in a long stretch with no place to cut, which is cut
        /// anyway (decision 0143), is withheld wherever the whole text's read withholds it.
        #[test]
        fn a_forced_cut_withholds_what_the_whole_read_withholds(
            before in uncut_stretch(),
            spelling in spelled_credential(),
            after in uncut_stretch(),
            size in 4096usize..8192,
        ) {
            let text = format!("{before}{spelling}{after}");
            let whole = withheld(windows(&text, text.len()));
            let cut: Vec<Window<'_>> = windows_forced(&text, size, size / 4, size / 8).collect();
            proptest::prop_assert!(cut.iter().any(|w| w.edge), "the stretch is cut anyway");
            let windowed = withheld(cut.into_iter());
            let covered = |spans: &[(usize, usize)], at: usize| {
                spans.iter().any(|&(start, end)| start <= at && at < end)
            };
            for at in before.len()..before.len() + spelling.len() {
                proptest::prop_assert!(
                    !covered(&whole, at) || covered(&windowed, at),
                    "byte {} of {:?}", at, spelling
                );
            }
        }
    }

    proptest::proptest! {
        /// Asked at places that move forward, `Runs` gives where each run begins and ends as a
        /// scan from the place itself would.
        #[test]
        fn runs_read_forward_find_what_a_scan_finds(
            text in "[a-z+ ,=]{0,200}",
            mut places in proptest::collection::vec(0usize..=200, 0..20),
        ) {
            places.iter_mut().for_each(|at| *at = (*at).min(text.len()));
            places.sort_unstable();
            let b = text.as_bytes();
            let mut runs = Runs::default();
            for &at in &places {
                let start = (0..at).rev().take_while(|&i| in_run(b[i])).last().unwrap_or(at);
                let end = (at..b.len()).find(|&i| !in_run(b[i])).unwrap_or(b.len());
                proptest::prop_assert_eq!(runs.start_at(&text, at), start, "start at {}", at);
                proptest::prop_assert_eq!(runs.end_at(&text, at), end, "end at {}", at);
            }
        }
    }

    #[test]
    fn a_line_with_no_space_is_cut_between_characters_outside_ascii() {
        let text = "\u{4e2d}\u{6587}".repeat(100);
        let cuts: Vec<usize> = windows(&text, 30).map(|window| window.at).collect();
        assert!(cuts.len() > 1, "{cuts:?}");
    }

    #[test]
    fn plain_text_spells_only_itself() {
        assert!(!may_decode("the quick brown fox"));
        assert!(texts("the quick brown fox").is_empty());
    }
}
