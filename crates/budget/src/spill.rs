//! Spill files: the whole of a result, written before anything is cut, with its payloads as
//! attachments holding their decoded bytes.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_classify::{Media, Sniffed};
use mcpl_lanes::{Projector, ToolResult, markers};

/// Why a spill could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SpillError {
    /// The folder could not be made or used.
    #[error("spill folder {path}: {error}")]
    Folder {
        /// The folder.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A file could not be written whole.
    #[error("spill file {path}: {error}")]
    Write {
        /// The file being written.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
}

/// Where spill files go. Every file is written whole or not at all.
pub trait SpillStore {
    /// Writes one file with a name the store makes (never from a server string) and the given
    /// extension; returns the path it has once [`SpillStore::commit`] returns. A store may stage
    /// the file until then.
    fn put(&mut self, extension: &str, bytes: &[u8]) -> Result<String, SpillError>;

    /// Removes a file this store wrote or staged, when the spill it belongs to failed part-way.
    fn remove(&mut self, path: &str);

    /// Makes every file put since the last commit durable and visible under its path; on an
    /// error none of them is left. A store that writes each file in place has nothing to do.
    fn commit(&mut self) -> Result<(), SpillError> {
        Ok(())
    }
}

/// The default store: secure local files in one folder. Names are `mcpl-<12 digits>-<n>.<ext>`,
/// files are created owner-only (0600) and written under a temporary name; [`SpillStore::commit`]
/// syncs them all at once, renames them into place, and syncs the folder, so a crash or a full
/// disk leaves no half file under a real name (decision 0032).
#[derive(Debug)]
pub struct LocalSpillStore {
    dir: PathBuf,
    nonce: String,
    written: u64,
    /// Files written but not yet committed: their temporary and real paths.
    staged: Vec<(PathBuf, PathBuf)>,
}

impl LocalSpillStore {
    /// A store writing into `dir`, made (owner-only) if missing; an existing folder must be
    /// private ([`private_dir`]).
    pub fn new(dir: impl Into<PathBuf>) -> Result<LocalSpillStore, SpillError> {
        let dir = dir.into();
        private_dir(&dir).map_err(|error| SpillError::Folder {
            path: dir.display().to_string(),
            error,
        })?;
        Ok(LocalSpillStore {
            dir,
            nonce: nonce(),
            written: 0,
            staged: Vec::new(),
        })
    }

    /// The folder the store writes into.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl SpillStore for LocalSpillStore {
    fn put(&mut self, extension: &str, bytes: &[u8]) -> Result<String, SpillError> {
        self.written += 1;
        let name = format!("mcpl-{}-{}.{extension}", self.nonce, self.written);
        let path = self.dir.join(&name);
        let temporary = self.dir.join(format!(".{name}.partial"));
        let fail = |error| SpillError::Write {
            path: path.display().to_string(),
            error,
        };
        // No sync here: `commit` syncs every staged file at once (one fsync a file made a
        // spill of 100,000 attachments take minutes).
        let written = create_private_file(&temporary).and_then(|mut file| file.write_all(bytes));
        if let Err(error) = written {
            let _ = fs::remove_file(&temporary);
            return Err(fail(error));
        }
        let shown = path.display().to_string();
        self.staged.push((temporary, path));
        Ok(shown)
    }

    fn remove(&mut self, path: &str) {
        if let Some(at) = self
            .staged
            .iter()
            .position(|(_, real)| real.as_os_str() == path)
        {
            let (temporary, _) = self.staged.remove(at);
            let _ = fs::remove_file(temporary);
        }
        let _ = fs::remove_file(path);
    }

    fn commit(&mut self) -> Result<(), SpillError> {
        let staged = std::mem::take(&mut self.staged);
        if staged.is_empty() {
            return Ok(());
        }
        let folder = |error| SpillError::Folder {
            path: self.dir.display().to_string(),
            error,
        };
        // Data first: every staged file's bytes are on disk before any real name points at them.
        let mut result = sync_files(&self.dir, &staged).map_err(folder);
        let mut renamed = 0;
        if result.is_ok() {
            for (temporary, real) in &staged {
                if let Err(error) = fs::rename(temporary, real) {
                    result = Err(SpillError::Write {
                        path: real.display().to_string(),
                        error,
                    });
                    break;
                }
                renamed += 1;
            }
        }
        // Then the names: the folder's entries are synced once.
        if result.is_ok() {
            result = sync_dir(&self.dir).map_err(folder);
        }
        if result.is_err() {
            for (at, (temporary, real)) in staged.iter().enumerate() {
                let _ = fs::remove_file(if at < renamed { real } else { temporary });
            }
        }
        result
    }
}

/// Syncs the written files: on Linux one `syncfs` of the folder's file system, elsewhere one
/// sync a file.
#[cfg(target_os = "linux")]
fn sync_files(dir: &Path, _staged: &[(PathBuf, PathBuf)]) -> std::io::Result<()> {
    let folder = File::open(dir)?;
    rustix::fs::syncfs(&folder).map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn sync_files(_dir: &Path, staged: &[(PathBuf, PathBuf)]) -> std::io::Result<()> {
    for (temporary, _) in staged {
        OpenOptions::new().write(true).open(temporary)?.sync_all()?;
    }
    Ok(())
}

/// Syncs a folder's entries, so that renames in it survive a crash.
#[cfg(unix)]
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Folders cannot be opened for syncing here; each file was synced before its rename.
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> std::io::Result<()> {
    Ok(())
}

/// A new owner-only file. `create_new` (`O_CREAT | O_EXCL`) never opens through a symbolic
/// link: one planted at the name makes the open fail, and the rename into place replaces a link
/// at the real name instead of following it.
#[cfg(unix)]
fn create_private_file(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn create_private_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().write(true).create_new(true).open(path)
}

/// Makes `dir` (and any missing parent) owner-only, 0700 on Unix, when it is missing. A folder
/// that already exists is used only when it is a real folder, not a symbolic link, owned by this
/// user and not writable by group or others: anyone else who could write there could replace a
/// file the model is told to read. Otherwise the answer is one line saying why.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(metadata) => check_private(&metadata),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            create_dir_owner_only(dir)?;
            // Whatever is there now is checked, not assumed to be what was just made.
            check_private(&fs::symlink_metadata(dir)?)
        }
        Err(error) => Err(error),
    }
}

#[cfg(unix)]
fn create_dir_owner_only(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_dir_owner_only(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)
}

#[cfg(unix)]
fn check_private(metadata: &fs::Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let refuse = |why: String| {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            why,
        ))
    };
    if metadata.file_type().is_symlink() {
        return refuse("is a symbolic link; mcpl uses only a real folder of its own".to_owned());
    }
    if !metadata.is_dir() {
        return refuse("is not a folder".to_owned());
    }
    let user = rustix::process::geteuid().as_raw();
    if metadata.uid() != user {
        return refuse(format!(
            "is owned by user {}, not by this user ({user}); mcpl uses only a folder of its own",
            metadata.uid()
        ));
    }
    if metadata.mode() & 0o022 != 0 {
        return refuse(format!(
            "is writable by group or others (mode {:o}); make it 0700 or name another folder",
            metadata.mode() & 0o7777
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(metadata: &fs::Metadata) -> std::io::Result<()> {
    if metadata.file_type().is_symlink() || !metadata.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "is not a real folder",
        ));
    }
    Ok(())
}

/// A name part no two stores share, from the standard library's per-process randomness and the
/// clock: twelve decimal digits, so that a notice naming the file costs the same every time.
fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:012}", hasher.finish() % 1_000_000_000_000)
}

/// A written spill: the whole result's text and its attachments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spill {
    /// The spill text's path.
    pub path: String,
    /// Each payload's file, in the order the text names them.
    pub attachments: Vec<String>,
}

/// Writes the whole of a result: first each payload as an attachment (decoded bytes, an
/// extension for their type), then the text with each payload's attachment line in its place.
/// On any failure every file already written is removed and the error returned.
pub fn write_spill(
    projector: &mut Projector<'_>,
    result: &ToolResult<'_>,
    store: &mut dyn SpillStore,
) -> Result<Spill, SpillError> {
    let mut attachments = Vec::new();
    let mut failure = None;
    let text = projector.tool_result_spill(result, &mut |media: &Media<'_>, shown: &str| {
        if failure.is_some() {
            return shown.to_owned();
        }
        let (bytes, extension, what) = attachment_of(media);
        match store.put(extension, &bytes) {
            Ok(path) => {
                let line = format!(
                    "[attachment: {path} ({what}, {})]",
                    markers::size_label(bytes.len() as u64)
                );
                attachments.push(path);
                line
            }
            Err(error) => {
                failure = Some(error);
                shown.to_owned()
            }
        }
    });
    let written = match failure {
        Some(error) => Err(error),
        None => store
            .put("txt", text.as_bytes())
            .and_then(|path| store.commit().map(|()| path)),
    };
    match written {
        Ok(path) => Ok(Spill { path, attachments }),
        Err(error) => {
            for path in &attachments {
                store.remove(path);
            }
            Err(error)
        }
    }
}

/// A payload's bytes, extension and description. Sound base64 is decoded; anything else is kept
/// as the text the server sent, so nothing is lost.
fn attachment_of(media: &Media<'_>) -> (Vec<u8>, &'static str, String) {
    match STANDARD.decode(media.data) {
        Ok(bytes) => {
            let what = media
                .best_type()
                .map_or("unknown type".to_owned(), str::to_owned);
            (bytes, extension_for(media.sniffed), what)
        }
        Err(_) => (
            media.data.as_bytes().to_vec(),
            "b64",
            "not valid base64, kept as sent".to_owned(),
        ),
    }
}

/// The extension for a payload, from what its bytes are.
pub fn extension_for(sniffed: Option<Sniffed>) -> &'static str {
    match sniffed {
        Some(Sniffed::Png) => "png",
        Some(Sniffed::Jpeg) => "jpg",
        Some(Sniffed::Gif) => "gif",
        Some(Sniffed::Webp) => "webp",
        Some(Sniffed::Pdf) => "pdf",
        Some(Sniffed::Zip) => "zip",
        Some(Sniffed::Gzip) => "gz",
        Some(Sniffed::Wav) => "wav",
        Some(Sniffed::Mp3) => "mp3",
        Some(Sniffed::Aac) => "aac",
        Some(Sniffed::Ogg) => "ogg",
        Some(Sniffed::Flac) => "flac",
        Some(Sniffed::Tiff) => "tiff",
        Some(Sniffed::Bmp) => "bmp",
        Some(Sniffed::Avif) => "avif",
        Some(Sniffed::Heic) => "heic",
        Some(Sniffed::Svg) => "svg",
        Some(Sniffed::Other(_)) | None => "bin",
    }
}
