//! Tidy tests: `docs/architecture.md` kept true, and the Architecture Invariants that
//! `cargo metadata` can check, in the manner of rust-analyzer's `xtask/src/tidy.rs`.
//!
//! They run with `cargo test --workspace`. Each check is a pure function over the workspace as
//! `cargo metadata` describes it, the document's text and the source files, answering the
//! problems it found (none when the tree is tidy); the real tree is checked once, and each check
//! is also fed doctored inputs to show that it fails when it should.

use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;

/// The architecture document, relative to the workspace root.
const ARCHITECTURE: &str = "docs/architecture.md";

/// What opens each crate's invariant in the document.
const INVARIANT: &str = "**Architecture Invariant:**";

/// The layering: the workspace crates each crate may take as a normal (or build) dependency.
/// A crate missing here is a problem, so a new crate cannot join without a rule.
const LAYERS: &[(&str, &[&str])] = &[
    ("mcpl-classify", &[]),
    // The one TLS stack every client takes: rustls on ring and the trusted roots.
    ("mcpl-tls", &[]),
    // The redaction engine: strings and JSON in, the same with every secret replaced.
    ("mcpl-redact", &["mcpl-classify"]),
    ("mcpl-lanes", &["mcpl-classify", "mcpl-redact"]),
    ("mcpl-scale", &["mcpl-classify", "mcpl-lanes"]),
    (
        "mcpl-budget",
        &["mcpl-classify", "mcpl-redact", "mcpl-lanes"],
    ),
    // An object store behind mcpl-budget's `SpillStore`, and nothing else of mcpl.
    ("mcpl-spill-s3", &["mcpl-budget", "mcpl-tls"]),
    (
        "mcpl-encode",
        &["mcpl-classify", "mcpl-lanes", "mcpl-scale", "mcpl-budget"],
    ),
    (
        "mcpl-fetch",
        &["mcpl-classify", "mcpl-lanes", "mcpl-budget", "mcpl-tls"],
    ),
    // The client reads lines with classify's lenient JSON reader, and knows no lanes.
    ("mcpl-client", &["mcpl-classify", "mcpl-tls"]),
    // OAuth for remote servers stands alone: the transport reaches it through the host.
    ("mcpl-auth", &["mcpl-tls"]),
    // The configuration file, read and checked: the options of the crates it configures.
    (
        "mcpl-config",
        &[
            "mcpl-redact",
            "mcpl-lanes",
            "mcpl-budget",
            "mcpl-fetch",
            "mcpl-client",
            "mcpl-auth",
        ],
    ),
    // What a host keeps for one conversation: every lane through the crates above, and the
    // host tools.
    (
        "mcpl-session",
        &[
            "mcpl-classify",
            "mcpl-lanes",
            "mcpl-scale",
            "mcpl-budget",
            "mcpl-encode",
            "mcpl-fetch",
        ],
    ),
    // The model side: a request body in, a turn out.
    ("mcpl-model", &["mcpl-lanes", "mcpl-encode", "mcpl-tls"]),
    (
        "mcpl-host",
        &[
            "mcpl-classify",
            "mcpl-redact",
            "mcpl-lanes",
            "mcpl-scale",
            "mcpl-budget",
            "mcpl-encode",
            "mcpl-fetch",
            "mcpl-client",
            "mcpl-auth",
            "mcpl-model",
            "mcpl-config",
            "mcpl-session",
        ],
    ),
    (
        "mcpl-cli",
        &[
            "mcpl-classify",
            "mcpl-redact",
            "mcpl-lanes",
            "mcpl-scale",
            "mcpl-budget",
            "mcpl-encode",
            "mcpl-fetch",
            "mcpl-client",
            "mcpl-auth",
            "mcpl-model",
            "mcpl-config",
            "mcpl-host",
            "mcpl-demo-server",
            "mcpl-loopback",
            "mcpl-spill-s3",
            "mcpl-tls",
        ],
    ),
    ("mcpl-loopback", &[]),
    ("mcpl-demo-server", &[]),
    ("mcpl-testkit", &[]),
    ("xtask", &[]),
];

/// The crate nothing may depend on, in any way.
const BINARY_CRATE: &str = "mcpl-cli";

/// Outside crates only some members may take as a normal (or build) dependency.
const RESTRICTED: &[(&str, &[&str])] = &[
    (
        "ureq",
        &[
            "mcpl-fetch",
            "mcpl-client",
            "mcpl-model",
            "mcpl-auth",
            "mcpl-tls",
        ],
    ),
    ("tungstenite", &["mcpl-client", "mcpl-demo-server"]),
    ("clap", &["mcpl-cli", "xtask"]),
    ("tracing-subscriber", &["mcpl-cli", "xtask"]),
    ("anyhow", &["mcpl-cli", "xtask"]),
    // The object store and its async runtime stay in the one crate that needs them; the
    // session's optional rmcp adapter takes tokio's I/O traits for its tap (decision 0125).
    ("object_store", &["mcpl-spill-s3"]),
    ("tokio", &["mcpl-spill-s3", "mcpl-session"]),
    ("reqwest", &["mcpl-spill-s3"]),
];

/// The members whose sources may spawn processes.
const SPAWNERS: &[&str] = &["mcpl-client", "mcpl-cli", "xtask"];

/// How a dependency is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `[dependencies]`, optional or not.
    Normal,
    /// `[build-dependencies]`.
    Build,
    /// `[dev-dependencies]`: tests, benches and examples only.
    Dev,
}

/// One dependency of a member.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Dependency {
    name: String,
    kind: Kind,
}

/// A workspace member: its package name, its folder relative to the workspace root (`/`
/// between components) and what it depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Member {
    name: String,
    dir: String,
    dependencies: Vec<Dependency>,
}

impl Member {
    /// Whether the member takes `name` as a normal or build dependency.
    fn uses(&self, name: &str) -> bool {
        self.dependencies
            .iter()
            .any(|d| d.name == name && d.kind != Kind::Dev)
    }
}

/// A source file: its path relative to the workspace root (`/` between components) and text.
#[derive(Debug, Clone)]
struct Source {
    path: String,
    text: String,
}

/// The workspace's members, from `cargo metadata --format-version 1` output.
fn members(metadata: &Value) -> Vec<Member> {
    let root = metadata["workspace_root"]
        .as_str()
        .expect("cargo metadata names the workspace root");
    let ids: Vec<&str> = metadata["workspace_members"]
        .as_array()
        .expect("cargo metadata lists the workspace members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let packages = metadata["packages"]
        .as_array()
        .expect("cargo metadata lists the packages");
    packages
        .iter()
        .filter(|p| p["id"].as_str().is_some_and(|id| ids.contains(&id)))
        .map(|package| {
            let manifest = package["manifest_path"]
                .as_str()
                .expect("each package has a manifest path");
            let dir = Path::new(manifest)
                .parent()
                .and_then(|dir| dir.strip_prefix(root).ok())
                .expect("each member's manifest sits under the workspace root");
            Member {
                name: package["name"].as_str().unwrap_or_default().to_owned(),
                dir: slashed(dir),
                dependencies: package["dependencies"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .map(|d| Dependency {
                        name: d["name"].as_str().unwrap_or_default().to_owned(),
                        kind: match d["kind"].as_str() {
                            Some("dev") => Kind::Dev,
                            Some("build") => Kind::Build,
                            _ => Kind::Normal,
                        },
                    })
                    .collect(),
            }
        })
        .collect()
}

/// A relative path with `/` between its components.
fn slashed(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// The member's section of the document: from its `### ` heading, which names its folder and
/// its package, to the next heading.
fn section<'d>(doc: &'d str, member: &Member) -> Option<&'d str> {
    let folder = format!("`{}`", member.dir);
    let package = format!("`{}`", member.name);
    let mut start = None;
    let mut at = 0;
    for line in doc.split_inclusive('\n') {
        let heading = line.starts_with("### ") || line.starts_with("## ");
        match start {
            None if line.starts_with("### ")
                && line.contains(&folder)
                && (member.name == member.dir || line.contains(&package)) =>
            {
                start = Some(at);
            }
            Some(begin) if heading => return Some(&doc[begin..at]),
            _ => {}
        }
        at += line.len();
    }
    start.map(|begin| &doc[begin..])
}

/// Members with no section in the document, or whose section states no invariant.
fn undocumented_members(members: &[Member], doc: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for member in members {
        match section(doc, member) {
            None => problems.push(format!(
                "{ARCHITECTURE}: no `### ` section names `{}` (`{}`)",
                member.dir, member.name
            )),
            Some(text) if !text.contains(INVARIANT) => problems.push(format!(
                "{ARCHITECTURE}: the section of `{}` states no {INVARIANT}",
                member.name
            )),
            Some(_) => {}
        }
    }
    problems
}

/// Source files not named, relative to their crate's `src/`, in their crate's section.
fn undocumented_files(members: &[Member], doc: &str, files: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    for file in files {
        let owner = members.iter().find_map(|m| {
            file.strip_prefix(&format!("{}/src/", m.dir))
                .map(|name| (m, name))
        });
        let Some((member, name)) = owner else {
            problems.push(format!("{file}: not in any workspace member's src/"));
            continue;
        };
        let named = section(doc, member).is_some_and(|text| text.contains(&format!("`{name}`")));
        if !named {
            problems.push(format!(
                "{ARCHITECTURE}: `{file}` is not named (as `{name}`) in the section of `{}`",
                member.name
            ));
        }
    }
    problems
}

/// Normal or build dependencies on workspace crates the layering does not allow, members with
/// no rule, and anything that depends on the binary crate.
fn layering_violations(members: &[Member]) -> Vec<String> {
    let mut problems = Vec::new();
    let workspace: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    for member in members {
        for dependency in &member.dependencies {
            if dependency.name == BINARY_CRATE {
                problems.push(format!(
                    "{} depends on {BINARY_CRATE} ({:?}), which nothing may depend on",
                    member.name, dependency.kind
                ));
            }
        }
        let Some((_, allowed)) = LAYERS.iter().find(|(name, _)| *name == member.name) else {
            problems.push(format!("{} has no rule in the layering", member.name));
            continue;
        };
        for dependency in &member.dependencies {
            if dependency.kind != Kind::Dev
                && workspace.contains(&dependency.name.as_str())
                && !allowed.contains(&dependency.name.as_str())
            {
                problems.push(format!(
                    "{} may not depend on {} (the layering allows {allowed:?})",
                    member.name, dependency.name
                ));
            }
        }
    }
    problems
}

/// Dev-dependencies on a workspace crate that itself depends, normally, on the dependent: the
/// dependent would be compiled twice in its tests and its types would not match.
fn dev_cycles(members: &[Member]) -> Vec<String> {
    let mut problems = Vec::new();
    for member in members {
        for dependency in member.dependencies.iter().filter(|d| d.kind == Kind::Dev) {
            if normal_closure(members, &dependency.name).contains(&member.name.as_str()) {
                problems.push(format!(
                    "{} has a dev-dependency on {}, which depends on it",
                    member.name, dependency.name
                ));
            }
        }
    }
    problems
}

/// The workspace crates `name` depends on, directly or not, through normal or build
/// dependencies.
fn normal_closure<'m>(members: &'m [Member], name: &str) -> Vec<&'m str> {
    let mut found: Vec<&str> = Vec::new();
    let mut pending = vec![name.to_owned()];
    while let Some(next) = pending.pop() {
        let Some(member) = members.iter().find(|m| m.name == next) else {
            continue;
        };
        for dependency in member.dependencies.iter().filter(|d| d.kind != Kind::Dev) {
            if let Some(dep) = members.iter().find(|m| m.name == dependency.name)
                && !found.contains(&dep.name.as_str())
            {
                found.push(&dep.name);
                pending.push(dep.name.clone());
            }
        }
    }
    found
}

/// Normal or build dependencies on restricted outside crates by members not allowed them.
fn restricted_dependencies(members: &[Member]) -> Vec<String> {
    let mut problems = Vec::new();
    for member in members {
        for (name, allowed) in RESTRICTED {
            if member.uses(name) && !allowed.contains(&member.name.as_str()) {
                problems.push(format!(
                    "{} may not depend on {name} (only {allowed:?} may)",
                    member.name
                ));
            }
        }
    }
    problems
}

/// Sources outside the spawning members that name `std::process::Command`, ignoring comments
/// and a trailing `#[cfg(test)]` module.
fn process_spawning(members: &[Member], sources: &[Source]) -> Vec<String> {
    sources
        .iter()
        .filter(|source| {
            let owner = members
                .iter()
                .find(|m| source.path.starts_with(&format!("{}/", m.dir)));
            !owner.is_some_and(|m| SPAWNERS.contains(&m.name.as_str()))
        })
        .filter(|source| names_command(&source.text))
        .map(|source| {
            format!(
                "{}: spawns processes; only {SPAWNERS:?} and test code may",
                source.path
            )
        })
        .collect()
}

/// Whether code, outside comments and a `#[cfg(test)] mod`, names `std::process::Command`
/// (as `process::Command`, `process::CommandExt`, in a `process::{...}` group, or through
/// `process::*`).
fn names_command(text: &str) -> bool {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        let test_module = trimmed == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod "));
        if test_module {
            break;
        }
        if !trimmed.starts_with("//") {
            code.push_str(line);
            code.push('\n');
        }
    }
    code.match_indices("process::").any(|(at, found)| {
        let rest = code[at + found.len()..].trim_start();
        if rest.starts_with("Command") || rest.starts_with('*') {
            return true;
        }
        rest.strip_prefix('{')
            .and_then(|group| group.split_once('}'))
            .is_some_and(|(names, _)| {
                names
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .any(|name| name.starts_with("Command") || name == "*")
            })
    })
}

/// Documents that name the specification's folder outside the repository, which no file in
/// the repository may read or name.
fn names_outside_folder(documents: &[Source]) -> Vec<String> {
    // Spelled in two pieces so that this file does not name the folder itself.
    let folder = ["sha", "red/"].concat();
    documents
        .iter()
        .filter(|doc| doc.text.contains(&folder))
        .map(|doc| {
            format!(
                "{}: names the {folder} folder; point to docs/ instead",
                doc.path
            )
        })
        .collect()
}

/// The real workspace: `cargo metadata`, the architecture document, every source file of every
/// member, and the crates' READMEs.
struct Tree {
    members: Vec<Member>,
    doc: String,
    sources: Vec<Source>,
    readmes: Vec<Source>,
}

fn tree() -> &'static Tree {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(|| {
        let metadata = metadata();
        let root = Path::new(
            metadata["workspace_root"]
                .as_str()
                .expect("cargo metadata names the workspace root"),
        );
        let members = members(&metadata);
        let mut sources = Vec::new();
        let mut readmes = Vec::new();
        for member in &members {
            rust_files(root, &format!("{}/src", member.dir), &mut sources);
            let readme = format!("{}/README.md", member.dir);
            if let Ok(text) = std::fs::read_to_string(root.join(&readme)) {
                readmes.push(Source { path: readme, text });
            }
        }
        sources.sort_by(|a, b| a.path.cmp(&b.path));
        let doc = std::fs::read_to_string(root.join(ARCHITECTURE))
            .unwrap_or_else(|e| panic!("{ARCHITECTURE}: {e}"));
        Tree {
            members,
            doc,
            sources,
            readmes,
        }
    })
}

/// `cargo metadata --no-deps --format-version 1` for this workspace.
fn metadata() -> Value {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

/// Every `.rs` file under `root/dir`, by path relative to `root`.
fn rust_files(root: &Path, dir: &str, out: &mut Vec<Source>) {
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{dir}/{name}");
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            rust_files(root, &path, out);
        } else if name.ends_with(".rs") {
            let text =
                std::fs::read_to_string(entry.path()).unwrap_or_else(|e| panic!("{path}: {e}"));
            out.push(Source { path, text });
        }
    }
}

fn file_paths(sources: &[Source]) -> Vec<String> {
    sources.iter().map(|s| s.path.clone()).collect()
}

/// Fails with every problem, one per line.
/// The host stays small: `crates/host/src` holds fewer than [`HOST_LINES`] lines, so the
/// transports, encoders, fetcher and command line stay in crates of their own.
const HOST_LINES: usize = 3_000;

fn oversized_host(sources: &[Source]) -> Vec<String> {
    let lines: usize = sources
        .iter()
        .filter(|s| s.path.starts_with("crates/host/src/"))
        .map(|s| s.text.lines().count())
        .sum();
    if lines < HOST_LINES {
        Vec::new()
    } else {
        vec![format!(
            "crates/host/src holds {lines} lines, not under {HOST_LINES}: move a job into a crate of its own"
        )]
    }
}

/// The manifests of packages outside the workspace that build into its target folder and must
/// have its profiles, so that what the workspace built there is reused (decision 0125).
const SAME_PROFILES: &[&str] = &["examples/rmcp-host/Cargo.toml"];

/// The workspace's profile sections for its test-only crates, which such a package leaves out
/// (cargo warns of a profile for a package it does not build).
const TEST_ONLY_PROFILES: &[&str] = &[
    "[profile.dev.package.insta]",
    "[profile.dev.package.similar]",
    "[profile.dev.package.proptest]",
    // bpe-openai, the oracle of mcpl-budget's tests (decision 0137), and what it reads with.
    "[profile.dev.package.bpe-openai]",
    "[profile.dev.package.bpe]",
    "[profile.dev.package.rmp-serde]",
    "[profile.dev.package.rmp]",
    "[profile.dev.package.aneubeck-daachorse]",
];

/// A manifest's profile sections, from its first `[profile.` header to its end: each header with
/// its settings, comments and blank lines left out.
fn profiles(manifest: &str) -> Vec<(&str, Vec<&str>)> {
    let mut sections: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            if line.starts_with("[profile.") || !sections.is_empty() {
                sections.push((line, Vec::new()));
            }
        } else if let Some((_, settings)) = sections.last_mut()
            && !line.is_empty()
            && !line.starts_with('#')
        {
            settings.push(line);
        }
    }
    sections
}

/// Manifests whose profiles are not the workspace's (but for its test-only crates').
fn profile_drift(workspace: &str, others: &[(&str, String)]) -> Vec<String> {
    let wanted: Vec<_> = profiles(workspace)
        .into_iter()
        .filter(|(header, _)| !TEST_ONLY_PROFILES.contains(header))
        .collect();
    others
        .iter()
        .filter(|(_, text)| wanted.is_empty() || profiles(text) != wanted)
        .map(|(path, _)| {
            format!(
                "{path}: its profiles are not the root Cargo.toml's (copy them, but for {})",
                TEST_ONLY_PROFILES.join(", ")
            )
        })
        .collect()
}

fn assert_tidy(problems: Vec<String>) {
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

// The real tree.

#[test]
fn architecture_names_every_member_with_its_invariant() {
    let tree = tree();
    assert_tidy(undocumented_members(&tree.members, &tree.doc));
}

#[test]
fn architecture_names_every_source_file() {
    let tree = tree();
    assert!(tree.sources.iter().any(|s| s.path == "xtask/src/tidy.rs"));
    assert_tidy(undocumented_files(
        &tree.members,
        &tree.doc,
        &file_paths(&tree.sources),
    ));
}

#[test]
fn examples_outside_the_workspace_have_its_profiles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
    let others: Vec<(&str, String)> = SAME_PROFILES.iter().map(|p| (*p, read(p))).collect();
    assert_tidy(profile_drift(&read("Cargo.toml"), &others));
}

#[test]
fn an_example_with_other_profiles_fails() {
    let workspace = "[package]\n\n[profile.dev]\ndebug = 1\n\n# Why.\n[profile.dev.package.a]\nopt-level = 3\n\n[profile.dev.package.insta]\nopt-level = 3\n";
    let same = "[package]\n[workspace]\n\n# Copied.\n[profile.dev]\ndebug = 1\n[profile.dev.package.a]\nopt-level = 3\n";
    let other = "[package]\n\n[profile.dev]\ndebug = 2\n\n[profile.dev.package.a]\nopt-level = 3\n";
    let fewer = "[package]\n\n[profile.dev]\ndebug = 1\n";
    let none = "[package]\n";
    assert!(profile_drift(workspace, &[("same", same.to_owned())]).is_empty());
    let drift = profile_drift(
        workspace,
        &[
            ("other", other.to_owned()),
            ("fewer", fewer.to_owned()),
            ("none", none.to_owned()),
        ],
    );
    assert_eq!(drift.len(), 3, "{drift:?}");
}

#[test]
fn the_host_stays_small() {
    let tree = tree();
    assert!(
        tree.sources
            .iter()
            .any(|s| s.path == "crates/host/src/lib.rs")
    );
    assert_tidy(oversized_host(&tree.sources));
}

#[test]
fn a_host_over_its_size_fails() {
    let source = |path: &str, lines: usize| Source {
        path: path.to_owned(),
        text: "x\n".repeat(lines),
    };
    let small = [
        source("crates/host/src/lib.rs", 2_999),
        source("crates/cli/src/main.rs", 9_000),
    ];
    assert_tidy(oversized_host(&small));
    let big = [
        source("crates/host/src/lib.rs", 2_000),
        source("crates/host/src/http.rs", 1_000),
    ];
    assert_eq!(
        oversized_host(&big),
        ["crates/host/src holds 3000 lines, not under 3000: move a job into a crate of its own"]
    );
}

#[test]
fn dependencies_follow_the_layering() {
    let tree = tree();
    assert_tidy(layering_violations(&tree.members));
    assert_tidy(dev_cycles(&tree.members));
}

#[test]
fn only_allowed_crates_use_ureq_clap_and_the_binary_crates_deps() {
    assert_tidy(restricted_dependencies(&tree().members));
}

#[test]
fn only_client_cli_and_xtask_spawn_processes() {
    let tree = tree();
    assert_tidy(process_spawning(&tree.members, &tree.sources));
}

#[test]
fn no_readme_or_architecture_names_the_outside_folder() {
    let tree = tree();
    let mut documents = tree.readmes.clone();
    documents.push(Source {
        path: ARCHITECTURE.to_owned(),
        text: tree.doc.clone(),
    });
    assert!(documents.len() > 5, "the crates' READMEs are read");
    assert_tidy(names_outside_folder(&documents));
}

/// The members a README's crate list must name: every crate under `crates/` but the test and
/// demo support, which no host depends on.
fn unlisted_in_readme(members: &[Member], readme: &str) -> Vec<String> {
    members
        .iter()
        .filter(|m| m.dir.starts_with("crates/"))
        .filter(|m| {
            !["mcpl-testkit", "mcpl-loopback", "mcpl-demo-server"].contains(&m.name.as_str())
        })
        .filter(|m| !readme.contains(&format!("`{}`", m.name)))
        .map(|m| format!("README.md: the crate list does not name `{}`", m.name))
        .collect()
}

#[test]
fn the_readme_names_every_crate_a_host_may_take() {
    let tree = tree();
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    assert_tidy(unlisted_in_readme(&tree.members, &readme));
    let mut members = tree.members.clone();
    members.push(Member {
        name: "mcpl-newcomer".to_owned(),
        dir: "crates/newcomer".to_owned(),
        dependencies: Vec::new(),
    });
    assert_eq!(
        unlisted_in_readme(&members, &readme),
        ["README.md: the crate list does not name `mcpl-newcomer`"]
    );
}

/// Normal dependencies a member's `src/` never names (as `crate_name` in code): each one is
/// built for every user of the crate and must earn its place. A dependency taken only to turn
/// on a feature of another is named in [`FEATURE_ONLY`].
fn unused_dependencies(members: &[Member], sources: &[Source]) -> Vec<String> {
    let mut problems = Vec::new();
    for member in members {
        let prefix = format!("{}/src/", member.dir);
        let texts: Vec<&str> = sources
            .iter()
            .filter(|s| s.path.starts_with(&prefix))
            .map(|s| s.text.as_str())
            .collect();
        if texts.is_empty() {
            continue;
        }
        for dependency in member
            .dependencies
            .iter()
            .filter(|d| d.kind == Kind::Normal)
        {
            if FEATURE_ONLY.contains(&(member.name.as_str(), dependency.name.as_str())) {
                continue;
            }
            let code_name = dependency.name.replace('-', "_");
            let named = texts.iter().any(|text| {
                text.match_indices(&code_name).any(|(at, _)| {
                    let before = text[..at].chars().next_back();
                    let after = text[at + code_name.len()..].chars().next();
                    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                    !word(before) && !word(after)
                })
            });
            if !named {
                problems.push(format!(
                    "{} takes {} but its src/ never names `{code_name}`",
                    member.name, dependency.name
                ));
            }
        }
    }
    problems
}

/// Normal dependencies taken to turn on one of their features for the whole build, or only for
/// a derive: `(member, dependency)`.
const FEATURE_ONLY: &[(&str, &str)] = &[];

#[test]
fn every_normal_dependency_is_named_in_its_crates_source() {
    let tree = tree();
    assert_tidy(unused_dependencies(&tree.members, &tree.sources));
}

#[test]
fn a_dependency_the_source_never_names_fails() {
    let mut members = vec![member("mcpl-fetch")];
    members[0].dependencies = vec![Dependency {
        name: "sha2".to_owned(),
        kind: Kind::Normal,
    }];
    let source = |text: &str| Source {
        path: "crates/fetch/src/lib.rs".to_owned(),
        text: text.to_owned(),
    };
    assert!(unused_dependencies(&members, &[source("use sha2::Digest;")]).is_empty());
    assert_eq!(
        unused_dependencies(&members, &[source("// sha2x is not sha2_ either")]),
        ["mcpl-fetch takes sha2 but its src/ never names `sha2`"]
    );
}

/// Problems with the decision records: a record without a `Status:` line, and a record the
/// index (`docs/decisions/README.md`) does not list, or lists with another status.
fn decision_problems(records: &[Source], index: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for record in records {
        let file = record.path.rsplit('/').next().unwrap_or(&record.path);
        let Some(status) = record
            .text
            .lines()
            .find_map(|line| line.strip_prefix("Status: "))
        else {
            problems.push(format!("{}: no `Status:` line", record.path));
            continue;
        };
        let row = format!("]({file}) | {status} |");
        if !index.lines().any(|line| line.ends_with(&row)) {
            problems.push(format!(
                "docs/decisions/README.md: no row for {file} with status `{status}`"
            ));
        }
    }
    problems
}

#[test]
fn every_decision_has_a_status_and_the_index_lists_it() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/decisions");
    let mut records = Vec::new();
    for entry in std::fs::read_dir(&folder).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.as_bytes().first().is_some_and(u8::is_ascii_digit) && name.ends_with(".md") {
            let text = std::fs::read_to_string(&path).unwrap();
            records.push(Source {
                path: format!("docs/decisions/{name}"),
                text,
            });
        }
    }
    assert!(records.len() > 90, "the records are read");
    let index = std::fs::read_to_string(folder.join("README.md")).unwrap();
    assert_tidy(decision_problems(&records, &index));
}

#[test]
fn a_decision_without_a_status_or_an_index_row_fails() {
    let record = |name: &str, text: &str| Source {
        path: format!("docs/decisions/{name}"),
        text: text.to_owned(),
    };
    let index = "| [0001: A](0001-a.md) | accepted |\n";
    assert!(
        decision_problems(
            &[record("0001-a.md", "# 0001: A\n\nStatus: accepted\n")],
            index
        )
        .is_empty()
    );
    assert_eq!(
        decision_problems(&[record("0002-b.md", "# 0002: B\n")], index),
        ["docs/decisions/0002-b.md: no `Status:` line"]
    );
    assert_eq!(
        decision_problems(
            &[record(
                "0001-a.md",
                "# 0001: A\n\nStatus: superseded by 3\n"
            )],
            index
        ),
        ["docs/decisions/README.md: no row for 0001-a.md with status `superseded by 3`"]
    );
}

// Each check fails on a doctored tree.

fn member(name: &str) -> Member {
    tree()
        .members
        .iter()
        .find(|m| m.name == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} is a workspace member"))
}

/// The real members with one more dependency.
fn with_dependency(from: &str, to: &str, kind: Kind) -> Vec<Member> {
    let mut members = tree().members.clone();
    for member in members.iter_mut().filter(|m| m.name == from) {
        member.dependencies.push(Dependency {
            name: to.to_owned(),
            kind,
        });
    }
    members
}

#[test]
fn members_are_read_from_cargo_metadata() {
    let metadata = serde_json::json!({
        "workspace_root": "/w",
        "workspace_members": ["a 0.1.0"],
        "packages": [
            {"id": "a 0.1.0", "name": "mcpl-a", "manifest_path": "/w/crates/a/Cargo.toml",
             "dependencies": [
                 {"name": "mcpl-b", "kind": null},
                 {"name": "ureq", "kind": null, "optional": true},
                 {"name": "insta", "kind": "dev"},
                 {"name": "cc", "kind": "build"}
             ]},
            {"id": "other 1.0.0", "name": "other", "manifest_path": "/x/Cargo.toml",
             "dependencies": []}
        ]
    });
    let dep = |name: &str, kind| Dependency {
        name: name.to_owned(),
        kind,
    };
    assert_eq!(
        members(&metadata),
        vec![Member {
            name: "mcpl-a".to_owned(),
            dir: "crates/a".to_owned(),
            dependencies: vec![
                dep("mcpl-b", Kind::Normal),
                dep("ureq", Kind::Normal),
                dep("insta", Kind::Dev),
                dep("cc", Kind::Build),
            ],
        }]
    );
}

#[test]
fn a_member_missing_from_the_architecture_fails() {
    let doc = tree().doc.replace(
        "### `crates/fetch` (`mcpl-fetch`)",
        "### The reference fetcher",
    );
    assert_eq!(
        undocumented_members(&tree().members, &doc),
        ["docs/architecture.md: no `### ` section names `crates/fetch` (`mcpl-fetch`)"]
    );
    let mut members = tree().members.clone();
    members.push(Member {
        name: "mcpl-new".to_owned(),
        dir: "crates/new".to_owned(),
        dependencies: Vec::new(),
    });
    assert_eq!(
        undocumented_members(&members, &tree().doc),
        ["docs/architecture.md: no `### ` section names `crates/new` (`mcpl-new`)"]
    );
}

#[test]
fn a_section_without_an_invariant_fails() {
    let client = section(&tree().doc, &member("mcpl-client")).expect("client has a section");
    let doc = tree()
        .doc
        .replace(client, &client.replace(INVARIANT, "**Invariant:**"));
    assert_eq!(
        undocumented_members(&tree().members, &doc),
        [
            "docs/architecture.md: the section of `mcpl-client` states no **Architecture Invariant:**"
        ]
    );
}

#[test]
fn a_section_ends_at_the_next_heading() {
    let doc = "# A\n### `crates/a` (`mcpl-a`)\nnames `x.rs`\n### `crates/b` (`mcpl-b`)\nnames `y.rs`\n## End\nnames `z.rs`\n";
    let a = Member {
        name: "mcpl-a".to_owned(),
        dir: "crates/a".to_owned(),
        dependencies: Vec::new(),
    };
    let b = Member {
        name: "mcpl-b".to_owned(),
        dir: "crates/b".to_owned(),
        ..a.clone()
    };
    assert_eq!(
        section(doc, &a),
        Some("### `crates/a` (`mcpl-a`)\nnames `x.rs`\n")
    );
    let files = [
        "crates/a/src/x.rs",
        "crates/a/src/y.rs",
        "crates/b/src/z.rs",
    ]
    .map(String::from);
    assert_eq!(
        undocumented_files(&[a, b], doc, &files),
        [
            "docs/architecture.md: `crates/a/src/y.rs` is not named (as `y.rs`) in the section of `mcpl-a`",
            "docs/architecture.md: `crates/b/src/z.rs` is not named (as `z.rs`) in the section of `mcpl-b`",
        ]
    );
}

#[test]
fn a_source_file_missing_from_the_architecture_fails() {
    let tree = tree();
    let mut files = file_paths(&tree.sources);
    files.push("crates/lanes/src/route_table.rs".to_owned());
    files.push("crates/encode/src/anthropic/batch.rs".to_owned());
    files.push("stray/src/lib.rs".to_owned());
    assert_eq!(
        undocumented_files(&tree.members, &tree.doc, &files),
        [
            "docs/architecture.md: `crates/lanes/src/route_table.rs` is not named (as `route_table.rs`) in the section of `mcpl-lanes`",
            "docs/architecture.md: `crates/encode/src/anthropic/batch.rs` is not named (as `anthropic/batch.rs`) in the section of `mcpl-encode`",
            "stray/src/lib.rs: not in any workspace member's src/",
        ]
    );
    // Named in another crate's section is not named: `lib.rs` of the loopback, say.
    let loopback = section(&tree.doc, &member("mcpl-loopback")).expect("loopback has a section");
    let doc = tree
        .doc
        .replace(loopback, &loopback.replace("`lib.rs`", "its library"));
    assert_eq!(
        undocumented_files(&tree.members, &doc, &file_paths(&tree.sources)),
        [
            "docs/architecture.md: `crates/loopback/src/lib.rs` is not named (as `lib.rs`) in the section of `mcpl-loopback`"
        ]
    );
}

#[test]
fn a_dependency_against_the_layering_fails() {
    assert_eq!(
        layering_violations(&with_dependency("mcpl-lanes", "mcpl-budget", Kind::Normal)),
        [
            r#"mcpl-lanes may not depend on mcpl-budget (the layering allows ["mcpl-classify", "mcpl-redact"])"#
        ]
    );
    assert_eq!(
        layering_violations(&with_dependency("mcpl-client", "mcpl-lanes", Kind::Normal)),
        [
            r#"mcpl-client may not depend on mcpl-lanes (the layering allows ["mcpl-classify", "mcpl-tls"])"#
        ]
    );
    assert_eq!(
        layering_violations(&with_dependency(
            "mcpl-host",
            "mcpl-demo-server",
            Kind::Build
        ))
        .len(),
        1
    );
    // A library crate may take the loopback server for its tests, not for its users.
    assert_eq!(
        layering_violations(&with_dependency(
            "mcpl-fetch",
            "mcpl-loopback",
            Kind::Normal
        )),
        [
            r#"mcpl-fetch may not depend on mcpl-loopback (the layering allows ["mcpl-classify", "mcpl-lanes", "mcpl-budget", "mcpl-tls"])"#
        ]
    );
    assert_eq!(
        layering_violations(&with_dependency("mcpl-fetch", "mcpl-loopback", Kind::Dev)),
        Vec::<String>::new()
    );
    assert_eq!(
        layering_violations(&with_dependency(
            "mcpl-encode",
            "mcpl-testkit",
            Kind::Normal
        ))
        .len(),
        1
    );
}

#[test]
fn depending_on_the_binary_crate_fails() {
    assert_eq!(
        layering_violations(&with_dependency("mcpl-host", "mcpl-cli", Kind::Dev)),
        ["mcpl-host depends on mcpl-cli (Dev), which nothing may depend on"]
    );
}

#[test]
fn a_member_without_a_layering_rule_fails() {
    let mut members = tree().members.clone();
    members.push(Member {
        name: "mcpl-new".to_owned(),
        dir: "crates/new".to_owned(),
        dependencies: Vec::new(),
    });
    assert_eq!(
        layering_violations(&members),
        ["mcpl-new has no rule in the layering"]
    );
}

#[test]
fn a_dev_dependency_cycle_fails() {
    // lanes <- budget <- encode: a lanes doctest through encode would compile lanes twice.
    assert_eq!(
        dev_cycles(&with_dependency("mcpl-lanes", "mcpl-encode", Kind::Dev)),
        ["mcpl-lanes has a dev-dependency on mcpl-encode, which depends on it"]
    );
    assert_eq!(
        dev_cycles(&with_dependency("mcpl-encode", "mcpl-host", Kind::Dev)).len(),
        1
    );
    assert_eq!(
        dev_cycles(&with_dependency("mcpl-host", "mcpl-encode", Kind::Dev)),
        Vec::<String>::new()
    );
}

#[test]
fn a_restricted_dependency_fails() {
    assert_eq!(
        restricted_dependencies(&with_dependency("mcpl-encode", "ureq", Kind::Normal)),
        [
            r#"mcpl-encode may not depend on ureq (only ["mcpl-fetch", "mcpl-client", "mcpl-model", "mcpl-auth", "mcpl-tls"] may)"#
        ]
    );
    assert_eq!(
        restricted_dependencies(&with_dependency("mcpl-host", "tungstenite", Kind::Normal)),
        [
            r#"mcpl-host may not depend on tungstenite (only ["mcpl-client", "mcpl-demo-server"] may)"#
        ]
    );
    for name in ["clap", "tracing-subscriber", "anyhow"] {
        assert_eq!(
            restricted_dependencies(&with_dependency("mcpl-host", name, Kind::Normal)),
            [format!(
                r#"mcpl-host may not depend on {name} (only ["mcpl-cli", "xtask"] may)"#
            )]
        );
    }
    // Tests may use what users must not get.
    assert_eq!(
        restricted_dependencies(&with_dependency("mcpl-lanes", "anyhow", Kind::Dev)),
        Vec::<String>::new()
    );
    assert!(member("mcpl-fetch").uses("ureq"));
}

#[test]
fn process_spawning_outside_the_spawners_fails() {
    let tree = tree();
    let source = |path: &str, text: &str| Source {
        path: path.to_owned(),
        text: text.to_owned(),
    };
    let sources = [
        source(
            "crates/fetch/src/a.rs",
            "use std::process::Command;\nfn f() {}\n",
        ),
        source(
            "crates/encode/src/b.rs",
            "use std::process::{\n    Child,\n    Command as Cmd,\n};\n",
        ),
        source(
            "crates/host/src/c.rs",
            "fn f() { std::process::Command::new(\"x\"); }\n",
        ),
        source("crates/lanes/src/d.rs", "use std::process::*;\n"),
        source(
            "crates/budget/src/e.rs",
            "use std::os::unix::process::CommandExt;\n",
        ),
        // Not spawning: another process item, a comment, a test module, an allowed crate.
        source(
            "crates/budget/src/f.rs",
            "let id = std::process::id();\n// std::process::Command\n",
        ),
        source(
            "crates/lanes/src/g.rs",
            "fn f() {}\n\n#[cfg(test)]\nmod tests {\n    use std::process::Command;\n}\n",
        ),
        source("crates/client/src/lib.rs", "use std::process::Command;\n"),
        source(
            "xtask/src/main.rs",
            "use std::process::{Command, ExitCode};\n",
        ),
    ];
    let paths: Vec<String> = process_spawning(&tree.members, &sources)
        .into_iter()
        .map(|p| p.split(':').next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        paths,
        [
            "crates/fetch/src/a.rs",
            "crates/encode/src/b.rs",
            "crates/host/src/c.rs",
            "crates/lanes/src/d.rs",
            "crates/budget/src/e.rs",
        ]
    );
}

#[test]
fn a_document_naming_the_outside_folder_fails() {
    let folder = ["sha", "red"].concat();
    let documents = [
        Source {
            path: "crates/a/README.md".to_owned(),
            text: format!("See `../../../{folder}/spec/a.md`."),
        },
        Source {
            path: "crates/b/README.md".to_owned(),
            text: "See `docs/b.md`; shared by every crate.".to_owned(),
        },
    ];
    assert_eq!(
        names_outside_folder(&documents),
        [format!(
            "crates/a/README.md: names the {folder}/ folder; point to docs/ instead"
        )]
    );
}
