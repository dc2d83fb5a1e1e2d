//! The assertion grants: the JWT bearer grant (RFC 7523 §2.1) a workload's own identity token
//! is sent with (workload identity federation, SEP-1933), and enterprise-managed authorization
//! (SEP-990, cross-app access): the person's identity token exchanged at the enterprise's
//! identity provider (RFC 8693) for an identity assertion grant (ID-JAG), which the JWT bearer
//! grant turns into an access token. `oauth2` has neither, so the form is posted here.

use oauth2::SyncHttpClient as _;
use oauth2::basic::BasicTokenResponse;
use serde_json::Value;
use url::Url;

use crate::error::{AuthError, error_code, shown};
use crate::http::{Http, MAX_BODY_BYTES, require_secure};
use crate::secret::Secret;

/// The JWT bearer grant type (RFC 7523 §2.1).
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The token exchange grant type (RFC 8693 §2.1).
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// An OpenID Connect identity token, as a token exchange's subject (RFC 8693 §3).
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// An identity assertion JWT authorization grant (SEP-990).
const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// How a client authenticates a form it posts.
pub(crate) enum FormAuth<'a> {
    /// `client_id` in the form, no secret.
    Public(&'a str),
    /// No client id at all.
    Nothing,
    /// `client_secret_basic` (RFC 6749 §2.3.1, each part form-encoded).
    Basic(&'a str, &'a Secret),
}

/// POSTs a token request form and reads its JSON answer: the object of a 2xx, or the
/// error code of anything else. The form's values (assertions, secrets) appear in no error.
fn post_form(
    http: &Http,
    url: &Url,
    what: &str,
    form: &[(&str, &str)],
    auth: &FormAuth<'_>,
) -> Result<Value, AuthError> {
    require_secure(url, what)?;
    let mut body = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in form {
        body.append_pair(name, value);
    }
    let mut request = oauth2::http::Request::post(url.as_str())
        .header("accept", "application/json")
        .header("content-type", "application/x-www-form-urlencoded");
    match auth {
        FormAuth::Public(client_id) => {
            body.append_pair("client_id", client_id);
        }
        FormAuth::Nothing => {}
        FormAuth::Basic(client_id, secret) => {
            let encode = |text: &str| {
                url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>()
            };
            let pair = format!("{}:{}", encode(client_id), encode(secret.expose()));
            let credentials =
                base64::Engine::encode(&base64::engine::general_purpose::STANDARD, pair.as_bytes());
            request = request.header("authorization", format!("Basic {credentials}"));
        }
    }
    let request = request
        .body(body.finish().into_bytes())
        .map_err(|_| AuthError::http(what, url, "the url cannot be requested"))?;
    let failed = |reason: String| AuthError::Token {
        url: shown(url.as_str()),
        reason,
    };
    let response = http
        .call(request)
        .map_err(|error| failed(error.to_string()))?;
    debug_assert!(response.body().len() as u64 <= MAX_BODY_BYTES);
    let status = response.status().as_u16();
    let answer = serde_json::from_slice::<Value>(response.body())
        .ok()
        .filter(Value::is_object);
    match answer {
        Some(answer) if (200..300).contains(&status) => Ok(answer),
        Some(answer) => Err(failed(format!(
            "it answered {status}: {}",
            error_code(answer["error"].as_str().unwrap_or("no error code"))
        ))),
        None => Err(failed(format!(
            "it answered {status} without a JSON object"
        ))),
    }
}

/// The JWT bearer grant: `assertion` for an access token to `resource`.
pub(crate) fn jwt_bearer(
    http: &Http,
    token_endpoint: &Url,
    assertion: &Secret,
    resource: &str,
    scopes: &[String],
    auth: &FormAuth<'_>,
) -> Result<BasicTokenResponse, AuthError> {
    let scope = scopes.join(" ");
    let mut form = vec![
        ("grant_type", JWT_BEARER),
        ("assertion", assertion.expose()),
        ("resource", resource),
    ];
    if !scope.is_empty() {
        form.push(("scope", &scope));
    }
    let answer = post_form(http, token_endpoint, "the token endpoint", &form, auth)?;
    // serde's message could quote a value of the answer, a token among them: say where.
    serde_path_to_value(answer).map_err(|path| AuthError::Token {
        url: shown(token_endpoint.as_str()),
        reason: format!("its answer could not be read (at {path})"),
    })
}

fn serde_path_to_value(answer: Value) -> Result<BasicTokenResponse, String> {
    serde_json::from_value::<BasicTokenResponse>(answer).map_err(|error| {
        // Only the line and column-free category: never the value.
        format!("{:?}", error.classify())
    })
}

/// What the identity provider's token exchange needs.
pub(crate) struct Exchange<'a> {
    /// The identity provider's token endpoint.
    pub(crate) token_endpoint: &'a Url,
    /// The client id mcpl has at the identity provider, if any.
    pub(crate) client_id: Option<&'a str>,
    /// The person's identity token.
    pub(crate) id_token: &'a Secret,
}

/// The token exchange at the identity provider: the identity token for an ID-JAG whose
/// audience is the authorization server `issuer` and whose resource is `resource`.
pub(crate) fn id_jag(
    http: &Http,
    exchange: &Exchange<'_>,
    issuer: &str,
    resource: &str,
    scopes: &[String],
) -> Result<Secret, AuthError> {
    let scope = scopes.join(" ");
    let mut form = vec![
        ("grant_type", TOKEN_EXCHANGE),
        ("requested_token_type", ID_JAG_TYPE),
        ("audience", issuer),
        ("resource", resource),
        ("subject_token", exchange.id_token.expose()),
        ("subject_token_type", ID_TOKEN_TYPE),
    ];
    if !scope.is_empty() {
        form.push(("scope", &scope));
    }
    let endpoint = exchange.token_endpoint;
    let answer = post_form(
        http,
        endpoint,
        "the identity provider's token endpoint",
        &form,
        &exchange
            .client_id
            .map_or(FormAuth::Nothing, FormAuth::Public),
    )
    .map_err(|error| match error {
        AuthError::Token { url, reason } => AuthError::Token {
            url,
            reason: format!("the token exchange failed: {reason}"),
        },
        other => other,
    })?;
    let refused = |reason: &str| AuthError::Token {
        url: shown(endpoint.as_str()),
        reason: reason.to_owned(),
    };
    if answer.get("issued_token_type").and_then(Value::as_str) != Some(ID_JAG_TYPE) {
        return Err(refused(
            "the token exchange did not issue an identity assertion grant (id-jag)",
        ));
    }
    answer
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|jag| !jag.is_empty() && jag.len() as u64 <= MAX_BODY_BYTES)
        .map(Secret::new)
        .ok_or_else(|| refused("the token exchange's answer has no access_token"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpl_loopback::{Answer, Loopback};

    fn form(body: &[u8]) -> std::collections::HashMap<String, String> {
        url::form_urlencoded::parse(body).into_owned().collect()
    }

    #[test]
    fn the_id_token_is_exchanged_for_an_id_jag_and_the_jag_for_a_token() {
        let idp = Loopback::start(|_| {
            Answer::bytes(
                "application/json",
                br#"{"access_token":"the-jag","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}"#.to_vec(),
            )
        })
        .expect("an identity provider");
        let server = Loopback::start(|_| {
            Answer::bytes(
                "application/json",
                br#"{"access_token":"the-token","token_type":"Bearer"}"#.to_vec(),
            )
        })
        .expect("an authorization server");
        let http = Http::new();
        let endpoint = Url::parse(&format!("{}/token", idp.origin())).expect("a url");
        let id_token = Secret::new("the-id-token");
        let exchange = Exchange {
            token_endpoint: &endpoint,
            client_id: Some("idp-client"),
            id_token: &id_token,
        };
        let scopes = ["read".to_owned()];
        let jag = id_jag(
            &http,
            &exchange,
            "https://as.example",
            "https://mcp.example/mcp",
            &scopes,
        )
        .expect("a jag");
        assert_eq!(jag.expose(), "the-jag");
        let sent = form(&idp.requests()[0].body);
        assert_eq!(sent["grant_type"], TOKEN_EXCHANGE);
        assert_eq!(sent["subject_token"], "the-id-token");
        assert_eq!(sent["subject_token_type"], ID_TOKEN_TYPE);
        assert_eq!(sent["requested_token_type"], ID_JAG_TYPE);
        assert_eq!(sent["audience"], "https://as.example");
        assert_eq!(sent["resource"], "https://mcp.example/mcp");
        assert_eq!(sent["client_id"], "idp-client");
        let token_endpoint = Url::parse(&format!("{}/token", server.origin())).expect("a url");
        let secret = Secret::new("s3cret:&");
        let answer = jwt_bearer(
            &http,
            &token_endpoint,
            &jag,
            "https://mcp.example/mcp",
            &scopes,
            &FormAuth::Basic("client 1", &secret),
        )
        .expect("a token");
        use oauth2::TokenResponse as _;
        assert_eq!(answer.access_token().secret(), "the-token");
        let request = &server.requests()[0];
        let sent = form(&request.body);
        assert_eq!(sent["grant_type"], JWT_BEARER);
        assert_eq!(sent["assertion"], "the-jag");
        assert!(!sent.contains_key("client_id"));
        let basic = request.header("authorization").expect("basic");
        let decoded = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            basic.strip_prefix("Basic ").expect("basic"),
        )
        .expect("base64");
        assert_eq!(decoded, b"client+1:s3cret%3A%26");
    }

    #[test]
    fn a_refused_grant_names_its_code_and_no_secret() {
        let server = Loopback::start(|_| {
            let mut answer = Answer::bytes(
                "application/json",
                br#"{"error":"invalid_grant","error_description":"bad the-workload-jwt"}"#.to_vec(),
            );
            answer.status = 400;
            answer
        })
        .expect("an authorization server");
        let endpoint = Url::parse(&format!("{}/token", server.origin())).expect("a url");
        let error = jwt_bearer(
            &Http::new(),
            &endpoint,
            &Secret::new("the-workload-jwt"),
            "https://mcp.example/mcp",
            &[],
            &FormAuth::Public("workload"),
        )
        .expect_err("refused");
        let text = error.to_string();
        assert!(text.contains("400: invalid_grant"), "{text}");
        assert!(!text.contains("the-workload-jwt"), "{text}");
        assert_eq!(server.requests().len(), 1, "no retry");
    }
}
