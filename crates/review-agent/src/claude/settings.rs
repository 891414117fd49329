//! How review-bot runs Claude Code: the settings that hold for every run
//! (from the configuration file), and the per-run request.

use std::path::PathBuf;
use std::time::Duration;

use review_sandbox::Confinement;
use secrecy::SecretString;

use super::environment::DEFAULT_INHERITED;
use super::mcp_config::McpConfig;

/// Extended thinking, passed as `--thinking`. Claude Code 2.1.330 accepts
/// exactly `enabled`, `adaptive` and `disabled` (the flag needs a value; the
/// seed's bare `--thinking` is rejected). `enabled` gives a thinking budget on
/// models without adaptive thinking and adaptive thinking on those with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Thinking {
    /// `--thinking enabled` (the default: the seed asks for extended thinking).
    #[default]
    Enabled,
    /// `--thinking adaptive`.
    Adaptive,
    /// `--thinking disabled`.
    Disabled,
}

impl Thinking {
    /// The flag's value.
    pub fn as_flag(self) -> &'static str {
        match self {
            Self::Enabled => "enabled",
            Self::Adaptive => "adaptive",
            Self::Disabled => "disabled",
        }
    }
}

/// How the runner makes sure nothing of a run outlives it (review-sandbox's
/// [`Containment`](review_sandbox::Containment), named for the agent).
///
/// Killing the CLI's process group is not enough: Claude Code 2.1.330 starts
/// every `Bash`-tool command in a session of its own (so outside the group),
/// and anything the agent runs can call `setsid` too. A PID namespace holds
/// them all: when its first process exits, the kernel kills every other one.
pub use review_sandbox::Containment as ProcessContainment;

/// Model requests allowed per turn when no limit is configured.
pub const MODEL_REQUESTS_PER_TURN: u32 = 8;

/// Model requests allowed beyond those when no limit is configured.
pub const MODEL_REQUESTS_SPARE: u32 = 16;

/// Settings for every Claude Code run.
#[derive(Debug, Clone)]
pub struct ClaudeCodeSettings {
    /// The `claude` executable (a path, or a name looked up in `PATH`).
    pub executable: PathBuf,
    /// `--model`: a model name or alias.
    pub model: String,
    /// `--max-turns`: agentic turns before the run stops with `error_max_turns`.
    pub max_turns: u32,
    /// `--thinking`.
    pub thinking: Thinking,
    /// `--max-budget-usd`, when set.
    pub max_budget_usd: Option<f64>,
    /// `ANTHROPIC_API_KEY`. Without it the CLI uses the login in its config
    /// directory (see [`ClaudeCodeSettings::config_directory`]).
    pub api_key: Option<SecretString>,
    /// `ANTHROPIC_BASE_URL`: another Messages API endpoint (a gateway, or the
    /// test suite's scripted model server).
    pub base_url: Option<String>,
    /// `CLAUDE_CODE_MAX_RETRIES`: API retries per request (the CLI's default
    /// retries for minutes).
    pub max_retries: u32,
    /// Wall-clock limit for one run; past it the CLI is killed with its
    /// process group.
    pub timeout: Duration,
    /// A logged-in Claude Code's directory (e.g. `~/.claude`) whose login
    /// the runs use instead of an API key. It is never the run's
    /// `CLAUDE_CONFIG_DIR` and never visible to the run: every run gets a
    /// fresh configuration directory inside its run directory, and the login
    /// (`.credentials.json`, and the account fields of `.claude.json`, see
    /// [`super::config_directory`]) is copied into it. Nothing a run writes
    /// there (hooks in `settings.json`, plugins, commands, agents) reaches
    /// another run or this directory. `None` (the default): no login copied.
    pub config_directory: Option<PathBuf>,
    /// `HOME`'s contents for the CLI and everything it runs. `None` (the
    /// default) gives every run a fresh, empty home in its scratch
    /// directory: review-bot's own home may hold credentials
    /// (`~/.config/gh`, `~/.git-credentials`) and a shell profile the
    /// agent's commands would source. Confined, a configured directory is
    /// copied into that fresh home for each run ([`super::home_directory`]),
    /// never shown or written; unconfined, it is the home itself.
    pub home_directory: Option<PathBuf>,
    /// Names of variables copied from review-bot's environment (default
    /// [`DEFAULT_INHERITED`]). A GitHub credential is refused.
    pub inherited_environment: Vec<String>,
    /// The most requests the run's model-key proxy forwards (the `403`s
    /// after that end the run). `None` (the default):
    /// [`ClaudeCodeSettings::model_request_limit`] derives it from
    /// `max_turns`.
    pub max_model_requests: Option<u32>,
    /// How the run's processes are held together and killed.
    pub containment: ProcessContainment,
    /// What the CLI and everything it starts (its tools, the MCP servers) may
    /// see besides the run's own paths, which the runner adds: the working
    /// directory (writable, its `.git` and repository read-only), the run
    /// directory, home and config directory (writable), the CLI's executable,
    /// the MCP servers' executables and the system prompt file (read-only).
    /// Put the toolchains the agent's commands need and the CLI's install
    /// directory here (read-only), with the network on (the model API).
    /// `None` (the default): not confined, only the processes are held.
    pub confinement: Option<Confinement>,
}

impl ClaudeCodeSettings {
    /// Defaults: 30 turns, thinking enabled, 3 API retries, 30 minutes, no
    /// budget, fresh config directory per run, a PID namespace per run.
    pub fn new(executable: impl Into<PathBuf>, model: impl Into<String>) -> Self {
        Self {
            executable: executable.into(),
            model: model.into(),
            max_turns: 30,
            thinking: Thinking::default(),
            max_budget_usd: None,
            api_key: None,
            base_url: None,
            max_retries: 3,
            timeout: Duration::from_mins(30),
            config_directory: None,
            home_directory: None,
            inherited_environment: DEFAULT_INHERITED
                .iter()
                .map(|name| (*name).to_owned())
                .collect(),
            max_model_requests: None,
            containment: ProcessContainment::default(),
            confinement: None,
        }
    }

    /// The model requests one run may make: `max_model_requests`, else
    /// `8 × max_turns + 16` — one request per turn, each retried up to a few
    /// times, with room for subagents' turns — 256 for the default 30 turns.
    pub fn model_request_limit(&self) -> u32 {
        self.max_model_requests.unwrap_or_else(|| {
            self.max_turns
                .saturating_mul(MODEL_REQUESTS_PER_TURN)
                .saturating_add(MODEL_REQUESTS_SPARE)
        })
    }

    /// Set [`ClaudeCodeSettings::max_model_requests`].
    #[must_use]
    pub fn with_max_model_requests(mut self, max_model_requests: u32) -> Self {
        self.max_model_requests = Some(max_model_requests);
        self
    }

    /// Set [`ClaudeCodeSettings::confinement`].
    #[must_use]
    pub fn with_confinement(mut self, confinement: Confinement) -> Self {
        self.confinement = Some(confinement);
        self
    }

    /// Set [`ClaudeCodeSettings::containment`].
    #[must_use]
    pub fn with_containment(mut self, containment: ProcessContainment) -> Self {
        self.containment = containment;
        self
    }

    /// Set [`ClaudeCodeSettings::api_key`].
    #[must_use]
    pub fn with_api_key(mut self, api_key: SecretString) -> Self {
        self.api_key = Some(api_key);
        self
    }

    /// Set [`ClaudeCodeSettings::base_url`].
    #[must_use]
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// Set [`ClaudeCodeSettings::max_turns`].
    #[must_use]
    pub fn with_max_turns(mut self, max_turns: u32) -> Self {
        self.max_turns = max_turns;
        self
    }

    /// Set [`ClaudeCodeSettings::max_retries`].
    #[must_use]
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// Set [`ClaudeCodeSettings::timeout`].
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Set [`ClaudeCodeSettings::thinking`].
    #[must_use]
    pub fn with_thinking(mut self, thinking: Thinking) -> Self {
        self.thinking = thinking;
        self
    }

    /// Set [`ClaudeCodeSettings::max_budget_usd`].
    #[must_use]
    pub fn with_max_budget_usd(mut self, max_budget_usd: f64) -> Self {
        self.max_budget_usd = Some(max_budget_usd);
        self
    }
}

/// One Claude Code run.
#[derive(Debug, Clone)]
pub struct ClaudeCodeRun {
    /// The user message (the task).
    pub prompt: String,
    /// `--append-system-prompt-file`: our layered prompt, added to Claude
    /// Code's default system prompt (which keeps its built-in tools).
    pub system_prompt_file: Option<PathBuf>,
    /// The checkout the agent works in (its working directory; it reads
    /// `CLAUDE.md` from there).
    pub working_directory: PathBuf,
    /// The directory of the bot's own files of this run (the MCP config,
    /// the prompt, the stderr log). Created when missing; the caller
    /// removes it. A confined run sees it read-only: nothing it plants there
    /// is ever written through.
    pub run_directory: PathBuf,
    /// The only directory of the run's own a confined run can write: its
    /// `home/`, `tmp/` and Claude Code configuration directory
    /// (`claude-config/`). Made anew before the run (whatever a crashed run
    /// left there is removed first, links without being followed) and
    /// removed when the run ends. The bot writes nothing there once the run
    /// has started. Default: beside the run directory, `RUN_DIRECTORY.scratch`
    /// (its parent, which the run cannot write, holds it).
    pub scratch_directory: PathBuf,
    /// Directories the caller makes for what the run's processes hand back
    /// (the MCP server's comments file and review), shown writable. The
    /// caller reads what is in them as written by an attacker and writes
    /// nothing there itself.
    pub output_directories: Vec<PathBuf>,
    /// Where the CLI's output (stream-json, one event a line) is saved.
    pub transcript_path: PathBuf,
    /// MCP servers to start (`--mcp-config`, always with
    /// `--strict-mcp-config`). Every one must connect, or the run is stopped.
    pub mcp: Option<McpConfig>,
    /// `--allowedTools`, when not empty.
    pub allowed_tools: Vec<String>,
    /// Extra environment variables for the CLI (and so for its MCP servers
    /// and `Bash` commands). A GitHub credential is refused.
    pub environment: Vec<(String, String)>,
    /// `--json-schema`: the run must end by answering an object of this JSON
    /// Schema through the CLI's structured-output tool (the CLI checks it
    /// and asks the model again when it does not fit); the answer is
    /// [`super::AgentRun::structured_output`].
    pub json_schema: Option<serde_json::Value>,
}

impl ClaudeCodeRun {
    /// A run of `prompt` in `working_directory`, keeping scratch files and the
    /// transcript (`transcript.jsonl`) in `run_directory`.
    pub fn new(
        prompt: impl Into<String>,
        working_directory: impl Into<PathBuf>,
        run_directory: impl Into<PathBuf>,
    ) -> Self {
        let run_directory = run_directory.into();
        Self {
            prompt: prompt.into(),
            system_prompt_file: None,
            working_directory: working_directory.into(),
            transcript_path: run_directory.join("transcript.jsonl"),
            scratch_directory: default_scratch_directory(&run_directory),
            output_directories: Vec::new(),
            run_directory,
            mcp: None,
            allowed_tools: Vec::new(),
            environment: Vec::new(),
            json_schema: None,
        }
    }

    /// Set [`ClaudeCodeRun::json_schema`].
    #[must_use]
    pub fn with_json_schema(mut self, schema: serde_json::Value) -> Self {
        self.json_schema = Some(schema);
        self
    }

    /// Set [`ClaudeCodeRun::system_prompt_file`].
    #[must_use]
    pub fn with_system_prompt_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.system_prompt_file = Some(path.into());
        self
    }

    /// Set [`ClaudeCodeRun::mcp`].
    #[must_use]
    pub fn with_mcp(mut self, mcp: McpConfig) -> Self {
        self.mcp = Some(mcp);
        self
    }

    /// Set [`ClaudeCodeRun::scratch_directory`].
    #[must_use]
    pub fn with_scratch_directory(mut self, path: impl Into<PathBuf>) -> Self {
        self.scratch_directory = path.into();
        self
    }

    /// Add an output directory (see [`ClaudeCodeRun::output_directories`]);
    /// it must exist when the run starts.
    #[must_use]
    pub fn with_output_directory(mut self, path: impl Into<PathBuf>) -> Self {
        self.output_directories.push(path.into());
        self
    }

    /// Set [`ClaudeCodeRun::transcript_path`].
    #[must_use]
    pub fn with_transcript_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.transcript_path = path.into();
        self
    }

    /// Set [`ClaudeCodeRun::allowed_tools`].
    #[must_use]
    pub fn with_allowed_tools(mut self, tools: impl IntoIterator<Item = String>) -> Self {
        self.allowed_tools = tools.into_iter().collect();
        self
    }

    /// Add an environment variable (see [`ClaudeCodeRun::environment`]).
    #[must_use]
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.environment.push((name.into(), value.into()));
        self
    }
}

/// `RUN_DIRECTORY.scratch`, beside the run directory (inside it only when
/// the run directory's path has no last name, such as `/` or `..`).
fn default_scratch_directory(run_directory: &std::path::Path) -> PathBuf {
    match run_directory.file_name() {
        Some(name) => {
            let mut name = name.to_owned();
            name.push(".scratch");
            run_directory.with_file_name(name)
        }
        None => run_directory.join("scratch"),
    }
}
