//! Each route's declaration decides what goes native: image types, images in tool results and
//! messages, audio in messages.

use mcpl_lanes::{
    ImageLedger, LiveCopy, Part, Projector, Registry, Route, RouteId, ServerName, ToolResult,
    UriPolicy,
};
use serde_json::{Value, json};

fn result_with(fixture: &str, media_type: &str) -> Value {
    json!({"content": [{"type": "image", "mimeType": media_type,
                        "data": {"$fixture": fixture}}]})
}

fn project_on(route: &Route, mut result: Value) -> (LiveCopy<'static>, String, Vec<bool>) {
    mcpl_testkit::expand_fixtures(&mut result);
    let result: &'static Value = Box::leak(Box::new(result));
    let (mut registry, mut ledger) = (Registry::with_seed(1), ImageLedger::with_seed(2));
    let server = ServerName::new("s");
    let mut projector = Projector::new(
        &mut registry,
        &mut ledger,
        route,
        &server,
        UriPolicy::Hidden,
    );
    let read: &'static _ = Box::leak(Box::new(mcpl_lanes::ResultView::of_value(result)));
    let copies = projector.tool_result(&ToolResult::from_view(read));
    let push = projector.push(&result["content"]).unwrap();
    let native_in_push = push
        .parts
        .iter()
        .map(|p| matches!(p, Part::Image { .. }))
        .collect();
    (copies.live, copies.stored.into_owned(), native_in_push)
}

#[test]
fn a_gif_goes_native_where_the_route_takes_gifs_and_as_its_placeholder_elsewhere() {
    for route in RouteId::ALL.map(RouteId::route) {
        let (live, stored, push) = project_on(route, result_with("static.gif", "image/gif"));
        assert!(
            stored.starts_with("[image: image/gif, 189B, ref img_"),
            "{stored}"
        );
        let takes = route.images_in_tool_results && route.id != RouteId::Gemini;
        assert_eq!(
            matches!(live, LiveCopy::Native(_)),
            takes,
            "{}",
            route.name()
        );
        assert_eq!(
            push,
            [route.images_in_messages && route.id != RouteId::Gemini],
            "{}",
            route.name()
        );
    }
}

#[test]
fn a_png_goes_native_on_every_route_that_takes_images() {
    for route in RouteId::ALL.map(RouteId::route) {
        let (live, _, push) = project_on(route, result_with("image.png", "image/jpeg"));
        assert_eq!(
            matches!(live, LiveCopy::Native(_)),
            route.images_in_tool_results,
            "{}",
            route.name()
        );
        assert_eq!(push, [route.images_in_messages], "{}", route.name());
    }
}
