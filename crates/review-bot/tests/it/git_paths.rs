//! Issue 10 item 3 through the CLI: files whose names hold every byte git
//! quotes (tab, newline, `"`, `\`, control bytes, bytes that are not UTF-8)
//! or that make an unquoted `diff --git` line ambiguous (spaces, ` b/`),
//! diffed by real git with `core.quotePath` on and off, anchor `inline` in
//! `findings to-github`'s payload on their own names.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::review_bot;

/// The names, as bytes on disk.
const NAMES: [&[u8]; 9] = [
    b"tab\there.txt",
    b"new\nline.txt",
    b"quote\"and\\back.txt",
    b"bell\x07cr\r.txt",
    b"a b/c b/a b",
    b" lead and trail ",
    b"latin1-\xe9.txt",
    b"\xe2\x80\xaeright-to-left.txt",
    b"C:x",
];

fn run_git(root: &Path, args: &[&str]) -> Vec<u8> {
    let output = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(["-c", "init.defaultBranch=main", "-c", "core.autocrlf=false"])
        .args(["-c", "core.protectNTFS=false"])
        .args(args)
        .current_dir(root)
        .output()
        .expect("git is installed (apt-get install git)");
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// A repository where every name's line 2 changes; `PR.diff` as git writes it
/// with `core.quotePath` set to `quote_path` (raw bytes, not re-encoded).
fn pull_request(quote_path: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |name: &[u8], content: &str| {
        let path = root.join(OsStr::from_bytes(name));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    };
    run_git(root, &["init", "-q"]);
    for name in NAMES {
        write(name, "one\ntwo\nthree\n");
    }
    run_git(root, &["add", "-A"]);
    run_git(root, &["commit", "-qm", "base"]);
    for name in NAMES {
        write(name, "one\nTWO\nthree\n");
    }
    run_git(root, &["add", "-A"]);
    run_git(root, &["commit", "-qm", "change"]);
    let setting = format!("core.quotePath={quote_path}");
    let diff = run_git(root, &["-c", &setting, "diff", "HEAD~1", "HEAD"]);
    std::fs::write(root.join("PR.diff"), diff).unwrap();
    dir
}

fn findings(comments: &[Value]) -> Value {
    json!({
        "version": "1.0",
        "pr_info": { "number": 5, "repo": "acme/app", "title": "Odd names", "description": "",
                     "head_sha": "0123456789abcdef0123456789abcdef01234567" },
        "review_summary": { "overview": "Names.",
                            "confidence_breakdown": { "high": 1, "medium": 0, "low": 0, "suggestions": 0 },
                            "key_findings": [], "security_assessment": "", "positive_highlights": "" },
        "line_comments": comments,
        "review_event": "COMMENT",
        "metadata": { "reviewed_at": "2025-01-13T10:30:00Z", "reviewer_agent": "test",
                      "files_analyzed": 1, "total_issues": 1 }
    })
}

#[test]
fn to_github_anchors_every_name_git_writes_on_its_own_path() {
    let expected: Vec<String> = NAMES
        .iter()
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect();
    for quote_path in [true, false] {
        let dir = pull_request(quote_path);
        let comments: Vec<Value> = expected
            .iter()
            .map(|path| {
                json!({
                    "file": path, "line": 2, "confidence": 90, "confidence_level": "high",
                    "severity": "logic", "title": "Changed", "description": "This line changed."
                })
            })
            .collect();
        std::fs::write(
            dir.path().join("findings.json"),
            findings(&comments).to_string(),
        )
        .unwrap();
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
        let placed: Vec<(String, u64)> = payload["comments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|comment| {
                (
                    comment["path"].as_str().unwrap().to_owned(),
                    comment["line"].as_u64().unwrap(),
                )
            })
            .collect();
        let wanted: Vec<(String, u64)> = expected.iter().map(|path| (path.clone(), 2)).collect();
        assert_eq!(
            placed, wanted,
            "quotePath={quote_path}: every comment inline on its own name; body:\n{}",
            payload["body"]
        );
        let body = payload["body"].as_str().unwrap();
        assert!(body.contains("9 inline, 0 outside the diff"), "{body}");
    }
}
