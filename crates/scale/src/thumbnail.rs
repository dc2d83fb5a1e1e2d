//! The `image` crate's `thumbnail_exact`, read straight from an 8-bit image's samples.
//!
//! `imageops::thumbnail` averages, for each output pixel, the box of input pixels it covers, and
//! reads each input pixel through `GenericImageView::get_pixel`, one bounds check and one
//! four-channel copy at a time: on a 1400 x 1300 image it took a third of the loop's path. For a
//! downscale every box holds whole pixels, and the average is integer arithmetic on the sums, so
//! the same output can be read from the samples row by row. The box bounds are found with the
//! same `f32` steps the crate takes. Where a box would not hold whole pixels (an upscale, or a
//! side kept), or the image is not 8-bit, the crate's own function runs. A large image's rows are
//! shared between two threads; each output pixel is read on its own, so the bytes are the same.
//! A test checks them against the crate's on random images of every 8-bit colour type.

use image::{DynamicImage, ImageBuffer, Pixel};

/// `image.thumbnail_exact(width, height)`, the same bytes.
pub(crate) fn exact(image: &DynamicImage, width: u32, height: u32) -> DynamicImage {
    fast(image, width, height).unwrap_or_else(|| image.thumbnail_exact(width, height))
}

/// An output image with at least this many samples is made on two threads.
const PARALLEL_SAMPLES: usize = 1 << 18;

/// The fast path, or `None` where it does not apply.
fn fast(image: &DynamicImage, width: u32, height: u32) -> Option<DynamicImage> {
    Some(match image {
        DynamicImage::ImageLuma8(buffer) => {
            DynamicImage::ImageLuma8(downscale(buffer, width, height)?)
        }
        DynamicImage::ImageLumaA8(buffer) => {
            DynamicImage::ImageLumaA8(downscale(buffer, width, height)?)
        }
        DynamicImage::ImageRgb8(buffer) => {
            DynamicImage::ImageRgb8(downscale(buffer, width, height)?)
        }
        DynamicImage::ImageRgba8(buffer) => {
            DynamicImage::ImageRgba8(downscale(buffer, width, height)?)
        }
        _ => return None,
    })
}

/// Where each output row (or column) reads from: `[from, to)` of the input's, as
/// `imageops::thumbnail` finds them; `None` when one holds no whole pixel.
fn boxes(input: u32, output: u32) -> Option<Vec<(u32, u32)>> {
    if input == 0 || output == 0 {
        return None;
    }
    let ratio = input as f32 / output as f32;
    (0..output)
        .map(|at| {
            let startf = at as f32 * ratio;
            let endf = startf + ratio;
            let start = clamp(startf.ceil() as u32, 0, input - 1);
            let end = clamp(endf.ceil() as u32, start, input);
            (start != end).then_some((start, end))
        })
        .collect()
}

/// The crate's own clamp.
fn clamp(a: u32, min: u32, max: u32) -> u32 {
    if a < min {
        min
    } else if a > max {
        max
    } else {
        a
    }
}

/// The downscaled image, or `None` when a box holds no whole pixel.
fn downscale<P>(
    image: &ImageBuffer<P, Vec<u8>>,
    width: u32,
    height: u32,
) -> Option<ImageBuffer<P, Vec<u8>>>
where
    P: Pixel<Subpixel = u8>,
{
    let columns = boxes(image.width(), width)?;
    let rows = boxes(image.height(), height)?;
    let channels = usize::from(P::CHANNEL_COUNT);
    if !(1..=4).contains(&channels) {
        return None;
    }
    let in_row = image.width() as usize * channels;
    let out_row = width as usize * channels;
    let samples: &[u8] = image.as_raw();
    let mut out = vec![0u8; out_row.checked_mul(height as usize)?];
    let fill = |rows: &[(u32, u32)], out: &mut [u8]| match channels {
        1 => fill::<1>(samples, in_row, &columns, rows, out),
        2 => fill::<2>(samples, in_row, &columns, rows, out),
        3 => fill::<3>(samples, in_row, &columns, rows, out),
        _ => fill::<4>(samples, in_row, &columns, rows, out),
    };
    let half = rows.len() / 2;
    if out.len() >= PARALLEL_SAMPLES && half > 0 {
        let (first_rows, second_rows) = rows.split_at(half);
        let (first, second) = out.split_at_mut(half * out_row);
        let made = std::thread::scope(|scope| {
            let other =
                std::thread::Builder::new().spawn_scoped(scope, || fill(second_rows, second));
            fill(first_rows, first);
            match other.map(|handle| handle.join()) {
                Ok(Ok(())) => true,
                // A panic in the other thread is this call's.
                Ok(Err(panic)) => std::panic::resume_unwind(panic),
                // No thread: the crate's own path makes it.
                Err(_) => false,
            }
        });
        if !made {
            return None;
        }
    } else {
        fill(&rows, &mut out);
    }
    ImageBuffer::from_raw(width, height, out)
}

/// The output rows whose boxes are `rows`, of an image of `C` channels whose rows hold
/// `in_row` samples.
fn fill<const C: usize>(
    samples: &[u8],
    in_row: usize,
    columns: &[(u32, u32)],
    rows: &[(u32, u32)],
    out: &mut [u8],
) {
    let out_row = columns.len() * C;
    // A box's rows are summed down first, a sum a sample, and then each box's columns across:
    // summed box by box, every input row was read through the boxes' short, uneven loops.
    // The sums wrap as the crate's do, so the order changes no byte.
    let mut down = vec![0u32; in_row];
    for (&(bottom, top), line) in rows.iter().zip(out.chunks_exact_mut(out_row)) {
        let row = |y: u32| &samples[y as usize * in_row..][..in_row];
        for (sum, &sample) in down.iter_mut().zip(row(bottom)) {
            *sum = u32::from(sample);
        }
        for y in bottom + 1..top {
            for (sum, &sample) in down.iter_mut().zip(row(y)) {
                *sum = sum.wrapping_add(u32::from(sample));
            }
        }
        for (&(left, right), samples) in columns.iter().zip(line.chunks_exact_mut(C)) {
            let mut sum = [0u32; C];
            for pixel in down[left as usize * C..right as usize * C].chunks_exact(C) {
                for c in 0..C {
                    sum[c] = sum[c].wrapping_add(pixel[c]);
                }
            }
            let n = (right - left) * (top - bottom);
            let round = n / 2;
            for c in 0..C {
                samples[c] = (sum[c].wrapping_add(round) / n).min(255) as u8;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{GrayAlphaImage, GrayImage, RgbImage, RgbaImage};
    use mcpl_testkit::SplitMix64;

    fn noise(random: &mut SplitMix64, len: usize) -> Vec<u8> {
        (0..len).map(|_| (random.draw() >> 56) as u8).collect()
    }

    fn image_of(kind: u64, width: u32, height: u32, random: &mut SplitMix64) -> DynamicImage {
        let pixels = (width * height) as usize;
        match kind % 4 {
            0 => GrayImage::from_raw(width, height, noise(random, pixels)).map(DynamicImage::from),
            1 => GrayAlphaImage::from_raw(width, height, noise(random, pixels * 2))
                .map(DynamicImage::from),
            2 => {
                RgbImage::from_raw(width, height, noise(random, pixels * 3)).map(DynamicImage::from)
            }
            _ => RgbaImage::from_raw(width, height, noise(random, pixels * 4))
                .map(DynamicImage::from),
        }
        .expect("a buffer of the image's size")
    }

    /// Random 8-bit images of every colour type, scaled to random sizes (down, up, one side
    /// kept, to one pixel): the bytes are the crate's own, and a downscale takes the fast path.
    #[test]
    fn the_fast_thumbnail_is_the_crate_s_to_the_byte() {
        let mut random = SplitMix64(90);
        let mut fast_ones = 0;
        for case in 0..1500u64 {
            let side = |random: &mut SplitMix64, most: u64| 1 + (random.draw() % most) as u32;
            let (width, height) = (side(&mut random, 90), side(&mut random, 90));
            let (to_width, to_height) = match case % 5 {
                // Sometimes larger than the image: the crate's path.
                0 => (side(&mut random, 120), side(&mut random, 120)),
                1 => (width, 1 + height / 3),
                _ => (
                    side(&mut random, u64::from(width)),
                    side(&mut random, u64::from(height)),
                ),
            };
            let image = image_of(case, width, height, &mut random);
            let ours = exact(&image, to_width, to_height);
            let theirs = image.thumbnail_exact(to_width, to_height);
            assert_eq!(ours, theirs, "{width}x{height} to {to_width}x{to_height}");
            fast_ones += usize::from(fast(&image, to_width, to_height).is_some());
        }
        assert!(fast_ones > 900, "{fast_ones} of 1500 took the fast path");
    }

    /// An image large enough to be made on two threads: the same bytes.
    #[test]
    fn a_large_thumbnail_made_on_two_threads_is_the_crate_s() {
        let mut random = SplitMix64(91);
        for (kind, (width, height), (to_width, to_height)) in [
            (2, (1400, 1300), (1151, 1069)),
            (3, (1031, 777), (600, 451)),
            (0, (2048, 1536), (1568, 1176)),
        ] {
            let image = image_of(kind, width, height, &mut random);
            let ours = fast(&image, to_width, to_height).expect("a downscale");
            assert!(ours.as_bytes().len() >= PARALLEL_SAMPLES);
            assert_eq!(ours, image.thumbnail_exact(to_width, to_height));
        }
    }
}
