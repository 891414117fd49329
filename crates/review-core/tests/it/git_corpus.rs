//! A corpus produced by real git: a repository with one base and one head
//! commit covering every kind of change, diffed with `git diff`; the parsed
//! model must match what git itself reports (`--name-status`, `--numstat`) and
//! the files' real contents line by line.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

use review_core::anchor::{CommentLocation, Side, Verdict, anchor};
use review_core::diff::{ChangeKind, ChangedFile, FileDiff, PullRequestDiff};

/// A throwaway repository driven through the git CLI, isolated from the
/// machine's and the user's git configuration.
struct Repository {
    directory: tempfile::TempDir,
}

impl Repository {
    fn new() -> Self {
        let repository = Self {
            directory: tempfile::tempdir().expect("a temporary directory"),
        };
        repository.git(&["init", "--quiet", "--initial-branch=main"]);
        repository.git(&["config", "user.name", "Corpus"]);
        repository.git(&["config", "user.email", "corpus@example.com"]);
        repository.git(&["config", "core.autocrlf", "false"]);
        // The default, set explicitly: non-ASCII bytes in paths are C-quoted.
        repository.git(&["config", "core.quotepath", "true"]);
        repository
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.directory.path().join(relative)
    }

    fn write(&self, relative: &str, contents: impl AsRef<[u8]>) {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }

    fn git_bytes(&self, arguments: &[&str]) -> Vec<u8> {
        let output = Command::new("git")
            .args(arguments)
            .current_dir(self.directory.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.directory.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
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

    fn git(&self, arguments: &[&str]) -> String {
        String::from_utf8(self.git_bytes(arguments)).expect("git printed UTF-8")
    }

    fn commit(&self, message: &str) {
        self.git(&["add", "--all"]);
        self.git(&["commit", "--quiet", "--message", message]);
    }
}

/// The options every diff of the corpus uses: renames, and copies from
/// unmodified files too.
const DIFF_OPTIONS: [&str; 3] = ["-M", "-C", "--find-copies-harder"];

fn numbered(count: usize, label: &str) -> String {
    let mut text = String::new();
    for number in 1..=count {
        writeln!(text, "{label} line {number}").unwrap();
    }
    text
}

/// Builds the corpus: `main~1` is the base, `main` the head.
fn corpus() -> Repository {
    let repository = Repository::new();
    let long = numbered(40, "keep");
    repository.write("src/keep.txt", &long);
    repository.write("rename_me.txt", numbered(12, "plain rename"));
    repository.write("rename_edit.txt", numbered(20, "edited rename"));
    repository.write("copy_src.c", numbered(30, "copied"));
    repository.write("delete_me.txt", numbered(5, "doomed"));
    repository.write("image.bin", [0_u8, 1, 2, 3, 0, 255, 254, 0, 9]);
    repository.write("no_eol.txt", "first\nsecond");
    repository.write("crlf.txt", "one\r\ntwo\r\nthree\r\n");
    repository.write("dïr/ä ü.txt", "unicode\npath\n");
    repository.write("tab\tand \"quote\".txt", "odd\nname\n");
    repository.write("script.sh", "#!/bin/sh\necho hi\n");
    repository.write("link", "a regular file that becomes a symlink\n");
    repository.commit("base");

    // Two hunks in src/keep.txt.
    let edited = long
        .replace("keep line 3\n", "keep line 3, changed\n")
        .replace("keep line 30\n", "")
        .replace("keep line 33\n", "keep line 33\ninserted after 33\n");
    repository.write("src/keep.txt", edited);
    std::fs::rename(
        repository.path("rename_me.txt"),
        repository.path("renamed_plain.txt"),
    )
    .unwrap();
    std::fs::remove_file(repository.path("rename_edit.txt")).unwrap();
    repository.write(
        "moved/renamed_edit.txt",
        numbered(20, "edited rename").replace("edited rename line 10\n", "edited: ten\n"),
    );
    repository.write(
        "copy_dst.c",
        numbered(30, "copied").replace("copied line 2\n", "copied, then changed\n"),
    );
    std::fs::remove_file(repository.path("delete_me.txt")).unwrap();
    repository.write("image.bin", [0_u8, 1, 2, 3, 0, 255, 254, 0, 10, 11]);
    repository.write("new_binary.bin", [0_u8, 159, 146, 150, 0]);
    repository.write("no_eol.txt", "first\nsecond\nthird");
    repository.write("crlf.txt", "one\r\nTWO\r\nthree\r\n");
    repository.write("dïr/ä ü.txt", "unicode\npath, edited\n");
    repository.write("tab\tand \"quote\".txt", "odd\nname, edited\n");
    repository.write("empty_new.txt", "");
    std::fs::remove_file(repository.path("link")).unwrap();
    std::os::unix::fs::symlink("src/keep.txt", repository.path("link")).unwrap();
    repository.commit("head");
    repository.git(&["update-index", "--chmod=+x", "script.sh"]);
    repository.git(&["commit", "--quiet", "--amend", "--no-edit"]);
    repository
}

fn diff_text(repository: &Repository, extra: &[&str]) -> String {
    let mut arguments = vec!["diff"];
    arguments.extend(extra);
    arguments.extend(DIFF_OPTIONS);
    arguments.extend(["main~1", "main"]);
    repository.git(&arguments)
}

/// `git diff --name-status -z`: path → (status letter, similarity, previous path).
fn name_status(repository: &Repository) -> BTreeMap<String, (char, Option<u8>, Option<String>)> {
    let mut arguments = vec!["diff", "--name-status", "-z"];
    arguments.extend(DIFF_OPTIONS);
    arguments.extend(["main~1", "main"]);
    let output = repository.git(&arguments);
    let mut fields = output.split('\0').filter(|field| !field.is_empty());
    let mut statuses = BTreeMap::new();
    while let Some(status) = fields.next() {
        let letter = status.chars().next().unwrap();
        let similarity = status[1..].parse().ok();
        let first = fields.next().unwrap().to_owned();
        if matches!(letter, 'R' | 'C') {
            let second = fields.next().unwrap().to_owned();
            statuses.insert(second, (letter, similarity, Some(first)));
        } else {
            statuses.insert(first, (letter, None, None));
        }
    }
    statuses
}

/// `git diff --numstat -z`: path → (added, removed), `None` for binary files.
fn numstat(repository: &Repository) -> BTreeMap<String, Option<(usize, usize)>> {
    let mut arguments = vec!["diff", "--numstat", "-z"];
    arguments.extend(DIFF_OPTIONS);
    arguments.extend(["main~1", "main"]);
    let output = repository.git(&arguments);
    let mut fields = output.split('\0');
    let mut counts = BTreeMap::new();
    while let Some(record) = fields.next().filter(|record| !record.is_empty()) {
        let mut parts = record.splitn(3, '\t');
        let (added, removed, path) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        // A rename or copy leaves the path empty and names both paths next.
        let path = if path.is_empty() {
            fields.next().unwrap();
            fields.next().unwrap().to_owned()
        } else {
            path.to_owned()
        };
        let count = (added != "-").then(|| (added.parse().unwrap(), removed.parse().unwrap()));
        counts.insert(path, count);
    }
    counts
}

/// The lines of a file as git stores it at `revision` (`\r` kept).
fn lines_at(repository: &Repository, revision: &str, path: &str) -> Vec<String> {
    let bytes = repository.git_bytes(&["show", &format!("{revision}:{path}")]);
    String::from_utf8(bytes)
        .unwrap()
        .split('\n')
        .map(str::to_owned)
        .collect()
}

fn model_summary(diff: &PullRequestDiff) -> BTreeMap<String, (char, Option<u8>, Option<String>)> {
    diff.files()
        .iter()
        .map(|file| {
            (
                file.path.clone(),
                (
                    file.change.name_status_letter(),
                    file.similarity,
                    file.previous_path.clone(),
                ),
            )
        })
        .collect()
}

#[test]
fn the_model_matches_what_git_reports() {
    let repository = corpus();
    let text = diff_text(&repository, &[]);
    assert!(
        text.contains("\"b/d\\303\\257r/\\303\\244 \\303\\274.txt\""),
        "quotepath is on:\n{text}"
    );
    assert!(text.contains("\\ No newline at end of file"));
    assert!(text.contains("Binary files"));
    let diff = PullRequestDiff::parse(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));

    assert_eq!(model_summary(&diff), name_status(&repository), "\n{text}");

    let numstat = numstat(&repository);
    for file in diff.files() {
        let expected = numstat[&file.path];
        let actual = (!file.binary).then(|| (file.added_lines(), file.removed_lines()));
        assert_eq!(actual, expected, "{}", file.path);
    }

    let file =
        |path: &str| -> &FileDiff { diff.file(path).unwrap_or_else(|| panic!("{path} missing")) };
    assert_eq!(file("src/keep.txt").hunks.len(), 2);
    assert_eq!(file("renamed_plain.txt").change, ChangeKind::Renamed);
    assert!(file("renamed_plain.txt").hunks.is_empty());
    assert_eq!(
        file("moved/renamed_edit.txt").previous_path.as_deref(),
        Some("rename_edit.txt")
    );
    assert_eq!(file("copy_dst.c").change, ChangeKind::Copied);
    assert_eq!(file("delete_me.txt").change, ChangeKind::Deleted);
    assert!(file("image.bin").binary && file("new_binary.bin").binary);
    assert_eq!(file("new_binary.bin").change, ChangeKind::Added);
    assert_eq!(file("empty_new.txt").change, ChangeKind::Added);
    assert!(file("empty_new.txt").hunks.is_empty());
    assert_eq!(file("script.sh").change, ChangeKind::ModeOnly);
    assert!(file("script.sh").new_mode.unwrap().is_executable());
    assert_eq!(file("link").change, ChangeKind::TypeChanged);
    assert!(file("link").new_mode.unwrap().is_symlink());
    assert!(
        file("crlf.txt").hunks[0]
            .lines
            .iter()
            .all(|line| line.text.ends_with('\r'))
    );
    let no_eol = file("no_eol.txt");
    let marked: Vec<_> = no_eol.hunks[0]
        .lines
        .iter()
        .filter(|line| line.no_newline_at_end)
        .map(|line| (line.kind, line.text.as_str()))
        .collect();
    assert_eq!(
        marked,
        [
            (review_core::diff::LineKind::Removed, "second"),
            (review_core::diff::LineKind::Added, "third")
        ]
    );
    assert!(diff.file("dïr/ä ü.txt").is_some());
    assert!(diff.file("tab\tand \"quote\".txt").is_some());
}

#[test]
fn line_numbers_match_the_files_git_stores() {
    let repository = corpus();
    let diff = PullRequestDiff::parse(&diff_text(&repository, &[])).unwrap();
    let mut checked = 0;
    for file in diff.files().iter().filter(|file| !file.binary) {
        // A type change's new side is a symlink: its "line" is the target.
        let old = file
            .old_path()
            .map(|path| lines_at(&repository, "main~1", path));
        let new = file
            .new_path()
            .map(|path| lines_at(&repository, "main", path));
        for line in file.hunks.iter().flat_map(|hunk| &hunk.lines) {
            if let (Some(number), Some(old)) = (line.old_line, &old) {
                assert_eq!(
                    old[number as usize - 1],
                    line.text,
                    "{} old line {number}",
                    file.path
                );
                checked += 1;
            }
            if let (Some(number), Some(new)) = (line.new_line, &new) {
                assert_eq!(
                    new[number as usize - 1],
                    line.text,
                    "{} new line {number}",
                    file.path
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 60, "only {checked} lines checked");
}

#[test]
fn quoting_and_prefix_settings_do_not_change_the_model() {
    let repository = corpus();
    let reference = model_summary(&PullRequestDiff::parse(&diff_text(&repository, &[])).unwrap());
    for settings in [
        &["-c", "core.quotepath=off"][..],
        &["-c", "diff.mnemonicPrefix=true"][..],
        &["-c", "diff.noprefix=true"][..],
    ] {
        let mut arguments = settings.to_vec();
        arguments.push("diff");
        arguments.extend(DIFF_OPTIONS);
        arguments.extend(["main~1", "main"]);
        let text = repository.git(&arguments);
        let diff =
            PullRequestDiff::parse(&text).unwrap_or_else(|error| panic!("{settings:?}: {error}"));
        assert_eq!(model_summary(&diff), reference, "{settings:?}\n{text}");
    }
}

#[test]
fn binary_patches_parse_like_binary_markers() {
    let repository = corpus();
    let text = diff_text(&repository, &["--binary"]);
    assert!(text.contains("GIT binary patch"));
    let diff = PullRequestDiff::parse(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    assert_eq!(model_summary(&diff), name_status(&repository));
    assert!(diff.file("image.bin").unwrap().binary);
}

#[test]
fn github_style_per_file_patches_build_the_same_model() {
    let repository = corpus();
    let text = diff_text(&repository, &[]);
    let diff = PullRequestDiff::parse(&text).unwrap();
    // A GitHub `patch` is a file's hunks from the first `@@`, without the final
    // newline. git prints the type change as two sections; leave it out.
    let patches = text
        .split("diff --git ")
        .skip(1)
        .filter(|section| !section.starts_with("a/link "))
        .map(|section| {
            section
                .find("\n@@")
                .map(|at| section[at + 1..].trim_end_matches('\n'))
        });
    let entries: Vec<ChangedFile<'_>> = diff
        .files()
        .iter()
        .filter(|file| file.change != ChangeKind::TypeChanged)
        .zip(patches)
        .map(|(file, patch)| ChangedFile {
            path: &file.path,
            previous_path: file.previous_path.as_deref(),
            change: file.change,
            patch,
        })
        .collect();
    assert_eq!(entries.len(), diff.len() - 1);
    let from_entries = PullRequestDiff::from_changed_files(entries).unwrap();
    for file in from_entries.files() {
        let original = diff.file(&file.path).unwrap();
        assert_eq!(file.hunks, original.hunks, "{}", file.path);
        assert_eq!(file.content_omitted, original.hunks.is_empty());
    }
}

#[test]
fn anchoring_on_the_corpus_follows_the_rules() {
    let repository = corpus();
    let diff = PullRequestDiff::parse(&diff_text(&repository, &[])).unwrap();
    let at = |path: &str, line: u32, side: Side| {
        anchor(&diff, &CommentLocation::new(path, line).on_side(side))
    };
    assert_eq!(at("src/keep.txt", 3, Side::Right).name(), "inline");
    assert_eq!(at("src/keep.txt", 20, Side::Right).name(), "outside_diff");
    assert_eq!(at("delete_me.txt", 2, Side::Left).name(), "inline");
    assert_eq!(at("delete_me.txt", 2, Side::Right).name(), "outside_diff");
    assert_eq!(at("image.bin", 1, Side::Right).name(), "outside_diff");
    assert_eq!(at("rename_edit.txt", 10, Side::Left).name(), "not_in_pr");
    assert_eq!(
        at("moved/renamed_edit.txt", 10, Side::Left).name(),
        "inline"
    );
    assert_eq!(at("./dïr/ä ü.txt", 2, Side::Right).name(), "inline");
    assert!(matches!(
        at("no_eol.txt", 6, Side::Right),
        Verdict::Moved { line: 3, .. }
    ));
}
