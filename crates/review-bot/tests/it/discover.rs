//! `discover-commands DIR` on real directories.

use std::path::Path;

use serde_json::{Value, json};

use crate::{core_fixture, review_bot};

fn nothing() -> Value {
    json!({"setup": [], "build": [], "test": [], "environment": {}, "source": null})
}

fn discover(dir: &Path) -> Value {
    let output = review_bot(dir)
        .arg("discover-commands")
        .arg(dir)
        .assert()
        .success();
    serde_json::from_slice(&output.get_output().stdout).unwrap()
}

#[test]
fn reads_the_readme() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("README.md"),
        core_fixture("docs/android-app.md"),
    )
    .unwrap();
    insta::assert_json_snapshot!(discover(dir.path()));
}

#[test]
fn claude_md_wins_and_names_match_case_insensitively() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Readme.md"),
        core_fixture("docs/react-app.md"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("claude.md"),
        core_fixture("docs/claude-node.md"),
    )
    .unwrap();
    assert_eq!(
        discover(dir.path()),
        json!({
            "setup": ["pnpm install"],
            "build": ["pnpm build"],
            "test": ["pnpm test"],
            "environment": {},
            "source": "claude.md"
        })
    );
}

#[test]
fn nothing_documented_is_an_answer_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(discover(dir.path()), nothing());
    std::fs::write(
        dir.path().join("README.md"),
        core_fixture("docs/install-only.md"),
    )
    .unwrap();
    assert_eq!(discover(dir.path()), nothing());
}

#[test]
fn a_missing_directory_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    review_bot(dir.path())
        .args(["discover-commands", "no-such-dir"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "no-such-dir is not a directory: give the repository's working tree",
        ));
}

/// A real README with nothing to build (BurntSushi/walkdir: its only shell
/// block is a benchmark recipe under "### Performance") and its real
/// Cargo.toml: the commands are inferred, as the gate would run them.
#[test]
fn the_manifest_is_read_when_no_document_gives_commands() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["README.md", "Cargo.toml"] {
        std::fs::write(
            dir.path().join(file),
            core_fixture(&format!("real/burntsushi-walkdir/{file}")),
        )
        .unwrap();
    }
    assert_eq!(
        discover(dir.path()),
        json!({
            "setup": [],
            "build": ["cargo build"],
            "test": ["cargo test"],
            "environment": {},
            "source": "Cargo.toml (inferred)"
        })
    );
    std::fs::write(dir.path().join("Cargo.lock"), "version = 4\n").unwrap();
    assert_eq!(discover(dir.path())["test"], json!(["cargo test --locked"]));
}

/// A README with a virtualenv "Development" block (simonw/datasette-graphql):
/// its activation is setup, kept before the install; `cd` into the project is
/// dropped because the checkout has no such directory.
#[test]
fn a_development_block_runs_in_one_shell() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("README.md"),
        core_fixture("real/simonw-datasette-graphql/README.md"),
    )
    .unwrap();
    assert_eq!(
        discover(dir.path()),
        json!({
            "setup": ["python3 -mvenv venv", ". venv/bin/activate", "pip install -e '.[test]'"],
            "build": [],
            "test": ["pytest"],
            "environment": {},
            "source": "README.md"
        })
    );
}

/// A malformed manifest infers nothing and says why on standard error; a
/// manifest that is a symbolic link is not read at all.
#[test]
fn a_malformed_or_linked_manifest_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), "[package\nname = ").unwrap();
    let output = review_bot(dir.path())
        .arg("discover-commands")
        .arg(dir.path())
        .assert()
        .success();
    let stdout: Value = serde_json::from_slice(&output.get_output().stdout).unwrap();
    assert_eq!(stdout, nothing());
    assert!(
        crate::text(&output.get_output().stderr).contains("note: Cargo.toml: not valid TOML"),
        "{}",
        crate::text(&output.get_output().stderr)
    );
    std::fs::remove_file(dir.path().join("Cargo.toml")).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("go.mod"), "module example.com/x\n").unwrap();
    std::os::unix::fs::symlink(elsewhere.path().join("go.mod"), dir.path().join("go.mod")).unwrap();
    assert_eq!(discover(dir.path()), nothing());
}
