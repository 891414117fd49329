//! The repository owners' `.review-bot.toml` (issue 24, item 1 (b)): the
//! `[build]` table read from the root of a pull request's **base** commit.
//!
//! ```toml
//! [build]
//! setup = ["python3 -m venv .venv", ". .venv/bin/activate", "pip install -e '.[test]'"]
//! build = []
//! test = ["pytest -q"]
//! environment = { PYTHONDONTWRITEBYTECODE = "1" }
//! ```
//!
//! The file may also hold a `[review]` table (issue 28, item 3): the owners'
//! noise control, the keys `min_severity`, `min_confidence` and
//! `max_inline_comments` ([`crate::findings::noise`]), read by
//! [`parse_tables`].
//!
//! ```toml
//! [review]
//! min_severity = "logic"
//! min_confidence = 60
//! max_inline_comments = 10
//! ```
//!
//! The file is the owners' contract with the bot, so it is read strictly: an
//! unknown table or key, a value of the wrong type, a command or variable
//! that could not be passed to a shell (a NUL byte, a variable name that is
//! not `[A-Za-z_][A-Za-z0-9_]*`), a file that is not UTF-8 or is larger than
//! [`SIZE_LIMIT`] is a [`RepositoryFileError`] naming the line and the key
//! and saying how to fix it. A file without a `[build]` table gives no
//! commands ([`parse`] returns `None`): discovery goes on to the next source.
//! An empty `[build]` table is an answer ("run nothing").
//!
//! Pure: the caller reads the bytes (from the base commit, never from the
//! head, so a pull request cannot change what runs for it).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{CommandSet, REPOSITORY_FILE};
use crate::findings::noise::NoiseOverrides;

/// The largest `.review-bot.toml` read (64 KiB); a larger one is an error.
pub const SIZE_LIMIT: usize = 64 * 1024;

/// What is wrong with a `.review-bot.toml`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RepositoryFileError {
    /// Larger than [`SIZE_LIMIT`].
    #[error(
        "{REPOSITORY_FILE} is {size} bytes, more than the {SIZE_LIMIT} bytes read; keep only the \
         [build] and [review] tables in it"
    )]
    TooLarge {
        /// Its size in bytes.
        size: usize,
    },
    /// Not UTF-8 text.
    #[error(
        "{REPOSITORY_FILE} line {line} is not UTF-8 text; save the file as UTF-8 (TOML files \
         must be)"
    )]
    NotUtf8 {
        /// The 1-based line of the first invalid byte.
        line: usize,
    },
    /// Not valid TOML, or not the expected shape.
    #[error("{REPOSITORY_FILE} line {line}: {problem}; {remedy}")]
    Invalid {
        /// The 1-based line (0 when the parser could not say).
        line: usize,
        /// The dotted key involved (`build.tset`), when known.
        key: Option<String>,
        /// What is wrong.
        problem: String,
        /// What to do.
        remedy: String,
    },
}

impl RepositoryFileError {
    /// The dotted key the error is about (`build.tset`), when there is one.
    pub fn key(&self) -> Option<&str> {
        match self {
            Self::Invalid { key, .. } => key.as_deref(),
            _ => None,
        }
    }
}

/// What the owners may write, and nothing else.
const REMEDY: &str = "the file may hold only a [build] table with the keys setup, build and test \
                      (lists of shell command lines) and environment (a table of strings), and a \
                      [review] table with the keys min_severity (one of critical, security, \
                      performance, logic, improvement, clarity), min_confidence (0 to 100) and \
                      max_inline_comments (a whole number)";

/// The file's shape.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    build: Option<Build>,
    #[serde(default)]
    review: NoiseOverrides,
}

/// Both tables of the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepositoryTables {
    /// `[build]`: `None` when the file has none.
    pub build: Option<CommandSet>,
    /// `[review]`: the keys it sets (none when the table is absent).
    pub review: NoiseOverrides,
}

/// `[build]`.
#[derive(Debug, Deserialize)]
#[allow(clippy::struct_field_names, reason = "the file's own key names")]
#[serde(deny_unknown_fields)]
struct Build {
    #[serde(default)]
    setup: Vec<String>,
    #[serde(default)]
    build: Vec<String>,
    #[serde(default)]
    test: Vec<String>,
    #[serde(default)]
    environment: BTreeMap<String, String>,
}

/// Parses the file's bytes: size and encoding checked, then [`parse`].
///
/// # Errors
///
/// A [`RepositoryFileError`] saying what is wrong and where.
pub fn parse_bytes(bytes: &[u8]) -> Result<Option<CommandSet>, RepositoryFileError> {
    parse_tables_bytes(bytes).map(|tables| tables.build)
}

/// Parses the file's bytes into both tables: size and encoding checked, then
/// [`parse_tables`].
///
/// # Errors
///
/// A [`RepositoryFileError`] saying what is wrong and where.
pub fn parse_tables_bytes(bytes: &[u8]) -> Result<RepositoryTables, RepositoryFileError> {
    if bytes.len() > SIZE_LIMIT {
        return Err(RepositoryFileError::TooLarge { size: bytes.len() });
    }
    let text = std::str::from_utf8(bytes).map_err(|error| RepositoryFileError::NotUtf8 {
        line: line_of(bytes, error.valid_up_to()),
    })?;
    parse_tables(text)
}

/// Parses the file's text: `None` when it has no `[build]` table.
///
/// # Errors
///
/// A [`RepositoryFileError`] naming the line and key: an unknown table or
/// key, a wrong type, a NUL byte in a command, a bad variable name, a text
/// larger than [`SIZE_LIMIT`].
pub fn parse(text: &str) -> Result<Option<CommandSet>, RepositoryFileError> {
    parse_tables(text).map(|tables| tables.build)
}

/// Parses the file's text into its `[build]` and `[review]` tables.
///
/// # Errors
///
/// As [`parse`]; also a `[review]` key that is unknown or out of range.
pub fn parse_tables(text: &str) -> Result<RepositoryTables, RepositoryFileError> {
    if text.len() > SIZE_LIMIT {
        return Err(RepositoryFileError::TooLarge { size: text.len() });
    }
    let file: File = toml::from_str(text).map_err(|error| from_toml(text, &error))?;
    let review = file.review;
    let Some(build) = file.build else {
        return Ok(RepositoryTables {
            build: None,
            review,
        });
    };
    for (list, commands) in [
        ("setup", &build.setup),
        ("build", &build.build),
        ("test", &build.test),
    ] {
        for command in commands {
            if command.contains('\0') {
                return Err(invalid_value(
                    text,
                    &format!("build.{list}"),
                    "a command contains a NUL character",
                    "remove it: a shell command line cannot hold one",
                ));
            }
            if command.trim().is_empty() {
                return Err(invalid_value(
                    text,
                    &format!("build.{list}"),
                    "a command is empty",
                    "remove the empty string from the list",
                ));
            }
        }
    }
    for (name, value) in &build.environment {
        if !is_variable_name(name) {
            return Err(invalid_value(
                text,
                &format!("build.environment.{name}"),
                &format!("{name:?} is not an environment variable name"),
                "use letters, digits and underscores, not starting with a digit",
            ));
        }
        if value.contains('\0') {
            return Err(invalid_value(
                text,
                &format!("build.environment.{name}"),
                "the value contains a NUL character",
                "remove it: an environment variable cannot hold one",
            ));
        }
    }
    Ok(RepositoryTables {
        build: Some(CommandSet {
            setup: build.setup,
            build: build.build,
            test: build.test,
            environment: build.environment,
        }),
        review,
    })
}

/// `NAME` is `[A-Za-z_][A-Za-z0-9_]*`.
fn is_variable_name(name: &str) -> bool {
    let mut characters = name.chars();
    characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && characters.all(|character| character.is_ascii_alphanumeric() || character == '_')
}

/// The 1-based line of byte `offset`.
fn line_of(bytes: &[u8], offset: usize) -> usize {
    String::from_utf8_lossy(&bytes[..offset.min(bytes.len())])
        .matches('\n')
        .count()
        + 1
}

/// An error about a value found after parsing: the line is the key's (the
/// last segment's first assignment), when it can be found.
fn invalid_value(text: &str, key: &str, problem: &str, remedy: &str) -> RepositoryFileError {
    let last = key.rsplit('.').next().unwrap_or(key);
    let line = text
        .lines()
        .position(|line| {
            let line = line.trim_start();
            line.strip_prefix(last)
                .or_else(|| {
                    line.strip_prefix('"')
                        .and_then(|rest| rest.strip_prefix(last))
                        .and_then(|rest| rest.strip_prefix('"'))
                })
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map_or(0, |index| index + 1);
    RepositoryFileError::Invalid {
        line,
        key: Some(key.to_owned()),
        problem: format!("`{key}`: {problem}"),
        remedy: remedy.to_owned(),
    }
}

/// A `toml` error as a [`RepositoryFileError::Invalid`]: its line, and the
/// key when toml names one (an unknown key) or the line shows one.
fn from_toml(text: &str, error: &toml::de::Error) -> RepositoryFileError {
    let message = error.message().trim_end();
    let line = error
        .span()
        .map_or(0, |span| line_of(text.as_bytes(), span.start));
    let unknown = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split('`').next())
        .map(str::to_owned);
    let key = match &unknown {
        Some(name) if text_line(text, line).trim_start().starts_with('[') => Some(name.clone()),
        Some(name) => Some(match table_above(text, line) {
            Some(table) => format!("{table}.{name}"),
            None => name.clone(),
        }),
        None => key_on_line(text, line),
    };
    let problem = match (&unknown, &key) {
        (Some(_), Some(key)) => format!("unknown key `{key}`"),
        (None, Some(key)) => format!("`{key}`: {message}"),
        _ => message.to_owned(),
    };
    RepositoryFileError::Invalid {
        line,
        key,
        problem,
        remedy: REMEDY.to_owned(),
    }
}

/// The text of 1-based line `line` (empty when there is none).
fn text_line(text: &str, line: usize) -> &str {
    line.checked_sub(1)
        .and_then(|index| text.lines().nth(index))
        .unwrap_or("")
}

/// The `[table]` header above 1-based line `line`.
fn table_above(text: &str, line: usize) -> Option<String> {
    text.lines()
        .take(line.saturating_sub(1))
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .find_map(|line| {
            let inner = line.trim().strip_prefix('[')?;
            let inner = inner.trim_start_matches('[');
            Some(inner.split(']').next()?.trim().to_owned())
        })
}

/// The dotted key assigned on 1-based line `line`, if the line assigns one.
fn key_on_line(text: &str, line: usize) -> Option<String> {
    let current = text_line(text, line).trim();
    if current.starts_with('[') || current.starts_with('#') {
        return None;
    }
    let (name, _) = current.split_once('=')?;
    let name = name.trim().trim_matches('"');
    if name.is_empty() || name.chars().count() > 100 {
        return None;
    }
    Some(match table_above(text, line) {
        Some(table) => format!("{table}.{name}"),
        None => name.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(text: &str) -> RepositoryFileError {
        parse(text).expect_err("the file is refused")
    }

    #[test]
    fn reads_every_key() {
        let commands = parse(
            "# the owners' build\n[build]\nsetup = [\"python3 -m venv .venv\", \". .venv/bin/activate\"]\n\
             build = [\"make\"]\ntest = [\"./check.sh\", \"pytest -q\"]\n\
             environment = { PYTHONDONTWRITEBYTECODE = \"1\", _X9 = \"\" }\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            commands.setup,
            ["python3 -m venv .venv", ". .venv/bin/activate"]
        );
        assert_eq!(commands.build, ["make"]);
        assert_eq!(commands.test, ["./check.sh", "pytest -q"]);
        assert_eq!(commands.environment["PYTHONDONTWRITEBYTECODE"], "1");
        assert_eq!(commands.environment["_X9"], "");
    }

    #[test]
    fn a_file_without_build_gives_nothing_and_an_empty_build_runs_nothing() {
        assert_eq!(parse("").unwrap(), None);
        assert_eq!(parse("# nothing yet\n").unwrap(), None);
        let empty = parse("[build]\n").unwrap().unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn an_unknown_key_is_named_with_its_line() {
        let error = invalid("[build]\nbuild = [\"make\"]\ntset = [\"make test\"]\n");
        assert_eq!(error.key(), Some("build.tset"));
        let shown = error.to_string();
        assert!(shown.contains("line 3"), "{shown}");
        assert!(shown.contains("unknown key `build.tset`"), "{shown}");
        assert!(shown.contains("setup, build and test"), "{shown}");
    }

    #[test]
    fn reads_the_review_table_beside_build_or_alone() {
        let tables = parse_tables(
            "[review]\nmin_severity = \"logic\"\nmin_confidence = 60\nmax_inline_comments = 3\n",
        )
        .unwrap();
        assert_eq!(tables.build, None);
        assert_eq!(
            tables.review.min_severity,
            Some(crate::findings::Severity::Logic)
        );
        assert_eq!(
            tables
                .review
                .min_confidence
                .map(crate::findings::noise::Confidence::value),
            Some(60)
        );
        assert_eq!(tables.review.max_inline_comments, Some(3));
        let both =
            parse_tables("[build]\ntest = [\"x\"]\n[review]\nmax_inline_comments = 1\n").unwrap();
        assert!(both.build.is_some());
        assert_eq!(both.review.max_inline_comments, Some(1));
        assert!(parse_tables("").unwrap().review.is_empty());
    }

    #[test]
    fn a_bad_review_key_or_value_is_named_with_what_to_give() {
        let error = invalid("[build]\ntest = [\"x\"]\n[review]\nmax_inline = 3\n");
        assert_eq!(error.key(), Some("review.max_inline"));
        assert!(error.to_string().contains("line 4"), "{error}");
        assert!(error.to_string().contains("max_inline_comments"), "{error}");
        let error = invalid("[review]\nmin_severity = \"major\"\n");
        assert!(error.to_string().contains("line 2"), "{error}");
        let error = invalid("[review]\nmin_confidence = 250\n");
        assert!(error.to_string().contains("from 0 to 100"), "{error}");
    }

    #[test]
    fn an_unknown_table_is_named() {
        let error = invalid("[build]\ntest = [\"x\"]\n\n[deploy]\nrun = [\"y\"]\n");
        assert_eq!(error.key(), Some("deploy"));
        assert!(error.to_string().contains("line 4"), "{error}");
    }

    #[test]
    fn a_wrong_type_names_the_key_and_line() {
        let error = invalid("[build]\ntest = \"./check.sh\"\n");
        assert_eq!(error.key(), Some("build.test"));
        let shown = error.to_string();
        assert!(shown.contains("line 2"), "{shown}");
        let error = invalid("[build]\nenvironment = { DEBUG = 1 }\n");
        assert!(error.to_string().contains("line 2"), "{error}");
        let error = invalid("build = 3\n");
        assert_eq!(error.key(), Some("build"));
    }

    #[test]
    fn bad_toml_is_an_error_with_a_line() {
        let error = invalid("[build]\ntest = [\"a\"\n");
        assert!(matches!(error, RepositoryFileError::Invalid { line, .. } if line >= 2));
    }

    #[test]
    fn hostile_values_are_refused() {
        let error = invalid("[build]\ntest = [\"make\\u0000; rm -rf /\"]\n");
        assert_eq!(error.key(), Some("build.test"));
        assert!(error.to_string().contains("line 2"), "{error}");
        let error = invalid("[build]\nenvironment = { \"A=B\" = \"x\" }\n");
        assert_eq!(error.key(), Some("build.environment.A=B"));
        let error = invalid("[build]\ntest = [\"  \"]\n");
        assert_eq!(error.key(), Some("build.test"));
    }

    #[test]
    fn size_and_encoding_are_checked() {
        let big = format!("[build]\ntest = [\"{}\"]\n", "x".repeat(SIZE_LIMIT));
        assert!(matches!(
            parse_bytes(big.as_bytes()),
            Err(RepositoryFileError::TooLarge { .. })
        ));
        assert!(matches!(
            parse(&big),
            Err(RepositoryFileError::TooLarge { .. })
        ));
        let latin1 = b"[build]\n# caf\xe9\ntest = [\"x\"]\n";
        assert_eq!(
            parse_bytes(latin1),
            Err(RepositoryFileError::NotUtf8 { line: 2 })
        );
    }

    #[test]
    fn multi_byte_text_and_deep_nesting_do_not_panic() {
        let error = invalid("[build]\n\u{e9}\u{4e2d}\u{6587} = [\"x\"]\n");
        assert!(error.to_string().contains("line 2"), "{error}");
        let deep = format!("[build]\ntest = {}\n", "[".repeat(SIZE_LIMIT - 20));
        assert!(parse(&deep).is_err());
        let deep_tables = format!("x = {}\n", "{ a = ".repeat(8_000));
        assert!(parse(&deep_tables).is_err());
        let long_key = format!("[build]\n{} = 1\n", "\u{4e2d}".repeat(10_000));
        assert!(parse(&long_key).is_err());
    }
}
