//! A stand-in client for the MCP conformance suite's `auth/*` scenarios, until mcpl's own
//! Streamable HTTP transport drives them: the smallest MCP exchange over HTTP (JSON or SSE
//! answers; `initialize`, `tools/list`, `tools/call` of `test-tool`, or the 2026-07-28
//! stateless requests) with an `OAuthClient` answering every 401 and 403. It shows how the
//! suite's `MCP_CONFORMANCE_CONTEXT` maps onto `AuthConfig`.
//!
//! ```text
//! cargo build -p mcpl-auth --example conformance_client
//! npx @modelcontextprotocol/conformance@0.1.16 client \
//!     --command target/debug/examples/conformance_client --suite auth
//! ```

use mcpl_auth::{
    AuthConfig, ClientCredential, ClientIdentity, JwtAlgorithm, OAuthClient, RedirectMode,
};
use serde_json::{Value, json};
use url::Url;

/// The client id metadata document url the suite's `auth/basic-cimd` expects.
const CIMD_URL: &str = "https://conformance-test.local/client-metadata.json";

fn main() {
    if let Err(error) = run() {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

/// What the suite's context names becomes the client's identity.
fn config(scenario: &str, context: &Value) -> Result<AuthConfig, String> {
    let mut config = AuthConfig::new(RedirectMode::Headless);
    config.client_metadata_url = Some(Url::parse(CIMD_URL).map_err(|e| e.to_string())?);
    let client_id = context["client_id"].as_str().map(str::to_owned);
    let secret = context["client_secret"].as_str();
    let key = context["private_key_pem"].as_str();
    config.identity = match (client_id, secret, key) {
        (Some(client_id), _, Some(key)) => {
            let name = context["signing_algorithm"].as_str().unwrap_or("ES256");
            let algorithm = JwtAlgorithm::from_name(name)
                .ok_or_else(|| format!("unknown signing algorithm {name}"))?;
            ClientIdentity::ClientCredentials {
                client_id,
                credential: ClientCredential::PrivateKeyJwt {
                    key_pem: key.into(),
                    algorithm,
                },
            }
        }
        (Some(client_id), Some(secret), None)
            if scenario.starts_with("auth/client-credentials") =>
        {
            ClientIdentity::ClientCredentials {
                client_id,
                credential: ClientCredential::Secret(secret.into()),
            }
        }
        (Some(client_id), secret, None) => ClientIdentity::PreRegistered {
            client_id,
            client_secret: secret.map(Into::into),
            issuer: None,
        },
        _ => ClientIdentity::Register,
    };
    Ok(config)
}

fn run() -> Result<(), String> {
    let server = std::env::args()
        .nth(1)
        .ok_or("usage: conformance_client <server url>")?;
    let server = Url::parse(&server).map_err(|e| e.to_string())?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .unwrap_or_else(|_| "2025-11-25".to_owned());
    let auth = OAuthClient::new(server.clone(), config(&scenario, &context)?)
        .map_err(|e| e.to_string())?;
    let mut session = Session {
        agent: ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .new_agent(),
        server,
        auth,
        version: version.clone(),
        session: None,
    };
    let info = json!({"name": "mcpl-auth-conformance", "version": env!("CARGO_PKG_VERSION")});
    if version.as_str() > "2025-11-25" {
        // The stateless lifecycle: every request carries its own `_meta`.
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": info,
        });
        session.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": meta}}))?;
        session.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "test-tool", "arguments": {}, "_meta": meta}}))?;
        return Ok(());
    }
    session.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": info}}))?;
    session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    session.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))?;
    session.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "test-tool", "arguments": {}}}))?;
    Ok(())
}

struct Session {
    agent: ureq::Agent,
    server: Url,
    auth: OAuthClient,
    version: String,
    session: Option<String>,
}

impl Session {
    /// Posts one message, answering 401 and 403 through the authorizer, and checks the status.
    fn send(&mut self, message: &Value) -> Result<(), String> {
        let method = message["method"].as_str().unwrap_or("");
        for _ in 0..8 {
            let mut request = self
                .agent
                .post(self.server.as_str())
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream");
            if method != "initialize" {
                request = request.header("mcp-protocol-version", &self.version);
            }
            if let Some(session) = &self.session {
                request = request.header("mcp-session-id", session);
            }
            if let Some(header) = self.auth.authorization(&self.server) {
                request = request.header("authorization", &header);
            }
            let mut response = request
                .send(message.to_string())
                .map_err(|e| e.to_string())?;
            let status = response.status().as_u16();
            if status == 401 || status == 403 {
                let challenge = response
                    .headers()
                    .get("www-authenticate")
                    .and_then(|h| h.to_str().ok())
                    .map(str::to_owned);
                if self
                    .auth
                    .on_challenge(&self.server, status, challenge.as_deref())
                    .map_err(|e| e.to_string())?
                {
                    continue;
                }
                return Err(format!("{method} answered {status}"));
            }
            if let Some(session) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|h| h.to_str().ok())
            {
                self.session = Some(session.to_owned());
            }
            // Read the body whole (an SSE answer ends when its response is sent).
            let _ = response.body_mut().read_to_string();
            return if (200..300).contains(&status) {
                Ok(())
            } else {
                Err(format!("{method} answered {status}"))
            };
        }
        Err(format!("{method}: too many authorization rounds"))
    }
}
