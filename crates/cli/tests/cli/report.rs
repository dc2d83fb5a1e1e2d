//! `--report FILE.html` (issue 33, decision 0122): the demo's page on all five routes, read as
//! written and opened in a real headless Chromium, which must show every call on every route,
//! load every image and log nothing to its console.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::demo::HIDDEN;

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpl-cli-report-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The system's Chromium. When there is none: under `CI` the test fails saying so (`.ci/run`
/// installs it); otherwise it prints `skipped: <why>` and the caller returns.
fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(name))
                .find(|candidate| candidate.is_file())
        })
    });
    match found {
        Some(path) => Some(path),
        None if std::env::var_os("CI").is_some() => {
            panic!("no chromium on PATH: .ci/run installs it (apt-get install -y chromium)")
        }
        None => {
            eprintln!("skipped: no chromium or chromium-browser on PATH to open the report in");
            None
        }
    }
}

/// The page's DOM after load, and Chromium's standard error (its console lines among it). Both
/// go to files in `dir`, so that a full pipe never stalls the browser.
fn open_in_chromium(chromium: &Path, page: &Path, dir: &Path) -> (String, String) {
    let (dom, log) = (dir.join("dom.html"), dir.join("chromium.log"));
    let mut child = Command::new(chromium)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&dom).unwrap())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "chromium failed ({status}): {log}");
    (std::fs::read_to_string(&dom).unwrap(), log)
}

/// `data-route="<route>" data-tool="<tool>"`: one call's copy on one route.
fn copy_mark(route: &str, tool: &str) -> String {
    format!("data-route=\"{route}\" data-tool=\"{tool}\"")
}

#[test]
fn the_demo_on_every_route_is_one_page_a_browser_shows_whole() {
    let dir = scratch("all");
    let page = dir.join("demo.html");
    let output = crate::mcpl(
        &[
            "demo",
            "--route",
            "all",
            "--json",
            "--spill-dir",
            dir.join("spill").to_str().unwrap(),
            "--report",
            page.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    // The JSON is one rendering per route, in the routes' order; each names the calls made.
    let runs: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    let routes: Vec<&str> = runs.iter().map(|r| r["route"].as_str().unwrap()).collect();
    assert_eq!(
        routes,
        [
            "anthropic",
            "openai-chat",
            "openai-responses",
            "gemini",
            "text-only"
        ]
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: a policy that forbids loading anything but data: urls, nothing from a
    // network, and every hidden uri and credential of the demo server withheld.
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    for remote in [
        "src=\"http",
        "src=\"//",
        "href=\"http",
        "url(http",
        "@import",
    ] {
        assert!(!html.contains(remote), "the page loads {remote}");
    }
    for hidden in HIDDEN {
        assert!(!html.contains(hidden), "the page shows {hidden}");
    }
    // Read without JavaScript: every call of every route, its tokens, and the contents.
    let mut marks = Vec::new();
    for run in &runs {
        let route = run["route"].as_str().unwrap();
        let calls = run["calls"].as_array().unwrap();
        assert!(calls.len() > 20, "{route}: {} calls", calls.len());
        for call in calls {
            let mark = copy_mark(route, call["tool"].as_str().unwrap());
            assert!(html.contains(&mark), "the page has no {mark}");
            marks.push(mark);
        }
    }
    for text in [
        "href=\"#round-1\"",
        "id=\"usage\"",
        "<details class=\"call\" open",
        "Tools offered to the model",
        "demo__png",
        "application/pdf",
        "<audio controls",
        "The notice the model gets in place of the middle",
        "read_result(",
        "push message",
        "I called",
    ] {
        assert!(html.contains(text), "the page has no {text}");
    }
    let images = html.matches("<img ").count();
    assert!(images >= 20, "{images} images");

    let Some(chromium) = chromium() else {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let (dom, log) = open_in_chromium(&chromium, &page, &dir);
    // The page's script marks, once loaded, that every image decoded.
    assert!(
        dom.contains(&format!("<body data-images=\"loaded {images}\">")),
        "not every image loaded: {}",
        dom.lines()
            .find(|l| l.contains("<body"))
            .unwrap_or("no <body>")
    );
    for mark in &marks {
        assert!(dom.contains(mark.as_str()), "the browser shows no {mark}");
    }
    assert!(dom.contains("Tokens and usage"));
    // Nothing logged to the console: no error, no blocked load, no warning.
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "the console says: {console:#?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn route_all_without_a_report_is_refused() {
    let output = crate::mcpl(&["demo", "--route", "all"], b"");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "mcpl: --route all needs --report FILE.html: the routes go side by side on the page\n"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn a_report_that_cannot_be_written_fails_with_its_path() {
    let dir = scratch("unwritable");
    let page = dir.join("no-such-folder").join("demo.html");
    let output = crate::mcpl(&["demo", "--report", page.to_str().unwrap()], b"");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(&format!(
            "mcpl: cannot write the report {}: ",
            page.display()
        )),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
