//! A server's OAuth settings as a config file writes them (`mcpServers.<name>.mcpl.oauth`):
//! [`OAuthSetting`] deserialises `false`, `true` or an object, and [`OAuthSetting::resolve`]
//! checks it (files read, names known, the token file outside any repository) into the
//! [`OAuthOptions`] a binary turns into an [`AuthConfig`] once it knows how to show a url.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use url::Url;

use crate::client::{AuthConfig, ClientCredential, ClientIdentity, RedirectMode, ShowUrl};
use crate::jwt::{JwtAlgorithm, SigningKey};
use crate::secret::Secret;
use crate::store::TokenFile;

/// How long the loopback redirect waits for the person unless `timeoutSeconds` says otherwise.
pub const DEFAULT_AUTHORIZATION_TIMEOUT: Duration = Duration::from_secs(300);

/// `mcpl.oauth` as written: absent, `false`, `true` or an object of [`OAuthSettings`].
#[derive(Debug, Clone, Default, PartialEq)]
pub enum OAuthSetting {
    /// No `oauth` key: a dialed server with no fixed token authorizes with the defaults.
    #[default]
    Absent,
    /// `"oauth": false`: never authorize; a 401 fails the request.
    Off,
    /// `"oauth": true` or an object.
    On(Box<OAuthSettings>),
}

/// The keys of an `oauth` object, each optional; strings may hold `${NAME}`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct OAuthSettings {
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// Its secret (a confidential client).
    pub client_secret: Option<String>,
    /// The issuer the pre-registered client belongs to.
    pub issuer: Option<String>,
    /// The client id metadata document's https url.
    pub client_metadata_url: Option<String>,
    /// Scopes asked for when neither the challenge nor the metadata names any.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Ask for `offline_access` where the authorization server offers it (default `true`).
    pub offline_access: Option<bool>,
    /// Where grants are kept across runs (0600, never inside a git repository).
    pub token_file: Option<String>,
    /// A machine client: the client credentials grant.
    pub client_credentials: Option<ClientCredentialsSettings>,
    /// `loopback` (default) or `headless`.
    pub redirect: Option<RedirectSetting>,
    /// How long the loopback redirect waits for the person, in seconds.
    pub timeout_seconds: Option<u64>,
    /// A workload's identity token, sent with the JWT bearer grant.
    pub jwt_bearer: Option<JwtBearerSettings>,
    /// Enterprise-managed authorization: the identity provider's token exchange, then the JWT
    /// bearer grant.
    pub enterprise: Option<EnterpriseSettings>,
    /// Ask for DPoP-bound tokens even when the server's challenge is `Bearer`.
    pub dpop: Option<bool>,
}

/// `oauth.jwtBearer`: workload identity federation (SEP-1933).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct JwtBearerSettings {
    /// The client id, sent in the form.
    pub client_id: String,
    /// The file holding the workload's identity token (a JWT), read when the config is.
    pub assertion_file: String,
}

/// `oauth.enterprise`: enterprise-managed authorization (SEP-990, cross-app access).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct EnterpriseSettings {
    /// The client id at the server's authorization server.
    pub client_id: String,
    /// Its secret (`${NAME}` expanded; keep it in the environment).
    pub client_secret: String,
    /// The identity provider's token endpoint (https, or http on loopback).
    pub idp_token_endpoint: String,
    /// The client id at the identity provider, if it wants one.
    pub idp_client_id: Option<String>,
    /// The file holding the person's identity token from the identity provider.
    pub id_token_file: String,
}

/// `oauth.clientCredentials`: a secret, or a private key for `private_key_jwt`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct ClientCredentialsSettings {
    /// The client id.
    pub client_id: String,
    /// Its secret (`client_secret_basic`, or `_post` when that is all the server takes).
    pub client_secret: Option<String>,
    /// A PKCS#8 PEM private key file for `private_key_jwt`.
    pub private_key_file: Option<String>,
    /// The key's JWS algorithm: `ES256` (default), `ES384`, `RS256` or `EdDSA`.
    pub algorithm: Option<String>,
}

/// `oauth.redirect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum RedirectSetting {
    /// A loopback redirect on 127.0.0.1 that waits for the person.
    Loopback,
    /// No person: the authorization request's redirect is read directly (test servers).
    Headless,
}

/// A server's OAuth settings, checked: what [`OAuthOptions::auth_config`] needs.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OAuthOptions {
    /// Who mcpl is to the authorization server.
    pub identity: ClientIdentity,
    /// Scopes asked for when nothing else names any.
    pub scopes: Vec<String>,
    /// The token file, checked to be outside any repository.
    pub token_file: Option<PathBuf>,
    /// Ask for `offline_access`.
    pub offline_access: bool,
    /// The client id metadata document's url.
    pub client_metadata_url: Option<Url>,
    /// No person: headless redirect.
    pub headless: bool,
    /// How long the loopback redirect waits.
    pub timeout: Duration,
    /// Ask for DPoP-bound tokens even when the challenge is `Bearer`.
    pub dpop: bool,
}

impl Default for OAuthOptions {
    fn default() -> OAuthOptions {
        OAuthOptions {
            identity: ClientIdentity::Register,
            scopes: Vec::new(),
            token_file: None,
            offline_access: true,
            client_metadata_url: None,
            headless: false,
            timeout: DEFAULT_AUTHORIZATION_TIMEOUT,
            dpop: false,
        }
    }
}

impl OAuthOptions {
    /// The client's settings, with `show` presenting the authorization url on a loopback
    /// redirect.
    pub fn auth_config(&self, show: ShowUrl) -> AuthConfig {
        let redirect = if self.headless {
            RedirectMode::Headless
        } else {
            RedirectMode::Loopback {
                show,
                timeout: self.timeout,
            }
        };
        let mut config = AuthConfig::new(redirect);
        config.identity = self.identity.clone();
        config.scopes = self.scopes.clone();
        config.token_file = self.token_file.clone();
        config.offline_access = self.offline_access;
        config.client_metadata_url = self.client_metadata_url.clone();
        config.dpop = self.dpop;
        config
    }
}

/// A setting that cannot be used: its key under `oauth` (empty for `oauth` itself) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", self.key_path())]
#[non_exhaustive]
pub struct SettingsError {
    /// The key under `oauth` (`clientCredentials.privateKeyFile`), empty for `oauth` itself.
    pub key: String,
    /// What is wrong; never a secret's value.
    pub message: String,
}

impl SettingsError {
    /// `oauth`, or `oauth.<key>`: the key's path from the server's `mcpl`.
    pub fn key_path(&self) -> String {
        if self.key.is_empty() {
            "oauth".to_owned()
        } else {
            format!("oauth.{}", self.key)
        }
    }
}

fn error(key: &str, message: impl Into<String>) -> SettingsError {
    SettingsError {
        key: key.to_owned(),
        message: message.into(),
    }
}

impl OAuthSetting {
    /// The checked options, or `None` when the server does not authorize: `"oauth": false`,
    /// or no `oauth` key and a fixed token (`fixed_token`). `expand` replaces `${NAME}` in a
    /// string. Files named are read and checked here, so that a bad one is an error naming
    /// its key before anything is dialed.
    pub fn resolve(
        &self,
        fixed_token: bool,
        expand: &dyn Fn(&str) -> Result<String, String>,
    ) -> Result<Option<OAuthOptions>, SettingsError> {
        let settings = match self {
            OAuthSetting::Off => return Ok(None),
            OAuthSetting::Absent if fixed_token => return Ok(None),
            OAuthSetting::Absent => return Ok(Some(OAuthOptions::default())),
            OAuthSetting::On(_) if fixed_token => {
                return Err(error("", "give token (or tokenEnv) or oauth, not both"));
            }
            OAuthSetting::On(settings) => settings,
        };
        let text = |key: &str, value: &Option<String>| -> Result<Option<String>, SettingsError> {
            value
                .as_deref()
                .map(|v| expand(v).map_err(|m| error(key, m)))
                .transpose()
        };
        let client_id = text("clientId", &settings.client_id)?;
        let client_secret = text("clientSecret", &settings.client_secret)?;
        let issuer = text("issuer", &settings.issuer)?;
        let assertions = [
            ("clientId", client_id.is_some()),
            ("clientCredentials", settings.client_credentials.is_some()),
            ("jwtBearer", settings.jwt_bearer.is_some()),
            ("enterprise", settings.enterprise.is_some()),
        ];
        let given: Vec<&str> = assertions
            .iter()
            .filter(|(_, set)| *set)
            .map(|(key, _)| *key)
            .collect();
        if given.len() > 1 {
            return Err(error(
                given[1],
                format!("give {} or {}, not both", given[0], given[1]),
            ));
        }
        let identity = if let Some(bearer) = &settings.jwt_bearer {
            jwt_bearer_identity(bearer, &text)?
        } else if let Some(enterprise) = &settings.enterprise {
            enterprise_identity(enterprise, &text)?
        } else {
            match (&settings.client_credentials, client_id) {
                (Some(_), Some(_)) => {
                    return Err(error(
                        "clientCredentials",
                        "give clientId or clientCredentials, not both",
                    ));
                }
                (Some(credentials), None) => client_credentials(credentials, &text)?,
                (None, Some(client_id)) => ClientIdentity::PreRegistered {
                    client_id,
                    client_secret: client_secret.map(Secret::from),
                    issuer,
                },
                (None, None) if client_secret.is_some() => {
                    return Err(error("clientSecret", "needs clientId"));
                }
                (None, None) => ClientIdentity::Register,
            }
        };
        let client_metadata_url = text("clientMetadataUrl", &settings.client_metadata_url)?
            .map(|raw| {
                Url::parse(&raw)
                    .ok()
                    .filter(|url| url.scheme() == "https" && url.path() != "/")
                    .ok_or_else(|| error("clientMetadataUrl", "is not an https url with a path"))
            })
            .transpose()?;
        let token_file = text("tokenFile", &settings.token_file)?
            .map(|path| {
                TokenFile::open(path.as_ref())
                    .map(|_| PathBuf::from(&path))
                    .map_err(|e| error("tokenFile", e.to_string()))
            })
            .transpose()?;
        if settings.timeout_seconds == Some(0) {
            return Err(error("timeoutSeconds", "must be at least 1"));
        }
        Ok(Some(OAuthOptions {
            identity,
            scopes: settings.scopes.clone(),
            token_file,
            offline_access: settings.offline_access.unwrap_or(true),
            client_metadata_url,
            headless: settings.redirect == Some(RedirectSetting::Headless),
            timeout: settings
                .timeout_seconds
                .map_or(DEFAULT_AUTHORIZATION_TIMEOUT, Duration::from_secs),
            dpop: settings.dpop.unwrap_or(false),
        }))
    }
}

type Text<'a> = dyn Fn(&str, &Option<String>) -> Result<Option<String>, SettingsError> + 'a;

/// `clientCredentials`: exactly one of a secret and a key file; the key read and parsed.
/// A file's text as a secret, its whitespace trimmed; an empty file is an error.
fn secret_file(key: &str, path: &str) -> Result<Secret, SettingsError> {
    let text = std::fs::read_to_string(path).map_err(|e| error(key, format!("{path}: {e}")))?;
    let text = text.trim();
    if text.is_empty() {
        return Err(error(key, format!("{path} is empty")));
    }
    Ok(Secret::new(text))
}

fn jwt_bearer_identity(
    settings: &JwtBearerSettings,
    text: &Text<'_>,
) -> Result<ClientIdentity, SettingsError> {
    let at = |key: &str| format!("jwtBearer.{key}");
    let client_id = text(&at("clientId"), &Some(settings.client_id.clone()))?.unwrap_or_default();
    let path =
        text(&at("assertionFile"), &Some(settings.assertion_file.clone()))?.unwrap_or_default();
    Ok(ClientIdentity::JwtBearer {
        client_id,
        assertion: secret_file(&at("assertionFile"), &path)?,
    })
}

fn enterprise_identity(
    settings: &EnterpriseSettings,
    text: &Text<'_>,
) -> Result<ClientIdentity, SettingsError> {
    let at = |key: &str| format!("enterprise.{key}");
    let field = |key: &str, value: &str| -> Result<String, SettingsError> {
        Ok(text(&at(key), &Some(value.to_owned()))?.unwrap_or_default())
    };
    let endpoint = field("idpTokenEndpoint", &settings.idp_token_endpoint)?;
    let idp_token_endpoint = Url::parse(&endpoint)
        .ok()
        .filter(crate::http::secure)
        .ok_or_else(|| {
            error(
                &at("idpTokenEndpoint"),
                "is not an https url (or http on a loopback host)",
            )
        })?;
    let path = field("idTokenFile", &settings.id_token_file)?;
    Ok(ClientIdentity::Enterprise {
        client_id: field("clientId", &settings.client_id)?,
        client_secret: Secret::new(field("clientSecret", &settings.client_secret)?),
        idp_token_endpoint,
        idp_client_id: text(&at("idpClientId"), &settings.idp_client_id)?,
        id_token: secret_file(&at("idTokenFile"), &path)?,
    })
}

fn client_credentials(
    settings: &ClientCredentialsSettings,
    text: &Text<'_>,
) -> Result<ClientIdentity, SettingsError> {
    let at = |key: &str| format!("clientCredentials.{key}");
    let client_id = text(&at("clientId"), &Some(settings.client_id.clone()))?.unwrap_or_default();
    let secret = text(&at("clientSecret"), &settings.client_secret)?;
    let key_file = text(&at("privateKeyFile"), &settings.private_key_file)?;
    let credential = match (secret, key_file) {
        (Some(secret), None) => {
            if settings.algorithm.is_some() {
                return Err(error(&at("algorithm"), "only a privateKeyFile takes it"));
            }
            ClientCredential::Secret(secret.into())
        }
        (None, Some(path)) => {
            let name = settings.algorithm.as_deref().unwrap_or("ES256");
            let algorithm = JwtAlgorithm::from_name(name).ok_or_else(|| {
                error(
                    &at("algorithm"),
                    format!("{name:?} is not ES256, ES384, RS256 or EdDSA"),
                )
            })?;
            let pem = std::fs::read_to_string(&path)
                .map_err(|e| error(&at("privateKeyFile"), format!("{path}: {e}")))?;
            let key_pem = Secret::from(pem);
            SigningKey::from_pem(&key_pem, algorithm)
                .map_err(|e| error(&at("privateKeyFile"), format!("{path}: {e}")))?;
            ClientCredential::PrivateKeyJwt { key_pem, algorithm }
        }
        _ => {
            return Err(error(
                "clientCredentials",
                "give clientSecret or privateKeyFile (one of them)",
            ));
        }
    };
    Ok(ClientIdentity::ClientCredentials {
        client_id,
        credential,
    })
}

impl<'de> Deserialize<'de> for OAuthSetting {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = OAuthSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("false, true or an object of oauth settings")
            }
            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<OAuthSetting, E> {
                Ok(if on {
                    OAuthSetting::On(Box::default())
                } else {
                    OAuthSetting::Off
                })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<OAuthSetting, A::Error> {
                OAuthSettings::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|settings| OAuthSetting::On(Box::new(settings)))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(text: &str) -> Result<String, String> {
        match text {
            "${SECRET}" => Ok("s3cret".to_owned()),
            t if t.contains("${") => Err(format!("{t} is not set")),
            t => Ok(t.to_owned()),
        }
    }

    fn resolve(json: &str, fixed: bool) -> Result<Option<OAuthOptions>, SettingsError> {
        let setting: OAuthSetting = serde_json::from_str(json).unwrap();
        setting.resolve(fixed, &no_env)
    }

    #[test]
    fn jwt_bearer_and_enterprise_read_their_token_files_and_exclude_each_other() {
        let folder = tempfile::tempdir().unwrap();
        let jwt = folder.path().join("workload.jwt");
        std::fs::write(&jwt, "the.workload.jwt\n").unwrap();
        let jwt = jwt.display().to_string();
        let options = resolve(
            &format!(
                r#"{{"jwtBearer": {{"clientId": "w", "assertionFile": "{jwt}"}}, "dpop": true}}"#
            ),
            false,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            options.identity,
            ClientIdentity::JwtBearer {
                client_id: "w".to_owned(),
                assertion: Secret::new("the.workload.jwt"),
            }
        );
        assert!(options.dpop);
        let enterprise = format!(
            r#""enterprise": {{"clientId": "c", "clientSecret": "${{SECRET}}",
                "idpTokenEndpoint": "https://idp.example/token", "idTokenFile": "{jwt}"}}"#
        );
        let options = resolve(&format!("{{{enterprise}}}"), false)
            .unwrap()
            .unwrap();
        let ClientIdentity::Enterprise {
            client_secret,
            id_token,
            ..
        } = &options.identity
        else {
            panic!("{:?}", options.identity);
        };
        assert_eq!(client_secret.expose(), "s3cret");
        assert_eq!(id_token.expose(), "the.workload.jwt");
        let both = resolve(&format!(r#"{{"clientId": "x", {enterprise}}}"#), false).unwrap_err();
        assert_eq!(
            both.to_string(),
            "oauth.enterprise: give clientId or enterprise, not both"
        );
        let insecure = enterprise.replace("https://idp.example", "http://idp.example");
        let error = resolve(&format!("{{{insecure}}}"), false).unwrap_err();
        assert_eq!(error.key, "enterprise.idpTokenEndpoint");
    }

    #[test]
    fn absent_means_defaults_unless_a_token_is_fixed_and_false_means_off() {
        assert_eq!(
            OAuthSetting::Absent.resolve(false, &no_env),
            Ok(Some(OAuthOptions::default()))
        );
        assert_eq!(OAuthSetting::Absent.resolve(true, &no_env), Ok(None));
        assert_eq!(resolve("false", false), Ok(None));
        assert_eq!(resolve("true", false), Ok(Some(OAuthOptions::default())));
        assert_eq!(
            resolve("{}", true).unwrap_err().to_string(),
            "oauth: give token (or tokenEnv) or oauth, not both"
        );
    }

    #[test]
    fn a_pre_registered_client_takes_its_secret_from_the_environment() {
        let options = resolve(
            r#"{"clientId": "c1", "clientSecret": "${SECRET}", "issuer": "https://as.example",
                "scopes": ["read"], "offlineAccess": false, "redirect": "headless",
                "timeoutSeconds": 9, "clientMetadataUrl": "https://app.example/client.json"}"#,
            false,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            options.identity,
            ClientIdentity::PreRegistered {
                client_id: "c1".to_owned(),
                client_secret: Some("s3cret".into()),
                issuer: Some("https://as.example".to_owned()),
            }
        );
        assert_eq!(options.scopes, ["read"]);
        assert!(!options.offline_access && options.headless);
        assert_eq!(options.timeout, Duration::from_secs(9));
        let config = options.auth_config(std::sync::Arc::new(|_: &Url| Ok(())));
        assert!(matches!(config.redirect, RedirectMode::Headless));
        assert!(!format!("{options:?}").contains("s3cret"));
    }

    #[test]
    fn each_bad_setting_is_an_error_naming_its_key() {
        for (json, expected) in [
            (
                r#"{"clientSecret": "${NOPE}"}"#,
                "oauth.clientSecret: ${NOPE} is not set",
            ),
            (
                r#"{"clientSecret": "x"}"#,
                "oauth.clientSecret: needs clientId",
            ),
            (
                r#"{"clientMetadataUrl": "http://app.example/c.json"}"#,
                "oauth.clientMetadataUrl: is not an https url with a path",
            ),
            (
                r#"{"timeoutSeconds": 0}"#,
                "oauth.timeoutSeconds: must be at least 1",
            ),
            (
                r#"{"clientId": "a", "clientCredentials": {"clientId": "b", "clientSecret": "x"}}"#,
                "oauth.clientCredentials: give clientId or clientCredentials, not both",
            ),
            (
                r#"{"clientCredentials": {"clientId": "b"}}"#,
                "oauth.clientCredentials: give clientSecret or privateKeyFile (one of them)",
            ),
            (
                r#"{"clientCredentials": {"clientId": "b", "clientSecret": "x", "algorithm": "ES256"}}"#,
                "oauth.clientCredentials.algorithm: only a privateKeyFile takes it",
            ),
            (
                r#"{"clientCredentials": {"clientId": "b", "privateKeyFile": "/k", "algorithm": "HS256"}}"#,
                "oauth.clientCredentials.algorithm: \"HS256\" is not ES256, ES384, RS256 or EdDSA",
            ),
        ] {
            assert_eq!(
                resolve(json, false).unwrap_err().to_string(),
                expected,
                "{json}"
            );
        }
        let missing = resolve(
            r#"{"clientCredentials": {"clientId": "b", "privateKeyFile": "/nonexistent/key.pem"}}"#,
            false,
        )
        .unwrap_err();
        assert_eq!(missing.key, "clientCredentials.privateKeyFile");
    }

    #[test]
    fn a_token_file_inside_a_repository_is_refused_and_one_outside_is_kept() {
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        let inside = repo.path().join("tokens.json");
        let json = format!(r#"{{"tokenFile": {:?}}}"#, inside.display().to_string());
        let refused = resolve(&json, false).unwrap_err();
        assert_eq!(refused.key, "tokenFile");
        assert!(
            refused.message.contains("inside a git repository"),
            "{refused}"
        );
        let outside = tempfile::tempdir().unwrap();
        let path = outside.path().join("tokens.json");
        let json = format!(r#"{{"tokenFile": {:?}}}"#, path.display().to_string());
        let options = resolve(&json, false).unwrap().unwrap();
        assert_eq!(options.token_file, Some(path));
    }

    #[test]
    fn a_private_key_file_is_read_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.pem");
        std::fs::write(
            &path,
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        let json = format!(
            r#"{{"clientCredentials": {{"clientId": "b", "privateKeyFile": {:?}}}}}"#,
            path.display().to_string()
        );
        let refused = resolve(&json, false).unwrap_err();
        assert_eq!(refused.key, "clientCredentials.privateKeyFile");
        assert!(!refused.message.contains("AAAA"), "{refused}");
    }

    #[test]
    fn unknown_keys_and_other_shapes_are_refused() {
        assert!(serde_json::from_str::<OAuthSetting>(r#"{"clientID": "x"}"#).is_err());
        assert!(serde_json::from_str::<OAuthSetting>(r#""yes""#).is_err());
        assert!(serde_json::from_str::<OAuthSetting>(r#"{"redirect": "browser"}"#).is_err());
    }
}
