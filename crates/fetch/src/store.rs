//! The fetcher's folder: payloads written under a temporary name, renamed into place whole or
//! removed, so no partial payload is ever left under a real name or at all.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Makes the folder owner-only if missing; an existing one must be private (see
/// [`mcpl_budget::private_dir`]).
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    mcpl_budget::private_dir(dir)
}

/// A payload being written: removed on drop unless [`Partial::persist`] renamed it into place.
#[derive(Debug)]
pub(crate) struct Partial {
    path: PathBuf,
    file: Option<io::BufWriter<File>>,
}

impl Partial {
    /// A new owner-only (0600) file named `.<stem>.<nonce>.partial` in `dir`, created new, so
    /// never opened through a symbolic link planted at its name.
    pub(crate) fn create(dir: &Path, stem: &str) -> io::Result<Partial> {
        let path = dir.join(format!(".{stem}.{}.partial", nonce()));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let file = options.open(&path)?;
        Ok(Partial {
            path,
            file: Some(io::BufWriter::with_capacity(256 * 1024, file)),
        })
    }

    /// Appends bytes.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        match &mut self.file {
            Some(file) => file.write_all(bytes),
            None => Err(io::Error::other("the payload file is already closed")),
        }
    }

    /// Flushes the file and renames it to `path`, replacing any file of that name.
    pub(crate) fn persist(mut self, path: &Path) -> io::Result<()> {
        let Some(file) = self.file.take() else {
            return Err(io::Error::other("the payload file is already closed"));
        };
        file.into_inner().map_err(io::IntoInnerError::into_error)?;
        fs::rename(&self.path, path)
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        // Persisting renamed it away; otherwise this is a failed fetch's partial payload.
        self.file.take();
        let _ = fs::remove_file(&self.path);
    }
}

/// Eight hex digits no two partial files of one process share.
fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{:08x}", hasher.finish() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_partial_leaves_nothing_and_a_persisted_one_is_whole() {
        let dir = std::env::temp_dir().join(format!("mcpl-store-test-{}", std::process::id()));
        create_private_dir(&dir).unwrap();
        let mut dropped = Partial::create(&dir, "ref_1_aaaa").unwrap();
        dropped.write(b"half").unwrap();
        drop(dropped);
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
        let mut kept = Partial::create(&dir, "ref_2_aaaa").unwrap();
        kept.write(b"whole").unwrap();
        kept.persist(&dir.join("ref_2_aaaa.bin")).unwrap();
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["ref_2_aaaa.bin"]);
        assert_eq!(fs::read(dir.join("ref_2_aaaa.bin")).unwrap(), b"whole");
        fs::remove_dir_all(&dir).unwrap();
    }
}
