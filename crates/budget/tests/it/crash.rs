//! Crash safety of the local store (decision 0080): a spill's attachments are written into a
//! hidden folder of its own and renamed into place once, so a writer that dies or a disk that
//! fills part-way leaves no spill and no half file under a real name; readers never see what a
//! crash left, and the retention recipe removes it.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_budget::{LocalSpillStore, PricedRoute, SPILL_WRITEBACK_EVERY, SpillError, SpillStore};
use serde_json::{Value, json};

use crate::{TempDir, fit};

/// A result over any small budget with `images` PNGs, each different.
fn result_with_images(images: usize) -> Value {
    let png = mcpl_testkit::fixture("image.png");
    let mut content = vec![json!({"type": "text", "text": "a long log line\n".repeat(400)})];
    content.extend((0..images).map(|n| {
        let mut bytes = png.clone();
        bytes.extend_from_slice(&(n as u32).to_be_bytes());
        json!({"type": "image", "mimeType": "image/png", "data": STANDARD.encode(bytes)})
    }));
    json!({ "content": content })
}

/// A store whose writer dies at its `dies_at`th write: that write fails and nothing after it
/// runs, not even the removal of what was written (a dead process cleans nothing up).
struct DyingStore {
    inner: LocalSpillStore,
    writes: usize,
    dies_at: usize,
    dead: bool,
}

impl SpillStore for DyingStore {
    fn put(&mut self, name: &str, bytes: &[u8]) -> Result<String, SpillError> {
        self.writes += 1;
        if self.writes >= self.dies_at {
            self.dead = true;
        }
        if self.dead {
            return Err(SpillError::Write {
                path: name.to_owned(),
                error: std::io::Error::other("the writer died"),
            });
        }
        self.inner.put(name, bytes)
    }

    fn remove(&mut self, _name: &str) {}

    fn commit(&mut self) -> Result<(), SpillError> {
        if self.dead {
            return Ok(());
        }
        self.inner.commit()
    }
}

/// Every entry in `dir`, and in each folder in it, as `name` or `folder/name`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        if entry.file_type().unwrap().is_dir() {
            for inner in std::fs::read_dir(entry.path()).unwrap() {
                let inner = inner.unwrap().file_name().into_string().unwrap();
                found.push(format!("{name}/{inner}"));
            }
        }
        found.push(name);
    }
    found.sort();
    found
}

#[test]
fn a_writer_dying_part_way_shows_no_spill_and_spill_gc_removes_what_it_left() {
    const IMAGES: usize = 40;
    let result = result_with_images(IMAGES);
    // Dies after some attachments, at the text, and at the manifest.
    for dies_at in [1, 25, IMAGES + 1, IMAGES + 2] {
        let dir = TempDir::new("dying-writer");
        let mut store = DyingStore {
            inner: LocalSpillStore::new(&dir.0).unwrap(),
            writes: 0,
            dies_at,
            dead: false,
        };
        let fitted = fit(&result, &PricedRoute::ANTHROPIC, 200, Some(&mut store));
        assert!(fitted.spill.is_none(), "dies at {dies_at}");
        let left = entries(&dir.0);
        // Nothing under a real name: only the hidden staging folder and temporaries.
        assert!(
            left.iter().all(|name| name.starts_with(".spill_")),
            "dies at {dies_at}: {left:?}"
        );
        let written = dies_at - 1;
        let staged_attachments = written.min(IMAGES);
        assert_eq!(
            left.iter()
                .filter(|name| name.contains(".partial/"))
                .count(),
            staged_attachments,
            "dies at {dies_at}: {left:?}"
        );
        let mut store = store.inner;
        if let Some(folder) = left.iter().find(|name| !name.contains('/')) {
            // The id the dead writer used: nothing reads it back.
            let id = folder
                .trim_start_matches('.')
                .trim_end_matches(".partial")
                .trim_end_matches(".txt");
            let route = PricedRoute::ANTHROPIC;
            let pricer = mcpl_budget::Pricer::new(&mcpl_budget::Bound, &route);
            let error = mcpl_budget::read_back(&mut store, id, 0, 10_000, pricer).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "read_result: there is no spill {id} (it was never written, or it has expired)"
                )
            );
            assert!(store.get(&format!("{id}/1.png"), 1 << 20).is_err());
            assert!(store.get(&format!(".{id}.partial/1.png"), 1 << 20).is_err());
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        let removed = store.remove_older_than(std::time::Duration::ZERO).unwrap();
        assert_eq!(removed as usize, written, "dies at {dies_at}");
        assert_eq!(entries(&dir.0), Vec::<String>::new(), "dies at {dies_at}");
    }
}

/// A store that writes real files, then fails its `fail_at`th write, as a disk filling up
/// part-way through would; the spill then removes what it wrote.
struct FillingStore {
    inner: LocalSpillStore,
    writes: usize,
    fail_at: usize,
}

impl SpillStore for FillingStore {
    fn put(&mut self, name: &str, bytes: &[u8]) -> Result<String, SpillError> {
        self.writes += 1;
        if self.writes == self.fail_at {
            return Err(SpillError::Write {
                path: name.to_owned(),
                error: std::io::Error::new(std::io::ErrorKind::StorageFull, "disk full"),
            });
        }
        self.inner.put(name, bytes)
    }

    fn remove(&mut self, name: &str) {
        self.inner.remove(name);
    }

    fn commit(&mut self) -> Result<(), SpillError> {
        self.inner.commit()
    }
}

#[test]
fn a_disk_filling_after_many_attachments_leaves_nothing_at_all() {
    const IMAGES: usize = 40;
    let result = result_with_images(IMAGES);
    for fail_at in [2, 30, IMAGES + 1, IMAGES + 2] {
        let dir = TempDir::new("filling-disk");
        let mut store = FillingStore {
            inner: LocalSpillStore::new(&dir.0).unwrap(),
            writes: 0,
            fail_at,
        };
        let fitted = fit(&result, &PricedRoute::ANTHROPIC, 200, Some(&mut store));
        assert!(fitted.spill.is_none());
        assert!(fitted.diagnostics.join(" ").contains("disk full"));
        assert_eq!(entries(&dir.0), Vec::<String>::new(), "fail at {fail_at}");
    }
}

/// Past the point where the store begins writing back in the background, a spill is still
/// whole when it succeeds, and nothing at all when the disk fills after that point.
#[test]
fn a_spill_past_the_background_writeback_is_whole_or_nothing() {
    let images = SPILL_WRITEBACK_EVERY + 40;
    let result = result_with_images(images);
    let dir = TempDir::new("filling-after-writeback");
    let mut store = FillingStore {
        inner: LocalSpillStore::new(&dir.0).unwrap(),
        writes: 0,
        fail_at: SPILL_WRITEBACK_EVERY + 20,
    };
    let fitted = fit(&result, &PricedRoute::ANTHROPIC, 200, Some(&mut store));
    assert!(fitted.spill.is_none());
    assert_eq!(entries(&dir.0), Vec::<String>::new());
    let dir = TempDir::new("whole-after-writeback");
    let mut store = LocalSpillStore::new(&dir.0).unwrap();
    let spill = fit(&result, &PricedRoute::ANTHROPIC, 200, Some(&mut store))
        .spill
        .expect("a spill");
    assert_eq!(spill.attachments.len(), images);
    assert_eq!(entries(&dir.0).len(), images + 3);
    for (n, path) in spill.attachments.iter().enumerate() {
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(bytes[bytes.len() - 4..], (n as u32).to_be_bytes());
    }
}

#[test]
fn a_spill_is_its_text_its_manifest_and_one_folder_of_attachments() {
    let dir = TempDir::new("one-folder");
    let result = result_with_images(3);
    let mut store = LocalSpillStore::new(&dir.0).unwrap();
    let spill = fit(&result, &PricedRoute::ANTHROPIC, 200, Some(&mut store))
        .spill
        .expect("a spill");
    let id = spill.id.as_str();
    assert_eq!(
        entries(&dir.0),
        [
            id.to_owned(),
            format!("{id}.json"),
            format!("{id}.txt"),
            format!("{id}/1.png"),
            format!("{id}/2.png"),
            format!("{id}/3.png"),
        ]
    );
    let folder = dir.0.join(id);
    assert_eq!(
        spill.attachments,
        (1..=3)
            .map(|n| folder.join(format!("{n}.png")).display().to_string())
            .collect::<Vec<_>>()
    );
    for (n, path) in spill.attachments.iter().enumerate() {
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(bytes[bytes.len() - 4..], (n as u32).to_be_bytes());
    }
    let text = std::fs::read_to_string(&spill.path).unwrap();
    assert!(
        text.contains(&format!(
            "[attachment: {}/1.png (image/png, ",
            folder.display()
        )),
        "{text}"
    );
}
