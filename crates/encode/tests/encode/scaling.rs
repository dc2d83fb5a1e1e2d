//! Images scaled to fit instead of left out: each case where a request limit would turn a real
//! image away, with scaling on (the default).

use std::io::Cursor;

use base64::Engine as _;
use image::{DynamicImage, ImageFormat, RgbImage, RgbaImage};
use mcpl_classify::{Dimensions, Media, Sniffed};
use mcpl_encode::conversation::{Content, Message, ModelRequest, ToolOutput};
use mcpl_encode::{Encoder, LimitHit, request_limit_notice};
use mcpl_lanes::RouteId;
use serde_json::Value;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn encoded(image: DynamicImage, format: ImageFormat) -> String {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, format).unwrap();
    b64(&out.into_inner())
}

/// A real PNG of that size.
fn png(width: u32, height: u32) -> String {
    encoded(
        DynamicImage::ImageRgb8(RgbImage::new(width, height)),
        ImageFormat::Png,
    )
}

/// Pixels that do not compress.
fn noise_png(width: u32, height: u32) -> String {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let image = RgbImage::from_fn(width, height, |_, _| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        image::Rgb([seed as u8, (seed >> 8) as u8, (seed >> 16) as u8])
    });
    encoded(DynamicImage::ImageRgb8(image), ImageFormat::Png)
}

fn image(data: &str) -> Content {
    let media = Media::inspect(data, None);
    Content::Image {
        sniffed: media.sniffed.unwrap(),
        dimensions: media.dimensions.unwrap(),
        data: data.to_owned(),
    }
}

fn output(n: usize, live: Vec<Content>) -> ToolOutput {
    ToolOutput::new(
        format!("call_{n}"),
        "shot",
        format!("[image: image/png, 1 KB, ref img_test_{n}]"),
    )
    .with_live(live)
}

fn request(encoder: Encoder, messages: &[Message]) -> Value {
    encoder.request(&ModelRequest::new("a-model", "", messages, &[], 64))
}

/// Every native image in a body, in document order: its type and size as its header says.
fn sent(body: &Value) -> Vec<(Sniffed, Dimensions, usize)> {
    let mut out = Vec::new();
    walk(body, &mut out);
    out.into_iter()
        .map(|data| {
            let media = Media::inspect(&data, None);
            (
                media.sniffed.unwrap(),
                media.dimensions.unwrap(),
                data.len(),
            )
        })
        .collect()
}

fn walk(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let data = map
                .get("data")
                .filter(|_| map.contains_key("media_type") || map.contains_key("mime_type"))
                .or_else(|| map.get("image_url").and_then(|u| u.get("url")))
                .or_else(|| map.get("image_url").filter(|u| u.is_string()))
                .and_then(Value::as_str);
            if let Some(data) = data {
                out.push(data.rsplit(',').next().unwrap_or(data).to_owned());
            }
            map.values().for_each(|v| walk(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
        _ => {}
    }
}

/// The notice after a scaled image, from the data before and after.
fn notice(from: &str, to: &str, why: &str) -> String {
    let size = |data: &str| {
        let media = Media::inspect(data, None);
        let d = media.dimensions.unwrap();
        format!(
            "{}×{} px, {}",
            d.width,
            d.height,
            mcpl_lanes::markers::size_label(media.decoded_bytes.unwrap())
        )
    };
    format!(
        "[image above scaled from {} to {}: {why}]",
        size(from),
        size(to)
    )
}

/// Every native image's base64 in a body.
fn sent_data(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(body, &mut out);
    out
}

fn dims(width: u32, height: u32) -> Dimensions {
    Dimensions { width, height }
}

fn texts(body: &Value) -> String {
    let mut all = String::new();
    fn collect(value: &Value, all: &mut String) {
        match value {
            Value::String(s) => {
                all.push_str(s);
                all.push('\n');
            }
            Value::Object(map) => map.values().for_each(|v| collect(v, all)),
            Value::Array(items) => items.iter().for_each(|v| collect(v, all)),
            _ => {}
        }
    }
    collect(body, &mut all);
    all
}

#[test]
fn over_twenty_images_the_large_ones_are_scaled_to_2000_px() {
    let big = png(2100, 100);
    let outputs: Vec<ToolOutput> = (1..=21).map(|n| output(n, vec![image(&big)])).collect();
    let body = request(
        Encoder::new(RouteId::Anthropic),
        &[Message::ToolResults(outputs)],
    );
    let images = sent(&body);
    // All 21 go, each scaled to 2000 px: over 20 images, no side may pass 2000 px.
    assert_eq!(images.len(), 21);
    assert!(
        images
            .iter()
            .all(|(sniffed, d, _)| (*sniffed, *d) == (Sniffed::Png, dims(2000, 95)))
    );
    let data = sent_data(&body);
    let expected = notice(
        &big,
        &data[0],
        "a side is over 2000 px in a request of more than 20 images",
    );
    assert!(expected.starts_with("[image above scaled from 2100×100 px, "));
    for n in [0, 20] {
        assert_eq!(
            body["messages"][0]["content"][n]["content"][1]["text"],
            expected
        );
    }
    // Twenty large images need no scaling; 2000 px images need none however many.
    let twenty: Vec<Content> = (0..20).map(|_| image(&big)).collect();
    let body = request(Encoder::new(RouteId::Anthropic), &[Message::User(twenty)]);
    assert!(sent(&body).iter().all(|(_, d, _)| *d == dims(2100, 100)));
    let at_side = png(2000, 10);
    let many: Vec<Content> = (0..30).map(|_| image(&at_side)).collect();
    let body = request(Encoder::new(RouteId::Anthropic), &[Message::User(many)]);
    assert_eq!(sent(&body).len(), 30);
    assert!(!texts(&body).contains("scaled"));
    assert!(!texts(&body).contains("not sent in this request"));
}

#[test]
fn over_the_base64_cap_an_image_is_scaled_under_it() {
    let big = noise_png(1200, 1200);
    assert!(big.len() > 5_242_880, "{}", big.len());
    let body = request(
        Encoder::new(RouteId::Anthropic),
        &[Message::User(vec![image(&big)])],
    );
    let images = sent(&body);
    assert_eq!(images.len(), 1);
    let (sniffed, size, chars) = images[0];
    assert_eq!(sniffed, Sniffed::Png);
    assert!(chars <= 5_242_880 && size.width < 1200 && size.width == size.height);
    assert_eq!(
        body["messages"][0]["content"][1]["text"],
        notice(
            &big,
            &sent_data(&body)[0],
            "its base64 is over 5242880 characters per image"
        )
    );
    // With scaling off, the same image is left out with the notice.
    let body = request(
        Encoder::new(RouteId::Anthropic).with_scaling(false),
        &[Message::User(vec![image(&big)])],
    );
    assert!(sent(&body).is_empty());
    assert!(texts(&body).contains(&request_limit_notice(LimitHit::ImageBase64(5_242_880))));
}

#[test]
fn a_side_over_8000_px_is_scaled_to_8000_on_every_image_route() {
    let wide = png(9000, 90);
    for route in [
        RouteId::Anthropic,
        RouteId::OpenAiChat,
        RouteId::OpenAiResponses,
        RouteId::Gemini,
    ] {
        let outputs = vec![output(1, vec![image(&wide)])];
        let body = request(Encoder::new(route), &[Message::ToolResults(outputs)]);
        let images = sent(&body);
        assert_eq!(images.len(), 1, "{route}");
        assert_eq!(images[0].1, dims(8000, 80), "{route}");
        let expected = notice(&wide, &sent_data(&body)[0], "a side is over 8000 px");
        assert!(texts(&body).contains(&expected), "{route}: {expected}");
    }
}

#[test]
fn an_animated_gif_goes_as_its_first_frame_where_the_route_takes_no_animation() {
    use image::codecs::gif::GifEncoder;
    use image::{Delay, Frame};
    let mut bytes = Vec::new();
    {
        let mut encoder = GifEncoder::new(&mut bytes);
        for shade in [200u8, 10] {
            let frame = RgbaImage::from_pixel(40, 30, image::Rgba([shade, shade, shade, 255]));
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
    let animated = b64(&bytes);
    assert!(mcpl_encode::is_animated(&animated));
    for route in [RouteId::OpenAiChat, RouteId::OpenAiResponses] {
        let body = request(
            Encoder::new(route),
            &[Message::User(vec![image(&animated)])],
        );
        let images = sent(&body);
        assert_eq!(images.len(), 1, "{route}");
        assert_eq!(
            (images[0].0, images[0].1),
            (Sniffed::Png, dims(40, 30)),
            "{route}"
        );
        assert!(
            texts(&body).contains(
                "[image above is the first frame of an animated GIF: this route takes no animated GIF]"
            ),
            "{route}"
        );
    }
}

#[test]
fn an_image_that_cannot_be_decoded_falls_back_to_the_notice() {
    // A real PNG's header that claims 9000 px: the pixels do not match, so decoding fails.
    let mut bytes = base64::engine::general_purpose::STANDARD
        .decode(png(10, 10))
        .unwrap();
    bytes[16..20].copy_from_slice(&9_000u32.to_be_bytes());
    let fake = b64(&bytes);
    let body = request(
        Encoder::new(RouteId::Anthropic),
        &[Message::User(vec![image(&fake)])],
    );
    assert!(sent(&body).is_empty());
    assert!(texts(&body).contains(&request_limit_notice(LimitHit::Side(8000))));
}

#[test]
fn scaled_images_still_count_toward_the_request_totals() {
    // Gemini: three images scaled from 9000 px still carry their (small) base64 inline, and a
    // large image after them is still held to the 20 MB.
    let wide = png(9000, 90);
    let content: Vec<Content> = (0..3).map(|_| image(&wide)).collect();
    let body = request(Encoder::new(RouteId::Gemini), &[Message::User(content)]);
    assert_eq!(sent(&body).len(), 3);
    let scaled_notices = texts(&body)
        .matches("[image above scaled from 9000×90 px")
        .count();
    assert_eq!(scaled_notices, 3);
}
