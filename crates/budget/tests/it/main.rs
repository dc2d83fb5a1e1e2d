//! The budget's integration tests: data-driven fitting cases, property tests, and spill
//! failures (a store that fails mid-write, a read-only folder, a full file system).

mod bound;
mod bound_check;
mod cases;
mod crash;
mod cut;
mod detached;
mod determinism;
mod estimate;
mod failures;
mod hard_cap;
mod private;
mod properties;
mod read_back;
mod scripts;
mod spill_of;
mod stored;

use std::path::PathBuf;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_budget::{Bound, Fitted, PricedRoute, Pricer, SpillStore, fit_tool_result};
use mcpl_lanes::{ImageLedger, Part, Projector, Registry, ServerName, ToolResult, UriPolicy};
use serde_json::Value;

/// A fresh folder for one test's spill files, removed when dropped.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    /// A folder whose path depends on `name` alone, so that texts naming it repeat.
    pub(crate) fn fixed(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join("mcpl-budget-cases").join(name);
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }

    pub(crate) fn new(name: &str) -> TempDir {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("mcpl-budget-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `body` with a fresh host's projector on `route`.
pub(crate) fn with_projector<T>(
    route: &PricedRoute,
    body: impl FnOnce(&mut Projector<'_>) -> T,
) -> T {
    let (mut registry, mut ledger) = (Registry::with_seed(1), ImageLedger::with_seed(2));
    let server = ServerName::new("test");
    body(&mut Projector::new(
        &mut registry,
        &mut ledger,
        &route.lanes,
        &server,
        UriPolicy::Hidden,
    ))
}

/// Fits a result on a route with a fresh host.
pub(crate) fn fit<'a>(
    result: &'a Value,
    route: &PricedRoute,
    budget: u64,
    store: Option<&mut dyn SpillStore>,
) -> Fitted<'a> {
    fit_with(result, route, Pricer::new(&Bound, route), budget, store)
}

/// [`fit`] with a pricer of the test's own.
pub(crate) fn fit_with<'a>(
    result: &'a Value,
    route: &PricedRoute,
    pricer: Pricer<'_>,
    budget: u64,
    store: Option<&mut dyn SpillStore>,
) -> Fitted<'a> {
    with_projector(route, |projector| {
        // A test host: the view lives as long as the result it borrows.
        let read: &_ = Box::leak(Box::new(mcpl_lanes::ResultView::of_value(result)));
        fit_tool_result(
            projector,
            &ToolResult::from_view(read),
            pricer,
            budget,
            store,
        )
    })
}

/// Fits a result on a route with a fresh host, spilling to a local store in a fresh folder
/// named after `name`, its notices worded for `read_result`.
pub(crate) fn fit_spilled<'a>(
    result: &'a Value,
    route: &PricedRoute,
    budget: u64,
    name: &str,
) -> Fitted<'a> {
    let dir = TempDir::new(name);
    let mut store = mcpl_budget::LocalSpillStore::new(&dir.0)
        .unwrap()
        .with_notice(mcpl_budget::SpillNotice::ReadResult);
    fit(
        result,
        route,
        budget,
        Some(&mut store as &mut dyn SpillStore),
    )
}

/// The decoded payloads of a result's data-bearing blocks, at any depth, in document order.
pub(crate) fn payloads(value: &Value) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    collect_payloads(value, &mut out);
    out
}

fn collect_payloads(value: &Value, out: &mut Vec<Vec<u8>>) {
    match value {
        Value::Object(object) => {
            let withheld = object.contains_key("disposition");
            for key in ["data", "blob"] {
                if let Some(Value::String(data)) = object.get(key)
                    && !data.is_empty()
                    && !withheld
                {
                    out.push(
                        STANDARD
                            .decode(data)
                            .unwrap_or_else(|_| data.as_bytes().to_vec()),
                    );
                }
            }
            object.values().for_each(|v| collect_payloads(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_payloads(v, out)),
        _ => {}
    }
}

pub(crate) fn render_parts(parts: &[Part<'_>]) -> String {
    parts
        .iter()
        .map(|part| match part {
            Part::Text(text) => format!("text: {text}\n"),
            Part::Image { sniffed, data, .. } => {
                format!(
                    "image: {}, {} characters of base64\n",
                    sniffed.mime(),
                    data.len()
                )
            }
            Part::Audio { sniffed, data } => {
                format!(
                    "audio: {}, {} characters of base64\n",
                    sniffed.mime(),
                    data.len()
                )
            }
            Part::Document { pages, data } => {
                let noun = if *pages == 1 { "page" } else { "pages" };
                format!(
                    "document: application/pdf, {pages} {noun}, {} characters of base64\n",
                    data.len()
                )
            }
        })
        .collect()
}
