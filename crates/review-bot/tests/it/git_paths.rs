//! Issue 10 item 3 through the CLI: files whose names hold every byte git
//! quotes (tab, newline, `"`, `\`, control bytes, bytes that are not UTF-8)
//! or that make an unquoted `diff --git` line ambiguous (spaces, ` b/`),
//! diffed by real git with `core.quotePath` on and off, anchor `inline` in
//! `findings to-github`'s payload on their own names.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;

use serde_json::{Value, json};

use crate::findings::findings;
use crate::{git_bytes, review_bot};

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
    // Linux stores any byte but NUL and `/`; git's NTFS protection would
    // refuse the backslash.
    let run_git = |args: &[&str]| {
        git_bytes(
            root,
            &[&["-c", "core.protectNTFS=false"][..], args].concat(),
        )
    };
    run_git(&["init", "-q"]);
    for name in NAMES {
        write(name, "one\ntwo\nthree\n");
    }
    run_git(&["add", "-A"]);
    run_git(&["commit", "-qm", "base"]);
    for name in NAMES {
        write(name, "one\nTWO\nthree\n");
    }
    run_git(&["add", "-A"]);
    run_git(&["commit", "-qm", "change"]);
    let setting = format!("core.quotePath={quote_path}");
    let diff = run_git(&["-c", &setting, "diff", "HEAD~1", "HEAD"]);
    std::fs::write(root.join("PR.diff"), diff).unwrap();
    dir
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
