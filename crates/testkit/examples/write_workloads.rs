//! Writes the three standard workloads into a folder, one `<name>.json` file each, for recipes
//! that feed them to the `mcpl` binary (`cargo xtask memory`).
//!
//! Usage: `cargo run --release -p mcpl-testkit --example write_workloads -- DIR`

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: write_workloads DIR");
        return ExitCode::FAILURE;
    };
    if let Err(error) = std::fs::create_dir_all(&dir) {
        eprintln!("{}: {error}", dir.display());
        return ExitCode::FAILURE;
    }
    for workload in mcpl_testkit::workloads() {
        let path = dir.join(format!("{}.json", workload.name));
        if let Err(error) = std::fs::write(&path, &workload.bytes) {
            eprintln!("{}: {error}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
