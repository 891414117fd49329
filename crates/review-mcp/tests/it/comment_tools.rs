//! `leave_inline_comment` and `leave_general_comment`.

use serde_json::json;

use crate::support::{Run, Session, snapshot};

#[tokio::test]
async fn the_server_lists_its_five_tools_with_schemas() {
    let run = Run::new();
    let mut session = Session::start(run.options(Some(snapshot()))).await;
    let listed = session.request("tools/list", json!({})).await;
    let mut names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "github_get_pr_comments",
            "github_post_pr_reply",
            "leave_general_comment",
            "leave_inline_comment",
            "present_review"
        ]
    );
    let inline = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "leave_inline_comment")
        .unwrap();
    assert_eq!(
        inline["inputSchema"]["required"],
        json!(["path", "line", "message"])
    );
}

#[tokio::test]
async fn an_inline_comment_on_the_diff_is_one_line_with_its_optional_fields() {
    let run = Run::new();
    let mut session = Session::start(run.options(Some(snapshot()))).await;
    let answer = session
        .call(
            "leave_inline_comment",
            json!({
                "path": "./src/lib.rs", "line": 3, "start_line": 2, "message": "Both unused.",
                "side": "right", "title": "Dead code", "severity": "Improvement", "confidence": 80,
                "suggestion": "Remove them."
            }),
        )
        .await;
    assert!(!answer.is_error, "{}", answer.text);
    assert!(answer.text.contains("src/lib.rs line 3"), "{}", answer.text);
    assert_eq!(
        run.lines(),
        [json!({
            "type": "inline", "message": "Both unused.", "path": "src/lib.rs", "line": 3,
            "start_line": 2, "side": "RIGHT", "title": "Dead code", "severity": "improvement",
            "confidence": 80, "suggestion": "Remove them."
        })]
    );
    // Seed 000's minimal line, and a LEFT line of the old file.
    session
        .call(
            "leave_inline_comment",
            json!({"path": "src/lib.rs", "line": 43, "message": "y?"}),
        )
        .await;
    let answer = session
        .call(
            "leave_inline_comment",
            json!({"path": "src/lib.rs", "line": 40, "side": "LEFT", "message": "x"}),
        )
        .await;
    assert!(!answer.is_error, "{}", answer.text);
    let lines = run.lines();
    assert_eq!(
        lines[1],
        json!({"type": "inline", "message": "y?", "path": "src/lib.rs", "line": 43})
    );
    assert_eq!(lines[2]["side"], "LEFT");
}

#[tokio::test]
async fn a_line_far_from_every_hunk_is_recorded_for_the_outside_the_diff_section() {
    let run = Run::new();
    let mut session = Session::start(run.options(Some(snapshot()))).await;
    let answer = session
        .call(
            "leave_inline_comment",
            json!({"path": "src/lib.rs", "line": 20, "message": "m"}),
        )
        .await;
    assert!(!answer.is_error, "{}", answer.text);
    assert!(answer.text.contains("Outside the diff"), "{}", answer.text);
    assert_eq!(
        run.lines(),
        vec![json!({"type": "inline", "message": "m", "path": "src/lib.rs", "line": 20})]
    );
}

/// Issue 25 item 8: what the anchoring rules can place is recorded, never
/// refused — a line near a hunk is moved into it, a line between hunks or on a
/// side the file does not have goes to "Outside the diff", a range leaving its
/// hunk keeps its last line — and the answer says where each lands.
#[tokio::test]
async fn what_the_anchoring_rules_can_place_is_recorded_and_said_where_it_lands() {
    let run = Run::new();
    let mut session = Session::start(run.options(Some(snapshot()))).await;
    let mut expected = Vec::new();
    for line in [9, 47] {
        let answer = session
            .call(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": line, "message": "m"}),
            )
            .await;
        assert!(!answer.is_error, "line {line}: {}", answer.text);
        assert!(
            answer.text.contains("do not record it again"),
            "{}",
            answer.text
        );
        let recorded = run.lines().last().cloned().unwrap();
        assert_eq!(recorded["path"], "src/lib.rs");
        let landed = recorded["line"].as_u64().unwrap();
        if landed == line {
            assert!(answer.text.contains("Outside the diff"), "{}", answer.text);
        } else {
            assert!(
                answer.text.contains(&format!("posted on line {landed}")),
                "{}",
                answer.text
            );
            assert!(landed.abs_diff(line) <= 3, "moved from {line} to {landed}");
        }
        expected.push(recorded);
    }
    // A new file has no old side: recorded for the body.
    let answer = session
        .call(
            "leave_inline_comment",
            json!({"path": "docs/guide.md", "line": 1, "side": "LEFT", "message": "m"}),
        )
        .await;
    assert!(
        !answer.is_error && answer.text.contains("Outside the diff"),
        "{}",
        answer.text
    );
    // A range leaving its hunk is cut to the hunk.
    let answer = session
        .call(
            "leave_inline_comment",
            json!({"path": "src/lib.rs", "line": 43, "start_line": 5, "message": "m"}),
        )
        .await;
    assert!(
        !answer.is_error && answer.text.contains("starts at line 42"),
        "{}",
        answer.text
    );
    let lines = run.lines();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(lines[3]["line"], 43);
    assert_eq!(lines[3]["start_line"], 42, "{}", lines[3]);
}

#[tokio::test]
async fn unsafe_and_unknown_paths_are_refused_with_the_pull_requests_files() {
    let run = Run::new();
    let mut session = Session::start(run.options(Some(snapshot()))).await;
    let answer = session
        .call(
            "leave_inline_comment",
            json!({"path": "../src/lib.rs", "line": 2, "message": "m"}),
        )
        .await;
    assert!(
        answer.is_error && answer.text.contains("`..`"),
        "{}",
        answer.text
    );
    let answer = session
        .call(
            "leave_inline_comment",
            json!({"path": "/work/repo/src/lib.rs", "line": 2, "message": "m"}),
        )
        .await;
    assert!(
        answer.is_error && answer.text.contains("absolute"),
        "{}",
        answer.text
    );
    let answer = session
        .call(
            "leave_inline_comment",
            json!({"path": "src/main.rs", "line": 2, "message": "m"}),
        )
        .await;
    assert!(answer.is_error, "{}", answer.text);
    assert!(
        answer.text.contains("src/lib.rs, docs/guide.md")
            || answer.text.contains("docs/guide.md, src/lib.rs"),
        "{}",
        answer.text
    );
    assert!(run.lines().is_empty());
}

#[tokio::test]
async fn malformed_arguments_are_tool_errors_that_say_how_to_call() {
    let run = Run::new();
    let mut session = Session::start(run.options(Some(snapshot()))).await;
    let cases = [
        (
            json!({"path": "src/lib.rs", "line": "three", "message": "m"}),
            "whole number",
        ),
        (
            json!({"path": "src/lib.rs", "line": 2}),
            "missing field `message`",
        ),
        (
            json!({"path": "src/lib.rs", "line": 2, "body": "m"}),
            "unknown field `body`",
        ),
        (
            json!({"path": "src/lib.rs", "line": 0, "message": "m"}),
            "line must be a line number from 1",
        ),
        (
            json!({"path": "src/lib.rs", "line": 2, "message": "  "}),
            "the message is empty",
        ),
        (
            json!({"path": "src/lib.rs", "line": 2, "message": "m", "side": "UP"}),
            "side must be",
        ),
        (
            json!({"path": "src/lib.rs", "line": 2, "message": "m", "severity": "blocker"}),
            "severity must be one of",
        ),
        (
            json!({"path": "src/lib.rs", "line": 2, "message": "m", "confidence": 150}),
            "between 0 and 100",
        ),
        (
            json!({"path": "src/lib.rs", "line": 3, "start_line": 5, "message": "m"}),
            "start_line (5) must be less than line (3)",
        ),
    ];
    for (arguments, expected) in cases {
        let answer = session
            .call("leave_inline_comment", arguments.clone())
            .await;
        assert!(answer.is_error, "{arguments}: {}", answer.text);
        assert!(
            answer.text.contains(expected),
            "{arguments}: {}",
            answer.text
        );
        assert!(
            answer.text.contains("Call it again with")
                || answer.text.contains("call it again with"),
            "{}",
            answer.text
        );
    }
    let answer = session
        .call("leave_general_comment", json!({"text": "hi"}))
        .await;
    assert!(
        answer.is_error && answer.text.contains("unknown field `text`"),
        "{}",
        answer.text
    );
    let answer = session
        .call(
            "leave_general_comment",
            json!({"message": "x".repeat(70_000)}),
        )
        .await;
    assert!(
        answer.is_error && answer.text.contains("65536"),
        "{}",
        answer.text
    );
    assert!(run.lines().is_empty());
}

#[tokio::test]
async fn general_comments_are_seed_000_lines() {
    let run = Run::new();
    let mut session = Session::start(run.options(Some(snapshot()))).await;
    let answer = session
        .call(
            "leave_general_comment",
            json!({"message": "Overall looks good\n\nwith \"quotes\""}),
        )
        .await;
    assert!(!answer.is_error, "{}", answer.text);
    assert_eq!(
        std::fs::read_to_string(run.comments_file()).unwrap(),
        "{\"type\":\"general\",\"message\":\"Overall looks good\\n\\nwith \\\"quotes\\\"\"}\n"
    );
}

#[tokio::test]
async fn fifty_concurrent_calls_make_fifty_intact_lines() {
    let run = Run::new();
    let mut session = Session::start(run.options(Some(snapshot()))).await;
    let calls = (0..50)
        .map(|index| {
            if index % 2 == 0 {
                ("leave_inline_comment", json!({"path": "src/lib.rs", "line": 1 + index % 7, "message": format!("comment {index} {}", "x".repeat(20_000))}))
            } else {
                ("leave_general_comment", json!({"message": format!("comment {index} {}", "y".repeat(20_000))}))
            }
        })
        .collect();
    let answers = session.call_many(calls).await;
    assert!(answers.iter().all(|answer| !answer.is_error), "{answers:?}");
    let lines = run.lines();
    assert_eq!(lines.len(), 50);
    let mut seen: Vec<u32> = lines
        .iter()
        .map(|line| {
            let message = line["message"].as_str().unwrap();
            message.split(' ').nth(1).unwrap().parse().unwrap()
        })
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..50).collect::<Vec<_>>());
}

#[tokio::test]
async fn without_a_comments_file_the_tools_warn_and_succeed() {
    let run = Run::new();
    let mut options = run.options(Some(snapshot()));
    options.comments_file = None;
    let mut session = Session::start(options).await;
    let answer = session
        .call("leave_general_comment", json!({"message": "hi"}))
        .await;
    assert!(!answer.is_error, "{}", answer.text);
    assert!(
        answer.text.contains("without COMMENTS_FILE"),
        "{}",
        answer.text
    );
    assert!(!run.comments_file().exists());
}

#[tokio::test]
async fn without_a_snapshot_inline_comments_are_recorded_unchecked() {
    let run = Run::new();
    let mut session = Session::start(run.options(None)).await;
    let answer = session
        .call(
            "leave_inline_comment",
            json!({"path": "anything.rs", "line": 999, "message": "m"}),
        )
        .await;
    assert!(!answer.is_error, "{}", answer.text);
    assert!(
        answer.text.contains("not checked against a diff"),
        "{}",
        answer.text
    );
    // Unsafe paths are still refused.
    let answer = session
        .call(
            "leave_inline_comment",
            json!({"path": "../x.rs", "line": 1, "message": "m"}),
        )
        .await;
    assert!(answer.is_error, "{}", answer.text);
    assert_eq!(run.lines().len(), 1);
    for tool in ["github_get_pr_comments", "github_post_pr_reply"] {
        let arguments = if tool == "github_post_pr_reply" {
            json!({"comment_id": 1, "message": "m"})
        } else {
            json!({})
        };
        let answer = session.call(tool, arguments).await;
        assert!(
            answer.is_error && answer.text.contains("REVIEW_BOT_SNAPSHOT"),
            "{}",
            answer.text
        );
    }
}

/// Issue 10 item 3: names git C-quotes (tab, newline, `"`, `\`, control and
/// non-UTF-8 bytes) or leaves ambiguous unquoted (spaces, ` b/`), in a diff
/// written by real git with `core.quotePath` on and off, take inline comments
/// under their own names — the name the agent sees in the file list, which for
/// bytes that are not UTF-8 is the lossy one (U+FFFD).
#[tokio::test]
async fn inline_comments_anchor_on_every_name_git_writes() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt as _;

    const NAMES: [&[u8]; 8] = [
        b"tab\there.txt",
        b"new\nline.txt",
        b"quote\"and\\back.txt",
        b"bell\x07cr\r.txt",
        b"a b/c b/a b",
        b" lead and trail ",
        b"latin1-\xe9.txt",
        b"\xe2\x80\xaeright-to-left.txt",
    ];
    let repository = tempfile::tempdir().unwrap();
    let root = repository.path();
    let git = |args: &[&str]| {
        let output = std::process::Command::new("git")
            .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
            .args(["-c", "init.defaultBranch=main", "-c", "core.autocrlf=false"])
            .args(args)
            .current_dir(root)
            .output()
            .expect("git is installed (apt-get install git)");
        assert!(output.status.success(), "git {args:?} failed");
        output.stdout
    };
    let write_all = |content: &str| {
        for name in NAMES {
            let path = root.join(OsStr::from_bytes(name));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
    };
    git(&["init", "-q"]);
    write_all("one\ntwo\nthree\n");
    git(&["add", "-A"]);
    git(&["commit", "-qm", "base"]);
    write_all("one\nTWO\nthree\n");
    git(&["add", "-A"]);
    git(&["commit", "-qm", "change"]);
    for quote_path in [true, false] {
        let setting = format!("core.quotePath={quote_path}");
        let diff = git(&["-c", &setting, "diff", "HEAD~1", "HEAD"]);
        let mut pull_request = snapshot();
        pull_request.diff = String::from_utf8_lossy(&diff).into_owned();
        let run = Run::new();
        let mut session = Session::start(run.options(Some(pull_request))).await;
        for name in NAMES {
            let path = String::from_utf8_lossy(name).into_owned();
            let answer = session
                .call(
                    "leave_inline_comment",
                    json!({"path": path, "line": 2, "message": "Changed."}),
                )
                .await;
            assert!(
                !answer.is_error,
                "quotePath={quote_path} {path:?}: {}",
                answer.text
            );
        }
        let recorded: Vec<(String, u64)> = run
            .lines()
            .iter()
            .map(|line| {
                (
                    line["path"].as_str().unwrap().to_owned(),
                    line["line"].as_u64().unwrap(),
                )
            })
            .collect();
        let wanted: Vec<(String, u64)> = NAMES
            .iter()
            .map(|name| (String::from_utf8_lossy(name).into_owned(), 2))
            .collect();
        assert_eq!(recorded, wanted, "quotePath={quote_path}");
        // A Windows-style path that names no file still gets told why.
        let answer = session
            .call(
                "leave_inline_comment",
                json!({"path": "a b\\c b\\a b", "line": 2, "message": "m"}),
            )
            .await;
        assert!(
            answer.is_error && answer.text.contains("backslash"),
            "{}",
            answer.text
        );
    }
}
