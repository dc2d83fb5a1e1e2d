//! `cargo xtask e2e`: mcpl against real third-party MCP servers (docs/decisions/0015-e2e.md).
//!
//! 1. Installs the npm servers that `e2e/package-lock.json` pins into `target/e2e/node_modules`
//!    (skipped when they were installed from the same lock file), and the PyPI servers that
//!    `e2e/python/requirements.txt` pins (`mcp-server-time`, and `fastmcp` running
//!    `e2e/python/fastmcp_server.py`) into a venv in `target/e2e/venv` (skipped the same way).
//! 2. Builds `mcpl` and writes real media files, some of them mislabelled, for the filesystem
//!    server into `target/e2e/run/files`.
//! 3. Plays each scripted conversation in `e2e/` through `mcpl run --transcript` (the PyPI
//!    servers' with `e2e/pypi.config.json`), and the worked
//!    example of `docs/run.md` (`examples/memory/`, as it is, with the server through `npx`),
//!    and the everything conversation again with server-everything over Streamable HTTP
//!    (`dist/index.js streamableHttp`, `e2e/everything-http.config.json`), checked the same.
//! 4. Checks the transcripts and `mcpl run`'s output, one line per check, and fails naming every
//!    check that failed, and that each run's `--report` page (`target/e2e/run/<name>.html`) holds
//!    its calls. Everything a run wrote stays in `target/e2e/run` to be read.
//! 5. Builds `examples/rmcp-host/` (a host on rmcp with mcpl-session) and checks what it prints
//!    for server-everything's calls (`rmcp_host.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::json::Json;

mod rmcp_host;

/// The servers the lock file pins, as `node_modules` paths of their stdio entry points.
const SERVER_ENTRY_POINTS: [&str; 3] = [
    "@modelcontextprotocol/server-everything/dist/index.js",
    "@modelcontextprotocol/server-filesystem/dist/index.js",
    "@modelcontextprotocol/server-memory/dist/index.js",
];
/// Written beside an installed `node_modules`: the lock file it was installed from.
const INSTALLED_LOCK: &str = ".mcpl-e2e-package-lock.json";
/// Written in the PyPI servers' venv: the requirements file it was installed from.
const INSTALLED_REQUIREMENTS: &str = ".mcpl-e2e-requirements.txt";
/// The budget `e2e/config.json` gives each server, in estimated tokens.
const BUDGET: u64 = 12_500;
/// The size of the noise the gzip tool compresses: big enough that its blob must be cut.
const NOISE_BYTES: usize = 2 * 1024 * 1024;
/// Strings that would show a uri reached the model.
const URI_SIGNS: [&str; 3] = ["demo://", "file://", "data:"];
/// The prompt `docs/run.md` gives the worked example.
const EXAMPLE_PROMPT: &str = "Remember who Ada Lovelace was.";
/// The calls of `examples/memory/script.json` as the model makes them: the two the script names
/// by their own names are routed to the one server offering them.
const EXAMPLE_CALLS: [&str; 3] = [
    "memory__create_entities",
    "memory__create_relations",
    "memory__search_nodes",
];
/// The memory server's tools, as the model is offered them.
const MEMORY_TOOLS: [&str; 9] = [
    "memory__create_entities",
    "memory__create_relations",
    "memory__add_observations",
    "memory__delete_entities",
    "memory__delete_observations",
    "memory__delete_relations",
    "memory__read_graph",
    "memory__search_nodes",
    "memory__open_nodes",
];

/// The exact marker texts of `crates/lanes/src/markers.rs`, copied so the check reads what a
/// model reads (a change there should fail here).
mod markers {
    pub(super) const IMAGE_NO_DATA: &str = "[Image: no data]";
    pub(super) const FETCH_HINT: &str = "fetch with fetch_reference";

    pub(super) fn image_not_renderable(what: &str, size: u64) -> String {
        format!(
            "[Image not shown: its bytes are not PNG, JPEG, GIF or WebP ({what}, {}).]",
            size_label(size)
        )
    }

    pub(super) fn audio_line(mime: &str, size: u64) -> String {
        format!("[audio: {mime}, {}]", size_label(size))
    }

    /// The start of `[Resource not shown: this host can't display its data (<mime>, <size>).]`.
    pub(super) fn resource_other_type(mime: &str) -> String {
        format!("[Resource not shown: this host can't display its data ({mime}, ")
    }

    /// The start of a stored copy's `[image: <mime>, <size>, ref <img ref>]`.
    pub(super) fn image_placeholder(mime: &str) -> String {
        format!("[image: {mime}, ")
    }

    /// `<n>B` below 1 KiB, `~<n>KB` below 1 MiB, else `~<x.y>MB`.
    pub(super) fn size_label(bytes: u64) -> String {
        const KIB: u64 = 1024;
        const MIB: u64 = 1024 * KIB;
        match bytes {
            b if b < KIB => format!("{b}B"),
            b if b < MIB => format!("~{}KB", (b + KIB / 2) / KIB),
            b => {
                let tenths = (b * 10 + MIB / 2) / MIB;
                format!("~{}.{}MB", tenths / 10, tenths % 10)
            }
        }
    }
}

/// What one tool call's result must look like to the model.
enum Expect {
    /// The live copy holds a native image of this media type whose base64 data is `data`
    /// (or starts with it), and the stored copy its placeholder.
    Image {
        media_type: &'static str,
        data: String,
        exact: bool,
    },
    /// The live copy's text holds this.
    Shows(String),
    /// The live copy's text does not hold this.
    Lacks(String),
    /// The live copy is text only.
    TextOnly,
    /// `mcpl run` priced the live copy within the budget, and its text is no longer than the
    /// budget at four characters a token.
    WithinBudget,
    /// `mcpl run` printed this for the user (`for you:`), a block the model is not given.
    ForUser(String),
}

/// One scripted call and what its result must look like.
struct Call {
    /// The name the model calls it by: `<server>__<tool>`.
    tool: &'static str,
    /// What the call is, for the check lines.
    label: &'static str,
    expect: Vec<Expect>,
}

/// One scripted conversation: `e2e/<name>.json` and its calls in order.
struct Conversation {
    name: &'static str,
    /// Played with `e2e/pypi.config.json` (the PyPI servers), not `e2e/config.json`.
    pypi: bool,
    calls: Vec<Call>,
}

/// The files written for the filesystem server, and their bytes.
struct Files {
    dir: PathBuf,
    png: Vec<u8>,
    jpeg: Vec<u8>,
    wav: Vec<u8>,
    zip: Vec<u8>,
}

pub(crate) fn e2e(root: &Path) -> Result<(), String> {
    let started = Instant::now();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let work = target.join("e2e");
    let node_modules = install(root, &work)?;
    let python = install_python(root, &work)?;
    crate::cargo(root, &["build", "-p", "mcpl-cli"])?;
    let mcpl = target
        .join("debug")
        .join(format!("mcpl{}", std::env::consts::EXE_SUFFIX));

    let run_dir = work.join("run");
    if run_dir.exists() {
        std::fs::remove_dir_all(&run_dir).map_err(|e| format!("{}: {e}", run_dir.display()))?;
    }
    let files = write_files(root, &run_dir.join("files"))?;
    let node = on_path("node")?;
    let vars: Vec<(&str, String)> = vec![
        ("NODE", node.display().to_string()),
        ("NODE_MODULES", node_modules.display().to_string()),
        ("FILES", files.dir.display().to_string()),
        ("SPILL", run_dir.join("spill").display().to_string()),
        ("NOISE_DATA_URI", noise_data_uri()),
        ("PYTHON", python.display().to_string()),
        (
            "PYTHON_SERVERS",
            root.join("e2e/python").display().to_string(),
        ),
    ];
    let config = run_dir.join("config.json");
    fill(&root.join("e2e/config.json"), &vars, &config)?;
    let pypi_config = run_dir.join("pypi.config.json");
    fill(&root.join("e2e/pypi.config.json"), &vars, &pypi_config)?;

    let mut checks = Checks::default();
    for conversation in conversations(&files) {
        play(
            root,
            &mcpl,
            if conversation.pypi {
                &pypi_config
            } else {
                &config
            },
            &run_dir,
            &vars,
            &conversation,
            &mut checks,
        )?;
    }
    play_memory_example(root, &mcpl, &work, &run_dir, &mut checks)?;
    play_everything_over_http(
        root,
        &mcpl,
        &node_modules,
        &run_dir,
        &vars,
        &files,
        &mut checks,
    )?;
    rmcp_host::play_rmcp_host(root, &target, &node_modules, &run_dir, &mut checks)?;
    let seconds = started.elapsed().as_secs_f64();
    if checks.failed.is_empty() {
        println!("\ne2e: {} checks passed in {seconds:.1} s", checks.passed);
        Ok(())
    } else {
        Err(format!(
            "{} of {} e2e checks failed (their lines above say why; files in {}):\n  {}",
            checks.failed.len(),
            checks.passed + checks.failed.len(),
            run_dir.display(),
            checks.failed.join("\n  ")
        ))
    }
}

/// The everything conversation again, with server-everything over Streamable HTTP
/// (`dist/index.js streamableHttp` on a free loopback port): the same checks as over stdio.
fn play_everything_over_http(
    root: &Path,
    mcpl: &Path,
    node_modules: &Path,
    run_dir: &Path,
    vars: &[(&str, String)],
    files: &Files,
    checks: &mut Checks,
) -> Result<(), String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    let entry = node_modules.join(SERVER_ENTRY_POINTS[0]);
    println!("\nxtask: server-everything streamableHttp on port {port}");
    let mut server = Command::new(on_path("node")?)
        .arg(&entry)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", entry.display()))?;
    let deadline = Instant::now() + std::time::Duration::from_secs(20);
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    while std::net::TcpStream::connect(address).is_err() {
        if Instant::now() > deadline {
            let _ = server.kill();
            return Err(format!("server-everything did not listen on port {port}"));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let http_dir = run_dir.join("http");
    let mut http_vars = vars.to_vec();
    http_vars.push(("EVERYTHING_URL", format!("http://127.0.0.1:{port}/mcp")));
    let outcome = std::fs::create_dir_all(&http_dir)
        .map_err(|e| format!("{}: {e}", http_dir.display()))
        .and_then(|()| {
            let config = http_dir.join("config.json");
            fill(
                &root.join("e2e/everything-http.config.json"),
                &http_vars,
                &config,
            )?;
            let everything = conversations(files)
                .into_iter()
                .find(|c| c.name == "everything")
                .ok_or("no everything conversation")?;
            checks.prefix = "http ";
            let played = play(
                root,
                mcpl,
                &config,
                &http_dir,
                &http_vars,
                &everything,
                checks,
            );
            checks.prefix = "";
            played
        });
    let _ = server.kill();
    let _ = server.wait();
    outcome
}

/// Installs the pinned servers with `npm ci` unless `node_modules` came from the same lock.
fn install(root: &Path, work: &Path) -> Result<PathBuf, String> {
    let node_modules = work.join("node_modules");
    let lock = read(&root.join("e2e/package-lock.json"))?;
    let installed = std::fs::read(node_modules.join(INSTALLED_LOCK)).ok();
    let complete = SERVER_ENTRY_POINTS
        .iter()
        .all(|entry| node_modules.join(entry).is_file());
    if installed.as_deref() == Some(lock.as_slice()) && complete {
        println!("xtask: npm servers already installed from e2e/package-lock.json");
        return Ok(node_modules);
    }
    std::fs::create_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
    for name in ["package.json", "package-lock.json"] {
        let to = work.join(name);
        std::fs::copy(root.join("e2e").join(name), &to)
            .map_err(|e| format!("{}: {e}", to.display()))?;
    }
    println!("xtask: npm ci in {}", work.display());
    // `npm ci` installs exactly the lock file's versions and integrity hashes, or fails.
    let status = Command::new("npm")
        .current_dir(work)
        .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
        .status()
        .map_err(|error| {
            format!("cannot run npm (Node 18 or later with npm is needed): {error}")
        })?;
    if !status.success() {
        return Err(format!("npm ci failed ({status})"));
    }
    std::fs::write(node_modules.join(INSTALLED_LOCK), &lock)
        .map_err(|e| format!("{}: {e}", node_modules.display()))?;
    Ok(node_modules)
}

/// Installs `e2e/python/requirements.txt` (the PyPI servers, every package pinned) into a venv
/// in `target/e2e/venv` unless it was installed from the same file; the venv's python.
fn install_python(root: &Path, work: &Path) -> Result<PathBuf, String> {
    let venv = work.join("venv");
    let python = if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    };
    let requirements_path = root.join("e2e/python/requirements.txt");
    let requirements = read(&requirements_path)?;
    let stamp = venv.join(INSTALLED_REQUIREMENTS);
    if std::fs::read(&stamp).ok().as_deref() == Some(requirements.as_slice()) && python.is_file() {
        println!("xtask: PyPI servers already installed from e2e/python/requirements.txt");
        return Ok(python);
    }
    println!(
        "xtask: pip install -r e2e/python/requirements.txt in {}",
        venv.display()
    );
    let _ = std::fs::remove_file(&stamp);
    let status = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .map_err(|e| format!("cannot run python3 (Python 3.10 or later is needed): {e}"))?;
    if !status.success() {
        return Err(format!(
            "python3 -m venv {} failed ({status})",
            venv.display()
        ));
    }
    let status = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&requirements_path)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !status.success() {
        return Err(format!("pip install failed ({status})"));
    }
    std::fs::write(&stamp, &requirements).map_err(|e| format!("{}: {e}", stamp.display()))?;
    Ok(python)
}

/// Real encoder files from the classifier's fixtures, and the ways the filesystem server
/// mislabels them: it picks the block by extension, so a ZIP or a JPEG named `.png` and an
/// empty `.png` all arrive as `image/png`.
fn write_files(root: &Path, dir: &Path) -> Result<Files, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // The server resolves its allowed folder through symlinks; paths must match it.
    let dir = std::fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let fixtures = root.join("crates/classify/tests/fixtures");
    let files = Files {
        png: read(&fixtures.join("image.png"))?,
        jpeg: read(&fixtures.join("baseline.jpg"))?,
        wav: read(&fixtures.join("tone.wav"))?,
        zip: read(&fixtures.join("archive.zip"))?,
        dir,
    };
    let writes: [(&str, &[u8]); 7] = [
        ("image.png", &files.png),
        ("baseline.jpg", &files.jpeg),
        ("jpeg_named.png", &files.jpeg),
        ("tone.wav", &files.wav),
        ("zip_named.png", &files.zip),
        ("empty.png", b""),
        ("archive.zip", &files.zip),
    ];
    for (name, bytes) in writes {
        let path = files.dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(files)
}

/// The conversations in `e2e/`, and what each call's result must look like.
fn conversations(files: &Files) -> Vec<Conversation> {
    use Expect::{Shows, TextOnly, WithinBudget};
    let size = |bytes: &[u8]| bytes.len() as u64;
    let shows = |text: &str| Shows(text.to_owned());
    let links = |name: &str| {
        shows(&format!(
            "{name} — text/plain claimed — from tool result — {}",
            markers::FETCH_HINT
        ))
    };
    let read = "filesystem__read_media_file";
    vec![
        Conversation {
            name: "everything",
            pypi: false,
            calls: vec![
                call(
                    "everything__get-tiny-image",
                    "get-tiny-image",
                    vec![png_image()],
                ),
                call(
                    "everything__get-annotated-message",
                    "get-annotated-message (error, with an image for the user alone)",
                    vec![
                        shows("Error: Operation failed"),
                        TextOnly,
                        shows("[mcpl: 1 content block was shown to the user, not to you]"),
                        Expect::ForUser("[image block]".to_owned()),
                    ],
                ),
                call(
                    "everything__get-annotated-message",
                    "get-annotated-message (success, for the user alone)",
                    vec![
                        TextOnly,
                        shows("[mcpl: 1 content block was shown to the user, not to you]"),
                        Expect::ForUser("Operation completed successfully".to_owned()),
                    ],
                ),
                call(
                    "everything__get-annotated-message",
                    "get-annotated-message (debug, for the model alone)",
                    vec![TextOnly, shows("Debug: Cache hit ratio 0.95")],
                ),
                call(
                    "everything__get-resource-reference",
                    "get-resource-reference (Text)",
                    vec![TextOnly, shows("Resource 1: This is a plaintext resource")],
                ),
                call(
                    "everything__get-resource-reference",
                    "get-resource-reference (Blob)",
                    vec![TextOnly, Shows(markers::resource_other_type("text/plain"))],
                ),
                call(
                    "everything__get-resource-links",
                    "get-resource-links (2)",
                    vec![TextOnly, links("Blob Resource 1"), links("Text Resource 2")],
                ),
                call(
                    "everything__get-structured-content",
                    "get-structured-content (Chicago)",
                    vec![
                        TextOnly,
                        shows("\"temperature\":"),
                        Expect::Lacks("[mcpl: structuredContent".to_owned()),
                    ],
                ),
                call(
                    "everything__gzip-file-as-resource",
                    "gzip-file-as-resource (2 MiB of noise)",
                    vec![
                        TextOnly,
                        WithinBudget,
                        Shows(markers::resource_other_type("application/gzip")),
                    ],
                ),
                call(
                    "everything__trigger-long-running-operation",
                    "trigger-long-running-operation (progress, 3 steps)",
                    vec![TextOnly, shows("Long running operation completed")],
                ),
                call(
                    "everything__simulate-research-query",
                    "simulate-research-query (a task, 2025-11-25)",
                    vec![TextOnly, shows("# Research Report: MCP")],
                ),
            ],
        },
        Conversation {
            name: "filesystem",
            pypi: false,
            calls: vec![
                call(
                    read,
                    "read_media_file image.png",
                    vec![image("image/png", &files.png)],
                ),
                call(
                    read,
                    "read_media_file baseline.jpg",
                    vec![image("image/jpeg", &files.jpeg)],
                ),
                call(
                    read,
                    "read_media_file jpeg_named.png",
                    vec![image("image/jpeg", &files.jpeg)],
                ),
                call(
                    read,
                    "read_media_file tone.wav",
                    vec![
                        TextOnly,
                        Shows(markers::audio_line("audio/wav", size(&files.wav))),
                    ],
                ),
                call(
                    read,
                    "read_media_file zip_named.png",
                    vec![
                        TextOnly,
                        Shows(markers::image_not_renderable(
                            "application/zip",
                            size(&files.zip),
                        )),
                    ],
                ),
                call(
                    read,
                    "read_media_file empty.png",
                    vec![TextOnly, shows(markers::IMAGE_NO_DATA)],
                ),
                call(
                    read,
                    "read_media_file archive.zip",
                    vec![
                        TextOnly,
                        shows("[Resource not shown: this host can't display its data ("),
                    ],
                ),
                call(
                    "filesystem__list_allowed_directories",
                    "list_allowed_directories",
                    vec![TextOnly, Shows(files.dir.display().to_string())],
                ),
            ],
        },
        Conversation {
            name: "time",
            pypi: true,
            calls: vec![
                call(
                    "time__get_current_time",
                    "get_current_time Europe/Paris",
                    vec![
                        TextOnly,
                        shows("\"timezone\": \"Europe/Paris\""),
                        shows("\"day_of_week\""),
                        no_mismatch(),
                    ],
                ),
                call(
                    "time__convert_time",
                    "convert_time 12:00 America/New_York to Asia/Tokyo",
                    vec![
                        TextOnly,
                        shows("\"timezone\": \"America/New_York\""),
                        shows("T12:00:00"),
                        shows("\"timezone\": \"Asia/Tokyo\""),
                        shows("\"time_difference\""),
                        no_mismatch(),
                    ],
                ),
            ],
        },
        Conversation {
            name: "fastmcp",
            pypi: true,
            calls: vec![
                call(
                    "fastmcp__forecast",
                    "forecast (structuredContent of its return type's outputSchema)",
                    vec![
                        TextOnly,
                        shows("\"city\":\"Lyon\""),
                        shows("\"conditions\":\"sunny\""),
                        no_mismatch(),
                    ],
                ),
                call(
                    "fastmcp__count",
                    "count (progress, 3 steps)",
                    vec![TextOnly, shows("Counted to 3."), no_mismatch()],
                ),
                call(
                    "fastmcp__unlock",
                    "unlock (enables vault: tools/list_changed)",
                    vec![TextOnly, shows("The vault tool is now available.")],
                ),
                call(
                    "fastmcp__vault",
                    "vault (offered once unlock ran)",
                    vec![TextOnly, shows("The vault holds the e2e secret: 42.")],
                ),
            ],
        },
    ]
}

/// No line saying the structured content does not match the tool's `outputSchema`.
fn no_mismatch() -> Expect {
    Expect::Lacks("[mcpl: structuredContent".to_owned())
}

fn call(tool: &'static str, label: &'static str, expect: Vec<Expect>) -> Call {
    Call {
        tool,
        label,
        expect,
    }
}

/// A native image with exactly these bytes.
fn image(media_type: &'static str, bytes: &[u8]) -> Expect {
    Expect::Image {
        media_type,
        data: base64(bytes),
        exact: true,
    }
}

/// A native PNG: its base64 starts with the PNG signature's.
fn png_image() -> Expect {
    Expect::Image {
        media_type: "image/png",
        data: "iVBORw0KGgo".to_owned(),
        exact: false,
    }
}

/// Plays one conversation through `mcpl run` and checks what it wrote.
fn play(
    root: &Path,
    mcpl: &Path,
    config: &Path,
    run_dir: &Path,
    vars: &[(&str, String)],
    conversation: &Conversation,
    checks: &mut Checks,
) -> Result<(), String> {
    let name = conversation.name;
    let script_path = run_dir.join(format!("{name}.script.json"));
    let script_text = fill(&root.join(format!("e2e/{name}.json")), vars, &script_path)?;
    let script = Json::parse(&script_text).map_err(|e| format!("e2e/{name}.json: {e}"))?;
    let steps = script.get("steps").map(Json::items).unwrap_or_default();
    let answer = script
        .get("final")
        .and_then(Json::as_str)
        .unwrap_or_default();
    // Which step each call is made in, and its model-facing name, in order.
    let mut scripted: Vec<(usize, String)> = Vec::new();
    for (step, turn) in steps.iter().enumerate() {
        for call in turn.get("tool_calls").map(Json::items).unwrap_or_default() {
            let server = call
                .get("server")
                .and_then(Json::as_str)
                .unwrap_or_default();
            let tool = call.get("name").and_then(Json::as_str).unwrap_or_default();
            scripted.push((step, format!("{server}__{tool}")));
        }
    }
    let expected: Vec<&str> = conversation.calls.iter().map(|c| c.tool).collect();
    let names: Vec<&str> = scripted.iter().map(|(_, n)| n.as_str()).collect();
    if names != expected {
        return Err(format!(
            "e2e/{name}.json calls {names:?}, but xtask expects {expected:?}"
        ));
    }

    let transcript = run_dir.join(format!("{name}.jsonl"));
    let report = run_dir.join(format!("{name}.html"));
    println!("\nxtask: mcpl run {name}");
    let started = Instant::now();
    let output = Command::new(mcpl)
        .arg("run")
        .arg("--config")
        .arg(config)
        .arg("--model")
        .arg(format!("scripted:{}", script_path.display()))
        .arg("--transcript")
        .arg(&transcript)
        .arg("--report")
        .arg(&report)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", mcpl.display()))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    std::fs::write(run_dir.join(format!("{name}.stderr")), stderr.as_bytes())
        .map_err(|e| format!("{}: {e}", run_dir.display()))?;
    checks.check(
        format!(
            "{name}: mcpl run exits 0 with the final answer on stdout ({:.1} s)",
            started.elapsed().as_secs_f64()
        ),
        if output.status.success() && stdout == format!("{answer}\n") {
            Ok(())
        } else {
            Err(format!(
                "{}; stdout {stdout:?}; stderr {stderr:?}",
                output.status
            ))
        },
    );
    check_report(checks, name, &report, &expected);
    if name == "everything" {
        // Its first turn's tools all say `readOnlyHint: true`: they run at once (decision 0132),
        // and each call's notes on the report page say so.
        let first = scripted.iter().filter(|(step, _)| *step == 0).count();
        let page = std::fs::read_to_string(&report).unwrap_or_default();
        let note = format!(
            "ran at the same time as {} other calls of tools that say they only read",
            first.saturating_sub(1)
        );
        checks.check(
            format!("{name}: the first turn's {first} read-only calls ran at the same time"),
            expect_eq(page.matches(note.as_str()).count(), first),
        );
    }

    let text = std::fs::read_to_string(&transcript).unwrap_or_default();
    let parsed: Result<Vec<Json>, String> = text
        .lines()
        .enumerate()
        .map(|(i, line)| Json::parse(line).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect();
    // Progress and task lines (`{"notice": ...}`) sit between the request bodies.
    let parsed = parsed.map(|lines| {
        lines
            .into_iter()
            .filter(|line| line.get("notice").is_none())
            .collect::<Vec<_>>()
    });
    let bodies = match parsed {
        Ok(bodies) => bodies,
        Err(error) => {
            checks.check(format!("{name}: every transcript line is JSON"), Err(error));
            return Ok(());
        }
    };
    checks.check(
        format!(
            "{name}: one request per model turn ({} lines of JSON)",
            steps.len() + 1
        ),
        expect_eq(bodies.len(), steps.len() + 1),
    );
    let Some(last) = bodies.last() else {
        return Ok(());
    };

    // The k-th tool_use block is the k-th scripted call; results are matched by its id.
    let uses: Vec<(String, String)> = messages(last)
        .iter()
        .filter(|m| m.get("role").and_then(Json::as_str) == Some("assistant"))
        .flat_map(|m| m.get("content").map(Json::items).unwrap_or_default())
        .filter(|block| block.get("type").and_then(Json::as_str) == Some("tool_use"))
        .map(|block| {
            let field = |key| {
                block
                    .get(key)
                    .and_then(Json::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            (field("id"), field("name"))
        })
        .collect();
    let used: Vec<&str> = uses.iter().map(|(_, n)| n.as_str()).collect();
    checks.check(
        format!("{name}: the assistant turns call the scripted tools in order"),
        expect_eq(used.clone(), expected.clone()),
    );
    if name == "everything" || name == "fastmcp" {
        // The server's instructions, fenced, the same bytes in every request.
        let system = |body: &Json| {
            let mut text = String::new();
            if let Some(system) = body.get("system") {
                system.visit_strings(&[], &mut |piece| text.push_str(piece));
            }
            text
        };
        let first = system(&bodies[0]);
        checks.check(
            format!(
                "{name}: the server's instructions are fenced in every request's system prompt"
            ),
            if !first.contains(&format!("<server-instructions server=\"{name}\">")) {
                Err(cut(&first))
            } else if bodies.iter().any(|body| system(body) != first) {
                Err("the system prompt changed between requests".to_owned())
            } else {
                Ok(())
            },
        );
    }
    for (tool, line) in [
        (
            "everything__trigger-long-running-operation",
            "mcpl: progress everything/trigger-long-running-operation: 3/3",
        ),
        ("fastmcp__count", "mcpl: progress fastmcp/count: 3/3"),
    ] {
        if !expected.contains(&tool) {
            continue;
        }
        // The server's progress, shown as it came: the last step is always shown, with the
        // server's message after it when it sent one.
        checks.check(
            format!("{name}: mcpl run shows the server's progress on stderr"),
            if stderr.lines().any(|l| {
                l.strip_prefix(line)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
            }) {
                Ok(())
            } else {
                Err(format!("no line {line:?} in {stderr:?}"))
            },
        );
    }
    if name == "fastmcp" {
        // `vault` is disabled until `unlock` enables it for the session; fastmcp then sends
        // `notifications/tools/list_changed`, and mcpl lists the tools again before the turn
        // that calls it.
        let offers = |body: &Json| {
            body.get("tools")
                .map(Json::items)
                .unwrap_or_default()
                .iter()
                .any(|tool| tool.get("name").and_then(Json::as_str) == Some("fastmcp__vault"))
        };
        let unlocked = scripted
            .iter()
            .find(|(_, tool)| tool == "fastmcp__unlock")
            .map_or(0, |(step, _)| step + 1);
        let offered: Vec<bool> = bodies.iter().map(offers).collect();
        checks.check(
            format!(
                "{name}: fastmcp__vault is offered from the request after unlock's call (list_changed), not before"
            ),
            expect_eq(
                offered,
                (0..bodies.len()).map(|line| line >= unlocked).collect(),
            ),
        );
    }
    if expected.contains(&"everything__simulate-research-query") {
        // A tool that says `execution.taskSupport: "required"`: called with `params.task`
        // (revision 2025-11-25), answered with a task, polled until it completed.
        let prefix = "mcpl: task everything/simulate-research-query (";
        let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with(prefix)).collect();
        checks.check(
            format!("{name}: mcpl run shows the research task's status until it completed"),
            if lines.last().is_some_and(|l| l.contains("): completed")) {
                Ok(())
            } else {
                Err(format!("task lines {lines:?} in {stderr:?}"))
            },
        );
    }
    let tokens = estimated_tokens(&stderr);
    let printed = for_user(&stderr);
    checks.check(
        format!("{name}: mcpl run reports each call's estimated tokens on stderr"),
        expect_eq(
            tokens.iter().map(|(n, _)| n.as_str()).collect(),
            expected.clone(),
        ),
    );
    if used != expected {
        return Ok(());
    }

    for (index, ((step, _), call)) in scripted.iter().zip(&conversation.calls).enumerate() {
        let id = &uses[index].0;
        let what = format!("{name}: {}", call.label);
        // The round after the call sends its live copy; later rounds its stored copy.
        let live = bodies.get(step + 1).and_then(|body| tool_result(body, id));
        let Some(live) = live else {
            checks.check(
                format!("{what}: its result is in the next request"),
                Err("missing".to_owned()),
            );
            continue;
        };
        let stored: Vec<&Json> = bodies
            .iter()
            .skip(step + 2)
            .filter_map(|body| tool_result(body, id))
            .collect();
        for expect in &call.expect {
            if let Expect::ForUser(wanted) = expect {
                let shown = printed.get(index).cloned().unwrap_or_default();
                checks.check(
                    format!("{what}: printed for the user: {}", cut(wanted)),
                    if shown.contains(wanted) {
                        Ok(())
                    } else {
                        Err(format!("printed {shown:?}"))
                    },
                );
                continue;
            }
            check_live(
                checks,
                &what,
                expect,
                live,
                tokens.get(index).map(|(_, t)| *t),
            );
            if let Expect::Image { media_type, .. } = expect
                && let Some(copy) = stored.first()
            {
                checks.check(
                    format!(
                        "{what}: its stored copy shows {}...]",
                        markers::image_placeholder(media_type)
                    ),
                    contains(&text_of(copy), &markers::image_placeholder(media_type)),
                );
            }
        }
        if !stored.is_empty() {
            checks.check(
                format!("{what}: later rounds carry its stored copy, text only"),
                match stored.iter().find(|copy| !images(copy).is_empty()) {
                    None => Ok(()),
                    Some(copy) => Err(cut(&format!("{copy:?}"))),
                },
            );
        }
    }

    let mut shown = Vec::new();
    for (line, body) in bodies.iter().enumerate() {
        // The tool_use inputs are the scripted model's own arguments (the data: URI among
        // them), and `tools` holds the servers' own descriptions: neither is server content.
        let seen = Json::Array(vec![
            body.get("system").cloned().unwrap_or(Json::Null),
            body.get("messages").cloned().unwrap_or(Json::Null),
        ]);
        seen.visit_strings(&["input"], &mut |s| {
            for sign in URI_SIGNS {
                if has_uri(s, sign) {
                    shown.push(format!("line {}: {sign} in {:?}", line + 1, cut(s)));
                }
            }
        });
    }
    checks.check(
        format!("{name}: no uri ({}) in any message", URI_SIGNS.join(", ")),
        if shown.is_empty() {
            Ok(())
        } else {
            Err(shown.join("; "))
        },
    );
    Ok(())
}

/// Runs the worked example of `docs/run.md` as the guide shows it (`examples/memory/`'s files as
/// they are, `npx` starting the server) and checks what it printed, sent and stored.
fn play_memory_example(
    root: &Path,
    mcpl: &Path,
    work: &Path,
    run_dir: &Path,
    checks: &mut Checks,
) -> Result<(), String> {
    let example = root.join("examples/memory");
    let script = example.join("script.json");
    let answer = Json::parse(&String::from_utf8_lossy(&read(&script)?))
        .map_err(|e| format!("{}: {e}", script.display()))?
        .get("final")
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_owned();
    let guide = String::from_utf8_lossy(&read(&root.join("docs/run.md"))?).into_owned();
    let graph = run_dir.join("memory.jsonl");
    let transcript = run_dir.join("memory-run.jsonl");
    let report = run_dir.join("memory-run.html");
    on_path("npx")?;
    println!("\nxtask: mcpl run examples/memory");
    let started = Instant::now();
    // npx finds the pinned server in `node_modules` here, and offline it never downloads one:
    // the run uses exactly what the lock file installed, or fails. A server inherits only a
    // short list of mcpl's environment (decision 0101), so the setting goes in the project's
    // `.npmrc`, which npx reads; it is removed after the run, so a later `npm ci` downloads.
    let npmrc = work.join(".npmrc");
    std::fs::write(&npmrc, "offline=true\n").map_err(|e| format!("{}: {e}", npmrc.display()))?;
    let output = Command::new(mcpl)
        .current_dir(work)
        // The example's `inheritEnv` passes it to the server.
        .env("MEMORY_FILE_PATH", &graph)
        .arg("run")
        .arg("--config")
        .arg(example.join("config.json"))
        .arg("--model")
        .arg(format!("scripted:{}", script.display()))
        .arg("--transcript")
        .arg(&transcript)
        .arg("--report")
        .arg(&report)
        .arg("--prompt")
        .arg(EXAMPLE_PROMPT)
        .output();
    let _ = std::fs::remove_file(&npmrc);
    let output = output.map_err(|e| format!("cannot run {}: {e}", mcpl.display()))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    std::fs::write(run_dir.join("memory-run.stderr"), stderr.as_bytes())
        .map_err(|e| format!("{}: {e}", run_dir.display()))?;
    let what = "memory example";
    checks.check(
        format!(
            "{what}: mcpl run exits 0 with the script's final answer ({:.1} s)",
            started.elapsed().as_secs_f64()
        ),
        if output.status.success() && stdout == format!("{answer}\n") {
            Ok(())
        } else {
            Err(format!(
                "{}; stdout {stdout:?}; stderr {stderr:?}",
                output.status
            ))
        },
    );
    check_report(checks, what, &report, &EXAMPLE_CALLS);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("mcpl: "))
        .collect();
    let tokens = estimated_tokens(&stderr);
    checks.check(
        format!("{what}: stderr holds one line per call, own names routed to memory__<tool>"),
        expect_eq(
            (
                lines.len(),
                tokens.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            ),
            (EXAMPLE_CALLS.len(), EXAMPLE_CALLS.to_vec()),
        ),
    );
    let missing: Vec<&str> = lines
        .iter()
        .copied()
        .chain(stdout.lines())
        .filter(|line| !guide.contains(line))
        .collect();
    checks.check(
        format!("{what}: docs/run.md shows every line the run printed"),
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("not in the guide: {missing:?}"))
        },
    );

    let text = std::fs::read_to_string(&transcript).unwrap_or_default();
    let bodies: Vec<Json> = match text.lines().map(Json::parse).collect() {
        Ok(bodies) => bodies,
        Err(error) => {
            checks.check(format!("{what}: every transcript line is JSON"), Err(error));
            return Ok(());
        }
    };
    checks.check(
        format!("{what}: one request per model turn (4 lines of JSON)"),
        expect_eq(bodies.len(), EXAMPLE_CALLS.len() + 1),
    );
    let Some(last) = bodies.last() else {
        return Ok(());
    };
    let offered: Vec<&str> = bodies[0]
        .get("tools")
        .map(Json::items)
        .unwrap_or_default()
        .iter()
        .filter_map(|tool| tool.get("name").and_then(Json::as_str))
        .collect();
    let mut expected = vec!["fetch_reference", "read_result"];
    expected.extend(MEMORY_TOOLS);
    checks.check(
        format!(
            "{what}: the model is offered fetch_reference, read_result and the server's nine tools"
        ),
        expect_eq(offered, expected),
    );
    let used: Vec<&str> = messages(last)
        .iter()
        .flat_map(|m| m.get("content").map(Json::items).unwrap_or_default())
        .filter(|block| block.get("type").and_then(Json::as_str) == Some("tool_use"))
        .filter_map(|block| block.get("name").and_then(Json::as_str))
        .collect();
    checks.check(
        format!(
            "{what}: the assistant turns call {}",
            EXAMPLE_CALLS.join(", ")
        ),
        expect_eq(used, EXAMPLE_CALLS.to_vec()),
    );
    let found = tool_result(last, "call_3").map(text_of).unwrap_or_default();
    for wanted in [
        "\"name\": \"Analytical Engine\"",
        "\"from\": \"Ada Lovelace\"",
        "\"relationType\": \"wrote programs for\"",
    ] {
        checks.check(
            format!("{what}: the search's result shows {wanted}"),
            contains(&found, wanted),
        );
    }
    let stored = std::fs::read_to_string(&graph).unwrap_or_default();
    let kinds: Vec<String> = stored
        .lines()
        .map(|line| match Json::parse(line) {
            Ok(item) => item
                .get("type")
                .and_then(Json::as_str)
                .unwrap_or("(no type)")
                .to_owned(),
            Err(error) => error,
        })
        .collect();
    checks.check(
        format!("{what}: MEMORY_FILE_PATH holds two entities and a relation"),
        expect_eq(
            kinds,
            ["entity", "entity", "relation"].map(str::to_owned).to_vec(),
        ),
    );
    Ok(())
}

/// `mcpl run --report`'s page (decision 0122): an HTML page holding each call the run made (a
/// `data-tool` mark per call, by the tool's own name on its server) and its tools offered.
fn check_report(checks: &mut Checks, what: &str, report: &Path, calls: &[&str]) {
    let page = std::fs::read_to_string(report).unwrap_or_default();
    let missing: Vec<String> = calls
        .iter()
        .filter(|call| {
            let own = call.split_once("__").map_or(**call, |(_, tool)| tool);
            !page.contains(&format!("data-tool=\"{own}\"")) || !page.contains(**call)
        })
        .map(|call| (*call).to_owned())
        .collect();
    checks.check(
        format!(
            "{what}: the report page {} holds every call",
            report.file_name().and_then(|n| n.to_str()).unwrap_or("?")
        ),
        if !page.starts_with("<!DOCTYPE html>") {
            Err(format!("{} is not an HTML page", report.display()))
        } else if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("no {}", missing.join(", ")))
        },
    );
}

fn check_live(checks: &mut Checks, what: &str, expect: &Expect, live: &Json, tokens: Option<u64>) {
    let text = text_of(live);
    match expect {
        Expect::Image {
            media_type,
            data,
            exact,
        } => {
            let found = images(live);
            let matches = |(t, d): &(String, String)| {
                t == media_type
                    && if *exact {
                        d == data
                    } else {
                        d.starts_with(data.as_str())
                    }
            };
            checks.check(
                format!(
                    "{what}: live copy has a native {media_type} image{}",
                    if *exact { " with the file's bytes" } else { "" }
                ),
                if found.iter().any(matches) {
                    Ok(())
                } else {
                    let types: Vec<&str> = found.iter().map(|(t, _)| t.as_str()).collect();
                    Err(format!("images {types:?}; text {:?}", cut(&text)))
                },
            );
        }
        Expect::Shows(wanted) => checks.check(
            format!("{what}: shows {}", cut(wanted)),
            contains(&text, wanted),
        ),
        Expect::Lacks(unwanted) => checks.check(
            format!("{what}: does not show {}", cut(unwanted)),
            if text.contains(unwanted.as_str()) {
                Err(cut(&text))
            } else {
                Ok(())
            },
        ),
        Expect::TextOnly => checks.check(
            format!("{what}: live copy is text only"),
            if images(live).is_empty() {
                Ok(())
            } else {
                Err(format!("{live:?}"))
            },
        ),
        Expect::WithinBudget => {
            checks.check(
                format!("{what}: estimated tokens on stderr at most {BUDGET}"),
                match tokens {
                    Some(t) if t <= BUDGET => Ok(()),
                    Some(t) => Err(format!("{t} estimated tokens")),
                    None => Err("no stderr line for the call".to_owned()),
                },
            );
            let chars = text.chars().count();
            checks.check(
                format!("{what}: live text of {chars} characters, at most {BUDGET} tokens at 4 a token, from {NOISE_BYTES} bytes"),
                if chars as u64 <= BUDGET * 4 { Ok(()) } else { Err(format!("{chars} characters")) },
            );
        }
        Expect::ForUser(_) => {}
    }
}

/// Pass and fail lines, one per check.
#[derive(Default)]
struct Checks {
    passed: usize,
    failed: Vec<String>,
    /// Put before each check's name: which transport a conversation was played over.
    prefix: &'static str,
}

impl Checks {
    fn check(&mut self, what: String, outcome: Result<(), String>) {
        let what = format!("{}{what}", self.prefix);
        match outcome {
            Ok(()) => {
                println!("ok    {what}");
                self.passed += 1;
            }
            Err(why) => {
                println!("FAIL  {what}: {why}");
                self.failed.push(what);
            }
        }
    }
}

fn expect_eq<T: PartialEq + std::fmt::Debug>(found: T, expected: T) -> Result<(), String> {
    if found == expected {
        Ok(())
    } else {
        Err(format!("found {found:?}, expected {expected:?}"))
    }
}

fn contains(text: &str, wanted: &str) -> Result<(), String> {
    if text.contains(wanted) {
        Ok(())
    } else {
        Err(format!("not in {:?}", cut(text)))
    }
}

/// A long string cut for a message.
fn cut(text: &str) -> String {
    match text.char_indices().nth(300) {
        Some((at, _)) => format!("{}...(+{} bytes)", &text[..at], text.len() - at),
        None => text.to_owned(),
    }
}

/// A `data:` at the start of a word is a uri; `metadata:` is not.
fn has_uri(text: &str, sign: &str) -> bool {
    text.match_indices(sign).any(|(at, _)| {
        !text[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric())
    })
}

fn messages(body: &Json) -> &[Json] {
    body.get("messages").map(Json::items).unwrap_or_default()
}

/// The `content` of the `tool_result` block answering `id` in a Messages API body.
fn tool_result<'a>(body: &'a Json, id: &str) -> Option<&'a Json> {
    messages(body)
        .iter()
        .flat_map(|m| m.get("content").map(Json::items).unwrap_or_default())
        .find(|block| {
            block.get("type").and_then(Json::as_str) == Some("tool_result")
                && block.get("tool_use_id").and_then(Json::as_str) == Some(id)
        })
        .and_then(|block| block.get("content"))
}

/// The text blocks of a tool result's content, joined by newlines.
fn text_of(content: &Json) -> String {
    match content {
        Json::String(text) => text.clone(),
        _ => content
            .items()
            .iter()
            .filter_map(|block| block.get("text").and_then(Json::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The image blocks of a tool result's content: media type and base64 data.
fn images(content: &Json) -> Vec<(String, String)> {
    content
        .items()
        .iter()
        .filter(|block| block.get("type").and_then(Json::as_str) == Some("image"))
        .map(|block| {
            let source = |key| {
                block
                    .get("source")
                    .and_then(|s| s.get(key))
                    .and_then(Json::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            (source("media_type"), source("data"))
        })
        .collect()
}

/// `mcpl run`'s stderr lines `mcpl: round <n> <tool>: <tokens> estimated tokens...`, in order.
fn estimated_tokens(stderr: &str) -> Vec<(String, u64)> {
    stderr
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("mcpl: round ")?;
            let (_, rest) = rest.split_once(' ')?;
            let (tool, rest) = rest.split_once(": ")?;
            if tool.contains(' ') {
                return None;
            }
            let (tokens, _) = rest.split_once(" estimated tokens")?;
            Some((tool.to_owned(), tokens.parse().ok()?))
        })
        .collect()
}

/// What `mcpl run` printed for the user after each call's line (`mcpl: round <n> <tool> for
/// you: <text>`), one list per call, in order.
fn for_user(stderr: &str) -> Vec<Vec<String>> {
    let mut calls: Vec<Vec<String>> = Vec::new();
    for line in stderr.lines() {
        let Some(rest) = line.strip_prefix("mcpl: round ") else {
            continue;
        };
        match rest.split_once(" for you: ") {
            Some((_, text)) => {
                if let Some(last) = calls.last_mut() {
                    last.push(text.to_owned());
                }
            }
            None if rest.contains(" estimated tokens") => calls.push(Vec::new()),
            None => {}
        }
    }
    calls
}

/// A template from `e2e/` with each `${NAME}` replaced by its value as JSON string text,
/// written to `to`.
fn fill(template: &Path, vars: &[(&str, String)], to: &Path) -> Result<String, String> {
    let mut text =
        String::from_utf8(read(template)?).map_err(|e| format!("{}: {e}", template.display()))?;
    for (name, value) in vars {
        text = text.replace(&format!("${{{name}}}"), &json_string_text(value));
    }
    if let Some(at) = text.find("${") {
        return Err(format!(
            "{}: unknown placeholder {}",
            template.display(),
            &text[at..text[at..].find('}').map_or(text.len(), |end| at + end + 1)]
        ));
    }
    std::fs::write(to, &text).map_err(|e| format!("{}: {e}", to.display()))?;
    Ok(text)
}

/// A string as it goes between the quotes of a JSON string.
fn json_string_text(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// A `data:` URI of [`NOISE_BYTES`] pseudo-random bytes, the same every run (xorshift64).
fn noise_data_uri() -> String {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut bytes = Vec::with_capacity(NOISE_BYTES);
    while bytes.len() < NOISE_BYTES {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        bytes.extend_from_slice(&state.to_le_bytes());
    }
    bytes.truncate(NOISE_BYTES);
    format!("data:application/octet-stream;base64,{}", base64(&bytes))
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let byte = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (byte(0) << 16) | (byte(1) << 8) | byte(2);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// A program's full path, from `PATH`.
fn on_path(program: &str) -> Result<PathBuf, String> {
    let name = format!("{program}{}", std::env::consts::EXE_SUFFIX);
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(&name))
        .find(|path| path.is_file())
        .ok_or_else(|| format!("{program} is not on PATH (Node 18 or later is needed)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_pads_as_the_standard_says() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"hello world\n"), "aGVsbG8gd29ybGQK");
    }

    #[test]
    fn sizes_print_as_lanes_print_them() {
        assert_eq!(markers::size_label(122), "122B");
        assert_eq!(markers::size_label(4044), "~4KB");
        assert_eq!(markers::size_label(2 * 1024 * 1024 + 700), "~2.0MB");
    }

    #[test]
    fn a_uri_starts_a_word() {
        assert!(has_uri("see data:text/plain;base64,aGk=", "data:"));
        assert!(has_uri("data:x", "data:"));
        assert!(!has_uri("metadata: none", "data:"));
        assert!(has_uri("(demo://x)", "demo://"));
    }

    #[test]
    fn what_is_printed_for_the_user_goes_with_its_call() {
        let stderr = "mcpl: round 1 a__b: 3 estimated tokens\nmcpl: round 1 a__b for you: hi: 2 estimated tokens\nmcpl: round 1 a__c: 4 estimated tokens\n";
        assert_eq!(
            for_user(stderr),
            [vec!["hi: 2 estimated tokens".to_owned()], vec![]]
        );
        assert_eq!(estimated_tokens(stderr).len(), 2);
    }

    #[test]
    fn stderr_lines_give_each_call_its_tokens() {
        let stderr = "mcpl: server x: gone\nmcpl: round 2 everything__gzip-file-as-resource: 22 estimated tokens, spilled to /s\n";
        assert_eq!(
            estimated_tokens(stderr),
            [("everything__gzip-file-as-resource".to_owned(), 22)]
        );
    }

    #[test]
    fn placeholders_are_filled_as_json_text() {
        assert_eq!(
            json_string_text("C:\\a \"b\"\n"),
            "C:\\\\a \\\"b\\\"\\u000a"
        );
        assert!(noise_data_uri().len() > NOISE_BYTES * 4 / 3);
    }
}
