//! The real CLI confined (issue 18): its `Bash` and `Read` tools reach
//! nothing of the bot's — not a config file beside it, not the bot's
//! `/proc/<pid>/environ` — while it still talks to the model on loopback,
//! works in its checkout and starts its MCP server.

use review_agent::claude::Confinement;
use review_testkit::model::{Script, ToolCall, Turn};
use serde_json::json;

use crate::support::{Harness, tiny_mcp_server};

/// The canary in the stand-in for the bot's config file.
const CANARY: &str = "canary-91e2-not-for-the-agent";

#[tokio::test]
async fn the_agents_tools_reach_nothing_of_the_bots_and_its_mcp_server_still_runs() {
    let outside = tempfile::tempdir().unwrap();
    let config = outside.path().join("review-bot.toml");
    std::fs::write(&config, format!("[github]\ntoken = \"{CANARY}\"\n")).unwrap();
    let config = config.display().to_string();
    // The test process is the bot; cargo gives it CARGO_MANIFEST_DIR.
    let environ = format!("tr '\\0' '\\n' < /proc/{}/environ", std::process::id());
    let Some(mut harness) = Harness::start(Script::new([
        Turn::tools([
            ToolCall::new(
                "Bash",
                json!({"command": format!("cat {config}"), "description": "Read the config"}),
            ),
            ToolCall::new("Read", json!({"file_path": config})),
            ToolCall::new(
                "Bash",
                json!({"command": environ, "description": "Read the bot's environment"}),
            ),
            ToolCall::new(
                "Bash",
                json!({
                    "command": "echo written > written.txt && echo \"inside $(cat written.txt)\"",
                    "description": "Write in the checkout"
                }),
            ),
            ToolCall::new("mcp__review__echo_env", json!({})),
        ]),
        Turn::text("Done."),
    ]))
    .await
    else {
        return;
    };
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures");
    harness.settings = harness.settings.clone().with_confinement(
        Confinement::new()
            .with_readable(review_testkit::tools::tools_dir().join("claude-code"))
            .with_readable(fixtures),
    );
    let run = harness.run("Try it.").with_mcp(tiny_mcp_server(&[]));

    let agent_run = harness.claude().run(&run).await.unwrap_or_else(|error| {
        panic!(
            "{error}\n{}",
            std::fs::read_to_string(&run.transcript_path).unwrap_or_default()
        )
    });

    assert!(agent_run.is_success(), "{agent_run:?}");
    let requests = harness.server.requests();
    assert_eq!(requests.len(), 2, "the tools ran and the model answered");
    // Claude Code runs the calls in parallel: put the results back in the
    // order of the calls (the scripted ids count up).
    let mut results = requests[1].last_tool_results();
    results.sort_by(|left, right| left.tool_use_id.cmp(&right.tool_use_id));
    assert_eq!(results.len(), 5, "{results:?}");
    for result in &results {
        assert!(!result.text.contains(CANARY), "{result:?}");
        assert!(!result.text.contains("CARGO_MANIFEST_DIR"), "{result:?}");
    }
    // Not there at all (not merely unreadable): the config file and the
    // bot's process are outside what the run sees.
    assert!(results[0].text.contains("No such file"), "{results:?}");
    assert!(results[1].is_error, "{results:?}");
    assert!(results[2].text.contains("No such file"), "{results:?}");
    assert!(results[3].text.contains("inside written"), "{results:?}");
    assert!(!results[4].is_error, "the MCP server answered: {results:?}");
    assert_eq!(
        std::fs::read_to_string(harness.checkout_file("written.txt")).unwrap(),
        "written\n"
    );
}

#[tokio::test]
async fn a_confined_runs_detached_bash_command_is_gone_when_the_run_is_stopped() {
    use std::time::Duration;

    use review_testkit::processes::{live_processes_with_argument, marker};

    let detached = marker(1);
    let command = format!(
        "setsid sleep {detached} >/dev/null 2>&1 </dev/null & pid=$!; \
         until case \"$(tr '\\0' ' ' < /proc/$pid/cmdline 2>/dev/null)\" in *sleep*) true ;; \
         *) false ;; esac; do :; done; echo started"
    );
    // The command detaches a process, then the model hangs: the run is
    // stopped while the detached process would still be running.
    let Some(mut harness) = Harness::start(
        Script::new([Turn::tool(
            "Bash",
            json!({"command": command, "description": "Start a detached process"}),
        )])
        .then_forever(Turn::hang()),
    )
    .await
    else {
        return;
    };
    harness.settings = harness.settings.clone().with_confinement(
        Confinement::new().with_readable(review_testkit::tools::tools_dir().join("claude-code")),
    );
    let run = harness.run("Go.");
    let claude = harness.claude();
    let running = claude.run(&run);
    let command_ran = harness.server.wait_for_requests(2, Duration::from_mins(2));
    tokio::select! {
        outcome = running => panic!("the run ended on its own: {outcome:?}"),
        ran = command_ran => assert!(ran, "the Bash command never ran"),
    }
    let results = harness.server.requests()[1].last_tool_results();
    assert!(results[0].text.contains("started"), "{results:?}");
    // The run's future is dropped: every process of it is gone, the one in a
    // session of its own included.
    assert_eq!(live_processes_with_argument(&detached), Vec::<u32>::new());
}

/// Issue 26 item 1: the agent cannot create anything in its run directory,
/// where the bot writes `prompt.txt`, `claude-stderr.log` and
/// `mcp-config.json`. Its `Bash` tries, as an attacker would, to plant links
/// to the operator's file where those files go, to create files and
/// directories there, and to reach it through its home; all fail (the run
/// directory is read-only inside), while its home, in the scratch directory
/// beside it, is writable. The scratch directory is gone after the run.
/// Then, as if an older version had left the directory behind after a crash,
/// every file the bot writes there is a link to the operator's file and the
/// scratch directory a link to the operator's directory: the resumed run
/// writes through none of them, and the operator's file is unchanged.
#[tokio::test]
async fn a_resumed_run_directory_with_planted_links_is_never_written_through() {
    use std::os::unix::fs::symlink;

    let outside = tempfile::tempdir().unwrap();
    let config = outside.path().join("review-bot.toml");
    let operator = "[sandbox]\nmode = \"bwrap\"\n";
    std::fs::write(&config, operator).unwrap();
    // The run directory, as the agent finds it: beside its scratch
    // directory, which holds its home.
    let attack = format!(
        "run=\"${{HOME%.scratch/home}}\"; ls -d \"$run\" && \
         for name in prompt.txt claude-stderr.log mcp-config.json transcript.jsonl x; do \
           ln -sf {config} \"$run/$name\" 2>/dev/null && echo \"planted $name\"; \
           rm \"${{run:?}}/${{name:?}}\" 2>/dev/null && echo \"removed $name\"; done; \
         touch \"$run/new\" 2>/dev/null && echo 'created new'; \
         mkdir \"$run/home\" 2>/dev/null && echo 'created home'; \
         mv \"$run/mcp-config.json\" \"$run/moved\" 2>/dev/null && echo 'moved'; \
         touch \"$HOME/mine\" && echo 'home writable'; \
         echo tried",
        config = config.display()
    );
    let Some(mut harness) = Harness::start(Script::new([
        Turn::tool(
            "Bash",
            json!({"command": attack, "description": "Write into the run directory"}),
        ),
        Turn::text("Done."),
        Turn::text("Done again."),
    ]))
    .await
    else {
        return;
    };
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures");
    harness.settings = harness.settings.clone().with_confinement(
        Confinement::new()
            .with_readable(review_testkit::tools::tools_dir().join("claude-code"))
            .with_readable(fixtures),
    );
    let run = harness.run("Try it.").with_mcp(tiny_mcp_server(&[]));
    assert!(!run.scratch_directory.starts_with(&run.run_directory));

    let first = harness.claude().run(&run).await.unwrap();
    assert!(first.is_success(), "{first:?}");
    let results = harness.server.requests()[1].last_tool_results();
    let printed = results[0].text_without_reminders();
    assert!(printed.contains("tried"), "{results:?}");
    assert!(
        printed.contains(&run.run_directory.display().to_string()),
        "the agent found its run directory: {printed}"
    );
    assert!(printed.contains("home writable"), "{printed}");
    for refused in ["planted", "removed", "created", "moved"] {
        assert!(!printed.contains(refused), "the agent {refused}: {printed}");
    }
    let mut written: Vec<String> = std::fs::read_dir(&run.run_directory)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    written.sort();
    assert_eq!(
        written,
        [
            "claude-stderr.log",
            "mcp-config.json",
            "prompt.txt",
            "transcript.jsonl"
        ],
        "only the bot's own files are in the run directory"
    );
    assert!(
        std::fs::symlink_metadata(&run.scratch_directory).is_err(),
        "the scratch directory is removed when the run ends"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), operator);

    // What an older version's killed run may have left, as an attacker would.
    let planted = [
        run.run_directory.join("prompt.txt"),
        run.run_directory.join("claude-stderr.log"),
        run.run_directory.join("mcp-config.json"),
        run.transcript_path.clone(),
    ];
    for path in &planted {
        let _ = std::fs::remove_file(path);
        symlink(&config, path).unwrap();
    }
    symlink(outside.path(), &run.scratch_directory).unwrap();

    let second = harness.claude().run(&run).await.unwrap();
    assert!(second.is_success(), "{second:?}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), operator);
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        1,
        "nothing was written into the operator's directory"
    );
    for path in &planted {
        let kind = std::fs::symlink_metadata(path).unwrap().file_type();
        assert!(!kind.is_symlink(), "{} is still a link", path.display());
    }
    assert!(std::fs::symlink_metadata(&run.scratch_directory).is_err());
}
