//! The search: every view of a text, walked by one automaton over the secrets' skeletons.

use aho_corasick::automaton::Automaton;
use aho_corasick::{Anchored, dfa, nfa};

use crate::secrets::encoded::{self, Hidden};
use crate::secrets::view::{self, MAX_LAYERS, Skeleton, Unit, View};

/// The automaton over every searched skeleton; it reports overlapping matches.
///
/// An enum rather than a trait object, so that the walks over each byte are inlined.
pub(crate) enum Matcher {
    Dfa(dfa::DFA),
    Nfa(nfa::contiguous::NFA),
}

/// One search of one text.
struct Scan<'a, A> {
    aut: &'a A,
    /// Original byte ranges to withhold, in no order.
    hits: Vec<(u32, u32)>,
    /// Units that views decoded from base64 or base32 may still take, so that nesting
    /// cannot make the work grow faster than the text.
    budget: usize,
    /// Whether the text begins where a longer one with no place to cut was cut anyway.
    edge: bool,
}

/// The original byte ranges that hold a secret, sorted, with overlapping or touching ranges merged.
///
/// The caller keeps the text under 4 GiB.
pub(crate) fn find(matcher: &Matcher, text: &str) -> Vec<(usize, usize)> {
    match matcher {
        Matcher::Dfa(aut) => find_windowed(aut, text, SCAN_WINDOW, &mut false),
        Matcher::Nfa(aut) => find_windowed(aut, text, SCAN_WINDOW, &mut false),
    }
}

/// [`find`] with windows of `size` bytes, for the tests that check windows against the whole,
/// and whether a stretch with no place to cut was cut anyway.
#[cfg(test)]
pub(crate) fn find_in_windows(
    matcher: &Matcher,
    text: &str,
    size: usize,
) -> (Vec<(usize, usize)>, bool) {
    let mut forced = false;
    let hits = match matcher {
        Matcher::Dfa(aut) => find_windowed(aut, text, size, &mut forced),
        Matcher::Nfa(aut) => find_windowed(aut, text, size, &mut forced),
    };
    (hits, forced)
}

/// The hits of [`Scan::plain`] on `text`, and those of [`Scan::walk`] over the skeleton built
/// from its units, sorted: the tests check that the walk in place finds what the built
/// skeleton's walk finds.
#[cfg(test)]
pub(crate) fn plain_and_built(matcher: &Matcher, text: &str) -> [Vec<(u32, u32)>; 2] {
    fn both(aut: &impl Automaton, text: &str) -> [Vec<(u32, u32)>; 2] {
        let scan = || Scan {
            aut,
            hits: Vec::new(),
            budget: usize::MAX,
            edge: false,
        };
        let mut in_place = scan();
        in_place.plain(text);
        let mut built = scan();
        let units = view::units_of(text);
        let sk = view::skeleton(&units);
        built.walk(&sk, |o| (units[o as usize].start, units[o as usize].end));
        let (mut a, mut b) = (in_place.hits, built.hits);
        a.sort_unstable();
        b.sort_unstable();
        [a, b]
    }
    match matcher {
        Matcher::Dfa(aut) => both(aut, text),
        Matcher::Nfa(aut) => both(aut, text),
    }
}

/// A text over twice this many bytes is searched a window at a time (decision 0141): its
/// views and skeletons, several bytes for each of its bytes, are never made whole. A window of
/// a mebibyte held some fifty mebibytes of them whatever the text; a quarter of that holds a
/// quarter (decision 0157).
const SCAN_WINDOW: usize = crate::hidden::REDACT_WINDOW;

/// How many skeleton bytes more than the longest skeleton two windows share: a match that
/// begins at a decoded character's literal reading ([`Scan::resume`]) reads the literal in place
/// of what the character folds to, which is at most this much longer.
const LITERAL_MARGIN: usize = 128;

/// [`find_with`], a window of about `size` bytes at a time. Windows are cut where the decoded
/// layers cut theirs ([`crate::decoded::windows`]: no escape or encoded run reaches across),
/// and each begins far enough before the last one ended that the stretch they share holds the
/// longest skeleton searched, in every layer: so a match lies whole in some window, read there
/// as the whole text reads it.
///
/// A stretch with no such cut for twice `size` is cut anyway, every quarter of `size`, as the
/// decoded layers are (decision 0143): the next window begins where the stretch it shares holds
/// the longest skeleton (or half the window back, where it is that sparse), at its edge, where
/// a run is read at every alignment; a hit in the run a cut falls in withholds the whole run.
/// `forced` is set when such a cut is made.
fn find_windowed(
    aut: &impl Automaton,
    text: &str,
    size: usize,
    forced_cut: &mut bool,
) -> Vec<(usize, usize)> {
    if text.len() <= 2 * size {
        return find_with(aut, text, false);
    }
    let reach = aut.max_pattern_len();
    // A forced window holds twice what it shares with the next, at least.
    let forced = (size / 4).max(4 * reach.saturating_add(LITERAL_MARGIN));
    let mut hits = Vec::new();
    let (mut start, mut edge) = (0, false);
    let mut runs = crate::decoded::Runs::default();
    // Where the window's end is looked for: a window's length past its start, and past the
    // last window's end.
    let mut from = size;
    loop {
        let rest = text.len() - start;
        // The rest of a stretch already cut anyway is cut on as it was.
        let (end, cut) = match rest <= 2 * size && (!edge || rest <= forced) {
            true => (text.len(), true),
            false => match (from..=from + size).find(|&at| crate::decoded::cuts_at(text, at)) {
                Some(end) => (end, true),
                // A window that grew for room to share keeps its length.
                None => {
                    let end = crate::decoded::forced_end(text, start, forced.max(from - start));
                    (end, false)
                }
            },
        };
        let next = match end < text.len() {
            true if cut => match shared_from(text, start, end, reach) {
                Some(next) => Some((next, false)),
                None => {
                    // Too little to share before the cut: the window grows, to twice its
                    // length, so that a text with no room to share is read in few windows.
                    from = end + (end - start).max(1);
                    continue;
                }
            },
            true => {
                *forced_cut = true;
                Some((forced_from(text, start, end, reach), true))
            }
            false => None,
        };
        let window = &text[start..end];
        let found = find_with(aut, window, edge);
        // A hit in a run cut at either end of the window withholds the whole run, read once.
        let mut run_from = None;
        let mut run_to = None;
        for (s, e) in found {
            let s = match edge && crate::decoded::reads_the_first_run(window, s) {
                true => *run_from.get_or_insert_with(|| runs.start_at(text, start)),
                false => start + s,
            };
            let runs_on = !cut
                && start + e == end
                && window.bytes().last().is_some_and(crate::decoded::in_run);
            let e = match runs_on {
                true => *run_to.get_or_insert_with(|| runs.end_at(text, end)),
                false => start + e,
            };
            hits.push((s, e));
        }
        let Some((next, next_edge)) = next else {
            break;
        };
        (start, edge) = (next, next_edge);
        from = (start + size).max(end + 1);
    }
    crate::scrub::merge(hits)
}

/// Where the window after a forced cut at `end` begins: far enough back that the stretch to
/// `end` holds `reach` skeleton bytes (and [`LITERAL_MARGIN`] more) in each of its layers, the
/// stretch tried twice as long each time, but no further back than half the window.
fn forced_from(text: &str, start: usize, end: usize, reach: usize) -> usize {
    let wanted = reach.saturating_add(LITERAL_MARGIN);
    let most = (end - start) / 2;
    let mut back = wanted.saturating_mul(2).min(most);
    loop {
        let from = crate::decoded::floor_char_boundary(text, end - back);
        if back >= most || least_skeleton(&text[from..end]) >= wanted {
            return from.max(start + 1);
        }
        back = back.saturating_mul(2).min(most);
    }
}

/// A cut after `start` and before `end` whose stretch to `end` holds `reach` skeleton bytes
/// (and [`LITERAL_MARGIN`] more) in each of its layers, read as the search reads them: the
/// stretch is tried twice as long each time, from the first cut in it.
fn shared_from(text: &str, start: usize, end: usize, reach: usize) -> Option<usize> {
    let wanted = reach.saturating_add(LITERAL_MARGIN);
    let mut back = wanted.saturating_mul(2);
    loop {
        let from = end.checked_sub(back).filter(|&from| from > start)?;
        if let Some(cut) = crate::decoded::next_cut(text, from).filter(|&cut| cut < end)
            && least_skeleton(&text[cut..end]) >= wanted
        {
            return Some(cut);
        }
        back = back.saturating_mul(2);
    }
}

/// The fewest skeleton bytes any layer of `text` holds.
fn least_skeleton(text: &str) -> usize {
    let length = |units: &[Unit]| view::skeleton(units).bytes.len();
    let mut layer = View {
        units: view::units_of(text),
        alts: Vec::new(),
    };
    let mut least = length(&layer.units);
    for _ in 0..MAX_LAYERS {
        let Some(next) = view::decode_layer(&layer) else {
            break;
        };
        least = least.min(length(&next.units));
        layer = next;
    }
    least
}

/// The hits of one window; with `edge`, it begins at a forced cut.
fn find_with(aut: &impl Automaton, text: &str, edge: bool) -> Vec<(usize, usize)> {
    let mut scan = Scan {
        aut,
        hits: Vec::new(),
        budget: text.len().saturating_mul(16).saturating_add(1 << 20),
        edge,
    };
    if is_plain(text) {
        scan.plain(text);
    } else {
        scan.chain(
            View {
                units: view::units_of(text),
                alts: Vec::new(),
            },
            0,
            false,
        );
    }
    let mut hits = scan.hits;
    hits.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(hits.len());
    for (start, end) in hits {
        let (start, end) = (start as usize, end as usize);
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// Where the last `len` skeleton bytes up to the one at `end` begin in a plain text: the
/// `len`th letter or digit back from `end`, or the first one when there are fewer.
fn skeleton_start(bytes: &[u8], end: usize, len: usize) -> usize {
    let mut first = end;
    let mut counted = 0;
    for at in (0..=end).rev() {
        if bytes[at].is_ascii_alphanumeric() {
            first = at;
            counted += 1;
            if counted == len {
                break;
            }
        }
    }
    first
}

/// True when nothing in the text can be decoded (see [`crate::decoded::may_decode`]).
fn is_plain(text: &str) -> bool {
    !crate::decoded::may_decode(text)
}

impl<A: Automaton> Scan<'_, A> {
    /// The fast path: a plain text's skeleton is its ASCII letters and digits, lowercased, so it
    /// is walked in place, with nothing built. A match's first byte is found by stepping back
    /// over the text, which a match alone pays for: [`Scan::walk`] over the skeleton finds the
    /// same hits.
    fn plain(&mut self, text: &str) {
        let aut = self.aut;
        let Ok(mut sid) = aut.start_state(Anchored::No) else {
            return;
        };
        let bytes = text.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            if !b.is_ascii_alphanumeric() {
                continue;
            }
            sid = aut.next_state(Anchored::No, sid, b.to_ascii_lowercase());
            if !(aut.is_special(sid) && aut.is_match(sid)) {
                continue;
            }
            for k in 0..aut.match_len(sid) {
                let len = aut.pattern_len(aut.match_pattern(sid, k));
                self.hits
                    .push((skeleton_start(bytes, i, len) as u32, i as u32 + 1));
            }
        }
    }

    /// Searches a view and every layer decoded from it, up to `MAX_LAYERS` in all.
    ///
    /// A view decoded from base64 or base32 is `charged` to the budget; when the budget runs
    /// out, everything it came from is withheld, since it could not be read.
    fn chain(&mut self, mut view: View, mut depth: usize, charged: bool) {
        loop {
            let sk = view::skeleton(&view.units);
            let units = &view.units;
            self.walk(&sk, |o| (units[o as usize].start, units[o as usize].end));
            self.resume(&sk, &view);
            if depth >= MAX_LAYERS {
                return;
            }
            // Runs of the original text seen in the layer below are not decoded again.
            let seen = depth > 0 && !charged;
            // A text decoded from a run begins where its run does, never at the edge.
            let edge = self.edge && !charged;
            encoded::for_each_hidden(&view, seen, edge, |h| self.hidden(h, depth + 1));
            let Some(next) = view::decode_layer(&view) else {
                return;
            };
            if charged && !self.charge(next.units.len()) {
                self.withhold(&next.units);
                return;
            }
            view = next;
            depth += 1;
        }
    }

    /// Searches a text decoded from a run: a hit anywhere in it withholds the whole run.
    fn hidden(&mut self, h: Hidden, depth: usize) {
        let decoded = view::units_spanning(&h.text, h.start, h.end);
        if self.charge(decoded.len()) {
            self.chain(
                View {
                    units: decoded,
                    alts: Vec::new(),
                },
                depth,
                true,
            );
        } else {
            self.hits.push((h.start, h.end));
        }
    }

    fn charge(&mut self, units: usize) -> bool {
        let ok = units <= self.budget;
        self.budget = self.budget.saturating_sub(units);
        ok
    }

    fn withhold(&mut self, units: &[Unit]) {
        let start = units.iter().map(|u| u.start).min();
        let end = units.iter().map(|u| u.end).max();
        if let (Some(start), Some(end)) = (start, end) {
            self.hits.push((start, end));
        }
    }

    /// Reports every match in the skeleton; `span` gives the original bytes of a skeleton owner.
    fn walk(&mut self, sk: &Skeleton, span: impl Fn(u32) -> (u32, u32)) {
        let aut = self.aut;
        let Ok(mut sid) = aut.start_state(Anchored::No) else {
            return;
        };
        for (p, &b) in sk.bytes.iter().enumerate() {
            sid = aut.next_state(Anchored::No, sid, b);
            if !(aut.is_special(sid) && aut.is_match(sid)) {
                continue;
            }
            for k in 0..aut.match_len(sid) {
                let first = (p + 1).saturating_sub(aut.pattern_len(aut.match_pattern(sid, k)));
                self.hits
                    .push((span(sk.owner[first]).0, span(sk.owner[p]).1));
            }
        }
    }

    /// Tries each decoded character's literal reading as the start of a secret that goes on
    /// in this view: an anchored walk that ends as soon as no secret can match.
    fn resume(&mut self, sk: &Skeleton, view: &View) {
        let aut = self.aut;
        let Ok(start) = aut.start_state(Anchored::Yes) else {
            return;
        };
        for alt in &view.alts {
            let mut sid = alt
                .literal
                .as_bytes()
                .iter()
                .fold(start, |sid, &b| aut.next_state(Anchored::Yes, sid, b));
            let from = sk.owner.partition_point(|&o| o <= alt.at);
            for p in from..sk.bytes.len() {
                if aut.is_dead(sid) {
                    break;
                }
                sid = aut.next_state(Anchored::Yes, sid, sk.bytes[p]);
                if aut.is_match(sid) {
                    self.hits
                        .push((alt.start, view.units[sk.owner[p] as usize].end));
                }
            }
        }
    }
}
