//! `mcpl run` against a remote MCP server behind OAuth 2.1: mcpl-auth's loopback authorization
//! server and resource server (its `tests/flows/mock.rs`, shared), reached through discovery,
//! dynamic registration, the authorization code with PKCE, refresh and step-up; and no token,
//! refresh token, code, verifier or secret in anything the run writes.

#[path = "../../../auth/tests/flows/mock.rs"]
mod mock;

use std::path::Path;
use std::process::Command;

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

/// Runs `mcpl run` on `pair`'s server with a headless redirect and a one-call script, in `dir`.
fn run_mcpl(pair: &Pair, dir: &Path) -> std::process::Output {
    let config = dir.join("mcpl.json");
    let script = dir.join("script.json");
    std::fs::write(
        &config,
        json!({
            "mcpServers": {"remote": {"type": "http", "url": pair.mcp().as_str(),
                "mcpl": {"budget": 200, "oauth": {"redirect": "headless"}}}},
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
    Command::new(env!("CARGO_BIN_EXE_mcpl"))
        .arg("run")
        .arg("--config")
        .arg(&config)
        .arg("--model")
        .arg(format!("scripted:{}", script.display()))
        .arg("--transcript")
        .arg(dir.join("transcript.jsonl"))
        .env("MCPL_LOG", "trace")
        .output()
        .unwrap()
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
