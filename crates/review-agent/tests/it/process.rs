//! Process handling: timeouts kill the whole process group, and output that
//! is not a result becomes a clear error.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use review_agent::AgentError;
use review_agent::claude::{
    AgentRun, ClaudeCode, ClaudeCodeRun, ClaudeCodeSettings, ProcessContainment,
};
use review_testkit::model::{Script, Turn};
use serde_json::json;

use crate::support::{Harness, live_processes_with_argument, marker, tiny_mcp_server_marked};

/// A result line as the CLI prints it last.
const RESULT_LINE: &str = r#"{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1,"total_cost_usd":0}"#;

/// An executable shell script in `directory`.
fn script(directory: &Path, name: &str, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = directory.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Run `settings` once with the prompt "x" in `directory`, its scratch files
/// in `directory/run_name`.
async fn run_fake(
    directory: &Path,
    run_name: &str,
    settings: ClaudeCodeSettings,
) -> Result<AgentRun, AgentError> {
    ClaudeCode::new(settings)
        .run(&ClaudeCodeRun::new(
            "x",
            directory,
            directory.join(run_name),
        ))
        .await
}

#[tokio::test]
async fn a_hung_model_times_out_and_the_cli_is_killed_with_its_children() {
    let Some(mut harness) = Harness::start(Script::new([]).then_forever(Turn::hang())).await else {
        return;
    };
    // A long-running child of the CLI: our MCP server fixture, which writes a
    // file once it runs and carries a marker argument we find it by.
    let started = harness.run_directory.path().join("mcp.pid");
    let mcp_marker = marker(1);
    // Long enough for the CLI to start and reach the model on a loaded machine.
    harness.settings.timeout = Duration::from_secs(20);
    let run = harness.run("Hang.").with_mcp(tiny_mcp_server_marked(
        &[("TINY_MCP_PID_FILE", started.to_str().unwrap())],
        Some(&mcp_marker),
    ));

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
    assert!(started.exists(), "the MCP server ran");
    assert_eq!(
        live_processes_with_argument(&mcp_marker),
        Vec::<u32>::new(),
        "the MCP server outlived the run"
    );
}

#[tokio::test]
async fn a_cancelled_run_kills_the_cli_with_its_children() {
    let Some(harness) = Harness::start(Script::new([]).then_forever(Turn::hang())).await else {
        return;
    };
    let started = harness.run_directory.path().join("mcp.pid");
    let mcp_marker = marker(1);
    let run = harness.run("Hang.").with_mcp(tiny_mcp_server_marked(
        &[("TINY_MCP_PID_FILE", started.to_str().unwrap())],
        Some(&mcp_marker),
    ));
    let claude = harness.claude();

    // Drop the run once the CLI is waiting on the model (its MCP server is up by then).
    let running = claude.run(&run);
    let reached_model = harness.server.wait_for_requests(1, Duration::from_mins(1));
    tokio::select! {
        outcome = running => panic!("the run ended on its own: {outcome:?}"),
        reached = reached_model => assert!(reached, "the CLI never reached the model"),
    }

    // The run's future is dropped: its processes are gone already.
    assert!(started.exists(), "the MCP server ran");
    assert_eq!(
        live_processes_with_argument(&mcp_marker),
        Vec::<u32>::new(),
        "the MCP server outlived the cancelled run"
    );
}

#[tokio::test]
async fn a_command_the_real_cli_ran_in_a_session_of_its_own_is_gone_when_the_run_returns() {
    let detached = marker(1);
    // Claude Code already starts each Bash-tool command in a session of its
    // own; this one detaches a grandchild into yet another and returns. (No
    // `grep` here: Claude Code's shell runs its own embedded search for it.)
    let command = format!(
        "setsid sleep {detached} >/dev/null 2>&1 </dev/null & pid=$!; \
         until case \"$(tr '\\0' ' ' < /proc/$pid/cmdline 2>/dev/null)\" in *sleep*) true ;; \
         *) false ;; esac; do :; done; echo started"
    );
    let Some(mut harness) = Harness::start(Script::new([
        Turn::tool(
            "Bash",
            json!({"command": command, "description": "Start a detached process"}),
        ),
        Turn::decide(|request| {
            let results = request.last_tool_results();
            assert!(results[0].text.contains("started"), "{results:?}");
            Turn::text("Started it.")
        }),
    ]))
    .await
    else {
        return;
    };

    harness.settings.timeout = Duration::from_secs(25);
    let agent_run = harness.claude().run(&harness.run("Go.")).await;
    let agent_run = agent_run.unwrap_or_else(|error| {
        panic!(
            "{error}\n{}",
            std::fs::read_to_string(harness.run_directory.path().join("run/transcript.jsonl"))
                .unwrap()
        )
    });

    assert!(agent_run.is_success(), "{agent_run:?}");
    assert_eq!(harness.server.requests().len(), 2, "the command ran");
    assert_eq!(live_processes_with_argument(&detached), Vec::<u32>::new());
}

#[tokio::test]
async fn a_timeout_kills_every_process_of_the_run_even_in_a_session_of_its_own() {
    let directory = tempfile::tempdir().unwrap();
    let started = directory.path().join("started");
    let in_group = marker(1);
    let own_session = marker(2);
    // A child in the CLI's group and one that left it with setsid; each is
    // seen running (its command line is sleep's) before the script waits.
    let fake = script(
        directory.path(),
        "fake-claude",
        &format!(
            "sleep {in_group} &\n\
             until grep -qs sleep /proc/$!/cmdline; do :; done\n\
             setsid sleep {own_session} >/dev/null 2>&1 </dev/null &\n\
             until grep -qs sleep /proc/$!/cmdline; do :; done\n\
             echo yes > {}\n\
             wait",
            started.display()
        ),
    );
    let error = run_fake(
        directory.path(),
        "run",
        ClaudeCodeSettings::new(&fake, "m").with_timeout(Duration::from_secs(3)),
    )
    .await
    .unwrap_err();

    assert!(matches!(error, AgentError::TimedOut { .. }), "{error:?}");
    assert!(started.exists(), "both children were started");
    assert_eq!(live_processes_with_argument(&in_group), Vec::<u32>::new());
    assert_eq!(
        live_processes_with_argument(&own_session),
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn a_cli_that_exits_leaving_a_detached_child_leaves_nothing_behind() {
    let directory = tempfile::tempdir().unwrap();
    let detached = marker(1);
    let fake = script(
        directory.path(),
        "fake-claude",
        &format!(
            "setsid sleep {detached} >/dev/null 2>&1 </dev/null &\n\
             until grep -qs sleep /proc/$!/cmdline; do :; done\n\
             echo '{RESULT_LINE}'"
        ),
    );

    let run = run_fake(directory.path(), "run", ClaudeCodeSettings::new(&fake, "m"))
        .await
        .unwrap();

    assert!(run.is_success(), "{run:?}");
    assert_eq!(live_processes_with_argument(&detached), Vec::<u32>::new());
}

#[tokio::test]
async fn without_bubblewrap_the_run_is_refused_with_what_to_do() {
    let directory = tempfile::tempdir().unwrap();
    let fake = script(
        directory.path(),
        "fake-claude",
        &format!("echo '{RESULT_LINE}'"),
    );
    let error = run_fake(
        directory.path(),
        "run",
        ClaudeCodeSettings::new(&fake, "m").with_containment(ProcessContainment::PidNamespace {
            bwrap: "/nonexistent/bwrap".into(),
        }),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, AgentError::Containment { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("apt-get install bubblewrap"), "{message}");
    assert!(message.contains("/nonexistent/bwrap"), "{message}");

    // The weaker containment, chosen explicitly, still runs.
    let run = run_fake(
        directory.path(),
        "run2",
        ClaudeCodeSettings::new(&fake, "m").with_containment(ProcessContainment::ProcessGroupOnly),
    )
    .await
    .unwrap();
    assert!(run.is_success(), "{run:?}");
}

#[tokio::test]
async fn an_over_long_output_line_is_cut_not_held_and_the_result_still_counts() {
    let directory = tempfile::tempdir().unwrap();
    // 20 MiB on one line, then the result.
    let fake = script(
        directory.path(),
        "fake-claude",
        &format!("head -c 20971520 /dev/zero | tr '\\0' x\necho\necho '{RESULT_LINE}'"),
    );
    let run = ClaudeCodeRun::new("x", directory.path(), directory.path().join("run"));
    let agent_run = ClaudeCode::new(ClaudeCodeSettings::new(&fake, "m"))
        .run(&run)
        .await
        .unwrap();
    assert!(agent_run.is_success(), "{agent_run:?}");
    let transcript = std::fs::metadata(&run.transcript_path).unwrap().len();
    assert!(
        transcript < 17 * 1024 * 1024,
        "the over-long line was cut in the transcript ({transcript} bytes)"
    );
}

#[tokio::test]
async fn a_prompt_over_the_argument_limit_reaches_the_cli_and_stays_private() {
    let directory = tempfile::tempdir().unwrap();
    // The fake CLI answers with the length of what it read on stdin.
    let fake = script(
        directory.path(),
        "fake-claude",
        "length=$(wc -c)\n\
         echo \"{\\\"type\\\":\\\"result\\\",\\\"subtype\\\":\\\"success\\\",\\\"is_error\\\":false,\\\"result\\\":\\\"$length\\\",\\\"num_turns\\\":1,\\\"total_cost_usd\\\":0}\"",
    );
    // 256 KiB: twice what Linux allows one argument (MAX_ARG_STRLEN).
    let prompt = "p".repeat(256 * 1024);
    let run = ClaudeCodeRun::new(prompt, directory.path(), directory.path().join("run"));

    let agent_run = ClaudeCode::new(ClaudeCodeSettings::new(&fake, "m"))
        .run(&run)
        .await
        .unwrap();

    assert_eq!(agent_run.result.as_deref(), Some("262144"), "{agent_run:?}");
    for file in ["transcript.jsonl", "claude-stderr.log", "prompt.txt"] {
        let mode = std::fs::metadata(directory.path().join("run").join(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file}");
    }
}

#[tokio::test]
async fn output_without_a_result_is_a_clear_error_with_the_stderr_tail() {
    let directory = tempfile::tempdir().unwrap();
    let fake = script(
        directory.path(),
        "fake-claude",
        "echo 'not json at all'\necho '{\"type\":\"assistant\"}'\necho 'something broke' >&2\nexit 3",
    );
    let error = run_fake(directory.path(), "run", ClaudeCodeSettings::new(&fake, "m"))
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
    let error = run_fake(
        directory.path(),
        "run2",
        ClaudeCodeSettings::new(&empty, "m"),
    )
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
    let error = run_fake(directory.path(), "run", ClaudeCodeSettings::new(&fake, "m"))
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
    let error = run_fake(
        directory.path(),
        "run",
        ClaudeCodeSettings::new("/nonexistent/claude", "m"),
    )
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
