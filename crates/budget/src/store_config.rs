//! Where spills go, as a host's configuration says: the local folder, or an S3-compatible
//! bucket (written by the `mcpl-spill-s3` crate). Never a credential.

use serde::Deserialize;
use serde_json::Value;

/// `spillStore`: where spills go.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SpillStoreConfig {
    /// The local private folder, `spillDir`.
    #[default]
    Local,
    /// An S3-compatible bucket (mcpl-spill-s3 writes it).
    S3(S3Location),
}

/// An S3-compatible bucket and where in it spills go. Never a credential.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct S3Location {
    /// The bucket.
    pub bucket: String,
    /// What every key begins with (`mcpl/spill/`, say).
    #[serde(default)]
    pub prefix: String,
    /// The endpoint of a store other than AWS S3 (MinIO, R2, GCS's S3 API).
    pub endpoint: Option<String>,
    /// The region; the AWS environment or profile's when absent.
    pub region: Option<String>,
}

impl S3Location {
    /// The bucket `bucket` on AWS S3, keys unprefixed, in the environment's region.
    pub fn new(bucket: impl Into<String>) -> S3Location {
        S3Location {
            bucket: bucket.into(),
            prefix: String::new(),
            endpoint: None,
            region: None,
        }
    }

    /// The same location, every key beginning with `prefix`.
    pub fn with_prefix(self, prefix: impl Into<String>) -> S3Location {
        S3Location {
            prefix: prefix.into(),
            ..self
        }
    }

    /// The same location on the store at `endpoint` (MinIO, R2...).
    pub fn with_endpoint(self, endpoint: impl Into<String>) -> S3Location {
        S3Location {
            endpoint: Some(endpoint.into()),
            ..self
        }
    }

    /// The same location in `region`.
    pub fn with_region(self, region: impl Into<String>) -> S3Location {
        S3Location {
            region: Some(region.into()),
            ..self
        }
    }
}

/// Keys that name credentials: refused in `spillStore`, whose credentials come from the
/// environment or profile only.
const CREDENTIAL_KEYS: [&str; 8] = [
    "accessKeyId",
    "secretAccessKey",
    "sessionToken",
    "token",
    "password",
    "credentials",
    "access_key_id",
    "secret_access_key",
];

impl SpillStoreConfig {
    /// Reads `spillStore` (absent: the local folder). A credential key is refused by name
    /// before anything else; an error is the key it is about (`.` for the whole) and why.
    pub fn from_json(
        raw: Option<serde_json::Map<String, Value>>,
    ) -> Result<SpillStoreConfig, (String, String)> {
        let Some(mut raw) = raw else {
            return Ok(SpillStoreConfig::Local);
        };
        if let Some(key) = raw
            .keys()
            .find(|key| CREDENTIAL_KEYS.iter().any(|c| c.eq_ignore_ascii_case(key)))
        {
            return Err((
                key.clone(),
                "credentials never go in the configuration file: set AWS_ACCESS_KEY_ID and \
                 AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, in the environment"
                    .to_owned(),
            ));
        }
        match raw.remove("type") {
            Some(Value::String(kind)) if kind == "local" && raw.is_empty() => {
                Ok(SpillStoreConfig::Local)
            }
            Some(Value::String(kind)) if kind == "s3" => {
                let location: S3Location = serde_json::from_value(Value::Object(raw))
                    .map_err(|e| (".".to_owned(), e.to_string()))?;
                if location.bucket.is_empty() {
                    return Err(("bucket".to_owned(), "is empty".to_owned()));
                }
                Ok(SpillStoreConfig::S3(location))
            }
            Some(Value::String(kind)) if kind == "local" => Err((
                ".".to_owned(),
                "a local store takes no other key (its folder is mcpl.spillDir)".to_owned(),
            )),
            _ => Err(("type".to_owned(), "must be \"local\" or \"s3\"".to_owned())),
        }
    }
}
