//! The Claude Code runner: builds the CLI's command line and environment, runs
//! it headless with a timeout (killing its whole process group), saves its
//! transcript, checks that our MCP server connected, and turns its result
//! into an [`AgentRun`].
//!
//! ```no_run
//! use review_agent::claude::{ClaudeCode, ClaudeCodeRun, ClaudeCodeSettings, McpConfig, McpServerCommand};
//! # async fn example(api_key: secrecy::SecretString) -> Result<(), review_agent::AgentError> {
//! let claude = ClaudeCode::new(
//!     ClaudeCodeSettings::new("claude", "claude-opus-4-6").with_api_key(api_key),
//! );
//! let mcp = McpServerCommand::current_review_bot(
//!     ["--snapshot".to_owned(), "/run/42/snapshot.json".to_owned()],
//!     [("COMMENTS_FILE".to_owned(), "/run/42/comments.jsonl".to_owned())].into(),
//! )
//! .expect("current executable");
//! let run = claude
//!     .run(
//!         &ClaudeCodeRun::new("Review pull request #7.", "/work/checkout", "/run/42")
//!             .with_system_prompt_file("/run/42/prompt.md")
//!             .with_mcp(McpConfig::review(mcp)),
//!     )
//!     .await?
//!     .into_success()?;
//! println!("{} turns, ${:.2}", run.num_turns, run.total_cost_usd);
//! # Ok(())
//! # }
//! ```
//!
//! The command (see [`ClaudeCode::arguments`]):
//!
//! ```text
//! claude --print --output-format stream-json --verbose --model M --max-turns N
//!        --thinking enabled|adaptive|disabled [--append-system-prompt-file FILE]
//!        [--mcp-config FILE] --strict-mcp-config --dangerously-skip-permissions
//!        --no-session-persistence [--allowedTools A,B] [--max-budget-usd X]  < prompt.txt
//! ```
//!
//! We ask for `stream-json` rather than `json`: its last line is the same
//! result object `json` prints, and its first line (`system`/`init`) is the
//! only place the CLI reports whether each MCP server connected — a server
//! that fails to start is otherwise silently ignored. The whole stream is
//! the run's transcript. The prompt is not an argument: it goes to the CLI's
//! standard input from a file in the run directory (`prompt.txt`, 0600), so
//! no prompt is too long for the system's argument limit (128 KiB for one
//! argument), none shows in `ps`, and neither a leading `-` nor the variadic
//! `--allowedTools` can swallow it; stdin ends where the file does, so the CLI
//! does not wait on it. The process runs in the checkout with the environment
//! described in [`environment`].
//!
//! **When `run` returns, the run's processes are gone** — on success, timeout,
//! error, and (blocking the thread for a moment) when the future is dropped.
//! The CLI runs under bubblewrap in a PID namespace of its own
//! ([`ProcessContainment`]): Claude Code puts each `Bash`-tool command in a
//! session of its own, out of reach of a process-group kill, but not out of
//! the namespace, whose processes the kernel kills when its first one exits.
//! At the end the runner kills the process group, reaps the leader, and waits
//! (bounded) until no member of the group or the namespace is alive
//! ([`review_sandbox`], which does all of this); survivors are an error that
//! names them. The group is only ever signalled while its leader is unreaped,
//! so its id cannot have been reused by an unrelated process.

pub mod config_directory;
pub mod environment;
pub mod home_directory;
pub mod key_proxy;
mod mcp_config;
mod outcome;
mod output;
pub mod scratch;
mod settings;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{
    AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, AsyncWriteExt as _, BufReader,
};
use tracing::Instrument as _;

pub use environment::is_github_credential;
pub use key_proxy::KeyProxy;
pub use mcp_config::{McpConfig, McpServerCommand, REVIEW_SERVER};
pub use outcome::{AgentOutcome, AgentRun, AgentSpend, PermissionDenial, TokenUsage};
pub use review_sandbox::{BWRAP_ARGUMENTS, Confinement, Survivor};
pub use settings::{ClaudeCodeRun, ClaudeCodeSettings, ProcessContainment, Thinking};

use review_sandbox::{Contained, SandboxError};

use crate::AgentError;
use environment::{ClaudeEnvironment, RunDirectories};
use output::{ResultEvent, StreamEvent};
use scratch::Scratch;

/// How much of stderr and of stray stdout lines an error message quotes.
const TAIL_BYTES: usize = 2_000;

/// Longest temporary directory we hand the CLI (it adds a socket path below it).
const SOCKET_DIRECTORY_LIMIT: usize = 80;

/// How long to wait for the output readers once the process group is gone
/// (a descendant that left the group could hold a pipe open).
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// The longest output line kept (stream-json puts one event on a line; a
/// result with a whole review in it is well under this). Longer lines are cut
/// in the transcript and reported, never held whole in memory.
const LINE_LIMIT: usize = 16 * 1024 * 1024;

/// The survivors as one line (for [`AgentError::Survivors`]).
pub(crate) fn describe_survivors(survivors: &[Survivor]) -> String {
    review_sandbox::describe(survivors)
}

/// Whether bubblewrap's message is about setting up a mount (its namespaces
/// work) rather than about making the namespaces.
fn is_mount_failure(reason: &str) -> bool {
    const MOUNT_FAILURES: [&str; 7] = [
        "Can't create file at",
        "Can't create dir",
        "Can't mkdir",
        "Can't find source path",
        "Can't bind mount",
        "Can't remount",
        "Can't make symlink",
    ];
    MOUNT_FAILURES
        .iter()
        .any(|failure| reason.contains(failure))
}

/// The agent's wording of a containment error.
fn agent_error(error: SandboxError) -> AgentError {
    match error {
        SandboxError::Containment { bwrap, reason } if is_mount_failure(&reason) => {
            AgentError::ConfinementSetup { bwrap, reason }
        }
        SandboxError::Containment { bwrap, reason } => AgentError::Containment { bwrap, reason },
        SandboxError::Spawn { program, source } => AgentError::Spawn {
            executable: program,
            source,
        },
        SandboxError::Process(source) => AgentError::Process(source),
        error @ SandboxError::Cgroup { .. } => AgentError::Cgroup(error),
        SandboxError::Survivors { survivors, waited } => {
            AgentError::Survivors { survivors, waited }
        }
        error @ (SandboxError::ConfinementNeedsBubblewrap
        | SandboxError::ConfinementPath { .. }) => AgentError::Containment {
            bwrap: PathBuf::from("bwrap"),
            reason: error.to_string(),
        },
    }
}

/// Runs Claude Code with fixed [`ClaudeCodeSettings`].
#[derive(Debug, Clone)]
pub struct ClaudeCode {
    settings: ClaudeCodeSettings,
}

impl ClaudeCode {
    /// A runner with these settings.
    pub fn new(settings: ClaudeCodeSettings) -> Self {
        Self { settings }
    }

    /// The settings.
    pub fn settings(&self) -> &ClaudeCodeSettings {
        &self.settings
    }

    /// The exact argument list for `run` (after the executable), with the MCP
    /// config at `mcp_config_path` when the run has one. The prompt is not
    /// among them: it goes to standard input.
    pub fn arguments(&self, run: &ClaudeCodeRun, mcp_config_path: Option<&Path>) -> Vec<OsString> {
        let settings = &self.settings;
        let mut arguments: Vec<OsString> = Vec::new();
        let mut push = |argument: &dyn AsRef<std::ffi::OsStr>| {
            arguments.push(argument.as_ref().to_owned());
        };
        push(&"--print");
        push(&"--output-format");
        push(&"stream-json");
        push(&"--verbose");
        push(&"--model");
        push(&settings.model);
        push(&"--max-turns");
        push(&settings.max_turns.to_string());
        push(&"--thinking");
        push(&settings.thinking.as_flag());
        if let Some(file) = &run.system_prompt_file {
            push(&"--append-system-prompt-file");
            push(file);
        }
        if let Some(path) = mcp_config_path {
            push(&"--mcp-config");
            push(&path);
        }
        push(&"--strict-mcp-config");
        push(&"--dangerously-skip-permissions");
        push(&"--no-session-persistence");
        if !run.allowed_tools.is_empty() {
            push(&"--allowedTools");
            push(&run.allowed_tools.join(","));
        }
        if let Some(budget) = settings.max_budget_usd {
            push(&"--max-budget-usd");
            push(&budget.to_string());
        }
        if let Some(schema) = &run.json_schema {
            push(&"--json-schema");
            push(&schema.to_string());
        }
        arguments
    }

    /// Run Claude Code once. `Ok` whenever the CLI reported a result — check
    /// [`AgentRun::outcome`] or call [`AgentRun::into_success`]; `Err` when it
    /// could not start, timed out, lost its MCP server, or printed no
    /// readable result.
    pub async fn run(&self, run: &ClaudeCodeRun) -> Result<AgentRun, AgentError> {
        let span = tracing::info_span!(
            "claude_code",
            model = %self.settings.model,
            working_directory = %run.working_directory.display(),
        );
        self.run_in_span(run).instrument(span).await
    }

    /// Runs `run` (given a `--json-schema`, [`ClaudeCodeRun::with_json_schema`])
    /// to success and reads its structured answer as `T`: `None` when the CLI
    /// gave none or it does not have `T`'s shape, and the caller then counts
    /// every item it asked about as unanswered.
    pub async fn run_structured<T: serde::de::DeserializeOwned>(
        &self,
        run: &ClaudeCodeRun,
    ) -> Result<(Option<T>, AgentRun), AgentError> {
        let mut agent_run = self.run(run).await?.into_success()?;
        let answer = agent_run
            .structured_output
            .take()
            .and_then(|value| serde_json::from_value(value).ok());
        Ok((answer, agent_run))
    }

    async fn run_in_span(&self, run: &ClaudeCodeRun) -> Result<AgentRun, AgentError> {
        let started = Instant::now();
        let proxy = self.start_proxy().await?;
        let prepared = self.prepare(run, proxy.as_ref())?;
        let arguments = self.arguments(run, prepared.mcp_config_path.as_deref());
        let prompt =
            std::fs::File::open(&prepared.prompt_path).map_err(|source| AgentError::File {
                action: "read back the prompt",
                path: prepared.prompt_path.clone(),
                source,
            })?;
        // The bot's files are made before the CLI starts, without following
        // links (the run directory is read-only to the run, but a run
        // resumed after a crash may find one planted by an older version).
        let transcript =
            create_private_file(&run.transcript_path).map_err(|source| AgentError::File {
                action: "create the transcript",
                path: run.transcript_path.clone(),
                source,
            })?;
        let stderr_log = StderrLog::create(&run.run_directory.join("claude-stderr.log"));
        let mut processes = self.spawn(run, &prepared, arguments, Stdio::from(prompt))?;
        let stderr = StderrCapture::start(processes.child_mut().stderr.take(), stderr_log);
        let stdout = processes
            .child_mut()
            .stdout
            .take()
            .expect("stdout is piped");
        let required: Vec<&str> = run
            .mcp
            .as_ref()
            .map(|mcp| mcp.servers().keys().map(String::as_str).collect())
            .unwrap_or_default();
        let watched = tokio::time::timeout(
            self.settings.timeout,
            watch(&mut processes, stdout, transcript, run, &required),
        )
        .await;

        // Whatever happened, nothing of the run outlives it.
        let finished = processes.finish().await.map_err(agent_error);
        let stderr_tail = stderr.finish().await;
        let status = match finished {
            Ok(status) => status,
            Err(error) => {
                if watched.is_err() {
                    tracing::warn!(timeout = ?self.settings.timeout, "Claude Code timed out");
                }
                return Err(error);
            }
        };

        let watched = match watched {
            Err(_elapsed) => {
                tracing::warn!(timeout = ?self.settings.timeout, "Claude Code timed out; killed its process group");
                return Err(AgentError::TimedOut {
                    after: self.settings.timeout,
                    transcript: run.transcript_path.clone(),
                    stderr_tail,
                });
            }
            Ok(Err(WatchError::Agent(error))) => return Err(error),
            Ok(Err(WatchError::McpServer { server, status })) => {
                let mcp = run
                    .mcp
                    .as_ref()
                    .expect("servers are only required with a config");
                return Err(AgentError::McpServerNotConnected {
                    command: mcp
                        .servers()
                        .get(&server)
                        .map(McpServerCommand::display)
                        .unwrap_or_default(),
                    server,
                    status,
                    config: prepared.mcp_config_path.unwrap_or_default(),
                    stderr_tail,
                });
            }
            Ok(Ok(watched)) => watched,
        };
        if watched.result.is_none()
            && let Some(error) = processes.failure(&stderr_tail)
        {
            return Err(agent_error(error));
        }
        let agent_run = conclude(watched, Some(status), stderr_tail, started.elapsed())?;
        Ok(never_reached_the_model(
            agent_run,
            proxy.as_ref().map(KeyProxy::forwarded),
        ))
    }

    /// The real key never reaches the CLI's environment: with an API key,
    /// the run gets a loopback proxy and a key of its own (`key_proxy`).
    async fn start_proxy(&self) -> Result<Option<KeyProxy>, AgentError> {
        let Some(api_key) = &self.settings.api_key else {
            return Ok(None);
        };
        KeyProxy::start(
            self.settings
                .base_url
                .as_deref()
                .unwrap_or(key_proxy::DEFAULT_UPSTREAM),
            api_key.clone(),
            self.settings.model_request_limit(),
        )
        .await
        .map(Some)
    }

    /// `claude --version`, started exactly as a run starts the CLI: the same
    /// executable (resolved the same way), containment, confinement and
    /// environment, with `run_directory` as its run directory (and
    /// `run_directory.scratch` beside it as its scratch directory).
    /// `review-bot doctor` uses it, so what it passes works in a review.
    pub async fn version(&self, run_directory: &Path) -> Result<String, AgentError> {
        let working_directory = run_directory.join("work");
        std::fs::create_dir_all(&working_directory).map_err(|source| AgentError::File {
            action: "create the directory",
            path: working_directory.clone(),
            source,
        })?;
        let run = ClaudeCodeRun::new("", &working_directory, run_directory);
        let prepared = self.prepare(&run, None)?;
        let stderr_log = StderrLog::create(&run_directory.join("claude-stderr.log"));
        let mut processes = self.spawn(
            &run,
            &prepared,
            vec![OsString::from("--version")],
            Stdio::null(),
        )?;
        let mut stdout = processes
            .child_mut()
            .stdout
            .take()
            .expect("stdout is piped");
        let stderr = StderrCapture::start(processes.child_mut().stderr.take(), stderr_log);
        let mut printed = Vec::new();
        let read = tokio::time::timeout(self.settings.timeout, async {
            (&mut stdout)
                .take(64 * 1024)
                .read_to_end(&mut printed)
                .await
        })
        .await;
        let status = processes.finish().await.map_err(agent_error)?;
        let stderr_tail = stderr.finish().await;
        let version = String::from_utf8_lossy(&printed).trim().to_owned();
        match read {
            Ok(Ok(_)) if status.success() && !version.is_empty() => Ok(version),
            Err(_elapsed) => Err(AgentError::TimedOut {
                after: self.settings.timeout,
                transcript: run_directory.join("claude-stderr.log"),
                stderr_tail,
            }),
            _ => Err(processes.failure(&stderr_tail).map(agent_error).unwrap_or(
                AgentError::NoResult {
                    exit: status.to_string(),
                    stderr_tail,
                    stdout_tail: version,
                },
            )),
        }
    }

    /// Start the CLI (under bubblewrap, unless configured otherwise) in a
    /// process group of its own, `stdin` (the prompt) on its standard input.
    fn spawn(
        &self,
        run: &ClaudeCodeRun,
        prepared: &Prepared,
        arguments: Vec<OsString>,
        stdin: Stdio,
    ) -> Result<Contained, AgentError> {
        tracing::debug!(
            arguments = arguments.len(),
            environment = ?prepared.environment.names(),
            executable = %prepared.executable.display(),
            "starting Claude Code"
        );
        let mut command = self
            .settings
            .containment
            .command_with(&prepared.executable, prepared.confinement.as_ref())
            .map_err(agent_error)?;
        command
            .args(arguments)
            .current_dir(&run.working_directory)
            .env_clear()
            .envs(
                prepared
                    .environment
                    .variables
                    .iter()
                    .map(|(name, value)| (name, value)),
            )
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Contained::spawn(
            &self.settings.containment,
            &prepared.executable,
            &mut command,
        )
        .map_err(agent_error)
    }

    /// Create the run's directories and files and its environment.
    fn prepare(
        &self,
        run: &ClaudeCodeRun,
        proxy: Option<&KeyProxy>,
    ) -> Result<Prepared, AgentError> {
        let create = |path: &Path| {
            std::fs::create_dir_all(path).map_err(|source| AgentError::File {
                action: "create the directory",
                path: path.to_owned(),
                source,
            })
        };
        create(&run.run_directory)?;
        // Everything the run may write is in its scratch directory, beside
        // the run directory (which it sees read-only): made anew, the
        // operator's login copied into a fresh configuration directory
        // before anything of the run starts (issue 26).
        let scratch = Scratch::create(&run.scratch_directory)?;
        let config_directory =
            config_directory::prepare(scratch.path(), self.settings.config_directory.as_deref())?;
        let mcp_config_path = match &run.mcp {
            Some(mcp) => {
                let path = run.run_directory.join("mcp-config.json");
                mcp.write(&path)?;
                Some(path)
            }
            None => None,
        };
        // The CLI puts a Unix socket in its temporary directory; keep it in the
        // scratch directory (removed with it) unless the path would be too
        // long for a socket (108 bytes, with `/cc-socks/NNNNNNN.sock` to add).
        let temporary_directory = scratch.path().join(scratch::TEMPORARY_NAME);
        let temporary_directory = if temporary_directory.as_os_str().len() <= SOCKET_DIRECTORY_LIMIT
        {
            Some(scratch.directory(scratch::TEMPORARY_NAME)?)
        } else {
            tracing::debug!(
                "run directory path too long for Claude Code's socket; using its default temporary directory"
            );
            None
        };
        let prompt_path = run.run_directory.join("prompt.txt");
        write_private_file(&prompt_path, run.prompt.as_bytes()).map_err(|source| {
            AgentError::File {
                action: "write the prompt",
                path: prompt_path.clone(),
                source,
            }
        })?;
        // Confined, a configured home is copied into the run's own
        // (`home_directory`): one shared between runs would carry what one
        // run plants (a `.bashrc`) into the next.
        let home_directory = match (&self.settings.home_directory, &self.settings.confinement) {
            (Some(template), Some(_)) => {
                let home = scratch.directory(scratch::HOME_NAME)?;
                home_directory::copy_template(template, &home)?;
                home
            }
            (Some(directory), None) => {
                create(directory)?;
                directory.clone()
            }
            (None, _) => scratch.directory(scratch::HOME_NAME)?,
        };
        let proxied;
        let environment_settings = match proxy {
            Some(proxy) => {
                let mut settings = self.settings.clone();
                settings.base_url = Some(proxy.base_url());
                settings.api_key = Some(proxy.run_key().clone());
                proxied = settings;
                &proxied
            }
            None => &self.settings,
        };
        let environment = ClaudeEnvironment::build(
            environment_settings,
            RunDirectories {
                config: &config_directory,
                home: &home_directory,
                temporary: temporary_directory.as_deref(),
            },
            &run.environment,
        )?;
        let (confinement, executable) = match &self.settings.confinement {
            Some(confinement) => {
                // Confined, the CLI is started at its canonical path: a
                // link to it (`/usr/local/bin/claude → /opt/…`) would have
                // to be recreated inside, which bubblewrap cannot do in a
                // read-only directory ("Can't create file at …").
                let executable =
                    find_executable(&self.settings.executable, environment.get("PATH"))
                        .and_then(|found| std::fs::canonicalize(found).ok())
                        .unwrap_or_else(|| self.settings.executable.clone());
                // The scratch directory (home, tmp and configuration
                // directory inside) and the caller's output directories;
                // never the run directory.
                let mut writable: Vec<&Path> = vec![scratch.path()];
                writable.extend(run.output_directories.iter().map(PathBuf::as_path));
                let confinement =
                    Self::run_confinement(confinement, run, &writable, &environment, &executable)?;
                (Some(confinement), executable)
            }
            None => (None, self.settings.executable.clone()),
        };
        Ok(Prepared {
            executable,
            mcp_config_path,
            prompt_path,
            environment,
            confinement,
            _scratch: scratch,
        })
    }

    /// The configured confinement plus the run's own paths: the working
    /// directory (with its `.git` and repository read-only), `writable`, the
    /// run directory read-only (the MCP config and what the caller put there
    /// for the MCP servers), the CLI's executable, the MCP servers'
    /// executables and the system prompt file.
    fn run_confinement(
        configured: &Confinement,
        run: &ClaudeCodeRun,
        writable: &[&Path],
        environment: &ClaudeEnvironment,
        executable: &Path,
    ) -> Result<Confinement, AgentError> {
        let mut confinement = configured
            .clone()
            .with_git_worktree(&run.working_directory)
            .map_err(agent_error)?;
        for path in writable {
            confinement = confinement.with_writable(*path);
        }
        confinement = confinement.with_readable(&run.run_directory);
        let search_path = environment.get("PATH");
        let executables = std::iter::once(executable).chain(run.mcp.iter().flat_map(|mcp| {
            mcp.servers()
                .values()
                .map(|server| server.command.as_path())
        }));
        for executable in executables {
            if let Some(found) = find_executable(executable, search_path) {
                confinement = confinement.with_readable(found);
            }
        }
        if let Some(file) = &run.system_prompt_file {
            confinement = confinement.with_readable(file);
        }
        Ok(confinement)
    }
}

/// Where `program` is: itself when it names a path, else the first match in
/// `search_path`.
fn find_executable(program: &Path, search_path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return Some(program.to_owned());
    }
    std::env::split_paths(search_path?)
        .map(|directory| directory.join(program))
        .find(|candidate| candidate.is_file())
}

struct Prepared {
    /// The CLI as started: its canonical path when confined.
    executable: PathBuf,
    mcp_config_path: Option<PathBuf>,
    /// The prompt, given to the CLI as its standard input.
    prompt_path: PathBuf,
    environment: ClaudeEnvironment,
    /// The run's confinement, when configured.
    confinement: Option<Confinement>,
    /// The run's scratch directory, removed when this is dropped (the run
    /// has ended: `run` and `version` keep it until their processes are
    /// gone). Never read: a guard.
    _scratch: Scratch,
}

/// Create (or truncate) a private file (see [`review_sandbox::create_private_file`])
/// for async writing.
fn create_private_file(path: &Path) -> std::io::Result<tokio::fs::File> {
    review_sandbox::create_private_file(path).map(tokio::fs::File::from_std)
}

/// Write a private file (see [`review_sandbox::create_private_file`]).
fn write_private_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    review_sandbox::create_private_file(path)?.write_all(contents)
}

/// A run that reported success but never reached the model (0 turns, or no
/// request through its key proxy — a planted hook that blocks the prompt
/// ends a run like that) is a failed run, never a clean one.
fn never_reached_the_model(mut agent_run: AgentRun, forwarded: Option<u32>) -> AgentRun {
    if agent_run.is_success() && (agent_run.num_turns == 0 || forwarded == Some(0)) {
        tracing::warn!(
            turns = agent_run.num_turns,
            model_requests = ?forwarded,
            "Claude Code reported success without reaching the model; the run failed"
        );
        agent_run.outcome = AgentOutcome::ExecutionError {
            message: format!(
                "Claude Code reported success after {} turns and {} model requests: the run \
                 never reached the model (a hook or setting in the checkout may have stopped \
                 the prompt); its result is not a review",
                agent_run.num_turns,
                forwarded.map_or_else(|| "unknown".to_owned(), |count| count.to_string())
            ),
        };
    }
    agent_run
}

/// Turn what the CLI printed into the run's result.
fn conclude(
    watched: Watched,
    status: Option<ExitStatus>,
    stderr_tail: String,
    measured: Duration,
) -> Result<AgentRun, AgentError> {
    let exit = status.map_or_else(|| "status unknown".to_owned(), |status| status.to_string());
    match watched.result {
        Some(Ok(result)) => {
            let agent_run = result.into_run(status.and_then(|status| status.code()), measured);
            tracing::info!(
                outcome = %agent_run.outcome,
                turns = agent_run.num_turns,
                cost_usd = agent_run.total_cost_usd,
                "Claude Code finished"
            );
            Ok(agent_run)
        }
        Some(Err(reason)) => Err(AgentError::MalformedResult {
            reason,
            stderr_tail,
        }),
        None => Err(AgentError::NoResult {
            exit,
            stderr_tail,
            stdout_tail: watched.stray_stdout.text(),
        }),
    }
}

/// Saves the CLI's stderr to a file and keeps its tail for error messages.
struct StderrCapture {
    tail: Arc<Mutex<Tail>>,
    reader: Option<tokio::task::JoinHandle<()>>,
}

impl StderrCapture {
    fn start(stderr: Option<tokio::process::ChildStderr>, log: StderrLog) -> Self {
        let tail = Arc::new(Mutex::new(Tail::default()));
        let reader =
            stderr.map(|stderr| tokio::spawn(copy_with_tail(stderr, log, Arc::clone(&tail))));
        Self { tail, reader }
    }

    /// The tail, once the stream closed (or [`DRAIN_LIMIT`] passed).
    async fn finish(self) -> String {
        if let Some(reader) = self.reader
            && tokio::time::timeout(DRAIN_LIMIT, reader).await.is_err()
        {
            tracing::warn!("Claude Code's stderr stayed open after its process group was killed");
        }
        self.tail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .text()
    }
}

#[derive(Debug)]
enum WatchError {
    Agent(AgentError),
    McpServer { server: String, status: String },
}

struct Watched {
    result: Option<Result<ResultEvent, String>>,
    stray_stdout: Tail,
}

/// Read the CLI's output until it closes: save every line to the transcript,
/// check the MCP servers on `init`, keep the result.
async fn watch(
    processes: &mut Contained,
    stdout: impl AsyncRead + Unpin,
    transcript: tokio::fs::File,
    run: &ClaudeCodeRun,
    required: &[&str],
) -> Result<Watched, WatchError> {
    let transcript_error = |source| {
        WatchError::Agent(AgentError::File {
            action: "write the transcript",
            path: run.transcript_path.clone(),
            source,
        })
    };
    let mut transcript = tokio::io::BufWriter::new(transcript);
    let mut stdout = BufReader::new(stdout);
    let mut line = Vec::new();
    let mut watched = Watched {
        result: None,
        stray_stdout: Tail::default(),
    };
    let mut init_seen = false;
    let mut leader_exited = false;
    loop {
        let length = tokio::select! {
            length = read_line_bounded(&mut stdout, &mut line, LINE_LIMIT) => {
                length.map_err(|error| WatchError::Agent(AgentError::Process(error)))?
            }
            () = processes.leader_exited(), if !leader_exited => {
                leader_exited = true;
                // Anything the CLI left running goes now, so our pipes close.
                processes.kill();
                continue;
            }
        };
        let Some(length) = length else { break };
        transcript
            .write_all(&line)
            .await
            .map_err(transcript_error)?;
        transcript
            .write_all(b"\n")
            .await
            .map_err(transcript_error)?;
        // Line by line, so a run killed at its timeout leaves the whole
        // transcript up to that moment for the operator to read.
        transcript.flush().await.map_err(transcript_error)?;
        let text = String::from_utf8_lossy(&line);
        if length > line.len() {
            tracing::warn!(
                bytes = length,
                limit = LINE_LIMIT,
                "Claude Code printed an output line over the limit; kept its start in the transcript"
            );
            if text.contains(r#""type":"result""#) {
                watched.result = Some(Err(format!(
                    "its result line is {length} bytes, over the {LINE_LIMIT}-byte limit"
                )));
            } else {
                watched.stray_stdout.push(b"(an over-long output line)");
            }
            continue;
        }
        match output::parse_line(&text) {
            None => watched.stray_stdout.push(&line),
            Some(Ok(StreamEvent::System(system))) if system.subtype == "init" => {
                init_seen = true;
                for server in required {
                    let status = system
                        .mcp_servers
                        .iter()
                        .find(|status| status.name == *server)
                        .map_or("missing", |status| status.status.as_str());
                    if status != "connected" {
                        transcript.flush().await.map_err(transcript_error)?;
                        return Err(WatchError::McpServer {
                            server: (*server).to_owned(),
                            status: status.to_owned(),
                        });
                    }
                }
            }
            Some(Ok(StreamEvent::Result(result))) => watched.result = Some(Ok(result)),
            Some(Ok(_)) => {}
            Some(Err(error)) => {
                if text.contains(r#""type":"result""#) {
                    watched.result = Some(Err(error.to_string()));
                } else {
                    tracing::debug!(%error, "skipping an output line we do not understand");
                }
            }
        }
    }
    transcript.flush().await.map_err(transcript_error)?;
    if let (false, Some(server), Some(Ok(_))) = (init_seen, required.first(), &watched.result) {
        return Err(WatchError::McpServer {
            server: (*server).to_owned(),
            status: "unknown (Claude Code printed no init message)".to_owned(),
        });
    }
    Ok(watched)
}

/// Read one line (without its `\n`) into `line`, keeping at most `limit`
/// bytes of it; the line's whole length, or `None` at the end of the stream.
/// Memory stays bounded whatever the other side prints.
async fn read_line_bounded(
    reader: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<Option<usize>> {
    line.clear();
    let mut length = 0;
    let mut started = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(started.then_some(length));
        }
        started = true;
        let newline = available.iter().position(|byte| *byte == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        let room = limit.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        length += chunk.len();
        let consumed = newline.map_or(available.len(), |position| position + 1);
        reader.consume(consumed);
        if newline.is_some() {
            return Ok(Some(length));
        }
    }
}

/// The last [`TAIL_BYTES`] of a stream.
#[derive(Debug, Default)]
struct Tail {
    bytes: Vec<u8>,
}

impl Tail {
    /// Add a line.
    fn push(&mut self, line: &[u8]) {
        if !self.bytes.is_empty() && self.bytes.last() != Some(&b'\n') {
            self.bytes.push(b'\n');
        }
        self.append(line);
    }

    /// Add raw bytes.
    fn append(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
        if self.bytes.len() > TAIL_BYTES {
            let excess = self.bytes.len() - TAIL_BYTES;
            self.bytes.drain(..excess);
        }
    }

    fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.bytes).trim().to_owned();
        if text.is_empty() {
            "(empty)".to_owned()
        } else {
            text
        }
    }
}

/// Where the CLI's stderr is saved (best effort): made before the CLI
/// starts, `None` when it could not be.
struct StderrLog(Option<tokio::fs::File>);

impl StderrLog {
    fn create(path: &Path) -> Self {
        match create_private_file(path) {
            Ok(file) => Self(Some(file)),
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "could not save Claude Code's stderr");
                Self(None)
            }
        }
    }
}

/// Copy a stream to `log` (best effort) and keep its tail.
async fn copy_with_tail(
    mut stream: impl AsyncRead + Unpin,
    log: StderrLog,
    tail: Arc<Mutex<Tail>>,
) {
    let mut file = log.0;
    let mut buffer = vec![0; 8 * 1024];
    loop {
        let read = match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let chunk = &buffer[..read];
        tail.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .append(chunk);
        if let Some(open) = file.as_mut()
            && open.write_all(chunk).await.is_err()
        {
            file = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_is_there_and_the_prompt_is_not_an_argument() {
        let claude = ClaudeCode::new(
            ClaudeCodeSettings::new("claude", "claude-opus-4-6")
                .with_max_turns(7)
                .with_thinking(Thinking::Adaptive)
                .with_max_budget_usd(2.5),
        );
        let run = ClaudeCodeRun::new("-review this", "/checkout", "/run")
            .with_system_prompt_file("/run/prompt.md")
            .with_allowed_tools([
                "Read".to_owned(),
                "mcp__review__leave_general_comment".to_owned(),
            ]);
        let arguments: Vec<String> = claude
            .arguments(&run, Some(Path::new("/run/mcp.json")))
            .into_iter()
            .map(|argument| argument.into_string().unwrap())
            .collect();
        assert_eq!(
            arguments,
            [
                "--print",
                "--output-format",
                "stream-json",
                "--verbose",
                "--model",
                "claude-opus-4-6",
                "--max-turns",
                "7",
                "--thinking",
                "adaptive",
                "--append-system-prompt-file",
                "/run/prompt.md",
                "--mcp-config",
                "/run/mcp.json",
                "--strict-mcp-config",
                "--dangerously-skip-permissions",
                "--no-session-persistence",
                "--allowedTools",
                "Read,mcp__review__leave_general_comment",
                "--max-budget-usd",
                "2.5",
            ]
        );
    }

    #[test]
    fn a_tail_keeps_the_end() {
        let mut tail = Tail::default();
        tail.push(&vec![b'a'; TAIL_BYTES]);
        tail.push(b"last line");
        assert!(tail.text().ends_with("\nlast line"));
        assert!(tail.bytes.len() <= TAIL_BYTES);
        assert_eq!(Tail::default().text(), "(empty)");
    }
}
