//! Spill failures: nothing half written remains, the original content is kept, and a
//! diagnostic says why.

use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_budget::{LocalSpillStore, PricedRoute, SpillError, SpillStore};
use serde_json::{Value, json};

use crate::{TempDir, fit};

/// A result well over a small budget, with two payloads to attach.
fn big_result(payload_bytes: usize) -> Value {
    json!({"content": [
        {"type": "text", "text": "first line of a long log\n".repeat(400)},
        {"type": "resource", "resource": {"uri": "file:///x.bin", "mimeType": "application/octet-stream",
            "blob": STANDARD.encode(vec![7u8; payload_bytes])}},
        {"type": "image", "mimeType": "image/png", "data": STANDARD.encode(mcpl_testkit::fixture("image.png"))},
        {"type": "text", "text": "last line of a long log\n".repeat(400)},
    ]})
}

/// A store that writes real files, then fails on its `fail_at`th write, as a disk filling up
/// part-way through a spill would.
struct FailingStore {
    inner: LocalSpillStore,
    writes: usize,
    fail_at: usize,
}

impl SpillStore for FailingStore {
    fn put(&mut self, extension: &str, bytes: &[u8]) -> Result<String, SpillError> {
        self.writes += 1;
        if self.writes == self.fail_at {
            return Err(SpillError::Write {
                path: format!("write {}", self.writes),
                error: std::io::Error::new(
                    std::io::ErrorKind::StorageFull,
                    "no space left on device",
                ),
            });
        }
        self.inner.put(extension, bytes)
    }

    fn remove(&mut self, path: &str) {
        self.inner.remove(path);
    }

    fn commit(&mut self) -> Result<(), SpillError> {
        self.inner.commit()
    }
}

fn files_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A spill that could not be written does not lift the budget: the result is cut all the same,
/// its notice says the whole could not be kept and why, and so does a diagnostic.
fn assert_cut_unsaved(fitted: &mcpl_budget::Fitted<'_>, why: &str) {
    assert!(fitted.cut);
    assert!(fitted.spill.is_none());
    assert!(fitted.price.is_some_and(|p| p <= 200), "{:?}", fitted.price);
    assert!(fitted.stored_price <= 200, "{}", fitted.stored_price);
    assert!(
        fitted
            .copies
            .stored
            .contains("; the whole could not be kept: "),
        "{}",
        fitted.copies.stored
    );
    assert!(
        fitted.copies.stored.contains(why),
        "{}",
        fitted.copies.stored
    );
    let diagnostic = fitted.diagnostics.join(" ");
    assert!(
        diagnostic.contains("over its budget of 200"),
        "{diagnostic}"
    );
    assert!(diagnostic.contains("could not be written"), "{diagnostic}");
    assert!(diagnostic.contains(why), "{diagnostic}");
    assert!(diagnostic.contains("the whole is not kept"), "{diagnostic}");
}

#[test]
fn a_store_failing_mid_write_leaves_nothing_and_the_budget_holds() {
    let result = big_result(1000);
    // Fail on the first attachment, the second, and the spill text itself.
    for fail_at in 1..=3 {
        let dir = TempDir::new("failing-store");
        let mut store = FailingStore {
            inner: LocalSpillStore::new(&dir.0).unwrap(),
            writes: 0,
            fail_at,
        };
        let fitted = fit(&result, &PricedRoute::ANTHROPIC, 200, Some(&mut store));
        assert_cut_unsaved(&fitted, "no space left on device");
        assert_eq!(files_in(&dir.0), Vec::<String>::new(), "fail at {fail_at}");
    }
}

#[test]
fn a_spill_folder_that_cannot_be_a_folder_is_a_clear_error() {
    let dir = TempDir::new("not-a-folder");
    std::fs::create_dir_all(&dir.0).unwrap();
    let file = dir.0.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let error = LocalSpillStore::new(file.join("spill")).unwrap_err();
    assert!(error.to_string().starts_with("spill folder "), "{error}");
}

/// Mounts a tmpfs with `options` at a fresh folder, when this process may (CI runs as root);
/// returns `None`, saying so, when it may not.
fn mount_tmpfs(name: &str, options: &str) -> Option<Mounted> {
    let dir = TempDir::new(name);
    std::fs::create_dir_all(&dir.0).unwrap();
    let status = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            &format!("{options},mode=0700"),
            "tmpfs",
        ])
        .arg(&dir.0)
        .status();
    match status {
        Ok(s) if s.success() => Some(Mounted(dir)),
        _ => {
            eprintln!("skipped: cannot mount a tmpfs here (needs root)");
            None
        }
    }
}

struct Mounted(TempDir);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0.0).status();
    }
}

#[test]
fn a_full_file_system_leaves_no_half_file() {
    let Some(mount) = mount_tmpfs("full-fs", "size=64k") else {
        return;
    };
    let result = big_result(200_000);
    let mut store = LocalSpillStore::new(&mount.0.0).unwrap();
    let fitted = fit(&result, &PricedRoute::ANTHROPIC, 200, Some(&mut store));
    assert_cut_unsaved(&fitted, "No space left on device");
    assert_eq!(files_in(&mount.0.0), Vec::<String>::new());
}

#[test]
fn a_read_only_file_system_is_refused_and_the_budget_holds() {
    let Some(mount) = mount_tmpfs("read-only", "ro,size=64k") else {
        return;
    };
    let result = big_result(1000);
    let mut store = LocalSpillStore::new(&mount.0.0).unwrap();
    let fitted = fit(&result, &PricedRoute::ANTHROPIC, 200, Some(&mut store));
    assert_cut_unsaved(&fitted, "Read-only file system");
    assert_eq!(files_in(&mount.0.0), Vec::<String>::new());
}

#[test]
fn spill_files_are_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("owner-only");
    let result = big_result(1000);
    let mut store = LocalSpillStore::new(&dir.0).unwrap();
    let fitted = fit(&result, &PricedRoute::ANTHROPIC, 200, Some(&mut store));
    let spill = fitted.spill.expect("a spill");
    for path in spill.attachments.iter().chain(std::iter::once(&spill.path)) {
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{path}");
        // Host-made names only: the spill's own, or a number in the spill's folder.
        let path = Path::new(path);
        let name = path.file_name().unwrap().to_str().unwrap();
        let folder = path.parent().unwrap();
        assert!(
            (folder == dir.0 && name.starts_with("spill_"))
                || (folder == dir.0.join(spill.id.as_str())
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.')),
            "{}",
            path.display()
        );
    }
    // The spill's folder is owner-only too.
    let mode = std::fs::metadata(dir.0.join(spill.id.as_str()))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o700);
    let mode = std::fs::metadata(&dir.0).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

#[test]
fn a_spill_leaves_only_its_files_under_their_real_names() {
    let dir = TempDir::new("no-temporaries");
    let result = big_result(1000);
    let mut store = LocalSpillStore::new(&dir.0).unwrap();
    let fitted = fit(&result, &PricedRoute::ANTHROPIC, 200, Some(&mut store));
    let spill = fitted.spill.expect("a spill");
    let mut expected = vec![
        spill.id.to_string(),
        spill.id.manifest_name(),
        format!("{}.txt", spill.id),
    ];
    expected.sort();
    let mut found = files_in(&dir.0);
    found.sort();
    assert_eq!(found, expected, "no temporary or partial file is left");
    // The attachments are in the spill's folder, under their numbers.
    let mut attachments = files_in(&dir.0.join(spill.id.as_str()));
    attachments.sort();
    assert_eq!(attachments, ["1.bin", "2.png"]);
}

#[test]
fn a_put_file_is_under_its_real_name_only_once_committed() {
    let dir = TempDir::new("staged");
    let mut store = LocalSpillStore::new(&dir.0).unwrap();
    let first = store.put("spill_a-1.bin", b"first").unwrap();
    let second = store.put("spill_a.txt", b"second").unwrap();
    assert!(!Path::new(&first).exists(), "{first} before the commit");
    assert!(!Path::new(&second).exists(), "{second} before the commit");
    store.commit().unwrap();
    assert_eq!(std::fs::read(&first).unwrap(), b"first");
    assert_eq!(std::fs::read(&second).unwrap(), b"second");
    let mut found = files_in(&dir.0);
    found.sort();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found.iter().all(|name| name.starts_with("spill_a")),
        "{found:?}"
    );
}

#[test]
fn a_staged_file_removed_before_the_commit_leaves_nothing() {
    let dir = TempDir::new("staged-removed");
    let mut store = LocalSpillStore::new(&dir.0).unwrap();
    store.put("spill_a-1.bin", b"bytes").unwrap();
    store.remove("spill_a-1.bin");
    store.commit().unwrap();
    assert_eq!(files_in(&dir.0), Vec::<String>::new());
}
