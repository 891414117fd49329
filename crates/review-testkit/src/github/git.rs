//! The git CLI underneath the simulator's repositories.
//!
//! Every repository the simulator serves is a real bare git repository on disk. This module
//! runs `git` against it — to build scenario commits without a working tree (a throwaway index
//! plus `hash-object`/`update-index`/`write-tree`/`commit-tree`), and to read what GitHub would
//! compute (refs, merge bases, raw/numstat/patch diffs, commit metadata). Each command runs
//! with the user's and the system's git configuration switched off, so a developer's
//! `~/.gitconfig` can never change what the simulator answers.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use chrono::{DateTime, Utc};

use super::SimError;

/// A bare repository on disk, driven through the git CLI.
#[derive(Debug, Clone)]
pub(crate) struct GitRepository {
    /// The bare repository's directory (`…/owner/name.git`).
    dir: PathBuf,
}

/// Who made a commit and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Signature {
    pub name: String,
    pub email: String,
    pub date: DateTime<Utc>,
}

/// A commit as `git log` describes it.
#[derive(Debug, Clone)]
pub(crate) struct CommitInfo {
    pub sha: String,
    pub tree: String,
    pub parents: Vec<String>,
    pub author: Signature,
    pub committer: Signature,
    pub message: String,
}

/// One change a scenario commit makes to a tree.
#[derive(Debug, Clone)]
pub(crate) enum TreeChange {
    /// Create or overwrite a file.
    Write {
        path: String,
        contents: Vec<u8>,
        executable: bool,
    },
    /// Delete a file (it must exist).
    Delete { path: String },
    /// Move a file, optionally changing its contents on the way.
    Rename {
        from: String,
        to: String,
        contents: Option<Vec<u8>>,
    },
}

/// One file of `git diff --raw`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawEntry {
    /// `A`, `M`, `D`, `R`, `C` or `T` (the first letter of git's status).
    pub status: char,
    pub old_mode: String,
    pub new_mode: String,
    pub old_blob: String,
    pub new_blob: String,
    pub path: String,
    /// The source path of a rename or copy.
    pub previous_path: Option<String>,
}

/// Line counts of one file from `git diff --numstat` (`None` for binary files).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineCounts {
    pub additions: u64,
    pub deletions: u64,
}

const NULL_SHA: &str = "0000000000000000000000000000000000000000";

/// The environment every git command runs with: no system or global configuration, no
/// prompts, no pager, and nothing inherited that points git at another repository.
pub(crate) fn isolated_git_command() -> Command {
    let mut command = Command::new("git");
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("LC_ALL", "C")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_OBJECT_DIRECTORY")
        .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES");
    command
}

fn run(mut command: Command, stdin: Option<&[u8]>) -> Result<Vec<u8>, SimError> {
    let description = format!("{command:?}");
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|source| SimError::GitSpawn {
        command: description.clone(),
        source,
    })?;
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().expect("stdin was piped");
        pipe.write_all(input).map_err(|source| SimError::GitSpawn {
            command: description.clone(),
            source,
        })?;
    }
    let output = child
        .wait_with_output()
        .map_err(|source| SimError::GitSpawn {
            command: description.clone(),
            source,
        })?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(SimError::Git {
            command: description,
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// One hunk of a zero-context diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hunk {
    pub old_start: u64,
    pub old_count: u64,
    pub new_start: u64,
    pub new_count: u64,
}

impl GitRepository {
    /// Opens the bare repository at `dir` (not checked until a command runs).
    pub fn open(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// Creates a new bare repository whose `HEAD` points at `default_branch`.
    pub fn init_bare(dir: &Path, default_branch: &str) -> Result<Self, SimError> {
        std::fs::create_dir_all(dir).map_err(|source| SimError::Io {
            path: dir.to_owned(),
            source,
        })?;
        let mut command = isolated_git_command();
        command
            .arg("init")
            .arg("--bare")
            .arg("--quiet")
            .arg(format!("--initial-branch={default_branch}"))
            .arg(dir);
        run(command, None)?;
        let repository = Self::open(dir);
        // Pushes over smart HTTP must be accepted by `git http-backend` (it refuses
        // anonymous pushes unless told otherwise; the simulator authenticates them itself).
        repository.git(&["config", "http.receivepack", "true"], None)?;
        Ok(repository)
    }

    fn command(&self) -> Command {
        let mut command = isolated_git_command();
        command.arg("--git-dir").arg(&self.dir);
        command
    }

    fn git(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<Vec<u8>, SimError> {
        let mut command = self.command();
        command.args(args);
        run(command, stdin)
    }

    /// Resolves `revision` to a commit SHA, or `None` when it names no commit.
    pub fn resolve_commit(&self, revision: &str) -> Result<Option<String>, SimError> {
        if revision.is_empty() || revision.starts_with('-') {
            return Ok(None);
        }
        let spec = format!("{revision}^{{commit}}");
        let mut command = self.command();
        command.args([
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ]);
        match run(command, None) {
            Ok(out) => Ok(Some(text(out).trim().to_owned())),
            Err(SimError::Git { .. }) => Ok(None),
            Err(other) => Err(other),
        }
    }

    /// The SHA `refs/heads/{branch}` points at, if the branch exists.
    pub fn branch_sha(&self, branch: &str) -> Result<Option<String>, SimError> {
        self.resolve_commit(&format!("refs/heads/{branch}"))
    }

    /// The best common ancestor of two commits, if they share history.
    pub fn merge_base(&self, a: &str, b: &str) -> Result<Option<String>, SimError> {
        let mut command = self.command();
        command.args(["merge-base", a, b]);
        match run(command, None) {
            Ok(out) => Ok(Some(text(out).trim().to_owned())),
            Err(SimError::Git { .. }) => Ok(None),
            Err(other) => Err(other),
        }
    }

    /// Whether `ancestor` is reachable from `descendant`.
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool, SimError> {
        let mut command = self.command();
        command.args(["merge-base", "--is-ancestor", ancestor, descendant]);
        match run(command, None) {
            Ok(_) => Ok(true),
            Err(SimError::Git { .. }) => Ok(false),
            Err(other) => Err(other),
        }
    }

    /// The commits reachable from `head` but not from `base`, oldest first.
    pub fn commits_between(&self, base: &str, head: &str) -> Result<Vec<String>, SimError> {
        let range = format!("{base}..{head}");
        let out = text(self.git(&["rev-list", "--reverse", &range], None)?);
        Ok(out.lines().map(str::to_owned).collect())
    }

    /// A commit's metadata.
    pub fn commit_info(&self, sha: &str) -> Result<CommitInfo, SimError> {
        // %x00-separated: sha, tree, parents, author name/email/date, committer name/email/date, message.
        let out = text(self.git(
            &[
                "show",
                "--no-patch",
                "--format=%H%x00%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B",
                sha,
                "--",
            ],
            None,
        )?);
        let fields: Vec<&str> = out.splitn(10, '\0').collect();
        if fields.len() != 10 {
            return Err(SimError::Unexpected(format!(
                "git show printed {} fields for {sha}, expected 10",
                fields.len()
            )));
        }
        let date = |value: &str| {
            DateTime::parse_from_rfc3339(value)
                .map(|date| date.with_timezone(&Utc))
                .map_err(|error| {
                    SimError::Unexpected(format!(
                        "git printed an unreadable date {value:?}: {error}"
                    ))
                })
        };
        Ok(CommitInfo {
            sha: fields[0].to_owned(),
            tree: fields[1].to_owned(),
            parents: fields[2].split_whitespace().map(str::to_owned).collect(),
            author: Signature {
                name: fields[3].to_owned(),
                email: fields[4].to_owned(),
                date: date(fields[5])?,
            },
            committer: Signature {
                name: fields[6].to_owned(),
                email: fields[7].to_owned(),
                date: date(fields[8])?,
            },
            message: fields[9].trim_end_matches('\n').to_owned(),
        })
    }

    /// `git diff --raw` between two commits (`base` `None` = the empty tree), renames detected.
    pub fn raw_diff(&self, base: Option<&str>, head: &str) -> Result<Vec<RawEntry>, SimError> {
        let base = base.unwrap_or(EMPTY_TREE);
        let out = self.git(
            &[
                "diff",
                "--raw",
                "-z",
                "--no-abbrev",
                "-M",
                "--no-ext-diff",
                base,
                head,
                "--",
            ],
            None,
        )?;
        parse_raw(&out)
    }

    /// `git diff --numstat` between two commits, keyed in the same order as [`Self::raw_diff`].
    pub fn numstat(
        &self,
        base: Option<&str>,
        head: &str,
    ) -> Result<Vec<Option<LineCounts>>, SimError> {
        let base = base.unwrap_or(EMPTY_TREE);
        let out = self.git(
            &[
                "diff",
                "--numstat",
                "-z",
                "-M",
                "--no-ext-diff",
                base,
                head,
                "--",
            ],
            None,
        )?;
        parse_numstat(&out)
    }

    /// The hunks of `git diff -U0 from to -- path` (`None` when the file is
    /// gone at `to`), as `@@ -old_start,old_count +new_start,new_count @@`.
    pub fn changed_hunks(
        &self,
        from: &str,
        to: &str,
        path: &str,
    ) -> Result<Option<Vec<Hunk>>, SimError> {
        let names = text(self.git(&["ls-tree", "--name-only", to, "--", path], None)?);
        if names.trim().is_empty() {
            return Ok(None);
        }
        let out = text(self.git(
            &[
                "diff",
                "-U0",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                from,
                to,
                "--",
                path,
            ],
            None,
        )?);
        let number = |text: &str| text.parse::<u64>().unwrap_or(0);
        let range = |text: &str| match text.split_once(',') {
            Some((start, count)) => (number(start), number(count)),
            None => (number(text), 1),
        };
        Ok(Some(
            out.lines()
                .filter_map(|line| {
                    let rest = line.strip_prefix("@@ -")?;
                    let (old, rest) = rest.split_once(" +")?;
                    let (new, _) = rest.split_once(" @@")?;
                    let (old_start, old_count) = range(old);
                    let (new_start, new_count) = range(new);
                    Some(Hunk {
                        old_start,
                        old_count,
                        new_start,
                        new_count,
                    })
                })
                .collect(),
        ))
    }

    /// The unified diff between two commits, exactly as git prints it (renames detected).
    pub fn patch(&self, base: Option<&str>, head: &str) -> Result<String, SimError> {
        let base = base.unwrap_or(EMPTY_TREE);
        Ok(text(self.git(
            &[
                "diff",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "-M",
                base,
                head,
                "--",
            ],
            None,
        )?))
    }

    /// `git format-patch --stdout` for the commits in `base..head` (the `.patch` media type).
    pub fn format_patch(&self, base: &str, head: &str) -> Result<String, SimError> {
        let range = format!("{base}..{head}");
        Ok(text(self.git(
            &[
                "format-patch",
                "--stdout",
                "--no-color",
                "--no-signature",
                &range,
                "--",
            ],
            None,
        )?))
    }

    /// Builds a commit from `parent`'s tree with `changes` applied and returns its SHA. Nothing
    /// points at it until [`Self::update_branch`]. A fixed number of git processes runs
    /// whatever the number of files (blobs hashed in one batch, the index written in one go).
    pub fn commit_changes(
        &self,
        parent: Option<&str>,
        changes: &[TreeChange],
        message: &str,
        author: &Signature,
    ) -> Result<String, SimError> {
        let scratch = tempfile::tempdir().map_err(|source| SimError::Io {
            path: std::env::temp_dir(),
            source,
        })?;
        let mut entries = match parent {
            Some(parent) => self.tree_entries(parent)?,
            None => BTreeMap::new(),
        };
        let contents: Vec<&[u8]> = changes
            .iter()
            .filter_map(|change| match change {
                TreeChange::Write { contents, .. }
                | TreeChange::Rename {
                    contents: Some(contents),
                    ..
                } => Some(contents.as_slice()),
                _ => None,
            })
            .collect();
        let mut blobs = self.hash_blobs(scratch.path(), &contents)?.into_iter();
        let missing = |path: &str| {
            SimError::Scenario(format!(
                "cannot delete or rename {path:?}: the parent commit has no such file"
            ))
        };
        for change in changes {
            match change {
                TreeChange::Write {
                    path, executable, ..
                } => {
                    let mode = if *executable { "100755" } else { "100644" };
                    let blob = blobs.next().unwrap_or_default();
                    entries.insert(path.clone(), (mode.to_owned(), blob));
                }
                TreeChange::Delete { path } => {
                    entries.remove(path).ok_or_else(|| missing(path))?;
                }
                TreeChange::Rename { from, to, contents } => {
                    let (mode, old_blob) = entries.remove(from).ok_or_else(|| missing(from))?;
                    let blob = if contents.is_some() {
                        blobs.next().unwrap_or_default()
                    } else {
                        old_blob
                    };
                    entries.insert(to.clone(), (mode, blob));
                }
            }
        }
        let mut index_info = Vec::new();
        for (path, (mode, blob)) in &entries {
            index_info.extend_from_slice(format!("{mode} {blob}\t{path}").as_bytes());
            index_info.push(0);
        }
        let index = scratch.path().join("index");
        let with_index = |args: &[&str], stdin: Option<&[u8]>| {
            let mut command = self.command();
            command.env("GIT_INDEX_FILE", &index).args(args);
            run(command, stdin)
        };
        with_index(&["read-tree", "--empty"], None)?;
        with_index(&["update-index", "-z", "--index-info"], Some(&index_info))?;
        let tree = text(with_index(&["write-tree"], None)?).trim().to_owned();
        let mut command = self.command();
        let date = author.date.to_rfc3339();
        command
            .env("GIT_AUTHOR_NAME", &author.name)
            .env("GIT_AUTHOR_EMAIL", &author.email)
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_NAME", &author.name)
            .env("GIT_COMMITTER_EMAIL", &author.email)
            .env("GIT_COMMITTER_DATE", &date)
            .args(["commit-tree", &tree]);
        if let Some(parent) = parent {
            command.args(["-p", parent]);
        }
        command.args(["-F", "-"]);
        let sha = text(run(command, Some(message.as_bytes()))?)
            .trim()
            .to_owned();
        Ok(sha)
    }

    /// Every file of a commit's tree: path → (mode, object SHA).
    fn tree_entries(&self, commit: &str) -> Result<BTreeMap<String, (String, String)>, SimError> {
        let out = self.git(&["ls-tree", "-r", "-z", "--full-tree", commit], None)?;
        let mut entries = BTreeMap::new();
        for record in out
            .split(|&byte| byte == 0)
            .filter(|record| !record.is_empty())
        {
            let record = String::from_utf8_lossy(record);
            let (meta, path) = record.split_once('\t').ok_or_else(|| {
                SimError::Unexpected(format!("unreadable git ls-tree entry {record:?}"))
            })?;
            let mut fields = meta.split(' ');
            let mode = fields.next().unwrap_or_default().to_owned();
            let object = fields.nth(1).unwrap_or_default().to_owned();
            entries.insert(path.to_owned(), (mode, object));
        }
        Ok(entries)
    }

    /// Writes blobs for all `contents` with one `git hash-object` and returns their SHAs.
    fn hash_blobs(&self, scratch: &Path, contents: &[&[u8]]) -> Result<Vec<String>, SimError> {
        if contents.is_empty() {
            return Ok(Vec::new());
        }
        let mut paths = String::new();
        for (index, content) in contents.iter().enumerate() {
            let path = scratch.join(format!("blob-{index}"));
            std::fs::write(&path, content).map_err(|source| SimError::Io {
                path: path.clone(),
                source,
            })?;
            paths.push_str(&path.to_string_lossy());
            paths.push('\n');
        }
        let out = text(self.git(
            &["hash-object", "-w", "--no-filters", "--stdin-paths"],
            Some(paths.as_bytes()),
        )?);
        let blobs: Vec<String> = out.lines().map(str::to_owned).collect();
        if blobs.len() == contents.len() {
            Ok(blobs)
        } else {
            Err(SimError::Unexpected(format!(
                "git hash-object returned {} SHAs for {} blobs",
                blobs.len(),
                contents.len()
            )))
        }
    }

    /// Points `refs/heads/{branch}` at `sha`; with `expected_old`, only if it still points there.
    pub fn update_branch(
        &self,
        branch: &str,
        sha: &str,
        expected_old: Option<&str>,
    ) -> Result<(), SimError> {
        let reference = format!("refs/heads/{branch}");
        let old = expected_old.unwrap_or(NULL_SHA);
        self.git(&["update-ref", &reference, sha, old], None)?;
        Ok(())
    }

    /// Points `refs/pull/{number}/head` at `sha`, as GitHub keeps it for every pull request
    /// (fetchable, not advertised as a branch).
    pub fn update_pull_ref(&self, number: u64, sha: &str) -> Result<(), SimError> {
        let reference = format!("refs/pull/{number}/head");
        self.git(&["update-ref", &reference, sha], None)?;
        Ok(())
    }
}

/// The SHA of git's empty tree, the "before" of a root commit's diff.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

fn parse_raw(out: &[u8]) -> Result<Vec<RawEntry>, SimError> {
    let mut fields = out
        .split(|&byte| byte == 0)
        .map(|field| String::from_utf8_lossy(field));
    let mut entries = Vec::new();
    while let Some(header) = fields.next() {
        if header.is_empty() {
            continue;
        }
        // ":100644 100644 <old> <new> M" then one path, or two for renames and copies.
        let parts: Vec<&str> = header.trim_start_matches(':').split(' ').collect();
        if parts.len() != 5 {
            return Err(SimError::Unexpected(format!(
                "unreadable git diff --raw line {header:?}"
            )));
        }
        let status = parts[4].chars().next().unwrap_or('M');
        let first = fields
            .next()
            .map(std::borrow::Cow::into_owned)
            .unwrap_or_default();
        let (path, previous_path) = if matches!(status, 'R' | 'C') {
            let second = fields
                .next()
                .map(std::borrow::Cow::into_owned)
                .unwrap_or_default();
            (second, Some(first))
        } else {
            (first, None)
        };
        entries.push(RawEntry {
            status,
            old_mode: parts[0].to_owned(),
            new_mode: parts[1].to_owned(),
            old_blob: parts[2].to_owned(),
            new_blob: parts[3].to_owned(),
            path,
            previous_path,
        });
    }
    Ok(entries)
}

fn parse_numstat(out: &[u8]) -> Result<Vec<Option<LineCounts>>, SimError> {
    // "added\tdeleted\tpath\0", or "added\tdeleted\t\0old\0new\0" for a rename.
    let mut fields = out
        .split(|&byte| byte == 0)
        .map(|field| String::from_utf8_lossy(field));
    let mut counts = Vec::new();
    while let Some(field) = fields.next() {
        if field.is_empty() {
            continue;
        }
        let mut parts = field.splitn(3, '\t');
        let added = parts.next().unwrap_or_default();
        let deleted = parts.next().unwrap_or_default();
        let path = parts.next().unwrap_or_default();
        if path.is_empty() {
            // A rename: the two paths follow as their own fields.
            fields.next();
            fields.next();
        }
        counts.push(match (added.parse(), deleted.parse()) {
            (Ok(additions), Ok(deletions)) => Some(LineCounts {
                additions,
                deletions,
            }),
            _ if added == "-" && deleted == "-" => None,
            _ => {
                return Err(SimError::Unexpected(format!(
                    "unreadable git diff --numstat field {field:?}"
                )));
            }
        });
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_lines_with_renames_are_parsed() {
        let out = b":100644 100644 aaa bbb M\0src/lib.rs\0:100644 100644 ccc ccc R100\0old.rs\0new.rs\0:000000 100644 000 ddd A\0added.rs\0";
        let entries = parse_raw(out).unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[1].status, 'R');
        assert_eq!(entries[1].path, "new.rs");
        assert_eq!(entries[1].previous_path.as_deref(), Some("old.rs"));
        assert_eq!(entries[2].status, 'A');
    }

    #[test]
    fn numstat_reads_binary_and_renames() {
        let out = b"3\t1\tsrc/lib.rs\0-\t-\timage.png\x000\t0\t\0old.rs\0new.rs\0";
        let counts = parse_numstat(out).unwrap();
        assert_eq!(
            counts,
            vec![
                Some(LineCounts {
                    additions: 3,
                    deletions: 1
                }),
                None,
                Some(LineCounts {
                    additions: 0,
                    deletions: 0
                }),
            ]
        );
    }
}
