//! MCP's discovery, by hand: the protected resource metadata (RFC 9728) from the challenge or
//! the well-known paths, the resource check, the authorization server metadata (RFC 8414, then
//! OpenID Connect discovery) with its issuer check, and the 2025-03-26 fallbacks.

use serde_json::Value;
use url::Url;

use crate::challenge::Challenge;
use crate::error::{AuthError, shown};
use crate::http::{Http, require_secure};

/// The most scopes or authorization servers read from one document.
const MAX_LIST: usize = 256;

/// What discovery learned for one server: which resource to ask for, which authorization
/// server to ask, and what that server said about itself.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The `resource` parameter (RFC 8707): the metadata's `resource`, or the server's
    /// canonical uri when there is no metadata.
    pub(crate) resource: String,
    /// The metadata's `scopes_supported`, if any.
    pub(crate) resource_scopes: Option<Vec<String>>,
    /// The authorization server.
    pub(crate) server: ServerMetadata,
}

/// An authorization server's metadata, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerMetadata {
    /// The issuer identifier, exactly as the protected resource metadata names it.
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Url,
    pub(crate) token_endpoint: Url,
    pub(crate) registration_endpoint: Option<Url>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) token_endpoint_auth_methods: Option<Vec<String>>,
    /// `code_challenge_methods_supported`; `None` when no metadata was found at all (the
    /// 2025-03-26 default endpoints).
    pub(crate) code_challenge_methods: Option<Vec<String>>,
    pub(crate) client_id_metadata_document_supported: bool,
    pub(crate) iss_parameter_supported: bool,
    /// Whether this came from a metadata document (false for the 2025-03-26 defaults).
    pub(crate) from_document: bool,
}

/// The server's canonical uri (MCP "Canonical Server URI"): lowercase scheme and host (the
/// url parser's doing), no fragment, and no trailing slash on an empty path.
pub(crate) fn canonical_resource(server: &Url) -> String {
    let mut url = server.clone();
    url.set_fragment(None);
    let text = url.as_str();
    if url.path() == "/" && url.query().is_none() {
        text.trim_end_matches('/').to_owned()
    } else {
        text.to_owned()
    }
}

/// Whether the metadata's `resource` names this server: the same origin, and a path that is
/// the server's path or one of its leading segments (metadata served at the root names the
/// origin).
pub(crate) fn resource_matches(resource: &Url, server: &Url) -> bool {
    if resource.origin() != server.origin() || resource.fragment().is_some() {
        return false;
    }
    let prefix = resource.path().trim_end_matches('/');
    let path = server.path().trim_end_matches('/');
    prefix.is_empty()
        || path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// RFC 9728's well-known urls for a server, in the order MCP tries them: the path-inserted
/// one (when the server has a path), then the root.
pub(crate) fn resource_metadata_urls(server: &Url) -> Vec<Url> {
    let mut urls = Vec::new();
    let path = server.path().trim_end_matches('/');
    let mut root = server.clone();
    root.set_query(None);
    root.set_fragment(None);
    if !path.is_empty() {
        let mut inserted = root.clone();
        inserted.set_path(&format!("/.well-known/oauth-protected-resource{path}"));
        urls.push(inserted);
    }
    root.set_path("/.well-known/oauth-protected-resource");
    urls.push(root);
    urls
}

/// The well-known urls of an issuer's metadata, in MCP's order: for an issuer with a path,
/// RFC 8414 path insertion, OpenID path insertion, OpenID path appending; without one, RFC
/// 8414 then OpenID.
pub(crate) fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let mut base = issuer.clone();
    base.set_query(None);
    base.set_fragment(None);
    let at = |path: &str| {
        let mut url = base.clone();
        url.set_path(path);
        url
    };
    if path.is_empty() {
        vec![
            at("/.well-known/oauth-authorization-server"),
            at("/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            at(&format!("/.well-known/oauth-authorization-server{path}")),
            at(&format!("/.well-known/openid-configuration{path}")),
            at(&format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

/// Discovery for `server` after a challenge: the protected resource metadata (from the
/// challenge's `resource_metadata`, else the well-known urls), its resource checked against the
/// server, then its first authorization server's metadata. Without any protected resource
/// metadata, the 2025-03-26 way: the server's origin as the authorization server, its RFC 8414
/// metadata, else the default `/authorize`, `/token` and `/register` endpoints.
pub(crate) fn discover(
    http: &Http,
    server: &Url,
    challenge: &Challenge,
) -> Result<Discovered, AuthError> {
    let found = match challenge
        .resource_metadata
        .as_deref()
        .and_then(|url| Url::parse(url).ok())
    {
        Some(url) => {
            require_secure(&url, "the protected resource metadata url")?;
            match http.get_json(&url, "the protected resource metadata")? {
                Some(document) => Some((url, document)),
                None => {
                    return Err(AuthError::ResourceMetadata {
                        url: shown(url.as_str()),
                        reason: "it was not found, or is not a JSON object".to_owned(),
                    });
                }
            }
        }
        None => {
            let mut found = None;
            for url in resource_metadata_urls(server) {
                if let Some(document) = http.get_json(&url, "the protected resource metadata")? {
                    found = Some((url, document));
                    break;
                }
            }
            found
        }
    };
    let Some((url, document)) = found else {
        return legacy(http, server);
    };
    let ResourceMetadata {
        resource,
        issuers,
        scopes: resource_scopes,
    } = read_resource_metadata(&url, &document, server)?;
    // RFC 9728 §7.6 leaves the choice to the client: the first listed one that answers.
    let mut last_error = None;
    for issuer in &issuers {
        match server_metadata(http, issuer) {
            Ok(metadata) => {
                return Ok(Discovered {
                    resource,
                    resource_scopes,
                    server: metadata,
                });
            }
            Err(error) => last_error = Some(error),
        }
    }
    Err(last_error.unwrap_or_else(|| AuthError::ResourceMetadata {
        url: shown(url.as_str()),
        reason: "it names no authorization server".to_owned(),
    }))
}

/// What MCP reads of a protected resource metadata document.
struct ResourceMetadata {
    resource: String,
    issuers: Vec<String>,
    scopes: Option<Vec<String>>,
}

/// The `resource`, `authorization_servers` and `scopes_supported` of a protected resource
/// metadata document, the resource checked against the server.
fn read_resource_metadata(
    url: &Url,
    document: &Value,
    server: &Url,
) -> Result<ResourceMetadata, AuthError> {
    let bad = |reason: &str| AuthError::ResourceMetadata {
        url: shown(url.as_str()),
        reason: reason.to_owned(),
    };
    let resource = document
        .get("resource")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("it has no resource"))?;
    let parsed = Url::parse(resource).map_err(|_| bad("its resource is not a url"))?;
    if !resource_matches(&parsed, server) {
        return Err(AuthError::ResourceMismatch {
            found: shown(resource),
            expected: canonical_resource(server),
        });
    }
    let issuers = strings(document.get("authorization_servers"))
        .ok_or_else(|| bad("it names no authorization server"))?;
    if issuers.is_empty() {
        return Err(bad("it names no authorization server"));
    }
    Ok(ResourceMetadata {
        resource: resource.to_owned(),
        issuers,
        scopes: strings(document.get("scopes_supported")),
    })
}

/// An issuer's metadata from the first well-known url that has it, its `issuer` checked.
pub(crate) fn server_metadata(http: &Http, issuer: &str) -> Result<ServerMetadata, AuthError> {
    let issuer_url = Url::parse(issuer).map_err(|_| AuthError::ResourceMetadata {
        url: shown(issuer),
        reason: "an authorization server is not a url".to_owned(),
    })?;
    require_secure(&issuer_url, "an authorization server")?;
    for url in server_metadata_urls(&issuer_url) {
        if let Some(document) = http.get_json(&url, "the authorization server metadata")? {
            return read_server_metadata(&url, &document, issuer);
        }
    }
    Err(AuthError::NoServerMetadata {
        issuer: shown(issuer),
    })
}

/// A metadata document read and checked: the same issuer, the endpoints present and secure.
pub(crate) fn read_server_metadata(
    url: &Url,
    document: &Value,
    issuer: &str,
) -> Result<ServerMetadata, AuthError> {
    let found = document.get("issuer").and_then(Value::as_str);
    if found != Some(issuer) {
        return Err(AuthError::IssuerMismatch {
            url: shown(url.as_str()),
            found: shown(found.unwrap_or("nothing")),
            expected: shown(issuer),
        });
    }
    let endpoint = |name: &str| -> Result<Option<Url>, AuthError> {
        let Some(value) = document.get(name) else {
            return Ok(None);
        };
        let parsed = value
            .as_str()
            .and_then(|text| Url::parse(text).ok())
            .ok_or_else(|| AuthError::ServerMetadata {
                url: shown(url.as_str()),
                reason: format!("its {name} is not a url"),
            })?;
        require_secure(&parsed, name)?;
        Ok(Some(parsed))
    };
    let required = |name: &str| -> Result<Url, AuthError> {
        endpoint(name)?.ok_or_else(|| AuthError::ServerMetadata {
            url: shown(url.as_str()),
            reason: format!("it has no {name}"),
        })
    };
    Ok(ServerMetadata {
        issuer: issuer.to_owned(),
        authorization_endpoint: required("authorization_endpoint")?,
        token_endpoint: required("token_endpoint")?,
        registration_endpoint: endpoint("registration_endpoint")?,
        scopes_supported: strings(document.get("scopes_supported")),
        token_endpoint_auth_methods: strings(document.get("token_endpoint_auth_methods_supported")),
        code_challenge_methods: Some(
            strings(document.get("code_challenge_methods_supported")).unwrap_or_default(),
        ),
        client_id_metadata_document_supported: document
            .get("client_id_metadata_document_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        iss_parameter_supported: document
            .get("authorization_response_iss_parameter_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        from_document: true,
    })
}

/// 2025-03-26: no protected resource metadata; the authorization base url is the server's
/// origin, its RFC 8414 metadata if it has one, else the default endpoints there.
fn legacy(http: &Http, server: &Url) -> Result<Discovered, AuthError> {
    let origin = server.origin();
    if !origin.is_tuple() {
        return Err(AuthError::NoAuthorizationServer {
            server: shown(server.as_str()),
        });
    }
    let issuer = origin.ascii_serialization();
    let base = Url::parse(&issuer).map_err(|_| AuthError::NoAuthorizationServer {
        server: shown(server.as_str()),
    })?;
    require_secure(&base, "the authorization server")?;
    let resource = canonical_resource(server);
    for url in server_metadata_urls(&base) {
        if let Some(document) = http.get_json(&url, "the authorization server metadata")? {
            // No resource metadata named an issuer: the server's own origin vouches for the
            // document, so an issuer on that same origin (`<origin>/oauth`, as some 2025-03-26
            // servers wrote) is the issuer recorded; another origin is still refused.
            let expected = document
                .get("issuer")
                .and_then(Value::as_str)
                .filter(|found| {
                    Url::parse(found).is_ok_and(|found| found.origin() == base.origin())
                })
                .unwrap_or(&issuer)
                .to_owned();
            return Ok(Discovered {
                resource,
                resource_scopes: None,
                server: read_server_metadata(&url, &document, &expected)?,
            });
        }
    }
    let at = |path: &str| {
        let mut url = base.clone();
        url.set_path(path);
        url
    };
    Ok(Discovered {
        resource,
        resource_scopes: None,
        server: ServerMetadata {
            issuer,
            authorization_endpoint: at("/authorize"),
            token_endpoint: at("/token"),
            registration_endpoint: Some(at("/register")),
            scopes_supported: None,
            token_endpoint_auth_methods: None,
            code_challenge_methods: None,
            client_id_metadata_document_supported: false,
            iss_parameter_supported: false,
            from_document: false,
        },
    })
}

/// An array of strings, bounded; `None` when absent or not an array.
fn strings(value: Option<&Value>) -> Option<Vec<String>> {
    let array = value?.as_array()?;
    Some(
        array
            .iter()
            .filter_map(Value::as_str)
            .take(MAX_LIST)
            .map(str::to_owned)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).expect("a url")
    }

    fn texts(urls: Vec<Url>) -> Vec<String> {
        urls.into_iter().map(String::from).collect()
    }

    #[test]
    fn canonical_uris() {
        assert_eq!(
            canonical_resource(&url("HTTPS://MCP.Example.com/mcp#x")),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(
            canonical_resource(&url("https://mcp.example.com/")),
            "https://mcp.example.com"
        );
        assert_eq!(
            canonical_resource(&url("https://mcp.example.com:8443")),
            "https://mcp.example.com:8443"
        );
    }

    #[test]
    fn resource_must_be_this_server_or_a_leading_part_of_it() {
        let server = url("https://mcp.example.com/public/mcp");
        for (resource, expected) in [
            ("https://mcp.example.com/public/mcp", true),
            ("https://mcp.example.com/public/mcp/", true),
            ("https://mcp.example.com/public", true),
            ("https://mcp.example.com", true),
            ("https://MCP.EXAMPLE.COM/public/mcp", true),
            ("https://evil.example.com/public/mcp", false),
            ("http://mcp.example.com/public/mcp", false),
            ("https://mcp.example.com:444/public/mcp", false),
            ("https://mcp.example.com/pub", false),
            ("https://mcp.example.com/public/mcp/other", false),
            ("https://mcp.example.com/public/mcp#frag", false),
        ] {
            assert_eq!(
                resource_matches(&url(resource), &server),
                expected,
                "{resource}"
            );
        }
    }

    #[test]
    fn protected_resource_metadata_urls_path_inserted_then_root() {
        assert_eq!(
            texts(resource_metadata_urls(&url(
                "https://example.com/public/mcp/?q=1"
            ))),
            [
                "https://example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            texts(resource_metadata_urls(&url("https://example.com"))),
            ["https://example.com/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn server_metadata_urls_in_the_spec_order() {
        assert_eq!(
            texts(server_metadata_urls(&url(
                "https://auth.example.com/tenant1"
            ))),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            texts(server_metadata_urls(&url("https://auth.example.com"))),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn metadata_with_another_issuer_is_refused() {
        let document = serde_json::json!({
            "issuer": "https://attacker.example",
            "authorization_endpoint": "https://attacker.example/a",
            "token_endpoint": "https://attacker.example/t",
        });
        let at = url("https://honest.example/.well-known/oauth-authorization-server");
        let error =
            read_server_metadata(&at, &document, "https://honest.example").expect_err("refused");
        assert!(matches!(error, AuthError::IssuerMismatch { .. }), "{error}");
        // Simple string comparison: a trailing slash is another issuer.
        let document = serde_json::json!({
            "issuer": "https://honest.example/",
            "authorization_endpoint": "https://honest.example/a",
            "token_endpoint": "https://honest.example/t",
        });
        assert!(read_server_metadata(&at, &document, "https://honest.example").is_err());
    }

    #[test]
    fn plain_http_endpoints_off_loopback_are_refused() {
        let document = serde_json::json!({
            "issuer": "https://as.example",
            "authorization_endpoint": "https://as.example/a",
            "token_endpoint": "http://as.example/t",
        });
        let at = url("https://as.example/.well-known/oauth-authorization-server");
        let error =
            read_server_metadata(&at, &document, "https://as.example").expect_err("refused");
        assert!(matches!(error, AuthError::Insecure { .. }), "{error}");
    }
}
