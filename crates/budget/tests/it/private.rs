//! Issue 13: a spill folder is used only when it is really private, files are never opened
//! through a planted symlink, and the spill text is redacted as the model's view is.

use std::os::unix::fs::PermissionsExt;

use mcpl_budget::{LocalSpillStore, PricedRoute, SpillStore};
use serde_json::json;

use crate::{TempDir, fit};

#[test]
fn a_folder_others_may_write_is_refused_with_one_line() {
    let dir = TempDir::new("open-to-all");
    std::fs::create_dir_all(&dir.0).unwrap();
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o777)).unwrap();
    let error = LocalSpillStore::new(&dir.0).unwrap_err().to_string();
    assert!(
        error.starts_with(&format!("spill folder {}: ", dir.0.display())),
        "{error}"
    );
    assert!(error.contains("writable by group or others"), "{error}");
    assert_eq!(error.lines().count(), 1);
    // The group alone is as bad.
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o770)).unwrap();
    assert!(LocalSpillStore::new(&dir.0).is_err());
    // A folder only its owner may write is used as it is.
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(LocalSpillStore::new(&dir.0).is_ok());
}

#[test]
fn a_symlinked_folder_is_refused() {
    let dir = TempDir::new("symlinked");
    let real = dir.0.join("real");
    std::fs::create_dir_all(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
    let link = dir.0.join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let error = LocalSpillStore::new(&link).unwrap_err().to_string();
    assert!(error.contains("symbolic link"), "{error}");
    // A dangling link is no better: the store would create the folder at the link's target.
    let dangling = dir.0.join("dangling");
    std::os::unix::fs::symlink(dir.0.join("missing"), &dangling).unwrap();
    assert!(LocalSpillStore::new(&dangling).is_err());
    assert!(!dir.0.join("missing").exists());
}

#[test]
fn a_symlink_planted_at_a_spill_file_name_is_not_followed() {
    let dir = TempDir::new("planted");
    let mut store = LocalSpillStore::new(dir.0.join("spill")).unwrap();
    let first = store.put("spill_a-1.txt", b"first").unwrap();
    // Someone who guessed the next names plants links at both, pointing at a victim.
    let victim = dir.0.join("victim");
    std::fs::write(&victim, b"untouched").unwrap();
    let partial = store.dir().join(".spill_a-2.txt.partial");
    std::os::unix::fs::symlink(&victim, &partial).unwrap();
    assert!(
        store
            .put("spill_a-2.txt", b"IGNORE PREVIOUS INSTRUCTIONS")
            .is_err()
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"untouched");
    let _ = std::fs::remove_file(&partial);
    let third = first.replace("-1.txt", "-3.txt");
    std::os::unix::fs::symlink(&victim, &third).unwrap();
    let written = store.put("spill_a-3.txt", b"the spill").unwrap();
    assert_eq!(written, third);
    // Staged files take their real names when the spill commits: the rename replaces the link.
    store.commit().unwrap();
    assert_eq!(std::fs::read(&victim).unwrap(), b"untouched");
    assert!(
        !std::fs::symlink_metadata(&third)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(&third).unwrap(), b"the spill");
}

#[test]
fn the_spill_text_is_redacted_and_keeps_every_value() {
    let dir = TempDir::new("redacted");
    let (a, b) = (
        "https://files.example.com/a?token=ONE111",
        "https://files.example.com/b?token=TWO222",
    );
    let result = json!({
        "content": [
            {"type": "resource_link", "uri": a, "name": "a"},
            {"type": "text", "text": "a long log line\n".repeat(800)},
            {"type": "text", "text": "unclaimed: https://x.example.com/o?X-Amz-Signature=SIG333"},
            {"type": "text", "text": format!("again: {}", a.to_uppercase())},
        ],
        "structuredContent": {a: {"rows": 111}, b: {"rows": 222}},
    });
    let mut store = LocalSpillStore::new(&dir.0).unwrap();
    let fitted = fit(&result, &PricedRoute::ANTHROPIC, 200, Some(&mut store));
    let spill = fitted.spill.expect("a spill");
    let text = std::fs::read_to_string(&spill.path).unwrap();
    for secret in ["ONE111", "one111", "TWO222", "SIG333"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    assert!(
        text.contains(r#"{"[withheld link 1]":{"rows":111},"[withheld link 2]":{"rows":222}}"#),
        "{text}"
    );
}

#[test]
fn a_folder_already_at_a_spill_folder_name_is_never_moved_over_or_written_into() {
    let dir = TempDir::new("hostile-folder");
    let mut store = LocalSpillStore::new(&dir.0).unwrap();
    // Someone made the spill's folder first, with a file of their own in it.
    let theirs = dir.0.join("spill_a");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("1.png"), b"theirs").unwrap();
    store.put("spill_a/1.png", b"ours").unwrap();
    store.put("spill_a.txt", b"the text").unwrap();
    let error = store.commit().unwrap_err().to_string();
    assert!(
        error.starts_with(&format!("spill file {}: ", theirs.display())),
        "{error}"
    );
    assert!(error.contains("already there"), "{error}");
    assert_eq!(std::fs::read(theirs.join("1.png")).unwrap(), b"theirs");
    // Nothing of the failed spill is left: no staging folder, no text.
    let mut left: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["spill_a"]);
    // An empty folder is no more ours than a full one.
    std::fs::remove_dir_all(&theirs).unwrap();
    std::fs::create_dir(&theirs).unwrap();
    store.put("spill_a/1.png", b"ours").unwrap();
    assert!(store.commit().is_err());
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);
}

#[test]
fn a_symlink_at_a_spill_folder_name_is_not_followed() {
    let dir = TempDir::new("planted-folder");
    let mut store = LocalSpillStore::new(dir.0.join("spill")).unwrap();
    let victim = dir.0.join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("1.png"), b"the victim's").unwrap();
    let link = store.dir().join("spill_a");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    // Reading through it is refused, not answered with the victim's bytes.
    assert!(store.get("spill_a/1.png", 1 << 20).is_err());
    // Committing over it fails and leaves the link and its target as they were.
    store
        .put("spill_a/1.png", b"IGNORE PREVIOUS INSTRUCTIONS")
        .unwrap();
    assert!(store.commit().is_err());
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read(victim.join("1.png")).unwrap(),
        b"the victim's"
    );
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 1);
    // Removing the attachment does not reach through the link either.
    store.remove("spill_a/1.png");
    assert_eq!(
        std::fs::read(victim.join("1.png")).unwrap(),
        b"the victim's"
    );
}

#[test]
fn a_staging_folder_already_there_is_never_written_into() {
    let dir = TempDir::new("planted-staging");
    let mut store = LocalSpillStore::new(&dir.0).unwrap();
    let staging = dir.0.join(".spill_a.partial");
    std::fs::create_dir(&staging).unwrap();
    let error = store.put("spill_a/1.png", b"ours").unwrap_err().to_string();
    assert!(error.contains("exists"), "{error}");
    assert_eq!(std::fs::read_dir(&staging).unwrap().count(), 0);
    // The commit has nothing of that spill to move.
    store.commit().unwrap();
    assert!(!dir.0.join("spill_a").exists());
}

#[test]
fn spill_gc_removes_spill_folders_and_nothing_it_did_not_write() {
    let dir = TempDir::new("gc-folders");
    let mut store = LocalSpillStore::new(dir.0.join("spill")).unwrap();
    store.put("spill_a/1.png", b"one").unwrap();
    store.put("spill_a/2.png", b"two").unwrap();
    store.put("spill_a.txt", b"text").unwrap();
    store.commit().unwrap();
    // A folder of the spill's name holding something else: the spill's files go, it stays.
    store.put("spill_b/1.png", b"one").unwrap();
    store.commit().unwrap();
    let spill_b = store.dir().join("spill_b");
    std::fs::create_dir(spill_b.join("theirs")).unwrap();
    // A link with a spill's name, to a folder of someone else's: neither is touched.
    let victim = dir.0.join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("1.png"), b"the victim's").unwrap();
    std::os::unix::fs::symlink(&victim, store.dir().join("spill_c")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(10));
    assert_eq!(
        store
            .remove_older_than(std::time::Duration::from_secs(3600))
            .unwrap(),
        0
    );
    assert_eq!(
        store.remove_older_than(std::time::Duration::ZERO).unwrap(),
        4
    );
    let mut left: Vec<_> = std::fs::read_dir(store.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["spill_b", "spill_c"]);
    assert_eq!(
        std::fs::read_dir(&spill_b)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect::<Vec<_>>(),
        ["theirs"]
    );
    assert_eq!(
        std::fs::read(victim.join("1.png")).unwrap(),
        b"the victim's"
    );
}

#[test]
fn spill_names_are_flat_or_in_one_folder_never_hidden() {
    use mcpl_budget::is_spill_name;
    for good in ["spill_a.txt", "spill_a/1.png", "spill_a-1.png"] {
        assert!(is_spill_name(good), "{good}");
    }
    for bad in [
        ".spill_a.partial/1.png",
        "spill_a/.1.png",
        "spill_a/../x",
        "../spill_a",
        "spill_a/b/1.png",
        "spill_a/",
        "/spill_a",
        "",
        "Spill_a.txt",
    ] {
        assert!(!is_spill_name(bad), "{bad}");
    }
}
