//! A loopback authorization server and resource server that check what the specification asks
//! of a client, record what they saw, and misbehave on request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use mcpl_loopback::{Answer, Loopback, Request};
use serde_json::{Value, json};
use url::Url;

/// The token request's fields that hold a secret, which an echoing token endpoint repeats.
pub(crate) const ECHOED_FIELDS: [&str; 5] = [
    "code",
    "code_verifier",
    "client_secret",
    "refresh_token",
    "client_assertion",
];

/// What the redirect's `iss` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Iss {
    Correct,
    Wrong,
    Omit,
    /// The issuer with a trailing slash: equal after normalisation, not as a string.
    Normalized,
}

/// How the pair behaves.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// Where the protected resource metadata is (`None`: nowhere, 2025-03-26).
    pub(crate) prm_path: Option<String>,
    pub(crate) prm_in_header: bool,
    pub(crate) prm_resource: Option<String>,
    pub(crate) prm_scopes: Option<Vec<String>>,
    /// The scope the 401 challenge names.
    pub(crate) challenge_scope: Option<String>,
    /// The scope `tools/call` needs (403 `insufficient_scope` without it).
    pub(crate) call_scope: Option<String>,
    /// Every token request answers 403 for calls, whatever the scopes.
    pub(crate) always_403: bool,
    /// The authorization server's path prefix (an issuer with a path).
    pub(crate) as_prefix: String,
    /// Where its metadata is; `None`: nowhere.
    pub(crate) as_metadata_path: Option<String>,
    pub(crate) as_scopes: Option<Vec<String>>,
    pub(crate) auth_methods: Vec<String>,
    pub(crate) dcr: bool,
    pub(crate) cimd: bool,
    pub(crate) pkce_methods: Option<Vec<String>>,
    pub(crate) iss_supported: Option<bool>,
    pub(crate) iss: Iss,
    pub(crate) metadata_issuer: Option<String>,
    pub(crate) issue_refresh: bool,
    pub(crate) expires_in: u64,
    /// The client credentials the token endpoint accepts.
    pub(crate) cc_client: Option<(String, String)>,
    /// The ES256 public key (uncompressed point) a JWT assertion must verify with.
    pub(crate) jwt_key: Option<Vec<u8>>,
    /// The pre-registered client the token endpoint accepts (when no registration happened).
    pub(crate) pre_registered: Option<(String, String)>,
    /// The resource server serves the authorization server's paths itself (2025-03-26).
    pub(crate) legacy: bool,
    /// The authorization server the protected resource metadata names instead of its own.
    pub(crate) prm_issuer: Option<String>,
    /// Every unknown path answers 200 with a web page, as a web app's catch-all route does.
    pub(crate) catch_all_page: bool,
    /// Every token request is refused with an `error_description` that repeats its secrets,
    /// as some servers quote the request they refuse.
    pub(crate) echo_token_requests: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            prm_path: Some("/.well-known/oauth-protected-resource/mcp".to_owned()),
            prm_in_header: true,
            prm_resource: None,
            prm_scopes: None,
            challenge_scope: None,
            call_scope: None,
            always_403: false,
            as_prefix: String::new(),
            as_metadata_path: Some("/.well-known/oauth-authorization-server".to_owned()),
            as_scopes: None,
            auth_methods: vec!["none".to_owned()],
            dcr: true,
            cimd: false,
            pkce_methods: Some(vec!["S256".to_owned()]),
            iss_supported: Some(true),
            iss: Iss::Correct,
            metadata_issuer: None,
            issue_refresh: false,
            expires_in: 3600,
            cc_client: None,
            jwt_key: None,
            pre_registered: None,
            legacy: false,
            prm_issuer: None,
            catch_all_page: false,
            echo_token_requests: false,
        }
    }
}

/// What the authorization server saw and holds.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    pub(crate) registrations: Vec<Value>,
    pub(crate) authorizations: Vec<HashMap<String, String>>,
    pub(crate) token_requests: Vec<(HashMap<String, String>, Option<String>)>,
    /// client id → (secret, method) of registered clients.
    pub(crate) clients: HashMap<String, (Option<String>, String)>,
    /// Every code issued, exchanged or not.
    pub(crate) issued_codes: Vec<String>,
    /// code → (code_challenge, scope, client id)
    pub(crate) codes: HashMap<String, (String, String, String)>,
    /// access token → scopes
    pub(crate) tokens: HashMap<String, Vec<String>>,
    pub(crate) refresh_tokens: HashMap<String, Vec<String>>,
    /// Tokens the resource server has stopped accepting.
    pub(crate) revoked: Vec<String>,
    /// Errors the servers found in the client's requests.
    pub(crate) violations: Vec<String>,
    pub(crate) counter: u32,
}

pub(crate) struct Pair {
    pub(crate) resource: Loopback,
    pub(crate) auth: Loopback,
    pub(crate) seen: Arc<Mutex<Seen>>,
    pub(crate) options: Arc<Mutex<Options>>,
}

impl Pair {
    pub(crate) fn start(options: Options) -> Pair {
        Pair::start_sharing(options, Arc::new(Mutex::new(Seen::default())))
    }

    /// A pair whose record (issued tokens among it) is shared with another pair's.
    pub(crate) fn start_sharing(options: Options, seen: Arc<Mutex<Seen>>) -> Pair {
        let options = Arc::new(Mutex::new(options));
        let auth_origin: Arc<OnceLock<String>> = Arc::new(OnceLock::new());
        let resource_origin: Arc<OnceLock<String>> = Arc::new(OnceLock::new());
        let auth = {
            let (seen, options, auth_origin) = (seen.clone(), options.clone(), auth_origin.clone());
            Loopback::start(move |request| {
                let origin = auth_origin.get().cloned().unwrap_or_default();
                let options = lock(&options).clone();
                authorization_server(request, &origin, &options, &mut lock(&seen))
            })
            .expect("the authorization server starts")
        };
        auth_origin.set(auth.origin().to_owned()).expect("set once");
        let resource = {
            let (seen, options, resource_origin, auth_origin) = (
                seen.clone(),
                options.clone(),
                resource_origin.clone(),
                auth_origin.clone(),
            );
            Loopback::start(move |request| {
                let origin = resource_origin.get().cloned().unwrap_or_default();
                let issuer = format!(
                    "{}{}",
                    auth_origin.get().cloned().unwrap_or_default(),
                    lock(&options).as_prefix
                );
                let options = lock(&options).clone();
                let issuer = options.prm_issuer.clone().unwrap_or(issuer);
                let path = request.target.split('?').next().unwrap_or("");
                if options.legacy && path != "/mcp" {
                    return authorization_server(request, &origin, &options, &mut lock(&seen));
                }
                resource_server(request, &origin, &issuer, &options, &mut lock(&seen))
            })
            .expect("the resource server starts")
        };
        resource_origin
            .set(resource.origin().to_owned())
            .expect("set once");
        Pair {
            resource,
            auth,
            seen,
            options,
        }
    }

    pub(crate) fn mcp(&self) -> Url {
        Url::parse(&format!("{}/mcp", self.resource.origin())).expect("a url")
    }

    pub(crate) fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        lock(&self.seen)
    }

    /// Every path either server was asked for, in order.
    pub(crate) fn paths(&self) -> Vec<String> {
        let mut all: Vec<String> = self
            .resource
            .requests()
            .into_iter()
            .chain(self.auth.requests())
            .map(|r| r.target.split('?').next().unwrap_or("").to_owned())
            .collect();
        all.dedup();
        all
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn json_answer(status: u16, value: &Value) -> Answer {
    let mut answer = Answer::bytes("application/json", value.to_string().into_bytes());
    answer.status = status;
    answer
}

fn not_found() -> Answer {
    json_answer(404, &json!({"error": "not_found"}))
}

fn resource_server(
    request: &Request,
    origin: &str,
    issuer: &str,
    options: &Options,
    seen: &mut Seen,
) -> Answer {
    let path = request.target.split('?').next().unwrap_or("");
    if let Some(prm_path) = &options.prm_path
        && path == prm_path
    {
        let resource = options.prm_resource.clone().unwrap_or_else(|| {
            if prm_path == "/.well-known/oauth-protected-resource" {
                origin.to_owned()
            } else {
                format!("{origin}/mcp")
            }
        });
        let mut document = json!({"resource": resource, "authorization_servers": [issuer]});
        if let Some(scopes) = &options.prm_scopes {
            document["scopes_supported"] = json!(scopes);
        }
        return json_answer(200, &document);
    }
    if path != "/mcp" {
        if options.catch_all_page {
            return Answer::bytes("text/html", &b"<!doctype html><p>app</p>"[..]);
        }
        return not_found();
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let method = body["method"].as_str().unwrap_or("").to_owned();
    let mut challenge = "Bearer".to_owned();
    let mut parameters = Vec::new();
    if let Some(scope) = &options.challenge_scope {
        parameters.push(format!("scope=\"{scope}\""));
    }
    if options.prm_in_header
        && let Some(prm_path) = &options.prm_path
    {
        parameters.push(format!("resource_metadata=\"{origin}{prm_path}\""));
    }
    if !parameters.is_empty() {
        challenge = format!("Bearer {}", parameters.join(", "));
    }
    let token = request
        .header("authorization")
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::to_owned);
    let Some(token) = token else {
        return json_answer(401, &json!({"error": "invalid_token"}))
            .with_header("WWW-Authenticate", &challenge);
    };
    let Some(scopes) = seen.tokens.get(&token).cloned() else {
        return json_answer(401, &json!({"error": "invalid_token"}))
            .with_header("WWW-Authenticate", &challenge);
    };
    if seen.revoked.contains(&token) {
        return json_answer(401, &json!({"error": "invalid_token"}))
            .with_header("WWW-Authenticate", &challenge);
    }
    if method == "tools/call"
        && let Some(needed) = &options.call_scope
        && (options.always_403 || !scopes.contains(needed))
    {
        let header = format!(
            "Bearer error=\"insufficient_scope\", scope=\"{needed}\", resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\""
        );
        return json_answer(403, &json!({"error": "insufficient_scope"}))
            .with_header("WWW-Authenticate", &header);
    }
    mcp_answer(request, &body)
}

/// The text `tools/call` answers: long enough to be spilled by a small budget.
pub(crate) const TOOL_TEXT: &str = "the protected resource answered";

/// What an MCP server (revision 2025-11-25) answers an authorized request: enough of the
/// protocol for a host's session, one tool (`whoami`) whose result is long.
fn mcp_answer(request: &Request, body: &Value) -> Answer {
    if request.method != "POST" {
        return json_answer(405, &json!({"error": "no stream"}));
    }
    let Some(id) = body.get("id").cloned() else {
        let mut accepted = Answer::bytes("application/json", Vec::new());
        accepted.status = 202;
        return accepted;
    };
    let result = match body["method"].as_str() {
        Some("initialize") => json!({"protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}}, "serverInfo": {"name": "mock", "version": "1"}}),
        Some("tools/list") => json!({"tools": [{"name": "whoami",
            "description": "Says who asked.", "inputSchema": {"type": "object"}}]}),
        Some("tools/call") => {
            json!({"content": [{"type": "text", "text": TOOL_TEXT.repeat(400)}]})
        }
        _ => {
            return json_answer(
                200,
                &json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "method not found"}}),
            );
        }
    };
    json_answer(200, &json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn authorization_server(
    request: &Request,
    origin: &str,
    options: &Options,
    seen: &mut Seen,
) -> Answer {
    let path = request.target.split('?').next().unwrap_or("");
    let prefix = &options.as_prefix;
    let issuer = format!("{origin}{prefix}");
    if options.as_metadata_path.as_deref() == Some(path) {
        let mut document = json!({
            "issuer": options
                .metadata_issuer
                .as_ref()
                .map_or_else(|| issuer.clone(), |named| named.replace("{origin}", origin)),
            "authorization_endpoint": format!("{origin}{prefix}/authorize"),
            "token_endpoint": format!("{origin}{prefix}/token"),
            "response_types_supported": ["code"],
            "token_endpoint_auth_methods_supported": options.auth_methods,
        });
        if options.dcr {
            document["registration_endpoint"] = json!(format!("{origin}{prefix}/register"));
        }
        if let Some(methods) = &options.pkce_methods {
            document["code_challenge_methods_supported"] = json!(methods);
        }
        if let Some(supported) = options.iss_supported {
            document["authorization_response_iss_parameter_supported"] = json!(supported);
        }
        if let Some(scopes) = &options.as_scopes {
            document["scopes_supported"] = json!(scopes);
        }
        if options.cimd {
            document["client_id_metadata_document_supported"] = json!(true);
        }
        return json_answer(200, &document);
    }
    let query: HashMap<String, String> = Url::parse(&format!("http://x{}", request.target))
        .map(|u| u.query_pairs().into_owned().collect())
        .unwrap_or_default();
    if path == format!("{prefix}/register") {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        seen.registrations.push(body.clone());
        seen.counter += 1;
        let method = body["token_endpoint_auth_method"]
            .as_str()
            .unwrap_or("client_secret_basic")
            .to_owned();
        let client_id = format!("dcr-client-{}", seen.counter);
        let secret = (method != "none").then(|| format!("dcr-secret-{}", seen.counter));
        seen.clients
            .insert(client_id.clone(), (secret.clone(), method.clone()));
        let mut answer = json!({"client_id": client_id, "token_endpoint_auth_method": method});
        if let Some(secret) = secret {
            answer["client_secret"] = json!(secret);
        }
        return json_answer(201, &answer);
    }
    if path == format!("{prefix}/authorize") {
        seen.authorizations.push(query.clone());
        seen.counter += 1;
        let code = format!("code-{}-SECRETCODE", seen.counter);
        seen.issued_codes.push(code.clone());
        if query.get("code_challenge_method").map(String::as_str) != Some("S256") {
            seen.violations.push("no S256 code challenge".to_owned());
        }
        seen.codes.insert(
            code.clone(),
            (
                query.get("code_challenge").cloned().unwrap_or_default(),
                query.get("scope").cloned().unwrap_or_default(),
                query.get("client_id").cloned().unwrap_or_default(),
            ),
        );
        let mut location = Url::parse(
            query
                .get("redirect_uri")
                .map(String::as_str)
                .unwrap_or("http://invalid/"),
        )
        .expect("a redirect uri");
        location.query_pairs_mut().append_pair("code", &code);
        if let Some(state) = query.get("state") {
            location.query_pairs_mut().append_pair("state", state);
        }
        match options.iss {
            Iss::Correct => {
                location.query_pairs_mut().append_pair("iss", &issuer);
            }
            Iss::Wrong => {
                location
                    .query_pairs_mut()
                    .append_pair("iss", "https://evil.example.com");
            }
            Iss::Normalized => {
                location
                    .query_pairs_mut()
                    .append_pair("iss", &format!("{issuer}/"));
            }
            Iss::Omit => {}
        }
        return Answer::redirect(location.as_str());
    }
    if path == format!("{prefix}/token") {
        let form: HashMap<String, String> = url::form_urlencoded::parse(&request.body)
            .into_owned()
            .collect();
        let authorization = request.header("authorization").map(str::to_owned);
        seen.token_requests
            .push((form.clone(), authorization.clone()));
        let basic = authorization
            .as_deref()
            .and_then(|h| h.strip_prefix("Basic "))
            .and_then(|b| {
                let decoded = String::from_utf8(STANDARD.decode(b).ok()?).ok()?;
                let (id, secret) = decoded.split_once(':')?;
                Some((id.to_owned(), secret.to_owned()))
            });
        let client_id = basic
            .as_ref()
            .map(|(id, _)| id.clone())
            .or_else(|| form.get("client_id").cloned());
        if options.echo_token_requests {
            let mut echoed: Vec<String> = ECHOED_FIELDS
                .iter()
                .filter_map(|&key| form.get(key).map(|value| format!("{key}={value}")))
                .collect();
            echoed.extend(
                basic
                    .as_ref()
                    .map(|(_, secret)| format!("basic secret {secret}")),
            );
            let why = format!("refused: {}", echoed.join(", "));
            return json_answer(
                400,
                &json!({"error": "invalid_grant", "error_description": why}),
            );
        }
        let refused = |seen: &mut Seen, why: &str| {
            seen.violations.push(why.to_owned());
            json_answer(
                400,
                &json!({"error": "invalid_grant", "error_description": why}),
            )
        };
        let grant_type = form.get("grant_type").cloned().unwrap_or_default();
        let scopes: Vec<String> = match grant_type.as_str() {
            "authorization_code" => {
                let Some((challenge, scope, code_client)) =
                    form.get("code").and_then(|c| seen.codes.remove(c))
                else {
                    return refused(seen, "unknown code");
                };
                let verifier = form.get("code_verifier").cloned().unwrap_or_default();
                let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
                if URL_SAFE_NO_PAD.encode(digest.as_ref()) != challenge {
                    return refused(seen, "the code verifier does not match");
                }
                if client_id.as_deref() != Some(code_client.as_str()) {
                    return refused(seen, "another client");
                }
                if let Some(why) =
                    check_client(seen, options, client_id.as_deref(), basic.as_ref(), &form)
                {
                    return refused(seen, &why);
                }
                scope.split_whitespace().map(str::to_owned).collect()
            }
            "refresh_token" => {
                let Some(granted) = form
                    .get("refresh_token")
                    .and_then(|r| seen.refresh_tokens.remove(r))
                else {
                    return refused(seen, "unknown refresh token");
                };
                granted
            }
            "client_credentials" => {
                if let Some(expected) = &options.cc_client {
                    if basic.as_ref() != Some(expected) {
                        return refused(seen, "wrong client credentials");
                    }
                } else if let Some(key) = &options.jwt_key {
                    if form.get("client_assertion_type").map(String::as_str)
                        != Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
                    {
                        return refused(seen, "no jwt assertion");
                    }
                    let assertion = form.get("client_assertion").cloned().unwrap_or_default();
                    if let Some(why) = check_jwt(&assertion, key, &issuer) {
                        return refused(seen, &why);
                    }
                } else {
                    return refused(seen, "no client credentials expected");
                }
                form.get("scope")
                    .map(|s| s.split_whitespace().map(str::to_owned).collect())
                    .unwrap_or_default()
            }
            _ => return refused(seen, "unknown grant type"),
        };
        if !form.contains_key("resource") {
            seen.violations
                .push("no resource in the token request".to_owned());
        }
        seen.counter += 1;
        let token = format!("access-{}-SECRETTOKEN", seen.counter);
        seen.tokens.insert(token.clone(), scopes.clone());
        let mut answer = json!({"access_token": token, "token_type": "Bearer", "expires_in": options.expires_in});
        if !scopes.is_empty() {
            answer["scope"] = json!(scopes.join(" "));
        }
        if options.issue_refresh {
            let refresh = format!("refresh-{}-SECRETREFRESH", seen.counter);
            seen.refresh_tokens.insert(refresh.clone(), scopes);
            answer["refresh_token"] = json!(refresh);
        }
        return json_answer(200, &answer);
    }
    not_found()
}

/// Checks a code exchange's client authentication against its registration.
fn check_client(
    seen: &Seen,
    options: &Options,
    client_id: Option<&str>,
    basic: Option<&(String, String)>,
    form: &HashMap<String, String>,
) -> Option<String> {
    let client_id = client_id?;
    if let Some((id, secret)) = &options.pre_registered
        && id == client_id
    {
        return (basic != Some(&(id.clone(), secret.clone())))
            .then(|| "pre-registered client not by basic".to_owned());
    }
    if client_id.starts_with("https://") {
        return basic
            .is_some()
            .then(|| "a metadata document client with a secret".to_owned());
    }
    let Some((secret, method)) = seen.clients.get(client_id) else {
        return Some("unregistered client".to_owned());
    };
    let used = if basic.is_some() {
        "client_secret_basic"
    } else if form.contains_key("client_secret") {
        "client_secret_post"
    } else {
        "none"
    };
    if used != method {
        return Some(format!("used {used}, registered {method}"));
    }
    let sent = basic
        .map(|(_, s)| s.clone())
        .or_else(|| form.get("client_secret").cloned());
    (sent != *secret).then(|| "wrong secret".to_owned())
}

/// Verifies an ES256 client assertion and its claims.
fn check_jwt(assertion: &str, key: &[u8], issuer: &str) -> Option<String> {
    let (input, signature) = assertion.rsplit_once('.')?;
    let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
    if ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, key)
        .verify(input.as_bytes(), &signature)
        .is_err()
    {
        return Some("the assertion's signature does not verify".to_owned());
    }
    let claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(input.split('.').nth(1)?).ok()?).ok()?;
    if claims["aud"] != issuer {
        return Some("the assertion's audience is not the issuer".to_owned());
    }
    if claims["iss"] != "machine" || claims["sub"] != "machine" {
        return Some("the assertion's iss or sub is not the client".to_owned());
    }
    None
}
