//! OAuth 2.1 for remote MCP servers, as the MCP authorization specification describes it
//! (revisions 2025-11-25 and 2026-07-28, with the 2025-03-26 fallbacks).
//!
//! [`OAuthClient`] is one server's authorizer. A transport asks it two things:
//! [`OAuthClient::authorization`], the `Authorization` header for a request (only for that
//! server's origin), and [`OAuthClient::on_challenge`], on a 401 or 403, which runs what the
//! challenge asks and answers whether a retry may succeed. Behind them:
//!
//! - discovery, by hand: the `WWW-Authenticate` challenge ([`Challenge`]), the protected
//!   resource metadata (RFC 9728) and its resource checked against the server, the
//!   authorization server metadata (RFC 8414, then OpenID Connect discovery) and its issuer;
//! - the client id: pre-registered, a client id metadata document, or dynamic registration;
//! - the grants, through `oauth2`: the authorization code with PKCE (S256) and `resource`
//!   (RFC 8707), its response's `iss` checked (RFC 9207), refresh, step-up on
//!   `insufficient_scope`, and client credentials with a secret or `private_key_jwt`;
//! - tokens in memory or a 0600 token file, wrapped in [`Secret`] so that no `Debug`,
//!   `Display` or error shows them;
//! - a config file's `oauth` settings ([`OAuthSetting`]), checked into [`OAuthOptions`].
//!
//! ```
//! use mcpl_auth::{AuthConfig, OAuthClient, RedirectMode};
//! use url::Url;
//!
//! let server = Url::parse("https://mcp.example.com/mcp")?;
//! let client = OAuthClient::new(server.clone(), AuthConfig::new(RedirectMode::Headless))?;
//! // No token yet: the first request goes without, and its 401 starts the authorization.
//! assert_eq!(client.authorization(&server), None);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod challenge;
mod client;
mod discovery;
mod dpop;
mod error;
mod grants;
mod http;
mod jwt;
mod redirect;
mod secret;
mod settings;
mod store;

pub use challenge::Challenge;
pub use client::{
    AuthConfig, ClientCredential, ClientIdentity, DEFAULT_RETRY_LIMIT, OAuthClient, RedirectMode,
    ShowUrl,
};
pub use error::AuthError;
pub use http::HttpError;
pub use jwt::JwtAlgorithm;
pub use secret::{REDACTED, Secret};
pub use settings::{
    ClientCredentialsSettings, DEFAULT_AUTHORIZATION_TIMEOUT, EnterpriseSettings,
    JwtBearerSettings, OAuthOptions, OAuthSetting, OAuthSettings, RedirectSetting, SettingsError,
};
