//! `TokenFile`: a server's grant kept across runs, in a 0600 file written whole and renamed
//! into place, never inside a git repository.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::AuthError;
use crate::secret::Secret;

/// The largest token file read.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// What one server's authorization left: the client it was granted to and the tokens.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Grant {
    /// The authorization server's issuer.
    pub(crate) issuer: String,
    /// Its token endpoint, for refreshing without discovery.
    pub(crate) token_endpoint: String,
    /// The client the tokens were granted to.
    pub(crate) client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<Secret>,
    /// `client_secret_basic`, `client_secret_post`, `none` or `private_key_jwt`.
    pub(crate) auth_method: String,
    /// The `resource` the tokens were asked for.
    pub(crate) resource: String,
    pub(crate) access_token: Secret,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refresh_token: Option<Secret>,
    /// Seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<u64>,
    /// The scopes asked for.
    #[serde(default)]
    pub(crate) requested_scopes: Vec<String>,
    /// The scopes granted, when the answer said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) granted_scopes: Option<Vec<String>>,
    /// Whether the access token is bound to this process's DPoP key (RFC 9449): it is never
    /// loaded again, as the key is not kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) dpop: bool,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("resource", &self.resource)
            .field("access_token", &self.access_token)
            .field("refresh_token", &self.refresh_token)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// The file's shape: one grant per server, by its canonical uri.
#[derive(Default, Serialize, Deserialize)]
struct Contents {
    #[serde(default)]
    servers: BTreeMap<String, Grant>,
}

/// A token file the config names.
#[derive(Debug, Clone)]
pub(crate) struct TokenFile {
    path: PathBuf,
}

impl TokenFile {
    /// The file at `path`, refused when it is inside a git repository (its folder or any
    /// folder above has `.git`) or, when it exists, readable by anyone but its owner.
    pub(crate) fn open(path: &Path) -> Result<TokenFile, AuthError> {
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(|error| refused(path, &error.to_string()))?
                .join(path)
        };
        let folder = absolute
            .parent()
            .ok_or_else(|| refused(path, "it names no file"))?;
        // The nearest folder that exists, resolved, then every folder above it.
        let mut existing = folder;
        while !existing.exists() {
            existing = existing
                .parent()
                .ok_or_else(|| refused(path, "no folder of it exists"))?;
        }
        let resolved = existing
            .canonicalize()
            .map_err(|error| refused(path, &error.to_string()))?;
        for ancestor in resolved.ancestors() {
            if ancestor.join(".git").exists() {
                return Err(refused(
                    path,
                    "it is inside a git repository; keep tokens outside any repository",
                ));
            }
        }
        let file = TokenFile { path: absolute };
        if let Ok(metadata) = fs::metadata(&file.path)
            && metadata.permissions().mode() & 0o077 != 0
        {
            return Err(refused(
                path,
                "others may read it; make it owner-only (chmod 600)",
            ));
        }
        Ok(file)
    }

    /// The grant kept for a server, if any.
    pub(crate) fn load(&self, server: &str) -> Result<Option<Grant>, AuthError> {
        Ok(self.read()?.servers.remove(server))
    }

    /// Keeps (or, with `None`, forgets) a server's grant, the file rewritten whole.
    pub(crate) fn store(&self, server: &str, grant: Option<&Grant>) -> Result<(), AuthError> {
        let mut contents = self.read()?;
        match grant {
            Some(grant) => {
                contents.servers.insert(server.to_owned(), grant.clone());
            }
            None => {
                contents.servers.remove(server);
            }
        }
        let bytes = serde_json::to_vec_pretty(&contents)
            .map_err(|error| refused(&self.path, &error.to_string()))?;
        let folder = self
            .path
            .parent()
            .ok_or_else(|| refused(&self.path, "it names no file"))?;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(folder)
            .map_err(|error| refused(&self.path, &error.to_string()))?;
        // tempfile creates the file 0600; it is renamed over the old one only when whole.
        let mut temporary = tempfile::NamedTempFile::new_in(folder)
            .map_err(|error| refused(&self.path, &error.to_string()))?;
        temporary
            .as_file()
            .set_permissions(fs::Permissions::from_mode(0o600))
            .map_err(|error| refused(&self.path, &error.to_string()))?;
        temporary
            .write_all(&bytes)
            .and_then(|()| temporary.as_file().sync_all())
            .map_err(|error| refused(&self.path, &error.to_string()))?;
        temporary
            .persist(&self.path)
            .map_err(|error| refused(&self.path, &error.error.to_string()))?;
        Ok(())
    }

    fn read(&self) -> Result<Contents, AuthError> {
        let bytes = match fs::File::open(&self.path) {
            Ok(file) => {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(
                    &mut std::io::Read::take(file, MAX_FILE_BYTES),
                    &mut bytes,
                )
                .map_err(|error| refused(&self.path, &error.to_string()))?;
                bytes
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Contents::default());
            }
            Err(error) => return Err(refused(&self.path, &error.to_string())),
        };
        // serde's message could quote a value; say only where the file is wrong.
        serde_json::from_slice(&bytes).map_err(|error| {
            refused(
                &self.path,
                &format!(
                    "it is not a token file (line {}, column {})",
                    error.line(),
                    error.column()
                ),
            )
        })
    }
}

fn refused(path: &Path, reason: &str) -> AuthError {
    AuthError::TokenFile {
        path: path.display().to_string(),
        reason: reason.to_owned(),
    }
}
