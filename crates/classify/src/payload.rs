//! Base64 payloads read a window at a time: exact sizes from the length, bytes decoded on demand.
//!
//! Base64 decodes in independent groups of four characters, so the bytes at any decoded offset
//! can be had by decoding only the groups that cover them. Classification relies on this to
//! sniff and measure a payload of any size at a fixed cost.

use std::fmt;
use std::io::{self, BufRead, Read, Seek, SeekFrom};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// Why a payload is not usable base64. The block stays classified; it is just not renderable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Base64Finding {
    /// The character count is not a multiple of four (padding is required).
    Length {
        /// The payload's length in characters.
        chars: usize,
    },
    /// A character outside the standard alphabet, or padding in the wrong place.
    Character {
        /// The offset of the first bad character, in characters from the start.
        offset: usize,
    },
    /// The last symbol carries bits past the payload's end, so it is not canonical base64.
    TrailingBits,
}

impl fmt::Display for Base64Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Base64Finding::Length { chars } => {
                write!(f, "base64 length {chars} is not a multiple of 4")
            }
            Base64Finding::Character { offset } => {
                write!(f, "invalid base64 character at offset {offset}")
            }
            Base64Finding::TrailingBits => f.write_str("base64 has non-canonical trailing bits"),
        }
    }
}

/// A base64 payload as sent, with its exact decoded length worked out from its length and padding.
#[derive(Debug, Clone, Copy)]
pub struct Payload<'a> {
    chars: &'a [u8],
    decoded_len: u64,
}

/// The exact decoded length of a padded base64 string of `chars` characters ending in `padding`
/// `=` signs. Counts the bytes without decoding any of them.
pub fn decoded_len(chars: usize, padding: usize) -> u64 {
    (chars as u64 / 4) * 3 - padding as u64
}

/// Base64 of this many characters or more is decoded in two halves on two threads
/// ([`decode_standard`]).
pub const BESIDE_CHARS: usize = 256 << 10;

/// `data` decoded as standard base64: exactly what `STANDARD.decode(data)` gives, the same
/// bytes or the same error. Base64 decodes in independent groups of four characters, so from
/// [`BESIDE_CHARS`] characters on, the second half of the groups is decoded on a second thread
/// while this one decodes the first. The first half holds no padding, so it decodes alone to
/// the whole's first bytes; on any error the whole is decoded again here, for the error a
/// single pass gives.
pub fn decode_standard(data: &[u8]) -> Result<Vec<u8>, base64::DecodeError> {
    let half = data.len() / 8 * 4;
    if data.len() < BESIDE_CHARS || memchr::memchr(b'=', &data[..half]).is_some() {
        return STANDARD.decode(data);
    }
    let (first, second) = data.split_at(half);
    let first_len = half / 4 * 3;
    let mut out = vec![0; first_len + base64::decoded_len_estimate(second.len())];
    let (head, tail) = out.split_at_mut(first_len);
    let decoded = std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .spawn_scoped(scope, || STANDARD.decode_slice(second, tail))
            .ok()?;
        let head = STANDARD.decode_slice(first, head);
        let tail = worker.join().ok()?;
        Some((head.ok()?, tail.ok()?))
    });
    match decoded {
        Some((head, tail)) if head == first_len => {
            out.truncate(first_len + tail);
            Ok(out)
        }
        // An error, or no second thread: one pass, as `STANDARD.decode` makes it.
        _ => STANDARD.decode(data),
    }
}

impl<'a> Payload<'a> {
    /// Checks a payload's shape (length, padding, first and last groups) without decoding it whole.
    ///
    /// The middle of a large payload is not read here: that would make classifying a 5 MiB image
    /// cost a pass over 5 MiB. Bytes in the middle are checked when something decodes them.
    pub fn new(data: &'a str) -> Result<Payload<'a>, Base64Finding> {
        let chars = data.as_bytes();
        if !chars.len().is_multiple_of(4) {
            return Err(Base64Finding::Length { chars: chars.len() });
        }
        let padding = chars
            .iter()
            .rev()
            .take(2)
            .take_while(|&&c| c == b'=')
            .count();
        let payload = Payload {
            chars,
            decoded_len: decoded_len(chars.len(), padding),
        };
        if let Some(last_group) = chars.len().checked_sub(4) {
            payload.decode_groups(last_group / 4, 1)?;
        }
        Ok(payload)
    }

    /// The exact number of bytes the payload decodes to.
    pub fn decoded_len(&self) -> u64 {
        self.decoded_len
    }

    /// Decodes the bytes `offset..offset + len` (clamped to the payload), touching only the groups
    /// that cover them.
    pub fn decode_range(&self, offset: u64, len: usize) -> Result<Vec<u8>, Base64Finding> {
        let end = (offset + len as u64).min(self.decoded_len);
        if offset >= end {
            return Ok(Vec::new());
        }
        let first_group = offset / 3;
        let last_group = (end - 1) / 3;
        let groups = (last_group - first_group + 1) as usize;
        let mut bytes = self.decode_groups(first_group as usize, groups)?;
        let skip = (offset - first_group * 3) as usize;
        let take = (end - offset) as usize;
        // Cut in place: a whole payload decoded is not copied again.
        bytes.truncate(skip + take);
        bytes.drain(..skip);
        Ok(bytes)
    }

    /// Decodes the first `len` bytes (or all of them when the payload is shorter).
    pub fn decode_prefix(&self, len: usize) -> Result<Vec<u8>, Base64Finding> {
        self.decode_range(0, len)
    }

    fn decode_groups(&self, first: usize, count: usize) -> Result<Vec<u8>, Base64Finding> {
        let start = first * 4;
        let end = (start + count * 4).min(self.chars.len());
        let window = &self.chars[start..end];
        // Padding is only legal in the payload's last group.
        if end < self.chars.len()
            && let Some(at) = window.iter().position(|&c| c == b'=')
        {
            return Err(Base64Finding::Character { offset: start + at });
        }
        decode_standard(window).map_err(|error| match error {
            base64::DecodeError::InvalidByte(at, _) => {
                Base64Finding::Character { offset: start + at }
            }
            base64::DecodeError::InvalidLastSymbol { .. } => Base64Finding::TrailingBits,
            base64::DecodeError::InvalidPadding => Base64Finding::Character {
                offset: start + window.iter().position(|&c| c == b'=').unwrap_or(0),
            },
            base64::DecodeError::InvalidLength(_) => Base64Finding::Length {
                chars: self.chars.len(),
            },
        })
    }

    /// A reader over the decoded bytes that decodes lazily and refuses to decode more than
    /// `max_decoded` bytes in all, so a hostile header cannot make it walk the whole payload.
    pub fn reader(&self, max_decoded: u64) -> PayloadReader<'a> {
        PayloadReader {
            payload: *self,
            position: 0,
            buffer: Vec::new(),
            buffer_start: 0,
            decoded: 0,
            max_decoded,
            finding: None,
        }
    }
}

/// A `Read + BufRead + Seek` view of a payload's decoded bytes, decoding a small window at a time.
#[derive(Debug)]
pub struct PayloadReader<'a> {
    payload: Payload<'a>,
    position: u64,
    buffer: Vec<u8>,
    buffer_start: u64,
    decoded: u64,
    max_decoded: u64,
    finding: Option<Base64Finding>,
}

/// How many bytes the reader decodes at a time.
const WINDOW: usize = 192;

impl PayloadReader<'_> {
    /// The base64 problem met while reading, if any.
    pub fn finding(&self) -> Option<&Base64Finding> {
        self.finding.as_ref()
    }

    fn buffered(&self) -> &[u8] {
        let start = self.position.saturating_sub(self.buffer_start) as usize;
        if self.position < self.buffer_start || start >= self.buffer.len() {
            &[]
        } else {
            &self.buffer[start..]
        }
    }
}

impl Read for PayloadReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for PayloadReader<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.buffered().is_empty() && self.position < self.payload.decoded_len {
            if self.decoded >= self.max_decoded {
                return Err(io::Error::other("decode allowance spent"));
            }
            match self.payload.decode_range(self.position, WINDOW) {
                Ok(bytes) => {
                    self.decoded += bytes.len() as u64;
                    self.buffer = bytes;
                    self.buffer_start = self.position;
                }
                Err(finding) => {
                    self.finding = Some(finding);
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "invalid base64"));
                }
            }
        }
        Ok(self.buffered())
    }

    fn consume(&mut self, amount: usize) {
        self.position += amount as u64;
    }
}

impl Seek for PayloadReader<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(delta) => self.position.checked_add_signed(delta),
            SeekFrom::End(delta) => self.payload.decoded_len.checked_add_signed(delta),
        };
        match target {
            Some(position) => {
                self.position = position;
                Ok(position)
            }
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the payload",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(bytes: &[u8]) -> String {
        STANDARD.encode(bytes)
    }

    /// What may go wrong at one place of a large payload: nothing, a character outside the
    /// alphabet, padding in the middle, a character cut off, or a last symbol with bits left.
    #[derive(Debug, Clone)]
    enum Flaw {
        None,
        Character(usize, u8),
        Padding(usize),
        Cut,
        TrailingBits,
    }

    fn flaw() -> impl proptest::strategy::Strategy<Value = Flaw> {
        use proptest::prelude::*;
        prop_oneof![
            2 => Just(Flaw::None),
            1 => (any::<usize>(), prop_oneof![Just(b'*'), Just(b'\n'), Just(0xC3u8)])
                .prop_map(|(at, c)| Flaw::Character(at, c)),
            1 => any::<usize>().prop_map(Flaw::Padding),
            1 => Just(Flaw::Cut),
            1 => Just(Flaw::TrailingBits),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Decoded in two halves on two threads, a payload of any length around the size that
        /// splits, sound or flawed anywhere, gives what one pass gives: the same bytes or the
        /// same error.
        #[test]
        fn a_payload_decoded_in_halves_is_one_decoded_whole(
            extra in 0usize..4000,
            seed in proptest::prelude::any::<u64>(),
            flaw in flaw(),
        ) {
            let len = BESIDE_CHARS / 4 * 3 - 1000 + extra;
            let mut state = seed | 1;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect();
            let mut text = encode(&bytes).into_bytes();
            match flaw {
                Flaw::None => {}
                Flaw::Character(at, c) => {
                    let at = at % text.len();
                    text[at] = c;
                }
                Flaw::Padding(at) => {
                    let at = at % text.len();
                    text[at] = b'=';
                }
                Flaw::Cut => {
                    text.pop();
                }
                Flaw::TrailingBits => {
                    // The last symbol before any padding, with a bit past the end set.
                    let at = text.iter().rposition(|&c| c != b'=').unwrap_or(0);
                    if text.ends_with(b"=") {
                        text[at] = b'B';
                    }
                }
            }
            proptest::prop_assert_eq!(decode_standard(&text), STANDARD.decode(&text));
        }
    }

    #[test]
    fn decoded_len_is_exact_for_each_padding() {
        for n in 0..10 {
            let bytes = vec![7u8; n];
            let text = encode(&bytes);
            let payload = Payload::new(&text).unwrap();
            assert_eq!(payload.decoded_len(), n as u64);
        }
    }

    #[test]
    fn ranges_decode_only_what_they_cover() {
        let bytes: Vec<u8> = (0..=255).collect();
        let text = encode(&bytes);
        let payload = Payload::new(&text).unwrap();
        assert_eq!(payload.decode_range(100, 7).unwrap(), &bytes[100..107]);
        assert_eq!(payload.decode_range(250, 100).unwrap(), &bytes[250..]);
        assert!(payload.decode_range(300, 4).unwrap().is_empty());
    }

    #[test]
    fn bad_shapes_are_findings() {
        assert_eq!(
            Payload::new("abc").unwrap_err(),
            Base64Finding::Length { chars: 3 }
        );
        assert_eq!(
            Payload::new("ab!d").unwrap_err(),
            Base64Finding::Character { offset: 2 }
        );
        assert_eq!(
            Payload::new("QQ==QUFB")
                .unwrap()
                .decode_prefix(6)
                .unwrap_err(),
            Base64Finding::Character { offset: 2 }
        );
        // "QR==" carries bits past the single byte it decodes to.
        assert!(Payload::new("QR==").is_err());
    }

    #[test]
    fn reader_seeks_and_reads() {
        let bytes: Vec<u8> = (0..1000u32).map(|n| (n % 251) as u8).collect();
        let text = encode(&bytes);
        let payload = Payload::new(&text).unwrap();
        let mut reader = payload.reader(u64::MAX);
        reader.seek(SeekFrom::Start(500)).unwrap();
        let mut out = [0u8; 300];
        reader.read_exact(&mut out).unwrap();
        assert_eq!(&out[..], &bytes[500..800]);
        reader.seek(SeekFrom::Current(-50)).unwrap();
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).unwrap();
        assert_eq!(&rest[..], &bytes[750..]);
    }

    #[test]
    fn reader_stops_at_its_allowance() {
        let text = encode(&[0u8; 4096]);
        let payload = Payload::new(&text).unwrap();
        let mut reader = payload.reader(WINDOW as u64);
        let mut out = Vec::new();
        assert!(reader.read_to_end(&mut out).is_err());
        assert_eq!(out.len(), WINDOW);
    }
}
