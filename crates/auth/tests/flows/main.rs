//! mcpl-auth against a loopback authorization server and resource server: discovery,
//! registration, PKCE, refresh, step-up, client credentials, and the refusals.

mod mock;

use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_auth::{
    AuthConfig, AuthError, ClientCredential, ClientIdentity, JwtAlgorithm, OAuthClient,
    RedirectMode,
};
use mock::{ECHOED_FIELDS, Iss, Options, Pair, lock};
use url::Url;

/// Plays a transport: sends a JSON-RPC `method` to the server with the authorizer's header,
/// and on a 401 or 403 asks it whether to retry. Gives the last status; every error and
/// `Debug` output on the way is appended to `shown`.
fn call(
    client: &OAuthClient,
    url: &Url,
    method: &str,
    shown: &mut String,
) -> Result<u16, AuthError> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .new_agent();
    for _ in 0..8 {
        let mut request = agent
            .post(url.as_str())
            .header("content-type", "application/json");
        if let Some(header) = client.authorization(url) {
            request = request.header("authorization", &header);
        }
        let response = request
            .send(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}"}}"#))
            .expect("the resource server answers");
        let status = response.status().as_u16();
        if status != 401 && status != 403 {
            return Ok(status);
        }
        let header = response
            .headers()
            .get("www-authenticate")
            .and_then(|h| h.to_str().ok())
            .map(str::to_owned);
        let _ = writeln!(shown, "{client:?}");
        match client.challenge(url, status, header.as_deref()) {
            Ok(true) => {}
            Ok(false) => return Ok(status),
            Err(error) => {
                let _ = writeln!(shown, "{error} {error:?}");
                return Err(error);
            }
        }
    }
    panic!("more than eight rounds");
}

/// The status, or the test fails with the error's text.
fn status(result: Result<u16, AuthError>) -> u16 {
    result.unwrap_or_else(|error| panic!("authorization failed: {error}"))
}

fn headless() -> AuthConfig {
    AuthConfig::new(RedirectMode::Headless)
}

fn run(pair: &Pair, config: AuthConfig, method: &str) -> Result<u16, AuthError> {
    let client = OAuthClient::new(pair.mcp(), config).expect("the client");
    call(&client, &pair.mcp(), method, &mut String::new())
}

#[test]
fn discovery_registration_pkce_and_resource() {
    let pair = Pair::start(Options::default());
    let client = OAuthClient::new(pair.mcp(), headless()).expect("the client");
    let mut shown = String::new();
    assert_eq!(
        status(call(&client, &pair.mcp(), "tools/list", &mut shown)),
        200
    );
    let seen = pair.seen();
    assert!(seen.violations.is_empty(), "{:?}", seen.violations);
    // The metadata url from the challenge; never the root one.
    let paths = pair.paths();
    assert!(paths.contains(&"/.well-known/oauth-protected-resource/mcp".to_owned()));
    assert!(!paths.contains(&"/.well-known/oauth-protected-resource".to_owned()));
    // Dynamic registration as a native public client that wants refresh tokens.
    assert_eq!(seen.registrations.len(), 1);
    let registration = &seen.registrations[0];
    assert_eq!(registration["application_type"], "native");
    assert_eq!(registration["token_endpoint_auth_method"], "none");
    assert!(
        registration["grant_types"]
            .as_array()
            .expect("grant types")
            .contains(&"refresh_token".into())
    );
    // PKCE S256 and the resource in both requests, the same canonical uri.
    let authorization = &seen.authorizations[0];
    assert_eq!(authorization["code_challenge_method"], "S256");
    assert_eq!(authorization["resource"], pair.mcp().as_str());
    assert!(
        !authorization.contains_key("scope"),
        "no scope anywhere: omitted"
    );
    let (token_form, _) = &seen.token_requests[0];
    assert_eq!(token_form["resource"], pair.mcp().as_str());
    assert!(token_form.contains_key("code_verifier"));
    drop(seen);
    // The token went to the resource server only.
    assert!(pair.auth.requests().iter().all(|r| {
        r.header("authorization")
            .is_none_or(|h| !h.starts_with("Bearer"))
    }));
    assert_eq!(
        client.authorization(&Url::parse(pair.auth.origin()).expect("url")),
        None
    );
    assert_eq!(
        client.authorization(&Url::parse("http://127.0.0.1:1/mcp").expect("url")),
        None,
        "another port is another origin"
    );
}

#[test]
fn well_known_paths_path_inserted_then_root_and_an_issuer_with_a_path() {
    // metadata-var2: metadata at the root only, not in the challenge; the issuer has a path.
    let pair = Pair::start(Options {
        prm_path: Some("/.well-known/oauth-protected-resource".to_owned()),
        prm_in_header: false,
        as_prefix: "/tenant1".to_owned(),
        as_metadata_path: Some("/.well-known/oauth-authorization-server/tenant1".to_owned()),
        ..Options::default()
    });
    assert_eq!(status(run(&pair, headless(), "tools/list")), 200);
    let paths = pair.paths();
    let inserted = paths
        .iter()
        .position(|p| p == "/.well-known/oauth-protected-resource/mcp");
    let root = paths
        .iter()
        .position(|p| p == "/.well-known/oauth-protected-resource");
    assert!(
        inserted.is_some() && root.is_some() && inserted < root,
        "{paths:?}"
    );
    assert!(
        !paths.contains(&"/.well-known/oauth-authorization-server".to_owned()),
        "{paths:?}"
    );
    // The resource sent is the metadata's (the origin), a leading part of the server's url.
    assert_eq!(
        pair.seen().authorizations[0]["resource"],
        pair.resource.origin()
    );
}

#[test]
fn a_web_page_where_metadata_could_be_is_passed_over() {
    let pair = Pair::start(Options {
        prm_path: Some("/.well-known/oauth-protected-resource".to_owned()),
        prm_in_header: false,
        catch_all_page: true,
        ..Options::default()
    });
    assert_eq!(status(run(&pair, headless(), "tools/list")), 200);
}

#[test]
fn openid_discovery_after_rfc8414_and_path_appending_last() {
    // metadata-var3: only `/tenant1/.well-known/openid-configuration` answers.
    let pair = Pair::start(Options {
        as_prefix: "/tenant1".to_owned(),
        as_metadata_path: Some("/tenant1/.well-known/openid-configuration".to_owned()),
        ..Options::default()
    });
    assert_eq!(status(run(&pair, headless(), "tools/list")), 200);
    let asked: Vec<String> = pair
        .auth
        .requests()
        .iter()
        .map(|r| r.target.clone())
        .filter(|t| t.contains(".well-known"))
        .collect();
    assert_eq!(
        asked,
        [
            "/.well-known/oauth-authorization-server/tenant1",
            "/.well-known/openid-configuration/tenant1",
            "/tenant1/.well-known/openid-configuration",
        ]
    );
}

#[test]
fn the_2025_03_26_metadata_at_the_origin() {
    // No protected resource metadata: the origin is the authorization server, its RFC 8414
    // metadata at the root, the issuer the bare origin.
    let pair = Pair::start(Options {
        prm_path: None,
        legacy: true,
        ..Options::default()
    });
    assert_eq!(status(run(&pair, headless(), "tools/list")), 200);
    let paths = pair.paths();
    for expected in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server",
        "/register",
        "/authorize",
        "/token",
    ] {
        assert!(
            paths.contains(&expected.to_owned()),
            "{expected} in {paths:?}"
        );
    }
    assert!(pair.auth.requests().is_empty());
    assert_eq!(
        pair.seen().authorizations[0]["resource"],
        pair.mcp().as_str()
    );
}

#[test]
fn the_2025_03_26_metadata_may_name_an_issuer_on_the_same_origin_only() {
    // conformance 0.1.16's back-compat server says `<origin>/oauth`.
    let pair = Pair::start(Options {
        prm_path: None,
        legacy: true,
        metadata_issuer: Some("{origin}/oauth".to_owned()),
        ..Options::default()
    });
    let result = run(&pair, headless(), "tools/list");
    // The redirect's `iss` is the origin, not `<origin>/oauth`: refused, as another issuer.
    assert!(
        matches!(result, Err(AuthError::AuthorizationResponse { .. })),
        "{result:?}"
    );
    {
        let mut options = lock(&pair.options);
        options.iss = Iss::Omit;
        options.iss_supported = None;
    }
    assert_eq!(status(run(&pair, headless(), "tools/list")), 200);

    let pair = Pair::start(Options {
        prm_path: None,
        legacy: true,
        metadata_issuer: Some("https://elsewhere.example".to_owned()),
        ..Options::default()
    });
    let error = run(&pair, headless(), "tools/list").expect_err("another origin");
    assert!(matches!(error, AuthError::IssuerMismatch { .. }), "{error}");
}

#[test]
fn the_2025_03_26_default_endpoints() {
    // No metadata at all: `/authorize`, `/token` and `/register` at the origin.
    let pair = Pair::start(Options {
        prm_path: None,
        legacy: true,
        as_metadata_path: None,
        ..Options::default()
    });
    assert_eq!(status(run(&pair, headless(), "tools/list")), 200);
    let paths = pair.paths();
    for expected in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
        "/register",
        "/authorize",
        "/token",
    ] {
        assert!(
            paths.contains(&expected.to_owned()),
            "{expected} in {paths:?}"
        );
    }
    assert!(
        pair.seen().violations.is_empty(),
        "{:?}",
        pair.seen().violations
    );
}

#[test]
fn client_id_metadata_document_when_supported() {
    let pair = Pair::start(Options {
        cimd: true,
        ..Options::default()
    });
    let mut config = headless();
    config.client_metadata_url =
        Some(Url::parse("https://conformance-test.local/client-metadata.json").expect("url"));
    assert_eq!(status(run(&pair, config, "tools/list")), 200);
    let seen = pair.seen();
    assert!(seen.registrations.is_empty(), "no dynamic registration");
    assert_eq!(
        seen.authorizations[0]["client_id"],
        "https://conformance-test.local/client-metadata.json"
    );
    assert!(seen.violations.is_empty(), "{:?}", seen.violations);
}

#[test]
fn a_metadata_document_url_is_not_used_where_unsupported() {
    let pair = Pair::start(Options::default());
    let mut config = headless();
    config.client_metadata_url = Some(Url::parse("https://app.example/client.json").expect("url"));
    assert_eq!(status(run(&pair, config, "tools/list")), 200);
    assert_eq!(pair.seen().registrations.len(), 1);
}

#[test]
fn token_endpoint_authentication_as_registered() {
    for method in ["client_secret_basic", "client_secret_post", "none"] {
        let pair = Pair::start(Options {
            auth_methods: vec![method.to_owned()],
            ..Options::default()
        });
        assert_eq!(
            status(run(&pair, headless(), "tools/list")),
            200,
            "{method}"
        );
        let seen = pair.seen();
        assert!(
            seen.violations.is_empty(),
            "{method}: {:?}",
            seen.violations
        );
        assert_eq!(seen.registrations[0]["token_endpoint_auth_method"], method);
        let (form, authorization) = &seen.token_requests[0];
        assert_eq!(
            authorization.is_some(),
            method == "client_secret_basic",
            "{method}"
        );
        assert_eq!(
            form.contains_key("client_secret"),
            method == "client_secret_post",
            "{method}"
        );
    }
}

#[test]
fn a_pre_registered_client_comes_first_and_stays_with_its_issuer() {
    let pair = Pair::start(Options {
        dcr: false,
        auth_methods: vec!["client_secret_basic".to_owned()],
        pre_registered: Some(("pre-client".to_owned(), "pre-secret".to_owned())),
        ..Options::default()
    });
    let mut config = headless();
    config.identity = ClientIdentity::PreRegistered {
        client_id: "pre-client".to_owned(),
        client_secret: Some("pre-secret".into()),
        issuer: None,
    };
    assert_eq!(status(run(&pair, config.clone(), "tools/list")), 200);
    assert!(
        pair.seen().violations.is_empty(),
        "{:?}",
        pair.seen().violations
    );
    assert!(pair.seen().registrations.is_empty());

    config.identity = ClientIdentity::PreRegistered {
        client_id: "pre-client".to_owned(),
        client_secret: Some("pre-secret".into()),
        issuer: Some("https://another-issuer.example".to_owned()),
    };
    let error = run(&pair, config, "tools/list").expect_err("another issuer");
    assert!(
        matches!(error, AuthError::PreRegisteredElsewhere { .. }),
        "{error}"
    );
}

#[test]
fn no_registration_endpoint_and_no_client_is_an_error() {
    let pair = Pair::start(Options {
        dcr: false,
        ..Options::default()
    });
    let error = run(&pair, headless(), "tools/list").expect_err("no client id");
    assert!(matches!(error, AuthError::NoClientId { .. }), "{error}");
}

#[test]
fn scopes_from_the_challenge_else_the_metadata_else_omitted() {
    let pair = Pair::start(Options {
        challenge_scope: Some("mcp:basic".to_owned()),
        prm_scopes: Some(vec!["mcp:other".to_owned()]),
        ..Options::default()
    });
    assert_eq!(status(run(&pair, headless(), "tools/list")), 200);
    assert_eq!(pair.seen().authorizations[0]["scope"], "mcp:basic");

    let pair = Pair::start(Options {
        prm_scopes: Some(vec!["mcp:basic".to_owned(), "mcp:read".to_owned()]),
        ..Options::default()
    });
    assert_eq!(status(run(&pair, headless(), "tools/list")), 200);
    assert_eq!(pair.seen().authorizations[0]["scope"], "mcp:basic mcp:read");
}

#[test]
fn offline_access_only_when_the_authorization_server_lists_it() {
    let pair = Pair::start(Options {
        prm_scopes: Some(vec!["mcp:basic".to_owned()]),
        as_scopes: Some(vec!["mcp:basic".to_owned(), "offline_access".to_owned()]),
        ..Options::default()
    });
    assert_eq!(status(run(&pair, headless(), "tools/list")), 200);
    assert_eq!(
        pair.seen().authorizations[0]["scope"],
        "mcp:basic offline_access"
    );

    let pair = Pair::start(Options {
        prm_scopes: Some(vec!["mcp:basic".to_owned()]),
        as_scopes: Some(vec!["mcp:basic".to_owned(), "mcp:read".to_owned()]),
        ..Options::default()
    });
    assert_eq!(status(run(&pair, headless(), "tools/list")), 200);
    assert_eq!(pair.seen().authorizations[0]["scope"], "mcp:basic");
}

#[test]
fn step_up_asks_for_the_union_of_scopes() {
    let pair = Pair::start(Options {
        challenge_scope: Some("mcp:basic".to_owned()),
        call_scope: Some("mcp:write".to_owned()),
        ..Options::default()
    });
    let client = OAuthClient::new(pair.mcp(), headless()).expect("the client");
    let mut shown = String::new();
    assert_eq!(
        status(call(&client, &pair.mcp(), "tools/list", &mut shown)),
        200
    );
    assert_eq!(
        status(call(&client, &pair.mcp(), "tools/call", &mut shown)),
        200
    );
    let seen = pair.seen();
    let scopes: Vec<&str> = seen
        .authorizations
        .iter()
        .map(|a| a["scope"].as_str())
        .collect();
    assert_eq!(scopes, ["mcp:basic", "mcp:basic mcp:write"]);
    // One registration, reused for the same authorization server.
    assert_eq!(seen.registrations.len(), 1);
}

#[test]
fn step_up_that_cannot_help_stops() {
    let pair = Pair::start(Options {
        challenge_scope: Some("mcp:admin".to_owned()),
        call_scope: Some("mcp:admin".to_owned()),
        always_403: true,
        ..Options::default()
    });
    assert_eq!(status(run(&pair, headless(), "tools/call")), 403);
    assert!(
        pair.seen().authorizations.len() <= 3,
        "{}",
        pair.seen().authorizations.len()
    );
}

#[test]
fn repeated_401s_stop_at_the_retry_limit() {
    let pair = Pair::start(Options::default());
    let client = OAuthClient::new(pair.mcp(), headless()).expect("the client");
    // Every token is refused: revoke each one as soon as it is issued.
    let url = pair.mcp();
    let mut rounds = 0;
    loop {
        rounds += 1;
        assert!(rounds < 10, "the client never gave up");
        if let Some(header) = client.authorization(&url) {
            let token = header.trim_start_matches("Bearer ").to_owned();
            lock(&pair.seen).revoked.push(token);
        }
        let header = format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            pair.resource.origin()
        );
        if !client
            .challenge(&url, 401, Some(&header))
            .expect("no error")
        {
            break;
        }
    }
    assert_eq!(pair.seen().authorizations.len(), 3);
}

#[test]
fn refresh_before_expiry_and_after_a_refused_token() {
    let pair = Pair::start(Options {
        issue_refresh: true,
        expires_in: 30,
        ..Options::default()
    });
    let client = OAuthClient::new(pair.mcp(), headless()).expect("the client");
    let url = pair.mcp();
    let mut shown = String::new();
    let grants = |pair: &Pair| -> Vec<String> {
        pair.seen()
            .token_requests
            .iter()
            .map(|(form, _)| form["grant_type"].clone())
            .collect()
    };
    assert_eq!(status(call(&client, &url, "tools/list", &mut shown)), 200);
    // Thirty seconds is inside the margin: the retry's header already came from a refresh,
    // with the same resource.
    assert_eq!(grants(&pair), ["authorization_code", "refresh_token"]);
    assert_eq!(pair.seen().token_requests[1].0["resource"], url.as_str());
    // A token that lives an hour is not refreshed on every request.
    lock(&pair.options).expires_in = 3600;
    let header = client.authorization(&url).expect("a token");
    assert_eq!(client.authorization(&url).as_ref(), Some(&header));
    assert_eq!(grants(&pair).len(), 3);
    // The server stops accepting it: the 401 is answered with a refresh, not a new login.
    lock(&pair.seen)
        .revoked
        .push(header.trim_start_matches("Bearer ").to_owned());
    assert_eq!(status(call(&client, &url, "tools/list", &mut shown)), 200);
    assert_eq!(pair.seen().authorizations.len(), 1);
    assert_eq!(
        grants(&pair),
        [
            "authorization_code",
            "refresh_token",
            "refresh_token",
            "refresh_token"
        ]
    );
}

#[test]
fn a_resource_that_is_not_this_server_is_refused_before_authorizing() {
    let pair = Pair::start(Options {
        prm_resource: Some("https://evil.example.com/mcp".to_owned()),
        ..Options::default()
    });
    let error = run(&pair, headless(), "tools/list").expect_err("refused");
    assert!(
        matches!(error, AuthError::ResourceMismatch { .. }),
        "{error}"
    );
    assert!(pair.seen().authorizations.is_empty());
    assert!(pair.seen().registrations.is_empty());
}

#[test]
fn iss_is_checked_by_simple_string_comparison() {
    for (supported, iss, accepted) in [
        (Some(true), Iss::Correct, true),
        (None, Iss::Omit, true),
        (Some(false), Iss::Correct, true),
        (Some(true), Iss::Omit, false),
        (Some(true), Iss::Wrong, false),
        (None, Iss::Wrong, false),
        (Some(true), Iss::Normalized, false),
    ] {
        let pair = Pair::start(Options {
            iss_supported: supported,
            iss,
            ..Options::default()
        });
        let result = run(&pair, headless(), "tools/list");
        assert_eq!(
            result.is_ok(),
            accepted,
            "{supported:?} {iss:?}: {result:?}"
        );
        let seen = pair.seen();
        assert_eq!(seen.authorizations.len(), 1);
        // A refused response's code never reaches the token endpoint.
        assert_eq!(
            seen.token_requests.is_empty(),
            !accepted,
            "{supported:?} {iss:?}"
        );
        if let Err(error) = result {
            assert!(
                matches!(error, AuthError::AuthorizationResponse { .. }),
                "{error}"
            );
        }
    }
}

#[test]
fn metadata_naming_another_issuer_is_not_used() {
    let pair = Pair::start(Options {
        metadata_issuer: Some("https://attacker.example.com".to_owned()),
        ..Options::default()
    });
    let error = run(&pair, headless(), "tools/list").expect_err("refused");
    assert!(matches!(error, AuthError::IssuerMismatch { .. }), "{error}");
    assert!(pair.seen().registrations.is_empty());
    assert!(pair.seen().authorizations.is_empty());
}

#[test]
fn no_pkce_in_the_metadata_means_no_authorization() {
    let pair = Pair::start(Options {
        pkce_methods: None,
        ..Options::default()
    });
    let error = run(&pair, headless(), "tools/list").expect_err("refused");
    assert!(matches!(error, AuthError::NoPkce { .. }), "{error}");
    assert!(pair.seen().authorizations.is_empty());
}

#[test]
fn a_new_authorization_server_gets_a_new_registration() {
    let first = Pair::start(Options::default());
    let second = Pair::start_sharing(Options::default(), first.seen.clone());
    let client = OAuthClient::new(first.mcp(), headless()).expect("the client");
    let url = first.mcp();
    let mut shown = String::new();
    assert_eq!(status(call(&client, &url, "tools/list", &mut shown)), 200);
    let first_client = first.seen().registrations.len();
    assert_eq!(first_client, 1);
    // The metadata now names the second authorization server, and the old token is refused.
    let old = client.authorization(&url).expect("a token");
    lock(&first.seen)
        .revoked
        .push(old.trim_start_matches("Bearer ").to_owned());
    lock(&first.options).prm_issuer = Some(second.auth.origin().to_owned());
    assert_eq!(status(call(&client, &url, "tools/list", &mut shown)), 200);
    let registered_at_second = second
        .auth
        .requests()
        .iter()
        .any(|r| r.target == "/register");
    assert!(
        registered_at_second,
        "registered again with the new authorization server"
    );
    // The first server's client id never reaches the second.
    assert!(
        second
            .auth
            .requests()
            .iter()
            .all(|r| !r.target.contains("dcr-client-1")
                && !String::from_utf8_lossy(&r.body).contains("dcr-client-1"))
    );
    assert!(
        first.seen().violations.is_empty(),
        "{:?}",
        first.seen().violations
    );
}

#[test]
fn client_credentials_with_a_secret() {
    let pair = Pair::start(Options {
        cc_client: Some(("machine".to_owned(), "machine-secret".to_owned())),
        auth_methods: vec!["client_secret_basic".to_owned()],
        ..Options::default()
    });
    let mut config = headless();
    config.identity = ClientIdentity::ClientCredentials {
        client_id: "machine".to_owned(),
        credential: ClientCredential::Secret("machine-secret".into()),
    };
    assert_eq!(status(run(&pair, config, "tools/list")), 200);
    let seen = pair.seen();
    assert!(seen.violations.is_empty(), "{:?}", seen.violations);
    assert!(
        seen.authorizations.is_empty(),
        "no person, no authorization request"
    );
    assert_eq!(seen.token_requests[0].0["grant_type"], "client_credentials");
}

#[test]
fn client_credentials_with_a_signed_jwt() {
    use base64::Engine as _;
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 =
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("a key");
    let pair_key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .expect("reads");
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref())
    );
    let pair = Pair::start(Options {
        jwt_key: Some(pair_key.public_key().as_ref().to_vec()),
        auth_methods: vec!["private_key_jwt".to_owned()],
        ..Options::default()
    });
    let mut config = headless();
    config.identity = ClientIdentity::ClientCredentials {
        client_id: "machine".to_owned(),
        credential: ClientCredential::PrivateKeyJwt {
            key_pem: pem.clone().into(),
            algorithm: JwtAlgorithm::Es256,
        },
    };
    let client = OAuthClient::new(pair.mcp(), config).expect("the client");
    let mut shown = String::new();
    assert_eq!(
        status(call(&client, &pair.mcp(), "tools/list", &mut shown)),
        200
    );
    let seen = pair.seen();
    assert!(seen.violations.is_empty(), "{:?}", seen.violations);
    let (form, authorization) = &seen.token_requests[0];
    assert_eq!(form["grant_type"], "client_credentials");
    assert!(authorization.is_none());
    let _ = writeln!(shown, "{client:?}");
    let key_body = pem.lines().nth(1).expect("a body line");
    assert!(!shown.contains(&key_body[..40]), "the key leaked: {shown}");
}

#[test]
fn the_loopback_redirect_receives_the_response() {
    let pair = Pair::start(Options::default());
    let shown_urls: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let recorder = shown_urls.clone();
    let config = AuthConfig::new(RedirectMode::Loopback {
        // The "browser": follows the authorization url to the redirect, in another thread.
        show: Arc::new(move |url: &Url| {
            lock(&recorder).push(url.to_string());
            let url = url.clone();
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .max_redirects(5)
                    .build()
                    .new_agent();
                let _ = agent.get(url.as_str()).call();
            });
            Ok(())
        }),
        timeout: Duration::from_secs(20),
    });
    assert_eq!(status(run(&pair, config, "tools/list")), 200);
    let shown_urls = lock(&shown_urls);
    assert_eq!(shown_urls.len(), 1);
    let seen = pair.seen();
    let redirect = &seen.authorizations[0]["redirect_uri"];
    assert!(
        redirect.starts_with("http://127.0.0.1:") && redirect.ends_with("/callback"),
        "{redirect}"
    );
    assert_eq!(seen.registrations[0]["redirect_uris"][0], redirect.as_str());
}

#[test]
fn a_person_who_never_answers_times_out() {
    let pair = Pair::start(Options::default());
    let config = AuthConfig::new(RedirectMode::Loopback {
        show: Arc::new(|_: &Url| Ok(())),
        timeout: Duration::from_millis(300),
    });
    let error = run(&pair, config, "tools/list").expect_err("timed out");
    assert!(matches!(error, AuthError::Timeout { .. }), "{error}");
}

#[test]
fn the_token_file_is_private_reloaded_and_never_in_a_repository() {
    let folder = tempfile::tempdir().expect("a folder");
    let path = folder.path().join("tokens").join("mcpl.json");
    let pair = Pair::start(Options {
        issue_refresh: true,
        ..Options::default()
    });
    let mut config = headless();
    config.token_file = Some(path.clone());
    assert_eq!(status(run(&pair, config.clone(), "tools/list")), 200);
    let mode = std::fs::metadata(&path)
        .expect("written")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let folder_mode = std::fs::metadata(path.parent().expect("a folder"))
        .expect("made")
        .permissions()
        .mode();
    assert_eq!(folder_mode & 0o777, 0o700);
    // A new client (a new run) uses the kept token: no second authorization.
    let again = OAuthClient::new(pair.mcp(), config.clone()).expect("the client");
    assert!(again.authorization(&pair.mcp()).is_some());
    assert_eq!(
        status(call(&again, &pair.mcp(), "tools/list", &mut String::new())),
        200
    );
    assert_eq!(pair.seen().authorizations.len(), 1);

    // Readable by others: refused.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let error = OAuthClient::new(pair.mcp(), config).expect_err("refused");
    assert!(error.to_string().contains("chmod 600"), "{error}");

    // Inside a git repository: refused, even where the folder does not exist yet.
    let repository = tempfile::tempdir().expect("a folder");
    std::fs::create_dir(repository.path().join(".git")).expect("a .git");
    let mut config = headless();
    config.token_file = Some(repository.path().join("deep").join("tokens.json"));
    let error = OAuthClient::new(pair.mcp(), config).expect_err("refused");
    assert!(
        error.to_string().contains("inside a git repository"),
        "{error}"
    );
}

/// A token endpoint may quote the request it refuses in its `error_description`: the error says
/// its `error` code and never the description, so no code, verifier or secret reaches a log or
/// the model.
#[test]
fn a_token_endpoint_echoing_the_request_is_never_repeated() {
    for method in ["client_secret_post", "client_secret_basic"] {
        let pair = Pair::start(Options {
            echo_token_requests: true,
            auth_methods: vec![method.to_owned()],
            ..Options::default()
        });
        let client = OAuthClient::new(pair.mcp(), headless()).expect("the client");
        let error = call(&client, &pair.mcp(), "tools/list", &mut String::new())
            .expect_err("the token endpoint refuses");
        let text = format!("{error} {error:?}");
        assert!(matches!(error, AuthError::Token { .. }), "{method}: {text}");
        assert!(
            text.contains("it answered invalid_grant"),
            "{method}: {text}"
        );
        let seen = pair.seen();
        let (form, authorization) = &seen.token_requests[0];
        let mut secrets: Vec<&str> = ECHOED_FIELDS
            .iter()
            .filter_map(|&key| form.get(key).map(String::as_str))
            .collect();
        secrets.extend(authorization.as_deref());
        secrets.extend(
            seen.clients
                .values()
                .filter_map(|(secret, _)| secret.as_deref()),
        );
        assert!(
            secrets.len() >= 3,
            "{method}: code, verifier and secret: {secrets:?}"
        );
        for secret in secrets {
            assert!(!text.contains(secret), "{method}: {secret} in {text}");
        }
        assert!(
            !text.contains("refused: "),
            "{method}: the description in {text}"
        );
    }
}

#[test]
fn tokens_never_appear_in_errors_debug_or_logs() {
    let logs = Arc::new(Mutex::new(Vec::<u8>::new()));
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || LogWriter(writer.clone()))
        .finish();
    let mut shown = String::new();
    // A global subscriber: the interest of a log site is cached across threads, so a scoped
    // one would miss the lines other tests reached first. Every test's lines are grepped.
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    {
        // A full run with refresh, step-up and a refused token, then failures of every kind.
        let pair = Pair::start(Options {
            issue_refresh: true,
            expires_in: 30,
            auth_methods: vec!["client_secret_post".to_owned()],
            challenge_scope: Some("mcp:basic".to_owned()),
            call_scope: Some("mcp:write".to_owned()),
            ..Options::default()
        });
        let client = OAuthClient::new(pair.mcp(), headless()).expect("the client");
        let url = pair.mcp();
        assert_eq!(status(call(&client, &url, "tools/list", &mut shown)), 200);
        assert_eq!(status(call(&client, &url, "tools/call", &mut shown)), 200);
        let _ = writeln!(shown, "{client:?}");
        // Token endpoint failures: the refresh token is unknown now.
        lock(&pair.seen).refresh_tokens.clear();
        let _ = client.authorization(&url);
        for iss in [Iss::Wrong, Iss::Omit] {
            lock(&pair.options).iss = iss;
            lock(&pair.seen).tokens.clear();
            let _ = call(&client, &url, "tools/list", &mut shown);
        }
        let _ = writeln!(shown, "{client:?}");
        // Configured secrets, through the config's and the client's Debug.
        let mut config = headless();
        config.identity = ClientIdentity::PreRegistered {
            client_id: "pre".to_owned(),
            client_secret: Some("PRESECRET-1".into()),
            issuer: None,
        };
        let pre = OAuthClient::new(pair.mcp(), config.clone()).expect("the client");
        let _ = writeln!(shown, "{config:?} {pre:?}");
        config.identity = ClientIdentity::ClientCredentials {
            client_id: "machine".to_owned(),
            credential: ClientCredential::Secret("PRESECRET-2".into()),
        };
        let _ = writeln!(shown, "{config:?}");
        // A token endpoint that quotes the refresh token, then the code and verifier, it refuses.
        let echoing = Pair::start(Options {
            issue_refresh: true,
            expires_in: 30,
            auth_methods: vec!["client_secret_post".to_owned()],
            ..Options::default()
        });
        let client = OAuthClient::new(echoing.mcp(), headless()).expect("the client");
        let url = echoing.mcp();
        assert_eq!(status(call(&client, &url, "tools/list", &mut shown)), 200);
        lock(&echoing.options).echo_token_requests = true;
        let _ = client.authorization(&url);
        let _ = call(&client, &url, "tools/list", &mut shown);
        assert!(shown.contains("it answered invalid_grant"), "{shown}");
    }
    let logs = String::from_utf8(lock(&logs).clone()).expect("utf-8 logs");
    assert!(
        logs.contains("authorized"),
        "the logs were captured: {logs}"
    );
    assert!(shown.contains("[redacted]"), "{shown}");
    for (name, text) in [("errors and Debug", &shown), ("logs", &logs)] {
        for secret in [
            "SECRETTOKEN",
            "SECRETREFRESH",
            "dcr-secret",
            "PRESECRET",
            "code-",
            "code_verifier",
        ] {
            assert!(!text.contains(secret), "{secret} in the {name}: {text}");
        }
    }
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        lock(&self.0).extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
