//! Issue 13: the fetcher's folder is used only when it is really private.

use std::os::unix::fs::PermissionsExt;

use mcpl_fetch::Fetcher;

fn fresh(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpl-fetch-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn a_folder_others_may_write_or_a_symlink_is_refused() {
    let dir = fresh("open-to-all");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let error = Fetcher::new(&dir).unwrap_err().to_string();
    assert!(error.contains("writable by group or others"), "{error}");
    assert_eq!(error.lines().count(), 1);

    let real = dir.join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let error = Fetcher::new(&link).unwrap_err().to_string();
    assert!(error.contains("symbolic link"), "{error}");
    assert!(Fetcher::new(&real).is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}
