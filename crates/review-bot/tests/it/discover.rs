//! `discover-commands DIR` on real directories.

use std::path::Path;

use serde_json::{Value, json};

use crate::{core_fixture, review_bot};

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
        json!({"build": ["pnpm install", "pnpm build"], "test": ["pnpm test"], "source": "claude.md"})
    );
}

#[test]
fn nothing_documented_is_an_answer_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        discover(dir.path()),
        json!({"build": [], "test": [], "source": null})
    );
    std::fs::write(
        dir.path().join("README.md"),
        core_fixture("docs/install-only.md"),
    )
    .unwrap();
    assert_eq!(
        discover(dir.path()),
        json!({"build": [], "test": [], "source": null})
    );
}

#[test]
fn a_missing_directory_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    review_bot(dir.path())
        .args(["discover-commands", "no-such-dir"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "could not list the directory no-such-dir",
        ));
}
