//! Every path git can write round-trips: file names made of arbitrary bytes
//! (all but NUL, and `/` only between components) are committed with real git,
//! diffed with real git (`core.quotePath` on and off), parsed, and every
//! changed line must anchor `inline` on the file's own name.
//!
//! Names that are not UTF-8 are compared by their lossy form (each invalid
//! sequence → U+FFFD): the model's paths are `String`s, the CLI reads a diff
//! with `String::from_utf8_lossy`, and C-quoted bytes decode the same way, so
//! both quoting settings must give the same name. Two names that only differ in
//! their invalid bytes would collide; the generator keeps them apart (see
//! `review_core::diff`'s docs for what the model does with them).

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::process::Command;

use proptest::prelude::*;
use review_core::anchor::{CommentLocation, Side, Verdict, anchor};
use review_core::diff::{ChangeKind, PullRequestDiff};

/// A throwaway repository, isolated from the machine's git configuration.
struct Repository {
    directory: tempfile::TempDir,
}

impl Repository {
    fn new() -> Self {
        let repository = Self {
            directory: tempfile::tempdir().expect("a temporary directory"),
        };
        repository.git(&["init", "--quiet", "--initial-branch=main"]);
        for (key, value) in [
            ("user.name", "Paths"),
            ("user.email", "paths@example.com"),
            ("core.autocrlf", "false"),
            // Linux stores any byte but NUL and `/`; git's protections for
            // other file systems would refuse some of the names we want.
            ("core.protectNTFS", "false"),
            ("core.protectHFS", "false"),
        ] {
            repository.git(&["config", key, value]);
        }
        repository
    }

    fn path(&self, name: &[u8]) -> PathBuf {
        self.directory.path().join(OsStr::from_bytes(name))
    }

    fn write(&self, name: &[u8], contents: &[u8]) {
        let path = self.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }

    fn remove(&self, name: &[u8]) {
        std::fs::remove_file(self.path(name)).unwrap();
    }

    fn git(&self, arguments: &[&str]) -> Vec<u8> {
        let output = Command::new("git")
            .args(arguments)
            .current_dir(self.directory.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("HOME", self.directory.path())
            .output()
            .unwrap_or_else(|error| {
                panic!("cannot run git ({error}); install git (Debian: `apt-get install git`)")
            });
        assert!(
            output.status.success(),
            "git {arguments:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    }

    fn commit(&self, message: &str) {
        self.git(&["add", "--all"]);
        self.git(&["commit", "--quiet", "--allow-empty", "--message", message]);
    }
}

/// What the head commit does to one generated file.
#[derive(Debug, Clone, Copy)]
enum Change {
    /// Line 3 replaced, line 7 appended.
    Modify,
    /// A new two-line file.
    Add,
    /// The six-line file removed.
    Delete,
    /// Moved to the second name, line 6 changed.
    Rename,
    /// Copied unchanged to the second name (the original stays as it is).
    Copy,
    /// Made executable.
    Mode,
    /// A binary file changed.
    Binary,
}

/// One generated file: its change, its name, and the second name a rename or
/// copy uses.
#[derive(Debug, Clone)]
struct Case {
    change: Change,
    name: Vec<u8>,
    other: Vec<u8>,
}

impl Case {
    /// The names this case puts in the repository.
    fn names(&self) -> Vec<&[u8]> {
        match self.change {
            Change::Rename | Change::Copy => vec![&self.name, &self.other],
            _ => vec![&self.name],
        }
    }
}

/// Bytes that stress git's quoting and our parser more than uniform bytes do.
const SPECIAL: &[u8] = b" \t\n\r\x07\x08\x0b\x0c\x7f\"\\ab-.:#>@~*?";

/// One byte of a name component: anything but NUL and `/`.
fn name_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        3 => prop::sample::select(SPECIAL.to_vec()),
        2 => prop::sample::select(vec![0xc3_u8, 0xa4, 0xe2, 0x80, 0xae, 0xff, 0xfe, 0x85]),
        3 => any::<u8>(),
    ]
    .prop_filter("NUL and `/` cannot be in a component", |byte| {
        *byte != 0 && *byte != b'/'
    })
}

fn component() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(name_byte(), 1..8).prop_filter("not a special name", |bytes| {
        !matches!(bytes.as_slice(), b"." | b"..") && !bytes.eq_ignore_ascii_case(b".git")
    })
}

/// A path of one or two components.
fn name() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(component(), 1..3).prop_map(|components| components.join(&b'/'))
}

fn change() -> impl Strategy<Value = Change> {
    prop::sample::select(vec![
        Change::Modify,
        Change::Add,
        Change::Delete,
        Change::Rename,
        Change::Copy,
        Change::Mode,
        Change::Binary,
    ])
}

/// Whether the names can live in one tree and stay apart in the model: all
/// distinct after lossy decoding, and none a directory of another.
fn coexist(cases: &[Case]) -> bool {
    let names: Vec<&[u8]> = cases.iter().flat_map(Case::names).collect();
    let lossy: BTreeSet<String> = names.iter().map(|name| lossy(name)).collect();
    if lossy.len() != names.len() {
        return false;
    }
    names.iter().all(|name| {
        names.iter().all(|other| {
            !(other.len() > name.len() && other.starts_with(name) && other[name.len()] == b'/')
        })
    })
}

fn cases() -> impl Strategy<Value = Vec<Case>> {
    prop::collection::vec(
        (change(), name(), name()).prop_map(|(change, name, other)| Case {
            change,
            name,
            other,
        }),
        1..6,
    )
    .prop_filter("names must coexist", |cases| coexist(cases))
}

fn byte(index: usize) -> u8 {
    u8::try_from(index).expect("fewer than 256 files")
}

fn lossy(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

/// Six lines no other file shares, so rename and copy detection pair each
/// file with its own origin only.
fn lines(index: usize, label: &str, count: usize) -> String {
    let mut text = String::new();
    for line in 1..=count {
        writeln!(text, "file {index} {label} {line}").unwrap();
    }
    text
}

/// Builds the base and head commits; returns the repository.
fn build(cases: &[Case]) -> Repository {
    let repository = Repository::new();
    for (index, case) in cases.iter().enumerate() {
        match case.change {
            Change::Add => {}
            Change::Binary => repository.write(&case.name, &[0, 1, 2, 0, 255, byte(index)]),
            _ => repository.write(&case.name, lines(index, "base", 6).as_bytes()),
        }
    }
    repository.commit("base");
    for (index, case) in cases.iter().enumerate() {
        match case.change {
            Change::Modify => {
                let text = lines(index, "base", 6).replace(
                    &format!("file {index} base 3\n"),
                    &format!("file {index} changed 3\n"),
                ) + &format!("file {index} appended 7\n");
                repository.write(&case.name, text.as_bytes());
            }
            Change::Add => repository.write(&case.name, lines(index, "added", 2).as_bytes()),
            Change::Delete => repository.remove(&case.name),
            Change::Rename => {
                repository.remove(&case.name);
                let text = lines(index, "base", 6).replace(
                    &format!("file {index} base 6\n"),
                    &format!("file {index} renamed 6\n"),
                );
                repository.write(&case.other, text.as_bytes());
            }
            Change::Copy => {
                repository.write(&case.other, lines(index, "base", 6).as_bytes());
            }
            Change::Mode => {
                let path = repository.path(&case.name);
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
            Change::Binary => {
                repository.write(&case.name, &[0, 3, 4, 0, 254, byte(index)]);
            }
        }
    }
    repository.commit("head");
    repository
}

fn diff(repository: &Repository, quote_path: bool) -> PullRequestDiff {
    let setting = format!("core.quotePath={quote_path}");
    let bytes = repository.git(&[
        "-c",
        &setting,
        "diff",
        "-M",
        "-C",
        "--find-copies-harder",
        "main~1",
        "main",
    ]);
    // What `review-bot findings validate` does with a diff file.
    let text = String::from_utf8_lossy(&bytes);
    PullRequestDiff::parse(&text).unwrap_or_else(|error| {
        panic!("git's diff (quotePath={quote_path}) does not parse: {error}\n{text}")
    })
}

/// The lines each case's comments must anchor inline on, per side.
fn changed_lines(change: Change) -> (&'static [u32], &'static [u32]) {
    match change {
        Change::Modify => (&[3], &[3, 7]),
        Change::Add => (&[], &[1, 2]),
        Change::Delete => (&[1, 2, 3, 4, 5, 6], &[]),
        Change::Rename => (&[6], &[6]),
        Change::Copy | Change::Mode | Change::Binary => (&[], &[]),
    }
}

fn check(cases: &[Case], diff: &PullRequestDiff, quote_path: bool) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        diff.len(),
        cases.len(),
        "quotePath={}: files {:?}",
        quote_path,
        diff.files()
            .iter()
            .map(|file| &file.path)
            .collect::<Vec<_>>()
    );
    for case in cases {
        let (path, previous, kind) = match case.change {
            Change::Rename => (
                lossy(&case.other),
                Some(lossy(&case.name)),
                ChangeKind::Renamed,
            ),
            Change::Copy => (
                lossy(&case.other),
                Some(lossy(&case.name)),
                ChangeKind::Copied,
            ),
            Change::Modify | Change::Binary => (lossy(&case.name), None, ChangeKind::Modified),
            Change::Add => (lossy(&case.name), None, ChangeKind::Added),
            Change::Delete => (lossy(&case.name), None, ChangeKind::Deleted),
            Change::Mode => (lossy(&case.name), None, ChangeKind::ModeOnly),
        };
        let file = diff.file(&path);
        prop_assert!(
            file.is_some(),
            "quotePath={}: {:?} is missing; the model has {:?}",
            quote_path,
            path,
            diff.files()
                .iter()
                .map(|file| &file.path)
                .collect::<Vec<_>>()
        );
        let file = file.unwrap();
        prop_assert_eq!(file.change, kind, "quotePath={}: {:?}", quote_path, path);
        prop_assert_eq!(
            file.previous_path.as_deref(),
            previous.as_deref(),
            "quotePath={}",
            quote_path
        );
        let (left, right) = changed_lines(case.change);
        for (side, lines) in [(Side::Left, left), (Side::Right, right)] {
            for &line in lines {
                let location = CommentLocation::new(path.clone(), line).on_side(side);
                let verdict = anchor(diff, &location);
                prop_assert_eq!(
                    &verdict,
                    &Verdict::Inline {
                        path: path.clone(),
                        line,
                        start_line: None
                    },
                    "quotePath={}: {:?} {} line {}",
                    quote_path,
                    path,
                    side,
                    line
                );
            }
        }
        if left.is_empty() && right.is_empty() {
            // In the pull request, but no line to comment on.
            let verdict = anchor(diff, &CommentLocation::new(path.clone(), 1));
            prop_assert_eq!(verdict.name(), "outside_diff", "{:?}: {:?}", path, verdict);
        }
    }
    Ok(())
}

proptest! {
    // Each case runs about ten git commands; 48 cases take a few seconds.
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_name_git_can_write_anchors_on_its_own_path(cases in cases()) {
        let repository = build(&cases);
        for quote_path in [true, false] {
            let diff = diff(&repository, quote_path);
            check(&cases, &diff, quote_path)?;
        }
    }
}

/// Builds the repository for `cases` and checks git's diff with
/// `core.quotePath` on and off.
fn check_both_quotings(cases: &[Case]) {
    let repository = build(cases);
    for quote_path in [true, false] {
        let diff = diff(&repository, quote_path);
        check(cases, &diff, quote_path).unwrap();
    }
}

/// The issue's own case, spelled out: a tab in the name, quoted by git.
#[test]
fn a_tab_in_a_name_anchors_inline() {
    let cases = [Case {
        change: Change::Modify,
        name: b"tab\there.txt".to_vec(),
        other: Vec::new(),
    }];
    check_both_quotings(&cases);
}

/// Hand-picked names that make an unquoted `diff --git` line ambiguous or
/// need every escape git writes, each through every kind of change.
#[test]
fn hand_picked_hard_names_anchor_on_their_own_paths() {
    let names: [&[u8]; 12] = [
        b"a b/c b/a b",
        b" lead and trail ",
        b"x b",
        b"quote\"and\\back",
        b"bell\x07bs\x08ff\x0cvt\x0bcr\r",
        b"new\nline",
        b"\xe2\x80\xaertl-override.txt",
        b"caf\xc3\xa9 \xc3\xa4/b/x",
        b"latin1-\xe9\xff",
        b"del\x7f",
        b"C:x",
        b"\"a/x\" \"b/x\"",
    ];
    let changes = [
        Change::Modify,
        Change::Add,
        Change::Delete,
        Change::Rename,
        Change::Copy,
        Change::Mode,
        Change::Binary,
    ];
    let cases: Vec<Case> = names
        .iter()
        .enumerate()
        .map(|(index, name)| Case {
            change: changes[index % changes.len()],
            name: name.to_vec(),
            other: [b"moved/".as_slice(), name].concat(),
        })
        .collect();
    assert!(coexist(&cases));
    check_both_quotings(&cases);
    // Mode and binary changes of the ambiguous names, where the `diff --git`
    // line is all there is to read the name from.
    let cases: Vec<Case> = names
        .iter()
        .enumerate()
        .map(|(index, name)| Case {
            change: if index % 2 == 0 {
                Change::Mode
            } else {
                Change::Binary
            },
            name: name.to_vec(),
            other: Vec::new(),
        })
        .collect();
    check_both_quotings(&cases);
}

/// Two names that differ only in bytes that are not UTF-8 read the same once
/// decoded: the diff still parses, both files are listed, and a comment on the
/// shared name goes to the body instead of onto a file we cannot tell apart.
#[test]
fn names_that_collide_once_decoded_are_kept_and_not_anchored() {
    let cases = [
        Case {
            change: Change::Modify,
            name: b"latin1-\xe9.txt".to_vec(),
            other: Vec::new(),
        },
        Case {
            change: Change::Modify,
            name: b"latin1-\xff.txt".to_vec(),
            other: Vec::new(),
        },
    ];
    let repository = build(&cases);
    for quote_path in [true, false] {
        let diff = diff(&repository, quote_path);
        assert_eq!(diff.len(), 2, "quotePath={quote_path}");
        let name = "latin1-\u{fffd}.txt";
        assert!(diff.is_ambiguous(name));
        let verdict = anchor(&diff, &CommentLocation::new(name, 3));
        assert_eq!(verdict.name(), "outside_diff", "{verdict:?}");
        let json = serde_json::to_string(&verdict).unwrap();
        assert!(json.contains("cannot say which one"), "{json}");
    }
}
