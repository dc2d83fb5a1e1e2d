//! Finds registered secrets in any text, in any spelling, and withholds them.
//!
//! [`Secrets`] holds the secret strings the host knows exactly: bearer tokens, OAuth tokens,
//! client secrets, API keys, the secret parts of hidden uris. [`Secrets::redact`] replaces
//! every occurrence in a text with a marker, however a hostile server spelled it: in another
//! case, percent-encoded, JSON- or HTML-escaped, quoted-printable, in base64 or base32,
//! fullwidth, with invisible characters or separators between its characters.
//!
//! A secret is found by its *skeleton*: the text decoded (up to four layers), compatibility
//! decomposed, lowercased, default-ignorable code points dropped, and only letters and digits
//! kept. Every hit withholds exactly the original bytes that spelled it; a hit inside a
//! base64 or base32 run withholds the whole run.
//!
//! [`crate::Secrets`] shares one set between a session and a host's log writer.

#[cfg(test)]
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, OnceLock};

use aho_corasick::automaton::Automaton;
use aho_corasick::{Anchored, StartKind, dfa, nfa};

pub(crate) mod encoded;
mod scan;
#[cfg(any(test, feature = "spellings"))]
pub mod spellings;
#[cfg(test)]
mod tests;
pub(crate) mod view;

use scan::Matcher;

/// Skeletons shorter than this are not searched.
const MIN_CHARS: usize = 8;
/// Skeletons of letters only or digits only need this many characters.
const MIN_ONE_CLASS: usize = 12;
/// Skeletons need this many distinct characters.
const MIN_DISTINCT: usize = 4;
/// Up to this many skeletons the automaton is a DFA; past it a compact NFA keeps memory small.
const DFA_LIMIT: usize = 5_000;

/// Whether a secret is searched, and if not, why.
///
/// The rule is read on the secret's skeleton (see the crate docs) and counts characters:
/// - fewer than 8 characters: [`Admitted::TooShort`];
/// - fewer than 4 distinct characters, such as `0000000000000000`: [`Admitted::TooCommon`];
/// - digits only and fewer than 12: [`Admitted::TooCommon`], as dates and numbers glue into
///   long digit strings once separators are dropped;
/// - letters only and either fewer than 12, or word-shaped (no four consonants in a row,
///   with `aeiouy` as vowels): [`Admitted::TooCommon`], as words glue into one long string too;
/// - otherwise [`Admitted::Searched`].
///
/// A secret that decodes (`%41...`) has one skeleton per layer, and is searched when any is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Admitted {
    /// Every spelling of the secret is found and withheld.
    Searched,
    /// The skeleton is too short to search without withholding ordinary text.
    TooShort,
    /// The skeleton would also match ordinary text: one class of characters, or a word.
    TooCommon,
}

/// The secrets to withhold, and the automaton that finds them, built on first use.
#[derive(Clone, Default)]
pub(crate) struct Secrets {
    skeletons: BTreeSet<String>,
    /// `None` inside when the automaton could not be built: every text is withheld then.
    matcher: OnceLock<Option<Arc<Matcher>>>,
    /// How many characters the shortest skeleton has, read on first use.
    shortest: OnceLock<usize>,
}

impl fmt::Debug for Secrets {
    // The skeletons are the secrets, so only their number is shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secrets")
            .field("skeletons", &self.skeletons.len())
            .finish_non_exhaustive()
    }
}

impl Secrets {
    /// Registers a secret and says whether it is searched; see [`Admitted`] for the rule.
    pub(crate) fn insert(&mut self, secret: &str) -> Admitted {
        let mut searched = false;
        let mut refused = (0, Admitted::TooShort);
        for skeleton in view::skeletons_of(secret) {
            match admit(&skeleton) {
                Admitted::Searched => {
                    searched = true;
                    if self.skeletons.insert(skeleton) {
                        self.forget_matcher();
                    }
                }
                // The longest refused skeleton gives the reason.
                reason => {
                    let n = skeleton.chars().count();
                    if n >= refused.0 {
                        refused = (n, reason);
                    }
                }
            }
        }
        if searched {
            Admitted::Searched
        } else {
            refused.1
        }
    }

    /// The number of distinct skeletons searched; one secret may add one per decoded layer.
    pub(crate) fn len(&self) -> usize {
        self.skeletons.len()
    }

    /// True when no secret is searched.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.skeletons.is_empty()
    }

    /// Replaces every occurrence of a secret in `text` with `marker`, once per occurrence.
    ///
    /// Occurrences that overlap or touch become one. Text outside occurrences is kept byte for
    /// byte, and a text with none comes back borrowed. A text of 4 GiB or more is withheld whole.
    #[cfg(test)]
    pub(crate) fn redact<'t>(&self, text: &'t str, marker: &str) -> Cow<'t, str> {
        let hits = self.hits(text);
        if hits.is_empty() {
            return Cow::Borrowed(text);
        }
        Cow::Owned(crate::scrub::replaced(text, &hits, marker))
    }

    /// True when `text` holds a secret in any spelling.
    #[cfg(test)]
    pub(crate) fn contains_secret(&self, text: &str) -> bool {
        !self.hits(text).is_empty()
    }

    /// Drops the automaton and what was read from the skeletons, once they change.
    fn forget_matcher(&mut self) {
        self.matcher = OnceLock::new();
        self.shortest = OnceLock::new();
    }

    /// Whether `text` is too short to spell any secret: its skeleton is its letters and digits
    /// alone, fewer than the shortest skeleton's characters. That holds for a text of ASCII
    /// without a byte that begins an escape (`%`, `\`, `&`, `=`), shorter than a base64 or
    /// base32 run ([`encoded::MIN_RUN`]): nothing in it decodes, and each byte reads as at most
    /// one character. A link's name or a short label then builds no automaton (decision 0158).
    fn too_short_for_any(&self, text: &str) -> bool {
        text.len() < encoded::MIN_RUN
            && text
                .bytes()
                .all(|b| b.is_ascii() && !matches!(b, b'%' | b'\\' | b'&' | b'='))
            && text.len()
                < *self.shortest.get_or_init(|| {
                    self.skeletons
                        .iter()
                        .map(|skeleton| skeleton.chars().count())
                        .min()
                        .unwrap_or(usize::MAX)
                })
    }

    pub(crate) fn hits(&self, text: &str) -> Vec<(usize, usize)> {
        if self.skeletons.is_empty() || text.is_empty() || self.too_short_for_any(text) {
            return Vec::new();
        }
        let matcher = self.matcher.get_or_init(|| build(&self.skeletons));
        match (matcher, u32::try_from(text.len())) {
            (Some(matcher), Ok(_)) => scan::find(matcher, text),
            // Failing closed: a text that cannot be searched is withheld.
            _ => vec![(0, text.len())],
        }
    }
}

/// Builds the automaton, or `None` when the skeletons are too many for one.
fn build(skeletons: &BTreeSet<String>) -> Option<Arc<Matcher>> {
    // A long skeleton (the 4 KB path segment of a hidden uri) makes a DFA slow to build
    // (`search::dfa_affordable`); the contiguous NFA serves it.
    let matcher = if skeletons.len() <= DFA_LIMIT
        && crate::search::dfa_affordable(skeletons.iter().map(String::as_str))
    {
        Matcher::Dfa(
            dfa::Builder::new()
                .start_kind(StartKind::Both)
                .build(skeletons)
                .ok()?,
        )
    } else {
        Matcher::Nfa(nfa::contiguous::NFA::new(skeletons).ok()?)
    };
    let both = |aut: &dyn Automaton| {
        aut.start_state(Anchored::No).is_ok() && aut.start_state(Anchored::Yes).is_ok()
    };
    let ok = match &matcher {
        Matcher::Dfa(aut) => both(aut),
        Matcher::Nfa(aut) => both(aut),
    };
    ok.then(|| Arc::new(matcher))
}

/// The admission rule documented on [`Admitted`].
fn admit(skeleton: &str) -> Admitted {
    let n = skeleton.chars().count();
    let distinct = skeleton.chars().collect::<BTreeSet<_>>().len();
    let one_class = |class: fn(char) -> bool| skeleton.chars().all(class);
    if n < MIN_CHARS {
        Admitted::TooShort
    } else if distinct < MIN_DISTINCT
        || (one_class(char::is_numeric) && n < MIN_ONE_CLASS)
        || (one_class(char::is_alphabetic) && (n < MIN_ONE_CLASS || word_shaped(skeleton)))
    {
        Admitted::TooCommon
    } else {
        Admitted::Searched
    }
}

/// True when no four consonants follow one another, as in words and passphrases.
fn word_shaped(letters: &str) -> bool {
    let mut consonants = 0;
    for c in letters.chars() {
        consonants = if "aeiouy".contains(c) {
            0
        } else {
            consonants + 1
        };
        if consonants >= 4 {
            return false;
        }
    }
    true
}

impl Secrets {
    /// Adds every skeleton of `other`.
    pub(crate) fn absorb(&mut self, other: &Secrets) {
        let before = self.skeletons.len();
        self.skeletons.extend(other.skeletons.iter().cloned());
        if self.skeletons.len() != before {
            self.forget_matcher();
        }
    }
}
