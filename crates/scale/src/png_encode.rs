//! The PNG the `image` crate writes for an image, counted before it is built and then built in
//! one buffer of its exact size (decision 0090).
//!
//! `DynamicImage::write_to(.., ImageFormat::Png)` runs the `png` crate's `Writer::write_image_data`
//! with fdeflate's fast compressor and the adaptive filter: each row is filtered with whichever
//! of Up, Sub, Avg and Paeth gives the smallest sum of the bytes read as signed, the filter byte
//! and the row go to the compressor in one call, and when the compressed stream is longer than
//! stored blocks would be, the rows are written again as stored blocks. It grows both streams in
//! memory at once and then copies the one it keeps into the output: for an image of noise, four
//! times the image's size, and all of it spent for nothing when the image then turns out too
//! large to send. Here the same rows are counted first ([`count`]), holding one row: their
//! compressed length is the sum of fdeflate's code lengths for them, checked once against the
//! compressor (decision 0166). An image that fits is then compressed into a buffer of the
//! counted size, by the compressor the count chose, the `png` crate frames it into a buffer of
//! the counted size, and that goes into base64, a large one in two halves on two threads
//! ([`write_base64`]). The tests check the bytes against the
//! `image` crate's own for every colour type, so a change in either crate that moves them fails.

use std::io::{self, Cursor};
use std::ops::Range;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use image::{ColorType, DynamicImage};

use crate::deflate_len::{Counter, Lengths};

/// The PNG signature, the IHDR chunk (12 bytes of framing and 13 of data) and the IEND chunk.
const FIXED: u64 = 8 + 12 + 13 + 12;
/// The framing of one chunk: length, type and CRC.
const CHUNK_FRAMING: u64 = 12;
/// The most data the encoder puts in one IDAT chunk.
const MAX_IDAT: usize = (u32::MAX >> 1) as usize;
/// The most data in one stored deflate block.
const STORED_BLOCK: u64 = u16::MAX as u64;

/// What the `image` crate's PNG encoder would write for an image: its length, and which zlib
/// stream it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counted {
    /// The bytes of the whole PNG.
    pub(crate) len: u64,
    /// The bytes of its zlib stream.
    zlib: u64,
    /// Whether that stream is stored blocks (the compressed one was longer).
    stored: bool,
}

/// The PNG `image.write_to(.., ImageFormat::Png)` would write, counted without building it, or
/// `None` for a colour type the count does not cover (the caller then encodes to find out).
pub(crate) fn count(image: &DynamicImage) -> Option<Counted> {
    let layout = Layout::of(image)?;
    // The compressor's length is a sum of its code lengths (decision 0166); where its table is
    // not the one checked, the rows are compressed to count.
    let compressed = match Lengths::of_fdeflate() {
        Some(lengths) => lengths.stream_len(layout.filtered_bits(lengths)),
        None => {
            let mut compressor = fdeflate::Compressor::new(Counter(0)).ok()?;
            layout
                .filtered_rows(|current| compressor.write_data(current))
                .ok()?;
            compressor.finish().ok()?.0
        }
    };
    let raw = layout.raw_len();
    let threshold =
        fdeflate::StoredOnlyCompressor::<()>::compressed_size(usize::try_from(raw).ok()?) as u64;
    let stored = compressed > threshold;
    let zlib = if stored { stored_len(raw) } else { compressed };
    let idat_chunks = zlib.div_ceil(MAX_IDAT as u64).max(1);
    Some(Counted {
        len: FIXED + idat_chunks * CHUNK_FRAMING + zlib,
        zlib,
        stored,
    })
}

/// The PNG [`count`] counted, as base64 in a string of exactly its length: the same bytes as
/// `image.write_to(.., ImageFormat::Png)`, the zlib stream and the framed PNG each in a buffer
/// sized once.
pub(crate) fn write_base64(image: &DynamicImage, counted: Counted) -> io::Result<String> {
    let layout = Layout::of(image)
        .ok_or_else(|| io::Error::other("the colour type is not one the count covers"))?;
    let capacity = usize::try_from(counted.zlib).map_err(io::Error::other)?;
    let zlib = if counted.stored {
        let mut compressor =
            fdeflate::StoredOnlyCompressor::new(Cursor::new(Vec::with_capacity(capacity)))?;
        // The encoder's fallback: each row unfiltered, behind filter byte 0.
        layout.rows(|row| {
            compressor.write_data(&[0])?;
            compressor.write_data(row)
        })?;
        compressor.finish()?.into_inner()
    } else {
        let mut compressor = fdeflate::Compressor::new(Vec::with_capacity(capacity))?;
        layout.filtered_rows(|current| compressor.write_data(current))?;
        compressor.finish()?
    };
    let len = usize::try_from(counted.len).map_err(io::Error::other)?;
    let mut png = Vec::with_capacity(len);
    let mut encoder = png::Encoder::new(&mut png, image.width(), image.height());
    encoder.set_color(layout.color);
    encoder.set_depth(layout.depth);
    let mut writer = encoder.write_header().map_err(io::Error::other)?;
    for chunk in zlib.chunks(MAX_IDAT) {
        writer
            .write_chunk(png::chunk::IDAT, chunk)
            .map_err(io::Error::other)?;
    }
    writer.finish().map_err(io::Error::other)?;
    // The stream is framed; its buffer goes before the string is made.
    drop(zlib);
    Ok(base64_beside(&png))
}

/// `bytes` in standard base64, in a string of exactly its length. From [`BESIDE_BYTES`] on,
/// the second half (from a whole group of three bytes) is encoded on a second thread while
/// the first is encoded here, each into its part of one buffer; base64 reads each group alone,
/// so the halves side by side are the string one pass makes. The buffer is then checked as
/// UTF-8 once, to be a string, and no copy is made. Without a second thread, or should a half
/// not encode, the whole is encoded in one pass.
fn base64_beside(bytes: &[u8]) -> String {
    if (bytes.len() as u64) < BESIDE_BYTES {
        return STANDARD.encode(bytes);
    }
    let chars = bytes.len().div_ceil(3) * 4;
    let split = bytes.len() / 6 * 3;
    let (first, second) = bytes.split_at(split);
    let mut out = vec![0; chars];
    let (head, tail) = out.split_at_mut(split / 3 * 4);
    let (head_len, tail_len) = (head.len(), tail.len());
    let encoded = std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .spawn_scoped(scope, || STANDARD.encode_slice(second, tail))
            .ok()?;
        let head = STANDARD.encode_slice(first, head);
        Some((head.ok()?, worker.join().ok()?.ok()?))
    });
    // Each half fills its part exactly, or the buffer is not used.
    match encoded
        .filter(|&lens| lens == (head_len, tail_len))
        .map(|_| String::from_utf8(out))
    {
        Some(Ok(out)) => out,
        _ => STANDARD.encode(bytes),
    }
}

/// An image's samples as the encoder reads them.
struct Layout<'i> {
    bytes: &'i [u8],
    /// Bytes per row, without the filter byte.
    row_len: usize,
    /// Bytes per pixel.
    bpp: usize,
    /// Whether samples are 16-bit (held native-endian, written big-endian).
    wide: bool,
    color: png::ColorType,
    depth: png::BitDepth,
}

impl<'i> Layout<'i> {
    fn of(image: &'i DynamicImage) -> Option<Layout<'i>> {
        use png::{BitDepth, ColorType as Png};
        let (color, depth, bpp) = match image.color() {
            ColorType::L8 => (Png::Grayscale, BitDepth::Eight, 1),
            ColorType::La8 => (Png::GrayscaleAlpha, BitDepth::Eight, 2),
            ColorType::Rgb8 => (Png::Rgb, BitDepth::Eight, 3),
            ColorType::Rgba8 => (Png::Rgba, BitDepth::Eight, 4),
            ColorType::L16 => (Png::Grayscale, BitDepth::Sixteen, 2),
            ColorType::La16 => (Png::GrayscaleAlpha, BitDepth::Sixteen, 4),
            ColorType::Rgb16 => (Png::Rgb, BitDepth::Sixteen, 6),
            ColorType::Rgba16 => (Png::Rgba, BitDepth::Sixteen, 8),
            _ => return None,
        };
        let row_len = usize::try_from(image.width()).ok()?.checked_mul(bpp)?;
        let bytes = image.as_bytes();
        let height = usize::try_from(image.height()).ok()?;
        (row_len > 0 && bytes.len() == row_len.checked_mul(height)?).then_some(Layout {
            bytes,
            row_len,
            bpp,
            wide: depth == BitDepth::Sixteen,
            color,
            depth,
        })
    }

    /// The bytes the encoder filters: a filter byte and a row, for each row.
    fn raw_len(&self) -> u64 {
        (self.row_len as u64 + 1) * self.height() as u64
    }

    /// Each row as the encoder has it: samples wider than a byte reordered big-endian.
    fn rows(&self, mut each: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        let mut wide = vec![0; if self.wide { self.row_len } else { 0 }];
        (0..self.height()).try_for_each(|at| each(self.row(at, &mut wide)))
    }

    /// The image's rows.
    fn height(&self) -> usize {
        self.bytes.len() / self.row_len
    }

    /// Row `at` as the encoder has it: samples wider than a byte reordered big-endian into
    /// `wide`.
    fn row<'r>(&'r self, at: usize, wide: &'r mut [u8]) -> &'r [u8] {
        let row = &self.bytes[at * self.row_len..(at + 1) * self.row_len];
        if !self.wide {
            return row;
        }
        for (out, pair) in wide.chunks_exact_mut(2).zip(row.chunks_exact(2)) {
            out[0] = pair[1];
            out[1] = pair[0];
        }
        wide
    }

    /// The bits fdeflate's compressor writes for the filtered rows, a `write_data` call a row:
    /// a sum over the rows, and a row's filter reads only it and the row above. So an image
    /// whose filtered rows hold [`BESIDE_BYTES`] or more has its two halves filtered and
    /// counted on two threads (decision 0166).
    fn filtered_bits(&self, lengths: &Lengths) -> u64 {
        let rows = self.height();
        let count = |range: Range<usize>| {
            let mut bits = 0;
            // Counting cannot fail.
            let _ = self.filtered_rows_in(range, |current| {
                bits += lengths.data_bits(current);
                Ok(())
            });
            bits
        };
        if self.raw_len() < BESIDE_BYTES {
            return count(0..rows);
        }
        let middle = rows / 2;
        std::thread::scope(|scope| {
            match std::thread::Builder::new().spawn_scoped(scope, || count(middle..rows)) {
                Ok(second) => {
                    let first = count(0..middle);
                    match second.join() {
                        Ok(second) => first + second,
                        Err(panic) => std::panic::resume_unwind(panic),
                    }
                }
                // No thread: the rows are counted here.
                Err(_) => count(0..rows),
            }
        })
    }

    /// Each row of `range`, its filter byte and filtered bytes in one slice, as
    /// [`Layout::filtered_rows`] gives the same rows.
    fn filtered_rows_in(
        &self,
        range: Range<usize>,
        mut each: impl FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut current = vec![0; self.row_len + 1];
        let mut previous = vec![0; self.row_len];
        let mut wide = vec![0; if self.wide { self.row_len } else { 0 }];
        if let Some(above) = range.start.checked_sub(1) {
            previous.copy_from_slice(self.row(above, &mut wide));
        }
        for at in range {
            self.filter_row(&mut previous, self.row(at, &mut wide), &mut current);
            each(&current)?;
        }
        Ok(())
    }

    /// Each row's filter byte and filtered bytes, in one slice as the encoder hands them to the
    /// compressor.
    fn filtered_rows(&self, each: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        if self.raw_len() >= BESIDE_BYTES {
            self.filtered_rows_beside(each)
        } else {
            self.filtered_rows_here(each)
        }
    }

    /// [`Layout::filtered_rows`] on this thread alone.
    fn filtered_rows_here(&self, each: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        self.filtered_rows_in(0..self.height(), each)
    }

    /// Writes `row`'s filter byte and filtered bytes into `out`, given the row before it in
    /// `previous`, which then holds `row`.
    fn filter_row(&self, previous: &mut [u8], row: &[u8], out: &mut [u8]) {
        out[0] = adaptive_filter(self.bpp, previous, row, &mut out[1..]) as u8;
        previous.copy_from_slice(row);
    }

    /// [`Layout::filtered_rows`] with the rows filtered on a second thread, a chunk of rows at
    /// a time, while this one hands each row to `each` as it would: the same rows in the same
    /// calls, so the compressor writes the same bytes, in the time the slower of the two takes.
    /// At most [`CHUNKS_IN_FLIGHT`] chunks wait; they are used again.
    fn filtered_rows_beside(
        &self,
        mut each: impl FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let stride = self.row_len + 1;
        let rows_per_chunk = (CHUNK_BYTES / stride).max(1);
        let (full, filled) = std::sync::mpsc::sync_channel::<Vec<u8>>(CHUNKS_IN_FLIGHT);
        let (spent, reused) = std::sync::mpsc::channel::<Vec<u8>>();
        std::thread::scope(|scope| {
            let filter = move || {
                let mut previous = vec![0; self.row_len];
                let mut chunk: Vec<u8> = Vec::new();
                let sent = self.rows(|row| {
                    if chunk.is_empty() {
                        chunk = reused
                            .try_recv()
                            .unwrap_or_else(|_| Vec::with_capacity(rows_per_chunk * stride));
                        chunk.clear();
                    }
                    let at = chunk.len();
                    chunk.resize(at + stride, 0);
                    self.filter_row(&mut previous, row, &mut chunk[at..]);
                    if chunk.len() >= rows_per_chunk * stride {
                        // The reader gone (it met an error) ends the filtering.
                        full.send(std::mem::take(&mut chunk))
                            .map_err(|_| io::Error::other("the reader stopped"))?;
                    }
                    Ok(())
                });
                if sent.is_ok() && !chunk.is_empty() {
                    let _ = full.send(chunk);
                }
            };
            let worker = match std::thread::Builder::new().spawn_scoped(scope, filter) {
                Ok(worker) => worker,
                // No thread: the rows are filtered here.
                Err(_) => return None,
            };
            let read = (|| {
                for chunk in filled.iter() {
                    for row in chunk.chunks_exact(stride) {
                        each(row)?;
                    }
                    let _ = spent.send(chunk);
                }
                Ok(())
            })();
            // The channel is closed before the join, so a filter still sending ends.
            drop(filled);
            if let Err(panic) = worker.join() {
                std::panic::resume_unwind(panic);
            }
            Some(read)
        })
        .unwrap_or_else(|| self.filtered_rows_here(each))
    }
}

/// An image whose filtered rows hold at least this many bytes is filtered on a second thread
/// ([`Layout::filtered_rows_beside`]).
const BESIDE_BYTES: u64 = 1 << 20;
/// About how many bytes of filtered rows go from the filtering thread at a time.
const CHUNK_BYTES: usize = 64 << 10;
/// How many chunks may wait for the compressor.
const CHUNKS_IN_FLIGHT: usize = 4;

/// The length of the zlib stream fdeflate's stored-only compressor writes for `raw` bytes: the
/// two-byte header, a five-byte header per block of at most 65,535 bytes (at least one block),
/// the bytes, and the Adler-32.
fn stored_len(raw: u64) -> u64 {
    2 + 5 * raw.div_ceil(STORED_BLOCK).max(1) + raw + 4
}

/// The row filters, numbered as in the PNG format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Filter {
    Sub = 1,
    Up = 2,
    Avg = 3,
    Paeth = 4,
}

/// The encoder's adaptive choice: Up, Sub, Avg and Paeth in that order, each kept when its cost
/// is at most the best so far (so a later filter wins a tie), stopping at a cost of zero.
fn adaptive_filter(bpp: usize, previous: &[u8], current: &[u8], output: &mut [u8]) -> Filter {
    let mut best = u64::MAX;
    let mut choice = Filter::Up;
    for filter in [Filter::Up, Filter::Sub, Filter::Avg, Filter::Paeth] {
        apply(filter, bpp, previous, current, output);
        let cost = cost(output);
        if cost <= best {
            best = cost;
            choice = filter;
            if cost == 0 {
                return choice;
            }
        }
    }
    if choice != Filter::Paeth {
        apply(choice, bpp, previous, current, output);
    }
    choice
}

/// The sum of a filtered row's bytes read as signed: what the adaptive choice makes smallest.
/// Each 256 bytes are summed in 16 bits (each byte adds at most 128), so the loop takes sixteen
/// bytes at a time. Summed in 64 bits, it took four, and choosing a row's filter took over three
/// times as long.
fn cost(filtered: &[u8]) -> u64 {
    filtered
        .chunks(256)
        .map(|chunk| {
            let part: u16 = chunk
                .iter()
                .map(|&b| u16::from((b as i8).unsigned_abs()))
                .sum();
            u64::from(part)
        })
        .sum()
}

/// One filter over a row: `a` is the byte one pixel to the left (zero before the first pixel),
/// `b` the byte above, `c` the byte above and to the left (zero before the first pixel).
fn apply(filter: Filter, bpp: usize, previous: &[u8], current: &[u8], output: &mut [u8]) {
    let bpp = bpp.min(current.len());
    let (head, tail) = output.split_at_mut(bpp);
    let left = current.iter().zip(previous);
    let rest = current[bpp..].iter().zip(&previous[bpp..]);
    match filter {
        Filter::Sub => {
            head.copy_from_slice(&current[..bpp]);
            for (out, (&x, &a)) in tail.iter_mut().zip(current[bpp..].iter().zip(current)) {
                *out = x.wrapping_sub(a);
            }
        }
        Filter::Up => {
            for (out, (&x, &b)) in output.iter_mut().zip(left) {
                *out = x.wrapping_sub(b);
            }
        }
        Filter::Avg => {
            for (out, (&x, &b)) in head.iter_mut().zip(left) {
                *out = x.wrapping_sub(b / 2);
            }
            for (out, ((&x, &b), &a)) in tail.iter_mut().zip(rest.zip(current)) {
                *out = x.wrapping_sub(((u16::from(a) + u16::from(b)) / 2) as u8);
            }
        }
        Filter::Paeth => {
            // With `a` and `c` zero the predictor is `b`.
            for (out, (&x, &b)) in head.iter_mut().zip(left) {
                *out = x.wrapping_sub(b);
            }
            for (out, ((&x, &b), (&a, &c))) in
                tail.iter_mut().zip(rest.zip(current.iter().zip(previous)))
            {
                *out = x.wrapping_sub(paeth(a, b, c));
            }
        }
    }
}

/// The Paeth predictor as the PNG format defines it.
fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = i16::from(a) + i16::from(b) - i16::from(c);
    let (pa, pb, pc) = (
        (p - i16::from(a)).abs(),
        (p - i16::from(b)).abs(),
        (p - i16::from(c)).abs(),
    );
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use image::{DynamicImage, ImageBuffer, ImageFormat, Luma, LumaA, Rgb, Rgba};

    use base64::Engine as _;

    use super::{BESIDE_BYTES, Layout, base64_beside, count, write_base64};

    /// A xorshift stream of bytes.
    struct Noise(u64);

    impl Noise {
        fn next(&mut self) -> u8 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 24) as u8
        }
    }

    /// A sample from a pixel's position.
    type Pattern = Box<dyn FnMut(u32, u32) -> u8>;

    /// What the `image` crate writes, as `Scaler::scale` had it write.
    fn written(image: &DynamicImage) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        image
            .write_to(&mut out, ImageFormat::Png)
            .expect("the image encodes");
        out.into_inner()
    }

    /// The count and the bytes built from it are the `image` crate's, and the string is built
    /// at its final size.
    fn assert_same(image: &DynamicImage, what: &str) {
        let expected = written(image);
        let counted = count(image).expect("the colour type is covered");
        assert_eq!(counted.len, expected.len() as u64, "{what}: the count");
        let data = write_base64(image, counted).expect("the image is written");
        assert_eq!(data.capacity(), data.len(), "{what}: the string's size");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&data)
            .expect("the base64 decodes");
        assert!(bytes == expected, "{what}: the bytes differ");
    }

    /// Base64 made in two halves is the one pass's, in a string of its exact size, whatever
    /// the length's remainder by three, below the threshold and from it on.
    #[test]
    fn base64_in_halves_is_one_pass() {
        let mut noise = Noise(7);
        let bytes: Vec<u8> = (0..BESIDE_BYTES + 7).map(|_| noise.next()).collect();
        let at = BESIDE_BYTES as usize;
        for len in [0, 1, 2, 3, 1000, at - 1, at, at + 1, at + 2, at + 3, at + 7] {
            let data = base64_beside(&bytes[..len]);
            let expected = base64::engine::general_purpose::STANDARD.encode(&bytes[..len]);
            assert!(data == expected, "{len} bytes: the base64 differs");
            assert_eq!(
                data.capacity(),
                data.len(),
                "{len} bytes: the string's size"
            );
        }
    }

    /// An image of each kind the count covers, `width`×`height`, its samples made by `sample`
    /// from the pixel's position and the channel.
    fn every_colour(
        width: u32,
        height: u32,
        sample: &mut dyn FnMut(u32, u32) -> u8,
    ) -> Vec<DynamicImage> {
        let mut images = Vec::new();
        let mut wide = |x, y| u16::from(sample(x, y)) << 8 | u16::from(sample(y, x));
        let mut buffers: Vec<Vec<u16>> = Vec::new();
        for channels in [1, 2, 3, 4] {
            buffers.push(
                (0..width * height * channels)
                    .map(|i| wide(i % (width * channels), i / (width * channels)))
                    .collect(),
            );
        }
        let narrow =
            |buffer: &Vec<u16>| buffer.iter().map(|&s| (s >> 8) as u8).collect::<Vec<u8>>();
        images.push(DynamicImage::ImageLuma8(
            ImageBuffer::<Luma<u8>, _>::from_raw(width, height, narrow(&buffers[0]))
                .expect("sized"),
        ));
        images.push(DynamicImage::ImageLumaA8(
            ImageBuffer::<LumaA<u8>, _>::from_raw(width, height, narrow(&buffers[1]))
                .expect("sized"),
        ));
        images.push(DynamicImage::ImageRgb8(
            ImageBuffer::<Rgb<u8>, _>::from_raw(width, height, narrow(&buffers[2])).expect("sized"),
        ));
        images.push(DynamicImage::ImageRgba8(
            ImageBuffer::<Rgba<u8>, _>::from_raw(width, height, narrow(&buffers[3]))
                .expect("sized"),
        ));
        images.push(DynamicImage::ImageLuma16(
            ImageBuffer::<Luma<u16>, _>::from_raw(width, height, buffers[0].clone())
                .expect("sized"),
        ));
        images.push(DynamicImage::ImageLumaA16(
            ImageBuffer::<LumaA<u16>, _>::from_raw(width, height, buffers[1].clone())
                .expect("sized"),
        ));
        images.push(DynamicImage::ImageRgb16(
            ImageBuffer::<Rgb<u16>, _>::from_raw(width, height, buffers[2].clone()).expect("sized"),
        ));
        images.push(DynamicImage::ImageRgba16(
            ImageBuffer::<Rgba<u16>, _>::from_raw(width, height, buffers[3].clone())
                .expect("sized"),
        ));
        images
    }

    /// Edges that make each filter win somewhere.
    fn stripes(x: u32, y: u32) -> u8 {
        if (x / 5 + y / 3).is_multiple_of(2) {
            200
        } else {
            (x * y) as u8
        }
    }

    #[test]
    fn the_count_and_the_bytes_are_the_encoders_for_every_colour_type() {
        let mut noise = Noise(0x2545_F491_4F6C_DD1D);
        let mut levels = Noise(0x0123_4567_89AB_CDEF);
        let mut patterns: Vec<(&str, Pattern)> = vec![
            // Incompressible: the encoder falls back to stored blocks.
            ("noise", Box::new(move |_, _| noise.next())),
            // Compressible: the fast compressor's stream is kept.
            ("gradient", Box::new(|x, y| (x / 3 + y) as u8)),
            // One colour: a filter costs nothing and the search stops early.
            ("flat", Box::new(|_, _| 7)),
            // Few levels at random: many ties between the Paeth predictor's neighbours.
            ("levels", Box::new(move |_, _| levels.next() % 3 * 40)),
            ("stripes", Box::new(stripes)),
        ];
        for (width, height) in [(1, 1), (7, 3), (8, 8), (9, 17), (33, 5), (100, 40)] {
            for (name, sample) in &mut patterns {
                for image in every_colour(width, height, sample.as_mut()) {
                    assert_same(
                        &image,
                        &format!("{name} {width}x{height} {:?}", image.color()),
                    );
                }
            }
        }
    }

    #[test]
    fn a_rows_cost_is_the_sum_of_its_bytes_read_as_signed() {
        let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
        // 0x80 reads as -128, the most a byte adds: 513 of them cross two 256-byte sums.
        let rows = [
            vec![0x80; 513],
            (0..1000).map(|_| noise.next()).collect(),
            vec![0xFF; 3],
            Vec::new(),
        ];
        for row in rows {
            let plain: u64 = row
                .iter()
                .map(|&b| u64::from((b as i8).unsigned_abs()))
                .sum();
            assert_eq!(super::cost(&row), plain, "a row of {} bytes", row.len());
        }
    }

    #[test]
    fn the_stored_fallback_is_followed_at_block_boundaries() {
        // Rows of 257 bytes (a filter byte and 256 samples): 255 rows are 65,535 bytes, one
        // stored block exactly, and 256 rows just over it.
        for height in [254, 255, 256] {
            let mut noise = Noise(u64::from(height) * 0x9E37_79B9);
            for image in every_colour(256, height, &mut |_, _| noise.next())
                .into_iter()
                .take(1)
            {
                assert_same(&image, &format!("noise, height {height}"));
            }
            let gradient = every_colour(256, height, &mut |x, y| (x + y) as u8);
            assert_same(&gradient[0], &format!("gradient, height {height}"));
        }
    }

    /// Images whose rows are filtered on a second thread: the same count and bytes, for 8-bit
    /// grey and 16-bit grey with alpha (rows as they are and reordered), compressed and stored.
    #[test]
    fn rows_filtered_beside_give_the_encoders_bytes() {
        let mut noise = Noise(0x5DEE_CE66_D1CE_4E5B);
        let mut patterns: Vec<(&str, Pattern)> = vec![
            ("noise", Box::new(move |_, _| noise.next())),
            ("gradient", Box::new(|x, y| (x / 3 + y) as u8)),
            ("stripes", Box::new(stripes)),
        ];
        for (name, sample) in &mut patterns {
            let images = every_colour(1030, 1020, sample.as_mut());
            for image in [&images[0], &images[5]] {
                let layout = Layout::of(image).expect("a covered colour type");
                assert!(layout.raw_len() >= BESIDE_BYTES, "{name}: filtered beside");
                assert_same(image, &format!("{name} {:?}", image.color()));
            }
        }
    }

    #[test]
    fn an_image_the_count_does_not_cover_is_left_to_the_encoder() {
        let image = DynamicImage::ImageRgb32F(image::Rgb32FImage::new(2, 2));
        assert_eq!(count(&image), None);
    }
}
