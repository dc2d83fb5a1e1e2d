//! `mcpl run` against a remote MCP server behind OAuth 2.1: mcpl-auth's loopback authorization
//! server and resource server (its `tests/flows/mock.rs`, shared), reached through discovery,
//! dynamic registration, the authorization code with PKCE, refresh and step-up; and no token,
//! refresh token, code, verifier or secret in anything the run writes.

#[path = "../../../auth/tests/flows/mock.rs"]
mod mock;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};

use mcpl_cli::oauth::BROWSER_OPENER;

use mock::{Iss, Options, Pair, TOOL_TEXT, lock};
use serde_json::json;

/// Every file under `dir`, read whole.
fn files_under(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            out.push((path.display().to_string(), text));
        }
    }
}

/// `mcpl run` on `pair`'s server with `oauth` as its settings and a one-call script, in `dir`.
fn mcpl(pair: &Pair, dir: &Path, oauth: serde_json::Value) -> Command {
    let config = dir.join("mcpl.json");
    let script = dir.join("script.json");
    std::fs::write(
        &config,
        json!({
            "mcpServers": {"remote": {"type": "http", "url": pair.mcp().as_str(),
                "mcpl": {"budget": 200, "oauth": oauth}}},
            "mcpl": {"spillDir": dir.join("spill"), "fetchDir": dir.join("refs")},
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        &script,
        json!({"steps": [{"tool_calls": [{"server": "remote", "name": "whoami", "arguments": {}}]}],
               "final": "done"})
        .to_string(),
    )
    .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcpl"));
    command
        .arg("run")
        .arg("--config")
        .arg(&config)
        .arg("--model")
        .arg(format!("scripted:{}", script.display()))
        .arg("--transcript")
        .arg(dir.join("transcript.jsonl"));
    command
}

/// `mcpl run` with a headless redirect and every log line, run to its end.
fn run_mcpl(pair: &Pair, dir: &Path) -> std::process::Output {
    mcpl(pair, dir, json!({"redirect": "headless"}))
        .env("MCPL_LOG", "trace")
        .output()
        .unwrap()
}

/// A GET over a plain socket, as a browser would send it; the answer's `Location`, if any.
fn get(url: &str) -> Option<String> {
    let url = url::Url::parse(url).unwrap();
    let host = url.host_str().unwrap().to_owned();
    let mut stream = TcpStream::connect((host.as_str(), url.port().unwrap())).unwrap();
    let target = &url[url::Position::BeforePath..];
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer.lines().find_map(|line| {
        let (name, value) = line.split_once(": ")?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.to_owned())
    })
}

/// The person: opens the authorization url, which the mock approves at once, and follows its
/// redirect to mcpl's loopback port.
fn approve(authorization_url: &str) {
    let callback = get(authorization_url).expect("the authorization server redirects");
    assert!(callback.starts_with("http://127.0.0.1:"), "{callback}");
    get(&callback);
}

/// Runs `command` to its end with standard error read line by line; `on_line` sees each.
fn run_watching(
    mut command: Command,
    on_line: impl Fn(&str) + Send + 'static,
) -> (bool, String, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines() {
            let line = line.unwrap();
            on_line(&line);
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let status = child.wait().unwrap();
    (status.success(), stdout, reader.join().unwrap())
}

#[test]
fn the_person_is_shown_the_url_and_answers_on_the_loopback_redirect() {
    let pair = Pair::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let command = mcpl(&pair, dir.path(), json!({"timeoutSeconds": 30}));
    let prefix = "mcpl: authorize remote: ";
    let (success, stdout, stderr) = run_watching(command, move |line| {
        if let Some(url) = line.strip_prefix(prefix) {
            approve(url);
        }
    });
    assert!(success, "{stderr}");
    assert_eq!(stdout.trim(), "done");
    assert_eq!(stderr.matches(prefix).count(), 1, "{stderr}");
    assert_eq!(pair.seen().violations, Vec::<String>::new());
}

#[test]
fn open_browser_runs_the_opener_with_the_url_instead_of_printing_it() {
    let pair = Pair::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    // A stand-in browser opener, first on PATH: it writes the url it was given to a file.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let opened = dir.path().join("opened");
    let opener = bin.join(BROWSER_OPENER);
    std::fs::write(
        &opener,
        format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > {:?}.tmp && mv {:?}.tmp {:?}\n",
            opened, opened, opened
        ),
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let mut command = mcpl(&pair, dir.path(), json!({"timeoutSeconds": 30}));
    command.arg("--open-browser").env("PATH", path);
    let watched = opened.clone();
    let browser = std::thread::spawn(move || {
        for _ in 0..600 {
            if let Ok(url) = std::fs::read_to_string(&watched) {
                approve(&url);
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        false
    });
    let (success, stdout, stderr) = run_watching(command, |_| {});
    assert!(browser.join().unwrap(), "the opener was never run");
    assert!(success, "{stderr}");
    assert_eq!(stdout.trim(), "done");
    assert!(!stderr.contains("mcpl: authorize"), "{stderr}");
    let url = std::fs::read_to_string(&opened).unwrap();
    assert!(
        url.contains("/authorize?") && url.contains("code_challenge="),
        "{url}"
    );
}

#[test]
fn mcpl_run_authorizes_through_discovery_registration_pkce_refresh_and_step_up() {
    let pair = Pair::start(Options {
        challenge_scope: Some("mcp:read".to_owned()),
        call_scope: Some("mcp:call".to_owned()),
        issue_refresh: true,
        // Under the client's refresh margin: every request refreshes the token first.
        expires_in: 5,
        iss: Iss::Correct,
        ..Options::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let spill = dir.path().join("spill");
    let output = run_mcpl(&pair, dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "done");
    assert!(stderr.contains("whoami"), "{stderr}");

    let seen = pair.seen();
    assert_eq!(seen.violations, Vec::<String>::new());
    // Discovery: the challenge's protected resource metadata, then the issuer's metadata.
    let paths = pair.paths();
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/register",
        "/authorize",
        "/token",
    ] {
        assert!(paths.iter().any(|p| p == path), "{path} not in {paths:?}");
    }
    assert_eq!(seen.registrations.len(), 1, "one registration per issuer");
    // PKCE on each authorization; step-up asks for the union of the scopes.
    assert!(seen.authorizations.len() >= 2, "{:?}", seen.authorizations);
    for authorization in &seen.authorizations {
        assert_eq!(authorization["code_challenge_method"], "S256");
        assert_eq!(authorization["resource"], pair.mcp().as_str());
    }
    assert_eq!(seen.authorizations[0]["scope"], "mcp:read");
    let stepped = seen.authorizations.last().unwrap()["scope"].clone();
    assert!(
        stepped.contains("mcp:read") && stepped.contains("mcp:call"),
        "{stepped}"
    );
    let grants: Vec<&str> = seen
        .token_requests
        .iter()
        .map(|(form, _)| form["grant_type"].as_str())
        .collect();
    assert!(grants.contains(&"authorization_code"), "{grants:?}");
    assert!(grants.contains(&"refresh_token"), "{grants:?}");

    // Everything secret the run held.
    let mut secrets: Vec<String> = seen.tokens.keys().cloned().collect();
    secrets.extend(seen.refresh_tokens.keys().cloned());
    secrets.extend(seen.issued_codes.iter().cloned());
    for (form, _) in &seen.token_requests {
        for key in ["refresh_token", "code", "code_verifier", "client_secret"] {
            secrets.extend(form.get(key).cloned());
        }
    }
    secrets.extend(
        seen.clients
            .values()
            .filter_map(|(secret, _)| secret.clone()),
    );
    assert!(
        secrets.iter().any(|s| s.contains("SECRETREFRESH")),
        "{secrets:?}"
    );
    assert!(
        secrets.iter().any(|s| s.contains("SECRETCODE")),
        "{secrets:?}"
    );
    assert!(secrets.len() >= 6, "{secrets:?}");

    // Everything the run wrote: stdout, stderr (trace logs), the transcript, the spill files.
    let mut outputs = vec![("stdout".to_owned(), stdout), ("stderr".to_owned(), stderr)];
    files_under(dir.path(), &mut outputs);
    let transcript_text = &outputs
        .iter()
        .find(|(name, _)| name.ends_with("transcript.jsonl"))
        .unwrap()
        .1;
    assert!(
        transcript_text.contains("the protected resource answered"),
        "the call's result reached the model"
    );
    let spilled = outputs
        .iter()
        .filter(|(name, _)| name.starts_with(&spill.display().to_string()));
    assert!(
        spilled
            .clone()
            .any(|(_, text)| text.contains(&TOOL_TEXT.repeat(400))),
        "the result was spilled whole"
    );
    for (name, text) in &outputs {
        for secret in &secrets {
            assert!(!text.contains(secret.as_str()), "{name} holds {secret}");
        }
    }
}

#[test]
fn the_authorization_response_issuer_is_checked_through_mcpl_run() {
    let pair = Pair::start(Options::default());
    for (iss, authorized) in [
        (Iss::Correct, true),
        // RFC 9207 compares the issuer as a string: a trailing slash is another issuer.
        (Iss::Normalized, false),
        (Iss::Wrong, false),
        (Iss::Omit, false),
    ] {
        lock(&pair.options).iss = iss;
        let dir = tempfile::tempdir().unwrap();
        let output = run_mcpl(&pair, dir.path());
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.success(), authorized, "{iss:?}: {stderr}");
        if !authorized {
            assert!(
                stderr.contains("mcpl: server remote failed initialize over HTTP: HTTP status 401"),
                "{iss:?}: {stderr}"
            );
            assert!(
                stderr.contains("the authorization response was refused"),
                "{iss:?}: {stderr}"
            );
        }
        for code in &pair.seen().issued_codes {
            assert!(
                !stderr.contains(code.as_str()),
                "{iss:?}: stderr holds {code}"
            );
        }
    }
}
