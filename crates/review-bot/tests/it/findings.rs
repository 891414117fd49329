//! `findings validate` and `findings to-github` on a diff made by real git.

use std::path::Path;

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::{git, review_bot, text};

/// A repository with two commits and `PR.diff` = `git diff HEAD~1 HEAD`:
/// `src/app.go` (lines 10–12 changed in a 30-line file), a new file `src/new.go`,
/// a rename `old/name.go` → `new/name.go` (pure), and a deleted `gone.txt`.
fn pull_request() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    let lines: Vec<String> = (1..=30).map(|n| format!("line {n}")).collect();
    write(root, "src/app.go", &(lines.join("\n") + "\n"));
    write(root, "old/name.go", "package name\n");
    write(root, "gone.txt", "bye\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "base"]);
    let mut changed = lines.clone();
    "line 10 changed".clone_into(&mut changed[9]);
    "line 11 changed".clone_into(&mut changed[10]);
    changed.insert(11, "inserted".to_owned());
    write(root, "src/app.go", &(changed.join("\n") + "\n"));
    write(root, "src/new.go", "package src\n\nfunc New() {}\n");
    std::fs::create_dir_all(root.join("new")).unwrap();
    std::fs::rename(root.join("old/name.go"), root.join("new/name.go")).unwrap();
    std::fs::remove_file(root.join("gone.txt")).unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "change"]);
    let diff = git(root, &["diff", "-M", "HEAD~1", "HEAD"]);
    write(root, "PR.diff", &diff);
    dir
}

fn write(root: &Path, path: &str, content: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn comment(file: &str, line: u32) -> Value {
    json!({
        "file": file, "line": line, "confidence": 90, "confidence_level": "high",
        "severity": "logic", "title": "Check this", "description": "Explained here."
    })
}

pub(crate) fn findings(comments: &[Value]) -> Value {
    json!({
        "version": "1.0",
        "pr_info": { "number": 5, "repo": "acme/app", "title": "Change", "description": "",
                     "head_sha": "0123456789abcdef0123456789abcdef01234567" },
        "review_summary": { "overview": "Looks reasonable.",
                            "confidence_breakdown": { "high": 9, "medium": 0, "low": 0, "suggestions": 0 },
                            "key_findings": [], "security_assessment": "", "positive_highlights": "" },
        "line_comments": comments,
        "review_event": "COMMENT",
        "metadata": { "reviewed_at": "2025-01-13T10:30:00Z", "reviewer_agent": "test",
                      "files_analyzed": 3, "total_issues": 9 }
    })
}

fn every_verdict() -> Value {
    let mut deleted_left = comment("gone.txt", 1);
    deleted_left["side"] = json!("LEFT");
    findings(&[
        comment("src/app.go", 11),   // inline: an added line
        comment("src/app.go", 17),   // moved: 2 lines past the hunk (9–15)
        comment("src/app.go", 28),   // outside_diff
        comment("README.md", 1),     // not_in_pr
        comment("src/new.go", 3),    // inline: a new file
        comment("new/name.go", 1),   // outside_diff: a pure rename has no lines
        comment("old/name.go", 1),   // not_in_pr: the old name
        deleted_left,                // inline: a deleted file's old side
        comment("../etc/passwd", 1), // not_in_pr: unsafe
    ])
}

fn write_findings(dir: &TempDir, value: &Value) {
    write(
        dir.path(),
        "findings.json",
        &serde_json::to_string_pretty(value).unwrap(),
    );
}

/// `review-bot findings validate --json` on the directory's `PR.diff` and
/// `findings.json`: checks the exit code and returns the report.
fn validate_json(dir: &TempDir, exit_code: i32) -> Value {
    let output = review_bot(dir.path())
        .args([
            "findings",
            "validate",
            "--json",
            "--diff",
            "PR.diff",
            "findings.json",
        ])
        .assert()
        .code(exit_code);
    serde_json::from_slice(&output.get_output().stdout).unwrap()
}

#[test]
fn validate_json_gives_one_verdict_per_comment() {
    let dir = pull_request();
    write_findings(&dir, &every_verdict());
    let output = review_bot(dir.path())
        .args([
            "findings",
            "validate",
            "--diff",
            "PR.diff",
            "findings.json",
            "--json",
        ])
        .assert()
        .success();
    let report: Value = serde_json::from_slice(&output.get_output().stdout).unwrap();
    insta::assert_json_snapshot!(report);
}

#[test]
fn validate_human_report() {
    let dir = pull_request();
    write_findings(&dir, &every_verdict());
    let output = review_bot(dir.path())
        .args(["findings", "validate", "--diff", "PR.diff", "findings.json"])
        .assert()
        .success();
    insta::assert_snapshot!(text(&output.get_output().stdout));
}

#[test]
fn invalid_findings_exit_1_and_still_anchor_what_they_can() {
    let dir = pull_request();
    let mut broken = comment("src/app.go", 11);
    broken["confidence"] = json!(300);
    let mut document = findings(&[broken, json!("not a comment"), comment("src/app.go", 16)]);
    document["review_event"] = json!("LGTM");
    write_findings(&dir, &document);
    let report = validate_json(&dir, 1);
    insta::assert_json_snapshot!(report);
}

#[test]
fn unparseable_findings_are_still_one_json_object() {
    let dir = pull_request();
    write(
        dir.path(),
        "findings.json",
        "{\"version\": \"1.0\", \"line_comments\": [ {",
    );
    let report = validate_json(&dir, 1);
    assert_eq!(report["comments"], json!([]));
    assert_eq!(report["schema_errors"].as_array().unwrap().len(), 1);
    assert!(
        report["schema_errors"][0]
            .as_str()
            .unwrap()
            .contains("not valid JSON")
    );
}

#[test]
fn unreadable_inputs_exit_2_with_a_message() {
    let dir = pull_request();
    write_findings(&dir, &every_verdict());
    let output = review_bot(dir.path())
        .args([
            "findings",
            "validate",
            "--diff",
            "missing.diff",
            "findings.json",
        ])
        .assert()
        .code(2);
    assert!(text(&output.get_output().stderr).contains("could not read the diff missing.diff"));
    review_bot(dir.path())
        .args(["findings", "to-github", "--diff", "PR.diff", "missing.json"])
        .assert()
        .code(2);
    write(
        dir.path(),
        "bad.diff",
        "diff --git a/x b/x\n@@ -1,2 +1,2 @@\n+only one line\n",
    );
    let output = review_bot(dir.path())
        .args([
            "findings",
            "validate",
            "--diff",
            "bad.diff",
            "findings.json",
        ])
        .assert()
        .code(2);
    assert!(text(&output.get_output().stderr).contains("bad.diff is not a unified diff"));
}

#[test]
fn to_github_prints_the_create_review_payload() {
    let dir = pull_request();
    write_findings(&dir, &every_verdict());
    let output = review_bot(dir.path())
        .args([
            "findings",
            "to-github",
            "--diff",
            "PR.diff",
            "findings.json",
        ])
        .args(["--review-id", "0f8fad5b-d9cb-469f-a165-70867728950e"])
        .assert()
        .success();
    let payload: Value = serde_json::from_slice(&output.get_output().stdout).unwrap();
    let comments = payload["comments"].as_array().unwrap();
    let places: Vec<(&str, u64, &str)> = comments
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap(),
                c["line"].as_u64().unwrap(),
                c["side"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        places,
        [
            ("src/app.go", 11, "RIGHT"),
            ("src/app.go", 15, "RIGHT"),
            ("src/new.go", 3, "RIGHT"),
            ("gone.txt", 1, "LEFT")
        ]
    );
    insta::with_settings!({filters => vec![(r"thread::[0-9a-f-]{36}", "thread::[uuid]")]}, {
        insta::assert_json_snapshot!(payload);
    });
}

#[test]
fn to_github_refuses_invalid_findings() {
    let dir = pull_request();
    write(dir.path(), "findings.json", "[]");
    let output = review_bot(dir.path())
        .args([
            "findings",
            "to-github",
            "--diff",
            "PR.diff",
            "findings.json",
        ])
        .assert()
        .code(1);
    assert!(output.get_output().stdout.is_empty());
    assert!(
        text(&output.get_output().stderr)
            .contains("(document): expected an object, found an array")
    );
}
