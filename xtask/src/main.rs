//! The project's recipes, run as `cargo xtask <recipe>` (see <https://github.com/matklad/cargo-xtask>).
//!
//! - `ci`: runs `.ci/run`, the one list of what CI checks: formatting, clippy, the benches in
//!   criterion's quick test mode, then every test (the README's test command).
//! - `bench [FILTER]`: the criterion benches in full, then each bench's median and its ratio to
//!   each of its group's baselines (a plain parse and rmcp's typed parse, a plain download, plain
//!   pricing; else the first).
//! - `fuzz [TARGET] [--seconds N]`: a cargo-fuzz target on the nightly toolchain (default:
//!   `classify`, 600 seconds; `redact` is the secrets target, `bound` the budget's price against
//!   o200k), installing cargo-fuzz from
//!   crates.io first when it is missing, then a list of the crash inputs it left (it fails on
//!   one this run wrote; one an earlier run left is named, not counted).
//! - `secrets [--cases N]`: the generative leak test (the grammar of spellings over every lane)
//!   with N cases a property (default 250,000, about ten minutes on two cores; the test of
//!   3,000 blocks a case runs a 64th of them), in release mode.
//! - `bound [--cases N]`: the generative test of `Bound`, the budget's price, against o200k on
//!   strings drawn from all of Unicode, with N cases a property (default 10,000,000, half an
//!   hour on two cores), in release mode.
//! - `changelog`: assembles `changelog.d/` fragments into the text of a release section.
//! - `e2e`: `mcpl run` against the real npm and PyPI MCP servers pinned in `e2e/`, then a line
//!   per check of what the model was sent (see the `e2e` module).
//! - `hostile-memory [stdio|remote]`: the peak resident memory of `mcpl run` against each
//!   hostile server mode, and for the remote modes its time, threads and descriptors (see the
//!   `hostile` module).
//! - `memory`: the peak resident memory of `mcpl project` on the standard workloads, a million
//!   tiny blocks and a 200 MB text, beside each input's size (see the `memory` module).
//! - `spill-gc --config FILE`: removes the spills older than the configuration's
//!   `spillTtlHours` from its spill store, local or S3 (runs `mcpl spill-gc`; see
//!   `docs/spill-stores.md`).
//! - `readme-commands`: the README's two commands, one a line, exactly as written; `.ci/run`
//!   runs them in a clean clone (see the `standalone` module).
//!
//! `conformance` arrives with the fetcher.
//!
//! The `tidy` module is tests only (`cargo test --workspace` runs them): `docs/architecture.md`
//! against the workspace, and the Architecture Invariants `cargo metadata` can check.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod conformance_suite;
mod e2e;
mod hostile;
mod json;
mod memory;
mod standalone;
#[cfg(test)]
mod tidy;

const USAGE: &str = "usage: cargo xtask <ci | bench [FILTER] | fuzz [TARGET] [--seconds N] | secrets [--cases N] | bound [--cases N] | validate [--cases N] | changelog | e2e | conformance-suite | hostile-memory [stdio|remote] | memory | models [VERSION] | readme-commands | spill-gc --config FILE>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(&root),
        Some("bench") => bench(&root, &args[1..]),
        Some("fuzz") => fuzz(&root, &args[1..]),
        Some("secrets") => secrets(&root, &args[1..]),
        Some("bound") => bound(&root, &args[1..]),
        Some("validate") => validate(&root, &args[1..]),
        Some("changelog") => changelog(&root),
        Some("e2e") => e2e::e2e(&root),
        Some("conformance-suite") => conformance_suite::conformance_suite(&root),
        Some("hostile-memory") => hostile::hostile_memory(&root, &args[1..]),
        Some("memory") => memory::memory(&root),
        Some("models") => models(&root, &args[1..]),
        Some("readme-commands") => standalone::print_readme_commands(&root),
        Some("spill-gc") => {
            let mut command = vec!["run", "-q", "-p", "mcpl-cli", "--", "spill-gc"];
            command.extend(args[1..].iter().map(String::as_str));
            cargo(&root, &command)
        }
        _ => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Refreshes the model table, `crates/config/data/models.json`, from the newest `litellm`
/// wheel on PyPI (or the version given), through `xtask/models.py`.
fn models(root: &Path, args: &[String]) -> Result<(), String> {
    let out = root.join("crates/config/data/models.json");
    let status = Command::new("python3")
        .current_dir(root)
        .arg("xtask/models.py")
        .arg(&out)
        .args(args)
        .status()
        .map_err(|error| format!("cannot run python3: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("xtask/models.py failed ({status})"))
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn ci(root: &Path) -> Result<(), String> {
    let status = Command::new("bash")
        .current_dir(root)
        .arg(".ci/run")
        .status()
        .map_err(|error| format!("cannot run .ci/run: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(".ci/run failed ({status})"))
    }
}

fn bench(root: &Path, filter: &[String]) -> Result<(), String> {
    // The session bench's `rmcp_adapter` needs mcpl-session's `rmcp` feature.
    let mut args = vec![
        "bench",
        "--workspace",
        "--features",
        "mcpl-session/rmcp",
        "--",
    ];
    args.extend(filter.iter().map(String::as_str));
    cargo(root, &args)?;
    let criterion = root.join("target").join("criterion");
    let groups = sorted_dirs(&criterion);
    println!("\nmedians (criterion, target/criterion/*/*/new/estimates.json):");
    for group in groups {
        let medians: Vec<(PathBuf, f64)> = sorted_dirs(&group)
            .into_iter()
            .filter_map(|bench| {
                let estimates = bench.join("new").join("estimates.json");
                let median = std::fs::read_to_string(&estimates)
                    .ok()
                    .and_then(|text| median_nanoseconds(&text))?;
                Some((bench, median))
            })
            .collect();
        // Ratios are to the group's baselines: the benches that measure the plain way (a plain
        // parse, a peer's typed parse, a plain download, plain pricing), else the first by name.
        let mut baselines: Vec<(String, f64)> = medians
            .iter()
            .filter(|(bench, _)| is_baseline(&file_name(bench)))
            .map(|(bench, median)| (file_name(bench), *median))
            .collect();
        if baselines.is_empty() {
            baselines.extend(
                medians
                    .first()
                    .map(|(bench, median)| (file_name(bench), *median)),
            );
        }
        for (bench, median) in &medians {
            println!(
                "  {}/{}: {} ({})",
                file_name(&group),
                file_name(bench),
                human_time(*median),
                ratios(*median, &baselines)
            );
        }
    }
    Ok(())
}

/// A median's ratio to each baseline: `x1.20` for one, `x1.20 serde_json_parse, x2.95
/// rmcp_parse` for several.
fn ratios(median: f64, baselines: &[(String, f64)]) -> String {
    match baselines {
        [(_, baseline)] => format!("x{:.2}", median / baseline),
        _ => baselines
            .iter()
            .map(|(name, baseline)| format!("x{:.2} {name}", median / baseline))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Whether a bench is a baseline of its group by its name.
fn is_baseline(name: &str) -> bool {
    [
        "serde_json_parse",
        "rmcp_parse",
        "rmcp_parse_message",
        "plain",
        "price",
    ]
    .iter()
    .any(|baseline| name == *baseline || name.starts_with(&format!("{baseline} ")))
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.is_dir() && file_name(path) != "report")
                .collect()
        })
        .unwrap_or_default();
    // Natural order, so that 5KiB comes before 5MiB and 10 after 9.
    dirs.sort_by_key(|path| {
        let name = file_name(path);
        let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
        let scale = match name.trim_start_matches(|c: char| c.is_ascii_digit()) {
            rest if rest.starts_with('K') => 1 << 10,
            rest if rest.starts_with('M') => 1 << 20,
            rest if rest.starts_with('G') => 1 << 30,
            _ => 1u64,
        };
        (digits.parse::<u64>().unwrap_or(0) * scale, name)
    });
    dirs
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The median's point estimate from criterion's `estimates.json`, without a JSON parser.
fn median_nanoseconds(text: &str) -> Option<f64> {
    let median = &text[text.find("\"median\"")?..];
    let estimate = &median[median.find("\"point_estimate\":")? + "\"point_estimate\":".len()..];
    let end = estimate.find([',', '}'])?;
    estimate[..end].trim().parse().ok()
}

fn human_time(nanoseconds: f64) -> String {
    match nanoseconds {
        n if n < 1e3 => format!("{n:.1} ns"),
        n if n < 1e6 => format!("{:.2} µs", n / 1e3),
        n if n < 1e9 => format!("{:.2} ms", n / 1e6),
        n => format!("{:.2} s", n / 1e9),
    }
}

fn fuzz(root: &Path, args: &[String]) -> Result<(), String> {
    let mut target = "classify".to_owned();
    let mut seconds = "600".to_owned();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--seconds" => seconds = rest.next().ok_or(USAGE)?.clone(),
            name if !name.starts_with('-') => target = name.to_owned(),
            other => return Err(format!("unknown fuzz option {other}; {USAGE}")),
        }
    }
    let fuzz_dir = root.join("fuzz");
    let tests = root.join("crates/classify/tests");
    // The first corpus folder is the fuzzer's own; the others are read-only seeds.
    let mut corpora = vec![fuzz_dir.join("corpus").join(&target)];
    let mut options = vec![format!("-max_total_time={seconds}")];
    match target.as_str() {
        "classify" => {
            corpora.extend([tests.join("cases"), tests.join("fuzz-regressions/classify")]);
            options.push(format!(
                "-dict={}",
                fuzz_dir.join("classify.dict").display()
            ));
        }
        "payload" => corpora.extend([
            tests.join("fixtures"),
            tests.join("fuzz-regressions/payload"),
        ]),
        "redact" => corpora.push(root.join("crates/redact/tests/fuzz-regressions")),
        "bound" => corpora.push(root.join("crates/budget/tests/fuzz-regressions")),
        "lanes" => {
            let lanes = root.join("crates/lanes/tests");
            corpora.extend([tests.join("cases"), lanes.join("fuzz-regressions")]);
            options.push(format!(
                "-dict={}",
                fuzz_dir.join("classify.dict").display()
            ));
        }
        _ => {}
    }
    std::fs::create_dir_all(&corpora[0]).map_err(|e| format!("{}: {e}", corpora[0].display()))?;
    let installed = Command::new("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !installed {
        println!("cargo-fuzz is missing; installing it from crates.io");
        cargo(root, &["install", "--locked", "cargo-fuzz"])?;
    }
    // Only a crash input this run wrote fails it: one an earlier run left is named, not counted.
    let started = std::time::SystemTime::now();
    let status = Command::new("cargo")
        .current_dir(&fuzz_dir)
        .args(["+nightly", "fuzz", "run", &target])
        .args(&corpora)
        .arg("--")
        .args(&options)
        .status()
        .map_err(|error| format!("cannot run cargo fuzz (cargo install cargo-fuzz): {error}"))?;
    let artifacts = fuzz_dir.join("artifacts").join(&target);
    let (crashes, earlier): (Vec<_>, Vec<_>) = std::fs::read_dir(&artifacts)
        .map(|entries| entries.filter_map(Result::ok).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|entry| {
            let new = entry
                .metadata()
                .and_then(|meta| meta.modified())
                .map_or(true, |modified| modified >= started);
            (entry.path().display().to_string(), new)
        })
        .partition(|(_, new)| *new);
    for (crash, _) in &crashes {
        println!("crash input: {crash} (copy it into the crate's tests/fuzz-regressions/)");
    }
    for (crash, _) in &earlier {
        println!("an earlier run's crash input, still here: {crash}");
    }
    if status.success() && crashes.is_empty() {
        Ok(())
    } else {
        Err(format!("fuzz target {target} failed"))
    }
}

/// The generative test of the budget's price with many cases: `MCPL_BOUND_CASES` sets each
/// property's count. A failing case's seed is kept in `crates/budget/tests/proptest-regressions/`.
fn bound(root: &Path, args: &[String]) -> Result<(), String> {
    let cases = case_count(args, "10000000")?;
    if generative(root, "MCPL_BOUND_CASES", &cases, "mcpl-budget", "bound::") {
        Ok(())
    } else {
        Err(format!(
            "the generative test of the budget's price failed with {cases} cases a property"
        ))
    }
}

/// The generative test of request bodies with many cases: every route's body for random
/// conversations and tool lists is one the validator accepts (`MCPL_VALIDATE_CASES`).
/// The first bodies of each route are then validated by the official SDKs' request types
/// (`e2e/sdk-validate`, with `MCPL_SDK_PYTHON` or `target/sdk-validate`'s Python).
fn validate(root: &Path, args: &[String]) -> Result<(), String> {
    let cases = case_count(args, "200000")?;
    let bodies = root.join("target").join("validate-bodies");
    let _ = std::fs::remove_dir_all(&bodies);
    std::fs::create_dir_all(&bodies).map_err(|e| format!("{}: {e}", bodies.display()))?;
    let passed = generative_in(
        root,
        &[
            ("MCPL_VALIDATE_CASES", cases.as_str().as_ref()),
            ("MCPL_VALIDATE_BODIES", bodies.as_os_str()),
        ],
        ("mcpl-encode", "encode", "validate::"),
    );
    if !passed {
        return Err(format!(
            "the generative test of request bodies failed with {cases} cases"
        ));
    }
    let python = std::env::var_os("MCPL_SDK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/sdk-validate/bin/python"));
    if !python.exists() {
        return Err(format!(
            "{} is missing: set MCPL_SDK_PYTHON to a Python with e2e/sdk-validate/requirements.txt",
            python.display()
        ));
    }
    let files: Vec<String> = [
        "anthropic",
        "openai-chat",
        "openai-responses",
        "gemini",
        "text-only",
    ]
    .iter()
    .map(|route| {
        format!(
            "{route}={}",
            bodies.join(format!("{route}.jsonl")).display()
        )
    })
    .collect();
    let status = Command::new(&python)
        .current_dir(root)
        .arg("e2e/sdk-validate/validate.py")
        .args(&files)
        .status()
        .map_err(|e| format!("{}: {e}", python.display()))?;
    if status.success() {
        println!(
            "the official SDKs' types took every kept body ({})",
            bodies.display()
        );
        Ok(())
    } else {
        Err("the official SDKs' types refused a body the validator took".to_owned())
    }
}

/// The generative leak test with many cases: `MCPL_SECRET_CASES` sets each property's count.
fn secrets(root: &Path, args: &[String]) -> Result<(), String> {
    let cases = case_count(args, "250000")?;
    if generative(root, "MCPL_SECRET_CASES", &cases, "mcpl-lanes", "secrets") {
        Ok(())
    } else {
        Err(format!(
            "the generative leak test failed with {cases} cases a property"
        ))
    }
}

/// `--cases N`, or `default` when the recipe is given nothing.
fn case_count(args: &[String], default: &str) -> Result<String, String> {
    match args {
        [] => Ok(default.to_owned()),
        [flag, n] if flag == "--cases" && n.parse::<u64>().is_ok() => Ok(n.clone()),
        _ => Err(USAGE.to_owned()),
    }
}

/// Runs the `it` tests of `package` whose names hold `filter`, in release mode, with `env` set
/// to `cases`; whether they passed.
fn generative(root: &Path, env: &str, cases: &str, package: &str, filter: &str) -> bool {
    generative_in(root, &[(env, cases.as_ref())], (package, "it", filter))
}

/// Runs the tests of one test target whose names hold a filter (`(package, test, filter)`), in
/// release mode, with `env` set; whether they passed.
fn generative_in(
    root: &Path,
    env: &[(&str, &std::ffi::OsStr)],
    (package, test, filter): (&str, &str, &str),
) -> bool {
    Command::new("cargo")
        .current_dir(root)
        .envs(env.iter().copied())
        .args(["test", "--release", "-p", package, "--test", test, filter])
        .status()
        .is_ok_and(|status| status.success())
}

fn changelog(root: &Path) -> Result<(), String> {
    const KINDS: [(&str, &str); 5] = [
        ("added", "Added"),
        ("changed", "Changed"),
        ("fixed", "Fixed"),
        ("removed", "Removed"),
        ("security", "Security"),
    ];
    let dir = root.join("changelog.d");
    let mut fragments: Vec<(String, String, String)> = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        let Some((slug, kind)) = stem.rsplit_once('.') else {
            return Err(format!("{name}: fragments are named <slug>.<kind>.md"));
        };
        if !KINDS.iter().any(|(k, _)| *k == kind) {
            return Err(format!("{name}: unknown kind {kind}"));
        }
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{name}: {e}"))?;
        fragments.push((kind.to_owned(), slug.to_owned(), text.trim().to_owned()));
    }
    fragments.sort();
    println!("## Unreleased");
    for (kind, heading) in KINDS {
        let entries: Vec<&(String, String, String)> =
            fragments.iter().filter(|f| f.0 == kind).collect();
        if entries.is_empty() {
            continue;
        }
        println!("\n### {heading}\n");
        for (_, _, text) in entries {
            println!("- {}", text.replace('\n', "\n  "));
        }
    }
    Ok(())
}

fn cargo(root: &Path, args: &[&str]) -> Result<(), String> {
    println!("xtask: cargo {}", args.join(" "));
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .current_dir(root)
        .args(args)
        .status()
        .map_err(|error| format!("cannot run cargo: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo {} failed ({status})", args.join(" ")))
    }
}

#[cfg(test)]
mod tests {
    use super::{is_baseline, ratios};

    #[test]
    fn a_median_is_compared_to_every_baseline_of_its_group() {
        let one = [("serde_json_parse".to_owned(), 2.0)];
        assert_eq!(ratios(3.0, &one), "x1.50");
        let two = [
            ("rmcp_parse".to_owned(), 4.0),
            ("serde_json_parse".to_owned(), 2.0),
        ];
        assert_eq!(
            ratios(3.0, &two),
            "x0.75 rmcp_parse, x1.50 serde_json_parse"
        );
        assert!(is_baseline("rmcp_parse"));
        assert!(!is_baseline("mcpl_pipeline"));
    }
}
