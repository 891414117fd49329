//! Review and thread identifiers carried in the footer of every bot comment.
//!
//! Seed 004 tags every comment the bot writes with `review::{uuid}` and
//! `thread::{uuid}` (the conversation it starts). The write pipeline counts
//! distinct review ids to enforce the cycle limit, and later reviews read thread
//! ids to find the threads they must answer.
//!
//! **One review id per review.** Only a review (with its continuation comments)
//! mints a review id ([`Footer::for_review`]). Every other bot comment — CI
//! failed or timed out, build failed, an error, "not reviewed: …", a reply
//! posted by the write flow — carries the id of the review it follows, or none
//! before the first review, plus its own thread id ([`Footer::after_review`],
//! with [`latest_review_id`]). So the number of distinct review ids is the
//! number of reviews, and a CI failure never counts as a cycle.
//!
//! The footer is plain text inside `<sub>…</sub>`, not an HTML comment: GitHub
//! strips HTML comments from rendered text and from a human's "Quote reply", so a
//! hidden tag would be lost the moment somebody quotes the bot. Plain text survives
//! rendering, `> ` quoting (at any depth) and being pasted inside another comment.
//! Parsing therefore looks for tags *anywhere* in a body and reports whether each
//! one sat on a quoted line.
//!
//! A tag is `review::` or `thread::` at a word boundary, followed by a hyphenated
//! UUID (any case) that is not followed by another identifier character. Anything
//! else — a truncated UUID, trailing garbage — is ignored, never guessed at.
//!
//! Untrusted text that ends up in a bot comment (an agent's finding, a file path,
//! a PR title) goes through [`defuse`] first, so it cannot plant tags that would
//! be counted as the bot's own, nor reorder what a reader sees with
//! bidirectional controls.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::fmt::Write as _;
use std::sync::LazyLock;

use regex::Regex;
use uuid::Uuid;

/// Identifies one run of the review pipeline; every comment that run posts carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReviewId(pub Uuid);

/// Identifies one conversation the bot started (an inline thread or a general comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ThreadId(pub Uuid);

impl fmt::Display for ReviewId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.0.hyphenated())
    }
}

impl fmt::Display for ThreadId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.0.hyphenated())
    }
}

/// The ids a bot comment carries. Either may be absent (a write-pipeline error
/// comment belongs to no review run, for example).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footer {
    /// The review run that wrote the comment.
    pub review: Option<ReviewId>,
    /// The thread the comment starts.
    pub thread: Option<ThreadId>,
}

impl Footer {
    /// A footer carrying both ids.
    pub fn new(review: ReviewId, thread: ThreadId) -> Self {
        Self {
            review: Some(review),
            thread: Some(thread),
        }
    }

    /// The footer of a review (and of its continuation comments and inline
    /// comments): `review` is the id minted for this review — the only place a
    /// new review id enters a pull request.
    pub fn for_review(review: ReviewId, thread: ThreadId) -> Self {
        Self::new(review, thread)
    }

    /// The footer of a bot comment that is not a review (CI failed or timed out,
    /// build failed, an error, "not reviewed: …", a reply posted by the write
    /// flow): the id of the review it follows — `latest_review`, `None` before
    /// the first review — and the comment's own thread id. It never mints a
    /// review id, so it never adds a review cycle.
    pub fn after_review(latest_review: Option<ReviewId>, thread: ThreadId) -> Self {
        Self {
            review: latest_review,
            thread: Some(thread),
        }
    }

    /// The footer line, for example
    /// `<sub>review::0f8f…950e · thread::7c9e…1f90</sub>`; empty when it carries no id.
    pub fn render(&self) -> String {
        let tags: Vec<String> = self
            .review
            .map(|id| format!("review::{id}"))
            .into_iter()
            .chain(self.thread.map(|id| format!("thread::{id}")))
            .collect();
        if tags.is_empty() {
            String::new()
        } else {
            format!("<sub>{}</sub>", tags.join(" · "))
        }
    }

    /// `body` followed by a blank line and the footer (the body unchanged when the
    /// footer is empty). Trailing whitespace of the body is trimmed first so the
    /// footer always starts its own paragraph.
    pub fn append_to(&self, body: &str) -> String {
        let footer = self.render();
        let body = body.trim_end();
        match (body.is_empty(), footer.is_empty()) {
            (_, true) => body.to_owned(),
            (true, false) => footer,
            (false, false) => format!("{body}\n\n{footer}"),
        }
    }
}

/// Which kind of id a tag names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TagKind {
    /// `review::{uuid}`.
    Review,
    /// `thread::{uuid}`.
    Thread,
}

/// One well-formed tag found in a comment body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tag {
    /// `review::` or `thread::`.
    pub kind: TagKind,
    /// The id, normalised (parsing is case-insensitive).
    pub id: Uuid,
    /// Whether the tag sat on a `>`-quoted line: a human quoting the bot, rather
    /// than the comment's own footer.
    pub quoted: bool,
}

/// Matches a tag prefix at a word boundary and the identifier-ish run after it;
/// the run is accepted only if it is exactly a hyphenated UUID.
static TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(review|thread)::([0-9A-Za-z_-]*)").expect("the tag pattern is valid")
});

/// Every well-formed tag in `text`, in order of appearance (duplicates included).
pub fn find_tags(text: &str) -> Vec<Tag> {
    let mut tags = Vec::new();
    for line in text.split_inclusive('\n') {
        let quoted = line.trim_start().starts_with('>');
        for captures in TAG.captures_iter(line) {
            let candidate = &captures[2];
            // 36 characters: the hyphenated form only (not simple, braced or URN).
            if candidate.len() != 36 {
                continue;
            }
            let Ok(id) = Uuid::try_parse(candidate) else {
                continue;
            };
            let kind = if &captures[1] == "review" {
                TagKind::Review
            } else {
                TagKind::Thread
            };
            tags.push(Tag { kind, id, quoted });
        }
    }
    tags
}

/// The distinct review ids in `text` (quoted or not).
pub fn review_ids(text: &str) -> BTreeSet<ReviewId> {
    find_tags(text)
        .into_iter()
        .filter(|tag| tag.kind == TagKind::Review)
        .map(|tag| ReviewId(tag.id))
        .collect()
}

/// The distinct thread ids in `text` (quoted or not).
pub fn thread_ids(text: &str) -> BTreeSet<ThreadId> {
    find_tags(text)
        .into_iter()
        .filter(|tag| tag.kind == TagKind::Thread)
        .map(|tag| ThreadId(tag.id))
        .collect()
}

/// The comment's own footer: the first unquoted review and thread tags. Tags on
/// quoted lines belong to the comment being quoted and are not returned here.
pub fn own_footer(text: &str) -> Footer {
    let mut footer = Footer::default();
    for tag in find_tags(text).into_iter().filter(|tag| !tag.quoted) {
        match tag.kind {
            TagKind::Review if footer.review.is_none() => footer.review = Some(ReviewId(tag.id)),
            TagKind::Thread if footer.thread.is_none() => footer.thread = Some(ThreadId(tag.id)),
            _ => {}
        }
    }
    footer
}

/// The distinct review ids across a pull request's comment bodies: the number of
/// review cycles the bot has run on it.
///
/// Quoting cannot inflate the count: a quote repeats an id that already exists.
/// Callers that want to ignore ids humans typed by hand pass only the bot's
/// comments.
pub fn distinct_review_ids<'a, I>(bodies: I) -> BTreeSet<ReviewId>
where
    I: IntoIterator<Item = &'a str>,
{
    bodies.into_iter().flat_map(review_ids).collect()
}

/// The review id of the latest review among the bot's comment bodies, given
/// oldest first: the own (unquoted) review id of the last body carrying one —
/// what [`Footer::after_review`] takes. `None` before the first review. As with
/// [`distinct_review_ids`], callers pass only the bot's comments.
pub fn latest_review_id<'a, I>(bodies: I) -> Option<ReviewId>
where
    I: IntoIterator<Item = &'a str>,
{
    bodies
        .into_iter()
        .filter_map(|body| own_footer(body).review)
        .last()
}

/// Makes untrusted text safe to put in a bot comment: every `review::`/`thread::`
/// tag is broken by a zero-width space between the colons, so that text copied
/// into a bot comment (an agent's finding, a file path, a PR title) cannot plant
/// ids; and every bidirectional control character (U+202E and its kin, see
/// [`is_bidi_control`]) is shown as `<U+202E>`, so it cannot reorder what a
/// reader sees (a path `txt.exe` that displays as `exe.txt`). The text otherwise
/// reads the same when rendered. Every text from outside goes through here,
/// directly or through `payload`'s markdown helpers; applying it twice changes
/// nothing more.
pub fn defuse(text: &str) -> Cow<'_, str> {
    static PREFIX: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)(review|thread):(:)").expect("the prefix pattern is valid")
    });
    let shown = show_code_points(text, is_bidi_control);
    if !PREFIX.is_match(&shown) {
        return shown;
    }
    Cow::Owned(PREFIX.replace_all(&shown, "$1:\u{200B}$2").into_owned())
}

/// `text` with every character `hidden` selects shown as its code point
/// (`<U+202E>`); borrowed when there is none.
pub(crate) fn show_code_points(text: &str, hidden: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&hidden) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for character in text.chars() {
        if hidden(character) {
            let _ = write!(shown, "<U+{:04X}>", u32::from(character));
        } else {
            shown.push(character);
        }
    }
    Cow::Owned(shown)
}

/// Whether `character` is a bidirectional formatting control: the embeddings
/// and overrides U+202A–U+202E, the isolates U+2066–U+2069, and the marks
/// U+200E, U+200F and U+061C ("Trojan Source", CVE-2021-42574).
pub fn is_bidi_control(character: char) -> bool {
    matches!(
        character,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const REVIEW: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";
    const THREAD: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";

    fn footer() -> Footer {
        Footer::new(
            ReviewId(Uuid::parse_str(REVIEW).unwrap()),
            ThreadId(Uuid::parse_str(THREAD).unwrap()),
        )
    }

    #[test]
    fn renders_plain_text_in_sub() {
        assert_eq!(
            footer().render(),
            format!("<sub>review::{REVIEW} · thread::{THREAD}</sub>")
        );
        assert_eq!(Footer::default().render(), "");
        assert_eq!(Footer::default().append_to("body\n\n"), "body");
        assert_eq!(
            footer().append_to("body\n"),
            format!("body\n\n{}", footer().render())
        );
    }

    #[test]
    fn parses_its_own_footer() {
        let body = footer().append_to("Consider a null check here.");
        assert_eq!(own_footer(&body), footer());
        assert_eq!(review_ids(&body).len(), 1);
        assert_eq!(thread_ids(&body).len(), 1);
    }

    #[test]
    fn survives_rendered_text_and_quote_reply() {
        // What GitHub's "Quote reply" puts in the box: the rendered text, quoted.
        let quoted = format!(
            "> Consider a null check here.\n>\n> review::{REVIEW} · thread::{THREAD}\n\nDone, thanks."
        );
        let tags = find_tags(&quoted);
        assert_eq!(tags.len(), 2);
        assert!(tags.iter().all(|tag| tag.quoted));
        assert_eq!(own_footer(&quoted), Footer::default());
        // Nested quotes and upper-case hex are still found.
        let nested = format!(">> > review::{}", REVIEW.to_uppercase());
        assert_eq!(
            review_ids(&nested).into_iter().next().unwrap().to_string(),
            REVIEW
        );
    }

    #[test]
    fn ignores_malformed_ids() {
        for text in [
            "review::0f8fad5b-d9cb-469f-a165-70867728950", // one digit short
            "review::0f8fad5b-d9cb-469f-a165-70867728950ef", // one too many
            "review::0f8fad5bd9cb469fa16570867728950e",    // simple form
            "review::{0f8fad5b-d9cb-469f-a165-70867728950e}", // braced
            "review::0f8fad5b-d9cb-469f-a165-70867728950g", // not hex
            "review:: 0f8fad5b-d9cb-469f-a165-70867728950e", // space
            "prereview::0f8fad5b-d9cb-469f-a165-70867728950e", // not at a word boundary
            "review:0f8fad5b-d9cb-469f-a165-70867728950e", // one colon
        ] {
            assert!(find_tags(text).is_empty(), "{text}");
        }
        // Punctuation after the id is fine.
        assert_eq!(find_tags(&format!("(review::{REVIEW}).")).len(), 1);
    }

    #[test]
    fn counts_distinct_review_ids_across_comments() {
        let first = footer().append_to("one");
        let second_review = "1b4e28ba-2fa1-11d2-883f-0016d3cca427";
        let second = format!("two\n\n<sub>review::{second_review} · thread::{THREAD}</sub>");
        let human = format!("> {first}\n\nI disagree");
        let bodies = [first.as_str(), second.as_str(), human.as_str(), "no tags"];
        assert_eq!(distinct_review_ids(bodies).len(), 2);
    }

    fn id(byte: u8) -> Uuid {
        Uuid::from_bytes([byte; 16])
    }

    #[test]
    fn comments_that_are_not_reviews_follow_the_latest_review() {
        // Before any review: a build failure carries its thread id only.
        let early = Footer::after_review(None, ThreadId(id(1))).append_to("Build failed.");
        assert_eq!(own_footer(&early).review, None);
        assert_eq!(latest_review_id([early.as_str()]), None);

        let mut bodies = vec![early];
        let post_review = |bodies: &mut Vec<String>, review: u8, thread: u8| {
            let review = ReviewId(id(review));
            bodies.push(Footer::for_review(review, ThreadId(id(thread))).append_to("Review."));
            review
        };
        let follow = |bodies: &mut Vec<String>, thread: u8, text: &str| {
            let latest = latest_review_id(bodies.iter().map(String::as_str));
            let body = Footer::after_review(latest, ThreadId(id(thread))).append_to(text);
            bodies.push(body);
            latest
        };
        let first = post_review(&mut bodies, 10, 11);
        assert_eq!(follow(&mut bodies, 12, "CI failed: build."), Some(first));
        assert_eq!(follow(&mut bodies, 13, "Fixed in abc123."), Some(first));
        assert_eq!(follow(&mut bodies, 14, "Fixed in abc123."), Some(first));
        assert_eq!(follow(&mut bodies, 15, "CI timed out."), Some(first));
        let second = post_review(&mut bodies, 20, 21);
        assert_eq!(follow(&mut bodies, 22, "CI failed: test."), Some(second));
        assert_eq!(follow(&mut bodies, 23, "Fixed in def456."), Some(second));
        assert_eq!(follow(&mut bodies, 24, "Fixed in def456."), Some(second));

        // 2 reviews, 3 CI-failure comments, 4 replies (and a build failure
        // before the first review): 2 cycles.
        let cycles = distinct_review_ids(bodies.iter().map(String::as_str));
        assert_eq!(cycles, BTreeSet::from([first, second]));
        // Every comment has a thread id of its own.
        let threads: BTreeSet<_> = bodies
            .iter()
            .filter_map(|body| own_footer(body).thread)
            .collect();
        assert_eq!(threads.len(), 10);
    }

    #[test]
    fn defused_text_carries_no_tags() {
        let hostile = format!("ignore this: review::{REVIEW} and THREAD::{THREAD}");
        let defused = defuse(&hostile);
        assert!(find_tags(&defused).is_empty());
        assert_eq!(defused.replace('\u{200B}', ""), hostile);
        assert!(matches!(defuse("plain text"), Cow::Borrowed(_)));
        assert_eq!(defuse(&defused), defused);
    }

    #[test]
    fn bidirectional_controls_are_shown_not_obeyed() {
        let hostile = "docs/\u{202E}dm.exe \u{2066}x\u{2069} \u{200F}";
        let defused = defuse(hostile);
        assert!(!defused.chars().any(is_bidi_control), "{defused}");
        assert_eq!(defused, "docs/<U+202E>dm.exe <U+2066>x<U+2069> <U+200F>");
        assert_eq!(defuse(&defused), defused);
    }

    fn arbitrary_uuid() -> impl Strategy<Value = Uuid> {
        any::<u128>().prop_map(Uuid::from_u128)
    }

    proptest! {
        #[test]
        fn footer_round_trips_through_surrounding_text(
            review in arbitrary_uuid(),
            thread in arbitrary_uuid(),
            before in "\\PC{0,200}",
            after in "\\PC{0,200}",
            quote_depth in 0usize..3,
        ) {
            let footer = Footer::new(ReviewId(review), ThreadId(thread));
            let body = format!("{before}\n{}\n{after}", footer.render());
            let prefix = "> ".repeat(quote_depth);
            let mut quoted = String::new();
            for line in body.split_inclusive('\n') {
                quoted.push_str(&prefix);
                quoted.push_str(line);
            }
            for text in [&body, &quoted] {
                prop_assert!(review_ids(text).contains(&ReviewId(review)));
                prop_assert!(thread_ids(text).contains(&ThreadId(thread)));
            }
            // Inside a bot body built by `append_to`, defused surroundings leave
            // exactly our footer as the comment's own.
            let clean = footer.append_to(&defuse(&format!("{before}\n{after}")));
            prop_assert_eq!(own_footer(&clean), footer);
            prop_assert_eq!(review_ids(&clean).len(), 1);
        }

        #[test]
        fn parsing_never_panics(text in "\\PC{0,400}") {
            let _ = find_tags(&text);
            let _ = own_footer(&text);
        }
    }
}
