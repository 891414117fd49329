//! Process handling: timeouts kill the whole process group, and output that
//! is not a result becomes a clear error.

use std::path::Path;
use std::time::Duration;

use review_agent::AgentError;
use review_agent::claude::{ClaudeCode, ClaudeCodeRun, ClaudeCodeSettings};
use review_testkit::model::{Script, Turn};

use crate::support::{Harness, process_is_gone};

/// An executable shell script in `directory`.
fn script(directory: &Path, name: &str, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = directory.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_hung_model_times_out_and_the_cli_is_killed_with_its_children() {
    let Some(mut harness) = Harness::start(Script::new([]).then_forever(Turn::hang())).await else {
        return;
    };
    // A long-running child of the CLI: our MCP server fixture, which records its pid.
    let pid_file = harness.run_directory.path().join("mcp.pid");
    // Long enough for the CLI to start and reach the model on a loaded machine.
    harness.settings.timeout = Duration::from_secs(20);
    let run = harness
        .run("Hang.")
        .with_mcp(crate::support::tiny_mcp_server(&[(
            "TINY_MCP_PID_FILE",
            pid_file.to_str().unwrap(),
        )]));

    let error = harness.claude().run(&run).await.unwrap_err();

    assert!(matches!(error, AgentError::TimedOut { .. }), "{error:?}");
    assert!(
        error.to_string().contains("killed with its process group"),
        "{error}"
    );
    assert!(
        !harness.server.requests().is_empty(),
        "the CLI reached the model before hanging"
    );
    let mcp_pid = read_pid(&pid_file);
    assert!(
        process_is_gone(mcp_pid),
        "the MCP server (pid {mcp_pid}) outlived the run"
    );
}

#[tokio::test]
async fn a_cancelled_run_kills_the_cli_with_its_children() {
    let Some(harness) = Harness::start(Script::new([]).then_forever(Turn::hang())).await else {
        return;
    };
    let pid_file = harness.run_directory.path().join("mcp.pid");
    let run = harness
        .run("Hang.")
        .with_mcp(crate::support::tiny_mcp_server(&[(
            "TINY_MCP_PID_FILE",
            pid_file.to_str().unwrap(),
        )]));
    let claude = harness.claude();

    // Drop the run once the CLI is waiting on the model (its MCP server is up by then).
    let running = claude.run(&run);
    let waiting = async {
        for _ in 0..600 {
            if !harness.server.requests().is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the CLI never reached the model");
    };
    tokio::select! {
        outcome = running => panic!("the run ended on its own: {outcome:?}"),
        () = waiting => {}
    }

    let mcp_pid = read_pid(&pid_file);
    for _ in 0..100 {
        if process_is_gone(mcp_pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the MCP server (pid {mcp_pid}) outlived the cancelled run");
}

#[tokio::test]
async fn a_timeout_kills_every_process_of_the_group() {
    let directory = tempfile::tempdir().unwrap();
    let pid_file = directory.path().join("grandchild.pid");
    let fake = script(
        directory.path(),
        "fake-claude",
        &format!("sleep 600 & echo $! > {}\nwait", pid_file.display()),
    );
    let claude =
        ClaudeCode::new(ClaudeCodeSettings::new(&fake, "m").with_timeout(Duration::from_secs(1)));

    let error = claude
        .run(&ClaudeCodeRun::new(
            "x",
            directory.path(),
            directory.path().join("run"),
        ))
        .await
        .unwrap_err();

    assert!(matches!(error, AgentError::TimedOut { .. }), "{error:?}");
    assert!(process_is_gone(read_pid(&pid_file)));
}

#[tokio::test]
async fn output_without_a_result_is_a_clear_error_with_the_stderr_tail() {
    let directory = tempfile::tempdir().unwrap();
    let fake = script(
        directory.path(),
        "fake-claude",
        "echo 'not json at all'\necho '{\"type\":\"assistant\"}'\necho 'something broke' >&2\nexit 3",
    );
    let claude = ClaudeCode::new(ClaudeCodeSettings::new(&fake, "m"));

    let error = claude
        .run(&ClaudeCodeRun::new(
            "x",
            directory.path(),
            directory.path().join("run"),
        ))
        .await
        .unwrap_err();

    match &error {
        AgentError::NoResult {
            exit,
            stderr_tail,
            stdout_tail,
        } => {
            assert!(exit.contains('3'), "{exit}");
            assert_eq!(stderr_tail, "something broke");
            assert!(stdout_tail.contains("not json at all"), "{stdout_tail}");
        }
        other => panic!("expected NoResult, got {other:?}"),
    }
    let empty = script(directory.path(), "silent-claude", "exit 0");
    let error = ClaudeCode::new(ClaudeCodeSettings::new(&empty, "m"))
        .run(&ClaudeCodeRun::new(
            "x",
            directory.path(),
            directory.path().join("run2"),
        ))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("without a result message"),
        "{error}"
    );
}

#[tokio::test]
async fn a_malformed_result_is_reported_as_such() {
    let directory = tempfile::tempdir().unwrap();
    let fake = script(
        directory.path(),
        "fake-claude",
        "echo '{\"type\":\"result\",\"subtype\":42}'",
    );
    let error = ClaudeCode::new(ClaudeCodeSettings::new(&fake, "m"))
        .run(&ClaudeCodeRun::new(
            "x",
            directory.path(),
            directory.path().join("run"),
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(error, AgentError::MalformedResult { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_missing_executable_says_how_to_install_claude_code() {
    let directory = tempfile::tempdir().unwrap();
    let error = ClaudeCode::new(ClaudeCodeSettings::new("/nonexistent/claude", "m"))
        .run(&ClaudeCodeRun::new(
            "x",
            directory.path(),
            directory.path().join("run"),
        ))
        .await
        .unwrap_err();
    assert!(matches!(error, AgentError::Spawn { .. }), "{error:?}");
    assert!(error.to_string().contains("npm install"), "{error}");
}

#[tokio::test]
async fn a_github_token_in_the_run_environment_is_refused_before_starting() {
    let Some(harness) = Harness::start(Script::new([Turn::text("never")])).await else {
        return;
    };
    let run = harness.run("x").with_env("GITHUB_TOKEN", "ghp_secret");
    let error = harness.claude().run(&run).await.unwrap_err();
    assert!(
        matches!(error, AgentError::GitHubCredential { .. }),
        "{error:?}"
    );
    assert!(harness.server.all_requests().is_empty());
}
