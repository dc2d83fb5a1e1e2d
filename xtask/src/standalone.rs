//! The repository stands alone: the README's two commands, read mechanically so `.ci/run` can
//! run them exactly as written in a clone with nothing beside it, and a check that no tracked
//! file names the design folder that once sat beside the repository.

use std::path::Path;

/// The heading whose first fenced block holds the README's commands.
const HEADING: &str = "## Two commands";

/// `cargo xtask readme-commands`: the commands under the README's "Two commands" heading, one a
/// line, exactly as written there.
pub(crate) fn print_readme_commands(root: &Path) -> Result<(), String> {
    let path = root.join("README.md");
    let readme =
        std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))?;
    for command in readme_commands(&readme)? {
        println!("{command}");
    }
    Ok(())
}

/// The non-blank lines of the first fenced block under [`HEADING`], before the next heading.
/// Exactly two, or an error saying what is missing.
pub(crate) fn readme_commands(readme: &str) -> Result<Vec<String>, String> {
    let mut lines = readme.lines();
    lines
        .by_ref()
        .find(|line| line.trim_end() == HEADING)
        .ok_or_else(|| format!("README.md has no `{HEADING}` heading"))?;
    lines
        .by_ref()
        .take_while(|line| !line.starts_with("## "))
        .find(|line| line.starts_with("```"))
        .ok_or_else(|| format!("README.md has no fenced block under `{HEADING}`"))?;
    let mut commands = Vec::new();
    let mut closed = false;
    for line in lines {
        if line.starts_with("```") {
            closed = true;
            break;
        }
        if !line.trim().is_empty() {
            commands.push(line.to_owned());
        }
    }
    if !closed {
        return Err(format!(
            "README.md's fenced block under `{HEADING}` is never closed"
        ));
    }
    if commands.len() != 2 {
        return Err(format!(
            "README.md's fenced block under `{HEADING}` holds {} commands, not two",
            commands.len()
        ));
    }
    Ok(commands)
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    /// The spellings that name the design folder: its relative path, and its sub-folders however
    /// they are reached. Built at run time so this file does not name them itself.
    fn forbidden() -> Vec<String> {
        let folder = "shared";
        let mut names = vec![format!("../{folder}")];
        for sub in ["spec", "conformance", "perf", "reference"] {
            names.push(format!("{folder}/{sub}"));
        }
        names
    }

    /// Each `line: text` of `text` that names the design folder.
    fn naming_lines(text: &str) -> Vec<String> {
        let names = forbidden();
        text.lines()
            .enumerate()
            .filter(|(_, line)| names.iter().any(|name| line.contains(name.as_str())))
            .map(|(i, line)| format!("{}: {}", i + 1, line.trim()))
            .collect()
    }

    /// Every git-tracked file, relative to `root`.
    fn tracked_files(root: &Path) -> Result<Vec<String>, String> {
        let output = Command::new("git")
            .current_dir(root)
            .args(["ls-files", "-z"])
            .output()
            .map_err(|error| format!("cannot run git ls-files: {error}"))?;
        if !output.status.success() {
            return Err(format!(
                "git ls-files failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout)
            .split('\0')
            .filter(|path| !path.is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// `path:line: text` for every tracked file other than a changelog fragment that names the
    /// design folder. Files that are not UTF-8 text are skipped.
    fn files_naming_the_design_folder(root: &Path) -> Result<Vec<String>, String> {
        let mut hits = Vec::new();
        for path in tracked_files(root)? {
            if path.starts_with("changelog.d/") {
                continue;
            }
            // A tracked file missing from the work tree (deleted, not yet committed) names nothing.
            let Ok(text) = std::fs::read_to_string(root.join(&path)) else {
                continue;
            };
            hits.extend(
                naming_lines(&text)
                    .into_iter()
                    .map(|line| format!("{path}:{line}")),
            );
        }
        Ok(hits)
    }

    #[test]
    fn no_tracked_file_names_the_design_folder() {
        let root = crate::workspace_root();
        let hits = files_naming_the_design_folder(&root).unwrap();
        assert!(
            hits.is_empty(),
            "these lines name the folder beside the repository; the repository must stand \
             alone:\n{}",
            hits.join("\n")
        );
    }

    #[test]
    fn the_folder_is_found_in_every_spelling_and_a_url_is_not() {
        let folder = "shared";
        let text = format!(
            "see ../{folder}/spec/host.md\n\
             the vectors in `{folder}/conformance/`\n\
             a script in ../../../{folder}/perf/\n\
             notes in {folder}/reference/research\n\
             https://files.example.com/{folder}/report.pdf\n\
             a {folder} registry"
        );
        let hits = naming_lines(&text);
        assert_eq!(hits.len(), 4, "{hits:?}");
        assert!(hits[0].starts_with("1: see "));
        assert!(hits[3].starts_with("4: notes"));
    }

    #[test]
    fn the_readme_holds_the_two_commands() {
        let readme = std::fs::read_to_string(crate::workspace_root().join("README.md")).unwrap();
        let commands = readme_commands(&readme).unwrap();
        assert!(
            commands[0].starts_with("cargo run -q -- demo "),
            "{commands:?}"
        );
        assert!(
            commands[1].starts_with("cargo test --workspace "),
            "{commands:?}"
        );
    }

    #[test]
    fn commands_come_from_the_first_fence_under_the_heading_as_written() {
        let readme = "# x\n```sh\nnot this\n```\n## Two commands\n\ntext\n\n```sh\n\
                      a --flag   # a comment\n\nb\n```\n```sh\nc\n```\n";
        assert_eq!(
            readme_commands(readme).unwrap(),
            ["a --flag   # a comment", "b"]
        );
    }

    #[test]
    fn a_readme_without_the_commands_is_an_error() {
        assert_eq!(
            readme_commands("# x\n```sh\na\nb\n```\n").unwrap_err(),
            "README.md has no `## Two commands` heading"
        );
        assert_eq!(
            readme_commands("## Two commands\ntext\n## More\n```sh\na\nb\n```\n").unwrap_err(),
            "README.md has no fenced block under `## Two commands`"
        );
        assert_eq!(
            readme_commands("## Two commands\n```sh\na\nb\n").unwrap_err(),
            "README.md's fenced block under `## Two commands` is never closed"
        );
        assert_eq!(
            readme_commands("## Two commands\n```sh\na\nb\nc\n```\n").unwrap_err(),
            "README.md's fenced block under `## Two commands` holds 3 commands, not two"
        );
    }
}
