//! The S3-compatible server `.ci/run` starts (moto's), for the spill store tests: where it is,
//! and the few bucket operations a test needs, as plain HTTP on loopback. The server takes
//! unsigned requests, so these need no AWS client; the store under test goes through
//! object_store and signs its own.

use std::io::{Read, Write};
use std::net::TcpStream;

/// The variable `.ci/run` exports with the server's endpoint (`http://127.0.0.1:<port>`).
pub const S3_ENDPOINT_VARIABLE: &str = "MCPL_S3_ENDPOINT";

/// The server's endpoint. When the variable is unset: under `CI` the test fails saying so;
/// otherwise it prints `skipped: <why>` and the caller returns.
pub fn s3_endpoint() -> Option<String> {
    match std::env::var(S3_ENDPOINT_VARIABLE) {
        Ok(endpoint) if !endpoint.is_empty() => Some(endpoint),
        _ if std::env::var_os("CI").is_some() => panic!(
            "{S3_ENDPOINT_VARIABLE} is not set: .ci/run starts moto's S3 server and exports it"
        ),
        _ => {
            eprintln!(
                "skipped: {S3_ENDPOINT_VARIABLE} is not set (no S3-compatible server to test against)"
            );
            None
        }
    }
}

/// The test credentials the server accepts, for a process that talks to it.
pub const S3_TEST_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "testing"),
    ("AWS_SECRET_ACCESS_KEY", "testing"),
    ("AWS_REGION", "us-east-1"),
];

/// Sends one request and returns the status code and body.
pub fn s3_request(endpoint: &str, method: &str, target: &str, body: &[u8]) -> (u16, String) {
    try_s3_request(endpoint, method, target, body).unwrap_or_else(|e| panic!("{e}"))
}

/// Sends one request and returns the status code and body, or what failed. `cargo xtask e2e`
/// includes this file for it (the xtask builds on the standard library alone).
pub fn try_s3_request(
    endpoint: &str,
    method: &str,
    target: &str,
    body: &[u8],
) -> Result<(u16, String), String> {
    let host = endpoint.trim_start_matches("http://").trim_end_matches('/');
    let failed = |e: std::io::Error| format!("{endpoint}: {e}");
    let mut stream = TcpStream::connect(host).map_err(failed)?;
    let head = format!(
        "{method} {target} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).map_err(failed)?;
    stream.write_all(body).map_err(failed)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).map_err(failed)?;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.to_owned());
    Ok((status, body))
}

/// The keys a ListObjectsV2 answer names, in order (a chunked body is read as text: the keys
/// are found by their tags).
pub fn keys_of(body: &str) -> Vec<String> {
    body.split("<Key>")
        .skip(1)
        .filter_map(|rest| rest.split_once("</Key>").map(|(key, _)| key.to_owned()))
        .collect()
}

/// Makes a bucket (path style).
pub fn create_bucket(endpoint: &str, bucket: &str) {
    let (status, body) = s3_request(endpoint, "PUT", &format!("/{bucket}"), b"");
    assert_eq!(status, 200, "creating bucket {bucket}: {body}");
}

/// Every key in a bucket under `prefix`, in order (a chunked body is read as text: the keys
/// are found by their tags).
pub fn list_keys(endpoint: &str, bucket: &str, prefix: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut after = String::new();
    loop {
        let target = format!("/{bucket}?list-type=2&prefix={prefix}&start-after={after}");
        let (status, body) = s3_request(endpoint, "GET", &target, b"");
        assert_eq!(status, 200, "listing {bucket}: {body}");
        let page = keys_of(&body);
        let truncated = body.contains("<IsTruncated>true</IsTruncated>");
        match page.last() {
            Some(last) if truncated => after.clone_from(last),
            _ => {
                keys.extend(page);
                return keys;
            }
        }
        keys.extend(page);
    }
}
