//! Data-driven fitting cases: each folder in `tests/cases/` holds `input.json` (`budget`,
//! optional `route` and `route_image`, and the `result`) and one snapshot of what fitting made
//! of it: the price, the live and stored copies, the spill text and attachments.

use std::path::Path;

use mcpl_budget::{ImageCalculator, LocalSpillStore, PricedRoute};
use mcpl_lanes::LiveCopy;
use mcpl_lanes::RouteId;
use serde_json::Value;

use crate::{TempDir, fit, payloads, render_parts};

/// Replaces the spill folder and the spill's random id, so snapshots repeat.
fn normalise(text: &str, dir: &Path) -> String {
    let text = text.replace(&dir.display().to_string(), "<spill>");
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(mcpl_budget::SPILL_ID_PREFIX) {
        let end = at + mcpl_budget::SPILL_ID_PREFIX.len();
        out.push_str(&rest[..end]);
        rest = &rest[end..];
        let id = rest
            .bytes()
            .take_while(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            .count();
        if id == mcpl_budget::SPILL_ID_LENGTH {
            out.push_str("<id>");
            rest = &rest[id..];
        }
    }
    out.push_str(rest);
    out
}

fn run_case(dir: &Path) {
    let input_path = dir.join("input.json");
    let mut input: Value =
        serde_json::from_str(&std::fs::read_to_string(&input_path).unwrap()).unwrap();
    mcpl_testkit::expand_fixtures(&mut input);
    let budget = input["budget"].as_u64().unwrap();
    // A case names its route as `--route` does; a name no route has fails the case.
    let id: RouteId = input["route"]
        .as_str()
        .unwrap_or("anthropic")
        .parse()
        .unwrap_or_else(|error| panic!("{}: {error}", input_path.display()));
    let mut route = PricedRoute::of(id).clone();
    match input["route_image"].as_str() {
        Some("none") => route.images = None,
        Some("anthropic-high-res") => route.images = Some(ImageCalculator::ANTHROPIC_HIGH_RES),
        _ => {}
    }
    let result = &input["result"];
    let spill_dir = TempDir::fixed(dir.file_name().unwrap().to_str().unwrap());
    let mut store = LocalSpillStore::new(&spill_dir.0).unwrap();
    let fitted = fit(result, &route, budget, Some(&mut store));

    // What must hold whatever the snapshot says.
    let price = fitted.price;
    let left_out = fitted
        .diagnostics
        .iter()
        .any(|d| d.ends_with("only a line naming its spill is sent"));
    if fitted.cut && !left_out {
        assert!(
            price.unwrap() <= budget,
            "fitted price {price:?} over {budget}"
        );
    } else if left_out {
        // A budget smaller than the notice: one line, never the result.
        assert!(price.unwrap() <= 100, "fitted price {price:?}");
    } else if price.is_none_or(|p| p > budget) {
        assert!(
            !fitted.diagnostics.is_empty(),
            "kept whole over budget without a reason"
        );
    }
    let mut spill_text = String::from("(none)");
    let mut attachments = String::new();
    if let Some(spill) = &fitted.spill {
        let text = std::fs::read_to_string(&spill.path).unwrap();
        assert!(!text.contains("iVBORw0KGgo"), "base64 in a spill text");
        // The attachments hold every payload's bytes, in order.
        let expected = payloads(result);
        let saved: Vec<Vec<u8>> = spill
            .attachments
            .iter()
            .map(|p| std::fs::read(p).unwrap())
            .collect();
        assert_eq!(saved, expected, "attachments are the payloads");
        for path in &spill.attachments {
            assert!(text.contains(path.as_str()), "the spill text names {path}");
            attachments.push_str(&format!("{}\n", normalise(path, &spill_dir.0)));
        }
        spill_text = normalise(&text, &spill_dir.0);
    }
    let live = match &fitted.copies.live {
        LiveCopy::Stored => "(the stored copy, byte for byte)\n".to_owned(),
        LiveCopy::Native(parts) => render_parts(parts),
    };
    let report = format!(
        "budget: {budget}\nprice: {price:?}\nstored price: {}\ncut: {}\ndiagnostics: {:?}\n--- live\n{}--- stored\n{}\n--- spill\n{}\n--- attachments\n{attachments}",
        fitted.stored_price,
        fitted.cut,
        fitted
            .diagnostics
            .iter()
            .map(|d| normalise(d, &spill_dir.0))
            .collect::<Vec<_>>(),
        normalise(&live, &spill_dir.0),
        normalise(&fitted.copies.stored, &spill_dir.0),
        spill_text,
    );
    insta::with_settings!({
        snapshot_path => dir,
        prepend_module_to_snapshot => false,
        omit_expression => true,
        input_file => &input_path,
    }, {
        insta::assert_snapshot!("fitted", report);
    });
}

#[test]
fn cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 10);
    for dir in dirs {
        run_case(&dir);
    }
}
