//! Spills on any S3-compatible object store: [`S3SpillStore`], a `mcpl_budget::SpillStore` over
//! a bucket and a key prefix, through the `object_store` crate (decision 0061).
//!
//! - Every file is written whole or not at all: a file under [`MULTIPART_THRESHOLD`] is one PUT,
//!   which S3 makes visible only once complete; a larger one is a multipart upload that is
//!   completed, or aborted on any failure. An incomplete upload is never an object, so no client
//!   ever sees part of a file. `mcpl_budget::write_spill` puts the manifest last, so a spill is
//!   there for `read_result` only once all its files are. A spill's attachments are keyed
//!   `<prefix>/spill_<id>/<n>.<ext>`, its text and manifest `<prefix>/spill_<id>.txt` and
//!   `.json`.
//! - Credentials come from the usual AWS environment variables (`AWS_ACCESS_KEY_ID`,
//!   `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, web identity, ECS, instance metadata) or, when
//!   those name no key, from the shared credentials file's profile (`AWS_PROFILE`, default
//!   `default`). Never from the configuration file: its `spillStore` has no key for them.
//! - No request sets an ACL: objects take the bucket's own (private by default).
//! - object_store is async; the store owns a current-thread tokio runtime and blocks on it, so
//!   tokio stays inside this crate. It is safe to use and drop inside a caller's tokio runtime,
//!   current-thread or multi-thread: there each request runs on a thread of its own.
//!
//! ```no_run
//! use mcpl_budget::{S3Location, SpillNotice, SpillStore};
//! use mcpl_spill_s3::S3SpillStore;
//!
//! let location = S3Location::new("spills")
//!     .with_prefix("mcpl/")
//!     .with_endpoint("http://127.0.0.1:9000");
//! let mut store = S3SpillStore::new(&location)?
//!     .with_conversation("conversation-1")
//!     .with_notice(SpillNotice::ReadResult);
//! store.put("spill_example.txt", b"the whole result")?;
//! assert_eq!(store.get("spill_example.txt", 1 << 20)?, b"the whole result");
//! # Ok::<(), mcpl_budget::SpillError>(())
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt as _;
use mcpl_budget::{
    S3Location, SPILL_ID_PREFIX, SpillError, SpillId, SpillNotice, SpillStore, is_spill_name,
};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::client::{HttpClient, HttpConnector};
use object_store::path::Path;
use object_store::{
    BackoffConfig, ClientOptions, ObjectStore as _, ObjectStoreExt as _, PutPayload, RetryConfig,
    WriteMultipart,
};

/// Files this size or larger go as multipart uploads.
pub const MULTIPART_THRESHOLD: usize = 8 * 1024 * 1024;
/// The size of each part of a multipart upload: S3's least for every part but the last.
pub const PART_SIZE: usize = 5 * 1024 * 1024;
/// How many parts of one upload are in flight at once.
const PARTS_IN_FLIGHT: usize = 4;
/// How long the store waits for a connection to its endpoint.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one request to the store may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// A spill store in an S3-compatible bucket.
#[derive(Debug)]
pub struct S3SpillStore {
    runtime: Blocking,
    store: AmazonS3,
    /// `s3://bucket/prefix`, as errors and paths name the store.
    label: String,
    bucket: String,
    /// The key prefix, without slashes at either end; empty for the bucket's top.
    prefix: String,
    conversation: String,
    notice: SpillNotice,
    multipart_threshold: usize,
}

impl S3SpillStore {
    /// A store for `location`. Nothing is sent yet: a bucket that is missing or refuses writes
    /// shows in the first spill's error. Its conversation is a new random one and its notices
    /// name `s3://` paths, until [`S3SpillStore::with_conversation`] and
    /// [`S3SpillStore::with_notice`] say otherwise.
    pub fn new(location: &S3Location) -> Result<S3SpillStore, SpillError> {
        S3SpillStore::build(location, None)
    }

    /// As [`S3SpillStore::new`], with a key pair the host holds (from its own secret store,
    /// say) in place of the environment's. Never read these from a configuration file.
    pub fn with_credentials(
        location: &S3Location,
        key_id: &str,
        secret: &str,
    ) -> Result<S3SpillStore, SpillError> {
        S3SpillStore::build(location, Some((key_id, secret)))
    }

    fn build(
        location: &S3Location,
        credentials: Option<(&str, &str)>,
    ) -> Result<S3SpillStore, SpillError> {
        let prefix = location.prefix.trim_matches('/').to_owned();
        let label = format!("s3://{}/{prefix}", location.bucket);
        let remote = |message: String| SpillError::Remote {
            store: label.clone(),
            message,
        };
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(&location.bucket)
            .with_retry(RetryConfig {
                backoff: BackoffConfig::default(),
                max_retries: 3,
                retry_timeout: Duration::from_secs(20),
            })
            .with_http_connector(OneStack);
        if let Some(endpoint) = &location.endpoint {
            builder = builder
                .with_endpoint(endpoint)
                .with_allow_http(endpoint.starts_with("http://"));
        }
        if let Some(region) = &location.region {
            builder = builder.with_region(region);
        } else if let Ok(region) =
            std::env::var("AWS_REGION").or_else(|_| std::env::var("AWS_DEFAULT_REGION"))
        {
            builder = builder.with_region(region);
        }
        if let Some((key_id, secret)) = credentials {
            builder = builder
                .with_access_key_id(key_id)
                .with_secret_access_key(secret);
        } else if std::env::var_os("AWS_ACCESS_KEY_ID").is_none()
            && let Some(profile) = profile_credentials()
        {
            builder = builder
                .with_access_key_id(profile.key_id)
                .with_secret_access_key(profile.secret);
            if let Some(token) = profile.token {
                builder = builder.with_token(token);
            }
        }
        let store = builder.build().map_err(|e| remote(one_line(&e)))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map(|runtime| Blocking(Some(runtime)))
            .map_err(|e| remote(format!("no runtime for the object store: {e}")))?;
        Ok(S3SpillStore {
            runtime,
            store,
            label,
            bucket: location.bucket.clone(),
            prefix,
            conversation: SpillId::random()?.as_str().to_owned(),
            notice: SpillNotice::Path,
            multipart_threshold: MULTIPART_THRESHOLD,
        })
    }

    /// The same store for the spills of `conversation`.
    pub fn with_conversation(mut self, conversation: impl Into<String>) -> S3SpillStore {
        self.conversation = conversation.into();
        self
    }

    /// The same store, its notices worded as `notice` says.
    pub fn with_notice(mut self, notice: SpillNotice) -> S3SpillStore {
        self.notice = notice;
        self
    }

    /// The same store, sending files of `bytes` or more as multipart uploads (at least
    /// [`PART_SIZE`] plus one byte, so that an upload has two parts).
    pub fn with_multipart_threshold(mut self, bytes: usize) -> S3SpillStore {
        self.multipart_threshold = bytes.max(PART_SIZE + 1);
        self
    }

    /// The object key of a spill file.
    pub fn key(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{}/{name}", self.prefix)
        }
    }

    fn path(&self, name: &str) -> Result<Path, SpillError> {
        if !is_spill_name(name) {
            return Err(SpillError::Name(name.to_owned()));
        }
        Path::parse(self.key(name)).map_err(|e| self.remote(&e))
    }

    fn remote(&self, error: &(dyn std::error::Error + 'static)) -> SpillError {
        SpillError::Remote {
            store: self.label.clone(),
            message: one_line(error),
        }
    }
}

impl SpillStore for S3SpillStore {
    fn put(&mut self, name: &str, bytes: &[u8]) -> Result<String, SpillError> {
        let path = self.path(name)?;
        let store = &self.store;
        let written = if bytes.len() < self.multipart_threshold {
            // One PUT: S3 shows the object only once all of it has arrived.
            let payload = PutPayload::from(bytes.to_vec());
            self.runtime.run(store.put(&path, payload)).map(drop)
        } else {
            self.runtime.run(put_in_parts(store, &path, bytes))
        };
        written.map_err(|e| self.remote(&e))?;
        Ok(format!("s3://{}/{}", self.bucket, self.key(name)))
    }

    fn remove(&mut self, name: &str) {
        if let Ok(path) = self.path(name) {
            // Best effort: the spill this file belonged to failed, and without its manifest no
            // one reads it; retention removes what is left.
            let _ = self.runtime.run(self.store.delete(&path));
        }
    }

    fn get(&mut self, name: &str, limit: u64) -> Result<Vec<u8>, SpillError> {
        let path = self.path(name)?;
        let key = self.key(name);
        let store = &self.store;
        let read = self.runtime.run(async {
            let object = store.get(&path).await?;
            if object.meta.size > limit {
                return Ok(None);
            }
            object.bytes().await.map(Some)
        });
        match read {
            Ok(Some(bytes)) => Ok(bytes.to_vec()),
            Ok(None) => Err(SpillError::TooLarge {
                path: format!("s3://{}/{key}", self.bucket),
                limit,
            }),
            Err(object_store::Error::NotFound { .. }) => Err(SpillError::Read {
                path: format!("s3://{}/{key}", self.bucket),
                error: std::io::ErrorKind::NotFound.into(),
            }),
            Err(error) => Err(self.remote(&error)),
        }
    }

    fn remove_older_than(&mut self, age: Duration) -> Result<u64, SpillError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let cutoff = i64::try_from(now.saturating_sub(age.as_secs())).unwrap_or(i64::MAX);
        let prefix = (!self.prefix.is_empty()).then(|| Path::from(self.prefix.as_str()));
        let store = &self.store;
        self.runtime
            .run(async {
                let mut listing = store.list(prefix.as_ref());
                let mut old = Vec::new();
                while let Some(meta) = listing.next().await {
                    let meta = meta?;
                    // A spill's object is `spill_…` right under the prefix, or in a spill's
                    // folder there (`spill_<id>/1.png`).
                    let first = match &prefix {
                        Some(prefix) => meta
                            .location
                            .prefix_match(prefix)
                            .and_then(|mut parts| parts.next()),
                        None => meta.location.parts().next(),
                    };
                    let ours = first.is_some_and(|part| part.as_ref().starts_with(SPILL_ID_PREFIX));
                    if ours && meta.last_modified.timestamp() < cutoff {
                        old.push(meta.location);
                    }
                }
                let mut removed = 0;
                for location in old {
                    store.delete(&location).await?;
                    removed += 1;
                }
                Ok(removed)
            })
            .map_err(|e: object_store::Error| self.remote(&e))
    }

    fn conversation(&self) -> &str {
        &self.conversation
    }

    fn notice(&self) -> SpillNotice {
        self.notice
    }

    fn place(&self, name: &str) -> String {
        format!("s3://{}/{}", self.bucket, self.key(name))
    }
}

/// The store's runtime, safe to use and drop from any thread: inside a caller's tokio runtime
/// (where blocking on another would panic) each request runs on a scoped thread of its own, and
/// the runtime is shut down without waiting when the store is dropped.
#[derive(Debug)]
struct Blocking(Option<tokio::runtime::Runtime>);

impl Blocking {
    /// Runs `request` to its end and returns its result.
    fn run<T: Send>(
        &self,
        request: impl std::future::Future<Output = Result<T, object_store::Error>> + Send,
    ) -> Result<T, object_store::Error> {
        let Some(runtime) = &self.0 else {
            return Err(generic("the store's runtime is gone".into()));
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return runtime.block_on(request);
        }
        std::thread::scope(|scope| {
            let worker = std::thread::Builder::new()
                .name("mcpl-spill-s3".to_owned())
                .spawn_scoped(scope, || runtime.block_on(request))
                .map_err(|e| generic(Box::new(e)))?;
            worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

impl Drop for Blocking {
    fn drop(&mut self) {
        // Dropping a runtime inside another panics; shutting it down in the background never
        // does, and no request is left running (each `run` waited for its own).
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// An error of the store's own, in object_store's terms.
fn generic(source: Box<dyn std::error::Error + Send + Sync>) -> object_store::Error {
    object_store::Error::Generic {
        store: "S3",
        source,
    }
}

/// A multipart upload of `bytes`, completed, or aborted on any failure.
async fn put_in_parts(
    store: &AmazonS3,
    path: &Path,
    bytes: &[u8],
) -> Result<(), object_store::Error> {
    let upload = store.put_multipart(path).await?;
    let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
    for piece in bytes.chunks(PART_SIZE) {
        if let Err(error) = writer.wait_for_capacity(PARTS_IN_FLIGHT).await {
            // The parts sent so far are discarded; the key never names an object.
            let _ = writer.abort().await;
            return Err(error);
        }
        writer.write(piece);
    }
    // `finish` aborts the upload itself when a part or the completion fails.
    writer.finish().await.map(drop)
}

/// A key pair from the shared credentials file.
struct ProfileCredentials {
    key_id: String,
    secret: String,
    token: Option<String>,
}

/// The credentials of `AWS_PROFILE` (default `default`) in `AWS_SHARED_CREDENTIALS_FILE`
/// (default `~/.aws/credentials`), when the file has both keys for it.
fn profile_credentials() -> Option<ProfileCredentials> {
    let file = std::env::var_os("AWS_SHARED_CREDENTIALS_FILE")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| std::path::Path::new(&home).join(".aws/credentials"))
        })?;
    let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".to_owned());
    let text = std::fs::read_to_string(file).ok()?;
    let (mut key_id, mut secret, mut token) = (None, None, None);
    let mut inside = false;
    for line in text.lines().map(str::trim) {
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = section.trim() == profile;
        } else if inside && let Some((key, value)) = line.split_once('=') {
            let value = Some(value.trim().to_owned());
            match key.trim() {
                "aws_access_key_id" => key_id = value,
                "aws_secret_access_key" => secret = value,
                "aws_session_token" => token = value,
                _ => {}
            }
        }
    }
    Some(ProfileCredentials {
        key_id: key_id?,
        secret: secret?,
        token,
    })
}

/// An error's message on one line.
/// An error and its causes on one line: the store's own words rarely say why a request failed
/// ("error sending request"), its causes do ("invalid peer certificate: UnknownIssuer").
fn one_line(error: &(dyn std::error::Error + 'static)) -> String {
    let mut line = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        let words = next.to_string();
        if !line.contains(&words) {
            line = format!("{line}: {words}");
        }
        cause = next.source();
    }
    mcpl_tls::explained(line.replace(['\r', '\n'], " "))
}

/// object_store's HTTP client built on mcpl-tls's one stack (rustls on ring, the trusted roots),
/// so the S3 store trusts what every other client trusts and no second crypto provider is built
/// (decision 0120).
#[derive(Debug)]
struct OneStack;

impl HttpConnector for OneStack {
    fn connect(&self, _: &ClientOptions) -> object_store::Result<HttpClient> {
        let tls = mcpl_tls::trust()
            .client_config()
            .map_err(|e| generic(Box::new(e)))?;
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured((*tls).clone())
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| generic(Box::new(e)))?;
        Ok(HttpClient::new(client))
    }
}
