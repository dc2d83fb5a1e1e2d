//! `OAuthClient`: one remote server's authorizer. It answers the transport's two questions
//! (the `Authorization` header for a request, and whether a 401 or 403 is worth a retry) and
//! runs discovery, registration, the grants and refresh behind them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oauth2::basic::{BasicClient, BasicTokenResponse, BasicTokenType};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointState,
    PkceCodeChallenge, RedirectUrl, RefreshToken, RequestTokenError, Scope, TokenResponse,
    TokenUrl,
};
use serde_json::{Value, json};
use url::Url;

use crate::challenge::{Challenge, split_scopes};
use crate::discovery::{Discovered, canonical_resource, discover};
use crate::dpop::{DpopHttp, DpopKey};
use crate::error::{AuthError, error_code, shown};
use crate::grants::{Exchange, FormAuth, id_jag, jwt_bearer};
use crate::http::{Http, require_secure};
use crate::jwt::{ASSERTION_TYPE, JwtAlgorithm, SigningKey};
use crate::redirect::{HEADLESS_REDIRECT, LoopbackRedirect, follow};
use crate::secret::Secret;
use crate::store::{Grant, TokenFile};

/// A token this close to its expiry is refreshed before it is sent.
const REFRESH_MARGIN_SECONDS: u64 = 60;

/// The default number of authorizations in a row (no request passing in between) before a
/// challenge is answered `false`.
pub const DEFAULT_RETRY_LIMIT: u32 = 3;

/// The scope that asks for a refresh token (OpenID Connect, SEP-2207).
const OFFLINE_ACCESS: &str = "offline_access";

/// Shows the authorization url to the person (prints it, or opens a browser).
pub type ShowUrl = Arc<dyn Fn(&Url) -> std::io::Result<()> + Send + Sync>;

/// How the person's step happens.
#[derive(Clone)]
#[non_exhaustive]
pub enum RedirectMode {
    /// A loopback redirect on 127.0.0.1 (a free port): `show` is given the authorization url
    /// (the binary prints it, or opens a browser with `--open-browser`), and the response must
    /// arrive within `timeout`.
    Loopback {
        /// Shows the authorization url to the person.
        show: ShowUrl,
        /// How long to wait for the person.
        timeout: Duration,
    },
    /// No person: the authorization request is fetched with redirects off and the code read
    /// from its `Location`, as test authorization servers that approve at once allow. For
    /// tests and the conformance suite.
    Headless,
}

impl std::fmt::Debug for RedirectMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RedirectMode::Loopback { timeout, .. } => f
                .debug_struct("Loopback")
                .field("timeout", timeout)
                .finish_non_exhaustive(),
            RedirectMode::Headless => f.write_str("Headless"),
        }
    }
}

/// Who mcpl is to the authorization server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientIdentity {
    /// A client id got for the occasion: the client id metadata document url when the
    /// authorization server supports them and the config names one, else dynamic client
    /// registration (RFC 7591), one registration per authorization server.
    Register,
    /// A client registered beforehand; used first when configured (MCP's order of preference).
    PreRegistered {
        /// The client id.
        client_id: String,
        /// Its secret, for a confidential client.
        client_secret: Option<Secret>,
        /// The issuer it was registered with; another issuer in the metadata is an error.
        issuer: Option<String>,
    },
    /// A workload with an identity token of its own (workload identity federation,
    /// SEP-1933): the JWT bearer grant (RFC 7523 §2.1) with that token as the assertion. No
    /// person, no secret; a refused grant is reported, never retried with another grant.
    JwtBearer {
        /// The client id, sent in the form.
        client_id: String,
        /// The workload's identity token (a JWT whose audience is the authorization server).
        assertion: Secret,
    },
    /// Enterprise-managed authorization (SEP-990, cross-app access): the person's identity
    /// token from the enterprise's identity provider is exchanged there (RFC 8693) for an
    /// identity assertion grant (ID-JAG) for the server's authorization server, which the JWT
    /// bearer grant turns into an access token. No browser.
    Enterprise {
        /// The client id at the server's authorization server.
        client_id: String,
        /// Its secret, sent as `client_secret_basic`.
        client_secret: Secret,
        /// The identity provider's token endpoint.
        idp_token_endpoint: Url,
        /// The client id at the identity provider, if it wants one.
        idp_client_id: Option<String>,
        /// The person's identity token from the identity provider.
        id_token: Secret,
    },
    /// A machine client with no person: the client credentials grant.
    ClientCredentials {
        /// The client id.
        client_id: String,
        /// How it authenticates at the token endpoint.
        credential: ClientCredential,
    },
}

impl ClientIdentity {
    /// Every credential this identity holds (a client secret, a private key, a workload's
    /// assertion, a person's identity token): what a host registers so that no server string
    /// carries one back to a model.
    pub fn secrets(&self) -> Vec<&Secret> {
        match self {
            ClientIdentity::Register => Vec::new(),
            ClientIdentity::PreRegistered { client_secret, .. } => client_secret.iter().collect(),
            ClientIdentity::JwtBearer { assertion, .. } => vec![assertion],
            ClientIdentity::Enterprise {
                client_secret,
                id_token,
                ..
            } => vec![client_secret, id_token],
            ClientIdentity::ClientCredentials { credential, .. } => match credential {
                ClientCredential::Secret(secret) => vec![secret],
                ClientCredential::PrivateKeyJwt { key_pem, .. } => vec![key_pem],
            },
        }
    }
}

/// A client credentials client's authentication at the token endpoint.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientCredential {
    /// A client secret, sent as `client_secret_basic` (or `client_secret_post` when the
    /// authorization server lists only that).
    Secret(Secret),
    /// `private_key_jwt` (RFC 7523): an assertion signed with this PKCS#8 PEM key.
    PrivateKeyJwt {
        /// The private key, PKCS#8 PEM.
        key_pem: Secret,
        /// The signing algorithm.
        algorithm: JwtAlgorithm,
    },
}

/// One server's authorization settings.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuthConfig {
    /// Who mcpl is to the authorization server.
    pub identity: ClientIdentity,
    /// Scopes asked for when neither the challenge nor the metadata suggests any.
    pub scopes: Vec<String>,
    /// Where the grant is kept across runs; in memory only when `None`.
    pub token_file: Option<PathBuf>,
    /// How the person's step happens.
    pub redirect: RedirectMode,
    /// Ask for `offline_access` when the authorization server lists it (a refresh token).
    pub offline_access: bool,
    /// The `client_name` sent when registering.
    pub client_name: String,
    /// The client id metadata document's url (an https url with a path), if mcpl has one.
    pub client_metadata_url: Option<Url>,
    /// Authorizations in a row before a challenge is answered `false`.
    pub retry_limit: u32,
    /// Ask for DPoP-bound tokens (RFC 9449) even when the server's challenge is `Bearer`;
    /// a `DPoP` challenge asks for them anyway.
    pub dpop: bool,
}

impl AuthConfig {
    /// Settings with dynamic registration, no file, `offline_access`, client name `mcpl`, the
    /// default retry limit, and the given redirect mode.
    pub fn new(redirect: RedirectMode) -> AuthConfig {
        AuthConfig {
            identity: ClientIdentity::Register,
            scopes: Vec::new(),
            token_file: None,
            redirect,
            offline_access: true,
            client_name: "mcpl".to_owned(),
            client_metadata_url: None,
            retry_limit: DEFAULT_RETRY_LIMIT,
            dpop: false,
        }
    }
}

/// A client id for one authorization server, and how it authenticates.
#[derive(Clone)]
struct Registered {
    client_id: String,
    client_secret: Option<Secret>,
    auth_method: String,
    redirect_uri: String,
}

/// What changes between calls.
#[derive(Default)]
struct State {
    grant: Option<Grant>,
    /// How many times the current access token was handed out.
    handed_out: u32,
    /// Authorizations in a row with no request passing in between.
    streak: u32,
    /// The scopes asked for last, kept when a grant is dropped (step-up takes their union).
    requested: Vec<String>,
    /// The last discovery.
    discovered: Option<Discovered>,
    /// Dynamic registrations, by issuer: never reused with another authorization server.
    registrations: HashMap<String, Registered>,
    /// The loopback redirect, bound once.
    redirect: Option<LoopbackRedirect>,
    /// The resource server's last `DPoP-Nonce`.
    rs_nonce: Option<String>,
}

/// The authorizer of one remote MCP server. Tokens go to that server's origin only; they never
/// appear in its `Debug`, a log line or an error.
pub struct OAuthClient {
    server: Url,
    key: String,
    config: AuthConfig,
    signing_key: Option<SigningKey>,
    dpop_key: DpopKey,
    /// The authorization server's last `DPoP-Nonce`.
    as_nonce: Mutex<Option<String>>,
    http: Http,
    file: Option<TokenFile>,
    state: Mutex<State>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("server", &self.server.as_str())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OAuthClient {
    /// The authorizer for the MCP server at `server`; a grant kept in the token file for that
    /// server is loaded, and a private key is read, here.
    pub fn new(server: Url, config: AuthConfig) -> Result<OAuthClient, AuthError> {
        let key = canonical_resource(&server);
        let signing_key = match &config.identity {
            ClientIdentity::ClientCredentials {
                credential: ClientCredential::PrivateKeyJwt { key_pem, algorithm },
                ..
            } => Some(SigningKey::from_pem(key_pem, *algorithm)?),
            _ => None,
        };
        let file = config
            .token_file
            .as_deref()
            .map(TokenFile::open)
            .transpose()?;
        let grant = match &file {
            // A DPoP-bound token's key died with the process that made it.
            Some(file) => file.load(&key)?.filter(|grant| !grant.dpop),
            None => None,
        };
        let requested = grant
            .as_ref()
            .map(|grant| grant.requested_scopes.clone())
            .unwrap_or_default();
        Ok(OAuthClient {
            server,
            key,
            config,
            signing_key,
            dpop_key: DpopKey::generate()?,
            as_nonce: Mutex::new(None),
            http: Http::new(),
            file,
            state: Mutex::new(State {
                grant,
                requested,
                ..State::default()
            }),
        })
    }

    /// The `Authorization` header value for a request to `url`: `Bearer <token>` when `url` is
    /// on this server's origin and a token is held, refreshed first when it is about to expire.
    pub fn authorization(&self, url: &Url) -> Option<String> {
        if url.origin() != self.server.origin() {
            return None;
        }
        let mut state = self.lock();
        let grant = state.grant.as_ref()?;
        if expiring(grant) {
            match self.renew(grant) {
                Ok(renewed) => self.replace(&mut state, Some(renewed)),
                Err(error) => {
                    tracing::warn!(server = %self.key, %error, "the token expired and could not be renewed");
                    self.replace(&mut state, None);
                    return None;
                }
            }
        }
        let grant = state.grant.as_ref()?;
        let scheme = if grant.dpop { "DPoP" } else { "Bearer" };
        let header = format!("{scheme} {}", grant.access_token.expose());
        state.handed_out = state.handed_out.saturating_add(1);
        Some(header)
    }

    /// The headers for a request with `method` to `url`: [`OAuthClient::authorization`], and
    /// for a DPoP-bound token a fresh proof (`DPoP`) with the server's last nonce.
    pub fn request_headers(&self, method: &str, url: &Url) -> Vec<(String, String)> {
        let Some(authorization) = self.authorization(url) else {
            return Vec::new();
        };
        let state = self.lock();
        let Some(grant) = state.grant.as_ref().filter(|grant| grant.dpop) else {
            return vec![("Authorization".to_owned(), authorization)];
        };
        match self.dpop_key.proof(
            method,
            url,
            Some(&grant.access_token),
            state.rs_nonce.as_deref(),
        ) {
            Ok(proof) => vec![
                ("Authorization".to_owned(), authorization),
                ("DPoP".to_owned(), proof.expose().to_owned()),
            ],
            Err(error) => {
                tracing::warn!(server = %self.key, %error, "no DPoP proof; the request goes without a token");
                Vec::new()
            }
        }
    }

    /// Called with the `DPoP-Nonce` of a 401 or 403 from this server (RFC 9449 §9): kept for
    /// the next proofs. `true` when a DPoP-bound token is held and the nonce is new, so a retry
    /// with it may succeed.
    pub fn on_nonce(&self, url: &Url, nonce: &str) -> bool {
        if url.origin() != self.server.origin() {
            return false;
        }
        let Some(nonce) = crate::dpop::nonce(nonce) else {
            return false;
        };
        let mut state = self.lock();
        let fresh = state.rs_nonce.as_deref() != Some(nonce.as_str());
        state.rs_nonce = Some(nonce);
        fresh && state.grant.as_ref().is_some_and(|grant| grant.dpop)
    }

    /// Called on a 401 or 403 from this server: discovers, registers and authorizes as the
    /// challenge asks (`WWW-Authenticate`), and answers whether a retry with the new header may
    /// succeed. `false` for another origin or status, a 403 that is not `insufficient_scope` or
    /// asks for nothing new, and once `retry_limit` authorizations in a row have not helped.
    pub fn on_challenge(
        &self,
        url: &Url,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Result<bool, Box<dyn std::error::Error + Send + Sync>> {
        Ok(self.challenge(url, status, www_authenticate)?)
    }

    /// [`OAuthClient::on_challenge`] with its own error type.
    pub fn challenge(
        &self,
        url: &Url,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Result<bool, AuthError> {
        if url.origin() != self.server.origin() {
            return Ok(false);
        }
        let challenge = www_authenticate.map(Challenge::parse).unwrap_or_default();
        let step_up = match status {
            401 => false,
            403 if challenge.insufficient_scope() => true,
            _ => return Ok(false),
        };
        let mut state = self.lock();
        // A request sent before the current token existed: the retry carries it.
        if state.grant.is_some() && state.handed_out == 0 {
            return Ok(true);
        }
        // The current token went out more than once: a request passed in between.
        if state.handed_out >= 2 {
            state.streak = 0;
        }
        if state.streak >= self.config.retry_limit {
            tracing::warn!(server = %self.key, status, "authorization did not help; giving up");
            return Ok(false);
        }
        let scopes = if step_up {
            let Some(grant) = &state.grant else {
                return Ok(false);
            };
            let held = grant
                .granted_scopes
                .as_ref()
                .unwrap_or(&grant.requested_scopes);
            if challenge.scopes.is_empty() || challenge.scopes.iter().all(|s| held.contains(s)) {
                // Nothing new to ask for: another authorization would get the same token.
                return Ok(false);
            }
            union(&state.requested, &challenge.scopes)
        } else {
            Vec::new()
        };
        let discovered = match (&state.discovered, step_up) {
            (Some(discovered), true) => discovered.clone(),
            _ => discover(&self.http, &self.server, &challenge)?,
        };
        state.discovered = Some(discovered.clone());
        if !step_up && let Some(old) = state.grant.take() {
            // The token was refused. Same authorization server: try the refresh token once.
            if old.issuer == discovered.server.issuer && old.refresh_token.is_some() {
                state.streak += 1;
                match self.refresh(&old) {
                    Ok(renewed) => {
                        self.replace(&mut state, Some(renewed));
                        return Ok(true);
                    }
                    Err(error) => {
                        tracing::info!(server = %self.key, %error, "refresh failed; authorizing again");
                    }
                }
            }
            self.replace(&mut state, None);
        }
        let scopes = if step_up {
            scopes
        } else {
            let selected = if !challenge.scopes.is_empty() {
                challenge.scopes.clone()
            } else if let Some(scopes) = &discovered.resource_scopes {
                scopes.clone()
            } else {
                self.config.scopes.clone()
            };
            union(&state.requested, &selected)
        };
        let scopes = self.with_offline_access(scopes, &discovered);
        state.streak += 1;
        let dpop = self.config.dpop || challenge.dpop;
        let grant = match &self.config.identity {
            ClientIdentity::ClientCredentials { .. } => {
                self.client_credentials(&discovered, &scopes)?
            }
            ClientIdentity::JwtBearer { .. } | ClientIdentity::Enterprise { .. } => {
                self.assertion_grant(&discovered, &scopes)?
            }
            _ => self.authorization_code(&mut state, &discovered, &scopes, dpop)?,
        };
        tracing::info!(server = %self.key, issuer = %grant.issuer, "authorized");
        state.requested = scopes;
        self.replace(&mut state, Some(grant));
        Ok(true)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds a new grant (or none) and keeps it in the token file.
    fn replace(&self, state: &mut State, grant: Option<Grant>) {
        state.grant = grant;
        state.handed_out = 0;
        if let Some(file) = &self.file
            && let Err(error) = file.store(&self.key, state.grant.as_ref())
        {
            tracing::warn!(server = %self.key, %error, "the token file was not updated");
        }
    }

    fn with_offline_access(&self, mut scopes: Vec<String>, discovered: &Discovered) -> Vec<String> {
        let offered = discovered
            .server
            .scopes_supported
            .as_ref()
            .is_some_and(|supported| supported.iter().any(|s| s == OFFLINE_ACCESS));
        if self.config.offline_access
            && offered
            && !scopes.is_empty()
            && !scopes.iter().any(|s| s == OFFLINE_ACCESS)
        {
            scopes.push(OFFLINE_ACCESS.to_owned());
        }
        scopes
    }

    /// A renewed grant for one about to expire: its refresh token, or for a machine client a
    /// new client credentials grant.
    fn renew(&self, grant: &Grant) -> Result<Grant, AuthError> {
        if grant.refresh_token.is_some() {
            return self.refresh(grant);
        }
        if let ClientIdentity::ClientCredentials { .. } = self.config.identity {
            let token_endpoint = endpoint(&grant.token_endpoint)?;
            // Authenticate as the grant did (`client_secret_post` stays post).
            let methods = [grant.auth_method.clone()];
            return self.client_credentials_at(
                &grant.issuer,
                &token_endpoint,
                Some(&methods),
                &grant.resource,
                &grant.requested_scopes,
            );
        }
        Err(AuthError::Token {
            url: shown(&grant.token_endpoint),
            reason: "the token expired and there is no refresh token".to_owned(),
        })
    }

    /// The refresh token grant, with the same client, resource and scopes.
    fn refresh(&self, grant: &Grant) -> Result<Grant, AuthError> {
        let token_endpoint = endpoint(&grant.token_endpoint)?;
        let refresh_token = grant
            .refresh_token
            .as_ref()
            .ok_or_else(|| AuthError::Token {
                url: shown(&grant.token_endpoint),
                reason: "there is no refresh token".to_owned(),
            })?;
        let client = with_client_auth(
            BasicClient::new(ClientId::new(grant.client_id.clone()))
                .set_token_uri(TokenUrl::from_url(token_endpoint.clone())),
            &grant.auth_method,
            grant.client_secret.as_ref(),
        );
        let refresh = RefreshToken::new(refresh_token.expose().to_owned());
        let mut request = client
            .exchange_refresh_token(&refresh)
            .add_extra_param("resource", grant.resource.clone());
        if let Some(assertion) =
            self.assertion(&grant.auth_method, &grant.client_id, &grant.issuer)?
        {
            request = request
                .add_extra_param("client_assertion_type", ASSERTION_TYPE)
                .add_extra_param("client_assertion", assertion.expose().to_owned());
        }
        let answer = if grant.dpop {
            request.request(&self.dpop_http())
        } else {
            request.request(&self.http)
        }
        .map_err(|error| token_error(&token_endpoint, error))?;
        let renewed = Grant {
            refresh_token: grant.refresh_token.clone(),
            ..grant.clone()
        };
        into_grant(&token_endpoint, &answer, renewed)
    }

    /// The token endpoint client of a DPoP grant.
    fn dpop_http(&self) -> DpopHttp<'_> {
        DpopHttp {
            http: &self.http,
            key: &self.dpop_key,
            nonce: &self.as_nonce,
        }
    }

    /// The JWT bearer grant, with the workload's identity token, or with the ID-JAG the
    /// identity provider's token exchange gives for the person's.
    fn assertion_grant(
        &self,
        discovered: &Discovered,
        scopes: &[String],
    ) -> Result<Grant, AuthError> {
        let metadata = &discovered.server;
        let resource = &discovered.resource;
        let (client_id, client_secret, answer) = match &self.config.identity {
            ClientIdentity::JwtBearer {
                client_id,
                assertion,
            } => {
                let auth = FormAuth::Public(client_id);
                let answer = jwt_bearer(
                    &self.http,
                    &metadata.token_endpoint,
                    assertion,
                    resource,
                    scopes,
                    &auth,
                )?;
                (client_id, None, answer)
            }
            ClientIdentity::Enterprise {
                client_id,
                client_secret,
                idp_token_endpoint,
                idp_client_id,
                id_token,
            } => {
                let exchange = Exchange {
                    token_endpoint: idp_token_endpoint,
                    client_id: idp_client_id.as_deref(),
                    id_token,
                };
                let jag = id_jag(&self.http, &exchange, &metadata.issuer, resource, scopes)?;
                let auth = FormAuth::Basic(client_id, client_secret);
                let answer = jwt_bearer(
                    &self.http,
                    &metadata.token_endpoint,
                    &jag,
                    resource,
                    scopes,
                    &auth,
                )?;
                (client_id, Some(client_secret.clone()), answer)
            }
            _ => {
                return Err(AuthError::NoClientId {
                    issuer: shown(&metadata.issuer),
                });
            }
        };
        let grant = Grant {
            issuer: metadata.issuer.clone(),
            token_endpoint: metadata.token_endpoint.to_string(),
            client_id: client_id.clone(),
            auth_method: if client_secret.is_some() {
                "client_secret_basic".to_owned()
            } else {
                "none".to_owned()
            },
            client_secret,
            resource: resource.clone(),
            access_token: Secret::new(""),
            refresh_token: None,
            expires_at: None,
            requested_scopes: scopes.to_vec(),
            granted_scopes: None,
            dpop: false,
        };
        into_grant(&metadata.token_endpoint, &answer, grant)
    }

    /// A `private_key_jwt` assertion when that is the client's method.
    fn assertion(
        &self,
        auth_method: &str,
        client_id: &str,
        issuer: &str,
    ) -> Result<Option<Secret>, AuthError> {
        if auth_method != "private_key_jwt" {
            return Ok(None);
        }
        let key = self
            .signing_key
            .as_ref()
            .ok_or_else(|| AuthError::Key("private_key_jwt needs a private key".to_owned()))?;
        key.assertion(client_id, issuer).map(Some)
    }

    /// The client credentials grant at the discovered token endpoint.
    fn client_credentials(
        &self,
        discovered: &Discovered,
        scopes: &[String],
    ) -> Result<Grant, AuthError> {
        self.client_credentials_at(
            &discovered.server.issuer,
            &discovered.server.token_endpoint,
            discovered.server.token_endpoint_auth_methods.as_deref(),
            &discovered.resource,
            scopes,
        )
    }

    fn client_credentials_at(
        &self,
        issuer: &str,
        token_endpoint: &Url,
        methods: Option<&[String]>,
        resource: &str,
        scopes: &[String],
    ) -> Result<Grant, AuthError> {
        let ClientIdentity::ClientCredentials {
            client_id,
            credential,
        } = &self.config.identity
        else {
            return Err(AuthError::NoClientId {
                issuer: shown(issuer),
            });
        };
        let (auth_method, secret) = match credential {
            ClientCredential::Secret(secret) => {
                (secret_method(methods).to_owned(), Some(secret.clone()))
            }
            ClientCredential::PrivateKeyJwt { .. } => ("private_key_jwt".to_owned(), None),
        };
        let client = with_client_auth(
            BasicClient::new(ClientId::new(client_id.clone()))
                .set_token_uri(TokenUrl::from_url(token_endpoint.clone())),
            &auth_method,
            secret.as_ref(),
        );
        let mut request = client
            .exchange_client_credentials()
            .add_extra_param("resource", resource.to_owned());
        if !scopes.is_empty() {
            request = request.add_scopes(scopes.iter().cloned().map(Scope::new));
        }
        if let Some(assertion) = self.assertion(&auth_method, client_id, issuer)? {
            request = request
                .add_extra_param("client_assertion_type", ASSERTION_TYPE)
                .add_extra_param("client_assertion", assertion.expose().to_owned());
        }
        let answer = request
            .request(&self.http)
            .map_err(|error| token_error(token_endpoint, error))?;
        let grant = Grant {
            issuer: issuer.to_owned(),
            token_endpoint: token_endpoint.to_string(),
            client_id: client_id.clone(),
            client_secret: secret,
            auth_method,
            resource: resource.to_owned(),
            access_token: Secret::new(""),
            refresh_token: None,
            expires_at: None,
            requested_scopes: scopes.to_vec(),
            granted_scopes: None,
            dpop: false,
        };
        into_grant(token_endpoint, &answer, grant)
    }

    /// The authorization code grant with PKCE (S256), `resource`, the person's step, and the
    /// response's state and `iss` checked before the code goes anywhere.
    fn authorization_code(
        &self,
        state: &mut State,
        discovered: &Discovered,
        scopes: &[String],
        dpop: bool,
    ) -> Result<Grant, AuthError> {
        let metadata = &discovered.server;
        if let Some(methods) = &metadata.code_challenge_methods
            && !methods.iter().any(|m| m == "S256")
        {
            return Err(AuthError::NoPkce {
                issuer: shown(&metadata.issuer),
            });
        }
        let redirect_uri = match &self.config.redirect {
            RedirectMode::Headless => Url::parse(HEADLESS_REDIRECT)
                .map_err(|error| AuthError::Redirect(error.to_string()))?,
            RedirectMode::Loopback { .. } => {
                if state.redirect.is_none() {
                    state.redirect = Some(LoopbackRedirect::bind()?);
                }
                state
                    .redirect
                    .as_ref()
                    .map(|redirect| redirect.uri().clone())
                    .ok_or_else(|| AuthError::Redirect("no loopback redirect".to_owned()))?
            }
        };
        let registered = self.client_id(state, discovered, &redirect_uri)?;
        let client = with_client_auth(
            BasicClient::new(ClientId::new(registered.client_id.clone()))
                .set_auth_uri(AuthUrl::from_url(metadata.authorization_endpoint.clone()))
                .set_token_uri(TokenUrl::from_url(metadata.token_endpoint.clone()))
                .set_redirect_uri(RedirectUrl::from_url(redirect_uri.clone())),
            &registered.auth_method,
            registered.client_secret.as_ref(),
        );
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client
            .authorize_url(CsrfToken::new_random)
            .set_pkce_challenge(challenge)
            .add_extra_param("resource", discovered.resource.clone());
        if !scopes.is_empty() {
            request = request.add_scopes(scopes.iter().cloned().map(Scope::new));
        }
        let (authorization_url, csrf) = request.url();
        let response = match &self.config.redirect {
            RedirectMode::Headless => follow(&self.http, &authorization_url)?,
            RedirectMode::Loopback { show, timeout } => {
                show(&authorization_url).map_err(|error| {
                    AuthError::Redirect(format!(
                        "the authorization url could not be shown: {error}"
                    ))
                })?;
                state
                    .redirect
                    .as_ref()
                    .ok_or_else(|| AuthError::Redirect("no loopback redirect".to_owned()))?
                    .receive(*timeout, csrf.secret())?
            }
        };
        let code = authorization_response(&response, &redirect_uri, &csrf, metadata)?;
        let exchange = client
            .exchange_code(code)
            .set_pkce_verifier(verifier)
            .add_extra_param("resource", discovered.resource.clone());
        let answer = if dpop {
            exchange.request(&self.dpop_http())
        } else {
            exchange.request(&self.http)
        }
        .map_err(|error| token_error(&metadata.token_endpoint, error))?;
        let grant = Grant {
            issuer: metadata.issuer.clone(),
            token_endpoint: metadata.token_endpoint.to_string(),
            client_id: registered.client_id,
            client_secret: registered.client_secret,
            auth_method: registered.auth_method,
            resource: discovered.resource.clone(),
            access_token: Secret::new(""),
            refresh_token: None,
            expires_at: None,
            requested_scopes: scopes.to_vec(),
            granted_scopes: None,
            dpop,
        };
        into_grant(&metadata.token_endpoint, &answer, grant)
    }

    /// The client id for this authorization server, in MCP's order: pre-registered, client id
    /// metadata document, dynamic registration.
    fn client_id(
        &self,
        state: &mut State,
        discovered: &Discovered,
        redirect_uri: &Url,
    ) -> Result<Registered, AuthError> {
        let metadata = &discovered.server;
        let methods = metadata.token_endpoint_auth_methods.as_deref();
        match &self.config.identity {
            ClientIdentity::PreRegistered {
                client_id,
                client_secret,
                issuer,
            } => {
                if let Some(configured) = issuer
                    && *configured != metadata.issuer
                {
                    return Err(AuthError::PreRegisteredElsewhere {
                        configured: shown(configured),
                        issuer: shown(&metadata.issuer),
                    });
                }
                let auth_method = match client_secret {
                    Some(_) => secret_method(methods),
                    None => "none",
                };
                Ok(Registered {
                    client_id: client_id.clone(),
                    client_secret: client_secret.clone(),
                    auth_method: auth_method.to_owned(),
                    redirect_uri: redirect_uri.to_string(),
                })
            }
            ClientIdentity::ClientCredentials { .. }
            | ClientIdentity::JwtBearer { .. }
            | ClientIdentity::Enterprise { .. } => Err(AuthError::NoClientId {
                issuer: shown(&metadata.issuer),
            }),
            ClientIdentity::Register => {
                if let Some(document) = &self.config.client_metadata_url
                    && metadata.client_id_metadata_document_supported
                {
                    return Ok(Registered {
                        client_id: document.to_string(),
                        client_secret: None,
                        auth_method: "none".to_owned(),
                        redirect_uri: redirect_uri.to_string(),
                    });
                }
                if let Some(known) = state.registrations.get(&metadata.issuer)
                    && known.redirect_uri == redirect_uri.as_str()
                {
                    return Ok(known.clone());
                }
                let endpoint = metadata.registration_endpoint.as_ref().ok_or_else(|| {
                    AuthError::NoClientId {
                        issuer: shown(&metadata.issuer),
                    }
                })?;
                let registered = self.register(endpoint, methods, redirect_uri)?;
                state
                    .registrations
                    .insert(metadata.issuer.clone(), registered.clone());
                Ok(registered)
            }
        }
    }

    /// Dynamic client registration (RFC 7591) as a native public client when the server
    /// allows it.
    fn register(
        &self,
        endpoint: &Url,
        methods: Option<&[String]>,
        redirect_uri: &Url,
    ) -> Result<Registered, AuthError> {
        let requested = match methods {
            Some(methods) if !methods.iter().any(|m| m == "none") => secret_method(Some(methods)),
            _ => "none",
        };
        let body = json!({
            "client_name": self.config.client_name,
            "redirect_uris": [redirect_uri.as_str()],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": requested,
            "application_type": "native",
        });
        let failed = |reason: String| AuthError::Registration {
            url: shown(endpoint.as_str()),
            reason,
        };
        let (status, answer) = self
            .http
            .post_json(endpoint, &body, "client registration")?;
        let Some(answer) = answer else {
            return Err(failed(format!(
                "it answered {status} without a JSON object"
            )));
        };
        if !(200..300).contains(&status) {
            let error = answer
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("no error code");
            return Err(failed(format!(
                "it answered {status}: {}",
                error_code(error)
            )));
        }
        let client_id = answer
            .get("client_id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| failed("the answer has no client_id".to_owned()))?;
        let client_secret = answer
            .get("client_secret")
            .and_then(Value::as_str)
            .map(Secret::new);
        let auth_method = match answer
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
        {
            Some(method @ ("client_secret_basic" | "client_secret_post" | "none")) => method,
            _ if client_secret.is_some() => secret_method(methods),
            _ => "none",
        };
        tracing::info!(endpoint = %endpoint, client_id = %shown(client_id), "registered");
        Ok(Registered {
            client_id: client_id.to_owned(),
            client_secret,
            auth_method: auth_method.to_owned(),
            redirect_uri: redirect_uri.to_string(),
        })
    }
}

/// Checks an authorization response (RFC 9207 §2.4 as MCP applies it, then the state) and
/// gives its code.
fn authorization_response(
    response: &Url,
    redirect_uri: &Url,
    csrf: &CsrfToken,
    metadata: &crate::discovery::ServerMetadata,
) -> Result<AuthorizationCode, AuthError> {
    let refused = |reason: &str| AuthError::AuthorizationResponse {
        reason: reason.to_owned(),
    };
    if response.origin() != redirect_uri.origin() || response.path() != redirect_uri.path() {
        return Err(refused(
            "the authorization server redirected somewhere other than the redirect uri",
        ));
    }
    let first = |name: &str| {
        response
            .query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    };
    // The issuer first: a response from another issuer is not acted on, error or not.
    match first("iss") {
        Some(iss) if iss != metadata.issuer => {
            return Err(refused(
                "its iss is not the authorization server's issuer (a possible mix-up attack)",
            ));
        }
        None if metadata.iss_parameter_supported => {
            return Err(refused(
                "it has no iss, though the authorization server says it sends one",
            ));
        }
        _ => {}
    }
    if first("state").as_deref() != Some(csrf.secret().as_str()) {
        return Err(refused("its state is not the one sent"));
    }
    if let Some(error) = first("error") {
        return Err(AuthError::AuthorizationResponse {
            reason: format!("the authorization server answered {}", error_code(&error)),
        });
    }
    first("code")
        .filter(|code| !code.is_empty())
        .map(AuthorizationCode::new)
        .ok_or_else(|| refused("it has no code"))
}

/// A token endpoint's answer into the grant: a bearer token, its expiry, a new refresh token
/// (the old one kept when none came), the scopes granted.
fn into_grant(
    token_endpoint: &Url,
    answer: &BasicTokenResponse,
    mut grant: Grant,
) -> Result<Grant, AuthError> {
    // A DPoP token where one was asked for with a proof; else a bearer token (an
    // authorization server without DPoP answers a proof with a bearer token, RFC 9449 §5).
    grant.dpop = match answer.token_type() {
        BasicTokenType::Bearer => false,
        BasicTokenType::Extension(kind) if grant.dpop && kind.eq_ignore_ascii_case("dpop") => true,
        _ => {
            return Err(AuthError::Token {
                url: shown(token_endpoint.as_str()),
                reason: if grant.dpop {
                    "the token is neither a DPoP nor a bearer token".to_owned()
                } else {
                    "the token is not a bearer token".to_owned()
                },
            });
        }
    };
    if answer.access_token().secret().is_empty() {
        return Err(AuthError::Token {
            url: shown(token_endpoint.as_str()),
            reason: "the access token is empty".to_owned(),
        });
    }
    grant.access_token = Secret::new(answer.access_token().secret().clone());
    if let Some(refresh) = answer.refresh_token() {
        grant.refresh_token = Some(Secret::new(refresh.secret().clone()));
    }
    grant.expires_at = answer
        .expires_in()
        .map(|lifetime| now().saturating_add(lifetime.as_secs()));
    grant.granted_scopes = answer.scopes().map(|scopes| {
        split_scopes(
            &scopes
                .iter()
                .map(|scope| scope.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        )
    });
    Ok(grant)
}

/// A token request's failure, worded without the answer's body.
fn token_error(
    token_endpoint: &Url,
    error: RequestTokenError<crate::http::HttpError, oauth2::basic::BasicErrorResponse>,
) -> AuthError {
    let reason = match error {
        // The code only: the description may echo the request's secrets (`error_code`).
        RequestTokenError::ServerResponse(answer) => {
            format!("it answered {}", error_code(answer.error().as_ref()))
        }
        RequestTokenError::Request(error) => error.to_string(),
        // serde's message could quote a value of the answer, a token among them: say where.
        RequestTokenError::Parse(error, _) => {
            format!("its answer could not be read (at {})", error.path())
        }
        RequestTokenError::Other(reason) => shown(&reason),
    };
    AuthError::Token {
        url: shown(token_endpoint.as_str()),
        reason,
    }
}

/// A client's authentication at the token endpoint, set on an `oauth2` client.
fn with_client_auth<A, B, C, D, E>(
    client: BasicClient<A, B, C, D, E>,
    auth_method: &str,
    secret: Option<&Secret>,
) -> BasicClient<A, B, C, D, E>
where
    A: EndpointState,
    B: EndpointState,
    C: EndpointState,
    D: EndpointState,
    E: EndpointState,
{
    match (auth_method, secret) {
        ("client_secret_basic", Some(secret)) => client
            .set_client_secret(ClientSecret::new(secret.expose().to_owned()))
            .set_auth_type(AuthType::BasicAuth),
        ("client_secret_post", Some(secret)) => client
            .set_client_secret(ClientSecret::new(secret.expose().to_owned()))
            .set_auth_type(AuthType::RequestBody),
        // `none` and `private_key_jwt`: the client id in the body, no secret.
        _ => client.set_auth_type(AuthType::RequestBody),
    }
}

/// How a client with a secret authenticates: `client_secret_basic` unless the server lists
/// `client_secret_post` and not basic (RFC 8414's default is basic).
fn secret_method(methods: Option<&[String]>) -> &'static str {
    match methods {
        Some(methods)
            if !methods.iter().any(|m| m == "client_secret_basic")
                && methods.iter().any(|m| m == "client_secret_post") =>
        {
            "client_secret_post"
        }
        _ => "client_secret_basic",
    }
}

/// The scopes of `first` then those of `second` not already there.
fn union(first: &[String], second: &[String]) -> Vec<String> {
    let mut all = first.to_vec();
    for scope in second {
        if !all.contains(scope) {
            all.push(scope.clone());
        }
    }
    all
}

fn expiring(grant: &Grant) -> bool {
    grant
        .expires_at
        .is_some_and(|at| at <= now().saturating_add(REFRESH_MARGIN_SECONDS))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0)
}

/// A kept token endpoint, checked again before a credential goes to it.
fn endpoint(text: &str) -> Result<Url, AuthError> {
    let url = Url::parse(text).map_err(|_| AuthError::Token {
        url: shown(text),
        reason: "the token endpoint is not a url".to_owned(),
    })?;
    require_secure(&url, "the token endpoint")?;
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The transport's `Authorizer` is `Send + Sync`; so must the authorizer be.
    #[test]
    fn the_authorizer_is_send_and_sync() {
        fn send_and_sync<T: Send + Sync>() {}
        send_and_sync::<OAuthClient>();
        send_and_sync::<AuthError>();
    }

    #[test]
    fn a_secret_goes_basic_unless_only_post_is_listed() {
        let list = |methods: &[&str]| methods.iter().map(|m| (*m).to_owned()).collect::<Vec<_>>();
        assert_eq!(secret_method(None), "client_secret_basic");
        assert_eq!(
            secret_method(Some(&list(&["client_secret_post"]))),
            "client_secret_post"
        );
        assert_eq!(
            secret_method(Some(&list(&["client_secret_post", "client_secret_basic"]))),
            "client_secret_basic"
        );
        assert_eq!(secret_method(Some(&list(&["none"]))), "client_secret_basic");
    }

    #[test]
    fn union_keeps_the_earlier_scopes_first() {
        let scopes = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            union(&scopes(&["a", "b"]), &scopes(&["b", "c"])),
            scopes(&["a", "b", "c"])
        );
    }
}
