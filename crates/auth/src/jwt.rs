//! `private_key_jwt` client assertions (RFC 7523 §2.2): a compact JWS signed with ring.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, RsaKeyPair};

use crate::error::AuthError;
use crate::secret::Secret;

/// How long an assertion is valid.
const ASSERTION_LIFETIME_SECONDS: u64 = 300;

/// The `client_assertion_type` of a JWT assertion.
pub(crate) const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A JWS algorithm mcpl signs client assertions with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwtAlgorithm {
    /// ECDSA P-256 with SHA-256.
    Es256,
    /// ECDSA P-384 with SHA-384.
    Es384,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// Ed25519.
    EdDsa,
}

impl JwtAlgorithm {
    /// The algorithm of a JWS `alg` name (`ES256`, `ES384`, `RS256`, `EdDSA`).
    pub fn from_name(name: &str) -> Option<JwtAlgorithm> {
        match name {
            "ES256" => Some(JwtAlgorithm::Es256),
            "ES384" => Some(JwtAlgorithm::Es384),
            "RS256" => Some(JwtAlgorithm::Rs256),
            "EdDSA" => Some(JwtAlgorithm::EdDsa),
            _ => None,
        }
    }

    /// The JWS `alg` name.
    pub fn name(self) -> &'static str {
        match self {
            JwtAlgorithm::Es256 => "ES256",
            JwtAlgorithm::Es384 => "ES384",
            JwtAlgorithm::Rs256 => "RS256",
            JwtAlgorithm::EdDsa => "EdDSA",
        }
    }
}

/// A private key ready to sign, read once from its PKCS#8 PEM.
pub(crate) enum SigningKey {
    Ecdsa(EcdsaKeyPair, JwtAlgorithm),
    Rsa(RsaKeyPair),
    Ed25519(Ed25519KeyPair),
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey([redacted])")
    }
}

impl SigningKey {
    /// Reads a `-----BEGIN PRIVATE KEY-----` PEM (PKCS#8) for `algorithm`.
    pub(crate) fn from_pem(pem: &Secret, algorithm: JwtAlgorithm) -> Result<SigningKey, AuthError> {
        let der = pem_to_der(pem.expose())?;
        let refused = |_| AuthError::Key(format!("not a PKCS#8 {} key", algorithm.name()));
        let rng = SystemRandom::new();
        Ok(match algorithm {
            JwtAlgorithm::Es256 => SigningKey::Ecdsa(
                EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
                    .map_err(refused)?,
                algorithm,
            ),
            JwtAlgorithm::Es384 => SigningKey::Ecdsa(
                EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P384_SHA384_FIXED_SIGNING, &der, &rng)
                    .map_err(refused)?,
                algorithm,
            ),
            JwtAlgorithm::Rs256 => SigningKey::Rsa(RsaKeyPair::from_pkcs8(&der).map_err(refused)?),
            JwtAlgorithm::EdDsa => SigningKey::Ed25519(
                Ed25519KeyPair::from_pkcs8_maybe_unchecked(&der).map_err(refused)?,
            ),
        })
    }

    fn algorithm(&self) -> JwtAlgorithm {
        match self {
            SigningKey::Ecdsa(_, algorithm) => *algorithm,
            SigningKey::Rsa(_) => JwtAlgorithm::Rs256,
            SigningKey::Ed25519(_) => JwtAlgorithm::EdDsa,
        }
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, AuthError> {
        let rng = SystemRandom::new();
        let failed = |_| AuthError::Key("signing failed".to_owned());
        match self {
            SigningKey::Ecdsa(key, _) => {
                Ok(key.sign(&rng, message).map_err(failed)?.as_ref().to_vec())
            }
            SigningKey::Rsa(key) => {
                let mut signature = vec![0; key.public().modulus_len()];
                key.sign(&signature::RSA_PKCS1_SHA256, &rng, message, &mut signature)
                    .map_err(failed)?;
                Ok(signature)
            }
            SigningKey::Ed25519(key) => Ok(key.sign(message).as_ref().to_vec()),
        }
    }

    /// A client assertion: `iss` and `sub` the client id, `aud` the authorization server's
    /// issuer, valid five minutes, with a random `jti`.
    pub(crate) fn assertion(&self, client_id: &str, audience: &str) -> Result<Secret, AuthError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| elapsed.as_secs())
            .unwrap_or(0);
        let mut jti = [0u8; 16];
        SystemRandom::new()
            .fill(&mut jti)
            .map_err(|_| AuthError::Key("no randomness for the jti".to_owned()))?;
        let header = serde_json::json!({"alg": self.algorithm().name(), "typ": "JWT"});
        let claims = serde_json::json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME_SECONDS,
            "jti": URL_SAFE_NO_PAD.encode(jti),
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self.sign(signing_input.as_bytes())?;
        Ok(Secret::new(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature)
        )))
    }
}

/// The DER inside a PEM's `PRIVATE KEY` block.
fn pem_to_der(pem: &str) -> Result<Vec<u8>, AuthError> {
    const BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
    const END: &str = "-----END PRIVATE KEY-----";
    let start = pem.find(BEGIN).ok_or_else(|| {
        AuthError::Key("no -----BEGIN PRIVATE KEY----- block (PKCS#8 PEM)".to_owned())
    })? + BEGIN.len();
    let end = pem[start..]
        .find(END)
        .ok_or_else(|| AuthError::Key("the PEM block does not end".to_owned()))?
        + start;
    let body: String = pem[start..end]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    STANDARD
        .decode(body)
        .map_err(|_| AuthError::Key("the PEM block is not base64".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pem(der: &[u8]) -> Secret {
        Secret::new(format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(der)
        ))
    }

    #[test]
    fn an_es256_assertion_verifies_with_the_public_key() {
        let rng = SystemRandom::new();
        let der = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("a key");
        let pair = EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            der.as_ref(),
            &rng,
        )
        .expect("reads");
        let key = SigningKey::from_pem(&pem(der.as_ref()), JwtAlgorithm::Es256).expect("reads");
        let jwt = key
            .assertion("client-1", "https://as.example")
            .expect("signs");
        let jwt = jwt.expose();
        let (input, signature) = jwt.rsplit_once('.').expect("three parts");
        let signature = URL_SAFE_NO_PAD.decode(signature).expect("base64url");
        use ring::signature::KeyPair as _;
        signature::UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_FIXED,
            pair.public_key().as_ref(),
        )
        .verify(input.as_bytes(), &signature)
        .expect("the signature verifies");
        let claims = input.split('.').nth(1).expect("claims");
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).expect("base64url"))
                .expect("json");
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://as.example");
    }

    #[test]
    fn a_key_that_is_not_pkcs8_is_refused_without_echoing_it() {
        let error = SigningKey::from_pem(&Secret::new("top-secret-material"), JwtAlgorithm::Es256)
            .expect_err("refused");
        assert!(!error.to_string().contains("top-secret"));
        let error =
            SigningKey::from_pem(&pem(b"not a key"), JwtAlgorithm::Es256).expect_err("refused");
        assert_eq!(
            error.to_string(),
            "the client assertion key cannot be used: not a PKCS#8 ES256 key"
        );
    }
}
