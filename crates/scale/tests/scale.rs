//! Images scaled to fit: each case the limits name, each format, the decoding limits, and what
//! stays as it was.

use std::io::Cursor;

use base64::Engine as _;
use image::{DynamicImage, ImageFormat, RgbImage, RgbaImage};
use mcpl_classify::{Dimensions, Media, Sniffed};
use mcpl_lanes::markers::size_label;
use mcpl_lanes::{RequestLimits, Route, RouteId};
use mcpl_scale::{Fit, ScaleError, Scaler};
use serde_json::json;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Pixels that do not compress: a xorshift stream.
fn noise(width: u32, height: u32) -> RgbImage {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    RgbImage::from_fn(width, height, |_, _| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        image::Rgb([seed as u8, (seed >> 8) as u8, (seed >> 16) as u8])
    })
}

fn encoded(image: DynamicImage, format: ImageFormat) -> String {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, format).unwrap();
    b64(&out.into_inner())
}

fn png(width: u32, height: u32) -> String {
    encoded(
        DynamicImage::ImageRgb8(RgbImage::new(width, height)),
        ImageFormat::Png,
    )
}

/// What classification reads of a base64 image: its type and dimensions from the header.
fn read(data: &str) -> (Sniffed, Dimensions) {
    let media = Media::inspect(data, None);
    (media.sniffed.unwrap(), media.dimensions.unwrap())
}

/// The decoded bytes of a base64 text.
fn decoded(data: &str) -> u64 {
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap()
        .len() as u64
}

fn dims(width: u32, height: u32) -> Dimensions {
    Dimensions { width, height }
}

#[test]
fn a_side_over_the_cap_is_scaled_to_the_cap_keeping_the_aspect_ratio() {
    let data = png(9000, 90);
    let fit = Fit::new(8000, 5_242_880);
    assert!(fit.needs(dims(9000, 90), data.len()));
    let scaled = Scaler::default()
        .scale(&data, Sniffed::Png, dims(9000, 90), fit)
        .unwrap();
    assert_eq!(
        (scaled.dimensions, scaled.from),
        (dims(8000, 80), dims(9000, 90))
    );
    assert_eq!(scaled.sniffed, Sniffed::Png);
    // The header of what goes says what was priced.
    assert_eq!(read(&scaled.data), (Sniffed::Png, dims(8000, 80)));
}

#[test]
fn an_image_over_the_base64_cap_is_scaled_until_it_fits() {
    // 1200×1200 of noise: about 5.8 MB of base64 as PNG, over Anthropic's 5,242,880.
    let data = encoded(DynamicImage::ImageRgb8(noise(1200, 1200)), ImageFormat::Png);
    let fit = Fit::for_route(&Route::ANTHROPIC, &RouteId::Anthropic.request_limits());
    assert_eq!(fit, Fit::new(8000, 5_242_880));
    assert!(data.len() as u64 > fit.max_base64, "{}", data.len());
    let scaled = Scaler::default()
        .scale(&data, Sniffed::Png, dims(1200, 1200), fit)
        .unwrap();
    assert!(scaled.data.len() as u64 <= fit.max_base64);
    assert!(scaled.dimensions.width < 1200 && scaled.dimensions.width == scaled.dimensions.height);
    assert_eq!(read(&scaled.data), (Sniffed::Png, scaled.dimensions));
}

#[test]
fn the_many_images_side_scales_to_2000_px() {
    let data = png(2100, 100);
    let fit = Fit::new(2000, 5_242_880);
    let scaled = Scaler::default()
        .scale(&data, Sniffed::Png, dims(2100, 100), fit)
        .unwrap();
    assert_eq!(scaled.dimensions, dims(2000, 95));
}

#[test]
fn jpeg_stays_jpeg_and_gif_webp_become_png() {
    let fit = Fit::new(100, 1_000_000);
    let cases = [
        (ImageFormat::Jpeg, Sniffed::Jpeg, Sniffed::Jpeg),
        (ImageFormat::Gif, Sniffed::Gif, Sniffed::Png),
        (ImageFormat::WebP, Sniffed::Webp, Sniffed::Png),
        (ImageFormat::Png, Sniffed::Png, Sniffed::Png),
    ];
    for (format, sniffed, out) in cases {
        let image = match format {
            ImageFormat::Jpeg => DynamicImage::ImageRgb8(noise(400, 200)),
            _ => DynamicImage::ImageRgba8(RgbaImage::new(400, 200)),
        };
        let data = encoded(image, format);
        assert_eq!(read(&data), (sniffed, dims(400, 200)), "{format:?}");
        let scaled = Scaler::default()
            .scale(&data, sniffed, dims(400, 200), fit)
            .unwrap();
        assert_eq!(
            (scaled.sniffed, scaled.dimensions),
            (out, dims(100, 50)),
            "{format:?}"
        );
        assert_eq!(read(&scaled.data), (out, dims(100, 50)), "{format:?}");
    }
}

#[test]
fn an_animated_gif_gives_its_first_frame() {
    use image::codecs::gif::GifEncoder;
    use image::{Delay, Frame};
    let mut bytes = Vec::new();
    {
        let mut encoder = GifEncoder::new(&mut bytes);
        for shade in [255u8, 0] {
            let frame = RgbaImage::from_pixel(300, 300, image::Rgba([shade, shade, shade, 255]));
            encoder
                .encode_frame(Frame::from_parts(
                    frame,
                    0,
                    0,
                    Delay::from_numer_denom_ms(100, 1),
                ))
                .unwrap();
        }
    }
    let data = b64(&bytes);
    assert!(mcpl_encode_is_animated(&data));
    let fit = Fit::new(150, 1_000_000);
    let scaled = Scaler::default()
        .scale(&data, Sniffed::Gif, dims(300, 300), fit)
        .unwrap();
    let png = base64::engine::general_purpose::STANDARD
        .decode(&scaled.data)
        .unwrap();
    let first = image::load_from_memory(&png).unwrap().to_rgba8();
    assert_eq!(first.dimensions(), (150, 150));
    assert_eq!(
        first.get_pixel(75, 75).0,
        [255, 255, 255, 255],
        "the first frame is white"
    );
}

/// Two image descriptors: what the encoder's check reads as animated.
fn mcpl_encode_is_animated(data: &str) -> bool {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    bytes.windows(2).filter(|w| w == b"\x00\x2c").count() >= 2
}

#[test]
fn decoding_stops_at_the_allocation_ceiling() {
    // 2000×2000 RGB is 12 MB decoded; a ceiling of 4 MiB refuses it, whatever the file's size.
    let data = png(2000, 2000);
    assert!(data.len() < 100_000, "a small file that decodes large");
    let tight = Scaler::default().with_max_alloc(4 * 1024 * 1024);
    let fit = Fit::new(1000, 5_242_880);
    assert_eq!(
        tight.scale(&data, Sniffed::Png, dims(2000, 2000), fit),
        Err(ScaleError::Limits)
    );
    // Under the default ceiling the same image scales.
    assert!(
        Scaler::default()
            .scale(&data, Sniffed::Png, dims(2000, 2000), fit)
            .is_ok()
    );
}

#[test]
fn a_header_over_the_decoded_side_is_refused_without_decoding() {
    // A PNG header that claims 100000×100000, and no pixel data at all.
    let mut bytes = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    bytes.extend_from_slice(&100_000u32.to_be_bytes());
    bytes.extend_from_slice(&100_000u32.to_be_bytes());
    bytes.extend_from_slice(b"\x08\x02\x00\x00\x00\x00\x00\x00\x00");
    let data = b64(&bytes);
    let fit = Fit::new(8000, 5_242_880);
    assert_eq!(
        Scaler::default().scale(&data, Sniffed::Png, dims(100_000, 100_000), fit),
        Err(ScaleError::Limits)
    );
    // Between the cap and the decoder's side limit, the missing pixels fail to decode.
    bytes[16..20].copy_from_slice(&9_000u32.to_be_bytes());
    bytes[20..24].copy_from_slice(&10u32.to_be_bytes());
    assert!(matches!(
        Scaler::default().scale(&b64(&bytes), Sniffed::Png, dims(9_000, 10), fit),
        Err(ScaleError::Decode(_))
    ));
}

#[test]
fn no_pixels_is_never_scaled_and_an_image_within_the_fit_is_not_decoded() {
    let fit = Fit::new(8000, 100);
    assert!(!fit.needs(dims(0, 0), 1_000));
    assert!(!fit.needs(dims(0, 9000), 1_000));
    assert!(!fit.needs(dims(10, 10), 100));
    assert!(fit.needs(dims(10, 10), 101));
    // Fit::for_route takes the smaller of the base64 cap and the decoded bytes per image.
    let gemini = Fit::for_route(&Route::GEMINI, &RouteId::Gemini.request_limits());
    assert_eq!(gemini.max_base64, 7_000_000 / 3 * 4);
    let direct = RouteId::Anthropic
        .request_limits()
        .with_image_base64(RequestLimits::ANTHROPIC_DIRECT_IMAGE_BASE64);
    // The lanes' 5 MiB decoded per image is the lower of the two on the direct API.
    assert_eq!(
        Fit::for_route(&Route::ANTHROPIC, &direct).max_base64,
        5 * 1024 * 1024 / 3 * 4
    );
}

#[test]
fn a_tool_result_gets_its_scaled_image_and_a_notice_after_it() {
    let small = png(10, 10);
    let wide = png(9000, 90);
    let result = json!({"isError": false, "content": [
        {"type": "text", "text": "before"},
        {"type": "image", "data": wide, "annotations": {"priority": 1}, "mimeType": "image/png"},
        {"type": "image", "data": small, "mimeType": "image/png"},
        {"type": "text", "text": "after"},
    ], "_meta": {"k": "v"}});
    let fit = Fit::for_route(&Route::ANTHROPIC, &RouteId::Anthropic.request_limits());
    let mut diagnostics = Vec::new();
    let scaled = Scaler::default()
        .scale_result(&result, &Route::ANTHROPIC, fit, &mut diagnostics)
        .unwrap();
    let content = scaled["content"].as_array().unwrap();
    assert_eq!(content.len(), 5);
    assert_eq!(content[0], result["content"][0]);
    assert_eq!(
        read(content[1]["data"].as_str().unwrap()),
        (Sniffed::Png, dims(8000, 80))
    );
    assert_eq!(
        content[2],
        json!({"type": "text", "text": format!(
            "[image above scaled from 9000×90 px, {} to 8000×80 px, {}: a side was over 8000 px]",
            size_label(decoded(&wide)),
            size_label(decoded(content[1]["data"].as_str().unwrap())),
        )})
    );
    assert_eq!(content[3], result["content"][2]);
    assert_eq!(content[4], result["content"][3]);
    assert!(diagnostics.is_empty());
    // The result's other fields and the image block's stay, in their places.
    let keys = |value: &serde_json::Value| {
        value
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&scaled), ["isError", "content", "_meta"]);
    assert_eq!(
        (&scaled["isError"], &scaled["_meta"]),
        (&result["isError"], &result["_meta"])
    );
    assert_eq!(
        keys(&content[1]),
        ["type", "data", "annotations", "mimeType"]
    );
    assert_eq!(content[1]["annotations"], json!({"priority": 1}));
    assert_eq!(content[1]["mimeType"], "image/png");
    // Nothing over the fit, or a route that takes no image there: nothing changes.
    let plain = json!({"content": [{"type": "image", "data": small, "mimeType": "image/png"}]});
    assert!(
        Scaler::default()
            .scale_result(&plain, &Route::ANTHROPIC, fit, &mut diagnostics)
            .is_none()
    );
    assert!(
        Scaler::default()
            .scale_result(&result, &Route::TEXT_ONLY, fit, &mut diagnostics)
            .is_none()
    );
}

#[test]
fn an_image_that_cannot_be_decoded_stays_as_it_was_with_a_diagnostic() {
    // A valid header over the cap with no pixels: classification takes it, decoding does not.
    let mut bytes = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    bytes.extend_from_slice(&9_000u32.to_be_bytes());
    bytes.extend_from_slice(&10u32.to_be_bytes());
    bytes.extend_from_slice(b"\x08\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00IEND\xaeB`\x82");
    let result =
        json!({"content": [{"type": "image", "data": b64(&bytes), "mimeType": "image/png"}]});
    let fit = Fit::for_route(&Route::ANTHROPIC, &RouteId::Anthropic.request_limits());
    let mut diagnostics = Vec::new();
    assert!(
        Scaler::default()
            .scale_result(&result, &Route::ANTHROPIC, fit, &mut diagnostics)
            .is_none()
    );
    assert_eq!(diagnostics.len(), 1);
    assert!(
        diagnostics[0].starts_with("image 1 not scaled: the image could not be decoded"),
        "{diagnostics:?}"
    );
}

/// `Scaler::scale`'s sizes as they were tried before a PNG's length was counted first (decision
/// 0090): each size resized, encoded and measured, the first that fits kept.
fn scaled_by_encoding_each_size(data: &str, fit: Fit, format: ImageFormat) -> (String, Dimensions) {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    let image = image::load_from_memory(&bytes).unwrap();
    let (width, height) = (image.width(), image.height());
    let mut scale = (f64::from(fit.max_side) / f64::from(width.max(height))).min(1.0);
    loop {
        let to = dims(
            ((f64::from(width) * scale).round() as u32).clamp(1, fit.max_side),
            ((f64::from(height) * scale).round() as u32).clamp(1, fit.max_side),
        );
        let resized = image.thumbnail_exact(to.width, to.height);
        let mut out = Cursor::new(Vec::new());
        if format == ImageFormat::Jpeg {
            let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85);
            DynamicImage::ImageRgb8(resized.to_rgb8())
                .write_with_encoder(encoder)
                .unwrap();
        } else {
            resized.write_to(&mut out, ImageFormat::Png).unwrap();
        }
        let chars = out.get_ref().len().div_ceil(3) as u64 * 4;
        if chars <= fit.max_base64 {
            return (b64(&out.into_inner()), to);
        }
        scale *= (fit.max_base64 as f64 / chars as f64).sqrt() * 0.9;
    }
}

#[test]
fn counting_a_png_first_keeps_every_size_and_byte_the_encoder_gave() {
    let gradient = |width, height| {
        image::ImageBuffer::from_fn(width, height, |x, y| {
            image::Rgba([
                (x % 256) as u8,
                (y % 256) as u8,
                ((x + y) / 4 % 256) as u8,
                200,
            ])
        })
    };
    let cases = [
        // Noise over the base64 cap at its own size: the count says the first size is too
        // large, and the second is encoded (the workload w3, smaller).
        (
            "noise",
            encoded(DynamicImage::ImageRgb8(noise(300, 260)), ImageFormat::Png),
            Fit::new(8000, 200_000),
        ),
        // A side over the cap, compressible: the first size fits.
        (
            "gradient",
            encoded(
                DynamicImage::ImageRgba8(gradient(900, 300)),
                ImageFormat::Png,
            ),
            Fit::new(400, 1_000_000),
        ),
        // Both: a side over the cap and then too large at the cap.
        (
            "noise over a side",
            encoded(DynamicImage::ImageRgb8(noise(500, 120)), ImageFormat::Png),
            Fit::new(400, 80_000),
        ),
        // 16-bit samples, written big-endian.
        (
            "16-bit",
            encoded(
                DynamicImage::ImageRgb16(image::ImageBuffer::from_fn(200, 150, |x, y| {
                    image::Rgb([
                        (x * 300) as u16,
                        (y * 400) as u16,
                        ((x * y) % 65_536) as u16,
                    ])
                })),
                ImageFormat::Png,
            ),
            Fit::new(8000, 60_000),
        ),
        // A GIF becomes a PNG.
        (
            "gif",
            encoded(
                DynamicImage::ImageRgba8(gradient(300, 200)),
                ImageFormat::Gif,
            ),
            Fit::new(100, 1_000_000),
        ),
    ];
    for (name, data, fit) in cases {
        let (sniffed, from) = read(&data);
        assert!(fit.needs(from, data.len()), "{name}");
        let scaled = Scaler::default().scale(&data, sniffed, from, fit).unwrap();
        let (expected, to) = scaled_by_encoding_each_size(&data, fit, ImageFormat::Png);
        assert_eq!(scaled.dimensions, to, "{name}");
        assert!(scaled.data == expected, "{name}: the bytes differ");
    }
    // A JPEG's length is not counted: it is encoded at each size as before.
    let data = encoded(DynamicImage::ImageRgb8(noise(400, 300)), ImageFormat::Jpeg);
    let fit = Fit::new(8000, 40_000);
    let scaled = Scaler::default()
        .scale(&data, Sniffed::Jpeg, dims(400, 300), fit)
        .unwrap();
    let (expected, to) = scaled_by_encoding_each_size(&data, fit, ImageFormat::Jpeg);
    assert_eq!(scaled.dimensions, to);
    assert!(scaled.data == expected, "jpeg: the bytes differ");
}

#[test]
fn resizing_to_the_same_size_gives_the_same_pixels() {
    // `Scaler::scale` encodes the decoded image itself when a try keeps its size.
    let rgb = noise(37, 23);
    let images = [
        DynamicImage::ImageRgb8(rgb.clone()),
        DynamicImage::ImageRgb8(rgb.clone()).to_luma8().into(),
        DynamicImage::ImageRgb8(rgb.clone()).to_luma_alpha8().into(),
        DynamicImage::ImageRgb8(rgb.clone()).to_rgba8().into(),
        DynamicImage::ImageRgb8(rgb.clone()).to_luma16().into(),
        DynamicImage::ImageRgb8(rgb.clone())
            .to_luma_alpha16()
            .into(),
        DynamicImage::ImageRgb8(rgb.clone()).to_rgb16().into(),
        DynamicImage::ImageRgb8(rgb).to_rgba16().into(),
    ];
    for image in images {
        assert_eq!(
            image.thumbnail_exact(image.width(), image.height()),
            image,
            "{:?}",
            image.color()
        );
    }
}

#[test]
fn scaling_in_place_gives_what_scaling_a_copy_gives() {
    // A valid header over the cap with no pixels: classification takes it, decoding does not.
    let mut broken = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    broken.extend_from_slice(&9_000u32.to_be_bytes());
    broken.extend_from_slice(&10u32.to_be_bytes());
    broken.extend_from_slice(b"\x08\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00IEND\xaeB`\x82");
    let result = json!({"isError": false, "content": [
        {"type": "text", "text": "before"},
        {"type": "image", "data": png(9000, 90), "annotations": {"priority": 1}, "mimeType": "image/png"},
        {"type": "image", "data": b64(&broken), "mimeType": "image/png"},
        {"type": "image", "data": png(10, 10), "mimeType": "image/png"},
    ], "_meta": {"k": "v"}});
    let fit = Fit::for_route(&Route::ANTHROPIC, &RouteId::Anthropic.request_limits());
    let (mut copied, mut in_place) = (Vec::new(), Vec::new());
    let expected = Scaler::default()
        .scale_result(&result, &Route::ANTHROPIC, fit, &mut copied)
        .unwrap();
    let mut scaled = result.clone();
    assert!(Scaler::default().scale_result_in_place(
        &mut scaled,
        &Route::ANTHROPIC,
        fit,
        &mut in_place
    ));
    assert_eq!(scaled, expected);
    assert_eq!(
        serde_json::to_string(&scaled).unwrap(),
        serde_json::to_string(&expected).unwrap(),
        "the same keys in the same order"
    );
    assert_eq!(in_place, copied);
    assert_eq!(in_place.len(), 1, "{in_place:?}");
    // Nothing over the fit: nothing changes.
    let plain =
        json!({"content": [{"type": "image", "data": png(10, 10), "mimeType": "image/png"}]});
    let mut unchanged = plain.clone();
    assert!(!Scaler::default().scale_result_in_place(
        &mut unchanged,
        &Route::ANTHROPIC,
        fit,
        &mut in_place
    ));
    assert_eq!(unchanged, plain);
}
