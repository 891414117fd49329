//! Why an agent run failed, worded for the operator who reads the log.

use std::path::PathBuf;
use std::time::Duration;

use crate::claude::AgentRun;

/// An agent run that could not start, did not finish, or did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The CLI could not be started.
    #[error("{}", spawn_message(executable, source))]
    Spawn {
        /// The executable we tried.
        executable: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },

    /// bubblewrap, which gives the run a PID namespace of its own, could not
    /// be started or could not make the namespace.
    #[error(
        "could not contain the agent's processes with bubblewrap (`{}`): {reason}; install it \
         (apt-get install bubblewrap), allow unprivileged user namespaces \
         (sysctl kernel.unprivileged_userns_clone=1), or accept the weaker process-group \
         containment in the agent's settings",
        bwrap.display()
    )]
    Containment {
        /// The `bwrap` executable we tried.
        bwrap: PathBuf,
        /// What went wrong (the spawn error or what bwrap printed).
        reason: String,
    },

    /// bubblewrap runs, but could not set up one of the confinement's mounts
    /// (a path to show, a link to recreate): the namespaces work, so this is
    /// not about installing bubblewrap.
    #[error(
        "bubblewrap (`{}`) could not set up the agent's confinement: {reason}. The path it \
         names is one the run was to see (the CLI, its install directory, the checkout, the \
         run directory or a toolchain): check that it exists and is not a symbolic link into \
         a directory the confinement does not show; `review-bot doctor` starts the CLI the \
         same way",
        bwrap.display()
    )]
    ConfinementSetup {
        /// The `bwrap` executable.
        bwrap: PathBuf,
        /// What bubblewrap printed.
        reason: String,
    },

    /// Processes of the run were still alive after they were killed and the
    /// runner waited for them.
    #[error(
        "processes of the agent run were still alive {}s after they were killed: {}; they are \
         probably stuck in uninterruptible I/O (look at /proc/PID/stack) and will go when it \
         ends; nothing else of the run is left",
        waited.as_secs(),
        crate::claude::describe_survivors(survivors)
    )]
    Survivors {
        /// What was still alive.
        survivors: Vec<crate::claude::Survivor>,
        /// How long the runner waited.
        waited: Duration,
    },

    /// A file or directory the run needs could not be prepared or written.
    /// The run could not be put in a cgroup of its own
    /// (`sandbox.cgroup`); nothing of it started.
    #[error("{0}")]
    Cgroup(#[source] review_sandbox::SandboxError),

    #[error("could not {action} `{}`: {source}", path.display())]
    File {
        /// What we were doing ("create the run directory", "write the transcript", …).
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },

    /// A GitHub credential was about to be handed to the agent or its MCP server.
    #[error(
        "refusing to pass `{name}` to the agent: it looks like a GitHub credential, and the \
         agent never holds one in pipeline mode (the pipeline posts on its behalf); remove it \
         from the agent's environment"
    )]
    GitHubCredential {
        /// The variable's name.
        name: String,
    },

    /// An environment variable name or value the CLI cannot receive.
    #[error("invalid environment variable `{name}` for the agent: {reason}")]
    InvalidEnvironment {
        /// The variable's name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// A configured MCP server did not connect; Claude Code would have run
    /// without its tools.
    #[error(
        "the MCP server `{server}` did not connect (status: {status}); the agent would have run \
         without its tools, so the run was stopped. Check that `{command}` starts and speaks MCP \
         on stdio (config: {}). Claude Code's stderr: {stderr_tail}",
        config.display()
    )]
    McpServerNotConnected {
        /// The server's key in the MCP config (`review`).
        server: String,
        /// The status Claude Code reported (`failed`, `pending`, or `missing`).
        status: String,
        /// The server's command line.
        command: String,
        /// The MCP config file.
        config: PathBuf,
        /// The end of the CLI's stderr.
        stderr_tail: String,
    },

    /// The CLI ran past its time limit and was killed with its process group.
    #[error(
        "Claude Code did not finish within {}s and was killed with its process group; raise \
         the agent timeout or look at the transcript ({}). stderr: {stderr_tail}",
        after.as_secs(),
        transcript.display()
    )]
    TimedOut {
        /// The limit.
        after: Duration,
        /// What it printed so far.
        transcript: PathBuf,
        /// The end of its stderr.
        stderr_tail: String,
    },

    /// The CLI exited without printing a result message.
    #[error(
        "Claude Code exited ({exit}) without a result message; its output did not say how the run \
         ended. stderr: {stderr_tail}; last stdout: {stdout_tail}"
    )]
    NoResult {
        /// Exit status, as text.
        exit: String,
        /// The end of its stderr.
        stderr_tail: String,
        /// The end of its stdout (lines that were not a result).
        stdout_tail: String,
    },

    /// The CLI printed a result message we could not read.
    #[error(
        "Claude Code printed a result we could not read ({reason}); is its version supported? \
         stderr: {stderr_tail}"
    )]
    MalformedResult {
        /// What was wrong with it.
        reason: String,
        /// The end of its stderr.
        stderr_tail: String,
    },

    /// Reading the CLI's output or waiting for it failed.
    #[error("lost track of the Claude Code process: {0}")]
    Process(#[source] std::io::Error),

    /// The run finished, but not successfully (max turns, budget, API error, …).
    #[error("{}", unsuccessful_message(run))]
    Unsuccessful {
        /// The run, with its cost and turns, for the record.
        run: Box<AgentRun>,
    },
}

fn spawn_message(executable: &std::path::Path, source: &std::io::Error) -> String {
    let executable = executable.display();
    match source.kind() {
        std::io::ErrorKind::NotFound => format!(
            "could not start Claude Code at `{executable}`: {source}; install it (npm install -g \
             @anthropic-ai/claude-code) or set the agent's claude path in the configuration"
        ),
        std::io::ErrorKind::PermissionDenied => format!(
            "could not start Claude Code at `{executable}`: {source}; the file is not executable \
             by review-bot's user (check its mode and the directories above it)"
        ),
        std::io::ErrorKind::ArgumentListTooLong => format!(
            "could not start Claude Code at `{executable}`: its command line or environment is \
             too long for the system ({source}); shorten the configured environment variables"
        ),
        _ => format!("could not start Claude Code at `{executable}`: {source}"),
    }
}

fn unsuccessful_message(run: &AgentRun) -> String {
    format!(
        "the agent run did not succeed: {} (after {} turn{}, ${:.4})",
        run.outcome,
        run.num_turns,
        if run.num_turns == 1 { "" } else { "s" },
        run.total_cost_usd
    )
}
