//! DPoP (RFC 9449): a key made for this process, the proofs it signs (ES256, with `htm`, `htu`,
//! `iat`, `jti`, `ath` and the server's nonce), and the token requests that carry them, retried
//! once with the authorization server's `DPoP-Nonce`.

use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use oauth2::{HttpRequest, HttpResponse, SyncHttpClient};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde_json::{Value, json};
use url::Url;

use crate::error::AuthError;
use crate::http::{Http, HttpError};
use crate::secret::Secret;

/// The longest nonce kept; a longer one is refused (RFC 9449 §8.1 allows only NQCHAR).
const MAX_NONCE_CHARS: usize = 512;

/// A P-256 key for DPoP proofs, made once per process and never written anywhere.
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    /// The public key as a JWK: `crv`, `kty`, `x`, `y`.
    jwk: Value,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DpopKey([redacted])")
    }
}

impl DpopKey {
    /// A fresh key from the operating system's random source.
    pub(crate) fn generate() -> Result<DpopKey, AuthError> {
        let rng = SystemRandom::new();
        let failed = || AuthError::Key("no DPoP key could be made".to_owned());
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| failed())?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| failed())?;
        // The uncompressed point: 0x04, then x and y, 32 bytes each.
        let point = pair.public_key().as_ref();
        if point.len() != 65 {
            return Err(AuthError::Key(
                "the DPoP key is not a P-256 point".to_owned(),
            ));
        }
        let jwk = json!({
            "crv": "P-256",
            "kty": "EC",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..]),
        });
        Ok(DpopKey { pair, jwk })
    }

    /// A proof for one request: `htm` its method, `htu` its url without query or fragment,
    /// `ath` the hash of the access token it carries, and the server's nonce when there is one.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &Url,
        access_token: Option<&Secret>,
        nonce: Option<&str>,
    ) -> Result<Secret, AuthError> {
        let rng = SystemRandom::new();
        let mut jti = [0u8; 18];
        rng.fill(&mut jti)
            .map_err(|_| AuthError::Key("no randomness for the jti".to_owned()))?;
        let mut htu = url.clone();
        htu.set_query(None);
        htu.set_fragment(None);
        let iat = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| elapsed.as_secs())
            .unwrap_or(0);
        let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk});
        let mut claims = json!({
            "jti": URL_SAFE_NO_PAD.encode(jti),
            "htm": method,
            "htu": htu.as_str(),
            "iat": iat,
        });
        if let Some(token) = access_token {
            let digest = ring::digest::digest(&ring::digest::SHA256, token.expose().as_bytes());
            claims["ath"] = Value::from(URL_SAFE_NO_PAD.encode(digest.as_ref()));
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = Value::from(nonce);
        }
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&rng, input.as_bytes())
            .map_err(|_| AuthError::Key("the DPoP proof could not be signed".to_owned()))?;
        Ok(Secret::new(format!(
            "{input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        )))
    }
}

/// A server's `DPoP-Nonce` as mcpl keeps it: printable ASCII (RFC 9449's NQCHAR), short.
pub(crate) fn nonce(value: &str) -> Option<String> {
    let allowed = |c: char| matches!(c, '\x21' | '\x23'..='\x5b' | '\x5d'..='\x7e');
    (!value.is_empty() && value.len() <= MAX_NONCE_CHARS && value.chars().all(allowed))
        .then(|| value.to_owned())
}

/// The token endpoint client of a DPoP grant: each request carries a fresh proof, and a
/// `use_dpop_nonce` answer with a `DPoP-Nonce` is retried once with it (RFC 9449 §8).
pub(crate) struct DpopHttp<'a> {
    pub(crate) http: &'a Http,
    pub(crate) key: &'a DpopKey,
    /// The authorization server's last nonce, kept for its next request.
    pub(crate) nonce: &'a Mutex<Option<String>>,
}

impl DpopHttp<'_> {
    fn send(&self, request: &HttpRequest) -> Result<HttpResponse, HttpError> {
        let url = Url::parse(&request.uri().to_string())
            .map_err(|_| HttpError::new("the token endpoint is not a url".to_owned()))?;
        let nonce = self
            .nonce
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let proof = self
            .key
            .proof(request.method().as_str(), &url, None, nonce.as_deref())
            .map_err(|error| HttpError::new(error.to_string()))?;
        let mut copy = oauth2::http::Request::builder()
            .method(request.method().clone())
            .uri(request.uri().clone());
        for (name, value) in request.headers() {
            copy = copy.header(name, value);
        }
        let copy = copy
            .header("dpop", proof.expose())
            .body(request.body().clone())
            .map_err(|_| HttpError::new("the token request cannot be made".to_owned()))?;
        self.http.call(copy)
    }
}

impl SyncHttpClient for DpopHttp<'_> {
    type Error = HttpError;

    fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let response = self.send(&request)?;
        let asked = response.status() == 400
            && serde_json::from_slice::<Value>(response.body())
                .ok()
                .is_some_and(|body| body["error"] == "use_dpop_nonce");
        let given = response
            .headers()
            .get("dpop-nonce")
            .and_then(|v| v.to_str().ok())
            .and_then(nonce);
        let Some(given) = given else {
            return Ok(response);
        };
        let mut kept = self.nonce.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh = kept.as_deref() != Some(given.as_str());
        *kept = Some(given);
        drop(kept);
        if asked && fresh {
            return self.send(&request);
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    fn part(jwt: &str, index: usize) -> Value {
        let text = jwt.split('.').nth(index).expect("a part");
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(text).expect("base64url")).expect("json")
    }

    #[test]
    fn a_proof_verifies_with_its_jwk_and_names_the_request() {
        let key = DpopKey::generate().expect("a key");
        let url = Url::parse("https://mcp.example/mcp?x=1#f").expect("a url");
        let token = Secret::new("the-access-token");
        let proof = key
            .proof("POST", &url, Some(&token), Some("n-1"))
            .expect("signs");
        let proof = proof.expose();
        let header = part(proof, 0);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none(), "no private part");
        let claims = part(proof, 1);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["nonce"], "n-1");
        let digest = ring::digest::digest(&ring::digest::SHA256, b"the-access-token");
        assert_eq!(claims["ath"], URL_SAFE_NO_PAD.encode(digest.as_ref()));
        assert!(
            claims["iat"]
                .as_u64()
                .is_some_and(|iat| iat > 1_700_000_000)
        );
        let mut point = vec![4u8];
        for name in ["x", "y"] {
            let coordinate = header["jwk"][name].as_str().expect("a coordinate");
            point.extend(URL_SAFE_NO_PAD.decode(coordinate).expect("base64url"));
        }
        let (input, signature) = proof.rsplit_once('.').expect("three parts");
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
            .verify(
                input.as_bytes(),
                &URL_SAFE_NO_PAD.decode(signature).expect("base64url"),
            )
            .expect("the proof verifies with the key it names");
        let again = key.proof("POST", &url, Some(&token), None).expect("signs");
        assert_ne!(part(again.expose(), 1)["jti"], claims["jti"], "a fresh jti");
    }

    #[test]
    fn a_nonce_is_kept_only_when_short_and_printable() {
        assert_eq!(nonce("abc-123_~").as_deref(), Some("abc-123_~"));
        for bad in ["", "a b", "a\"b", "a\nb", &"x".repeat(600)] {
            assert_eq!(nonce(bad), None, "{bad:?}");
        }
    }
}

#[cfg(test)]
mod nonce_tests {
    use super::*;
    use mcpl_loopback::{Answer, Loopback};

    #[test]
    fn a_token_request_is_retried_once_with_the_servers_nonce() {
        let server = Loopback::start(|request| {
            let proof = request.header("dpop").unwrap_or_default();
            let claims = proof.split('.').nth(1).unwrap_or_default();
            let claims: Value = URL_SAFE_NO_PAD
                .decode(claims)
                .ok()
                .and_then(|bytes| serde_json::from_slice(&bytes).ok())
                .unwrap_or_default();
            if claims["nonce"] == "server-nonce" {
                Answer::bytes("application/json", br#"{"ok":true}"#.to_vec())
            } else {
                let mut answer = Answer::bytes(
                    "application/json",
                    br#"{"error":"use_dpop_nonce"}"#.to_vec(),
                )
                .with_header("DPoP-Nonce", "server-nonce");
                answer.status = 400;
                answer
            }
        })
        .expect("a server");
        let http = Http::new();
        let key = DpopKey::generate().expect("a key");
        let nonce = Mutex::new(None);
        let client = DpopHttp {
            http: &http,
            key: &key,
            nonce: &nonce,
        };
        let request = oauth2::http::Request::post(format!("{}/token?x=1", server.origin()))
            .body(b"grant_type=x".to_vec())
            .expect("a request");
        let response = client.call(request).expect("answered");
        assert_eq!(response.status(), 200);
        let seen = server.requests();
        assert_eq!(seen.len(), 2, "one retry");
        assert_ne!(
            seen[0].header("dpop"),
            seen[1].header("dpop"),
            "a fresh proof"
        );
        assert_eq!(seen[1].body, b"grant_type=x");
        assert_eq!(
            nonce.lock().expect("a lock").as_deref(),
            Some("server-nonce")
        );
    }
}
