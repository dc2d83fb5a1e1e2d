//! Many literal strings found in one pass: the set that holds them, the searches by prefix,
//! by tail or by automaton, and a result's compiled set with the anchor bytes its patterns need.

use std::borrow::Cow;
use std::hash::BuildHasher as _;
use std::sync::OnceLock;

use crate::uri::{is_searchable, parts_of, patterns_of};

/// Distinct canonical forms found again by their hash. A form whose uri spells it in a text
/// the set borrows (a result's own bytes, decision 0164) is kept as a span of that spelling,
/// read in lower case; any other is copied into one buffer of the set's own. A set of tens of
/// thousands of forms costs a few allocations, not one (or three) a form, and a result's
/// signed links are not held twice.
#[derive(Debug, Default)]
pub(crate) struct Strings<'k> {
    /// The text spellings are borrowed from (`""` when the set borrows none).
    base: &'k str,
    /// The forms no span of `base` spells, one after another.
    own: String,
    /// Where each form starts: in `base` below its length, else in `own`, past it. Four bytes
    /// a form: a set borrows no text of 2 GiB or more, and adds no copy that would start 4 GiB
    /// (`u32::MAX`) or more past the start of `base`.
    starts: Vec<u32>,
    /// Each form's length in bytes.
    lens: Vec<u32>,
    /// Each form's index, by the form's hash: four bytes a form, the hash computed again from
    /// the form when the table grows (sets are sized up front, so it seldom does).
    table: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

/// A form's spelling as a [`Strings`] holds it: in `base` (to be read in lower case) or in
/// `own`, from the set's parts (so that a closure can read them while the table is borrowed).
fn spelled_at<'t>(base: &'t str, own: &'t str, starts: &[u32], lens: &[u32], i: u32) -> &'t str {
    let start = starts[i as usize] as usize;
    let end = start + lens[i as usize] as usize;
    text_at(base, own, start, end)
}

/// The hash of the form a spelling folds to (ASCII letters in lower case), the same whether it
/// is spelled in lower case or not.
fn form_hash(hasher: &foldhash::fast::RandomState, spelled: &str) -> u64 {
    use std::hash::Hasher as _;
    let mut state = hasher.build_hasher();
    let mut chunk = [0u8; 64];
    for piece in spelled.as_bytes().chunks(64) {
        let folded = &mut chunk[..piece.len()];
        folded.copy_from_slice(piece);
        folded.make_ascii_lowercase();
        state.write(folded);
    }
    state.write_u8(0xff);
    state.finish()
}

/// Whether the form at `i` of a [`Strings`] is `form`: a span of `base` when it folds to it, a
/// copy when it is it.
fn form_is(base: &str, own: &str, starts: &[u32], lens: &[u32], i: u32, form: &str) -> bool {
    let spelled = spelled_at(base, own, starts, lens, i);
    match (starts[i as usize] as usize) < base.len() {
        true => spells(spelled, form),
        false => spelled == form,
    }
}

/// Whether `spelled` folds to `form`: it is `form` with some ASCII letters in upper case.
pub(crate) fn spells(spelled: &str, form: &str) -> bool {
    spelled.len() == form.len()
        && spelled
            .bytes()
            .zip(form.bytes())
            .all(|(a, b)| a.to_ascii_lowercase() == b)
}

impl<'k> Strings<'k> {
    /// An empty set with room for `capacity` forms, each copied.
    pub(crate) fn with_capacity(capacity: usize) -> Strings<'k> {
        Strings::borrowing("", capacity)
    }

    /// An empty set with room for `capacity` forms, each spelled in `base` kept as a span of
    /// its spelling, any other copied.
    pub(crate) fn borrowing(base: &'k str, capacity: usize) -> Strings<'k> {
        Strings {
            base: match base.len() < 1 << 31 {
                true => base,
                false => "",
            },
            starts: Vec::with_capacity(capacity),
            lens: Vec::with_capacity(capacity),
            table: hashbrown::HashTable::with_capacity(capacity),
            ..Strings::default()
        }
    }

    /// Room for `more` forms besides those held.
    pub(crate) fn reserve(&mut self, more: usize) {
        self.starts.reserve(more);
        self.lens.reserve(more);
        let (base, own, starts, lens) = (self.base, &self.own, &self.starts, &self.lens);
        let hasher = &self.hasher;
        self.table.reserve(more, |&i| {
            form_hash(hasher, spelled_at(base, own, starts, lens, i))
        });
    }

    /// Whether some form is a span of the text the set borrows, and so is read in lower case.
    pub(crate) fn borrows(&self) -> bool {
        self.starts
            .iter()
            .any(|&start| (start as usize) < self.base.len())
    }

    /// The buffer of the forms the set copied, one after another.
    pub(crate) fn own(&self) -> &str {
        &self.own
    }

    /// How many forms the set holds.
    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }

    /// The forms, in the order they were first inserted: a form spelled in the borrowed text
    /// with a capital letter is put in lower case, any other is borrowed.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = Cow<'_, str>> {
        (0..self.starts.len()).map(|i| {
            let spelled = spelled_at(self.base, &self.own, &self.starts, &self.lens, i as u32);
            let borrowed = (self.starts[i] as usize) < self.base.len();
            match borrowed && spelled.bytes().any(|b| b.is_ascii_uppercase()) {
                true => Cow::Owned(spelled.to_ascii_lowercase()),
                false => Cow::Borrowed(spelled),
            }
        })
    }

    /// Whether the set holds `form`.
    pub(crate) fn contains(&self, form: &str) -> bool {
        let hash = form_hash(&self.hasher, form);
        self.table
            .find(hash, |&i| {
                form_is(self.base, &self.own, &self.starts, &self.lens, i, form)
            })
            .is_some()
    }

    /// Gives back what the buffers reserved beyond what they hold.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.own.shrink_to_fit();
        self.starts.shrink_to_fit();
        self.lens.shrink_to_fit();
        let (base, own, starts, lens) = (self.base, &self.own, &self.starts, &self.lens);
        let hasher = &self.hasher;
        self.table
            .shrink_to_fit(|&i| form_hash(hasher, spelled_at(base, own, starts, lens, i)));
    }

    /// Adds `form`, copied; whether it was new.
    pub(crate) fn insert(&mut self, form: &str) -> bool {
        self.insert_spelled(form, form)
    }

    /// Adds `form`: a span of `spelled` when `spelled` lies in the borrowed text and folds to
    /// `form` (its ASCII letters put in lower case), else a copy of `form`. Whether it was new.
    pub(crate) fn insert_spelled(&mut self, spelled: &str, form: &str) -> bool {
        let hash = form_hash(&self.hasher, form);
        // Past `u32::MAX` forms, or past 4 GiB of text borrowed and copied (more than any input
        // limit lets in), nothing more is added.
        let (Ok(next), Ok(len)) = (u32::try_from(self.starts.len()), u32::try_from(form.len()))
        else {
            return false;
        };
        let in_base = span_in(self.base, spelled).filter(|_| spells(spelled, form));
        let Ok(start) = u32::try_from(in_base.unwrap_or(self.base.len() + self.own.len())) else {
            return false;
        };
        let (base, own, starts, lens) = (self.base, &self.own, &self.starts, &self.lens);
        let hasher = &self.hasher;
        let entry = self.table.entry(
            hash,
            |&i| form_is(base, own, starts, lens, i, form),
            |&i| form_hash(hasher, spelled_at(base, own, starts, lens, i)),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(vacant) => {
                vacant.insert(next);
                if in_base.is_none() {
                    self.own.push_str(form);
                }
                self.starts.push(start);
                self.lens.push(len);
                true
            }
        }
    }
}

/// The shortest text of a result's bytes that holds every uri given to it lying in them, when
/// that text is UTF-8 (the bytes between two uris may be any a JSON parser skips): what a set of
/// their canonical forms borrows. The uris are given one at a time, so none is listed
/// (decision 0165).
#[derive(Debug)]
pub(crate) struct Covering<'k> {
    source: &'k [u8],
    first: usize,
    last: usize,
}

impl<'k> Covering<'k> {
    /// Nothing of `source` covered yet.
    pub(crate) fn new(source: &'k [u8]) -> Covering<'k> {
        Covering {
            source,
            first: usize::MAX,
            last: 0,
        }
    }

    /// Covers `uri` too, when it lies in the source.
    pub(crate) fn add(&mut self, uri: &str) {
        let Some(start) = (uri.as_ptr() as usize).checked_sub(self.source.as_ptr() as usize) else {
            return;
        };
        if let Some(end) = start.checked_add(uri.len())
            && end <= self.source.len()
            && !uri.is_empty()
        {
            self.first = self.first.min(start);
            self.last = self.last.max(end);
        }
    }

    /// The text covered: `""` when no uri lies in the source, or the text is no UTF-8.
    pub(crate) fn text(&self) -> &'k str {
        self.source
            .get(self.first..self.last)
            .and_then(|text| std::str::from_utf8(text).ok())
            .unwrap_or("")
    }
}

/// The strings a set of hidden uris is searched for. Most are its canonical forms or parts of
/// them (a query, a credential's value), held as spans of the forms' own buffer, the `base`;
/// only the others (a form spelled with its default port) are copied, into `own`. Signed links
/// by the hundred thousand make patterns some three times their forms: as copies they were
/// most of a projection's memory.
#[derive(Debug, Default)]
pub(crate) struct PatternSet {
    /// The strings that are no span of the base, one after another.
    own: String,
    /// Each string's start and end: in the base below its length, else in `own`, past it.
    spans: Vec<(usize, usize)>,
    /// Each string's index, by the string's hash, while the set asks whether it holds one.
    table: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

impl PatternSet {
    /// An empty set with room for `capacity` strings, `own` bytes of them copied.
    pub(crate) fn with_capacity(capacity: usize, own: usize) -> PatternSet {
        PatternSet {
            own: String::with_capacity(own),
            spans: Vec::with_capacity(capacity),
            ..PatternSet::default()
        }
    }

    /// The set read beside its base.
    pub(crate) fn over<'p>(&'p self, base: &'p str) -> Patterns<'p> {
        Patterns { base, set: self }
    }

    /// Appends `s` without looking for it in the set, which must not hold it (the table, if the
    /// set has one, is not told): a span of `base` when `s` lies in it, else a copy. Its index,
    /// or `None` past `u32::MAX` strings (more than any input limit lets in), when nothing is
    /// added.
    pub(crate) fn push_unindexed(&mut self, base: &str, s: &str) -> Option<u32> {
        let next = u32::try_from(self.spans.len()).ok()?;
        let span = match span_in(base, s) {
            Some(start) => (start, start + s.len()),
            None => {
                let start = base.len() + self.own.len();
                self.own.push_str(s);
                (start, start + s.len())
            }
        };
        self.spans.push(span);
        Some(next)
    }

    /// Makes the table that finds each string again, for a set whose strings were appended with
    /// [`PatternSet::push_unindexed`] (so are distinct).
    pub(crate) fn index_all(&mut self, base: &str) {
        let mut table = hashbrown::HashTable::with_capacity(self.spans.len());
        let patterns = self.over(base);
        for index in 0..self.spans.len() {
            // Fewer than `u32::MAX` strings are ever held.
            let index = index as u32;
            table.insert_unique(patterns.hash_at(index), index, |&i| patterns.hash_at(i));
        }
        self.table = table;
    }

    /// Adds `s`, looking for it in the table; whether it was new.
    pub(crate) fn insert(&mut self, base: &str, s: &str) -> bool {
        let patterns = self.over(base);
        let hash = self.hasher.hash_one(s);
        if self.table.find(hash, |&i| patterns.at(i) == s).is_some() {
            return false;
        }
        let Some(index) = self.push_unindexed(base, s) else {
            return false;
        };
        // The table is taken out while it grows, so that it rehashes by reading the set.
        let mut table = std::mem::take(&mut self.table);
        let patterns = self.over(base);
        table.insert_unique(hash, index, |&i| patterns.hash_at(i));
        self.table = table;
        true
    }

    /// Drops the table that finds a string again, once nothing will insert into the set or ask
    /// whether it holds a string ([`Patterns::contains`] then answers `false`): the strings stay,
    /// by index.
    pub(crate) fn forget_table(&mut self) {
        self.table = hashbrown::HashTable::new();
    }

    /// Gives back what the buffers reserved beyond what they hold.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.own.shrink_to_fit();
        self.spans.shrink_to_fit();
    }
}

/// Where `s` starts in `base`, when it is a slice of it.
fn span_in(base: &str, s: &str) -> Option<usize> {
    let start = (s.as_ptr() as usize).checked_sub(base.as_ptr() as usize)?;
    (start.checked_add(s.len())? <= base.len() && !s.is_empty()).then_some(start)
}

/// The string a span names, in `base` or in `own` past it.
fn text_at<'t>(base: &'t str, own: &'t str, start: usize, end: usize) -> &'t str {
    match start.checked_sub(base.len()) {
        None => &base[start..end],
        Some(at) => &own[at..end - base.len()],
    }
}

/// A [`PatternSet`] beside its base: the strings as they read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Patterns<'p> {
    base: &'p str,
    set: &'p PatternSet,
}

impl<'p> Patterns<'p> {
    /// The string at `index`.
    pub(crate) fn at(&self, index: u32) -> &'p str {
        let (start, end) = self.set.spans[index as usize];
        text_at(self.base, &self.set.own, start, end)
    }

    /// The bytes of the string at `index`, read without slicing a buffer as text (no character
    /// boundary to check: every string is whole).
    pub(crate) fn bytes(&self, index: u32) -> &'p [u8] {
        let (start, end) = self.set.spans[index as usize];
        let base = self.base.len();
        match start.checked_sub(base) {
            None => &self.base.as_bytes()[start..end],
            Some(at) => &self.set.own.as_bytes()[at..end - base],
        }
    }

    fn hash_at(&self, index: u32) -> u64 {
        self.set.hasher.hash_one(self.at(index))
    }

    /// How many strings the set holds.
    pub(crate) fn len(&self) -> usize {
        self.set.spans.len()
    }

    /// The strings, in the order they were first added.
    pub(crate) fn iter(self) -> impl DoubleEndedIterator<Item = &'p str> {
        (0..self.set.spans.len()).map(move |i| self.at(i as u32))
    }

    /// Whether the set holds `s` (`false` once its table is forgotten).
    pub(crate) fn contains(&self, s: &str) -> bool {
        let hash = self.set.hasher.hash_one(s);
        self.set.table.find(hash, |&i| self.at(i) == s).is_some()
    }
}

/// A set of hidden uris, ready to search for: their canonical forms, and what a text must
/// hold for one of their patterns to be in it. The patterns themselves, and the search made of
/// them, are built the first time a text may hold one (decision 0100): a result whose texts
/// hold none of the bytes the patterns need never builds them.
#[derive(Debug, Default)]
pub(crate) struct Compiled<'k> {
    /// The uris' canonical forms, spelled in the result's own bytes where it spells them.
    pub(crate) keys: Strings<'k>,
    /// Which of `keys` are searched for alone, without their parts (credential-shaped urls
    /// found in text), in order.
    alone: Vec<u32>,
    /// Whether any string is searched for.
    searched: bool,
    /// The length of the shortest string searched for, in bytes (`usize::MAX` when none is):
    /// a view shorter than it holds none, and needs no search (decision 0158).
    shortest: usize,
    /// Whether these are a result's uris alone, which were more than the session's set keeps:
    /// the set then holds the newest of them and nothing else ([`crate::HiddenSet`]).
    pub(crate) fills_the_set: bool,
    /// Which of [`ANCHOR_BYTES`] every pattern without `://` holds one of; `None` when some
    /// pattern holds neither (decision 0099).
    pub(crate) anchors: Option<Anchors>,
    pub(crate) search: OnceLock<Search>,
}

/// The strings searched for, and the search made of them.
#[derive(Debug, Default)]
pub(crate) struct Search {
    /// The forms in lower case, one after another, when some are spelled in a text the keys
    /// borrow (empty otherwise: the patterns are spans of the keys' own buffer).
    forms: String,
    /// Every string searched for, most of them spans of the forms' buffer.
    pub(crate) patterns: PatternSet,
    pub(crate) searcher: Option<Searcher>,
}

/// Whether a DFA of `patterns` is cheap to build. Its build follows failure links from every
/// state, so a long pattern that repeats itself (a path segment of 4,000 `x`) takes time
/// quadratic in its length: a few hidden uris of 4 KB took most of a projection's time, the
/// `lanes` fuzz target's slow unit. Past a short pattern or a small total, the contiguous NFA,
/// built in linear time, serves.
pub(crate) fn dfa_affordable<'p>(patterns: impl Iterator<Item = &'p str>) -> bool {
    let (mut total, mut longest) = (0, 0);
    for pattern in patterns {
        total += pattern.len();
        longest = longest.max(pattern.len());
    }
    total <= 64 * 1024 && longest <= 256
}

/// Bytes one of which a hidden uri's pattern without `://` usually holds: a query's `=`, a
/// path's `/`, a name's `.`, ... In that order, so a set of uris with queries needs only the
/// first.
const ANCHOR_BYTES: [u8; 6] = [b'=', b'/', b'.', b'?', b'#', b'@'];

impl<'k> Compiled<'k> {
    /// The uris carried by a result, each searched for with its parts, with room for `more`
    /// uris besides.
    pub(crate) fn of_keys(mut keys: Strings<'k>, more: usize) -> Compiled<'k> {
        keys.reserve(more);
        Compiled {
            keys,
            ..Compiled::default()
        }
    }

    /// A result's uris alone, more than the session's set keeps ([`Compiled::fills_the_set`]),
    /// each searched for with its parts.
    pub(crate) fn filling_the_set(keys: Strings<'k>) -> Compiled<'k> {
        Compiled {
            fills_the_set: true,
            ..Compiled::of_keys(keys, 0)
        }
    }

    /// Adds a uri by its canonical form: with its parts, or alone.
    pub(crate) fn add(&mut self, key: &str, with_parts: bool) {
        let index = self.keys.len();
        if self.keys.insert(key) && !with_parts {
            // `Strings` holds fewer than `u32::MAX` strings.
            self.alone.push(index as u32);
        }
    }

    /// Each key with whether it is searched for with its parts.
    fn each_key(&self) -> impl Iterator<Item = (Cow<'_, str>, bool)> {
        let mut alone = self.alone.iter().copied().peekable();
        self.keys.iter().enumerate().map(move |(index, key)| {
            let with_parts = alone.next_if_eq(&(index as u32)).is_none();
            (key, with_parts)
        })
    }

    /// The set as added, its anchors and its shortest pattern read from every pattern its keys
    /// make (no pattern kept). A form's default-port spelling is read only until some pattern is
    /// long enough to search for, or where the form is too short: it holds `://` whenever there
    /// is one ([`patterns_of`]), so it needs no anchor, and it is longer than its form.
    pub(crate) fn finish(mut self) -> Compiled<'k> {
        self.keys.shrink_to_fit();
        let mut anchors = AnchorsOf::default();
        let mut scratch = String::new();
        for (key, with_parts) in self.each_key() {
            let key = key.as_ref();
            match with_parts && (!anchors.searched || !is_searchable(key)) {
                true => patterns_of(key, &mut scratch, |pattern| anchors.note(pattern)),
                false => {
                    anchors.note(key);
                    if with_parts {
                        parts_of(key, |part| anchors.note(part));
                    }
                }
            }
        }
        self.searched = anchors.searched;
        self.shortest = anchors.shortest;
        self.anchors = anchors.mask.map(Anchors::of_mask);
        self
    }

    /// Whether any string is searched for.
    pub(crate) fn is_searched(&self) -> bool {
        self.searched
    }

    /// Whether some string searched for may be in a view of `len` bytes: one is, and the
    /// shortest is no longer than the view. A short text (a link's name, a label) asks no search,
    /// and so never builds one.
    pub(crate) fn may_hold_a_pattern(&self, len: usize) -> bool {
        self.searched && len >= self.shortest
    }

    /// Whether the patterns and their search have been built.
    #[cfg(test)]
    pub(crate) fn is_built(&self) -> bool {
        self.search.get().is_some()
    }

    /// The search and the patterns it finds, built on the first call; `None` when no string is
    /// searched for.
    pub(crate) fn searcher(&self) -> Option<(&Searcher, Patterns<'_>)> {
        if !self.searched {
            return None;
        }
        let search = self.search();
        search
            .searcher
            .as_ref()
            .map(|searcher| (searcher, self.patterns()))
    }

    /// The patterns, as they read (built on the first call).
    pub(crate) fn patterns(&self) -> Patterns<'_> {
        let search = self.search();
        match search.forms.is_empty() {
            true => search.patterns.over(self.keys.own()),
            false => search.patterns.over(&search.forms),
        }
    }

    /// The patterns and their search, built on the first call. Where some forms are spelled in
    /// a text the keys borrow, the forms are copied first, in lower case, and the patterns are
    /// spans of the copies: only a set that is searched holds its forms twice.
    pub(crate) fn search(&self) -> &Search {
        self.search.get_or_init(|| {
            if !self.keys.borrows() {
                return self.gather(self.keys.own(), self.each_key());
            }
            let mut forms =
                String::with_capacity(self.keys.lens.iter().map(|&len| len as usize).sum());
            let mut ends = Vec::with_capacity(self.keys.len());
            for (key, with_parts) in self.each_key() {
                forms.push_str(&key);
                ends.push((forms.len(), with_parts));
            }
            let each = ends.iter().scan(0, |start, &(end, with_parts)| {
                let form = &forms[*start..end];
                *start = end;
                Some((Cow::Borrowed(form), with_parts))
            });
            let search = self.gather(&forms, each);
            Search { forms, ..search }
        })
    }

    /// The patterns of `keys`, each a form of `base` and whether it is searched for with its
    /// parts, and their search.
    fn gather<'f>(
        &self,
        base: &'f str,
        keys: impl Iterator<Item = (Cow<'f, str>, bool)>,
    ) -> Search {
        let mut gathering = Gathering::by_tails(base, self.keys.len());
        let mut scratch = String::new();
        for (key, with_parts) in keys {
            each_pattern(&key, with_parts, &mut scratch, |pattern| {
                gathering.add(pattern);
            });
        }
        gathering.finish()
    }

    /// Whether no pattern can be in the view of a text whose view holds no `://`
    /// ([`view_holds_no_url`], which the caller checks: no `://`, even with control or format
    /// characters between, and no escape that could decode to one): the text holds none of the
    /// anchor bytes every pattern without `://` holds. A view only drops characters, folds ASCII
    /// letters and decodes escapes, so without an escape it holds no byte the text lacks.
    /// `false` when a pattern holds neither `://` nor an anchor byte.
    pub(crate) fn lacks_anchors(&self, text: &str) -> bool {
        self.anchors
            .is_some_and(|anchors| anchors.absent_from(text.as_bytes()))
    }
}

/// The patterns of a key searched for with its parts ([`patterns_of`]), or of one searched for
/// alone: the key itself, when long enough.
fn each_pattern(key: &str, with_parts: bool, scratch: &mut String, mut each: impl FnMut(&str)) {
    if with_parts {
        patterns_of(key, scratch, each);
    } else if is_searchable(key) {
        each(key);
    }
}

/// Patterns being gathered, each kept once: while they tell, by their last eight bytes, which
/// the search by tails then keeps (decision 0094); else by the set's own table, once more of
/// them end alike than the search by tails takes.
pub(crate) struct Gathering<'b> {
    /// The canonical forms' buffer, whose slices are kept as spans.
    base: &'b str,
    patterns: PatternSet,
    tails: Option<Tails>,
}

impl<'b> Gathering<'b> {
    /// Room for the patterns of about `uris` uris, whose canonical forms are held in `base`,
    /// told apart by their last eight bytes.
    pub(crate) fn by_tails(base: &'b str, uris: usize) -> Gathering<'b> {
        // A uri's patterns mostly end alike (its form, the same with its default port, its
        // query and its last credential value): about one last eight bytes a uri. Only the
        // forms with their default ports are copied: each a form and a port.
        let own = base.len().saturating_add(uris.saturating_mul(4));
        Gathering {
            base,
            patterns: PatternSet::with_capacity(uris.saturating_mul(4), own),
            tails: Some(Tails::with_capacity(uris, uris.saturating_mul(4))),
        }
    }

    /// Patterns told apart by the set's own table from the start.
    #[cfg(test)]
    pub(crate) fn by_table(base: &'b str) -> Gathering<'b> {
        Gathering {
            base,
            patterns: PatternSet::default(),
            tails: None,
        }
    }

    /// Adds a pattern (at least eight bytes), unless it is held: a slice of the base is kept
    /// as a span of it.
    pub(crate) fn add(&mut self, pattern: &str) {
        if let Some(tails) = &mut self.tails {
            match tails.add(&mut self.patterns, self.base, pattern) {
                Added::New | Added::Held => return,
                Added::Crowded => {
                    self.patterns.index_all(self.base);
                    self.tails = None;
                }
            }
        }
        self.patterns.insert(self.base, pattern);
    }

    /// The patterns gathered, in the order first added, and the search made of them.
    pub(crate) fn finish(self) -> Search {
        let Gathering {
            base,
            mut patterns,
            tails,
        } = self;
        let searcher = match tails {
            _ if patterns.spans.is_empty() => None,
            Some(tails) => Some(Searcher::of_tails(&mut patterns, base, tails)),
            None => Some(Searcher::new(patterns.over(base))),
        };
        // Only the search by beginnings asks whether a string is a pattern; the others find
        // patterns by index, and nothing adds to a finished set.
        if !matches!(searcher, Some(Searcher::ByPrefix { .. })) {
            patterns.forget_table();
        }
        patterns.shrink_to_fit();
        Search {
            forms: String::new(),
            patterns,
            searcher,
        }
    }
}

/// The anchors of a set of patterns, read one pattern at a time.
#[derive(Debug)]
pub(crate) struct AnchorsOf {
    /// Whether any pattern was long enough to search for.
    searched: bool,
    /// The length of the shortest pattern long enough to search for (`usize::MAX` before one).
    shortest: usize,
    /// Bit `k` for `ANCHOR_BYTES[k]`; `None` once a pattern holds neither `://` nor an anchor.
    pub(crate) mask: Option<u8>,
}

impl Default for AnchorsOf {
    fn default() -> AnchorsOf {
        AnchorsOf {
            searched: false,
            shortest: usize::MAX,
            mask: Some(0),
        }
    }
}

impl AnchorsOf {
    /// Notes a string, if it is long enough to be searched for.
    pub(crate) fn note(&mut self, pattern: &str) {
        if !is_searchable(pattern) {
            return;
        }
        self.searched = true;
        self.shortest = self.shortest.min(pattern.len());
        let bytes = pattern.as_bytes();
        if let Some(held) = self.mask
            && !holds_scheme_separator(bytes)
        {
            self.mask = ANCHOR_BYTES
                .iter()
                .position(|b| memchr::memchr(*b, bytes).is_some())
                .map(|k| held | 1 << k);
        }
    }
}

/// Whether a pattern holds `://`.
fn holds_scheme_separator(pattern: &[u8]) -> bool {
    memchr::memchr_iter(b':', pattern).any(|at| pattern[at..].starts_with(b"://"))
}

/// The anchor bytes a set of patterns needs (decision 0099).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Anchors {
    bytes: [u8; ANCHOR_BYTES.len()],
    count: usize,
}

impl Anchors {
    /// The bytes of [`ANCHOR_BYTES`] that `mask` names (bit `k` for `ANCHOR_BYTES[k]`).
    pub(crate) fn of_mask(mask: u8) -> Anchors {
        let mut anchors = Anchors {
            bytes: [0; ANCHOR_BYTES.len()],
            count: 0,
        };
        for (k, &byte) in ANCHOR_BYTES.iter().enumerate() {
            if mask & 1 << k != 0 {
                anchors.bytes[anchors.count] = byte;
                anchors.count += 1;
            }
        }
        anchors
    }

    /// Whether `bytes` holds none of them.
    fn absent_from(&self, bytes: &[u8]) -> bool {
        let wanted = &self.bytes[..self.count];
        match *wanted {
            [] => true,
            [a] => memchr::memchr(a, bytes).is_none(),
            [a, b] => memchr::memchr2(a, b, bytes).is_none(),
            [a, b, c] => memchr::memchr3(a, b, c, bytes).is_none(),
            _ => !bytes.iter().any(|byte| wanted.contains(byte)),
        }
    }
}

/// Finds every occurrence of a set of strings of at least eight bytes, held in a [`Strings`].
///
/// Uris share few beginnings (`https://`, `file:///`), so when the strings have at most
/// [`Searcher::MAX_PREFIXES`] distinct first eight bytes, each beginning is searched for with a
/// vectorised substring search and only its rare hits are compared, longest first, against the
/// set. Otherwise the strings are found by their last eight bytes (Wu-Manber with two-byte
/// blocks). Either way building is linear in the strings and allocates nothing per string, so
/// a result with 50,000 uris costs milliseconds, and a text is searched in one pass whatever
/// their number.
#[derive(Debug, Clone)]
pub(crate) enum Searcher {
    ByPrefix {
        starts: Vec<(memchr::memmem::Finder<'static>, Vec<usize>)>,
    },
    ByTail {
        /// How far the end of a window may move, by its last two bytes.
        shift: Shifts,
        /// One string that ends in each distinct last eight bytes, found by the hash of those
        /// bytes (four bytes a string: the bytes are read again from the string).
        by_tail: hashbrown::HashTable<u32>,
        hasher: foldhash::fast::RandomState,
        /// For each string, another that ends in the same eight bytes, the strings of each
        /// last eight bytes making one chain from the one the table finds (`u32::MAX` ends it).
        next: Vec<u32>,
    },
    /// Strings that would make either search above slow on a hostile text (many share a
    /// beginning in many lengths, or share their last eight bytes): an Aho-Corasick automaton,
    /// slower to build, linear in the text whatever the strings.
    Automaton(aho_corasick::AhoCorasick),
    /// The same, when they are too many for an automaton ([`AUTOMATON_MOST_BYTES`]): found by
    /// their last eight bytes, then by a hash of the text read back from there, one byte at a
    /// time, up to the longest string that ends in those bytes (decision 0160). It is built in
    /// time and room linear in the strings, and reads each place the last eight bytes of a
    /// string are found once for each byte of that longest string.
    ByHashedTail(Box<HashedTails>),
}

/// The most bytes of strings an automaton is built of. An automaton takes some forty bytes a
/// byte of its strings, and its build follows long cycles: of 400,000 uris (18 MB) it took
/// 700 MiB and seconds. Past this, the search by hashed tails serves.
pub(crate) const AUTOMATON_MOST_BYTES: usize = 256 * 1024;

/// What [`Searcher::ByHashedTail`] holds.
#[derive(Debug, Clone)]
pub(crate) struct HashedTails {
    /// How far the end of a window may move, by its last two bytes.
    shift: Shifts,
    /// Each distinct last eight bytes, with the length of the longest string that ends in them.
    tails: hashbrown::HashTable<(u64, u32)>,
    /// Each string's index, by its [`BackHash`] and its length.
    strings: hashbrown::HashTable<u32>,
    /// A bit for each string's key: most stretches of a text that end in a string's last eight
    /// bytes are no string, and are told so here without the table.
    filter: Filter,
    hasher: foldhash::fast::RandomState,
    /// The base of the strings' hashes, drawn at random.
    base: u64,
    /// The longest string's length.
    longest: usize,
}

/// A bit for each key held, by the key's low bits (a power of two of them, in words of 64): a
/// key whose bit is clear is not held.
#[derive(Debug, Clone)]
struct Filter(Vec<u64>);

impl Filter {
    /// The word and the bit of `key`.
    fn place(&self, key: u64) -> (usize, u64) {
        let bit = key as usize & (self.0.len() * 64 - 1);
        (bit / 64, 1 << (bit % 64))
    }

    fn set(&mut self, key: u64) {
        let (word, bit) = self.place(key);
        self.0[word] |= bit;
    }

    /// Whether a key with these low bits may be held.
    fn may_hold(&self, key: u64) -> bool {
        let (word, bit) = self.place(key);
        self.0[word] & bit != 0
    }
}

/// A polynomial hash of a string read from its end, modulo the prime 2^61 - 1: each byte read
/// before the ones hashed adds its value times the next power of the base. A base drawn at random
/// leaves a text no way to make many of its stretches collide with a string.
#[derive(Debug, Clone, Copy)]
struct BackHash {
    hash: u64,
    power: u64,
}

impl BackHash {
    const PRIME: u64 = (1 << 61) - 1;

    fn new() -> BackHash {
        BackHash { hash: 0, power: 1 }
    }

    /// `value` below the prime, given it is below twice the prime.
    fn reduce(value: u64) -> u64 {
        if value >= Self::PRIME {
            value - Self::PRIME
        } else {
            value
        }
    }

    fn mul(a: u64, b: u64) -> u64 {
        let product = u128::from(a) * u128::from(b);
        // Both below the prime (every hash, power and base is): the product is below the
        // prime squared, so its high part is below the prime too, and folding it once (2^61 is 1
        // modulo the prime) leaves a sum below twice the prime.
        let folded = (product as u64 & Self::PRIME) + (product >> 61) as u64;
        BackHash::reduce(folded)
    }

    /// The hash with `byte` read before the bytes hashed so far.
    fn prepend(self, byte: u8, base: u64) -> BackHash {
        BackHash {
            hash: BackHash::reduce(self.hash + BackHash::mul(u64::from(byte), self.power)),
            power: BackHash::mul(self.power, base),
        }
    }

    /// The hash of `bytes` whole.
    fn of(bytes: &[u8], base: u64) -> u64 {
        bytes
            .iter()
            .rev()
            .fold(BackHash::new(), |hash, &byte| hash.prepend(byte, base))
            .hash
    }

    /// What the table of strings finds a string of `len` bytes by.
    fn key(hash: u64, len: usize) -> u64 {
        hash ^ (len as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

impl HashedTails {
    fn new(patterns: Patterns<'_>) -> HashedTails {
        let hasher = foldhash::fast::RandomState::default();
        // Below the prime, and far from 0 and 1.
        let base = (hasher.hash_one(0x5eed_u64) % (BackHash::PRIME - 512)) + 256;
        let mut shift = Shifts::new();
        let mut tails: hashbrown::HashTable<(u64, u32)> = hashbrown::HashTable::new();
        let mut strings: hashbrown::HashTable<u32> =
            hashbrown::HashTable::with_capacity(patterns.len());
        let key_of = |index: u32| {
            let bytes = patterns.bytes(index);
            BackHash::key(BackHash::of(bytes, base), bytes.len())
        };
        // About sixteen bits a string.
        let mut filter = Filter(vec![0u64; (patterns.len() / 4).next_power_of_two()]);
        let mut longest = 0;
        for index in 0..patterns.len() {
            // Fewer than `u32::MAX` strings are ever held.
            let index = index as u32;
            let bytes = patterns.bytes(index);
            shift.note(bytes);
            longest = longest.max(bytes.len());
            let tail = tail_key(bytes, bytes.len());
            let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
            match tails.entry(
                hasher.hash_one(tail),
                |&(held, _)| held == tail,
                |&(held, _)| hasher.hash_one(held),
            ) {
                hashbrown::hash_table::Entry::Occupied(mut held) => {
                    held.get_mut().1 = held.get().1.max(len);
                }
                hashbrown::hash_table::Entry::Vacant(vacant) => {
                    vacant.insert((tail, len));
                }
            }
            let key = key_of(index);
            filter.set(key);
            strings.insert_unique(key, index, |&held| key_of(held));
        }
        HashedTails {
            shift,
            tails,
            strings,
            filter,
            hasher,
            base,
            longest,
        }
    }

    /// The leftmost-longest occurrences of the strings in `bytes`, apart, in order: every
    /// occurrence is found, and only the longest at each start is kept while any string could
    /// still begin before it, so what is held stays within the longest string's reach.
    fn find_kept(&self, patterns: Patterns<'_>, bytes: &[u8], found: &mut Vec<(usize, usize)>) {
        // The longest occurrence at each start not yet settled.
        let mut pending: std::collections::BTreeMap<usize, usize> = Default::default();
        let mut kept_end = 0;
        let mut settle = |pending: &mut std::collections::BTreeMap<usize, usize>, before: usize| {
            while let Some(entry) = pending.first_entry() {
                if *entry.key() >= before {
                    break;
                }
                let (start, end) = entry.remove_entry();
                if start >= kept_end {
                    found.push((start, end));
                    kept_end = end;
                }
            }
        };
        let mut end = 8;
        while end <= bytes.len() {
            let step = self.shift.at(bytes, end);
            if step > 0 {
                end += usize::from(step);
                continue;
            }
            // No occurrence found from here on begins before this.
            settle(&mut pending, end.saturating_sub(self.longest));
            let tail = tail_key(bytes, end);
            if let Some(&(_, longest)) = self
                .tails
                .find(self.hasher.hash_one(tail), |&(held, _)| held == tail)
            {
                let longest = (longest as usize).min(end);
                let mut hash = BackHash::new();
                for len in 1..=longest {
                    hash = hash.prepend(bytes[end - len], self.base);
                    if len < 8 {
                        continue;
                    }
                    let key = BackHash::key(hash.hash, len);
                    if !self.filter.may_hold(key) {
                        continue;
                    }
                    let candidate = &bytes[end - len..end];
                    // Strings whose hashes agree are told apart by their bytes.
                    if self
                        .strings
                        .iter_hash(key)
                        .any(|&index| patterns.bytes(index) == candidate)
                    {
                        let longest_here = pending.entry(end - len).or_insert(end);
                        *longest_here = (*longest_here).max(end);
                    }
                }
            }
            end += 1;
        }
        settle(&mut pending, usize::MAX);
    }
}

impl Searcher {
    /// The most distinct beginnings searched for one by one.
    const MAX_PREFIXES: usize = 16;
    /// How far a window may move when its last two bytes appear in no string's tail.
    const MAX_SHIFT: u8 = 7;
    /// The most lengths compared at each hit of the beginnings, all beginnings together.
    const MAX_PREFIX_LENGTHS: usize = 64;
    /// The most strings compared at a position whose last eight bytes they all end in.
    const MAX_SAME_TAIL: u32 = 32;

    /// A searcher for every string in `patterns`, each at least eight bytes long.
    pub(crate) fn new(patterns: Patterns<'_>) -> Searcher {
        match Searcher::heads(patterns) {
            Heads::Few(prefixes) => Searcher::by_prefix(prefixes),
            Heads::InManyLengths => Searcher::crowded(patterns),
            Heads::Many => Searcher::by_tail(patterns),
        }
    }

    /// A search for strings the searches by prefix and by tail would be slow on (see
    /// [`Searcher::Automaton`]): an automaton when they are few enough, else by hashed tails.
    pub(crate) fn crowded(patterns: Patterns<'_>) -> Searcher {
        let bytes: usize = patterns.iter().map(str::len).sum();
        let automaton = match bytes <= AUTOMATON_MOST_BYTES {
            true => Searcher::automaton(patterns),
            false => None,
        };
        automaton.unwrap_or_else(|| Searcher::by_hashed_tail(patterns))
    }

    /// The search by hashed tails of `patterns`.
    pub(crate) fn by_hashed_tail(patterns: Patterns<'_>) -> Searcher {
        Searcher::ByHashedTail(Box::new(HashedTails::new(patterns)))
    }

    /// [`Searcher::new`] for strings gathered by their last eight bytes (none of which more than
    /// [`Searcher::MAX_SAME_TAIL`] end in), which the search by tails keeps as they are. The
    /// search by beginnings asks whether a string is one of them: `patterns` gains its table.
    ///
    /// Strings that share a beginning in many lengths are searched by their tails too, not by an
    /// automaton: so few share their tails that the search by tails is quick on any text, and it
    /// is built in time and room linear in the strings. An automaton of a few hundred thousand
    /// uris took seconds to build, and some forty bytes a state (decision 0159).
    pub(crate) fn of_tails(patterns: &mut PatternSet, base: &str, tails: Tails) -> Searcher {
        let read = patterns.over(base);
        match Searcher::heads(read) {
            Heads::Few(prefixes) => {
                patterns.index_all(base);
                Searcher::by_prefix(prefixes)
            }
            Heads::InManyLengths | Heads::Many => tails.into_searcher(read),
        }
    }

    /// Which search the strings' beginnings call for.
    fn heads(patterns: Patterns<'_>) -> Heads {
        // Each distinct beginning, with the distinct lengths of the strings that have it. There
        // are few, so a list serves better than a map that hashes every string.
        let mut prefixes: Vec<(u64, Vec<usize>)> = Vec::new();
        for pattern in patterns.iter() {
            let prefix = head_key(pattern.as_bytes());
            let index = match prefixes.iter().position(|(p, _)| *p == prefix) {
                Some(index) => index,
                None if prefixes.len() < Self::MAX_PREFIXES => {
                    prefixes.push((prefix, Vec::new()));
                    prefixes.len() - 1
                }
                None => return Heads::Many,
            };
            let lengths = &mut prefixes[index].1;
            if !lengths.contains(&pattern.len()) {
                lengths.push(pattern.len());
            }
        }
        if prefixes
            .iter()
            .map(|(_, lengths)| lengths.len())
            .sum::<usize>()
            > Self::MAX_PREFIX_LENGTHS
        {
            return Heads::InManyLengths;
        }
        Heads::Few(prefixes)
    }

    fn by_prefix(prefixes: Vec<(u64, Vec<usize>)>) -> Searcher {
        let starts = prefixes
            .into_iter()
            .map(|(prefix, mut lengths)| {
                lengths.sort_unstable_by(|a, b| b.cmp(a));
                let finder = memchr::memmem::Finder::new(&prefix.to_le_bytes()).into_owned();
                (finder, lengths)
            })
            .collect();
        Searcher::ByPrefix { starts }
    }

    pub(crate) fn by_tail(patterns: Patterns<'_>) -> Searcher {
        let mut shift = Shifts::new();
        let hasher = foldhash::fast::RandomState::default();
        let tail_of = |index: u32| {
            let bytes = patterns.bytes(index);
            tail_key(bytes, bytes.len())
        };
        let mut by_tail: hashbrown::HashTable<u32> =
            hashbrown::HashTable::with_capacity(patterns.len());
        let mut next = Vec::with_capacity(patterns.len());
        // How many strings end in each string's last eight bytes, counting it and those
        // before it.
        let mut same_tail: Vec<u32> = Vec::with_capacity(patterns.len());
        for (index, pattern) in patterns.iter().enumerate() {
            let bytes = pattern.as_bytes();
            shift.note(bytes);
            // `Strings` holds fewer than `u32::MAX` strings.
            let index = index as u32;
            let tail = tail_key(bytes, bytes.len());
            let previous = match by_tail.entry(
                hasher.hash_one(tail),
                |&held| tail_of(held) == tail,
                |&held| hasher.hash_one(tail_of(held)),
            ) {
                hashbrown::hash_table::Entry::Occupied(mut held) => {
                    Some(std::mem::replace(held.get_mut(), index))
                }
                hashbrown::hash_table::Entry::Vacant(vacant) => {
                    vacant.insert(index);
                    None
                }
            };
            next.push(previous.unwrap_or(u32::MAX));
            let count = previous.map_or(1, |p| same_tail[p as usize] + 1);
            same_tail.push(count);
            if count > Self::MAX_SAME_TAIL {
                return Searcher::crowded(patterns);
            }
        }
        Searcher::ByTail {
            shift,
            by_tail,
            hasher,
            next,
        }
    }

    /// An automaton for the strings; `None` when it cannot be built (it would be too large),
    /// and then the caller's search serves, slower but correct.
    pub(crate) fn automaton(patterns: Patterns<'_>) -> Option<Searcher> {
        // The crate would build a DFA for up to 100 patterns, whatever their length.
        let kind = if patterns.len() <= 100 && dfa_affordable(patterns.iter()) {
            aho_corasick::AhoCorasickKind::DFA
        } else {
            aho_corasick::AhoCorasickKind::ContiguousNFA
        };
        aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .kind(Some(kind))
            .build(patterns.iter())
            .ok()
            .map(Searcher::Automaton)
    }

    /// The leftmost-longest occurrences in `text` of the strings of `patterns` (the set this
    /// searcher was made from), as byte ranges that do not overlap, in order. A match of a
    /// whole UTF-8 string always falls on character boundaries.
    pub(crate) fn find_all(&self, patterns: Patterns<'_>, text: &str) -> Vec<(usize, usize)> {
        let bytes = text.as_bytes();
        let mut found: Vec<(usize, usize)> = Vec::new();
        match self {
            Searcher::ByPrefix { starts } => {
                for (finder, lengths) in starts {
                    for start in finder.find_iter(bytes) {
                        let longest = lengths.iter().find(|&&len| {
                            text.get(start..start + len)
                                .is_some_and(|candidate| patterns.contains(candidate))
                        });
                        if let Some(len) = longest {
                            found.push((start, start + len));
                        }
                    }
                }
            }
            Searcher::ByTail {
                shift,
                by_tail,
                hasher,
                next,
            } => {
                let mut end = 8;
                while end <= bytes.len() {
                    let step = shift.at(bytes, end);
                    if step > 0 {
                        end += usize::from(step);
                        continue;
                    }
                    let tail = tail_key(bytes, end);
                    let mut index = by_tail
                        .find(hasher.hash_one(tail), |&held| {
                            let held = patterns.bytes(held);
                            tail_key(held, held.len()) == tail
                        })
                        .copied();
                    while let Some(at) = index.filter(|&at| at != u32::MAX) {
                        let pattern = patterns.bytes(at);
                        if end >= pattern.len() && &bytes[end - pattern.len()..end] == pattern {
                            found.push((end - pattern.len(), end));
                        }
                        index = next.get(at as usize).copied();
                    }
                    end += 1;
                }
            }
            Searcher::ByHashedTail(tails) => tails.find_kept(patterns, bytes, &mut found),
            Searcher::Automaton(automaton) => {
                found.extend(
                    automaton
                        .find_iter(text)
                        .map(|found| (found.start(), found.end())),
                );
            }
        }
        // Leftmost first, and of those the longest; then drop any that overlap one kept.
        found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut kept: Vec<(usize, usize)> = Vec::with_capacity(found.len());
        for (start, end) in found {
            if kept.last().is_none_or(|&(_, last_end)| start >= last_end) {
                kept.push((start, end));
            }
        }
        kept
    }
}

/// What the beginnings of a set of strings call for.
enum Heads {
    /// At most [`Searcher::MAX_PREFIXES`] beginnings, in at most
    /// [`Searcher::MAX_PREFIX_LENGTHS`] lengths in all: each with its strings' lengths.
    Few(Vec<(u64, Vec<usize>)>),
    /// Few beginnings in too many lengths.
    InManyLengths,
    /// Too many beginnings.
    Many,
}

/// Distinct strings of at least eight bytes, held in a [`Strings`] without its table, found
/// again by their last eight bytes: each distinct last eight bytes leads to the first string
/// that ends in them, and a chain from it through the others. While a set's patterns are
/// gathered it tells a new one from one held, with one probe for the strings a uri gives (they
/// mostly end alike) rather than one a string (decision 0094), and it is the search by tails.
#[derive(Debug, Default)]
pub(crate) struct Tails {
    /// The first string that ends in each distinct last eight bytes, found by their hash.
    heads: hashbrown::HashTable<u32>,
    pub(crate) hasher: foldhash::fast::RandomState,
    /// For each string, the next in its chain (`u32::MAX` for the last).
    next: Vec<u32>,
    /// The last eight bytes of the string added or found last, and the first string of their
    /// chain.
    last: Option<(u64, u32)>,
}

/// What [`Tails::add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Added {
    /// The string was new, and is added (or the set is full: see [`Strings::push_unindexed`]).
    New,
    /// The set held it already.
    Held,
    /// The string is new, but [`Searcher::MAX_SAME_TAIL`] strings end in its last eight bytes
    /// already: nothing is added, and the set is no longer searched by its tails.
    Crowded,
}

impl Tails {
    /// Room for about `tails` distinct last eight bytes and `strings` strings.
    pub(crate) fn with_capacity(tails: usize, strings: usize) -> Tails {
        Tails {
            heads: hashbrown::HashTable::with_capacity(tails),
            next: Vec::with_capacity(strings),
            ..Tails::default()
        }
    }

    /// Adds `s` (at least eight bytes) to `strings` (the set these tails index, beside its
    /// `base`) unless the set holds it.
    pub(crate) fn add(&mut self, strings: &mut PatternSet, base: &str, s: &str) -> Added {
        let bytes = s.as_bytes();
        if bytes.len() < 8 {
            // Never asked: every pattern is at least eight bytes long.
            return Added::Crowded;
        }
        let tail = tail_key(bytes, bytes.len());
        let Tails {
            heads,
            hasher,
            next,
            last,
        } = self;
        let read = strings.over(base);
        let tail_of = |index: u32| {
            let held = read.bytes(index);
            tail_key(held, held.len())
        };
        let head = match *last {
            Some((last_tail, head)) if last_tail == tail => Some(head),
            _ => heads
                .find(hasher.hash_one(tail), |&held| tail_of(held) == tail)
                .copied(),
        };
        let Some(head) = head else {
            if let Some(index) = strings.push_unindexed(base, s) {
                next.push(u32::MAX);
                let read = strings.over(base);
                heads.insert_unique(hasher.hash_one(tail), index, |&held| {
                    let held = read.bytes(held);
                    hasher.hash_one(tail_key(held, held.len()))
                });
                *last = Some((tail, index));
            }
            return Added::New;
        };
        *last = Some((tail, head));
        let mut count = 0;
        let mut at = head;
        while at != u32::MAX {
            if read.bytes(at) == bytes {
                return Added::Held;
            }
            count += 1;
            at = next.get(at as usize).copied().unwrap_or(u32::MAX);
        }
        if count >= Searcher::MAX_SAME_TAIL {
            return Added::Crowded;
        }
        if let Some(index) = strings.push_unindexed(base, s)
            && let Some(after) = next.get_mut(head as usize)
        {
            // Second in the chain: the first stays where the table finds it.
            let after = std::mem::replace(after, index);
            next.push(after);
        }
        Added::New
    }

    /// The search by tails of the strings these tails index.
    fn into_searcher(self, strings: Patterns<'_>) -> Searcher {
        let mut shift = Shifts::new();
        let mut previous = None;
        for pattern in strings.iter() {
            let bytes = pattern.as_bytes();
            let tail = &bytes[bytes.len() - 8..];
            // The shifts depend on the last eight bytes alone.
            if previous == Some(tail) {
                continue;
            }
            previous = Some(tail);
            shift.note(bytes);
        }
        let Tails {
            heads,
            hasher,
            mut next,
            ..
        } = self;
        next.shrink_to_fit();
        Searcher::ByTail {
            shift,
            by_tail: heads,
            hasher,
            next,
        }
    }
}

/// How far the end of a window of a text may move, by the window's last two bytes, in a search
/// by the last eight bytes of strings: the least distance from a two-byte block of any string's
/// last eight bytes to their end, or [`Searcher::MAX_SHIFT`] when the block is in none.
#[derive(Debug, Clone)]
pub(crate) struct Shifts(Box<[u8; 1 << 16]>);

impl Shifts {
    fn new() -> Shifts {
        Shifts(Box::new([Searcher::MAX_SHIFT; 1 << 16]))
    }

    /// Notes the last eight bytes of a string (at least eight bytes long).
    fn note(&mut self, string: &[u8]) {
        let tail = &string[string.len() - 8..];
        for (j, pair) in tail.windows(2).enumerate() {
            let block = usize::from(u16::from_le_bytes([pair[0], pair[1]]));
            self.0[block] = self.0[block].min((6 - j) as u8);
        }
    }

    /// How far a window of `bytes` that ends at `end` (at least two bytes in) may move.
    fn at(&self, bytes: &[u8], end: usize) -> u8 {
        self.0[usize::from(u16::from_le_bytes([bytes[end - 2], bytes[end - 1]]))]
    }
}

/// The first eight bytes, as a number.
fn head_key(bytes: &[u8]) -> u64 {
    tail_key(bytes, 8)
}

/// The eight bytes ending at `end`, as a number.
fn tail_key(bytes: &[u8], end: usize) -> u64 {
    let mut key = [0u8; 8];
    key.copy_from_slice(&bytes[end - 8..end]);
    u64::from_le_bytes(key)
}
