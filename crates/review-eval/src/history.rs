//! Cases from a repository's own bug fixes (`review-bot eval --from-history
//! REPO`): for a fix commit F, the case's base is F and its head is a commit
//! on top of F that puts back what F changed — the pull request that would
//! reintroduce the bug — and its golden findings are the lines that commit
//! touches on the head side.
//!
//! - The fixes: the commits `--commits` names, else the non-merge commits of
//!   `REPO`'s `HEAD` whose message matches `--grep` (case-insensitive,
//!   default `fix`), newest first, from `--since` on, until `--limit` cases
//!   are built.
//! - Skipped and counted: a commit without exactly one parent, one that
//!   changes more than `--max-files` files, one whose changes are all tests
//!   or docs, one whose source changes are all binary.
//! - The head: F's tree with F's changes to source files undone (its tests
//!   and docs stay, as they would in a real pull request that brings the bug
//!   back), committed on top of F with F's dates, so the same fix gives the
//!   same commit on every run.
//! - The golden findings, per source file and hunk of `git diff -U0 F HEAD`:
//!   the head-side lines the hunk adds; a hunk that only removes lines
//!   marks the head-side lines around the removal; a file the head deletes
//!   marks its removed lines on the LEFT side.
//!
//! Nothing is written to `REPO`: the commits are made in a scratch bare
//! repository that borrows REPO's objects (`objects/info/alternates`), under
//! `refs/eval/NAME`. [`save`] writes a git bundle of them and one case file
//! per case, so a run can be repeated exactly (`review-bot eval DIR`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use review_core::anchor::Side;

use crate::case::{Case, GoldenFinding};
use crate::git::{Git, GitError};

/// The default `--grep`: the messages that mark a fix.
pub const DEFAULT_GREP: &str = "fix";

/// The default `--limit`: how many cases to build.
pub const DEFAULT_LIMIT: usize = 20;

/// The default `--max-files`: a fix touching more files is skipped.
pub const DEFAULT_MAX_FILES: usize = 10;

/// The bundle [`save`] writes next to the case files.
pub const BUNDLE_NAME: &str = "repository.bundle";

/// Which fixes to use.
#[derive(Debug, Clone)]
pub struct HistoryOptions {
    /// `git log --since` (a date or `3 months ago`).
    pub since: Option<String>,
    /// At most this many cases.
    pub limit: usize,
    /// The message pattern (a basic regular expression, case-insensitive).
    pub grep: String,
    /// The fix commits, named; when given, `since` and `grep` are not used.
    pub commits: Vec<String>,
    /// A fix changing more files than this is skipped.
    pub max_files: usize,
}

impl Default for HistoryOptions {
    fn default() -> Self {
        Self {
            since: None,
            limit: DEFAULT_LIMIT,
            grep: DEFAULT_GREP.to_owned(),
            commits: Vec::new(),
            max_files: DEFAULT_MAX_FILES,
        }
    }
}

/// A commit that did not become a case, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedCommit {
    /// Its SHA.
    pub sha: String,
    /// Its subject.
    pub subject: String,
    /// Why.
    pub reason: SkipReason,
}

/// Why a commit did not become a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SkipReason {
    /// A merge, or the first commit.
    NotOneParent,
    /// It changes only tests or docs.
    TestsOrDocsOnly,
    /// It changes more than `--max-files` files.
    TooLarge,
    /// Its source changes are all binary.
    BinaryOnly,
}

impl SkipReason {
    /// The reason for people.
    pub fn describe(self) -> &'static str {
        match self {
            Self::NotOneParent => "a merge or the first commit",
            Self::TestsOrDocsOnly => "tests or docs only",
            Self::TooLarge => "too many files",
            Self::BinaryOnly => "binary changes only",
        }
    }
}

/// The cases built, the commits skipped, and where the commits live.
#[derive(Debug, Clone)]
pub struct HistoryCases {
    /// The cases, newest fix first; their `repository` is `scratch`.
    pub cases: Vec<Case>,
    /// The commits that did not become cases.
    pub skipped: Vec<SkippedCommit>,
    /// The scratch bare repository holding the head commits.
    pub scratch: PathBuf,
}

/// Why no case set could be built.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The caller's mistake: not a repository, an unknown commit, a bad option.
    #[error("{0}")]
    Usage(String),
    /// Git failed.
    #[error(transparent)]
    Git(#[from] GitError),
    /// A file could not be written.
    #[error("could not write `{}`", path.display())]
    Write {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Whether a path is a test: a `test`/`tests`/`spec`/`__tests__`/`testdata`
/// directory, or a file named like `test_x.py`, `x_test.go`, `x.test.ts`,
/// `x.spec.js`, `XTest.java`.
pub fn is_test_path(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let mut components: Vec<&str> = lower.split('/').collect();
    let file = components.pop().unwrap_or_default();
    if components.iter().any(|directory| {
        matches!(
            *directory,
            "test" | "tests" | "spec" | "specs" | "__tests__" | "testdata" | "testing" | "fixtures"
        )
    }) {
        return true;
    }
    let stem = file.split('.').next().unwrap_or_default();
    file.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with("_spec")
        || file.contains(".test.")
        || file.contains(".spec.")
        || original_stem(path).ends_with("Test")
        || original_stem(path).ends_with("Tests")
        || stem == "tests"
        || stem == "conftest"
}

/// A path's file name up to its first dot, as written.
fn original_stem(path: &str) -> &str {
    let file = path.rsplit('/').next().unwrap_or_default();
    file.split('.').next().unwrap_or_default()
}

/// Whether a path is documentation: a `doc`/`docs` directory, a markdown,
/// `reStructuredText`, `AsciiDoc` or text file, or a README, CHANGELOG, LICENSE,
/// AUTHORS or NEWS file.
pub fn is_docs_path(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let mut components: Vec<&str> = lower.split('/').collect();
    let file = components.pop().unwrap_or_default();
    if components
        .iter()
        .any(|directory| matches!(*directory, "doc" | "docs" | "documentation"))
    {
        return true;
    }
    let extension = file.rsplit_once('.').map(|(_, extension)| extension);
    let stem = file.split('.').next().unwrap_or_default();
    matches!(extension, Some("md" | "markdown" | "rst" | "txt" | "adoc"))
        || matches!(
            stem,
            "readme"
                | "changelog"
                | "changes"
                | "license"
                | "licence"
                | "copying"
                | "authors"
                | "news"
                | "history"
        )
}

/// One changed path of a commit, from `git diff --numstat -z`.
#[derive(Debug, Clone)]
struct Changed {
    path: String,
    binary: bool,
}

// One linear sequence of git steps per commit reads better whole.
#[allow(clippy::too_many_lines)]
/// Builds cases from `repository`'s fixes into a scratch bare repository at
/// `scratch` (created; it must not exist).
///
/// # Errors
///
/// `repository` is not a git repository, a `--commits` entry names no
/// commit, an option is unusable, or git fails.
pub async fn build(
    git: &Git,
    repository: &Path,
    scratch: &Path,
    options: &HistoryOptions,
) -> Result<HistoryCases, HistoryError> {
    if !repository.is_dir() {
        return Err(HistoryError::Usage(format!(
            "--from-history {}: not a directory; give the path of a git repository (a working tree or a bare repository)",
            repository.display()
        )));
    }
    if let Some(since) = &options.since
        && (since.trim().is_empty() || since.starts_with('-'))
    {
        return Err(HistoryError::Usage(format!(
            "--since {since:?} is not a date; give a date (2025-01-31) or an age (\"3 months ago\")"
        )));
    }
    let objects_run = git
        .run_raw(
            repository,
            &[
                OsStr::new("rev-parse"),
                OsStr::new("--path-format=absolute"),
                OsStr::new("--git-path"),
                OsStr::new("objects"),
                OsStr::new("--show-object-format"),
            ],
            None,
            &[],
        )
        .await?;
    if objects_run.code != Some(0) {
        return Err(HistoryError::Usage(format!(
            "--from-history {}: not a git repository ({})",
            repository.display(),
            objects_run.stderr
        )));
    }
    let printed = String::from_utf8_lossy(&objects_run.stdout).into_owned();
    let mut lines = printed.lines();
    let objects = lines.next().unwrap_or_default().trim().to_owned();
    let object_format = lines.next().unwrap_or("sha1").trim().to_owned();
    let zero_id = "0".repeat(if object_format == "sha256" { 64 } else { 40 });

    // The fixes, as SHAs, resolved in the repository itself.
    let mut fixes: Vec<String> = Vec::new();
    if options.commits.is_empty() {
        let head = git.commit(repository, "HEAD").await?.ok_or_else(|| {
            HistoryError::Usage(format!(
                "--from-history {}: the repository has no HEAD commit; name the fixes with --commits",
                repository.display()
            ))
        })?;
        fixes.push(head);
    } else {
        for name in &options.commits {
            if name.trim().is_empty() || name.starts_with('-') {
                return Err(HistoryError::Usage(format!(
                    "--commits: {name:?} is not a commit; give SHAs or refs, separated by commas"
                )));
            }
            let sha = git.commit(repository, name.trim()).await?.ok_or_else(|| {
                HistoryError::Usage(format!(
                    "--commits: {name:?} names no commit in {}",
                    repository.display()
                ))
            })?;
            fixes.push(sha);
        }
    }

    // The scratch repository.
    let parent = scratch.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(parent).map_err(|source| HistoryError::Write {
        path: parent.to_owned(),
        source,
    })?;
    let format_option = format!("--object-format={object_format}");
    let scratch_argument = scratch.display().to_string();
    git.run(
        parent,
        &[
            "init",
            "--quiet",
            "--bare",
            "--template=",
            &format_option,
            &scratch_argument,
        ],
    )
    .await?;
    let mut borrowed = vec![objects.clone()];
    borrowed.extend(alternates_of(Path::new(&objects)));
    let alternates = scratch.join("objects/info/alternates");
    std::fs::create_dir_all(scratch.join("objects/info"))
        .and_then(|()| std::fs::write(&alternates, borrowed.join("\n") + "\n"))
        .map_err(|source| HistoryError::Write {
            path: alternates.clone(),
            source,
        })?;

    // The candidates: SHA, parents, subject, committer date.
    let mut log: Vec<String> = vec![
        "log".to_owned(),
        "--format=%H%x1f%P%x1f%s%x1f%aI%x1f%cI%x1e".to_owned(),
    ];
    if options.commits.is_empty() {
        log.push("--no-merges".to_owned());
        log.push("--regexp-ignore-case".to_owned());
        log.push(format!("--grep={}", options.grep));
        if let Some(since) = &options.since {
            log.push(format!("--since={since}"));
        }
    } else {
        log.push("--no-walk=unsorted".to_owned());
    }
    log.extend(fixes.iter().cloned());
    log.push("--".to_owned());
    let log_arguments: Vec<&str> = log.iter().map(String::as_str).collect();
    let printed = git.run(scratch, &log_arguments).await?;
    let printed = String::from_utf8_lossy(&printed).into_owned();

    let mut built = HistoryCases {
        cases: Vec::new(),
        skipped: Vec::new(),
        scratch: scratch.to_owned(),
    };
    for record in printed.split('\u{1e}') {
        if built.cases.len() >= options.limit {
            break;
        }
        let fields: Vec<&str> = record.trim_start_matches('\n').split('\u{1f}').collect();
        let [sha, parents, subject, author_date, committer_date] = fields[..] else {
            continue;
        };
        let parents: Vec<&str> = parents.split_whitespace().collect();
        let skip = |reason| SkippedCommit {
            sha: sha.to_owned(),
            subject: subject.to_owned(),
            reason,
        };
        let [parent] = parents[..] else {
            built.skipped.push(skip(SkipReason::NotOneParent));
            continue;
        };
        let changed = changed_paths(git, scratch, parent, sha).await?;
        if changed.len() > options.max_files {
            built.skipped.push(skip(SkipReason::TooLarge));
            continue;
        }
        let source: Vec<&Changed> = changed
            .iter()
            .filter(|changed| !is_test_path(&changed.path) && !is_docs_path(&changed.path))
            .collect();
        if source.is_empty() {
            built.skipped.push(skip(SkipReason::TestsOrDocsOnly));
            continue;
        }
        let text: Vec<&str> = source
            .iter()
            .filter(|changed| !changed.binary)
            .map(|changed| changed.path.as_str())
            .collect();
        if text.is_empty() {
            built.skipped.push(skip(SkipReason::BinaryOnly));
            continue;
        }
        let name = format!("fix-{}", sha.get(..12).unwrap_or(sha));
        let head = reintroduce(
            git,
            scratch,
            &Fix {
                sha,
                parent,
                subject,
                author_date,
                committer_date,
            },
            &source
                .iter()
                .map(|changed| changed.path.as_str())
                .collect::<Vec<_>>(),
            &zero_id,
        )
        .await?;
        let reference = format!("refs/eval/{name}");
        git.run(scratch, &["update-ref", &reference, &head]).await?;
        let description = format!(
            "Reintroduces the bug fixed in {} (\"{}\")",
            sha.get(..12).unwrap_or(sha),
            subject
        );
        let mut golden = Vec::new();
        for path in text {
            golden.extend(golden_findings(git, scratch, sha, &head, path, &description).await?);
        }
        built.cases.push(Case {
            name,
            repository: scratch.to_owned(),
            base: sha.to_owned(),
            head,
            title: None,
            body: None,
            golden,
        });
    }
    Ok(built)
}

/// A fix commit, as `git log` printed it.
struct Fix<'a> {
    sha: &'a str,
    parent: &'a str,
    subject: &'a str,
    author_date: &'a str,
    committer_date: &'a str,
}

/// The paths `parent..sha` changes, and whether each is binary.
async fn changed_paths(
    git: &Git,
    scratch: &Path,
    parent: &str,
    sha: &str,
) -> Result<Vec<Changed>, HistoryError> {
    let printed = git
        .run(
            scratch,
            &[
                "diff",
                "--numstat",
                "-z",
                "--no-renames",
                "--no-ext-diff",
                "--no-textconv",
                parent,
                sha,
                "--",
            ],
        )
        .await?;
    // Each record: "ADDED\tDELETED\tPATH\0"; "-" counts for binary files.
    Ok(printed
        .split(|byte| *byte == 0)
        .filter(|record| !record.is_empty())
        .filter_map(|record| {
            let text = String::from_utf8_lossy(record);
            let mut fields = text.splitn(3, '\t');
            let added = fields.next()?;
            let _deleted = fields.next()?;
            let path = fields.next()?.to_owned();
            Some(Changed {
                binary: added == "-",
                path,
            })
        })
        .collect())
}

/// The head commit: F's tree with F's changes to `paths` undone, on top of F.
async fn reintroduce(
    git: &Git,
    scratch: &Path,
    fix: &Fix<'_>,
    paths: &[&str],
    zero_id: &str,
) -> Result<String, HistoryError> {
    let index = scratch.join(format!("index-{}", fix.sha));
    let index_os = index.as_os_str();
    let environment: [(&str, &OsStr); 2] = [
        ("GIT_INDEX_FILE", index_os),
        ("GIT_LITERAL_PATHSPECS", OsStr::new("1")),
    ];
    let result = async {
        git.run_with(scratch, &["read-tree", fix.sha], None, &environment)
            .await?;
        let mut arguments = vec!["ls-tree", "-z", "--full-tree", fix.parent, "--"];
        arguments.extend(paths.iter().copied());
        let listed = git
            .run_with(scratch, &arguments, None, &environment)
            .await?;
        // "MODE TYPE ID\tPATH\0" for each path the parent has.
        let mut input: Vec<u8> = Vec::new();
        let mut present = Vec::new();
        for record in listed
            .split(|byte| *byte == 0)
            .filter(|record| !record.is_empty())
        {
            if let Some(tab) = record.iter().position(|byte| *byte == b'\t') {
                present.push(record[tab + 1..].to_vec());
            }
            input.extend_from_slice(record);
            input.push(0);
        }
        for path in paths {
            if !present.iter().any(|listed| listed == path.as_bytes()) {
                input.extend_from_slice(format!("0 {zero_id}\t{path}").as_bytes());
                input.push(0);
            }
        }
        git.run_with(
            scratch,
            &["update-index", "-z", "--index-info"],
            Some(input),
            &environment,
        )
        .await?;
        let tree = git
            .run_with(scratch, &["write-tree"], None, &environment)
            .await?;
        let tree = String::from_utf8_lossy(&tree).trim().to_owned();
        let message = format!(
            "review-bot eval: put back what {} fixed\n\n{}\n",
            fix.sha.get(..12).unwrap_or(fix.sha),
            fix.subject
        );
        let identity: [(&str, &OsStr); 6] = [
            ("GIT_AUTHOR_NAME", OsStr::new("review-bot eval")),
            ("GIT_AUTHOR_EMAIL", OsStr::new("review-bot@localhost")),
            ("GIT_COMMITTER_NAME", OsStr::new("review-bot eval")),
            ("GIT_COMMITTER_EMAIL", OsStr::new("review-bot@localhost")),
            ("GIT_AUTHOR_DATE", OsStr::new(fix.author_date)),
            ("GIT_COMMITTER_DATE", OsStr::new(fix.committer_date)),
        ];
        let commit = git
            .run_with(
                scratch,
                &["commit-tree", &tree, "-p", fix.sha, "-m", &message],
                None,
                &identity,
            )
            .await?;
        Ok::<String, HistoryError>(String::from_utf8_lossy(&commit).trim().to_owned())
    }
    .await;
    let _ = std::fs::remove_file(&index);
    result
}

/// The golden findings of one file: its hunks in `git diff -U0 FIX HEAD`.
async fn golden_findings(
    git: &Git,
    scratch: &Path,
    fix: &str,
    head: &str,
    path: &str,
    description: &str,
) -> Result<Vec<GoldenFinding>, HistoryError> {
    let printed = git
        .run_with(
            scratch,
            &[
                "diff",
                "-U0",
                "--no-renames",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                fix,
                head,
                "--",
                path,
            ],
            None,
            &[("GIT_LITERAL_PATHSPECS", OsStr::new("1"))],
        )
        .await?;
    let printed = String::from_utf8_lossy(&printed);
    let deleted = printed
        .lines()
        .any(|line| line.starts_with("+++ /dev/null"));
    Ok(printed
        .lines()
        .filter_map(parse_hunk_header)
        .map(|hunk| {
            let (side, line, end_line) = if deleted {
                (
                    Side::Left,
                    hunk.old_start.max(1),
                    hunk.old_start.max(1) + hunk.old_count.max(1) - 1,
                )
            } else if hunk.new_count == 0 {
                // Only removed: the head lines on either side of the gap.
                (Side::Right, hunk.new_start.max(1), hunk.new_start + 1)
            } else {
                (
                    Side::Right,
                    hunk.new_start,
                    hunk.new_start + hunk.new_count - 1,
                )
            };
            GoldenFinding {
                file: path.to_owned(),
                line: Some(line),
                end_line: (end_line > line).then_some(end_line),
                side: (side == Side::Left).then_some(side),
                description: description.to_owned(),
            }
        })
        .collect())
}

/// A hunk header's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hunk {
    old_start: u32,
    old_count: u32,
    new_start: u32,
    new_count: u32,
}

/// `@@ -A[,B] +C[,D] @@…` → its numbers (a count defaults to 1).
fn parse_hunk_header(line: &str) -> Option<Hunk> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |text: &str| -> Option<(u32, u32)> {
        match text.split_once(',') {
            Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
            None => Some((text.parse().ok()?, 1)),
        }
    };
    let (old_start, old_count) = range(old)?;
    let (new_start, new_count) = range(new)?;
    Some(Hunk {
        old_start,
        old_count,
        new_start,
        new_count,
    })
}

/// Writes `built`'s cases to `directory`: a bundle of their commits
/// ([`BUNDLE_NAME`]) and `NAME.json` per case, naming the bundle.
///
/// # Errors
///
/// The directory or a file cannot be written, or git cannot make the bundle.
pub async fn save(
    git: &Git,
    built: &HistoryCases,
    directory: &Path,
) -> Result<Vec<PathBuf>, HistoryError> {
    let write_error = |path: &Path| {
        let path = path.to_owned();
        move |source| HistoryError::Write { path, source }
    };
    std::fs::create_dir_all(directory).map_err(write_error(directory))?;
    let directory = directory.canonicalize().map_err(write_error(directory))?;
    let mut written = Vec::new();
    if built.cases.is_empty() {
        return Ok(written);
    }
    let bundle = directory.join(BUNDLE_NAME);
    let bundle_argument = bundle.display().to_string();
    let references: Vec<String> = built
        .cases
        .iter()
        .map(|case| format!("refs/eval/{}", case.name))
        .collect();
    let mut arguments = vec!["bundle", "create", "--quiet", bundle_argument.as_str()];
    arguments.extend(references.iter().map(String::as_str));
    git.run(&built.scratch, &arguments).await?;
    written.push(bundle);
    for case in &built.cases {
        let mut saved = case.clone();
        saved.repository = PathBuf::from(BUNDLE_NAME);
        let path = directory.join(format!("{}.json", case.name));
        let mut text = serde_json::to_string_pretty(&saved).unwrap_or_default();
        text.push('\n');
        std::fs::write(&path, text).map_err(write_error(&path))?;
        written.push(path);
    }
    Ok(written)
}

/// The object directories an `objects/info/alternates` names (absolute).
fn alternates_of(objects: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(objects.join("info/alternates")) else {
        return Vec::new();
    };
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| objects.join(line).canonicalize().ok())
        .map(|path| path.display().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_and_docs_are_recognised() {
        for path in [
            "tests/walk.rs",
            "src/tests.rs",
            "pkg/foo_test.go",
            "test_util.py",
            "web/app.test.ts",
            "web/app.spec.js",
            "src/main/java/WidgetTest.java",
            "conftest.py",
            "crates/x/testdata/in.txt",
        ] {
            assert!(is_test_path(path), "{path}");
        }
        for path in [
            "src/lib.rs",
            "src/testing_helpers_are_source.rs",
            "latest.rs",
            "src/contest.py",
        ] {
            assert!(!is_test_path(path), "{path}");
        }
        for path in [
            "README.md",
            "docs/guide.html",
            "CHANGELOG",
            "COPYING",
            "notes.txt",
            "doc/api.rst",
        ] {
            assert!(is_docs_path(path), "{path}");
        }
        for path in ["src/readme_parser.rs", "Cargo.toml", "src/doc.rs"] {
            assert!(!is_docs_path(path), "{path}");
        }
    }

    #[test]
    fn hunk_headers_parse() {
        assert_eq!(
            parse_hunk_header("@@ -5,2 +4,0 @@ fn x()"),
            Some(Hunk {
                old_start: 5,
                old_count: 2,
                new_start: 4,
                new_count: 0
            })
        );
        assert_eq!(
            parse_hunk_header("@@ -7 +7 @@"),
            Some(Hunk {
                old_start: 7,
                old_count: 1,
                new_start: 7,
                new_count: 1
            })
        );
        assert_eq!(parse_hunk_header("@@ -x +1 @@"), None);
        assert_eq!(parse_hunk_header("+++ b/file"), None);
    }
}
