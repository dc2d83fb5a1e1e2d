//! Spill files: the whole of a result, written before anything is cut, with its payloads as
//! attachments holding their decoded bytes.

use std::borrow::Cow;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_classify::{Media, Sniffed, decode_standard};
use mcpl_lanes::{Attach, HiddenUris, Projector, ToolResult, ToolResultCopies, UriPolicy, markers};

/// Why a spill could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// A file could not be read back.
    #[error("spill file {path}: {error}")]
    Read {
        /// The file being read.
        path: String,
        /// The I/O error (`NotFound` when there is no such file).
        error: std::io::Error,
    },
    /// A file is larger than the reader will hold.
    #[error("spill file {path} is over {limit} bytes")]
    TooLarge {
        /// The file.
        path: String,
        /// The most bytes the reader takes.
        limit: u64,
    },
    /// A name the store does not make (only `[a-z0-9_.-]`, no leading dot).
    #[error("{0:?} is not a spill file name")]
    Name(String),
    /// The operating system's random source failed.
    #[error("no randomness for a spill id: {0}")]
    Random(String),
    /// A remote store (an object store, say) failed.
    #[error("spill store {store}: {message}")]
    Remote {
        /// The store, as its configuration names it (`s3://bucket/prefix`).
        store: String,
        /// What failed, in one line.
        message: String,
    },
}

impl SpillError {
    /// Whether the file asked for does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, SpillError::Read { error, .. } if error.kind() == std::io::ErrorKind::NotFound)
    }
}

/// How an omission notice tells the model where the whole result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SpillNotice {
    /// `read the rest with read_result("spill_…")`: for models whose host offers `read_result`.
    ReadResult,
    /// `the full result is in <path>`: for agents with file tools on the host's machine.
    #[default]
    Path,
}

/// A spill's id: `spill_` and 28 lowercase letters from the operating system's random source
/// (131 bits), so that no one can guess another conversation's spill. Letters only, so that a
/// notice naming it costs the same tokens every time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpillId(String);

impl SpillId {
    /// A new random id.
    pub fn random() -> Result<SpillId, SpillError> {
        let mut id = String::with_capacity(SPILL_ID_PREFIX.len() + SPILL_ID_LENGTH);
        id.push_str(SPILL_ID_PREFIX);
        let mut bytes = [0u8; 48];
        while id.len() < SPILL_ID_PREFIX.len() + SPILL_ID_LENGTH {
            getrandom::fill(&mut bytes).map_err(|e| SpillError::Random(e.to_string()))?;
            // 234 is 9 × 26: the bytes below it give every letter equally often.
            for byte in bytes.iter().filter(|&&b| b < 234) {
                if id.len() == SPILL_ID_PREFIX.len() + SPILL_ID_LENGTH {
                    break;
                }
                id.push(char::from(b'a' + byte % 26));
            }
        }
        Ok(SpillId(id))
    }

    /// Reads an id as a model sent it; `None` unless it has the shape [`SpillId::random`] makes.
    pub fn parse(text: &str) -> Option<SpillId> {
        let rest = text.strip_prefix(SPILL_ID_PREFIX)?;
        (rest.len() == SPILL_ID_LENGTH && rest.bytes().all(|b| b.is_ascii_lowercase()))
            .then(|| SpillId(text.to_owned()))
    }

    /// The id as the notice shows it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name of the spill's manifest, written last: a spill without one is not there.
    pub fn manifest_name(&self) -> String {
        format!("{}.json", self.0)
    }
}

impl std::fmt::Display for SpillId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What every spill id begins with.
pub const SPILL_ID_PREFIX: &str = "spill_";
/// How many letters follow the prefix.
pub const SPILL_ID_LENGTH: usize = 28;

/// Whether `name` is one a store may be asked for: a flat name (`[a-z0-9_.-]`, not starting
/// with a dot) or one such name in a folder of one (`spill_<id>/1.png`, a spill's attachments),
/// at most 128 bytes. Names are made by mcpl, never taken from a server string; the check keeps
/// a manifest from another writer from reaching outside the store, or into a hidden staging
/// folder.
pub fn is_spill_name(name: &str) -> bool {
    name.len() <= 128
        && match name.split_once('/') {
            Some((folder, file)) => is_flat_name(folder) && is_flat_name(file),
            None => is_flat_name(name),
        }
}

/// One part of a spill name: `[a-z0-9_.-]`, not empty, not starting with a dot.
fn is_flat_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.-".contains(&b))
}

/// Where spill files go. Every file is written whole or not at all.
pub trait SpillStore {
    /// Writes one file under `name`, which mcpl makes (never from a server string; see
    /// [`is_spill_name`]; `folder/file` puts it in a folder of the spill's own); returns where it
    /// is once [`SpillStore::commit`] returns, as a notice in path wording names it (a path, or
    /// `s3://bucket/key`). A store may stage the file until then.
    fn put(&mut self, name: &str, bytes: &[u8]) -> Result<String, SpillError>;

    /// Writes one file as [`SpillStore::put`] does, its bytes given by `write` a piece at a
    /// time, so a large file is never held whole first. The default gathers the pieces and
    /// puts them; the local store writes them straight to the file.
    fn put_with(
        &mut self,
        name: &str,
        write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<String, SpillError> {
        let mut bytes = Vec::new();
        write(&mut bytes).map_err(|error| SpillError::Write {
            path: name.to_owned(),
            error,
        })?;
        self.put(name, &bytes)
    }

    /// Removes a file this store wrote or staged, by its name, when the spill it belongs to
    /// failed part-way.
    fn remove(&mut self, name: &str);

    /// Why this store cannot take a spill at all, asked before a spill's text is made, so a
    /// store that can never write costs nothing; a store that can write answers `Ok`.
    fn ready(&self) -> Result<(), SpillError> {
        Ok(())
    }

    /// Makes every file put since the last commit durable and visible under its name; on an
    /// error none of them is left. A store that writes each file in place has nothing to do.
    fn commit(&mut self) -> Result<(), SpillError> {
        Ok(())
    }

    /// Reads a committed file back whole, by its name, by this process or any other using the
    /// same place; a file over `limit` bytes is refused, not read. A store that cannot read
    /// back answers that there is no such file.
    fn get(&mut self, name: &str, limit: u64) -> Result<Vec<u8>, SpillError> {
        let _ = limit;
        Err(SpillError::Read {
            path: name.to_owned(),
            error: std::io::ErrorKind::NotFound.into(),
        })
    }

    /// Removes every spill file older than `age`; returns how many went. The retention recipe
    /// (`spillTtlHours`) calls it. A store that keeps nothing has nothing to remove.
    fn remove_older_than(&mut self, age: std::time::Duration) -> Result<u64, SpillError> {
        let _ = age;
        Ok(0)
    }

    /// The conversation whose spills this store writes and reads back: a spill made in another
    /// conversation is not read back.
    fn conversation(&self) -> &str {
        ""
    }

    /// How a notice names a spill this store wrote.
    fn notice(&self) -> SpillNotice {
        SpillNotice::Path
    }

    /// The most payloads one spill writes as files of their own; the ones after them go into
    /// its [`REST_FILE`] ([`MAX_ATTACHMENT_FILES`] unless the store says fewer).
    fn attachment_files(&self) -> usize {
        MAX_ATTACHMENT_FILES
    }

    /// Where the file `name` is, as [`SpillStore::put`] answers once it is written: a line
    /// names a file by it before the file is written.
    fn place(&self, name: &str) -> String {
        name.to_owned()
    }
}

/// The default store: secure local files in one folder, named by their spill: `spill_<id>.txt`
/// (the text), `spill_<id>/<n>.<ext>` (the attachments, in a folder of the spill's own) and
/// `spill_<id>.json` (the manifest). Files and folders are created owner-only (0600, 0700).
/// A flat file is written under a hidden temporary name; a spill's folder is written whole
/// under a hidden name (`.spill_<id>.partial/`) with its files under their real names.
/// [`SpillStore::commit`] syncs everything at once, renames each folder into place (never over
/// anything already there), then each file, and syncs the store's folder, so a crash or a full
/// disk leaves no half file under a real name (decisions 0032, 0080).
#[derive(Debug)]
pub struct LocalSpillStore {
    dir: PathBuf,
    conversation: String,
    notice: SpillNotice,
    /// The most attachment files a spill writes ([`SpillStore::attachment_files`]).
    attachment_files: usize,
    /// Flat files written but not yet committed: their temporary and real paths.
    staged: Vec<(PathBuf, PathBuf)>,
    /// Folders written but not yet committed, in the order they were begun.
    folders: Vec<StagedFolder>,
    /// Files staged in folders since the last background writeback began.
    since_writeback: usize,
    /// Files staged since the last commit.
    uncommitted: usize,
    /// The background writeback under way, if any ([`SPILL_WRITEBACK_EVERY`]).
    writeback: Option<std::thread::JoinHandle<()>>,
}

/// Every this many files staged in a spill's folder, the file system's writeback of what is
/// staged so far is begun on a thread of its own, while the spill goes on: the commit's one sync
/// then finds most of it on disk already (decision 0080). It only starts writing early; the
/// commit's sync is still what makes the files durable.
pub const SPILL_WRITEBACK_EVERY: usize = 8192;

/// A spill's folder being written under a hidden name.
#[derive(Debug)]
struct StagedFolder {
    /// Its name in the store (`spill_<id>`).
    name: String,
    /// Where it is written (`.spill_<id>.partial`).
    temporary: PathBuf,
    /// Where the commit moves it.
    real: PathBuf,
    /// The hidden folder, open: its files are made relative to it, so making one does not walk
    /// the store's path again (a spill may make 100,000 of them).
    #[cfg(unix)]
    open: std::os::fd::OwnedFd,
}

impl LocalSpillStore {
    /// A store writing into `dir`, made (owner-only) if missing; an existing folder must be
    /// private ([`private_dir`]). Its conversation is a new random one and its notices name
    /// paths, until [`LocalSpillStore::with_conversation`] and
    /// [`LocalSpillStore::with_notice`] say otherwise.
    pub fn new(dir: impl Into<PathBuf>) -> Result<LocalSpillStore, SpillError> {
        let dir = dir.into();
        private_dir(&dir).map_err(|error| SpillError::Folder {
            path: dir.display().to_string(),
            error,
        })?;
        Ok(LocalSpillStore {
            dir,
            conversation: SpillId::random()?.0,
            notice: SpillNotice::Path,
            attachment_files: MAX_ATTACHMENT_FILES,
            staged: Vec::new(),
            folders: Vec::new(),
            since_writeback: 0,
            uncommitted: 0,
            writeback: None,
        })
    }

    /// The same store for the spills of `conversation`.
    pub fn with_conversation(mut self, conversation: impl Into<String>) -> LocalSpillStore {
        self.conversation = conversation.into();
        self
    }

    /// The same store, its notices worded as `notice` says.
    pub fn with_notice(mut self, notice: SpillNotice) -> LocalSpillStore {
        self.notice = notice;
        self
    }

    /// The store with at most `files` attachment files a spill, fewer than
    /// [`MAX_ATTACHMENT_FILES`] (a larger number is that one).
    pub fn with_attachment_files(mut self, files: usize) -> LocalSpillStore {
        self.attachment_files = files.min(MAX_ATTACHMENT_FILES);
        self
    }

    /// The folder the store writes into.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, name: &str) -> Result<PathBuf, SpillError> {
        if is_spill_name(name) {
            Ok(self.dir.join(name))
        } else {
            Err(SpillError::Name(name.to_owned()))
        }
    }

    /// The hidden folder the files of folder `name` are written into until the commit: begun
    /// (owner-only, and new: an existing one is never written into) on its first file.
    fn staging_folder(&mut self, name: &str) -> std::io::Result<&StagedFolder> {
        let at = match self.folders.iter().position(|folder| folder.name == name) {
            Some(at) => at,
            None => {
                let temporary = self.dir.join(format!(".{name}.partial"));
                create_new_dir(&temporary)?;
                #[cfg(unix)]
                let open = match open_new_dir(&temporary) {
                    Ok(open) => open,
                    Err(error) => {
                        let _ = fs::remove_dir(&temporary);
                        return Err(error);
                    }
                };
                self.folders.push(StagedFolder {
                    name: name.to_owned(),
                    temporary,
                    real: self.dir.join(name),
                    #[cfg(unix)]
                    open,
                });
                self.folders.len() - 1
            }
        };
        Ok(&self.folders[at])
    }

    /// Begins the background writeback of folder `name`'s file system, unless one is under
    /// way. Where it cannot be begun, nothing changes: the commit syncs everything anyway.
    #[cfg(target_os = "linux")]
    fn begin_writeback(&mut self, name: &str) {
        if self
            .writeback
            .as_ref()
            .is_some_and(|under_way| !under_way.is_finished())
        {
            return;
        }
        self.end_writeback();
        let Some(open) = self
            .folders
            .iter()
            .find(|folder| folder.name == name)
            .and_then(|folder| folder.open.try_clone().ok())
        else {
            return;
        };
        self.since_writeback = 0;
        self.writeback = std::thread::Builder::new()
            .name("mcpl-spill-writeback".to_owned())
            .spawn(move || {
                // Only a head start: the commit's own sync reports any failure.
                let _ = rustix::fs::syncfs(&open);
            })
            .ok();
    }

    #[cfg(not(target_os = "linux"))]
    fn begin_writeback(&mut self, _name: &str) {
        self.since_writeback = 0;
    }

    /// Whether the next file staged begins its own writeback early ([`EarlyWriteback`]): while
    /// the spill may still be synced file by file. A spill of more files is synced with one
    /// `syncfs`, and its folder's writeback is begun in the background instead.
    fn early_writeback(&self) -> bool {
        !syncs_file_system(self.uncommitted + 1)
    }

    /// Waits for the background writeback, if one is under way.
    fn end_writeback(&mut self) {
        if let Some(under_way) = self.writeback.take() {
            let _ = under_way.join();
        }
    }

    /// Removes the staging folder of folder `name` when no file is left in it: the last file
    /// of a failed spill takes the folder with it.
    fn drop_staging_folder_if_empty(&mut self, name: &str) {
        if let Some(at) = self.folders.iter().position(|folder| folder.name == name)
            && fs::remove_dir(&self.folders[at].temporary).is_ok()
        {
            self.folders.remove(at);
        }
    }

    /// Writes one file under `name` as [`SpillStore::put`] says, `write` writing its bytes to
    /// the new file.
    fn write_file(
        &mut self,
        name: &str,
        write: &mut dyn FnMut(File) -> std::io::Result<()>,
    ) -> Result<String, SpillError> {
        let path = self.path_of(name)?;
        let fail = |error| SpillError::Write {
            path: path.display().to_string(),
            error,
        };
        // A folder's files go under their real names inside its hidden staging folder, which
        // the commit renames once; a flat file goes under a hidden name of its own.
        // No sync here: `commit` syncs every staged file at once (one fsync a file made a
        // spill of 100,000 attachments take minutes).
        match name.split_once('/') {
            Some((folder, file)) => {
                let staging = self.staging_folder(folder).map_err(fail)?;
                let written = create_private_file_in(staging, file).and_then(&mut *write);
                if let Err(error) = written {
                    // The staged file's path is made only to remove it.
                    let _ = fs::remove_file(staging.temporary.join(file));
                    self.drop_staging_folder_if_empty(folder);
                    return Err(fail(error));
                }
                self.uncommitted += 1;
                self.since_writeback += 1;
                if self.since_writeback >= SPILL_WRITEBACK_EVERY {
                    self.begin_writeback(folder);
                }
                Ok(path.display().to_string())
            }
            None => {
                let temporary = self.dir.join(format!(".{name}.partial"));
                let written = create_private_file(&temporary).and_then(&mut *write);
                if let Err(error) = written {
                    let _ = fs::remove_file(&temporary);
                    return Err(fail(error));
                }
                let shown = path.display().to_string();
                self.uncommitted += 1;
                self.staged.push((temporary, path));
                Ok(shown)
            }
        }
    }
}

impl SpillStore for LocalSpillStore {
    fn put(&mut self, name: &str, bytes: &[u8]) -> Result<String, SpillError> {
        // Bytes made whole go to the file as they are, with no buffer between.
        let early = self.early_writeback();
        self.write_file(name, &mut |file| {
            let mut file = EarlyWriteback::new(file, early);
            file.write_all(bytes)?;
            file.finish();
            Ok(())
        })
    }

    fn put_with(
        &mut self,
        name: &str,
        write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<String, SpillError> {
        // Pieces are gathered 64 KiB at a time; a piece as large goes to the file as it is.
        let early = self.early_writeback();
        self.write_file(name, &mut |file| {
            let writer = EarlyWriteback::new(file, early);
            let mut file = std::io::BufWriter::with_capacity(64 << 10, writer);
            write(&mut file)?;
            file.flush()?;
            file.get_mut().finish();
            Ok(())
        })
    }

    fn remove(&mut self, name: &str) {
        let Ok(path) = self.path_of(name) else {
            return;
        };
        if let Some((folder, file)) = name.split_once('/') {
            if let Some(staged) = self.folders.iter().find(|staged| staged.name == folder) {
                // A staged file removed is one file fewer for the commit to sync.
                if fs::remove_file(staged.temporary.join(file)).is_ok() {
                    self.uncommitted = self.uncommitted.saturating_sub(1);
                }
                self.drop_staging_folder_if_empty(folder);
            } else if is_real_dir(&self.dir.join(folder)) {
                let _ = fs::remove_file(&path);
                let _ = fs::remove_dir(self.dir.join(folder));
            }
            return;
        }
        if let Some(at) = self.staged.iter().position(|(_, real)| *real == path) {
            let (temporary, _) = self.staged.remove(at);
            let _ = fs::remove_file(temporary);
            self.uncommitted = self.uncommitted.saturating_sub(1);
        }
        let _ = fs::remove_file(path);
    }

    fn commit(&mut self) -> Result<(), SpillError> {
        self.end_writeback();
        self.uncommitted = 0;
        let staged = std::mem::take(&mut self.staged);
        let folders = std::mem::take(&mut self.folders);
        if staged.is_empty() && folders.is_empty() {
            return Ok(());
        }
        let folder = |error| SpillError::Folder {
            path: self.dir.display().to_string(),
            error,
        };
        // Data first: every staged file's bytes, and every staging folder's entries, are on
        // disk before any real name points at them.
        let mut result = sync_staged(&self.dir, &staged, &folders).map_err(folder);
        // Then the names: each folder whole (its files are already under their real names in
        // it), then each flat file in the order written, the manifest last.
        let (mut moved_folders, mut renamed) = (0, 0);
        if result.is_ok() {
            for staged_folder in &folders {
                if let Err(error) = rename_no_replace(&staged_folder.temporary, &staged_folder.real)
                {
                    result = Err(SpillError::Write {
                        path: staged_folder.real.display().to_string(),
                        error,
                    });
                    break;
                }
                moved_folders += 1;
            }
        }
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
        // The store folder's entries are synced once, so that the renames survive a crash.
        if result.is_ok() {
            result = sync_dir(&self.dir).map_err(folder);
        }
        if result.is_err() {
            for (at, staged_folder) in folders.iter().enumerate() {
                // A folder moved into place is the one this store made: the rename never
                // replaces anything.
                let _ = fs::remove_dir_all(if at < moved_folders {
                    &staged_folder.real
                } else {
                    &staged_folder.temporary
                });
            }
            for (at, (temporary, real)) in staged.iter().enumerate() {
                let _ = fs::remove_file(if at < renamed { real } else { temporary });
            }
        }
        result
    }

    fn get(&mut self, name: &str, limit: u64) -> Result<Vec<u8>, SpillError> {
        use std::io::Read as _;
        let path = self.path_of(name)?;
        let fail = |error| SpillError::Read {
            path: path.display().to_string(),
            error,
        };
        let file = open_regular_in(&self.dir, name).map_err(fail)?;
        let mut bytes = Vec::new();
        file.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(fail)?;
        if bytes.len() as u64 > limit {
            return Err(SpillError::TooLarge {
                path: path.display().to_string(),
                limit,
            });
        }
        Ok(bytes)
    }

    fn remove_older_than(&mut self, age: std::time::Duration) -> Result<u64, SpillError> {
        let folder = |error| SpillError::Folder {
            path: self.dir.display().to_string(),
            error,
        };
        let now = std::time::SystemTime::now();
        let mut removed = 0;
        for entry in fs::read_dir(&self.dir).map_err(folder)? {
            let entry = entry.map_err(folder)?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            // Spill files and folders, and what a crashed writer left staged; nothing else in
            // the folder.
            let ours = name.starts_with(SPILL_ID_PREFIX)
                || (name.starts_with(".spill_") && name.ends_with(".partial"));
            // Neither the entry's type nor its metadata follows a symbolic link: a link is
            // left alone, whatever it points at.
            let (Ok(kind), Ok(metadata)) = (entry.file_type(), entry.metadata()) else {
                continue;
            };
            let old = metadata
                .modified()
                .ok()
                .and_then(|modified| now.duration_since(modified).ok())
                .is_some_and(|elapsed| elapsed > age);
            if !(ours && old) {
                continue;
            }
            if kind.is_file() {
                removed += u64::from(fs::remove_file(entry.path()).is_ok());
            } else if kind.is_dir() {
                removed += remove_spill_folder(&entry.path());
            }
        }
        Ok(removed)
    }

    fn conversation(&self) -> &str {
        &self.conversation
    }

    fn notice(&self) -> SpillNotice {
        self.notice
    }

    fn attachment_files(&self) -> usize {
        self.attachment_files
    }

    fn place(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }
}

/// Removes a spill's folder: its regular files with spill names, then the folder if that left
/// it empty. Anything else in it (a link, a folder, a file of another name) stays, and so does
/// the folder. Returns how many files went.
fn remove_spill_folder(folder: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(folder) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let spill_file = entry.file_type().is_ok_and(|kind| kind.is_file())
            && entry.file_name().to_str().is_some_and(is_flat_name);
        if spill_file && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    let _ = fs::remove_dir(folder);
    removed
}

/// Whether `path` is a folder itself, not a symbolic link to one.
fn is_real_dir(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_dir())
}

/// Opens the file `name` (flat, or `folder/file`) of the store folder `dir` for reading, never
/// through a symbolic link, neither at the file nor at its folder.
#[cfg(unix)]
fn open_regular_in(dir: &Path, name: &str) -> std::io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    let Some((folder, file)) = name.split_once('/') else {
        return open_regular(&dir.join(name));
    };
    let folder = rustix::fs::open(
        dir.join(folder),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let file = rustix::fs::openat(
        &folder,
        file,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    regular(File::from(file))
}

#[cfg(not(unix))]
fn open_regular_in(dir: &Path, name: &str) -> std::io::Result<File> {
    File::open(dir.join(name))
}

/// Opens a regular file for reading, never through a symbolic link.
#[cfg(unix)]
fn open_regular(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    regular(file)
}

/// The file, when it is a regular one.
#[cfg(unix)]
fn regular(file: File) -> std::io::Result<File> {
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "is not a regular file",
        ))
    }
}

/// How many files a spill may hold before one `syncfs` of the store's file system is cheaper
/// than a sync of each. Below it a spill waits for its own files only, never for what another
/// process is writing on the same file system (a `syncfs` did: 132-588 ms for a 200 KB spill).
pub const SYNC_EACH_UP_TO: usize = 256;

/// Syncs the staged files and folders: each file and each staging folder on its own, or, for a
/// spill of more than [`SYNC_EACH_UP_TO`] files on Linux, one `syncfs` of the store folder's
/// file system (every file and folder entry in one call).
fn sync_staged(
    dir: &Path,
    staged: &[(PathBuf, PathBuf)],
    folders: &[StagedFolder],
) -> std::io::Result<()> {
    let mut files: Vec<PathBuf> = staged
        .iter()
        .map(|(temporary, _)| temporary.clone())
        .collect();
    let mut count = files.len();
    for folder in folders {
        for entry in fs::read_dir(&folder.temporary)? {
            let entry = entry?;
            count += 1;
            // A path is kept only while the files may still be synced one by one: a spill of
            // many attachments, synced with one `syncfs`, keeps no list of them.
            if !syncs_file_system(count) {
                files.push(entry.path());
            }
        }
    }
    #[cfg(target_os = "linux")]
    if syncs_file_system(count) {
        let folder = File::open(dir)?;
        return rustix::fs::syncfs(&folder).map_err(std::io::Error::from);
    }
    let _ = dir;
    for file in &files {
        OpenOptions::new().write(true).open(file)?.sync_all()?;
    }
    for folder in folders {
        sync_dir(&folder.temporary)?;
    }
    Ok(())
}

/// A staged file whose bytes the file system begins to write to disk while the spill goes on:
/// every [`EARLY_WRITEBACK_EVERY`] bytes, and at the end of the file. The commit's sync then
/// waits only for what is left (decision 0162). Only a head start: the commit's sync is still
/// what makes a file durable, and it reports any failure.
struct EarlyWriteback {
    file: File,
    /// Whether writeback is begun early at all.
    early: bool,
    /// Bytes written so far.
    written: u64,
    /// Bytes whose writeback was begun.
    begun: u64,
}

/// How many bytes a staged file gathers before their writeback is begun.
const EARLY_WRITEBACK_EVERY: u64 = 1 << 20;

impl EarlyWriteback {
    fn new(file: File, early: bool) -> EarlyWriteback {
        EarlyWriteback {
            file,
            early,
            written: 0,
            begun: 0,
        }
    }

    /// Begins the writeback of the bytes written since the last one began.
    fn begin(&mut self) {
        let len = self.written - self.begun;
        if len == 0 || !self.early {
            return;
        }
        // On Linux, advising that the range is not needed starts writing its dirty pages
        // (without waiting) and lets go of the clean ones; elsewhere the commit's sync does it all.
        #[cfg(target_os = "linux")]
        if let Some(len) = std::num::NonZeroU64::new(len) {
            let _ = rustix::fs::fadvise(
                &self.file,
                self.begun,
                Some(len),
                rustix::fs::Advice::DontNeed,
            );
        }
        self.begun = self.written;
    }

    /// Begins the writeback of the file's last bytes.
    fn finish(&mut self) {
        self.begin();
    }
}

impl Write for EarlyWriteback {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(bytes)?;
        self.written += n as u64;
        if self.written - self.begun >= EARLY_WRITEBACK_EVERY {
            self.begin();
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Whether a spill of `files` files is synced with one `syncfs` rather than file by file.
fn syncs_file_system(files: usize) -> bool {
    cfg!(target_os = "linux") && files > SYNC_EACH_UP_TO
}

/// Renames `from` to `to` unless something (a file, a folder, a link) is already at `to`: on
/// Linux atomically (`RENAME_NOREPLACE`), elsewhere, or on a file system without it, by looking
/// first, which only this user could race in a private folder.
#[cfg(target_os = "linux")]
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    use rustix::fs::{CWD, RenameFlags};
    use rustix::io::Errno;
    match rustix::fs::renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
        Err(Errno::INVAL | Errno::NOSYS) => rename_if_absent(from, to),
        Err(Errno::EXIST) => Err(already_there()),
        done => done.map_err(std::io::Error::from),
    }
}

#[cfg(not(target_os = "linux"))]
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    rename_if_absent(from, to)
}

fn rename_if_absent(from: &Path, to: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(to) {
        Ok(_) => Err(already_there()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => fs::rename(from, to),
        Err(error) => Err(error),
    }
}

fn already_there() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        "something is already there; mcpl never moves a spill over what it did not write",
    )
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

/// A new owner-only folder; one already at `path` (a leftover, or planted) is an error, never
/// written into.
#[cfg(unix)]
fn create_new_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new().mode(0o700).create(path)
}

#[cfg(not(unix))]
fn create_new_dir(path: &Path) -> std::io::Result<()> {
    fs::create_dir(path)
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

/// A new owner-only file `name` in a staging folder, made relative to the open folder
/// (`O_CREAT | O_EXCL | O_NOFOLLOW`): nothing already at the name is opened or followed.
#[cfg(unix)]
fn create_private_file_in(folder: &StagedFolder, name: &str) -> std::io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    let made = rustix::fs::openat(
        &folder.open,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    Ok(File::from(made))
}

#[cfg(not(unix))]
fn create_private_file_in(folder: &StagedFolder, name: &str) -> std::io::Result<File> {
    create_private_file(&folder.temporary.join(name))
}

/// Opens a folder this store just made, never through a symbolic link.
#[cfg(unix)]
fn open_new_dir(path: &Path) -> std::io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    Ok(rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
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

/// A written spill: the whole result's text and its attachments.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Spill {
    /// The id `read_result` takes.
    pub id: SpillId,
    /// Where the spill text is (a path for the local store).
    pub path: String,
    /// Where each payload written as a file of its own is, in the order the text names them:
    /// at most [`MAX_ATTACHMENT_FILES`]; the payloads after them are in the spill's
    /// [`REST_FILE`], which their lines name.
    pub attachments: Vec<String>,
    /// How notices name this spill.
    pub notice: SpillNotice,
}

impl Spill {
    /// How a notice that replaces the whole result names this spill: `the whole result is in
    /// <path>`, or `read it with read_result("<id>")`, as the spill's notice wording says.
    pub fn reference(&self) -> String {
        match self.notice {
            SpillNotice::Path => format!("the whole result is in {}", self.path),
            SpillNotice::ReadResult => format!("read it with read_result(\"{}\")", self.id),
        }
    }

    /// The omission notice for what a cut left out of this spill's result, worded as the
    /// store's [`SpillNotice`] says.
    pub fn omission_notice(&self, omitted: crate::fit::Omitted) -> String {
        match self.notice {
            SpillNotice::Path => crate::fit::omission_notice(omitted, &self.path),
            SpillNotice::ReadResult => crate::fit::read_back_notice(omitted, &self.id),
        }
    }
}

/// One attachment as the manifest records it, for `read_result` to send it natively.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ManifestAttachment {
    /// Its file's name in the store.
    pub name: String,
    /// The line standing in its place in the spill text.
    pub line: String,
    /// Its media type, when its bytes are a known type.
    pub media_type: Option<String>,
}

/// What a spill holds, written last under [`SpillId::manifest_name`]: a spill whose manifest
/// is missing is not there.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Manifest {
    /// The conversation that made it.
    pub conversation: String,
    /// The spill text's file name.
    pub text: String,
    /// The attachments, in the order the text names them.
    pub attachments: Vec<ManifestAttachment>,
    /// The spill text's length in bytes. A spill writes its manifest a field at a time, in
    /// this order ([`write_manifest`]).
    pub bytes: u64,
}

/// One attachment as a spill keeps it until its manifest is written: its line is made again
/// from where its file went, so a spill of many payloads keeps no line, name or JSON for each.
struct Attached {
    /// The type mcpl found its bytes to be: the manifest's media type, and what its line says
    /// it is.
    sniffed: Option<Sniffed>,
    /// The type only the server named, for a line with no type of mcpl's.
    claimed: Option<Box<str>>,
    /// Whether its data was sound base64, written decoded; other data is kept as sent.
    decoded: bool,
    /// Its file's length.
    bytes: u64,
}

impl Attached {
    /// Its file's extension, which with the spill's id and its place names the file.
    fn extension(&self) -> &'static str {
        match self.decoded {
            true => extension_for(self.sniffed),
            false => "b64",
        }
    }

    /// What its line says it is: the type its bytes are, the type the server claimed, or why
    /// it has no type.
    fn what(&self) -> &str {
        match (self.decoded, self.sniffed, &self.claimed) {
            (false, _, _) => "not valid base64, kept as sent",
            (true, Some(sniffed), _) => sniffed.mime(),
            (true, None, Some(claimed)) => claimed,
            (true, None, None) => "unknown type",
        }
    }

    /// The line standing in its place in the spill text, naming its file by `place`.
    fn line(&self, place: &str) -> String {
        format!(
            "[attachment: {place} ({}, {})]",
            self.what(),
            markers::size_label(self.bytes)
        )
    }
}

/// The most files one spill writes for its payloads: the 100,000 attachments a spill writes in
/// a few seconds (decision 0080). A server can send over a million payloads of a few bytes in
/// one 64 MiB result; as files they took a million inodes and most of a minute. The payloads
/// after these go into one more file, [`REST_FILE`], a line each (decision 0149).
pub const MAX_ATTACHMENT_FILES: usize = 100_000;

/// The file in a spill's folder that holds the payloads after its last attachment file: one
/// line each, the base64 of what its own file would have held.
pub const REST_FILE: &str = "rest.b64";

/// Writes a spill's manifest to `out` as `serde_json` writes the whole [`Manifest`], one
/// attachment at a time, so the whole is never held.
fn write_manifest(
    out: &mut dyn Write,
    conversation: &str,
    text: &str,
    attachments: impl Iterator<Item = ManifestAttachment>,
    bytes: u64,
) -> std::io::Result<()> {
    out.write_all(b"{\"conversation\":")?;
    serde_json::to_writer(&mut *out, conversation)?;
    out.write_all(b",\"text\":")?;
    serde_json::to_writer(&mut *out, text)?;
    out.write_all(b",\"attachments\":[")?;
    for (at, attachment) in attachments.enumerate() {
        if at > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &attachment)?;
    }
    write!(out, "],\"bytes\":{bytes}}}")
}

/// Writes the whole of a result: first each payload as an attachment (decoded bytes, an
/// extension for their type), then the text with each payload's attachment line in its place,
/// then the manifest that makes it readable by id. On any failure every file already written is
/// removed and the error returned.
pub fn write_spill(
    projector: &mut Projector<'_>,
    result: &ToolResult<'_>,
    store: &mut dyn SpillStore,
) -> Result<Spill, SpillError> {
    let hidden = session_hidden(projector);
    write_spill_with(store, &hidden, |attach| {
        projector.tool_result_spill(result, attach)
    })
}

/// What the session hides, for a spill's text attachments: the result's own hidden uris have
/// joined the session by the time its spill is written.
fn session_hidden(projector: &mut Projector<'_>) -> HiddenUris<'static> {
    let scan = projector.registry.hidden().scans(projector.server);
    HiddenUris::in_session(
        &[],
        UriPolicy::Hidden,
        projector.registry.hidden_mut(),
        scan,
    )
}

/// [`write_spill`] for a result whose copies were just made by the same projector: when they
/// say [`ToolResultCopies::spills_as_stored`], the spill text is their stored copy with each
/// payload's attachment line in its part's place, with no second pass over the result (so the
/// ids of the references and images the stored copy names are the spill's too); otherwise the
/// same spill [`write_spill`] writes.
pub fn write_spill_of(
    projector: &mut Projector<'_>,
    result: &ToolResult<'_>,
    copies: &ToolResultCopies<'_>,
    store: &mut dyn SpillStore,
) -> Result<Spill, SpillError> {
    let hidden = session_hidden(projector);
    store.ready()?;
    let mut writer = SpillWriter::new(store)?;
    // The spill text is written as the stored copy is read, each payload's line made again
    // from its attachment, so a result of many payloads is never copied whole for its spill.
    let stored = copies.stored.as_ref();
    let mut len = stored.len() as u64;
    // Each payload is decoded on a second thread while the one before it is written: a
    // result of many images does not wait for each one's decoding and then for its file.
    let as_stored = std::thread::scope(|scope| {
        let mut ahead = DecodeAhead::default();
        let mut pending: Option<(Range<usize>, Media<'_>, bool)> = None;
        let mut attach = |(span, media, sent): (Range<usize>, Media<'_>, bool),
                          ahead: &mut DecodeAhead<'_>| {
            let decoded = if sent { ahead.next() } else { None };
            if let Some(line) = writer.attach_decoded(store, &hidden, &media, decoded) {
                len = len + line.len() as u64 - span.len() as u64;
            }
        };
        let as_stored = copies.each_payload(result, &mut |span, media| {
            let sent = ahead.send(scope, media.data);
            if let Some(before) = pending.replace((span, media.clone(), sent)) {
                attach(before, &mut ahead);
            }
        });
        if let Some(last) = pending.take() {
            attach(last, &mut ahead);
        }
        as_stored
    });
    if !as_stored {
        let text = projector.tool_result_spill(result, &mut |media, shown| {
            writer
                .attach(store, &hidden, media)
                .unwrap_or_else(|| shown.to_owned())
        });
        return writer.finish(store, SpillText::Whole(&text));
    }
    let mut write = |writer: &SpillWriter, out: &mut dyn Write| {
        let mut copied = 0;
        let mut at = 0;
        let mut written = Ok(());
        copies.each_payload(result, &mut |span, media| {
            // The same payloads, in the same order, as the first reading; one more would have
            // no attachment, and the spill fails rather than guess.
            if written.is_ok() && at >= writer.attached.len() + writer.rest_lines {
                written = Err(std::io::Error::other("the result read differently twice"));
            }
            if written.is_ok() {
                let before = stored.get(copied..span.start).unwrap_or_default();
                // A payload past the last file has its line made again, as the first reading
                // made it, from the payload.
                let line = match at < writer.attached.len() {
                    true => writer.line(at),
                    false => writer.rest_line(
                        &rest_entry(&hidden, media, decode_standard(media.data.as_bytes())).1,
                        at - writer.attached.len(),
                    ),
                };
                written = out
                    .write_all(before.as_bytes())
                    .and_then(|()| out.write_all(line.as_bytes()));
            }
            copied = span.end;
            at += 1;
        });
        written?;
        out.write_all(stored.get(copied..).unwrap_or_default().as_bytes())
    };
    writer.finish(
        store,
        SpillText::Pieces {
            len,
            write: &mut write,
        },
    )
}

/// Writes a spill whose text is `stored` as it is, with no payload to attach.
pub(crate) fn write_stored_spill(
    projector: &mut Projector<'_>,
    stored: &str,
    store: &mut dyn SpillStore,
) -> Result<Spill, SpillError> {
    let hidden = session_hidden(projector);
    write_spill_with(store, &hidden, |_| Cow::Borrowed(stored))
}

/// Writes a spill whose text `text_of` makes, given what writes each payload as an attachment
/// and returns its line.
fn write_spill_with<'t>(
    store: &mut dyn SpillStore,
    hidden: &HiddenUris,
    text_of: impl FnOnce(&mut Attach<'_>) -> Cow<'t, str>,
) -> Result<Spill, SpillError> {
    store.ready()?;
    let mut writer = SpillWriter::new(store)?;
    let text = text_of(&mut |media: &Media<'_>, shown: &str| {
        writer
            .attach(store, hidden, media)
            .unwrap_or_else(|| shown.to_owned())
    });
    writer.finish(store, SpillText::Whole(&text))
}

/// A spill's text, as [`SpillWriter::finish`] writes it.
enum SpillText<'s, 'w> {
    /// Made whole.
    Whole(&'s str),
    /// `len` bytes, which `write` writes a piece at a time, given the spill's attachments.
    Pieces {
        len: u64,
        write: &'w mut dyn FnMut(&SpillWriter, &mut dyn Write) -> std::io::Result<()>,
    },
}

/// A spill being written: its id, and each attachment put so far.
struct SpillWriter {
    id: SpillId,
    notice: SpillNotice,
    text_name: String,
    attached: Vec<Attached>,
    /// The payloads after the last file, for [`REST_FILE`]: a line each.
    rest: Vec<u8>,
    /// How many lines `rest` holds.
    rest_lines: usize,
    /// Where [`REST_FILE`] is, as a line names it.
    rest_place: String,
    /// Where each attachment's file is, for the spill to say.
    attachments: Vec<String>,
    /// The error that stopped the attachments, if one did: the spill then fails whole.
    failure: Option<SpillError>,
}

impl SpillWriter {
    fn new(store: &dyn SpillStore) -> Result<SpillWriter, SpillError> {
        let id = SpillId::random()?;
        let rest_name = attachment_rest_name(&id);
        Ok(SpillWriter {
            text_name: format!("{id}.txt"),
            id,
            notice: store.notice(),
            attached: Vec::new(),
            rest: Vec::new(),
            rest_lines: 0,
            rest_place: match store.notice() {
                SpillNotice::Path => store.place(&rest_name),
                SpillNotice::ReadResult => rest_name,
            },
            attachments: Vec::new(),
            failure: None,
        })
    }

    /// Writes `media` as the next attachment and returns its line; `None` once a write has
    /// failed, as every later one then is not tried. Past the store's
    /// [`SpillStore::attachment_files`] the payload joins [`REST_FILE`], written at the end.
    fn attach(
        &mut self,
        store: &mut dyn SpillStore,
        hidden: &HiddenUris,
        media: &Media<'_>,
    ) -> Option<String> {
        self.attach_decoded(store, hidden, media, None)
    }

    /// [`SpillWriter::attach`], given what `decode_standard` made of the payload's data when
    /// it was decoded already (`None`: it is decoded here).
    fn attach_decoded(
        &mut self,
        store: &mut dyn SpillStore,
        hidden: &HiddenUris,
        media: &Media<'_>,
        decoded: Option<Decoded>,
    ) -> Option<String> {
        if self.failure.is_some() {
            return None;
        }
        let decoded = decoded.unwrap_or_else(|| decode_standard(media.data.as_bytes()));
        if self.attached.len() >= store.attachment_files().min(MAX_ATTACHMENT_FILES) {
            let (encoded, attached) = rest_entry(hidden, media, decoded);
            self.rest.extend_from_slice(encoded.as_bytes());
            self.rest.push(b'\n');
            self.rest_lines += 1;
            return Some(self.rest_line(&attached, self.rest_lines - 1));
        }
        let (bytes, mut attached) = attachment_of(hidden, media, decoded);
        let name = attachment_name(&self.id, self.attached.len() + 1, attached.extension());
        match store.put(&name, &bytes) {
            Ok(path) => {
                attached.bytes = bytes.len() as u64;
                self.attached.push(attached);
                self.attachments.push(path);
                Some(self.line(self.attached.len() - 1))
            }
            Err(error) => {
                self.failure = Some(error);
                None
            }
        }
    }

    /// The line standing in the place of the payload on line `at` (from 0) of [`REST_FILE`].
    fn rest_line(&self, attached: &Attached, at: usize) -> String {
        attached.line(&format!("{}, line {}", self.rest_place, at + 1))
    }

    /// The store name of attachment `at` (from 0).
    fn name(&self, at: usize) -> String {
        attachment_name(&self.id, at + 1, self.attached[at].extension())
    }

    /// The line standing in the place of attachment `at` (from 0).
    fn line(&self, at: usize) -> String {
        match self.notice {
            SpillNotice::Path => self.attached[at].line(&self.attachments[at]),
            SpillNotice::ReadResult => self.attached[at].line(&self.name(at)),
        }
    }

    /// Writes the spill's text, then its manifest, and commits them; on failure, or when an
    /// attachment failed, every file named is removed and the error returned.
    fn finish(
        mut self,
        store: &mut dyn SpillStore,
        text: SpillText<'_, '_>,
    ) -> Result<Spill, SpillError> {
        let mut written_names = Vec::new();
        let written = match self.failure.take() {
            Some(error) => Err(error),
            None => self
                .put_rest(store, &mut written_names)
                .and_then(|()| self.put_text_and_manifest(store, text, &mut written_names)),
        };
        match written {
            Ok(path) => Ok(Spill {
                id: self.id,
                path,
                attachments: self.attachments,
                notice: self.notice,
            }),
            Err(error) => {
                let attachments = (0..self.attached.len()).map(|at| self.name(at));
                for name in attachments.chain(written_names) {
                    store.remove(&name);
                }
                Err(error)
            }
        }
    }

    /// Writes [`REST_FILE`] when a payload went past the last file; its name is added to
    /// `names`, for the caller to remove on failure.
    fn put_rest(
        &mut self,
        store: &mut dyn SpillStore,
        names: &mut Vec<String>,
    ) -> Result<(), SpillError> {
        if self.rest_lines == 0 {
            return Ok(());
        }
        let name = attachment_rest_name(&self.id);
        let rest = std::mem::take(&mut self.rest);
        let put = store.put(&name, &rest);
        names.push(name);
        put.map(drop)
    }

    /// Writes the text, then the manifest, and commits them; returns where the text is. Each
    /// name written is added to `names`, for the caller to remove on failure.
    fn put_text_and_manifest(
        &self,
        store: &mut dyn SpillStore,
        text: SpillText<'_, '_>,
        names: &mut Vec<String>,
    ) -> Result<String, SpillError> {
        let (path, len) = match text {
            SpillText::Whole(text) => (
                store.put(&self.text_name, text.as_bytes())?,
                text.len() as u64,
            ),
            SpillText::Pieces { len, write } => (
                store.put_with(&self.text_name, &mut |out| write(self, out))?,
                len,
            ),
        };
        names.push(self.text_name.clone());
        let conversation = store.conversation().to_owned();
        let manifest_name = self.id.manifest_name();
        store.put_with(&manifest_name, &mut |out| {
            let listed =
                self.attached
                    .iter()
                    .enumerate()
                    .map(|(at, attachment)| ManifestAttachment {
                        name: self.name(at),
                        line: self.line(at),
                        media_type: attachment.sniffed.map(|sniffed| sniffed.mime().to_owned()),
                    });
            write_manifest(out, &conversation, &self.text_name, listed, len)
        })?;
        names.push(manifest_name);
        store.commit().map(|()| path)
    }
}

/// The store name of a spill's `n`th attachment: `spill_<id>/<n>.<ext>`, in a folder of the
/// spill's own, which a local store writes whole and renames into place once.
fn attachment_name(id: &SpillId, n: usize, extension: &str) -> String {
    format!("{id}/{n}.{extension}")
}

/// Writes `text` alone as a spill, its manifest last, so `read_result` can read it: for a
/// stored copy that was never spilled and is now cleared from history. On failure nothing is
/// left.
pub fn write_text_spill(text: &str, store: &mut dyn SpillStore) -> Result<Spill, SpillError> {
    SpillWriter::new(store)?.finish(store, SpillText::Whole(text))
}

/// A payload past a spill's last file: its line in [`REST_FILE`], the base64 of what its own
/// file would have held, and what its line in the text says of it.
///
/// `decoded` is what [`decode_standard`] makes of the payload's data.
fn rest_entry(hidden: &HiddenUris, media: &Media<'_>, decoded: Decoded) -> (String, Attached) {
    let (bytes, mut attached) = attachment_of(hidden, media, decoded);
    attached.bytes = bytes.len() as u64;
    (STANDARD.encode(&bytes), attached)
}

/// The store name of a spill's [`REST_FILE`].
fn attachment_rest_name(id: &SpillId) -> String {
    format!("{id}/{REST_FILE}")
}

/// What [`decode_standard`] makes of a payload's data.
type Decoded = Result<Vec<u8>, base64::DecodeError>;

/// Payloads' data decoded on a second thread, in the order sent, started at the first one
/// sent. Without a second thread nothing is sent, and each payload is decoded where it is
/// written.
#[derive(Default)]
struct DecodeAhead<'d> {
    to_worker: Option<std::sync::mpsc::Sender<&'d str>>,
    from_worker: Option<std::sync::mpsc::Receiver<Decoded>>,
    /// Whether the thread could not be started: nothing more is tried.
    failed: bool,
}

impl<'d> DecodeAhead<'d> {
    /// Sends `data` to be decoded; false when it is not (no second thread).
    fn send<'scope, 'env>(
        &mut self,
        scope: &'scope std::thread::Scope<'scope, 'env>,
        data: &'d str,
    ) -> bool
    where
        'd: 'scope,
    {
        if self.to_worker.is_none() && !self.failed {
            let (to_worker, inbox) = std::sync::mpsc::channel::<&'d str>();
            let (outbox, from_worker) = std::sync::mpsc::channel();
            let worker = std::thread::Builder::new().spawn_scoped(scope, move || {
                for data in inbox {
                    if outbox.send(decode_standard(data.as_bytes())).is_err() {
                        break;
                    }
                }
            });
            match worker {
                Ok(_) => {
                    self.to_worker = Some(to_worker);
                    self.from_worker = Some(from_worker);
                }
                Err(_) => self.failed = true,
            }
        }
        self.to_worker
            .as_ref()
            .is_some_and(|to_worker| to_worker.send(data).is_ok())
    }

    /// The next payload sent, decoded; `None` if the thread is gone (the caller decodes it).
    fn next(&mut self) -> Option<Decoded> {
        self.from_worker.as_ref()?.recv().ok()
    }
}

/// A payload's bytes, and what a spill keeps of it besides its length. Sound base64 is decoded;
/// anything else is kept as the text the server sent, so nothing is lost. A payload that is
/// text (SVG, JSON, a text blob, data that is not base64) is a server's string and is redacted
/// as one; binary bytes are kept as they are.
///
/// `decoded` is what [`decode_standard`] makes of the payload's data.
fn attachment_of(hidden: &HiddenUris, media: &Media<'_>, decoded: Decoded) -> (Vec<u8>, Attached) {
    let (mut bytes, decoded) = match decoded {
        Ok(bytes) => (bytes, true),
        Err(_) => (media.data.as_bytes().to_vec(), false),
    };
    if let Ok(text) = std::str::from_utf8(&bytes)
        && let Cow::Owned(redacted) = hidden.redact(text)
    {
        bytes = redacted.into_bytes();
    }
    // The type its bytes are is one mcpl names, so only a type the server claimed is copied.
    let claimed = match (decoded, media.sniffed) {
        (true, None) => media.best_type().map(Box::from),
        _ => None,
    };
    let attached = Attached {
        sniffed: media.sniffed,
        claimed,
        decoded,
        bytes: 0,
    };
    (bytes, attached)
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
        // `Other`, none, and any type a later mcpl-classify names.
        _ => "bin",
    }
}

#[cfg(test)]
mod sync_tests {
    use super::*;

    #[test]
    fn a_small_spill_syncs_its_own_files_not_the_file_system() {
        // A `syncfs` waits for every process's writes on the file system; a spill of a text
        // and a few attachments must not.
        assert!(!syncs_file_system(1));
        assert!(!syncs_file_system(SYNC_EACH_UP_TO));
        assert_eq!(
            syncs_file_system(SYNC_EACH_UP_TO + 1),
            cfg!(target_os = "linux")
        );
    }

    #[test]
    fn the_docs_say_which_spills_sync_each_file() {
        let doc = include_str!("../../../docs/budget.md").replace("\n  ", " ");
        let claim = format!(
            "In a spill of up to {SYNC_EACH_UP_TO} files each file begins its writeback to disk as it is written"
        );
        assert!(doc.contains(&claim), "{claim}");
        assert!(doc.contains("a spill of more files is synced with one `syncfs`"));
    }

    #[test]
    fn a_file_written_with_early_writeback_holds_every_byte_and_begins_all_of_it() {
        let dir = std::env::temp_dir().join(format!("mcpl-early-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        // Pieces of an odd size cross each boundary where a writeback begins.
        let bytes: Vec<u8> = (0..(5 * EARLY_WRITEBACK_EVERY / 2))
            .map(|i| (i % 251) as u8)
            .collect();
        let path = dir.join("file");
        let mut file = EarlyWriteback::new(File::create(&path).unwrap(), true);
        for piece in bytes.chunks(7_001) {
            file.write_all(piece).unwrap();
        }
        // Two writebacks began, each once a mebibyte more was written; the rest waits.
        assert!(file.begun >= 2 * EARLY_WRITEBACK_EVERY, "{}", file.begun);
        assert!(
            file.begun < 2 * EARLY_WRITEBACK_EVERY + 7_001,
            "{}",
            file.begun
        );
        file.finish();
        assert_eq!(
            (file.written, file.begun),
            (bytes.len() as u64, bytes.len() as u64)
        );
        drop(file);
        assert_eq!(fs::read(&path).unwrap(), bytes);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_a_spill_synced_file_by_file_begins_each_file_s_writeback() {
        let dir = std::env::temp_dir().join(format!("mcpl-early-spill-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mut store = LocalSpillStore::new(&dir).unwrap();
        for n in 0..SYNC_EACH_UP_TO {
            assert!(store.early_writeback(), "file {n}");
            store.put(&format!("spill_1/{n}.txt"), b"x").unwrap();
        }
        // The next file makes a spill synced with one `syncfs` (on Linux).
        assert_eq!(store.early_writeback(), !cfg!(target_os = "linux"));
        store.commit().unwrap();
        assert!(store.early_writeback());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn files_a_failed_spill_removes_are_not_counted_for_the_next() {
        let dir = std::env::temp_dir().join(format!("mcpl-early-removed-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mut store = LocalSpillStore::new(&dir).unwrap();
        // A spill of more files than are synced one by one fails, and takes its files back.
        for n in 0..=SYNC_EACH_UP_TO {
            store.put(&format!("spill_1/{n}.txt"), b"x").unwrap();
        }
        store.put("spill_1.txt", b"x").unwrap();
        assert!(!store.early_writeback() || !cfg!(target_os = "linux"));
        for n in 0..=SYNC_EACH_UP_TO {
            store.remove(&format!("spill_1/{n}.txt"));
        }
        store.remove("spill_1.txt");
        // The next spill, with no commit between, begins its writeback early again.
        assert_eq!(store.uncommitted, 0);
        assert!(store.early_writeback());
        store.put("spill_2.txt", b"y").unwrap();
        store.remove("spill_2.txt");
        store.remove("spill_2.txt");
        assert_eq!(store.uncommitted, 0);
        let _ = fs::remove_dir_all(&dir);
    }
}

#[cfg(test)]
mod file_cap_tests {
    use super::*;

    #[test]
    fn the_docs_name_the_most_files_a_spill_writes() {
        let doc = include_str!("../../../docs/budget.md").replace("\n  ", " ");
        let most = MAX_ATTACHMENT_FILES
            .to_string()
            .as_bytes()
            .rchunks(3)
            .rev()
            .map(|digits| std::str::from_utf8(digits).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",");
        let claim = format!("A spill writes at most `MAX_ATTACHMENT_FILES` ({most}) payloads");
        assert!(doc.contains(&claim), "{claim}");
        let rest = format!("one more file, `<id>/{REST_FILE}`");
        assert!(doc.contains(&rest), "{rest}");
        let cli = include_str!("../../../docs/cli.md").replace("\n  ", " ");
        let claim = format!("A spill writes at most {most} files");
        assert!(cli.contains(&claim), "{claim}");
        let rest = format!("`<spill-dir>/spill_<id>/{REST_FILE}`");
        assert!(cli.contains(&rest), "{rest}");
    }

    #[test]
    fn a_store_asks_for_fewer_files_never_more() {
        let dir = std::env::temp_dir().join(format!("mcpl-file-cap-{}", std::process::id()));
        let store = LocalSpillStore::new(&dir).unwrap();
        assert_eq!(store.attachment_files(), MAX_ATTACHMENT_FILES);
        let fewer = store.with_attachment_files(3);
        assert_eq!(fewer.attachment_files(), 3);
        let more = fewer.with_attachment_files(MAX_ATTACHMENT_FILES + 1);
        assert_eq!(more.attachment_files(), MAX_ATTACHMENT_FILES);
        let _ = fs::remove_dir_all(&dir);
    }
}

#[cfg(test)]
mod manifest_tests {
    use super::*;
    use proptest::prelude::*;

    fn string() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            "[a-z0-9_/.]{0,40}",
            Just("é\"\\\n\u{7f}".to_owned())
        ]
    }

    proptest! {
        /// The manifest written an attachment at a time is the JSON `serde_json` writes for the
        /// whole manifest, byte for byte, and reads back as it.
        #[test]
        fn a_manifest_written_in_pieces_is_the_whole_manifest_s_json(
            conversation in string(),
            text in string(),
            attachments in prop::collection::vec(
                (string(), string(), prop::option::of(string())),
                0..6,
            ),
            bytes in any::<u64>(),
        ) {
            let attachments: Vec<ManifestAttachment> = attachments
                .into_iter()
                .map(|(name, line, media_type)| ManifestAttachment { name, line, media_type })
                .collect();
            let mut json = Vec::new();
            write_manifest(&mut json, &conversation, &text, attachments.iter().cloned(), bytes)
                .unwrap();
            let whole = Manifest { conversation, text, attachments, bytes };
            prop_assert_eq!(&json, &serde_json::to_vec(&whole).unwrap());
            prop_assert_eq!(serde_json::from_slice::<Manifest>(&json).unwrap(), whole);
        }
    }
}
