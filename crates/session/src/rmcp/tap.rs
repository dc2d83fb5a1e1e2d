//! The tap on an rmcp transport's read side: the raw JSON of the answers the adapter asked
//! for, kept by JSON-RPC id, before rmcp reads the line.

use std::collections::{HashMap, HashSet};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use ::rmcp::model::{NumberOrString, RequestId};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};

/// The most bytes one kept answer may have: rmcp's own line limit on this transport
/// (`rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH`, 16 MiB), so what rmcp takes the tap
/// can keep.
pub const DEFAULT_MAX_MESSAGE: usize = ::rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// The most bytes the tap holds at once, over every answer it keeps (64 MiB).
pub const DEFAULT_MAX_HELD: usize = 64 * 1024 * 1024;

/// The most answers seen while a call's id was not known yet that the tap keeps for it.
const MAX_UNCLAIMED: usize = 64;

/// Records the raw JSON of the answers to the calls the adapter makes, read off an rmcp
/// transport's read side. Give [`Tap::reader`] the child's stdout (any [`AsyncRead`]), and the
/// reader to rmcp as the `(reader, writer)` transport; [`call_tool_raw`](super::call_tool_raw)
/// then finds each answer here by its id.
///
/// It is bounded: it keeps only the answers to ids [`call_tool_raw`](super::call_tool_raw)
/// asked for (and, for the moment between a request's sending and its id's return, the answers
/// that arrive meanwhile), each at most `max_message` bytes, all together at most `max_held`.
/// Lines nobody asked for pass through without being copied. A clone is the same tap.
#[derive(Debug, Clone)]
pub struct Tap {
    state: Arc<Mutex<State>>,
}

impl Default for Tap {
    fn default() -> Tap {
        Tap::new()
    }
}

/// Why the tap has no answer for an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Missed {
    /// No line with that id went through the tap's reader: another transport, say.
    NotSeen,
    /// The answer was longer than the tap keeps.
    TooLarge { limit: usize },
    /// Keeping it would have held more than the tap's whole limit.
    TooMuchHeld { limit: usize },
}

impl std::fmt::Display for Missed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Missed::NotSeen => {
                f.write_str("the tap did not see the answer (is the transport's reader the tap's?)")
            }
            Missed::TooLarge { limit } => {
                write!(f, "the answer was over the tap's limit of {limit} bytes")
            }
            Missed::TooMuchHeld { limit } => {
                write!(f, "the tap already held its limit of {limit} bytes")
            }
        }
    }
}

/// A kept answer, or why there is none.
type Kept = Result<Vec<u8>, Missed>;

#[derive(Debug)]
struct State {
    max_message: usize,
    max_held: usize,
    /// Bytes held in `kept` and `unclaimed`.
    held: usize,
    /// Calls sent whose id is not known yet: while any are, every answer is kept for them.
    armed: usize,
    /// Ids asked for whose answer has not come.
    wanted: HashSet<Key>,
    /// Answers to ids asked for, until taken.
    kept: HashMap<Key, Kept>,
    /// Answers that came while a call's id was not known yet, oldest first.
    unclaimed: Vec<(Key, Kept)>,
    /// How many lines over `max_message` were dropped while listening (their ids unread).
    oversized: u64,
}

impl State {
    fn listening(&self) -> bool {
        self.armed > 0 || !self.wanted.is_empty()
    }

    /// Keeps `line`, the whole answer to `key`, if the limits allow.
    fn admit(&mut self, line: &[u8]) -> Kept {
        if self.held.saturating_add(line.len()) > self.max_held {
            return Err(Missed::TooMuchHeld {
                limit: self.max_held,
            });
        }
        self.held += line.len();
        Ok(line.to_vec())
    }

    fn release(&mut self, kept: &Kept) {
        if let Ok(bytes) = kept {
            self.held -= bytes.len();
        }
    }

    /// An answer to `key` was read whole.
    fn offer(&mut self, key: Key, line: &[u8]) {
        if self.wanted.remove(&key) {
            let kept = self.admit(line);
            if let Some(old) = self.kept.insert(key, kept) {
                self.release(&old);
            }
        } else if self.armed > 0 {
            if self.unclaimed.len() == MAX_UNCLAIMED {
                let (_, old) = self.unclaimed.remove(0);
                self.release(&old);
            }
            let kept = self.admit(line);
            self.unclaimed.push((key, kept));
        }
    }
}

/// A JSON-RPC id as the tap compares them: a number, or a string that is no number (rmcp
/// matches an answer's `"7"` to its request 7, and so does the tap).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Number(i64),
    String(String),
}

impl Key {
    fn of_id(id: &RequestId) -> Key {
        match id {
            NumberOrString::Number(n) => Key::Number(*n),
            NumberOrString::String(s) => Key::of_str(s),
        }
    }

    fn of_str(s: &str) -> Key {
        s.parse()
            .map_or_else(|_| Key::String(s.to_owned()), Key::Number)
    }

    fn of_value(id: &Value) -> Option<Key> {
        match id {
            Value::Number(n) => n.as_i64().map(Key::Number),
            Value::String(s) => Some(Key::of_str(s)),
            _ => None,
        }
    }
}

/// What the tap reads of a line: its id, and whether it is a request or notification.
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<IgnoredAny>,
}

impl Tap {
    /// A tap with the default limits: [`DEFAULT_MAX_MESSAGE`] a message, [`DEFAULT_MAX_HELD`]
    /// in all.
    pub fn new() -> Tap {
        Tap::with_limits(DEFAULT_MAX_MESSAGE, DEFAULT_MAX_HELD)
    }

    /// A tap keeping answers of at most `max_message` bytes, and at most `max_held` bytes at
    /// once.
    pub fn with_limits(max_message: usize, max_held: usize) -> Tap {
        Tap {
            state: Arc::new(Mutex::new(State {
                max_message,
                max_held,
                held: 0,
                armed: 0,
                wanted: HashSet::new(),
                kept: HashMap::new(),
                unclaimed: Vec::new(),
                oversized: 0,
            })),
        }
    }

    /// `inner` (a child's stdout, one end of a pipe) read through this tap: give it to rmcp as
    /// the reader of its `(reader, writer)` transport.
    pub fn reader<R: AsyncRead>(&self, inner: R) -> TapReader<R> {
        TapReader {
            inner,
            max_message: self.lock().max_message,
            tap: self.clone(),
            line: Vec::new(),
            at_start: true,
            keeping: false,
            over: false,
        }
    }

    /// How many bytes of answers the tap holds now.
    pub fn held(&self) -> usize {
        self.lock().held
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the state half-changed in a way that matters here.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Listens for the answer to a request about to be sent, whose id is not known yet.
    pub(crate) fn arm(&self) -> Armed {
        let mut state = self.lock();
        state.armed += 1;
        Armed {
            tap: self.clone(),
            oversized: state.oversized,
            live: true,
        }
    }
}

/// A request about to be sent: every answer is kept until its id is known. Dropped, it stops.
#[derive(Debug)]
pub(crate) struct Armed {
    tap: Tap,
    /// The tap's count of dropped long lines when the request was armed.
    oversized: u64,
    live: bool,
}

impl Armed {
    /// The request's id is `id`: its answer, if it came already, is kept; if not, it will be.
    pub(crate) fn claim(mut self, id: &RequestId) -> Claim {
        let key = Key::of_id(id);
        let mut state = self.tap.lock();
        if let Some(at) = state.unclaimed.iter().position(|(k, _)| *k == key) {
            let (_, kept) = state.unclaimed.remove(at);
            state.kept.insert(key.clone(), kept);
        } else {
            state.wanted.insert(key.clone());
        }
        disarm(&mut state);
        drop(state);
        self.live = false;
        Claim {
            tap: self.tap.clone(),
            key: Some(key),
            oversized: self.oversized,
        }
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        if self.live {
            disarm(&mut self.tap.lock());
        }
    }
}

/// One request fewer waits for its id; with none left, the answers kept for them go.
fn disarm(state: &mut State) {
    state.armed -= 1;
    if state.armed == 0 {
        for (_, kept) in std::mem::take(&mut state.unclaimed) {
            state.release(&kept);
        }
    }
}

/// The answer to one request, kept until taken. Dropped, the tap forgets it.
#[derive(Debug)]
pub(crate) struct Claim {
    tap: Tap,
    key: Option<Key>,
    oversized: u64,
}

impl Claim {
    /// The raw answer, or why the tap has none.
    pub(crate) fn take(mut self) -> Kept {
        let key = self.key.take().expect("a claim is taken once");
        let mut state = self.tap.lock();
        state.wanted.remove(&key);
        match state.kept.remove(&key) {
            Some(kept) => {
                state.release(&kept);
                kept
            }
            // A line too long to keep came meanwhile: its id was never read, but it may well
            // have been this answer.
            None if state.oversized > self.oversized => Err(Missed::TooLarge {
                limit: state.max_message,
            }),
            None => Err(Missed::NotSeen),
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let mut state = self.tap.lock();
            state.wanted.remove(&key);
            if let Some(kept) = state.kept.remove(&key) {
                state.release(&kept);
            }
        }
    }
}

/// An [`AsyncRead`] that passes every byte through as read, and hands the tap each whole line
/// read while it listens. See [`Tap`].
#[derive(Debug)]
pub struct TapReader<R> {
    inner: R,
    tap: Tap,
    max_message: usize,
    /// The line being kept, while `keeping`.
    line: Vec<u8>,
    /// Whether the next byte starts a line.
    at_start: bool,
    /// Whether the current line is being kept.
    keeping: bool,
    /// Whether the current line went over the message limit (its bytes are dropped).
    over: bool,
}

impl<R> TapReader<R> {
    /// Reads `bytes`, the next ones off the stream, for the tap.
    fn scan(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.at_start {
                self.at_start = false;
                self.keeping = self.tap.lock().listening();
                self.over = false;
                self.line.clear();
            }
            let end = memchr::memchr(b'\n', bytes);
            let (part, rest) = bytes.split_at(end.map_or(bytes.len(), |at| at + 1));
            bytes = rest;
            if self.keeping && !self.over {
                if self.line.len() + part.len() > self.max_message {
                    self.over = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(part);
                }
            }
            if end.is_some() {
                self.end_line();
            }
        }
    }

    /// A line ended: an answer's raw JSON goes to the tap.
    fn end_line(&mut self) {
        self.at_start = true;
        if !self.keeping {
            return;
        }
        if self.over {
            self.tap.lock().oversized += 1;
            return;
        }
        let line = std::mem::take(&mut self.line);
        if let Ok(Head {
            id: Some(id),
            method: None,
        }) = serde_json::from_slice::<Head>(&line)
            && let Some(key) = Key::of_value(&id)
        {
            self.tap.lock().offer(key, &line);
        }
        // The buffer is reused for the next kept line, unless it grew large.
        if line.capacity() <= 64 * 1024 {
            self.line = line;
            self.line.clear();
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for TapReader<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let filled = &buf.filled()[before..];
            if filled.is_empty() {
                // The end of the stream: a line without its newline is no message.
                this.line = Vec::new();
                this.at_start = true;
            } else {
                this.scan(filled);
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    /// `lines` read whole through the tap's reader, as rmcp would read them.
    async fn read(tap: &Tap, lines: &[&str]) {
        let text = lines.concat();
        let mut reader = tap.reader(text.as_bytes());
        let mut out = Vec::new();
        reader.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, text.as_bytes(), "every byte passes through as read");
    }

    fn id(n: i64) -> RequestId {
        NumberOrString::Number(n)
    }

    const ANSWER_3: &str = "{\"result\":{\"content\":[]},\"jsonrpc\":\"2.0\",\"id\":3}\n";
    const ANSWER_4: &str = "{\"jsonrpc\":\"2.0\",\"id\":\"4\",\"result\":{\"content\":[4]}}\r\n";
    const NOTIFICATION: &str = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n";
    const REQUEST_3: &str = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n";

    #[tokio::test]
    async fn an_answer_read_after_its_id_is_claimed_is_kept() {
        let tap = Tap::new();
        let claim = tap.arm().claim(&id(3));
        read(&tap, &[NOTIFICATION, REQUEST_3, ANSWER_4, ANSWER_3]).await;
        assert_eq!(tap.held(), ANSWER_3.len());
        assert_eq!(claim.take().unwrap(), ANSWER_3.as_bytes());
        assert_eq!(tap.held(), 0);
    }

    #[tokio::test]
    async fn an_answer_read_before_its_id_is_known_is_kept_for_it() {
        let tap = Tap::new();
        let armed = tap.arm();
        read(&tap, &[ANSWER_3, ANSWER_4]).await;
        assert_eq!(tap.held(), ANSWER_3.len() + ANSWER_4.len());
        // The id, a number, finds the answer whose id is its digits as a string.
        let claim = armed.claim(&id(4));
        assert_eq!(
            tap.held(),
            ANSWER_4.len(),
            "the other answer went once none waits"
        );
        assert_eq!(claim.take().unwrap(), ANSWER_4.as_bytes());
    }

    #[tokio::test]
    async fn lines_no_one_asked_for_are_not_kept() {
        let tap = Tap::new();
        read(&tap, &[ANSWER_3, ANSWER_4]).await;
        assert_eq!(tap.held(), 0);
        let claim = tap.arm().claim(&id(3));
        assert_eq!(claim.take(), Err(Missed::NotSeen));
    }

    #[tokio::test]
    async fn a_dropped_request_forgets_its_answer() {
        let tap = Tap::new();
        drop(tap.arm());
        let claim = tap.arm().claim(&id(3));
        read(&tap, &[ANSWER_3]).await;
        assert_eq!(tap.held(), ANSWER_3.len());
        drop(claim);
        assert_eq!(tap.held(), 0);
        read(&tap, &[ANSWER_3]).await;
        assert_eq!(tap.held(), 0, "nothing listens any more");
    }

    #[tokio::test]
    async fn an_answer_over_the_message_limit_is_missed_for_its_size() {
        let tap = Tap::with_limits(ANSWER_3.len() - 1, 1 << 20);
        let claim = tap.arm().claim(&id(3));
        read(&tap, &[ANSWER_3]).await;
        assert_eq!(tap.held(), 0);
        assert_eq!(
            claim.take(),
            Err(Missed::TooLarge {
                limit: ANSWER_3.len() - 1
            })
        );
        // A later miss is not put down to that old long line.
        let claim = tap.arm().claim(&id(5));
        assert_eq!(claim.take(), Err(Missed::NotSeen));
    }

    #[tokio::test]
    async fn the_tap_holds_no_more_than_its_limit() {
        let tap = Tap::with_limits(1 << 20, ANSWER_3.len() + 1);
        let three = tap.arm().claim(&id(3));
        let four = tap.arm().claim(&id(4));
        read(&tap, &[ANSWER_3, ANSWER_4]).await;
        assert_eq!(tap.held(), ANSWER_3.len());
        assert_eq!(
            four.take(),
            Err(Missed::TooMuchHeld {
                limit: ANSWER_3.len() + 1
            })
        );
        assert_eq!(three.take().unwrap(), ANSWER_3.as_bytes());
    }

    #[tokio::test]
    async fn a_line_split_across_reads_is_kept_whole() {
        let tap = Tap::new();
        let claim = tap.arm().claim(&id(3));
        let (mut writer, reader) = tokio::io::duplex(7);
        let mut reader = tap.reader(reader);
        let reading = tokio::spawn(async move {
            let mut out = Vec::new();
            reader.read_to_end(&mut out).await.unwrap();
            out
        });
        tokio::io::AsyncWriteExt::write_all(&mut writer, ANSWER_3.as_bytes())
            .await
            .unwrap();
        drop(writer);
        assert_eq!(reading.await.unwrap(), ANSWER_3.as_bytes());
        assert_eq!(claim.take().unwrap(), ANSWER_3.as_bytes());
    }
}
