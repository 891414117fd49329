//! A synthetic pull request for the anchoring benchmark and the memory
//! example: a git diff of many files with a given number of changed lines,
//! and a mix of comments on it. Deterministic (a fixed xorshift seed).

use std::fmt::Write as _;

use review_core::anchor::{CommentLocation, Side};

/// A generated diff and where its hunks are.
pub struct SyntheticPullRequest {
    /// The unified diff, as `git diff` prints it.
    pub text: String,
    /// Each file's path and its hunks' new-side ranges `(first, last)`.
    pub files: Vec<(String, Vec<(u32, u32)>)>,
}

/// A small deterministic pseudo-random generator (xorshift64).
pub struct Random(u64);

impl Random {
    pub fn seeded() -> Self {
        Self(0x9E37_79B9_7F4A_7C15)
    }

    pub fn below(&mut self, bound: u32) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        u32::try_from(self.0 % u64::from(bound)).expect("below a u32 bound")
    }
}

/// Generates `file_count` modified files with `changed_lines` added plus
/// removed lines in all, three hunks per file, three context lines around
/// each change (as `git diff` prints them).
pub fn generate(file_count: usize, changed_lines: usize) -> SyntheticPullRequest {
    let mut random = Random::seeded();
    let mut text = String::new();
    let mut files = Vec::with_capacity(file_count);
    for index in 0..file_count {
        let path = format!("src/module_{}/file_{index}.rs", index % 97);
        let mut budget =
            changed_lines / file_count + usize::from(index < changed_lines % file_count);
        writeln!(
            text,
            "diff --git a/{path} b/{path}\nindex 1234567..89abcde 100644\n--- a/{path}\n+++ b/{path}"
        )
        .unwrap();
        let (mut old_position, mut new_position) = (1_u32, 1_u32);
        let mut ranges = Vec::new();
        for hunk in 0..3 {
            let changed = if hunk == 2 {
                budget
            } else {
                budget / (3 - hunk)
            };
            budget -= changed;
            let changed = u32::try_from(changed).unwrap();
            let removed = changed / 3;
            let added = changed - removed;
            let gap = 10 + random.below(50);
            old_position += gap;
            new_position += gap;
            let (old_count, new_count) = (removed + 6, added + 6);
            writeln!(
                text,
                "@@ -{old_position},{old_count} +{new_position},{new_count} @@ fn function_{hunk}() {{"
            )
            .unwrap();
            for line in 0..3 {
                writeln!(text, "     let before_{line} = context({index}, {line});").unwrap();
            }
            for line in 0..removed {
                writeln!(text, "-    let old_{line} = compute({index}, {line});").unwrap();
            }
            for line in 0..added {
                writeln!(
                    text,
                    "+    let new_{line} = compute_better({index}, {line}, {hunk});"
                )
                .unwrap();
            }
            for line in 0..3 {
                writeln!(text, "     let after_{line} = context({index}, {line});").unwrap();
            }
            ranges.push((new_position, new_position + new_count - 1));
            old_position += old_count;
            new_position += new_count;
        }
        files.push((path, ranges));
    }
    SyntheticPullRequest { text, files }
}

/// `count` comments with a mix of verdicts: inline lines and ranges on both
/// sides, lines to move, lines outside the diff, paths not in the pull
/// request, and unsafe paths.
pub fn comments(pull_request: &SyntheticPullRequest, count: usize) -> Vec<CommentLocation> {
    let mut random = Random::seeded();
    let file_count = u32::try_from(pull_request.files.len()).unwrap();
    (0..count)
        .map(|index| {
            let (path, ranges) = &pull_request.files[random.below(file_count) as usize];
            let (first, last) = ranges[random.below(3) as usize];
            let inside = first + random.below(last - first + 1);
            match index % 10 {
                0..=2 => CommentLocation::new(path.clone(), inside),
                3 => CommentLocation::new(path.clone(), last).with_start_line(first),
                4 => CommentLocation::new(path.clone(), first + 2).on_side(Side::Left),
                5 | 6 => CommentLocation::new(path.clone(), last + 1 + random.below(3)),
                7 => CommentLocation::new(path.clone(), last + 12),
                8 => CommentLocation::new(format!("./{path}.missing"), inside),
                _ => CommentLocation::new(format!("../{path}"), inside),
            }
        })
        .collect()
}
