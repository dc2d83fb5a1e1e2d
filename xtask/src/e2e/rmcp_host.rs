//! `examples/rmcp-host/` (decision 0125) against server-everything: a host on rmcp, the official
//! Rust MCP SDK, reading each result whole through mcpl-session's tap. Built with its `s3`
//! feature into the workspace's target folder (the mcpl crates built there are reused), run
//! with a small budget so the long echo is cut and spilled, on moto's S3 server when
//! `MCPL_S3_ENDPOINT` names one (as `.ci/run` exports), and read back with `read_result`.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use super::{
    Checks, SERVER_ENTRY_POINTS, URI_SIGNS, check_live, contains, cut, has_uri, markers, on_path,
    png_image, text_of,
};
use crate::json::Json;

/// mcpl-testkit's plain-HTTP S3 requests, shared by path: the xtask builds on the standard
/// library alone, so it does not depend on the crate. Its panicking helpers are the tests'.
#[allow(dead_code, unreachable_pub)]
#[path = "../../../crates/testkit/src/s3.rs"]
mod s3;

/// The budget the host is run with: the image and the links fit, the echo of 200 lines does not.
const BUDGET: u64 = 500;
/// The bucket the host spills into on the S3 server.
const BUCKET: &str = "mcpl-e2e-rmcp-host";
/// The key prefix the host gives its S3 store.
const PREFIX: &str = "rmcp-host/";
/// The variable `.ci/run` exports with moto's endpoint.
const S3_ENDPOINT: &str = "MCPL_S3_ENDPOINT";

pub(super) fn play_rmcp_host(
    root: &Path,
    target: &Path,
    node_modules: &Path,
    run_dir: &Path,
    checks: &mut Checks,
) -> Result<(), String> {
    let manifest = root.join("examples/rmcp-host/Cargo.toml");
    println!(
        "\nxtask: examples/rmcp-host (cargo build --features s3, target {})",
        target.display()
    );
    // The workspace's target folder: the example's profiles are the workspace's, so the mcpl
    // crates and their dependencies built there already are not built again.
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .current_dir(root)
        .env("CARGO_TARGET_DIR", target)
        .args(["build", "--features", "s3", "--manifest-path"])
        .arg(&manifest)
        .status()
        .map_err(|error| format!("cannot run cargo: {error}"))?;
    if !status.success() {
        return Err(format!("building examples/rmcp-host failed ({status})"));
    }
    let host = target
        .join("debug")
        .join(format!("rmcp-host{}", std::env::consts::EXE_SUFFIX));

    let endpoint = std::env::var(S3_ENDPOINT).ok().filter(|e| !e.is_empty());
    let mut command = Command::new(&host);
    command.arg("--budget").arg(BUDGET.to_string());
    match &endpoint {
        Some(endpoint) => {
            create_bucket(endpoint, BUCKET)?;
            command.args(["--s3", endpoint, BUCKET]);
            // moto's test credentials, unless the environment has its own.
            for (name, value) in [
                ("AWS_ACCESS_KEY_ID", "testing"),
                ("AWS_SECRET_ACCESS_KEY", "testing"),
                ("AWS_REGION", "us-east-1"),
            ] {
                if std::env::var_os(name).is_none() {
                    command.env(name, value);
                }
            }
        }
        None if std::env::var_os("CI").is_some() => {
            return Err(format!(
                "{S3_ENDPOINT} is not set: .ci/run starts moto's S3 server and exports it"
            ));
        }
        None => println!(
            "note: {S3_ENDPOINT} is not set, so rmcp-host spills into a local folder, not S3"
        ),
    }
    command
        .arg("--")
        .arg(on_path("node")?)
        .arg(node_modules.join(SERVER_ENTRY_POINTS[0]))
        .arg("stdio");
    let started = Instant::now();
    let output = command
        .output()
        .map_err(|e| format!("cannot run {}: {e}", host.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    for (name, text) in [("rmcp-host.jsonl", &stdout), ("rmcp-host.stderr", &stderr)] {
        std::fs::write(run_dir.join(name), text)
            .map_err(|e| format!("{}: {e}", run_dir.display()))?;
    }
    let what = "rmcp-host";
    checks.check(
        format!("{what}: exits 0 ({:.1} s)", started.elapsed().as_secs_f64()),
        if output.status.success() {
            Ok(())
        } else {
            Err(format!("{}; stderr {:?}", output.status, cut(&stderr)))
        },
    );
    let lines: Vec<Json> = match stdout.lines().map(Json::parse).collect() {
        Ok(lines) => lines,
        Err(error) => {
            checks.check(format!("{what}: every line is JSON"), Err(error));
            return Ok(());
        }
    };
    let tools: Vec<&str> = lines
        .iter()
        .map(|line| line.get("tool").and_then(Json::as_str).unwrap_or_default())
        .collect();
    checks.check(
        format!("{what}: one line per call, and read_result's after the cut one"),
        super::expect_eq(
            tools,
            vec![
                "get-tiny-image",
                "get-resource-links",
                "echo",
                "read_result",
            ],
        ),
    );
    let line = |tool: &str| {
        lines
            .iter()
            .find(|line| line.get("tool").and_then(Json::as_str) == Some(tool))
    };
    let content = |tool: &str| line(tool).and_then(|line| line.get("content"));
    let tokens = |tool: &str| match line(tool).and_then(|line| line.get("tokens")) {
        Some(Json::Number(n)) => Some(*n as u64),
        _ => None,
    };
    let within = |tool: &str| match tokens(tool) {
        Some(t) if t <= BUDGET => Ok(()),
        Some(t) => Err(format!("{t} tokens")),
        None => Err("no tokens".to_owned()),
    };

    if let Some(image) = content("get-tiny-image") {
        check_live(
            checks,
            &format!("{what}: get-tiny-image"),
            &png_image(),
            image,
            None,
        );
    }
    let links = content("get-resource-links")
        .map(text_of)
        .unwrap_or_default();
    for name in ["Blob Resource 1", "Text Resource 2"] {
        checks.check(
            format!("{what}: get-resource-links shows {name}'s reference stub"),
            contains(
                &links,
                &format!(
                    "{name} — text/plain claimed — from tool result — {}",
                    markers::FETCH_HINT
                ),
            ),
        );
    }
    let shown: Vec<String> = [
        "get-tiny-image",
        "get-resource-links",
        "echo",
        "read_result",
    ]
    .iter()
    .filter_map(|tool| content(tool).map(text_of))
    .collect();
    let uris: Vec<&str> = URI_SIGNS
        .iter()
        .copied()
        .filter(|sign| shown.iter().any(|text| has_uri(text, sign)))
        .collect();
    checks.check(
        format!(
            "{what}: no uri ({}) in any result's text",
            URI_SIGNS.join(", ")
        ),
        if uris.is_empty() {
            Ok(())
        } else {
            Err(format!("found {uris:?}"))
        },
    );

    let spill = line("echo")
        .and_then(|line| line.get("spill"))
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_owned();
    checks.check(
        format!("{what}: the echo of 200 lines is cut within {BUDGET} tokens and spilled"),
        within("echo").and_then(|()| {
            if spill.starts_with("spill_") {
                contains(&content("echo").map(text_of).unwrap_or_default(), &spill)
            } else {
                Err("no spill".to_owned())
            }
        }),
    );
    let read = content("read_result").map(text_of).unwrap_or_default();
    checks.check(
        format!("{what}: read_result reads the spill back from its start, within {BUDGET} tokens"),
        within("read_result")
            .and_then(|()| contains(&read, "Echo: Line 1 of 200"))
            .and_then(|()| contains(&read, &format!("read_result(\"{spill}\", offset="))),
    );
    if let Some(endpoint) = &endpoint {
        let keys = list_keys(endpoint, BUCKET, PREFIX)?;
        checks.check(
            format!("{what}: the spill is in the S3 bucket ({endpoint}/{BUCKET}/{PREFIX})"),
            if !spill.is_empty()
                && keys
                    .iter()
                    .any(|key| key.starts_with(&format!("{PREFIX}{spill}")))
            {
                Ok(())
            } else {
                Err(format!("keys {keys:?}"))
            },
        );
    }
    Ok(())
}

/// Makes `bucket` on the S3 server (path style; moto takes unsigned requests). One that is
/// there already from an earlier run is fine.
fn create_bucket(endpoint: &str, bucket: &str) -> Result<(), String> {
    let (status, body) = s3::try_s3_request(endpoint, "PUT", &format!("/{bucket}"), b"")?;
    if status == 200 || body.contains("BucketAlreadyOwnedByYou") {
        Ok(())
    } else {
        Err(format!(
            "creating bucket {bucket} at {endpoint}: {status} {body}"
        ))
    }
}

/// The keys under `prefix` in `bucket` (the first thousand).
fn list_keys(endpoint: &str, bucket: &str, prefix: &str) -> Result<Vec<String>, String> {
    let (status, body) = s3::try_s3_request(
        endpoint,
        "GET",
        &format!("/{bucket}?list-type=2&prefix={prefix}"),
        b"",
    )?;
    if status != 200 {
        return Err(format!("listing {bucket}: {status} {body}"));
    }
    Ok(s3::keys_of(&body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_gives_its_keys() {
        let body = "<ListBucketResult><Contents><Key>rmcp-host/spill_a.json</Key></Contents>\r\n3f\r\n\
                    <Contents><Key>rmcp-host/spill_a.txt</Key></Contents></ListBucketResult>";
        assert_eq!(
            s3::keys_of(body),
            ["rmcp-host/spill_a.json", "rmcp-host/spill_a.txt"]
        );
        assert!(s3::keys_of("<ListBucketResult/>").is_empty());
    }
}
