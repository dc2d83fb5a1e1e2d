//! `Secret`: a credential that never shows itself in `Debug`, `Display` or an error.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What `Debug` and `Display` print in a secret's place.
pub const REDACTED: &str = "[redacted]";

/// A token, a client secret or a private key. Its `Debug` and `Display` print [`REDACTED`];
/// only [`Secret::expose`] gives the value, for the one header or form field that carries it.
/// It serialises as the plain string, for the token file alone.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The credential itself: use it only where it is sent.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Secret {
        Secret::new(value)
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Secret {
        Secret(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_redact() {
        let secret = Secret::new("s3cr3t-value");
        assert_eq!(format!("{secret:?}"), "[redacted]");
        assert_eq!(format!("{secret}"), "[redacted]");
        assert_eq!(secret.expose(), "s3cr3t-value");
    }

    #[test]
    fn serialises_as_the_plain_string_for_the_token_file() {
        let json = serde_json::to_string(&Secret::new("abc")).expect("serialises");
        assert_eq!(json, "\"abc\"");
    }
}
