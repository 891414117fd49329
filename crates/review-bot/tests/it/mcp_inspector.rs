//! A second MCP client we did not write: the official MCP inspector CLI
//! (`@modelcontextprotocol/inspector-cli`, installed by
//! `scripts/install-test-deps`) lists the tools of `review-bot mcp` and calls one.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

/// Runs `mcp-inspector-cli --cli [-e K=V]… review-bot mcp --method …`.
///
/// inspector-cli 1.0.3 looks for `../package.json` relative to the *working
/// directory* to name itself, then imports it relative to its own module;
/// from its own `build` directory both resolve to its package.json.
fn inspector(inspector: &Path, environment: &[(&str, &Path)], method_arguments: &[&str]) -> Output {
    let working_directory = std::fs::canonicalize(inspector)
        .expect("the inspector's .bin link resolves")
        .parent()
        .expect("the inspector script lives in its build directory")
        .to_owned();
    let mut command = std::process::Command::new(inspector);
    command.current_dir(working_directory).arg("--cli");
    for (name, value) in environment {
        command.arg("-e").arg(format!("{name}={}", value.display()));
    }
    command
        .arg(env!("CARGO_BIN_EXE_review-bot"))
        .arg("mcp")
        .args(method_arguments)
        // The inspector starts the server with a default environment of its
        // own plus `-e`; keep ours free of GitHub credentials regardless.
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN");
    command
        .output()
        .expect("the inspector runs (node is on PATH)")
}

fn json_output(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "the inspector failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "the inspector printed no JSON ({error}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

#[test]
fn the_official_inspector_lists_our_tools_and_calls_one() {
    let Some(inspector_cli) = review_testkit::tools::mcp_inspector_for_test() else {
        return;
    };
    let directory = tempfile::tempdir().unwrap();
    let comments: PathBuf = directory.path().join("comments.jsonl");

    let listed = json_output(&inspector(
        &inspector_cli,
        &[("COMMENTS_FILE", &comments)],
        &["--method", "tools/list"],
    ));
    let mut names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("a tools array")
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

    let called = json_output(&inspector(
        &inspector_cli,
        &[("COMMENTS_FILE", &comments)],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "leave_inline_comment",
            "--tool-arg",
            "path=src/lib.rs",
            "line=12",
            "message=Checked by the inspector",
        ],
    ));
    assert_eq!(called["isError"], false, "{called}");
    assert_eq!(
        std::fs::read_to_string(&comments).unwrap(),
        "{\"type\":\"inline\",\"message\":\"Checked by the inspector\",\"path\":\"src/lib.rs\",\"line\":12}\n"
    );

    // A bad call is a tool error the inspector shows, not a protocol failure.
    let refused = json_output(&inspector(
        &inspector_cli,
        &[("COMMENTS_FILE", &comments)],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "present_review",
            "--tool-arg",
            "baseUri=/repo",
        ],
    ));
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(
        refused["content"][0]["text"],
        "Content parameter is required"
    );
}
