//! One TLS stack for every connection mcpl makes (decision 0120).
//!
//! Every client in the binary (the reference fetcher, the providers, Streamable HTTP, WebSocket,
//! OAuth and the S3 spill store) takes its TLS from here: rustls with the ring provider, named
//! explicitly rather than left to rustls to pick (rustls panics when a build holds two
//! providers and none was installed), and one [`Trust`]: the Mozilla roots plus the CA
//! certificates a config names.
//!
//! A host sets the process's trust once at start with [`install`]; each client reads it with
//! [`trust`] when it is built. Without [`install`], [`trust`] is the Mozilla roots alone.
//!
//! ```
//! let trust = mcpl_tls::trust();
//! assert!(trust.certificates().len() > 100);
//! let config = trust.client_config().unwrap();
//! assert!(!config.alpn_protocols.iter().any(|p| p.is_empty()));
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

/// Why trusted roots could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A roots file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A roots file holds no PEM certificate, or one that is not a certificate.
    #[error("{path}: {why}")]
    NotCertificates {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// rustls refused the configuration (a provider without the default protocol versions).
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// The roots a TLS connection trusts: the Mozilla roots, then the CA certificates added.
#[derive(Clone, Debug)]
pub struct Trust {
    certificates: Arc<Vec<CertificateDer<'static>>>,
    added: usize,
}

impl Trust {
    /// The Mozilla roots alone (`webpki-root-certs`).
    pub fn public() -> Trust {
        Trust {
            certificates: Arc::new(webpki_root_certs::TLS_SERVER_ROOT_CERTS.to_vec()),
            added: 0,
        }
    }

    /// These roots and the CA certificates of each PEM file in `paths`. A file that cannot be
    /// read, or holds no certificate, is an error naming it: a root the person meant to trust
    /// is never silently left out.
    pub fn with_pem_files<P: AsRef<Path>>(
        mut self,
        paths: impl IntoIterator<Item = P>,
    ) -> Result<Trust, TlsError> {
        for path in paths {
            let path = path.as_ref();
            let pem = std::fs::read(path).map_err(|source| TlsError::Read {
                path: path.to_owned(),
                source,
            })?;
            self = self
                .with_pem(&pem)
                .map_err(|why| TlsError::NotCertificates {
                    path: path.to_owned(),
                    why,
                })?;
        }
        Ok(self)
    }

    /// These roots and the certificates of one PEM text; the error says what is wrong with it.
    pub fn with_pem(mut self, pem: &[u8]) -> Result<Trust, String> {
        let mut found = Vec::new();
        for certificate in CertificateDer::pem_slice_iter(pem) {
            found.push(certificate.map_err(|e| format!("not a PEM certificate ({e})"))?);
        }
        if found.is_empty() {
            return Err("no PEM certificate (-----BEGIN CERTIFICATE-----) in it".to_owned());
        }
        let mut store = rustls::RootCertStore::empty();
        for certificate in &found {
            store
                .add(certificate.clone())
                .map_err(|e| format!("a certificate rustls cannot use as a root ({e})"))?;
        }
        self.added += found.len();
        Arc::make_mut(&mut self.certificates).extend(found);
        Ok(self)
    }

    /// Every trusted root, the Mozilla roots first.
    pub fn certificates(&self) -> &[CertificateDer<'static>] {
        &self.certificates
    }

    /// How many roots were added to the Mozilla roots.
    pub fn added(&self) -> usize {
        self.added
    }

    /// A rustls client configuration: the ring provider, its safe default protocol versions,
    /// these roots, no client certificate.
    pub fn client_config(&self) -> Result<Arc<rustls::ClientConfig>, TlsError> {
        let mut roots = rustls::RootCertStore::empty();
        // Each root parsed when it was added or shipped; one that is not is skipped rather than
        // failing every connection.
        roots.add_parsable_certificates(self.certificates.iter().cloned());
        let config = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Arc::new(config))
    }

    /// The same stack for a `ureq` agent: rustls, the ring provider and these roots.
    pub fn ureq_config(&self) -> ureq::tls::TlsConfig {
        let roots: Vec<ureq::tls::Certificate<'static>> = self
            .certificates
            .iter()
            .map(|der| ureq::tls::Certificate::from_der(der.as_ref()).to_owned())
            .collect();
        ureq::tls::TlsConfig::builder()
            .provider(ureq::tls::TlsProvider::Rustls)
            .root_certs(ureq::tls::RootCerts::Specific(Arc::new(roots)))
            .unversioned_rustls_crypto_provider(provider())
            .build()
    }
}

impl Default for Trust {
    fn default() -> Trust {
        Trust::public()
    }
}

/// The one crypto provider: ring.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// What a refused certificate's error says, plus what the person can do: `detail` (an error's
/// words) with a hint appended when a certificate no trusted root signed was refused.
pub fn explained(detail: String) -> String {
    if detail.contains("UnknownIssuer") {
        format!(
            "{detail} (no trusted root signed the server's certificate; mcpl.tlsRoots adds a CA)"
        )
    } else {
        detail
    }
}

static TRUST: RwLock<Option<Trust>> = RwLock::new(None);

/// Sets the trust every client built after this call uses, and installs ring as rustls's
/// process default, so a dependency that asks rustls for the default gets the same provider.
/// Calling it again replaces the trust for clients built afterwards.
pub fn install(trust: Trust) {
    // Err only when a provider is already installed: that one stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    *TRUST.write().unwrap_or_else(PoisonError::into_inner) = Some(trust);
}

/// The trust [`install`] set, or the Mozilla roots alone.
pub fn trust() -> Trust {
    TRUST
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_a_certificate_is_an_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("mcpl-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("roots.pem");
        std::fs::write(&file, "not a certificate\n").unwrap();
        let error = Trust::public().with_pem_files([&file]).unwrap_err();
        assert!(
            error.to_string().starts_with(&file.display().to_string()),
            "{error}"
        );
        assert!(error.to_string().contains("no PEM certificate"), "{error}");
        let missing = Trust::public()
            .with_pem_files([dir.join("missing.pem")])
            .unwrap_err();
        assert!(matches!(missing, TlsError::Read { .. }), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_broken_certificate_is_refused_not_kept() {
        let pem = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let error = Trust::public().with_pem(pem).unwrap_err();
        assert!(error.contains("cannot use as a root"), "{error}");
    }
}
