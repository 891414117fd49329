//! What each review pass produces, and how two passes merge into one review.
//!
//! Seed 004 runs an architecture pass and a detailed pass over the same pull
//! request, then: combines their comments, deduplicating by file + line
//! proximity; merges their thread responses, pass 1 winning conflicts; and
//! checks that every unresolved thread got a response.
//!
//! **Duplicates.** Two inline comments are the same finding when they are on
//! the same file and side, their lines are at most [`PROXIMITY_LINES`] apart,
//! and their texts are similar: the Jaccard index of their normalised word
//! sets (lower-cased runs of letters and digits, words of one character
//! dropped) is at least [`SIMILARITY_THRESHOLD`]. The first one wins —
//! architecture pass before detailed pass, then pass order — and every dropped
//! duplicate is reported with the comment it duplicated, so nothing vanishes
//! silently. The threshold is deliberately high: a missed duplicate costs a
//! reader a second glance, a false one loses a finding. General comments are
//! dropped only when their normalised word sequences are identical.
//!
//! **Thread responses.** At most one response per thread: the architecture
//! pass's if it answered, else the first one. Overridden responses are
//! reported. A thread in `unresolved` that no pass answered is listed in
//! [`MergedReview::unanswered`].

use std::collections::BTreeSet;

use crate::anchor::CommentLocation;
use crate::footer::ThreadId;

/// How many lines apart two comments on the same file may be and still be duplicates.
pub const PROXIMITY_LINES: u32 = 3;

/// The minimum Jaccard index of two comments' word sets for them to be duplicates.
pub const SIMILARITY_THRESHOLD: f64 = 0.6;

/// A review pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pass {
    /// Pass 1: design and structure. Wins thread-response conflicts.
    Architecture,
    /// Pass 2: line-level code quality.
    Detailed,
}

/// An inline comment a pass asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineComment {
    /// Where it goes (anchored later, against the diff).
    pub location: CommentLocation,
    /// Its markdown.
    pub body: String,
}

/// How a thread is identified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ThreadKey {
    /// A thread the bot started, by its `thread::` footer id.
    Footer(ThreadId),
    /// A thread a human started, by its top-level GitHub comment id.
    Comment(u64),
}

/// A pass's answer to an existing thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadResponse {
    /// The thread answered.
    pub thread: ThreadKey,
    /// The reply's markdown.
    pub body: String,
    /// Whether the pass considers the thread resolved ("REVIEW BOT RESOLVED").
    pub resolved: bool,
}

/// Everything one pass produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassOutput {
    /// Which pass.
    pub pass: Pass,
    /// Inline comments, in the order the pass wrote them.
    pub inline_comments: Vec<InlineComment>,
    /// General (non-inline) comments.
    pub general_comments: Vec<String>,
    /// Answers to existing threads.
    pub thread_responses: Vec<ThreadResponse>,
}

/// A comment kept from a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept<T> {
    /// The pass it came from.
    pub pass: Pass,
    /// The comment or response.
    pub item: T,
}

/// Something dropped in favour of something kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped<T> {
    /// The pass it came from.
    pub pass: Pass,
    /// The dropped comment or response.
    pub item: T,
    /// Index, in the merged list, of what it duplicated or lost to.
    pub kept_index: usize,
}

/// The merged passes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MergedReview {
    /// Inline comments after deduplication, in pass order.
    pub inline_comments: Vec<Kept<InlineComment>>,
    /// General comments after dropping exact repeats.
    pub general_comments: Vec<Kept<String>>,
    /// One response per thread.
    pub thread_responses: Vec<Kept<ThreadResponse>>,
    /// Inline comments dropped as duplicates.
    pub duplicate_comments: Vec<Dropped<InlineComment>>,
    /// General comments dropped as repeats.
    pub duplicate_general_comments: Vec<Dropped<String>>,
    /// Thread responses that lost to another pass's response.
    pub overridden_responses: Vec<Dropped<ThreadResponse>>,
    /// Unresolved threads that no pass answered, in the order given.
    pub unanswered: Vec<ThreadKey>,
}

impl MergedReview {
    /// Whether anything is left for the author to do: an inline comment, a
    /// thread a pass left unresolved, or a thread no pass answered. General
    /// comments alone (a summary) do not count.
    pub fn has_unresolved(&self) -> bool {
        !self.inline_comments.is_empty()
            || !self.unanswered.is_empty()
            || self
                .thread_responses
                .iter()
                .any(|response| !response.item.resolved)
    }
}

/// Merges pass outputs. `unresolved` lists the threads that were open before
/// the review (from the pull request's snapshot).
pub fn merge_passes(passes: &[PassOutput], unresolved: &[ThreadKey]) -> MergedReview {
    let mut ordered: Vec<&PassOutput> = passes.iter().collect();
    ordered.sort_by_key(|output| output.pass); // stable: pass order within a kind
    let mut merged = MergedReview::default();
    let mut kept_words: Vec<BTreeSet<String>> = Vec::new();
    for output in &ordered {
        for comment in &output.inline_comments {
            let words = word_set(&comment.body);
            let duplicate_of =
                merged
                    .inline_comments
                    .iter()
                    .zip(&kept_words)
                    .position(|(kept, kept_words)| {
                        is_near(&kept.item.location, &comment.location)
                            && jaccard(kept_words, &words) >= SIMILARITY_THRESHOLD
                    });
            if let Some(kept_index) = duplicate_of {
                merged.duplicate_comments.push(Dropped {
                    pass: output.pass,
                    item: comment.clone(),
                    kept_index,
                });
            } else {
                merged.inline_comments.push(Kept {
                    pass: output.pass,
                    item: comment.clone(),
                });
                kept_words.push(words);
            }
        }
        for general in &output.general_comments {
            let words = word_sequence(general);
            let repeat_of = merged
                .general_comments
                .iter()
                .position(|kept| word_sequence(&kept.item) == words);
            match repeat_of {
                Some(kept_index) => merged.duplicate_general_comments.push(Dropped {
                    pass: output.pass,
                    item: general.clone(),
                    kept_index,
                }),
                None => merged.general_comments.push(Kept {
                    pass: output.pass,
                    item: general.clone(),
                }),
            }
        }
        for response in &output.thread_responses {
            let existing = merged
                .thread_responses
                .iter()
                .position(|kept| kept.item.thread == response.thread);
            match existing {
                Some(kept_index) => merged.overridden_responses.push(Dropped {
                    pass: output.pass,
                    item: response.clone(),
                    kept_index,
                }),
                None => merged.thread_responses.push(Kept {
                    pass: output.pass,
                    item: response.clone(),
                }),
            }
        }
    }
    let answered: BTreeSet<ThreadKey> = merged
        .thread_responses
        .iter()
        .map(|kept| kept.item.thread)
        .collect();
    let mut seen = BTreeSet::new();
    merged.unanswered = unresolved
        .iter()
        .copied()
        .filter(|thread| !answered.contains(thread) && seen.insert(*thread))
        .collect();
    merged
}

fn is_near(first: &CommentLocation, second: &CommentLocation) -> bool {
    first.side == second.side
        && normalise_path(&first.path) == normalise_path(&second.path)
        && first.line.abs_diff(second.line) <= PROXIMITY_LINES
}

fn normalise_path(path: &str) -> &str {
    let mut path = path.trim();
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    path
}

/// Lower-cased words of letters and digits, in order (one-character words dropped).
fn word_sequence(text: &str) -> Vec<String> {
    text.split(|character: char| !character.is_alphanumeric())
        .filter(|word| word.chars().count() > 1)
        .map(str::to_lowercase)
        .collect()
}

fn word_set(text: &str) -> BTreeSet<String> {
    word_sequence(text).into_iter().collect()
}

/// The Jaccard index of two word sets (two empty sets are identical).
#[allow(clippy::cast_precision_loss)] // word counts are far below 2^52
fn jaccard(first: &BTreeSet<String>, second: &BTreeSet<String>) -> f64 {
    let union = first.union(second).count();
    if union == 0 {
        return 1.0;
    }
    first.intersection(second).count() as f64 / union as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use uuid::Uuid;

    fn inline(path: &str, line: u32, body: &str) -> InlineComment {
        InlineComment {
            location: CommentLocation::new(path, line),
            body: body.to_owned(),
        }
    }

    fn output(pass: Pass, inline_comments: Vec<InlineComment>) -> PassOutput {
        PassOutput {
            pass,
            inline_comments,
            general_comments: Vec::new(),
            thread_responses: Vec::new(),
        }
    }

    fn thread(n: u128) -> ThreadKey {
        ThreadKey::Footer(ThreadId(Uuid::from_u128(n)))
    }

    fn response(key: ThreadKey, body: &str, resolved: bool) -> ThreadResponse {
        ThreadResponse {
            thread: key,
            body: body.to_owned(),
            resolved,
        }
    }

    #[test]
    fn near_similar_comments_are_one_finding_and_the_first_pass_wins() {
        let detailed = output(
            Pass::Detailed,
            vec![
                inline(
                    "./src/db.go",
                    44,
                    "The rows are never closed, this leaks connections!",
                ),
                inline("src/db.go", 44, "Rename `x` to something meaningful."),
                inline(
                    "src/db.go",
                    90,
                    "The rows are never closed; this leaks connections.",
                ),
            ],
        );
        let architecture = output(
            Pass::Architecture,
            vec![inline(
                "src/db.go",
                42,
                "The rows are never closed: this leaks connections.",
            )],
        );
        // Given detailed first: precedence comes from the pass, not the slice order.
        let merged = merge_passes(&[detailed, architecture], &[]);
        let kept: Vec<(Pass, u32)> = merged
            .inline_comments
            .iter()
            .map(|kept| (kept.pass, kept.item.location.line))
            .collect();
        assert_eq!(
            kept,
            [
                (Pass::Architecture, 42),
                (Pass::Detailed, 44),
                (Pass::Detailed, 90)
            ]
        );
        assert_eq!(merged.duplicate_comments.len(), 1);
        assert_eq!(merged.duplicate_comments[0].kept_index, 0);
        assert_eq!(merged.duplicate_comments[0].item.location.line, 44);
    }

    #[test]
    fn other_side_or_other_file_is_not_a_duplicate() {
        let mut left = inline("a.rs", 10, "same words here");
        left.location.side = crate::anchor::Side::Left;
        let merged = merge_passes(
            &[output(
                Pass::Detailed,
                vec![
                    inline("a.rs", 10, "same words here"),
                    left,
                    inline("b.rs", 10, "same words here"),
                ],
            )],
            &[],
        );
        assert_eq!(merged.inline_comments.len(), 3);
    }

    #[test]
    fn pass_one_wins_thread_conflicts_and_unanswered_threads_are_listed() {
        let mut architecture = output(Pass::Architecture, vec![]);
        architecture.thread_responses =
            vec![response(thread(1), "Still open: see the layering.", false)];
        let mut detailed = output(Pass::Detailed, vec![]);
        detailed.thread_responses = vec![
            response(thread(1), "Looks fixed.", true),
            response(ThreadKey::Comment(77), "Done in abc123.", true),
        ];
        detailed.general_comments = vec!["Nice work overall.".to_owned()];
        architecture.general_comments = vec!["nice work, overall".to_owned()];
        let merged = merge_passes(
            &[detailed, architecture],
            &[thread(1), ThreadKey::Comment(77), thread(2), thread(2)],
        );
        assert_eq!(merged.thread_responses.len(), 2);
        assert_eq!(merged.thread_responses[0].pass, Pass::Architecture);
        assert!(!merged.thread_responses[0].item.resolved);
        assert_eq!(merged.overridden_responses.len(), 1);
        assert_eq!(merged.overridden_responses[0].item.body, "Looks fixed.");
        assert_eq!(merged.unanswered, [thread(2)]);
        assert_eq!(merged.general_comments.len(), 1);
        assert_eq!(merged.duplicate_general_comments.len(), 1);
        assert!(merged.has_unresolved());
    }

    #[test]
    fn nothing_unresolved_means_lgtm() {
        let mut detailed = output(Pass::Detailed, vec![]);
        detailed.thread_responses = vec![response(thread(1), "Fixed.", true)];
        detailed.general_comments = vec!["LGTM".to_owned()];
        let merged = merge_passes(&[detailed], &[thread(1)]);
        assert!(!merged.has_unresolved());
    }

    proptest! {
        #[test]
        fn no_comment_is_lost(
            comments in proptest::collection::vec(
                ("[ab]\\.rs", 1u32..30, "[a-d ]{0,12}", any::<bool>()),
                0..20,
            )
        ) {
            let (first, second): (Vec<_>, Vec<_>) = comments
                .into_iter()
                .map(|(path, line, body, first)| (inline(&path, line, &body), first))
                .partition(|(_, first)| *first);
            let passes = [
                output(Pass::Architecture, first.into_iter().map(|(c, _)| c).collect()),
                output(Pass::Detailed, second.into_iter().map(|(c, _)| c).collect()),
            ];
            let total: usize = passes.iter().map(|p| p.inline_comments.len()).sum();
            let merged = merge_passes(&passes, &[]);
            prop_assert_eq!(merged.inline_comments.len() + merged.duplicate_comments.len(), total);
            for dropped in &merged.duplicate_comments {
                let kept = &merged.inline_comments[dropped.kept_index].item;
                prop_assert!(is_near(&kept.location, &dropped.item.location));
            }
        }
    }
}
