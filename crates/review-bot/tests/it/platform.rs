//! `detect-platform` reading paths on standard input.

use serde_json::{Value, json};

use crate::{review_bot, text};

#[test]
fn text_output_lists_platforms_and_guides() {
    let dir = tempfile::tempdir().unwrap();
    let output = review_bot(dir.path())
        .arg("detect-platform")
        .write_stdin(
            "api/main.go\n\n  web/src/App.TSX  \nios/App/ContentView.swift\nvendor/x/y.go\n",
        )
        .assert()
        .success();
    insta::assert_snapshot!(text(&output.get_output().stdout));
}

#[test]
fn json_output_and_the_generic_guide() {
    let dir = tempfile::tempdir().unwrap();
    let output = review_bot(dir.path())
        .args(["detect-platform", "--json"])
        .write_stdin("README.md\nwebpack.config.js\n")
        .assert()
        .success();
    let detection: Value = serde_json::from_slice(&output.get_output().stdout).unwrap();
    assert_eq!(
        detection,
        json!({"platforms": [], "guides": ["GENERIC_CODE_REVIEW.md"]})
    );
    let output = review_bot(dir.path())
        .args(["detect-platform", "--json"])
        .write_stdin("app/src/main/kotlin/Main.kt\nbuild.gradle.kts\n")
        .assert()
        .success();
    let detection: Value = serde_json::from_slice(&output.get_output().stdout).unwrap();
    assert_eq!(
        detection,
        json!({"platforms": ["android"], "guides": ["ANDROID_CODE_REVIEW.md"]})
    );
}
