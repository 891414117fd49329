//! The case format: a pull request to review (a repository, a base and a
//! head) and the golden findings a good review makes on it.
//!
//! A case is a JSON object:
//!
//! ```json
//! {
//!   "name": "off-by-one",
//!   "repository": "widgets.bundle",
//!   "base": "main",
//!   "head": "3f1c2a9",
//!   "title": "Count the last widget",
//!   "body": "optional description",
//!   "golden": [
//!     {"file": "src/lib.rs", "line": 12, "end_line": 14, "side": "RIGHT",
//!      "description": "the loop stops one short"}
//!   ]
//! }
//! ```
//!
//! `repository` is a git repository (a directory) or a git bundle, relative
//! to the case file's directory; `base` and `head` are revisions in it.
//! `golden` may also be spelt `golden_findings`; `end_line` defaults to
//! `line`, `side` to `RIGHT`; `name` defaults to the file's name. A golden
//! finding may have no `line` (and then no `file` either: any file), as in
//! case sets whose golden findings are descriptions only: such a finding is
//! matched by the judge alone (`eval --judge`, [`crate::judge`]); without
//! `--judge` it is an error ([`require_lines`]). `CASES`
//! (what `review-bot eval` reads) is one `.json` file holding a case or an
//! array of cases, or a directory whose `*.json` files each hold one case or
//! an array (read in name order). Unknown keys are errors, so a misspelt
//! key is not a silently empty golden list.

use std::path::{Path, PathBuf};

use review_core::anchor::Side;
use serde::{Deserialize, Serialize};

/// The largest case file read (a case set is text, not a repository).
pub const MAX_CASE_FILE_BYTES: u64 = 64 << 20;

/// One line range a good review comments on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoldenFinding {
    /// Path from the repository root; empty (absent) only without a line:
    /// a finding on any file may match it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub file: String,
    /// The first line (1-based, numbered on `side`); `None`: a description
    /// only, matched by the judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The last line; `line` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    /// Which side of the diff the lines are numbered on; `RIGHT` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
    /// What is wrong there (for people, and for the judge).
    #[serde(default)]
    pub description: String,
}

impl GoldenFinding {
    /// The side, with the default applied.
    pub fn side(&self) -> Side {
        self.side.unwrap_or_default()
    }

    /// The last line of the range (`None` without a line).
    pub fn last_line(&self) -> Option<u32> {
        self.line
            .map(|line| self.end_line.unwrap_or(line).max(line))
    }
}

/// One pull request to review and its golden findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// A short unique name (letters, digits, `-`, `_`, `.`).
    #[serde(default)]
    pub name: String,
    /// The repository: a directory or a git bundle (relative paths are
    /// resolved against the case file's directory when loaded).
    pub repository: PathBuf,
    /// The base revision.
    pub base: String,
    /// The head revision (what the pull request would merge).
    pub head: String,
    /// The pull request's title, shown to the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The pull request's description, shown to the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// What a good review finds.
    #[serde(default, alias = "golden_findings")]
    pub golden: Vec<GoldenFinding>,
}

/// Why a case set cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    /// A file or directory could not be read.
    #[error("could not read `{}` (give a case file, .json, or a directory of them)", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A path is not what a case set can be.
    #[error("`{}` {problem}", path.display())]
    NotACaseFile {
        /// The path.
        path: PathBuf,
        /// What is wrong with it and what to give instead.
        problem: String,
    },
    /// A golden finding has no line and `--judge` was not given.
    #[error(
        "case {case}: golden finding {number} has no line, so only the judge can match it; \
         run with --judge (an agent compares findings with the golden descriptions, at a cost \
         reported apart), or give it a file and a line"
    )]
    NeedsJudge {
        /// The case's name.
        case: String,
        /// The golden finding's number, from 1.
        number: usize,
    },
    /// A file is not valid case JSON.
    #[error("`{}` is not a case file (a case is a JSON object with repository, base, head and golden; see the README's `review-bot eval` section)", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// serde's message, with line and column.
        source: serde_json::Error,
    },
    /// A case parsed but says something impossible.
    #[error("`{}`, case {name:?}: {problem}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The case's name.
        name: String,
        /// What is wrong and how to fix it.
        problem: String,
    },
    /// Two cases share a name.
    #[error("two cases are named {name:?} (in `{}` and `{}`); give each case its own name", first.display(), second.display())]
    DuplicateName {
        /// The name.
        name: String,
        /// Where it was first seen.
        first: PathBuf,
        /// Where it was seen again.
        second: PathBuf,
    },
    /// The set holds no case.
    #[error("`{}` holds no case; give a .json case file or a directory of them", path.display())]
    Empty {
        /// The path given.
        path: PathBuf,
    },
}

/// Loads `CASES`: a `.json` file (one case or an array) or a directory of them.
///
/// # Errors
///
/// A path that cannot be read or is not a regular file or directory (a
/// FIFO, a device), a file over [`MAX_CASE_FILE_BYTES`], invalid JSON, an
/// invalid case, two cases with one name, or no case at all.
pub fn load(path: &Path) -> Result<Vec<Case>, CaseError> {
    let metadata = std::fs::metadata(path).map_err(|source| CaseError::Read {
        path: path.to_owned(),
        source,
    })?;
    let files = if metadata.is_dir() {
        let mut files = Vec::new();
        let entries = std::fs::read_dir(path).map_err(|source| CaseError::Read {
            path: path.to_owned(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| CaseError::Read {
                path: path.to_owned(),
                source,
            })?;
            let file = entry.path();
            if file
                .extension()
                .is_some_and(|extension| extension == "json")
            {
                files.push(file);
            }
        }
        files.sort();
        files
    } else {
        vec![path.to_owned()]
    };
    let mut cases: Vec<(PathBuf, Case)> = Vec::new();
    for file in files {
        for case in load_file(&file)? {
            if let Some((first, _)) = cases.iter().find(|(_, seen)| seen.name == case.name) {
                return Err(CaseError::DuplicateName {
                    name: case.name,
                    first: first.clone(),
                    second: file,
                });
            }
            cases.push((file.clone(), case));
        }
    }
    if cases.is_empty() {
        return Err(CaseError::Empty {
            path: path.to_owned(),
        });
    }
    Ok(cases.into_iter().map(|(_, case)| case).collect())
}

/// One case file: its cases, checked, with `repository` resolved against
/// the file's directory and `name` defaulted from the file's name.
///
/// # Errors
///
/// As [`load`].
pub fn load_file(path: &Path) -> Result<Vec<Case>, CaseError> {
    let metadata = std::fs::metadata(path).map_err(|source| CaseError::Read {
        path: path.to_owned(),
        source,
    })?;
    if !metadata.is_file() {
        return Err(CaseError::NotACaseFile {
            path: path.to_owned(),
            problem: "is not a regular file; give a .json case file or a directory of them"
                .to_owned(),
        });
    }
    if metadata.len() > MAX_CASE_FILE_BYTES {
        return Err(CaseError::NotACaseFile {
            path: path.to_owned(),
            problem: format!(
                "is {} MiB; a case file holds at most {} MiB (split the set into a directory of files)",
                metadata.len() >> 20,
                MAX_CASE_FILE_BYTES >> 20
            ),
        });
    }
    let text = std::fs::read(path).map_err(|source| CaseError::Read {
        path: path.to_owned(),
        source,
    })?;
    let parse = |source| CaseError::Parse {
        path: path.to_owned(),
        source,
    };
    let value: serde_json::Value = serde_json::from_slice(&text).map_err(parse)?;
    let mut cases: Vec<Case> = if value.is_array() {
        serde_json::from_value(value).map_err(parse)?
    } else {
        vec![serde_json::from_value(value).map_err(parse)?]
    };
    let stem = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let directory = path.parent().unwrap_or(Path::new("."));
    let several = cases.len() > 1;
    for (index, case) in cases.iter_mut().enumerate() {
        if case.name.is_empty() {
            case.name = if several {
                format!("{stem}-{}", index + 1)
            } else {
                stem.clone()
            };
        }
        if case.repository.is_relative() {
            let joined = directory.join(&case.repository);
            case.repository = std::path::absolute(&joined).unwrap_or(joined);
        }
        check(case).map_err(|problem| CaseError::Invalid {
            path: path.to_owned(),
            name: case.name.clone(),
            problem,
        })?;
    }
    Ok(cases)
}

/// What is wrong with a case, if anything.
///
/// # Errors
///
/// A sentence saying what is wrong and what to write instead.
pub fn check(case: &Case) -> Result<(), String> {
    if case.name.is_empty()
        || case.name.len() > 100
        || !case
            .name
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || "-_.".contains(character))
        || case.name.starts_with('.')
    {
        return Err(format!(
            "the name {:?} is not usable: use 1–100 letters, digits, `-`, `_` or `.`, not starting with `.`",
            case.name
        ));
    }
    for (field, revision) in [("base", &case.base), ("head", &case.head)] {
        if revision.trim().is_empty()
            || revision.starts_with('-')
            || revision.chars().any(char::is_control)
        {
            return Err(format!(
                "{field} {revision:?} is not a revision; give a branch, tag or commit SHA"
            ));
        }
    }
    for (index, golden) in case.golden.iter().enumerate() {
        let number = index + 1;
        let Some(line) = golden.line else {
            if golden.end_line.is_some() {
                return Err(format!(
                    "golden finding {number} has an end_line but no line; give both, or neither \
                     (a description only, for --judge)"
                ));
            }
            if golden.description.trim().is_empty() {
                return Err(format!(
                    "golden finding {number} has neither a line nor a description; give a file \
                     and line, or a description for --judge"
                ));
            }
            continue;
        };
        if golden.file.trim().is_empty() {
            return Err(format!(
                "golden finding {number} has a line but no file; give the file it is in"
            ));
        }
        if line == 0 {
            return Err(format!(
                "golden finding {number} ({}) has line 0; lines start at 1",
                golden.file
            ));
        }
        if golden.end_line.is_some_and(|end| end < line) {
            return Err(format!(
                "golden finding {number} ({}) ends (end_line {}) before it starts (line {line})",
                golden.file,
                golden.end_line.unwrap_or_default(),
            ));
        }
    }
    Ok(())
}

/// Without `--judge`, every golden finding needs a line: the first case
/// with one that has none is an error that says to use `--judge`.
///
/// # Errors
///
/// [`CaseError::NeedsJudge`] naming the case and the golden finding.
pub fn require_lines(cases: &[Case]) -> Result<(), CaseError> {
    for case in cases {
        if let Some(index) = case.golden.iter().position(|golden| golden.line.is_none()) {
            return Err(CaseError::NeedsJudge {
                case: case.name.clone(),
                number: index + 1,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(directory: &Path, name: &str, text: &str) -> PathBuf {
        let path = directory.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_directory_of_files_loads_in_name_order_with_defaults() {
        let directory = tempfile::tempdir().unwrap();
        write(
            directory.path(),
            "b.json",
            r#"{"repository": "repo.bundle", "base": "main", "head": "fix",
                "golden_findings": [{"file": "src/lib.rs", "line": 3}]}"#,
        );
        write(
            directory.path(),
            "a.json",
            r#"[{"name": "one", "repository": "/abs", "base": "a", "head": "b"},
                {"repository": "r", "base": "a", "head": "b", "golden": []}]"#,
        );
        write(directory.path(), "notes.txt", "not a case");
        let cases = load(directory.path()).unwrap();
        let names: Vec<&str> = cases.iter().map(|case| case.name.as_str()).collect();
        assert_eq!(names, ["one", "a-2", "b"]);
        assert_eq!(cases[0].repository, PathBuf::from("/abs"));
        assert_eq!(cases[2].repository, directory.path().join("repo.bundle"));
        assert_eq!(cases[2].golden[0].side(), Side::Right);
        assert_eq!(cases[2].golden[0].last_line(), Some(3));
    }

    /// The error and its sources, as the binary prints them (`{:#}`).
    fn chain(error: &dyn std::error::Error) -> String {
        let mut parts = vec![error.to_string()];
        let mut source = error.source();
        while let Some(cause) = source {
            parts.push(cause.to_string());
            source = cause.source();
        }
        parts.join(": ")
    }

    #[test]
    fn golden_findings_without_lines_need_a_description_and_the_judge() {
        let directory = tempfile::tempdir().unwrap();
        let mistake = |name: &str, golden: &str| {
            let path = write(
                directory.path(),
                name,
                &format!(
                    r#"{{"repository": "r", "base": "a", "head": "b", "golden": [{golden}]}}"#
                ),
            );
            load(&path)
                .map(|_| ())
                .map_err(|error| chain(&error))
                .unwrap_err()
        };
        let message = mistake("no-file.json", r#"{"line": 3, "description": "d"}"#);
        assert!(message.contains("has a line but no file"), "{message}");
        let message = mistake("nothing.json", r#"{"file": "x"}"#);
        assert!(
            message.contains("neither a line nor a description"),
            "{message}"
        );
        let message = mistake("end-only.json", r#"{"end_line": 4, "description": "d"}"#);
        assert!(message.contains("an end_line but no line"), "{message}");

        let described = write(
            directory.path(),
            "described.json",
            r#"{"name": "d", "repository": "r", "base": "a", "head": "b",
                "golden": [{"file": "x", "line": 1}, {"description": "a leak"}]}"#,
        );
        let cases = load(&described).unwrap();
        assert_eq!(cases[0].golden[1].line, None);
        assert!(cases[0].golden[1].file.is_empty());
        let message = require_lines(&cases).unwrap_err().to_string();
        assert!(
            message.contains("case d: golden finding 2 has no line") && message.contains("--judge"),
            "{message}"
        );
    }

    #[test]
    fn mistakes_are_named() {
        let directory = tempfile::tempdir().unwrap();
        let typo = write(
            directory.path(),
            "typo.json",
            r#"{"repository": "r", "base": "a", "head": "b", "goldens": []}"#,
        );
        let message = load(&typo)
            .map(|_| ())
            .map_err(|error| chain(&error))
            .unwrap_err();
        assert!(message.contains("unknown field `goldens`"), "{message}");

        let backwards = write(
            directory.path(),
            "backwards.json",
            r#"{"repository": "r", "base": "a", "head": "b",
                "golden": [{"file": "x", "line": 9, "end_line": 2}]}"#,
        );
        let message = load(&backwards)
            .map(|_| ())
            .map_err(|error| chain(&error))
            .unwrap_err();
        assert!(
            message.contains("ends (end_line 2) before it starts"),
            "{message}"
        );

        let option = write(
            directory.path(),
            "option.json",
            r#"{"repository": "r", "base": "--upload-pack=x", "head": "b"}"#,
        );
        let message = load(&option)
            .map(|_| ())
            .map_err(|error| chain(&error))
            .unwrap_err();
        assert!(message.contains("is not a revision"), "{message}");

        let twice = tempfile::tempdir().unwrap();
        write(
            twice.path(),
            "1.json",
            r#"{"name": "same", "repository": "r", "base": "a", "head": "b"}"#,
        );
        write(
            twice.path(),
            "2.json",
            r#"{"name": "same", "repository": "r", "base": "a", "head": "b"}"#,
        );
        let message = load(twice.path())
            .map(|_| ())
            .map_err(|error| chain(&error))
            .unwrap_err();
        assert!(
            message.contains("two cases are named \"same\""),
            "{message}"
        );

        let empty = tempfile::tempdir().unwrap();
        let message = load(empty.path())
            .map(|_| ())
            .map_err(|error| chain(&error))
            .unwrap_err();
        assert!(message.contains("holds no case"), "{message}");
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let directory = tempfile::tempdir().unwrap();
        let fifo = directory.path().join("cases.json");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let message = load(&fifo)
            .map(|_| ())
            .map_err(|error| chain(&error))
            .unwrap_err();
        assert!(message.contains("is not a regular file"), "{message}");
        // In a directory, too.
        let message = load(directory.path())
            .map(|_| ())
            .map_err(|error| chain(&error))
            .unwrap_err();
        assert!(message.contains("is not a regular file"), "{message}");
    }
}
