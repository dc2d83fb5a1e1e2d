//! Claims that reach across a whole result: which uris may appear in what a model sees.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use mcpl_classify::SourceBytes;
use serde_json::Value;

use crate::decoded;
use crate::scrub::{Scrubber, Secrets, WITHHELD_SECRET, merge};
use crate::search::{Compiled, Covering, Strings};
use crate::secrets::Admitted;
use crate::uri::secret_parts;
use crate::uri::{
    canonical, canonical_into, credential_urls, is_credential_free, is_url_terminator,
    piece_holds_no_url, plain_case, safe_cut, view_holds_no_url,
};
use crate::view::{
    FastMap, FastSet, HIDDEN_SET_CAPACITY, View, WITHHELD_LINK, is_control_or_format,
};
use crate::walk::{EachUri, NeverMarks, RawFound, Scope, walk_raw, walk_scope};

/// Whether a server's uris may appear in what a model sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum UriPolicy {
    /// No uri is shown (the default).
    #[default]
    Hidden,
    /// A reference's stub shows its uri when the uri carries no credential (no userinfo, no
    /// query, no fragment, not `data:`) and nothing in the result marks it `never`.
    CredentialFree,
}

/// [`HiddenUris::passes_unchanged`] on its own: it holds nothing it changes, so it may be
/// asked from several threads at once.
#[derive(Debug, Clone, Copy)]
pub struct PassCheck<'h> {
    compiled: &'h Compiled<'h>,
    scan: bool,
    scrub: &'h Scrubber,
}

impl PassCheck<'_> {
    /// [`HiddenUris::passes_unchanged`].
    pub fn passes_unchanged(&self, piece: &str) -> bool {
        self.uris_pass(piece) && self.scrub.passes(piece)
    }

    /// Whether [`HiddenUris::redact_label`] leaves `label` as it is and finds nothing in it:
    /// it holds no control or format character, and it passes unchanged. A lane may ask it
    /// from a second thread for the labels it will write.
    pub fn label_passes_unchanged(&self, label: &str) -> bool {
        !has_control_or_format(label) && self.passes_unchanged(label)
    }

    /// [`PassCheck::passes_unchanged`], given what `piece` alone decides of it
    /// ([`PieceCheck::of`] the same piece), when it was asked before: only what the result's
    /// hidden uris and the session's secrets decide is read again. The answer is the same.
    pub fn passes_unchanged_given(&self, piece: &str, known: Option<PieceCheck>) -> bool {
        let Some(known) = known else {
            return self.passes_unchanged(piece);
        };
        self.uris_pass_with(piece, || known.no_url)
            && self.scrub.passes_given(piece, known.formats_pass)
    }

    /// [`PassCheck::label_passes_unchanged`], given what `label` alone decides of it, as
    /// [`PassCheck::passes_unchanged_given`] is.
    pub fn label_passes_unchanged_given(&self, label: &str, known: Option<PieceCheck>) -> bool {
        !has_control_or_format(label) && self.passes_unchanged_given(label, known)
    }

    /// [`HiddenUris::passes_unchanged`] for the first pass alone.
    fn uris_pass(&self, piece: &str) -> bool {
        self.uris_pass_with(piece, || holds_no_url(piece))
    }

    /// [`PassCheck::uris_pass`], `no_url` saying whether the piece holds nothing a url is made
    /// of ([`holds_no_url`]).
    fn uris_pass_with(&self, piece: &str, no_url: impl FnOnce() -> bool) -> bool {
        match self.compiled.is_searched() {
            false => !self.scan || no_url(),
            true => self.compiled.lacks_anchors(piece) && no_url(),
        }
    }
}

/// Whether a piece holds nothing a url is made of: a url, and a pattern with `://`, need a
/// `://` in the run's view, which no run of such pieces holds.
fn holds_no_url(piece: &str) -> bool {
    piece_holds_no_url(piece) && !decoded::may_spell_more(piece)
}

/// What a piece's text alone decides of [`PassCheck::passes_unchanged`]: whether it holds
/// nothing a url is made of, and whether the token formats, credential parameters and decoded
/// layers find nothing in it. Neither reads a result's hidden uris or the session's secrets,
/// so a lane may ask it on a second core while this thread reads them (decision 0172), and
/// give it to [`PassCheck::passes_unchanged_given`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PieceCheck {
    no_url: bool,
    formats_pass: bool,
}

impl PieceCheck {
    /// What `piece` alone decides.
    pub fn of(piece: &str) -> PieceCheck {
        PieceCheck {
            no_url: holds_no_url(piece),
            formats_pass: Scrubber::formats_pass(piece),
        }
    }
}

// A lane asks it from a second thread.
const _: () = {
    const fn sync_and_send<T: Sync + Send>() {}
    sync_and_send::<PassCheck<'static>>();
};

/// Whether a label holds a character [`HiddenUris::redact_label`] takes out.
fn has_control_or_format(label: &str) -> bool {
    // In ASCII only C0 controls and DEL are control or format characters.
    if label.is_ascii() {
        label.bytes().any(|b| b < 0x20 || b == 0x7F)
    } else {
        label.chars().any(is_control_or_format)
    }
}

/// What no lane may show of one result (or one message), and the session's memory of what
/// was hidden before. Hidden are: every uri a block carries (a reference's, an embedded
/// resource's, or one beside inline data) unless the policy lets it show, every uri the result
/// marks `never` whatever the policy, every uri the session hid before, and, unless the server
/// turned it off, every credential-shaped url in a server's string, claimed or not.
///
/// Wherever a server's string reaches a model (text, a label, data), each hidden uri in it, in
/// any spelling (see the crate's [normalised view](crate)), and each of its long enough query,
/// fragment and credential values, is replaced with [`WITHHELD_LINK`].
#[derive(Debug)]
pub struct HiddenUris<'k> {
    /// The canonical forms of the uris the result marks `never`.
    never: FastSet<String>,
    /// The uris searched for, spelled in the bytes the result was read from where they are.
    compiled: Arc<Compiled<'k>>,
    policy: UriPolicy,
    scan: bool,
    /// The second pass: the session's secrets, credential parameters, token formats.
    scrub: Scrubber,
    /// Credential-shaped urls found in text, by canonical form, for the session to remember.
    found: RefCell<Vec<String>>,
    /// The buffer a short run of several pieces is joined in, kept from run to run.
    joined: RefCell<String>,
    /// The last two short labels redaction left as they were and found nothing in, the one met
    /// last first: a result's labels repeat (its links mostly share a type), and such a label
    /// is left as it is again.
    unchanged_labels: RefCell<[String; 2]>,
}

/// The longest label [`HiddenUris::redact_label`] remembers it left as it was.
const REMEMBERED_LABEL_BYTES: usize = 128;

/// The longest run of pieces [`HiddenUris::redact_run`] joins in its kept buffer; a longer one
/// is joined in a buffer of its own, given back at once.
const KEPT_JOIN_BYTES: usize = 1 << 16;

impl<'k> HiddenUris<'k> {
    /// Reads the uris and `never` marks in every value of a result (its content, its structured
    /// content, ...), on its own: a fresh session, credential-shaped urls withheld. A `never`
    /// counts on a block in the content or in the data, not inside a block's own fields: one in
    /// a block's `_meta` marks nothing. Uris are collected at every depth, inside blocks too,
    /// since hiding one more is safe.
    pub fn of(values: &[&Value], policy: UriPolicy) -> HiddenUris<'static> {
        HiddenUris::in_session(values, policy, &mut HiddenSet::new(), true)
    }

    /// As [`HiddenUris::of`], within a session: the result's hidden uris join `session`, and
    /// every uri it hid before stays hidden. `scan` withholds unclaimed credential-shaped urls.
    pub fn in_session(
        values: &[&Value],
        policy: UriPolicy,
        session: &mut HiddenSet,
        scan: bool,
    ) -> HiddenUris<'static> {
        let scope = Scope {
            values: values.to_vec(),
            views: &[],
            raw: Vec::new(),
            source: SourceBytes::default(),
        };
        HiddenUris::read(&scope, &[], policy, session, scan)
    }

    /// As [`HiddenUris::in_session`], for a result whose content array may have been read from
    /// bytes: the uris spelled in those bytes are borrowed, not copied (decision 0164).
    pub fn in_scope(
        scope: &Scope<'k>,
        policy: UriPolicy,
        session: &mut HiddenSet,
        scan: bool,
    ) -> HiddenUris<'k> {
        HiddenUris::read(scope, scope.source.0, policy, session, scan)
    }

    /// [`HiddenUris::in_scope`], borrowing from `source` alone.
    fn read(
        scope: &Scope<'_>,
        source: &'k [u8],
        policy: UriPolicy,
        session: &mut HiddenSet,
        scan: bool,
    ) -> HiddenUris<'k> {
        // Raw data (structured content) is read where a `Value` of it was: before the blocks.
        let mut raw = RawFound::default();
        for raw_value in &scope.raw {
            walk_raw(raw_value, true, &mut raw.never, &mut raw.uris);
        }
        // The `never` marks are listed (few results make any). The uris are not: they are read
        // from the scope each time they are asked for (decision 0165).
        let mut never_uris = NeverMarks::default();
        walk_scope(scope, &raw, &mut never_uris);
        let never_uris = never_uris.0;
        let never: FastSet<String> = never_uris
            .iter()
            .filter(|uri| !uri.is_empty())
            .map(|uri| canonical(uri))
            .collect();
        let hides = |uri: &str| {
            !uri.is_empty()
                && (policy == UriPolicy::Hidden
                    || !is_credential_free(uri)
                    || never.contains(&canonical(uri))
                    || session.contains(uri))
        };
        // Every uri the set hides, in order: those of the values, of raw data and of the
        // blocks, then every uri marked `never`.
        let keys = result_keys(source, &|each| {
            let mut uris = EachUri(|uri: &str| {
                if hides(uri) {
                    each(uri);
                }
            });
            walk_scope(scope, &raw, &mut uris);
            let marked = never_uris.iter().filter(|uri| !uri.is_empty());
            marked.for_each(|uri| each(uri));
        });
        let compiled = session.hide_keys(keys);
        HiddenUris {
            never,
            compiled,
            policy,
            scan,
            scrub: Scrubber {
                secrets: session.secrets.clone(),
                scan,
            },
            found: RefCell::new(Vec::new()),
            joined: RefCell::new(String::new()),
            unchanged_labels: RefCell::default(),
        }
    }

    /// Whether the same content read again, with the urls this search found (and the session
    /// did not hide yet) hidden, would be searched for them. Not when the result brought more
    /// new uris than the session keeps: read again, it replaces the session's set with its own
    /// newest uris once more, and what was learned in between is forgotten before the search
    /// is made. A second pass would then read exactly as the first (decision 0159).
    pub fn learns_for_another_pass(&self) -> bool {
        !self.compiled.fills_the_set
    }

    /// Whether the result marks this uri `never`, in any spelling.
    pub fn is_never(&self, uri: &str) -> bool {
        self.never.contains(&canonical(uri))
    }

    /// Whether this uri may be shown: the policy allows credential-free uris, this one is, the
    /// result does not mark it `never`, and the session has not hidden it. (Such a uri is never
    /// among the hidden ones.)
    pub fn shows(&self, uri: &str) -> bool {
        if self.policy != UriPolicy::CredentialFree || !is_credential_free(uri) {
            return false;
        }
        let key = canonical(uri);
        !self.never.contains(&key) && !self.compiled.keys.contains(&key)
    }

    /// A server's string with every hidden uri in it replaced by [`WITHHELD_LINK`]: what
    /// [`HiddenUris::redact_run`] makes of it alone.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.redact_run(&[text])
            .into_iter()
            .next()
            .unwrap_or(Cow::Borrowed(text))
    }

    /// A JSON value with every string in it, keys included, redacted as a server's text (a
    /// tool's definition, say): each key that changes becomes [`WITHHELD_LINK`] numbered, so
    /// no two keys become one.
    pub fn redact_value(&self, value: &Value) -> Value {
        match value {
            Value::String(text) => Value::String(self.redact(text).into_owned()),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.redact_value(v)).collect())
            }
            Value::Object(object) => {
                let mut out = serde_json::Map::with_capacity(object.len());
                for (n, (key, item)) in object.iter().enumerate() {
                    let key = match self.redact(key) {
                        Cow::Borrowed(key) => key.to_owned(),
                        Cow::Owned(_) => format!("[withheld link {}]", n + 1),
                    };
                    out.insert(key, self.redact_value(item));
                }
                Value::Object(out)
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => value.clone(),
        }
    }

    /// A server's label: control and format characters removed, then redacted.
    pub fn redact_label<'t>(&self, label: &'t str) -> Cow<'t, str> {
        if has_control_or_format(label) {
            let clean: String = label
                .chars()
                .filter(|&c| !is_control_or_format(c))
                .collect();
            Cow::Owned(self.redact(&clean).into_owned())
        } else if label.len() <= REMEMBERED_LABEL_BYTES {
            self.redact_short_label(label)
        } else {
            self.redact(label)
        }
    }

    /// [`HiddenUris::redact`] for a short label, which it may remember having left as it was.
    fn redact_short_label<'t>(&self, label: &'t str) -> Cow<'t, str> {
        {
            let Ok(mut remembered) = self.unchanged_labels.try_borrow_mut() else {
                return self.redact(label);
            };
            if remembered[0] == label {
                return Cow::Borrowed(label);
            }
            if remembered[1] == label {
                remembered.swap(0, 1);
                return Cow::Borrowed(label);
            }
        }
        let found_before = self.found.borrow().len();
        let redacted = self.redact(label);
        if matches!(redacted, Cow::Borrowed(_))
            && self.found.borrow().len() == found_before
            && let Ok(mut remembered) = self.unchanged_labels.try_borrow_mut()
        {
            remembered.swap(0, 1);
            remembered[0].clear();
            remembered[0].push_str(label);
        }
        redacted
    }

    /// Whether redaction surely leaves this piece as it is and finds nothing in it, alone or
    /// in a run of pieces that all pass: no uri is hidden, or the piece holds nothing a hidden
    /// uri's pattern needs (decision 0099), and, when scanning, it holds nothing a url is made
    /// of. A run of such pieces is [`HiddenUris::redact_run`]'s input unchanged, so a lane need
    /// not keep the run to redact it. Beside a piece that does not pass, it may change: a url
    /// begun in the piece before runs on into it.
    pub fn passes_unchanged(&self, piece: &str) -> bool {
        self.pass_check().passes_unchanged(piece)
    }

    /// What [`HiddenUris::passes_unchanged`] reads, borrowed, to be asked from other threads
    /// too: a lane may sort the pieces that pass on two cores.
    pub fn pass_check(&self) -> PassCheck<'_> {
        PassCheck {
            compiled: &self.compiled,
            scan: self.scan,
            scrub: &self.scrub,
        }
    }

    /// Adjacent pieces of one message's text, redacted as one: a uri split across pieces is
    /// found, its first piece holds the [`WITHHELD_LINK`] and the rest of it is removed.
    ///
    /// A run that changes is redacted again until it no longer does (at most
    /// [`MAX_REDACTION_PASSES`] times): a marker stands where a secret stood, and a rule that
    /// reads the context (a word's start) may see it otherwise, so redacting what mcpl wrote
    /// changes nothing.
    pub fn redact_run<'t>(&self, pieces: &[&'t str]) -> Vec<Cow<'t, str>> {
        self.redact_run_changed(pieces.iter().copied())
            .unwrap_or_else(|| pieces.iter().map(|piece| Cow::Borrowed(*piece)).collect())
    }

    /// [`HiddenUris::redact_run`] of the pieces an iterator gives (it is cloned to read them
    /// again), or `None` when it leaves every piece as it is: a run of a million pieces with
    /// nothing to withhold costs no list of its pieces, borrowed or redacted.
    pub fn redact_run_changed<'t, I>(&self, pieces: I) -> Option<Vec<Cow<'t, str>>>
    where
        I: Iterator<Item = &'t str> + Clone,
    {
        let mut out = self.redact_run_once(pieces)?;
        for _ in 1..MAX_REDACTION_PASSES {
            if out.iter().all(|piece| matches!(piece, Cow::Borrowed(_))) {
                break;
            }
            let texts: Vec<&str> = out.iter().map(AsRef::as_ref).collect();
            let Some(again) = self.redact_run_once(texts.iter().copied()) else {
                break;
            };
            let again: Vec<String> = again.into_iter().map(Cow::into_owned).collect();
            if again.iter().zip(&out).all(|(a, b)| a == b.as_ref()) {
                break;
            }
            out = again.into_iter().map(Cow::Owned).collect();
        }
        Some(out)
    }

    /// One pass of [`HiddenUris::redact_run`]; `None` when it changes nothing.
    fn redact_run_once<'t, I>(&self, pieces: I) -> Option<Vec<Cow<'t, str>>>
    where
        I: Iterator<Item = &'t str> + Clone,
    {
        let check = self.pass_check();
        let uris_pass = pieces.clone().all(|piece| check.uris_pass(piece));
        if uris_pass && pieces.clone().all(|piece| self.scrub.passes(piece)) {
            return None;
        }
        let (count, length) = pieces.clone().fold((0, 0), |(count, length), piece| {
            (count + 1, length + piece.len())
        });
        let one = match count {
            1 => pieces.clone().next(),
            _ => None,
        };
        let mut kept = match one {
            Some(_) => None,
            None if length <= KEPT_JOIN_BYTES => self.joined.try_borrow_mut().ok(),
            None => None,
        };
        let mut joined: Cow<'_, str> = match (one, kept.as_deref_mut()) {
            (Some(one), _) => Cow::Borrowed(one),
            (None, Some(buffer)) => {
                buffer.clear();
                pieces.clone().for_each(|piece| buffer.push_str(piece));
                Cow::Borrowed(buffer.as_str())
            }
            (None, None) => {
                let mut joined = String::with_capacity(length);
                pieces.clone().for_each(|piece| joined.push_str(piece));
                Cow::Owned(joined)
            }
        };
        // Both passes read the same original text: a url the first cuts short at an encoded
        // space leaves the rest of its secret to the second, which reads it whole. The
        // registered secrets are looked for first, as the first pass may turn a joined text
        // of its own into its view; the second pass reads each piece itself, and none that
        // lies whole in a withheld link (what it finds there would be withheld with it).
        let hits = self.scrub.hits(&joined);
        let links = if uris_pass {
            Vec::new()
        } else {
            self.merged_ranges(&mut joined)
        };
        drop(joined);
        let scrubbed = self.scrub.spans_of_pieces(pieces.clone(), hits, &links);
        let merged = with_markers(links, scrubbed);
        if merged.is_empty() {
            return None;
        }
        // Each piece's share of the joined text: a link that began in an earlier piece leaves
        // no second placeholder.
        // The ranges are sorted and apart, so the first that can reach a piece only moves on.
        let mut out = Vec::with_capacity(count);
        let mut piece_start = 0;
        let mut first = 0;
        for piece in pieces {
            let piece_end = piece_start + piece.len();
            let mut text = String::new();
            let mut at = piece_start;
            let mut changed = false;
            while merged
                .get(first)
                .is_some_and(|range| range.1 <= piece_start)
            {
                first += 1;
            }
            for &(start, end, marker) in &merged[first..] {
                if start >= piece_end {
                    break;
                }
                if end <= piece_start {
                    continue;
                }
                changed = true;
                text.push_str(&piece[at - piece_start..start.max(piece_start) - piece_start]);
                if start >= piece_start {
                    text.push_str(marker);
                }
                at = end.min(piece_end);
            }
            if changed {
                text.push_str(&piece[at - piece_start..]);
                out.push(Cow::Owned(text));
            } else {
                out.push(Cow::Borrowed(piece));
            }
            piece_start = piece_end;
        }
        Some(out)
    }

    /// Where hidden uris and, when scanning, credential-shaped urls are in `joined`, as its
    /// byte ranges, in order, those that overlap or touch merged.
    ///
    /// A joined text of its own that is plain ([`plain_case`]) is turned into its view in place:
    /// the text in lower case.
    fn merged_ranges(&self, joined: &mut Cow<'_, str>) -> Vec<(usize, usize)> {
        // Only urls are looked for, or patterns the text surely lacks (decision 0099), and the
        // text's view can hold no url: no view to make.
        let mut spans = self.decoded_ranges(joined);
        if (!self.compiled.is_searched() || self.compiled.lacks_anchors(joined))
            && view_holds_no_url(joined)
        {
            return merge(spans);
        }
        let plain = plain_case(joined);
        spans.extend(
            if let (Some(upper), Cow::Owned(text)) = (plain, &mut *joined) {
                // The view of plain text is the text in lower case, byte for byte: made in place,
                // however long (a window would copy a stretch with no terminator whole, and a list
                // of urls, one a text, is one such stretch).
                if upper {
                    text.make_ascii_lowercase();
                }
                self.find_in_view(text)
            } else if plain == Some(false) {
                self.find_in_view(joined)
            } else if joined.len() > 2 * REDACT_WINDOW {
                self.find_windowed(joined, REDACT_WINDOW)
            } else if plain == Some(true) {
                // Borrowed plain text with upper case: its view is a lower-case copy, with no way
                // back to map.
                self.find_in_view(&joined.to_ascii_lowercase())
            } else {
                let view = View::of(joined);
                self.find_in_view(&view.text)
                    .into_iter()
                    .map(|(start, end)| view.origin(start, end))
                    .collect()
            },
        );
        if spans.len() < 2 {
            return spans;
        }
        merge(spans)
    }

    /// What [`HiddenUris::find_in_view`] finds in the texts `joined` decodes to beyond its
    /// view ([`decoded`]: quoted-printable, octal, base64, base32), as `joined`'s byte ranges.
    /// A text over twice [`REDACT_WINDOW`] is read a window at a time, cut after white space.
    fn decoded_ranges(&self, joined: &str) -> Vec<(usize, usize)> {
        let mut ranges = Vec::new();
        if !self.scan && !self.compiled.is_searched() {
            return ranges;
        }
        for window in decoded::windows(joined, REDACT_WINDOW) {
            decoded::for_each(window.text, window.edge, |d| {
                if (!self.compiled.is_searched() || self.compiled.lacks_anchors(&d.text))
                    && view_holds_no_url(&d.text)
                {
                    return;
                }
                let view = View::of(&d.text);
                for (start, end) in self.find_in_view(&view.text) {
                    let (start, end) = view.origin(start, end);
                    let (start, end) = d.origin(start, end);
                    ranges.push(window.whole_span(start, end));
                }
            });
        }
        ranges
    }

    /// Where hidden uris and, when scanning, credential-shaped urls are in a view, as the
    /// view's byte ranges.
    fn find_in_view(&self, view: &str) -> Vec<(usize, usize)> {
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        if self.compiled.may_hold_a_pattern(view.len())
            && let Some((searcher, patterns)) = self.compiled.searcher()
        {
            ranges.extend(searcher.find_all(patterns, view));
        }
        if self.scan {
            self.scan_urls(view, 0, &mut ranges);
        }
        ranges
    }

    /// The credential-shaped urls of a stretch of a view that starts at `offset`, as ranges of
    /// the view ([`credential_urls`]); each one remembered is remembered for the session.
    fn scan_urls(&self, stretch: &str, offset: usize, ranges: &mut Vec<(usize, usize)>) {
        credential_urls(stretch, |start, end, remember| {
            ranges.push((offset + start, offset + end));
            if remember {
                self.found
                    .borrow_mut()
                    .push(canonical(&stretch[start..end]));
            }
        });
    }

    /// What [`HiddenUris::find_in_view`] finds in the view of `text`, mapped back to `text`'s
    /// bytes, without the view of the whole text: `text` is cut where its view can be
    /// ([`safe_cut`], about every `window` bytes), and the views of the pieces are searched a
    /// window at a time, each window holding what a match or url starting in it may reach
    /// (decision 0091). The answer is the whole view's, range for range.
    ///
    /// A window ends where a match of the longest pattern starting before its end still ends
    /// inside what has been read, and, when urls are scanned, just after a url terminator (a
    /// url never crosses one). A text with nowhere to cut, or a view without a terminator for a
    /// long way, makes a longer window: memory then grows with that stretch, as the url found
    /// in it would.
    fn find_windowed(&self, text: &str, window: usize) -> Vec<(usize, usize)> {
        let searcher = self.compiled.searcher();
        let longest = searcher.map_or(0, |(_, patterns)| {
            patterns.iter().map(str::len).max().unwrap_or(0)
        });
        let mut ranges = Vec::new();
        // The pieces whose views are still needed to map ranges back: each one's offset in
        // `text`, the offset of its view in the whole view, and its view (its text moved out).
        let mut pieces: VecDeque<(usize, usize, View)> = VecDeque::new();
        // The whole view from `base` on, as far as it has been read.
        let mut buffer = String::new();
        let mut base = 0;
        // Where the search goes on from: past the last match kept.
        let mut last_end = 0;
        // How far into `buffer` a url terminator has been looked for in vain, so that a view
        // without one for a long way is looked through once, not once a piece.
        let mut no_terminator_before = 0;
        let mut next = 0;
        loop {
            let done = next >= text.len();
            if !done {
                let end = match text.len() - next {
                    left if left <= 2 * window => text.len(),
                    _ => safe_cut(text, floor_boundary(text, next + window)).unwrap_or(text.len()),
                };
                let mut view = View::of(&text[next..end]);
                let view_start = base + buffer.len();
                buffer.push_str(&std::mem::take(&mut view.text));
                pieces.push_back((next, view_start, view));
                next = end;
                if buffer.len() < window + longest {
                    continue;
                }
            }
            let core_end = if done {
                base + buffer.len()
            } else {
                let limit = floor_boundary(&buffer, buffer.len() - longest);
                let end = if self.scan {
                    let from = no_terminator_before.min(limit);
                    no_terminator_before = limit;
                    buffer.as_bytes()[from..limit]
                        .iter()
                        .rposition(|&b| is_url_terminator(b))
                        .map(|at| from + at + 1)
                } else {
                    Some(limit)
                };
                match end {
                    Some(end) if end > 0 => base + end,
                    _ => continue,
                }
            };
            let core = &buffer[..core_end - base];
            let mut found = Vec::new();
            if let Some((searcher, patterns)) = searcher {
                let from = last_end.max(base);
                if from < core_end {
                    let matches = searcher.find_all(patterns, &buffer[from - base..]);
                    for (start, end) in matches {
                        if from + start >= core_end {
                            break;
                        }
                        found.push((from + start, from + end));
                        last_end = from + end;
                    }
                }
            }
            if self.scan {
                self.scan_urls(core, base, &mut found);
            }
            ranges.extend(found.into_iter().map(|(start, end)| {
                (
                    origin_in(&pieces, start, start + 1).0,
                    origin_in(&pieces, end - 1, end).1,
                )
            }));
            if done {
                break;
            }
            buffer.drain(..core_end - base);
            base = core_end;
            no_terminator_before = 0;
            // A piece is kept while a range reaching past the window may end in it.
            while pieces
                .get(1)
                .is_some_and(|(_, view_start, _)| *view_start <= base)
            {
                pieces.pop_front();
            }
        }
        ranges
    }

    /// The credential-shaped urls this view found, for the session to remember.
    pub fn take_found(&self) -> Vec<String> {
        std::mem::take(&mut *self.found.borrow_mut())
    }
}

/// How many bytes of a text redaction reads at a time: a text more than twice as long is read
/// in windows about this long ([`HiddenUris::find_windowed`]), so its whole view is never made.
/// A view holds several bytes for each byte of its window, and the layers below it twelve a
/// character, two at once: windows of a mebibyte held some fifty mebibytes whatever the text
/// (decision 0157).
pub(crate) const REDACT_WINDOW: usize = 256 << 10;

/// The bytes of the text a range of one character of the whole view came from, given the
/// pieces the text was cut into (each one's offset, its view's offset, its view).
fn origin_in(pieces: &VecDeque<(usize, usize, View)>, start: usize, end: usize) -> (usize, usize) {
    let piece = pieces
        .iter()
        .rev()
        .find(|(_, view_start, _)| *view_start <= start);
    match piece {
        Some((offset, view_start, view)) => {
            let (from, to) = view.origin(start - view_start, end - view_start);
            (offset + from, offset + to)
        }
        None => (start, end),
    }
}

/// The ranges of both passes as one sorted list without overlaps, each with its marker: a
/// stretch that holds any of a link is [`WITHHELD_LINK`], else [`WITHHELD_SECRET`].
fn with_markers(
    links: Vec<(usize, usize)>,
    secrets: Vec<(usize, usize)>,
) -> Vec<(usize, usize, &'static str)> {
    let mut all: Vec<(usize, usize, &'static str)> = links
        .into_iter()
        .map(|(start, end)| (start, end, WITHHELD_LINK))
        .chain(
            secrets
                .into_iter()
                .map(|(start, end)| (start, end, WITHHELD_SECRET)),
        )
        .filter(|&(start, end, _)| start < end)
        .collect();
    all.sort_unstable_by_key(|&(start, end, _)| (start, end));
    let mut merged: Vec<(usize, usize, &'static str)> = Vec::with_capacity(all.len());
    for (start, end, marker) in all {
        match merged.last_mut() {
            Some(last) if start < last.1 => {
                last.1 = last.1.max(end);
                if marker == WITHHELD_LINK {
                    last.2 = WITHHELD_LINK;
                }
            }
            _ => merged.push((start, end, marker)),
        }
    }
    merged
}

/// The largest character boundary of `text` at or before `index`.
pub fn floor_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// A function that gives each of a result's uris, in order, to the function it is called with.
pub(crate) type ResultUris<'u> = dyn Fn(&mut dyn FnMut(&str)) + 'u;

/// The canonical forms of the uris `uris` gives (each call gives every one, in order), the
/// keys a result's set hides. A result of more uris than the set keeps borrows each uri spelled
/// in `source` (the bytes the result was read from, when it was) that folds to its own form
/// (decision 0164). `uris` is read twice, once to count the uris and find the text of `source`
/// that holds them, once for their forms, so a result's uris are never listed (decision 0165).
pub(crate) fn result_keys<'k>(source: &'k [u8], uris: &ResultUris<'_>) -> Strings<'k> {
    let (mut count, mut covering) = (0usize, Covering::new(source));
    uris(&mut |uri| {
        count += 1;
        covering.add(uri);
    });
    // Only a result of more uris than the set keeps can fill it; a smaller one's forms are
    // copied, as the session's are.
    let base = match count > HIDDEN_SET_CAPACITY {
        true => covering.text(),
        false => "",
    };
    let mut keys = Strings::borrowing(base, count);
    let mut key = String::new();
    uris(&mut |uri| {
        canonical_into(uri, &mut key);
        if !key.is_empty() {
            keys.insert_spelled(uri, &key);
        }
    });
    keys
}

/// The uris a session has hidden, at most [`HIDDEN_SET_CAPACITY`], oldest forgotten first, and
/// the servers whose unclaimed credential-shaped urls are not withheld. The host's
/// registry (`mcpl_lanes::Registry`) holds one for the life of the host, so every lane of every
/// server uses the same.
#[derive(Debug, Default)]
pub struct HiddenSet {
    order: VecDeque<String>,
    /// Each uri held, by canonical form, and whether it is searched for by its parts too (a uri
    /// a result carries) or by itself alone (a credential-shaped url found in text).
    entries: FastMap<String, bool>,
    unscanned: HashSet<ServerName>,
    compiled: Option<Arc<Compiled<'static>>>,
    /// What the host holds and the secret parts of every uri hidden, found by their content.
    secrets: Secrets,
    /// How many uri parts were offered to `secrets`, at most [`MAX_URI_PARTS`].
    parts_offered: usize,
    /// The last parts not searched for, with the reason, at most [`UNSEARCHED_PARTS_KEPT`].
    unsearched: VecDeque<(String, Admitted)>,
}

/// The most times one run is redacted before what it came to is kept.
pub const MAX_REDACTION_PASSES: usize = 4;

/// The most parts of hidden uris one session searches for on their own; a uri hidden past
/// that is still withheld by its canonical forms.
pub const MAX_URI_PARTS: usize = 1 << 15;

/// How many parts not searched for a set remembers, with their reasons.
const UNSEARCHED_PARTS_KEPT: usize = 64;

impl HiddenSet {
    /// An empty set; every server's credential-shaped urls withheld.
    pub fn new() -> HiddenSet {
        HiddenSet::default()
    }

    /// How many uris the set holds.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether the set holds no uri.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Whether a uri, in any spelling, is in the set.
    pub fn contains(&self, uri: &str) -> bool {
        self.entries.contains_key(&canonical(uri))
    }

    /// Whether unclaimed credential-shaped urls from `server` are withheld (the default).
    pub fn scans(&self, server: &ServerName) -> bool {
        !self.unscanned.contains(server)
    }

    /// Turns the withholding of `server`'s unclaimed credential-shaped urls on or off. Uris a
    /// result claims, and uris already hidden, stay hidden either way.
    pub fn set_scan(&mut self, server: &ServerName, on: bool) {
        if on {
            self.unscanned.remove(server);
        } else {
            self.unscanned.insert(server.clone());
        }
    }

    /// [`HiddenSet::hide_keys`] for the keys of `uris`, as [`result_keys`] reads them.
    #[cfg(test)]
    pub(crate) fn hide_result<'k>(&mut self, uris: &[&str], source: &'k [u8]) -> Arc<Compiled<'k>> {
        self.hide_keys(result_keys(source, &|each| {
            uris.iter().for_each(|uri| each(uri))
        }))
    }

    /// Adds a result's keys ([`result_keys`]), in order, and returns the set to search that
    /// result for: the set's own uris and every one of the result's. A result's uri the set
    /// forgets while the result is added (it was the oldest), or that the set cannot keep (the
    /// result brought more new uris than the set keeps), is still searched for in that result.
    ///
    /// A result with more new uris than the set keeps replaces the set with its newest ones,
    /// and only those are ever added to it: the others would be forgotten at once.
    pub(crate) fn hide_keys<'k>(&mut self, keys: Strings<'k>) -> Arc<Compiled<'k>> {
        let new = keys
            .iter()
            .filter(|key| !self.entries.contains_key(key.as_ref()))
            .count();
        if new > HIDDEN_SET_CAPACITY {
            let mut newest: Vec<String> = keys
                .iter()
                .rev()
                .filter(|key| !self.entries.contains_key(key.as_ref()))
                .take(HIDDEN_SET_CAPACITY)
                .map(Cow::into_owned)
                .collect();
            newest.reverse();
            self.order.clear();
            self.entries.clear();
            self.compiled = None;
            for key in newest {
                self.offer_parts(&key);
                self.entries.insert(key.clone(), true);
                self.order.push_back(key);
            }
            return Arc::new(Compiled::filling_the_set(keys).finish());
        }
        for key in keys.iter() {
            self.insert_key(&key, true);
        }
        if keys
            .iter()
            .all(|key| self.entries.contains_key(key.as_ref()))
        {
            return self.compiled();
        }
        let mut compiled = Compiled::of_keys(keys, self.entries.len());
        for (key, &with_parts) in &self.entries {
            compiled.add(key, with_parts);
        }
        Arc::new(compiled.finish())
    }

    /// The secrets this set withholds by their content, shared (a host's log writer holds a
    /// clone).
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// Shares `secrets` from now on (a host's log writer holds the same set), keeping what
    /// this set held.
    pub fn share_secrets(&mut self, secrets: Secrets) {
        self.secrets.move_into(&secrets);
        self.secrets = secrets;
    }

    /// Registers a secret the host holds: withheld in every server string from now on,
    /// whatever the server, in any spelling.
    pub fn insert_secret(&mut self, secret: &str) -> Admitted {
        self.secrets.insert(secret)
    }

    /// The last parts of hidden uris not searched for on their own, with the reason; such a
    /// uri is withheld by its canonical forms, as a whole.
    pub fn unsearched_parts(&self) -> impl Iterator<Item = (&str, Admitted)> {
        self.unsearched
            .iter()
            .map(|(part, why)| (part.as_str(), *why))
    }

    /// Offers each secret-bearing part of a hidden uri's canonical form to the secrets.
    fn offer_parts(&mut self, key: &str) {
        secret_parts(key, |part| {
            if self.parts_offered >= MAX_URI_PARTS {
                return;
            }
            self.parts_offered += 1;
            let admitted = self.secrets.insert(part);
            if admitted != Admitted::Searched {
                if self.unsearched.len() == UNSEARCHED_PARTS_KEPT {
                    self.unsearched.pop_front();
                }
                self.unsearched.push_back((part.to_owned(), admitted));
            }
        });
    }

    /// Adds a credential-shaped url found in text, by its canonical form alone.
    pub fn insert_found(&mut self, key: String) -> bool {
        self.insert_key(&key, false)
    }

    /// Adds a uri by its canonical form; whether the set changed. A uri held alone and now
    /// carried by a result is searched for by its parts from then on.
    fn insert_key(&mut self, key: &str, with_parts: bool) -> bool {
        if key.is_empty() {
            return false;
        }
        if let Some(held) = self.entries.get_mut(key) {
            if with_parts && !*held {
                *held = true;
                self.compiled = None;
                return true;
            }
            return false;
        }
        self.order.push_back(key.to_owned());
        self.entries.insert(key.to_owned(), with_parts);
        self.offer_parts(key);
        while self.order.len() > HIDDEN_SET_CAPACITY {
            if let Some(oldest) = self.order.pop_front() {
                self.entries.remove(&oldest);
            }
        }
        self.compiled = None;
        true
    }

    /// The set's uris, ready to search for, made once per change.
    pub(crate) fn compiled(&mut self) -> Arc<Compiled<'static>> {
        if let Some(compiled) = &self.compiled {
            return Arc::clone(compiled);
        }
        let mut compiled = Compiled::of_keys(Strings::with_capacity(self.entries.len()), 0);
        for (key, &with_parts) in &self.entries {
            compiled.add(key, with_parts);
        }
        let compiled = Arc::new(compiled.finish());
        self.compiled = Some(Arc::clone(&compiled));
        compiled
    }
}

/// The name a host gives one of its servers. Every registration names one, so a reference can
/// always be traced to the servers that may fetch it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerName(String);

impl ServerName {
    /// A server's name as the host's configuration spells it.
    pub fn new(name: impl Into<String>) -> ServerName {
        ServerName(name.into())
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::*;
    use crate::view::*;
    use serde_json::json;

    /// The items as a pattern set over `base`, their concatenation: every other one a span of
    /// it, the rest copies.
    fn strings(base: &str, items: &[String]) -> PatternSet {
        let mut set = PatternSet::default();
        let mut at = 0;
        for (n, item) in items.iter().enumerate() {
            match n % 2 {
                0 => set.insert(base, &base[at..at + item.len()]),
                _ => set.insert(base, item),
            };
            at += item.len();
        }
        set
    }

    #[test]
    fn strings_that_share_their_tails_in_numbers_are_searched_by_an_automaton() {
        // Distinct beginnings (so not by prefix), one shared last eight bytes.
        let shared: Vec<String> = (0..100).map(|i| format!("{i:08}/report.pdf")).collect();
        let base = shared.concat();
        let set = strings(&base, &shared);
        let searcher = Searcher::new(set.over(&base));
        assert!(matches!(searcher, Searcher::Automaton(_)), "{searcher:?}");
        let text = format!("x {} y {}", shared[7], "report.pdf ".repeat(1000));
        let start = text.find(&shared[7]).unwrap_or_default();
        assert_eq!(
            searcher.find_all(set.over(&base), &text),
            [(start, start + shared[7].len())]
        );
        // The same strings with distinct tails keep the faster search.
        let distinct: Vec<String> = (0..100).map(|i| format!("{i:08}/report/{i:08}")).collect();
        let base = distinct.concat();
        let searcher = Searcher::new(strings(&base, &distinct).over(&base));
        assert!(matches!(searcher, Searcher::ByTail { .. }), "{searcher:?}");
    }

    #[test]
    fn one_beginning_in_many_lengths_is_searched_by_an_automaton() {
        let many: Vec<String> = (8..200).map(|len| "h".repeat(len)).collect();
        let base = many.concat();
        let searcher = Searcher::new(strings(&base, &many).over(&base));
        assert!(matches!(searcher, Searcher::Automaton(_)), "{searcher:?}");
        let few: Vec<String> = (8..20).map(|len| "h".repeat(len)).collect();
        let base = few.concat();
        assert!(matches!(
            Searcher::new(strings(&base, &few).over(&base)),
            Searcher::ByPrefix { .. }
        ));
    }

    /// Strings too many for an automaton, many of them sharing their last eight bytes, are
    /// searched by hashed tails: built in room linear in the strings, where an automaton of
    /// 400,000 uris took 700 MiB (decision 0160). It finds what an automaton finds, a hostile
    /// text of the shared tail included.
    #[test]
    fn strings_too_many_for_an_automaton_are_searched_by_hashed_tails() {
        let many: Vec<String> = (0..10_000)
            .map(|i| format!("file:///{i}/{}", "x".repeat(8 + i % 70)))
            .collect();
        let base = many.concat();
        assert!(base.len() > AUTOMATON_MOST_BYTES);
        let set = strings(&base, &many);
        let searcher = Searcher::new(set.over(&base));
        assert!(
            matches!(searcher, Searcher::ByHashedTail(_)),
            "not by hashed tails"
        );
        let text = format!(
            "see {} and {}{}, not file:///77/xxxxxxxx {}",
            many[7],
            many[9_999],
            "x".repeat(100),
            "x".repeat(2_000)
        );
        let found = searcher.find_all(set.over(&base), &text);
        assert_eq!(found.len(), 2, "{found:?}");
        let automaton = Searcher::automaton(set.over(&base)).expect("an automaton");
        assert_eq!(found, automaton.find_all(set.over(&base), &text));
    }

    /// Gathered by their tails, strings that share a beginning in many lengths, but few of
    /// them a tail, are searched by their tails: built in time and room linear in the strings,
    /// where an automaton of many took seconds (decision 0159). It finds what an automaton
    /// finds.
    #[test]
    fn gathered_strings_in_many_lengths_are_searched_by_their_tails() {
        let many: Vec<String> = (0..300)
            .map(|i| format!("file:///{}/{i:06}", "x".repeat(i % 90)))
            .collect();
        let base = many.concat();
        let mut gathering = Gathering::by_tails(&base, many.len());
        let mut at = 0;
        for item in &many {
            gathering.add(&base[at..at + item.len()]);
            at += item.len();
        }
        let search = gathering.finish();
        let set = search.patterns.over(&base);
        let Some(searcher) = &search.searcher else {
            panic!("no search");
        };
        assert!(matches!(searcher, Searcher::ByTail { .. }), "{searcher:?}");
        let text = format!("see {} and {}, not {}", many[7], many[250], &many[251][1..]);
        let found = searcher.find_all(set, &text);
        assert_eq!(found.len(), 2);
        let automaton = Searcher::automaton(set).expect("an automaton of 300 strings");
        assert_eq!(found, automaton.find_all(set, &text));
    }

    proptest::proptest! {
        /// Whichever search a set of strings gets, it finds what the others find, with the
        /// strings held as spans of a base or as copies.
        #[test]
        fn every_search_finds_the_same(
            patterns in proptest::collection::vec("[ab:/]{8,14}", 1..12),
            text in "[ab:/ ]{0,80}",
        ) {
            let base = patterns.concat();
            let held = strings(&base, &patterns);
            let set = held.over(&base);
            let automaton = Searcher::automaton(set);
            proptest::prop_assert!(automaton.is_some());
            let expected = automaton.map(|a| a.find_all(set, &text)).unwrap_or_default();
            proptest::prop_assert_eq!(Searcher::by_tail(set).find_all(set, &text), expected.clone());
            proptest::prop_assert_eq!(
                Searcher::by_hashed_tail(set).find_all(set, &text),
                expected.clone()
            );
            // The search by tails reads the strings by index alone.
            let mut without_table = strings(&base, &patterns);
            without_table.forget_table();
            proptest::prop_assert_eq!(
                Searcher::by_tail(set).find_all(without_table.over(&base), &text),
                expected.clone()
            );
            // Every string is found where it is, read back as it was added.
            let mut seen = std::collections::HashSet::new();
            let distinct: Vec<&str> = patterns
                .iter()
                .map(String::as_str)
                .filter(|p| seen.insert(*p))
                .collect();
            proptest::prop_assert!(set.iter().eq(distinct));
            proptest::prop_assert_eq!(Searcher::new(set).find_all(set, &text), expected);
        }
    }

    /// What redaction finds in the view of the whole text, mapped back, in order, and the urls
    /// it remembered.
    fn found_whole(uris: &HiddenUris, text: &str) -> (Vec<(usize, usize)>, Vec<String>) {
        let view = View::of(text);
        let mut ranges: Vec<(usize, usize)> = uris
            .find_in_view(&view.text)
            .into_iter()
            .map(|(start, end)| view.origin(start, end))
            .collect();
        ranges.sort_unstable();
        (ranges, uris.take_found())
    }

    fn found_windowed(
        uris: &HiddenUris,
        text: &str,
        window: usize,
    ) -> (Vec<(usize, usize)>, Vec<String>) {
        let mut ranges = uris.find_windowed(text, window);
        ranges.sort_unstable();
        (ranges, uris.take_found())
    }

    /// Hidden uris (a long one among them, so matches reach far), each server uri of the
    /// texts below; with `many`, twenty more with their own beginnings, so that they are
    /// searched by their tails rather than their beginnings.
    fn hidden_uris(scan: bool, many: bool) -> HiddenUris<'static> {
        let mut blocks = vec![
            json!({"type": "resource_link", "uri": "demo://resource/one"}),
            json!({"type": "resource_link", "uri": "https://files.example/q3?sig=abcdef0123456789"}),
            json!({"type": "resource_link", "uri": format!("demo://long/{}", "segment/".repeat(30))}),
        ];
        if many {
            blocks.extend(
                (0..20)
                    .map(|n| json!({"type": "resource_link", "uri": format!("s{n}://fox/jumps")})),
            );
        }
        let content = Value::Array(blocks);
        let uris =
            HiddenUris::in_session(&[&content], UriPolicy::Hidden, &mut HiddenSet::new(), scan);
        let by_tail = matches!(
            uris.compiled.search().searcher,
            Some(Searcher::ByTail { .. })
        );
        assert_eq!(by_tail, many);
        uris
    }

    /// Pieces of server text: prose, white space and controls, hidden uris in several
    /// spellings, credential-shaped urls, escapes of every kind, text outside ASCII.
    const FRAGMENTS: &[&str] = &[
        "the quick brown fox ",
        "s7://fox/jumps",
        "S12://FOX/jumps/",
        "jumps over the lazy dog",
        " ",
        "\n",
        "\t\r",
        "line 42: ",
        "demo://resource/one",
        "DEMO://Resource/One",
        "demo%3A%2F%2Fresource%2Fone",
        "demo&#58;//resource&sol;one",
        "demo:\\u002f/resource/one",
        "https://files.example/q3?sig=abcdef0123456789",
        "abcdef0123456789",
        "https://u:p@a.example/x",
        "see https://b.example/y?token=1 ",
        "x://",
        "%25",
        "%2",
        "&amp;",
        "&#x",
        "\\",
        "\u{200b}",
        "caf\u{e9} \u{4e2d}\u{6587} ",
        "demo://long/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/segment/",
    ];

    /// Hidden uris whose every pattern holds `://` or one of a few anchor bytes (decision
    /// 0099): with `dotted`, a credential value with a `.` in it too; with `plain`, one with
    /// none, which turns the anchors off.
    fn anchored_uris(scan: bool, dotted: bool, plain: bool) -> HiddenUris<'static> {
        let mut blocks = vec![
            json!({"type": "resource_link", "uri": "demo://resource/one"}),
            json!({"type": "resource_link", "uri": "https://files.example/q3?page=2&sort=name"}),
            json!({"type": "resource_link", "uri": "mailto:someone@mail.example"}),
        ];
        if dotted {
            blocks.push(
                json!({"type": "resource_link", "uri": "https://a.example/?token=tok.en.value"}),
            );
        }
        if plain {
            blocks.push(json!({"type": "resource_link", "uri": "urn:isbn:9780306406157"}));
        }
        let content = Value::Array(blocks);
        let uris =
            HiddenUris::in_session(&[&content], UriPolicy::Hidden, &mut HiddenSet::new(), scan);
        assert_eq!(uris.compiled.anchors.is_some(), !plain);
        uris
    }

    /// A `:` that cannot begin a url lets a text pass whole, scanned or not; one near a piece's
    /// end keeps the run, and the url the next piece finishes is still withheld.
    #[rstest::rstest]
    fn a_colon_that_begins_no_url_lets_a_text_pass(#[values(false, true)] scan: bool) {
        let uris = anchored_uris(scan, false, false);
        assert!(uris.passes_unchanged("row 42: the quick brown fox"));
        assert!(!uris.passes_unchanged("see https:"));
        let run = uris.redact_run(&["see https:", "//u:p@a.example/x now"]);
        if scan {
            assert_eq!(run, [format!("see {WITHHELD_LINK}"), " now".to_owned()]);
        } else {
            assert_eq!(run, ["see https:", "//u:p@a.example/x now"]);
        }
    }

    /// A label with a control or format character never passes as it is: redaction takes the
    /// character out, whatever else the label holds.
    #[test]
    fn a_label_with_a_control_character_does_not_pass() {
        let uris = anchored_uris(false, false, false);
        let check = uris.pass_check();
        assert!(check.label_passes_unchanged("quarterly report"));
        for label in [
            "quarterly\u{7}report",
            "quarterly\u{200b}report",
            "tab\there",
        ] {
            assert!(check.passes_unchanged(label), "{label:?} passes as a text");
            assert!(
                !check.label_passes_unchanged(label),
                "{label:?} is changed as a label"
            );
            assert_ne!(uris.redact_label(label), label);
        }
    }

    /// Texts and labels that hold no anchor byte and no url are redacted without the patterns
    /// ever being built (decision 0100); the first text that may hold one builds them, and is
    /// redacted as before.
    #[rstest::rstest]
    fn the_patterns_are_built_only_for_a_text_that_may_hold_one(#[values(false, true)] scan: bool) {
        let uris = anchored_uris(scan, false, false);
        assert!(!uris.compiled.is_built());
        let run = uris.redact_run(&["row 1: the quick brown fox", "\n", "row 2: jumps"]);
        assert!(run.iter().all(|text| matches!(text, Cow::Borrowed(_))));
        assert_eq!(
            uris.redact_label("report: third quarter"),
            "report: third quarter"
        );
        assert!(!uris.compiled.is_built());
        assert_eq!(
            uris.redact("see files.example/q3?page=2&sort=name now"),
            format!("see files.example/q3?{WITHHELD_LINK} now")
        );
        assert!(uris.compiled.is_built());
    }

    /// A text whose view is shorter than every pattern is redacted without the patterns being
    /// built, even where the anchors cannot tell (a signature of hex digits holds none): a
    /// result of signed links with short names never builds them (decision 0158). A text as
    /// long as the shortest pattern builds them, and is redacted as before.
    #[rstest::rstest]
    fn a_text_shorter_than_every_pattern_builds_none(#[values(false, true)] scan: bool) {
        let signature = "0123456789abcdef0123456789abcdef";
        let content = json!([
            {"type": "resource_link", "uri": format!("https://b.example/k/1.txt?X-Amz-Signature={signature}")},
        ]);
        let uris =
            HiddenUris::in_session(&[&content], UriPolicy::Hidden, &mut HiddenSet::new(), scan);
        assert_eq!(uris.compiled.anchors, None);
        for label in ["f1", "name: f123", "0123456789abcdef0123456789abcde"] {
            assert_eq!(uris.redact_label(label), label);
        }
        assert_eq!(uris.redact_run(&["f1", "f2"]), ["f1", "f2"]);
        assert!(!uris.compiled.is_built());
        assert_eq!(
            uris.redact(&format!("sig {}", signature.to_uppercase())),
            format!("sig {WITHHELD_LINK}")
        );
        assert!(uris.compiled.is_built());
    }

    /// Pieces that hold, or almost hold, what the anchored uris' patterns need.
    const ANCHOR_FRAGMENTS: &[&str] = &[
        "page=2&sort=name",
        "PAGE%3D2%26sort%3Dname",
        "page&#61;2&amp;sort=name",
        "files.example/q3",
        "https:",
        "//files.example/q3?page=2&sort=name",
        "https:\\u002f/files.example/q3",
        "someone@mail.example",
        "mailto:someone@mail.example",
        "tok.en.value",
        "token=tok.en.value",
        "urn:isbn:9780306406157",
        "9780306406157",
        "isbn",
        "=",
        ":",
        ".",
        "/",
        "@",
        "#",
        "?",
    ];

    proptest::proptest! {
        /// What redaction makes of a run is what it makes with the anchors' quick answer turned
        /// off, and it remembers the same urls; a piece that passes unchanged is left as it is
        /// alone, and so is a run of such pieces. (A url begun in a piece that does not pass
        /// may run on into one that does.)
        #[test]
        fn anchors_change_no_redaction(
            picks in proptest::collection::vec(
                (proptest::bool::ANY, 0..FRAGMENTS.len().max(ANCHOR_FRAGMENTS.len())),
                0..12,
            ),
            cuts in proptest::collection::vec(0usize..12, 0..4),
            scan: bool,
            dotted: bool,
            plain: bool,
        ) {
            let fragments: Vec<&str> = picks
                .iter()
                .map(|&(anchor, i)| match anchor {
                    true => ANCHOR_FRAGMENTS[i % ANCHOR_FRAGMENTS.len()],
                    false => FRAGMENTS[i % FRAGMENTS.len()],
                })
                .collect();
            let mut bounds: Vec<usize> = cuts.iter().map(|&cut| cut.min(fragments.len())).collect();
            bounds.push(fragments.len());
            bounds.sort_unstable();
            let mut pieces: Vec<String> = Vec::new();
            let mut at = 0;
            for bound in bounds {
                pieces.push(fragments[at..bound].concat());
                at = bound;
            }
            let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
            let anchored = anchored_uris(scan, dotted, plain);
            let mut searched = anchored_uris(scan, dotted, plain);
            if let Some(compiled) = Arc::get_mut(&mut searched.compiled) {
                compiled.anchors = None;
            }
            proptest::prop_assert!(searched.compiled.anchors.is_none());
            let quick = anchored.redact_run(&pieces);
            let slow = searched.redact_run(&pieces);
            proptest::prop_assert_eq!(&quick, &slow);
            proptest::prop_assert_eq!(anchored.take_found(), searched.take_found());
            if pieces.iter().all(|piece| anchored.passes_unchanged(piece)) {
                proptest::prop_assert_eq!(&slow, &pieces);
                proptest::prop_assert!(searched.take_found().is_empty());
            }
            for piece in pieces.iter().filter(|piece| anchored.passes_unchanged(piece)) {
                proptest::prop_assert_eq!(searched.redact(piece), Cow::Borrowed(*piece));
                proptest::prop_assert!(searched.take_found().is_empty());
            }
        }
    }

    proptest::proptest! {
        /// Reading a long text a window at a time finds what reading its whole view finds, and
        /// remembers the same urls in the same order, whatever the window.
        #[test]
        fn windows_find_what_the_whole_view_finds(
            picks in proptest::collection::vec(0..FRAGMENTS.len(), 0..400),
            window in 1usize..400,
            scan: bool,
            many: bool,
        ) {
            let text: String = picks.iter().map(|&i| FRAGMENTS[i]).collect();
            let uris = hidden_uris(scan, many);
            let whole = found_whole(&uris, &text);
            proptest::prop_assert_eq!(found_windowed(&uris, &text, window), whole);
        }

    }

    proptest::proptest! {
        /// A label redacted after others is what redacting it alone makes, remembered or not,
        /// and redaction remembers the same urls.
        #[test]
        fn a_label_is_redacted_as_the_string_alone(
            labels in proptest::collection::vec(
                proptest::collection::vec(0..FRAGMENTS.len(), 0..3),
                0..12,
            ),
            repeats in proptest::collection::vec(0usize..12, 0..24),
            scan: bool,
            many: bool,
        ) {
            let labels: Vec<String> = labels
                .iter()
                .map(|picks| picks.iter().map(|&i| FRAGMENTS[i]).collect())
                .collect();
            let order = (0..labels.len()).chain(repeats.iter().map(|&k| k % labels.len().max(1)));
            let uris = hidden_uris(scan, many);
            for k in order.filter(|&k| k < labels.len()) {
                let label = &labels[k];
                let clean: String = label.chars().filter(|&c| !is_control_or_format(c)).collect();
                let alone = uris.redact(&clean).into_owned();
                let alone_found = uris.take_found();
                let redacted = uris.redact_label(label);
                // A label the check passes is left as it is, borrowed, and nothing is found.
                if uris.pass_check().label_passes_unchanged(label) {
                    proptest::prop_assert_eq!(&redacted, &Cow::Borrowed(label.as_str()));
                    proptest::prop_assert!(alone_found.is_empty());
                }
                proptest::prop_assert_eq!(redacted, alone);
                proptest::prop_assert_eq!(uris.take_found(), alone_found);
            }
        }
    }

    proptest::proptest! {
        /// What a piece alone decides, asked before the hidden uris are read (decision 0172),
        /// gives the answer the whole check gives, as a text and as a label: with uris
        /// searched for by anchors, by parts, or not at all, scanning or not, with the
        /// session's secrets hit or not, and with any characters beside them.
        #[test]
        fn a_piece_checked_ahead_passes_as_the_whole_check(
            picks in proptest::collection::vec((0usize..3, 0usize..64), 0..8),
            extra in "\\PC{0,12}",
            uris in 0usize..3,
            scan: bool,
            many: bool,
            dotted: bool,
        ) {
            let mut piece: String = picks
                .iter()
                .map(|&(set, i)| match set {
                    0 => FRAGMENTS[i % FRAGMENTS.len()],
                    1 => ANCHOR_FRAGMENTS[i % ANCHOR_FRAGMENTS.len()],
                    _ => RUN_WORDS[i % RUN_WORDS.len()],
                })
                .collect();
            piece.push_str(&extra);
            let uris = match uris {
                0 => hidden_uris(scan, many),
                1 => anchored_uris(scan, dotted, many),
                _ => HiddenUris::in_session(&[], UriPolicy::Hidden, &mut HiddenSet::new(), scan),
            };
            let check = uris.pass_check();
            let known = Some(PieceCheck::of(&piece));
            proptest::prop_assert_eq!(
                check.passes_unchanged_given(&piece, known),
                check.passes_unchanged(&piece)
            );
            proptest::prop_assert_eq!(
                check.label_passes_unchanged_given(&piece, known),
                check.label_passes_unchanged(&piece)
            );
            proptest::prop_assert_eq!(
                check.passes_unchanged_given(&piece, None),
                check.passes_unchanged(&piece)
            );
        }
    }

    /// The three ways a piece checked ahead is answered: it passes; a url or a format fails
    /// it; a registered secret's hit makes the whole check again.
    #[test]
    fn a_piece_checked_ahead_reads_each_part() {
        let mut session = HiddenSet::new();
        session.insert_secret("blue.amber.falcon.42");
        let uris = HiddenUris::in_session(&[], UriPolicy::Hidden, &mut session, true);
        let check = uris.pass_check();
        for (piece, passes) in [
            ("row 42: the quick brown fox", true),
            ("see https://a.example/x", false),
            ("key AKIAIOSFODNN7EXAMPLE", false),
            ("password: hunter2.ok", false),
            ("said blue.amber.falcon.42 twice", false),
        ] {
            let known = Some(PieceCheck::of(piece));
            assert_eq!(check.passes_unchanged(piece), passes, "{piece}");
            assert_eq!(
                check.passes_unchanged_given(piece, known),
                passes,
                "{piece}"
            );
        }
        // What the piece alone decides is not all: the session's secret is read again.
        let known = PieceCheck::of("said blue.amber.falcon.42 twice");
        assert!(known.no_url && known.formats_pass, "{known:?}");
        // A credential parameter fails the piece by its format alone.
        let known = PieceCheck::of("password: hunter2.ok");
        assert!(known.no_url && !known.formats_pass, "{known:?}");
    }

    /// Words of runs whose urls withhold whole pieces: urls with a credential, in upper case
    /// and lower, secrets the second pass finds alone, and white space that ends a url.
    const RUN_WORDS: &[&str] = &[
        "https://a.example/x?token=SECRET1",
        "HTTPS://A.EXAMPLE/Y?TOKEN=SECRET2",
        "https://files.example/q3?sig=abcdef0123456789",
        "https://u:p@b.example/",
        "plain words ",
        "token=tok.en.value",
        "AKIAIOSFODNN7EXAMPLE",
        " ",
        "\n",
        "https:",
        "//",
        "Q",
    ];

    proptest::proptest! {
        /// A run's ranges are those of both passes read over the whole joined text: reading
        /// the registered secrets first, turning a joined text of its own into its view in
        /// place, and leaving out the pieces that lie whole in a withheld link change nothing.
        #[test]
        fn a_run_withholds_what_both_passes_read_whole_withhold(
            pieces in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(RUN_WORDS), 0..4),
                1..8,
            ),
            scan: bool,
            many: bool,
        ) {
            let pieces: Vec<String> = pieces.iter().map(|words| words.concat()).collect();
            let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
            let uris = hidden_uris(scan, many);
            let joined = pieces.concat();
            let whole = {
                let links = uris.merged_ranges(&mut Cow::Borrowed(&joined));
                with_markers(links, uris.scrub.spans_of_run(pieces.iter().copied(), &joined))
            };
            let whole_found = uris.take_found();
            let hits = uris.scrub.hits(&joined);
            let links = uris.merged_ranges(&mut Cow::Owned(joined.clone()));
            let skipped = uris.scrub.spans_of_pieces(pieces.iter().copied(), hits, &links);
            let fast = with_markers(links, skipped);
            proptest::prop_assert_eq!(fast, whole);
            proptest::prop_assert_eq!(uris.take_found(), whole_found);
        }
    }

    proptest::proptest! {
        // Half the cases redact a text longer than the kept buffer, three times over.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// A string redacted alone is what a run of it alone makes, and redaction remembers the
        /// same urls; the same string cut into a run of pieces (joined in the kept buffer, or
        /// in a buffer of its own past that one's size) makes it piece by piece.
        #[test]
        fn a_string_alone_is_redacted_as_a_run_of_it(
            picks in proptest::collection::vec(0..FRAGMENTS.len(), 0..40),
            cuts in proptest::collection::vec(0usize..40, 0..4),
            scan: bool,
            many: bool,
            long: bool,
        ) {
            let mut text: String = picks.iter().map(|&i| FRAGMENTS[i]).collect();
            if long {
                text = text.repeat(KEPT_JOIN_BYTES / text.len().max(1) + 1);
            }
            let uris = hidden_uris(scan, many);
            let alone = uris.redact(&text);
            let alone_found = uris.take_found();
            let run = uris.redact_run(&[&text]);
            proptest::prop_assert_eq!(&run, &[alone]);
            proptest::prop_assert_eq!(uris.take_found(), alone_found);
            let mut bounds: Vec<usize> = cuts
                .iter()
                .map(|&cut| floor_boundary(&text, cut * text.len() / 40))
                .collect();
            bounds.push(text.len());
            bounds.sort_unstable();
            let mut pieces = Vec::new();
            let mut at = 0;
            for bound in bounds {
                pieces.push(&text[at..bound]);
                at = bound;
            }
            let redacted = uris.redact_run(&pieces);
            let joined: String = redacted.iter().map(|piece| piece.as_ref()).collect();
            proptest::prop_assert_eq!(joined, run[0].as_ref());
        }
    }

    proptest::proptest! {

        /// Where a text is cut, the two sides' views side by side are the whole text's view,
        /// each byte from the same place.
        #[test]
        fn views_of_the_sides_of_a_safe_cut_make_the_whole_view(
            picks in proptest::collection::vec(0..FRAGMENTS.len(), 0..200),
            from in 0usize..2000,
        ) {
            let text: String = picks.iter().map(|&i| FRAGMENTS[i]).collect();
            let from = floor_boundary(&text, from);
            if let Some(cut) = safe_cut(&text, from) {
                let (whole, left, right) =
                    (View::of(&text), View::of(&text[..cut]), View::of(&text[cut..]));
                proptest::prop_assert_eq!(&whole.text, &format!("{}{}", left.text, right.text));
                for at in 0..whole.text.len() {
                    let side = if at < left.text.len() {
                        left.origin(at, at + 1)
                    } else {
                        let (start, end) = right.origin(at - left.text.len(), at - left.text.len() + 1);
                        (cut + start, cut + end)
                    };
                    proptest::prop_assert_eq!(whole.origin(at, at + 1), side);
                }
            }
        }
    }

    #[test]
    fn a_hidden_uri_across_a_window_boundary_is_withheld() {
        let uri = format!("demo://long/{}", "segment/".repeat(30));
        // Plain filler up to the first window, then the uri: the text is cut inside it
        // (72 characters that start no escape past the window's end).
        let mut text = "filler ".repeat(REDACT_WINDOW / 7 + 1);
        text.truncate(REDACT_WINDOW - 20);
        let at = text.len();
        text.push_str(&uri);
        text.push_str(" and then ");
        text.push_str(&"more prose\n".repeat(REDACT_WINDOW / 11 * 2));
        let cut = safe_cut(&text, REDACT_WINDOW).unwrap_or_default();
        assert!(
            at < cut && cut < at + uri.len(),
            "the cut falls inside the uri"
        );
        assert!(
            text.len() > 2 * REDACT_WINDOW,
            "the text is read in windows"
        );
        let uris = hidden_uris(true, false);
        let redacted = uris.redact(&text);
        // The canonical form drops the trailing slash, so the slash is left.
        let expected = format!(
            "{}{WITHHELD_LINK}{}",
            &text[..at],
            &text[at + uri.len() - 1..]
        );
        assert!(redacted == expected, "{}", &redacted[at - 20..at + 40]);
        uris.take_found();
        // Small windows put a window's end inside it too.
        for window in [50, 100, 333, 1000] {
            let short = &text[REDACT_WINDOW - 2000..REDACT_WINDOW + 2000];
            assert_eq!(
                found_windowed(&uris, short, window),
                found_whole(&uris, short),
                "{window}"
            );
        }
    }

    #[test]
    fn in_ascii_only_c0_controls_and_del_are_control_or_format() {
        // What `redact_label` reads an ASCII label by.
        for b in 0u8..0x80 {
            assert_eq!(
                is_control_or_format(char::from(b)),
                b < 0x20 || b == 0x7F,
                "{b}"
            );
        }
    }

    #[test]
    fn never_counts_at_any_depth_of_data_but_not_inside_a_block() {
        let content = json!([
            {"type": "resource", "uri": "https://a.example/x", "disposition": "never"},
            {"type": "text", "text": "see", "_meta": {"type": "resource", "uri": "https://a.example/y", "disposition": "never"}}
        ]);
        let structured = json!({"deep": [{"k": {"type": "resource", "disposition": "never",
            "resource": {"uri": "file:///embedded", "text": "t"}}}]});
        let uris = HiddenUris::of(&[&content, &structured], UriPolicy::CredentialFree);
        assert!(uris.is_never("https://a.example/x"));
        assert!(uris.is_never("file:///embedded"));
        assert!(!uris.is_never("https://a.example/y"));
        assert!(uris.shows("https://a.example/y"));
        assert!(!uris.shows("https://a.example/x"));
        assert_eq!(
            uris.redact("at https://a.example/x now"),
            "at [withheld link] now"
        );
    }

    #[test]
    fn by_default_every_block_uri_is_redacted_from_server_strings() {
        let content = json!([{"type": "resource_link", "uri": "demo://resource/1", "name": "x"}]);
        let uris = HiddenUris::of(&[&content], UriPolicy::Hidden);
        assert!(!uris.shows("demo://resource/1"));
        assert_eq!(
            uris.redact("read demo://resource/1, or demo://resource/10"),
            "read [withheld link], or [withheld link]0"
        );
        // Too short to search for in text.
        let short = json!([{"type": "resource_link", "uri": "a:b"}]);
        assert_eq!(
            HiddenUris::of(&[&short], UriPolicy::Hidden).redact("a:b"),
            "a:b"
        );
    }

    #[rstest::rstest]
    #[case("demo://resource/dynamic/text/1", true)]
    #[case("https://example.com/a/b.png", true)]
    #[case("file:///tmp/x", true)]
    #[case("https://example.com/a?token=1", false)]
    #[case("https://u:p@example.com/", false)]
    #[case("https://example.com/#frag", false)]
    #[case("data:image/png;base64,AAAA", false)]
    #[case("DATA:text/plain,hi", false)]
    #[case("no scheme", false)]
    #[case("", false)]
    #[case("1http://x", false)]
    fn credential_free_means_nothing_that_could_carry_a_secret(
        #[case] uri: &str,
        #[case] shown: bool,
    ) {
        assert_eq!(is_credential_free(uri), shown);
    }

    /// The architecture doc names the most bytes of strings an automaton is built of, as the
    /// code has it.
    #[test]
    fn the_docs_name_the_most_an_automaton_is_built_of() {
        let architecture = include_str!("../../../docs/architecture.md").replace('\n', " ");
        let claim = format!(
            "up to {} KiB of them, and the search by hashed tails past that",
            AUTOMATON_MOST_BYTES >> 10
        );
        assert!(architecture.contains(&claim), "{claim}");
    }

    /// The docs state the window redaction reads a long text in as the code has it: its views
    /// grow with the window, so the window bounds what redaction holds (decision 0157). The
    /// windows themselves are checked in `decoded.rs`.
    #[test]
    fn the_docs_name_the_window_a_long_text_is_read_in() {
        let (window, threshold) = (REDACT_WINDOW >> 10, REDACT_WINDOW >> 9);
        let redaction = include_str!("../../../docs/redaction.md").replace('\n', " ");
        let claim =
            format!("A text longer than {threshold} KiB is read a window of about {window} KiB");
        assert!(redaction.contains(&claim), "{claim}");
        let architecture = include_str!("../../../docs/architecture.md").replace('\n', " ");
        let claim = format!("A text over {threshold} KiB is read a window of about {window} KiB");
        assert!(architecture.contains(&claim), "{claim}");
        // Cut anyway every quarter window, each window reaching back a sixteenth.
        let forced = format!(
            "they cut anyway, every {} KiB or more, into windows that overlap by {} KiB",
            REDACT_WINDOW >> 12,
            REDACT_WINDOW >> 14
        );
        assert!(architecture.contains(&forced), "{forced}");
        let quarter = "`decoded.rs`, whose layers cost twelve bytes a character, reads a quarter \
                       window at a time where it can cut";
        assert!(architecture.contains(quarter), "{quarter}");
    }
}
