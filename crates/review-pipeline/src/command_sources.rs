//! Where a job's build and test commands come from (issue 24, item 1), first
//! match wins:
//!
//! 1. the operator's configuration for the repository
//!    (`[repositories."OWNER/REPO".build]`, held here as [`OperatorCommands`]);
//! 2. the `.review-bot.toml` at the root of the pull request's **base** commit
//!    ([`read_at_commit`]), read from the mirror through the hardened
//!    [`Git::run`] — never from the head, so a pull request that adds or edits
//!    the file is built with the base's;
//! 3. `CLAUDE.md` / `README.md`, and 4. manifest inference — both read from
//!    the worktree by [`crate::build_gate::discover`].
//!
//! [`explicit`] picks between 1 and 2 and hands the winner, with its
//! [`Source`], to discovery. A `.review-bot.toml` that cannot be used (an
//! unknown key, a symbolic link, …) is [`RepositoryFile::Refused`]: the job goes
//! on with the next source, and the review flow tells the pull request once
//! ([`problem_thread`]).
//!
//! The file is read size-bounded: `git ls-tree` says what the entry is (a
//! symbolic link or a submodule is refused without reading it), `git cat-file
//! -s` its size (over [`repository_file::SIZE_LIMIT`] it is refused unread),
//! and only then `git cat-file blob`.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;

use review_core::build_commands::repository_file::{self, RepositoryFileError, RepositoryTables};
use review_core::build_commands::{CommandSet, REPOSITORY_FILE, Source};
use review_core::findings::noise::{NoiseControl, NoiseOverrides};
use uuid::Uuid;

use crate::checkout::CheckoutError;
use crate::git::Git;

/// The operator's commands, per repository (`owner/name`, matched without
/// regard to case, as GitHub does).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorCommands {
    /// Lower-cased `owner/name` → its commands.
    by_repository: BTreeMap<String, CommandSet>,
}

impl OperatorCommands {
    /// The commands configured per repository.
    pub fn new(repositories: impl IntoIterator<Item = (String, CommandSet)>) -> Self {
        Self {
            by_repository: repositories
                .into_iter()
                .map(|(name, commands)| (name.to_ascii_lowercase(), commands))
                .collect(),
        }
    }

    /// The commands configured for `repository` (`owner/name`), if any.
    pub fn for_repository(&self, repository: &str) -> Option<&CommandSet> {
        self.by_repository.get(&repository.to_ascii_lowercase())
    }

    /// Whether no repository has commands configured.
    pub fn is_empty(&self) -> bool {
        self.by_repository.is_empty()
    }
}

/// The operator's noise control (issue 28, item 3): `[review]` for every
/// repository and `[repositories."OWNER/REPO".review]` per repository
/// (matched without regard to case).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorNoise {
    /// `[review]`'s keys, defaults filled in.
    pub default: NoiseControl,
    /// Lower-cased `owner/name` → the keys its table sets.
    by_repository: BTreeMap<String, NoiseOverrides>,
}

impl OperatorNoise {
    /// The operator's settings: `default` for all, `repositories` per repository.
    pub fn new(
        default: NoiseControl,
        repositories: impl IntoIterator<Item = (String, NoiseOverrides)>,
    ) -> Self {
        Self {
            default,
            by_repository: repositories
                .into_iter()
                .map(|(name, overrides)| (name.to_ascii_lowercase(), overrides))
                .collect(),
        }
    }

    /// The settings for `repository`, key by key: the operator's table for
    /// the repository, else the owners' `.review-bot.toml` (`file`), else
    /// the operator's `[review]`.
    pub fn for_repository(&self, repository: &str, file: &NoiseOverrides) -> NoiseControl {
        let operator = self
            .by_repository
            .get(&repository.to_ascii_lowercase())
            .copied()
            .unwrap_or_default();
        self.default.with(file).with(&operator)
    }
}

/// What the base commit's `.review-bot.toml` gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepositoryFile {
    /// There is none.
    Absent,
    /// The file, read: its `[build]` table (`None`: it has none).
    Read {
        /// The file's blob id.
        blob: String,
        /// Its commands.
        commands: Option<CommandSet>,
        /// Its `[review]` table's keys.
        review: NoiseOverrides,
    },
    /// The file cannot be used.
    Refused {
        /// The file's blob id (for the once-only comment), when it has one.
        blob: String,
        /// What is wrong, naming the line and key, and what to do.
        problem: String,
    },
}

impl RepositoryFile {
    /// The problem, when the file was refused.
    pub fn problem(&self) -> Option<&str> {
        match self {
            Self::Refused { problem, .. } => Some(problem),
            _ => None,
        }
    }

    /// The file's commands as explicit ones, when it has a `[build]` table.
    fn commands(&self) -> Option<&CommandSet> {
        match self {
            Self::Read {
                commands: Some(commands),
                ..
            } => Some(commands),
            _ => None,
        }
    }

    /// The file's `[review]` keys (none when it is absent or refused).
    pub fn review(&self) -> NoiseOverrides {
        match self {
            Self::Read { review, .. } => *review,
            _ => NoiseOverrides::default(),
        }
    }

    fn from_parse(blob: String, parsed: Result<RepositoryTables, RepositoryFileError>) -> Self {
        match parsed {
            Ok(tables) => Self::Read {
                blob,
                commands: tables.build,
                review: tables.review,
            },
            Err(error) => Self::Refused {
                blob,
                problem: bounded(&error.to_string()),
            },
        }
    }
}

/// The most of a problem's text shown (a key can be as long as the file).
const PROBLEM_LIMIT: usize = 1_000;

/// `text`, cut at a character boundary to [`PROBLEM_LIMIT`] bytes with `…`.
fn bounded(text: &str) -> String {
    if text.len() <= PROBLEM_LIMIT {
        return text.to_owned();
    }
    let mut end = PROBLEM_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The explicit commands of a job, in precedence order: the operator's,
/// else the file's `[build]` table; `None` leaves discovery to the documents
/// and manifests.
pub fn explicit(
    operator: Option<&CommandSet>,
    file: &RepositoryFile,
) -> Option<(Source, CommandSet)> {
    if let Some(commands) = operator {
        return Some((Source::Operator, commands.clone()));
    }
    file.commands()
        .map(|commands| (Source::RepositoryFile, commands.clone()))
}

/// Reads `.review-bot.toml` at the root of `commit` in `mirror`. A symbolic
/// link, a directory or a submodule in its place, and a file over
/// [`repository_file::SIZE_LIMIT`], are refused without being read.
///
/// # Errors
///
/// git could not run, or `commit` is not in the mirror.
pub async fn read_at_commit(
    git: &Git,
    mirror: &Path,
    commit: &str,
) -> Result<RepositoryFile, CheckoutError> {
    let listed = git
        .run(
            mirror,
            &[
                "ls-tree",
                "-z",
                "--full-tree",
                "--end-of-options",
                commit,
                "--",
                REPOSITORY_FILE,
            ],
            None,
        )
        .await?;
    let Some(entry) = listed
        .stdout
        .split('\0')
        .find(|entry| entry.split('\t').nth(1) == Some(REPOSITORY_FILE))
    else {
        return Ok(RepositoryFile::Absent);
    };
    let mut fields = entry
        .split('\t')
        .next()
        .unwrap_or_default()
        .split_whitespace();
    let (mode, kind, blob) = (
        fields.next().unwrap_or_default(),
        fields.next().unwrap_or_default(),
        fields.next().unwrap_or_default().to_owned(),
    );
    if kind != "blob" || !(mode == "100644" || mode == "100755") {
        let what = match (mode, kind) {
            ("120000", _) => "a symbolic link",
            (_, "tree") => "a directory",
            (_, "commit") => "a submodule",
            _ => "not a regular file",
        };
        return Ok(RepositoryFile::Refused {
            blob,
            problem: format!(
                "{REPOSITORY_FILE} on the base branch is {what}, not a file; commit the file \
                 itself at the repository's root"
            ),
        });
    }
    let size = git
        .run(mirror, &["cat-file", "-s", "--end-of-options", &blob], None)
        .await?;
    let size: usize = size.stdout.trim().parse().unwrap_or(usize::MAX);
    if size > repository_file::SIZE_LIMIT {
        return Ok(RepositoryFile::Refused {
            blob,
            problem: RepositoryFileError::TooLarge { size }.to_string(),
        });
    }
    let read = git
        .run(
            mirror,
            &["cat-file", "blob", "--end-of-options", &blob],
            None,
        )
        .await?;
    let parsed = match read.invalid_utf8_at {
        Some(offset) => Err(RepositoryFileError::NotUtf8 {
            line: read
                .stdout
                .get(..offset)
                .map_or(0, |valid| valid.matches('\n').count())
                + 1,
        }),
        None => repository_file::parse_tables(&read.stdout),
    };
    Ok(RepositoryFile::from_parse(blob, parsed))
}

/// [`read_at_commit`] at the pull request's base: `base_sha` (the commit
/// GitHub computed the diff from) when the mirror has it, else the tip of
/// `base_branch` as fetched (a base branch force-pushed since).
///
/// # Errors
///
/// git could not run, or neither commit is in the mirror.
pub async fn base_repository_file(
    git: &Git,
    mirror: &Path,
    base_sha: &str,
    base_branch: &str,
) -> Result<RepositoryFile, CheckoutError> {
    let is_sha = !base_sha.is_empty()
        && base_sha
            .chars()
            .all(|character| character.is_ascii_hexdigit());
    if is_sha {
        match read_at_commit(git, mirror, base_sha).await {
            Err(CheckoutError::Git { .. }) => {}
            other => return other,
        }
    }
    read_at_commit(git, mirror, &format!("refs/heads/{base_branch}")).await
}

/// Reads `.review-bot.toml` at the top of `directory` (`discover-commands
/// DIR`, `review --local`): a symbolic link, a FIFO or anything but a regular
/// file is refused unread, and at most [`repository_file::SIZE_LIMIT`] + 1
/// bytes are read. Its "blob" is empty.
///
/// # Errors
///
/// The directory or the file could not be read.
pub fn read_in_directory(directory: &Path) -> std::io::Result<RepositoryFile> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let path = directory.join(REPOSITORY_FILE);
    let metadata = match std::fs::symlink_metadata(&path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(RepositoryFile::Absent);
        }
        Err(error) => return Err(error),
    };
    if !metadata.is_file() {
        return Ok(RepositoryFile::Refused {
            blob: String::new(),
            problem: format!(
                "{REPOSITORY_FILE} is not a regular file (a symbolic link, a directory or a \
                 FIFO); make it a file at the repository's root"
            ),
        });
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)?;
    let mut bytes = Vec::new();
    file.take(repository_file::SIZE_LIMIT as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(RepositoryFile::from_parse(
        String::new(),
        repository_file::parse_tables_bytes(&bytes),
    ))
}

/// The namespace of the `.review-bot.toml` problem comments' `thread::` ids.
const PROBLEM_NAMESPACE: Uuid = Uuid::from_u128(0x6b1f_3c2e_24a1_4f0e_9d3b_5e7a_0c1d_2f24);

/// The `thread::` id of the comment about a refused `.review-bot.toml`: one
/// per repository, base commit and file content, so a rerun finds it rather
/// than posting it again.
pub fn problem_thread(repository: &str, base_sha: &str, blob: &str) -> Uuid {
    Uuid::new_v5(
        &PROBLEM_NAMESPACE,
        format!(
            "{}:{}:{}",
            repository.to_ascii_lowercase(),
            base_sha.to_ascii_lowercase(),
            blob.to_ascii_lowercase()
        )
        .as_bytes(),
    )
}

/// The comment telling the pull request that the base branch's
/// `.review-bot.toml` cannot be used, and where the commands came from
/// instead (`next`: a source's name, or `None` when nothing else documents
/// any).
pub fn problem_comment(problem: &str, next: Option<&str>) -> String {
    let instead = match next {
        Some(source) => format!("The build and tests ran with the commands from {source} instead."),
        None => "No other source documents build or test commands, so the build and test gate \
                 was skipped."
            .to_owned(),
    };
    format!(
        "**The base branch's `{REPOSITORY_FILE}` cannot be used.**\n\n{}\n\n{instead} Fix the \
         file on the base branch (this pull request's own copy is never used for its build); \
         this comment is posted once per version of the file.",
        review_core::payload::code_block(problem, None)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_commands_match_without_case() {
        let commands = CommandSet {
            test: vec!["make check".to_owned()],
            ..CommandSet::default()
        };
        let operator = OperatorCommands::new([("Octo/Widgets".to_owned(), commands.clone())]);
        assert_eq!(operator.for_repository("octo/widgets"), Some(&commands));
        assert_eq!(operator.for_repository("octo/other"), None);
    }

    #[test]
    fn the_operator_beats_the_file() {
        let operator = CommandSet {
            test: vec!["make check".to_owned()],
            ..CommandSet::default()
        };
        let file = RepositoryFile::Read {
            blob: "b".into(),
            commands: Some(CommandSet {
                test: vec!["./check.sh".to_owned()],
                ..CommandSet::default()
            }),
            review: NoiseOverrides::default(),
        };
        assert_eq!(
            explicit(Some(&operator), &file).map(|(source, _)| source),
            Some(Source::Operator)
        );
        assert_eq!(
            explicit(None, &file).map(|(source, commands)| (source, commands.test)),
            Some((Source::RepositoryFile, vec!["./check.sh".to_owned()]))
        );
        assert_eq!(explicit(None, &RepositoryFile::Absent), None);
    }

    #[test]
    fn a_huge_unknown_key_is_cut_in_the_problem() {
        let text = format!("[build]\n{} = [\"x\"]\n", "\u{4e2d}".repeat(20_000));
        let file = RepositoryFile::from_parse("b".into(), repository_file::parse_tables(&text));
        let problem = file.problem().unwrap();
        assert!(
            problem.len() <= PROBLEM_LIMIT + '…'.len_utf8(),
            "{}",
            problem.len()
        );
    }

    #[test]
    fn noise_control_is_layered_key_by_key() {
        use review_core::findings::Severity;
        use review_core::findings::noise::Confidence;
        let operator = OperatorNoise::new(
            NoiseControl {
                max_inline_comments: 20,
                ..NoiseControl::default()
            },
            [(
                "Octo/Widgets".to_owned(),
                NoiseOverrides {
                    min_confidence: Confidence::new(50),
                    ..NoiseOverrides::default()
                },
            )],
        );
        let file = NoiseOverrides {
            min_severity: Some(Severity::Logic),
            min_confidence: Confidence::new(80),
            ..NoiseOverrides::default()
        };
        let settings = operator.for_repository("octo/widgets", &file);
        assert_eq!(settings.min_severity, Severity::Logic, "the file's key");
        assert_eq!(
            settings.min_confidence.value(),
            50,
            "the operator's table wins"
        );
        assert_eq!(settings.max_inline_comments, 20, "the operator's [review]");
        let other = operator.for_repository("octo/other", &NoiseOverrides::default());
        assert_eq!(other.min_confidence.value(), 0);
    }

    #[test]
    fn problem_threads_differ_by_base_and_content() {
        let first = problem_thread("octo/widgets", "a", "b");
        assert_eq!(first, problem_thread("Octo/Widgets", "A", "B"));
        assert_ne!(first, problem_thread("octo/widgets", "a", "c"));
        assert_ne!(first, problem_thread("octo/widgets", "c", "b"));
    }

    #[test]
    fn a_fifo_or_link_in_a_directory_is_refused_unread() {
        let directory = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc/passwd", directory.path().join(REPOSITORY_FILE)).unwrap();
        assert!(
            read_in_directory(directory.path())
                .unwrap()
                .problem()
                .is_some()
        );
        std::fs::remove_file(directory.path().join(REPOSITORY_FILE)).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(directory.path().join(REPOSITORY_FILE))
            .status()
            .unwrap();
        assert!(status.success());
        assert!(
            read_in_directory(directory.path())
                .unwrap()
                .problem()
                .is_some()
        );
    }
}
