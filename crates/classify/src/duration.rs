//! How long a WAV or MP3 plays, read from its header, never from its samples: a WAV's `fmt `
//! and `data` chunks; an MP3's first frame header (past an ID3v2 tag) and, for a variable-rate
//! file, the frame count of its Xing, Info or VBRI header.

use crate::payload::Payload;
use crate::sniff::Sniffed;

/// The most chunks of a WAV read before its `data` chunk is given up on.
const MAX_WAV_CHUNKS: usize = 64;
/// How far past the ID3 tag an MP3's first frame is looked for.
const MP3_SYNC_WINDOW: usize = 4096;

/// How many milliseconds the audio in `data` (base64) plays, rounded up, from its header;
/// `None` when it is not WAV or MP3 as `sniffed` says, its base64 is not sound, or its header
/// cannot be read.
pub fn audio_duration_ms(data: &str, sniffed: Sniffed) -> Option<u64> {
    let payload = Payload::new(data).ok()?;
    match sniffed {
        Sniffed::Wav => wav_ms(&payload),
        Sniffed::Mp3 => mp3_ms(&payload),
        _ => None,
    }
}

fn le32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// Milliseconds, rounded up, of `units` at `per_second` units a second.
fn ms(units: u64, per_second: u64) -> Option<u64> {
    (per_second > 0).then(|| (units.saturating_mul(1000)).div_ceil(per_second))
}

fn wav_ms(payload: &Payload<'_>) -> Option<u64> {
    let total = payload.decoded_len();
    let mut at = 12u64;
    let mut byte_rate = None;
    for _ in 0..MAX_WAV_CHUNKS {
        let head = payload.decode_range(at, 20).ok()?;
        let size = u64::from(le32(&head, 4)?);
        match head.get(..4)? {
            b"fmt " => byte_rate = Some(u64::from(le32(&head, 8 + 8)?)),
            b"data" => {
                // A streamed WAV may leave the size unset: the data runs to the end.
                let size = size.min(total.saturating_sub(at + 8));
                return ms(size, byte_rate?);
            }
            _ => {}
        }
        at += 8 + size + size % 2;
    }
    None
}

/// MPEG-1 and MPEG-2 Layer III bitrates, kbit/s, by the header's index.
const MPEG1_KBPS: [u64; 15] = [
    0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320,
];
const MPEG2_KBPS: [u64; 15] = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];

fn mp3_ms(payload: &Payload<'_>) -> Option<u64> {
    let total = payload.decoded_len();
    let id3 = payload.decode_range(0, 10).ok()?;
    let mut start = 0u64;
    if id3.starts_with(b"ID3") {
        // The tag's size is four 7-bit bytes, after the 10-byte header (and a footer if flagged).
        let size = id3[6..10]
            .iter()
            .fold(0u64, |n, b| (n << 7) | u64::from(b & 0x7F));
        let footer = if id3[5] & 0x10 != 0 { 10 } else { 0 };
        start = 10 + size + footer;
    }
    let window = payload.decode_range(start, MP3_SYNC_WINDOW).ok()?;
    let sync = (0..window.len().saturating_sub(4)).find(|&i| frame(&window[i..]).is_some())?;
    let (kbps, sample_rate, samples, side_info) = frame(&window[sync..])?;
    let audio_start = start + sync as u64;
    // A Xing/Info or VBRI header in the first frame counts the frames of a variable-rate file.
    let xing = 4 + side_info;
    let frames = match window.get(sync + xing..sync + xing + 4) {
        Some(b"Xing" | b"Info") if window.get(sync + xing + 7).is_some_and(|f| f & 1 != 0) => {
            be32(&window, sync + xing + 8)
        }
        _ => match window.get(sync + 36..sync + 40) {
            Some(b"VBRI") => be32(&window, sync + 36 + 14),
            _ => None,
        },
    };
    match frames {
        Some(frames) => ms(u64::from(frames) * samples, sample_rate),
        None => ms((total - audio_start.min(total)) * 8, kbps * 1000),
    }
}

/// A Layer III frame header's bitrate (kbit/s), sample rate, samples per frame and side
/// information length, or `None` when the bytes are no such header.
fn frame(bytes: &[u8]) -> Option<(u64, u64, u64, usize)> {
    let (b1, b2, b3) = (*bytes.get(1)?, *bytes.get(2)?, *bytes.get(3)?);
    if *bytes.first()? != 0xFF || b1 & 0xE0 != 0xE0 {
        return None;
    }
    let version = (b1 >> 3) & 3; // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
    let layer = (b1 >> 1) & 3; // 1: Layer III
    if version == 1 || layer != 1 {
        return None;
    }
    let kbps_table = if version == 3 { MPEG1_KBPS } else { MPEG2_KBPS };
    let kbps = *kbps_table.get(usize::from(b2 >> 4))?;
    let base = *[44_100u64, 48_000, 32_000].get(usize::from((b2 >> 2) & 3))?;
    if kbps == 0 {
        return None;
    }
    let mono = b3 >> 6 == 3;
    let (sample_rate, samples, side_info) = match (version, mono) {
        (3, false) => (base, 1152, 32),
        (3, true) => (base, 1152, 17),
        (2, false) => (base / 2, 576, 17),
        (2, true) => (base / 2, 576, 9),
        (_, false) => (base / 4, 576, 17),
        (_, true) => (base / 4, 576, 9),
    };
    Some((kbps, sample_rate, samples, side_info))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// A 16-bit mono WAV at `rate` Hz holding `samples` samples, with a `LIST` chunk first.
    fn wav(rate: u32, samples: u32) -> Vec<u8> {
        let mut out = b"RIFF\0\0\0\0WAVE".to_vec();
        out.extend_from_slice(b"LIST\x05\0\0\0abcde\0");
        out.extend_from_slice(b"fmt \x10\0\0\0\x01\0\x01\0");
        out.extend_from_slice(&rate.to_le_bytes());
        out.extend_from_slice(&(rate * 2).to_le_bytes());
        out.extend_from_slice(b"\x02\0\x10\0data");
        out.extend_from_slice(&(samples * 2).to_le_bytes());
        out.extend(std::iter::repeat_n(0u8, samples as usize * 2));
        out
    }

    #[test]
    fn a_wav_plays_its_data_over_its_byte_rate() {
        assert_eq!(
            audio_duration_ms(&b64(&wav(8000, 8000)), Sniffed::Wav),
            Some(1000)
        );
        assert_eq!(
            audio_duration_ms(&b64(&wav(16_000, 24_000)), Sniffed::Wav),
            Some(1500)
        );
        assert_eq!(
            audio_duration_ms(&b64(&wav(8000, 1)), Sniffed::Wav),
            Some(1)
        );
        // No fmt chunk before data, a cut header, bad base64: unknown.
        let mut no_fmt = b"RIFF\0\0\0\0WAVEdata\x04\0\0\0\0\0\0\0".to_vec();
        assert_eq!(audio_duration_ms(&b64(&no_fmt), Sniffed::Wav), None);
        no_fmt.truncate(14);
        assert_eq!(audio_duration_ms(&b64(&no_fmt), Sniffed::Wav), None);
        assert_eq!(audio_duration_ms("not base64!", Sniffed::Wav), None);
        assert_eq!(audio_duration_ms(&b64(&wav(8000, 8)), Sniffed::Png), None);
    }

    #[test]
    fn a_constant_rate_mp3_plays_its_bytes_over_its_bitrate() {
        // MPEG-1 Layer III, 128 kbit/s, 44.1 kHz, stereo; 16,000 bytes of frames is one second.
        let mut mp3 = vec![0xFF, 0xFB, 0x90, 0x00];
        mp3.resize(16_000, 0);
        assert_eq!(audio_duration_ms(&b64(&mp3), Sniffed::Mp3), Some(1000));
        // Behind an ID3v2 tag of 20 bytes, the same frames play as long.
        let mut tagged = b"ID3\x04\0\0\0\0\0\x14".to_vec();
        tagged.extend(std::iter::repeat_n(0u8, 20));
        tagged.extend_from_slice(&mp3);
        assert_eq!(audio_duration_ms(&b64(&tagged), Sniffed::Mp3), Some(1000));
        assert_eq!(
            audio_duration_ms(&b64(b"ID3\x04\0\0\0\0\0\0"), Sniffed::Mp3),
            None
        );
    }

    #[test]
    fn a_xing_header_counts_the_frames() {
        // MPEG-1 Layer III mono at 44.1 kHz: side information is 17 bytes; 100 frames of 1,152
        // samples.
        let mut mp3 = vec![0xFF, 0xFB, 0x90, 0xC0];
        mp3.resize(4 + 17, 0);
        mp3.extend_from_slice(b"Xing\0\0\0\x01");
        mp3.extend_from_slice(&100u32.to_be_bytes());
        mp3.resize(2000, 0);
        assert_eq!(
            audio_duration_ms(&b64(&mp3), Sniffed::Mp3),
            Some((100u64 * 1152 * 1000).div_ceil(44_100))
        );
    }
}

#[cfg(test)]
mod fixtures {
    use super::*;
    use base64::Engine as _;

    /// The repository's quarter-second 440 Hz tones, written by Python's wave module and by
    /// libsndfile's MP3 encoder (`tests/fixtures/make_fixtures.py`).
    #[test]
    fn the_real_encoders_tones_last_as_their_headers_say() {
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        let wav = include_bytes!("../tests/fixtures/tone.wav");
        assert_eq!(audio_duration_ms(&b64(wav), Sniffed::Wav), Some(250));
        for mp3 in [
            &include_bytes!("../tests/fixtures/tone.mp3")[..],
            &include_bytes!("../tests/fixtures/tone-id3.mp3")[..],
        ] {
            // The encoder pads the tone with its delay to whole frames: its Xing header counts
            // 6 frames of 576 samples at 8 kHz.
            assert_eq!(audio_duration_ms(&b64(mp3), Sniffed::Mp3), Some(432));
        }
    }
}
