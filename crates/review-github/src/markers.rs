//! Finding our own writes on GitHub by the ids in their footers.
//!
//! Every review carries `review::{id}` and every bot comment `thread::{id}`
//! (seed 004). Before re-posting a write whose answer was lost, we look for
//! that id. The footer's full text format belongs to `review_core::footer`;
//! this module only needs the id tag inside it, matched as a whole token so
//! `review::ab` does not match `review::abc`.

/// The tag a review's footer carries.
pub(crate) fn review_tag(review_id: &str) -> String {
    format!("review::{review_id}")
}

/// The tag a comment's footer carries.
pub(crate) fn thread_tag(thread_id: &str) -> String {
    format!("thread::{thread_id}")
}

/// True when `body` contains `tag` as a whole token.
pub(crate) fn contains_tag(body: &str, tag: &str) -> bool {
    let is_id_character = |character: char| character.is_ascii_alphanumeric() || character == '-';
    body.match_indices(tag).any(|(start, _)| {
        let end = start + tag.len();
        let after_is_boundary = body[end..]
            .chars()
            .next()
            .is_none_or(|c| !is_id_character(c));
        let before_is_boundary = body[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !is_id_character(c) && c != ':');
        after_is_boundary && before_is_boundary
    })
}

/// Bodies equal up to line endings and surrounding whitespace (GitHub stores
/// `\r\n` for some clients and trims).
pub(crate) fn same_body(left: &str, right: &str) -> bool {
    left.replace("\r\n", "\n").trim() == right.replace("\r\n", "\n").trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_match_as_whole_tokens() {
        let body = "Summary\n\n<sub>review::0b1c-22 · thread::9f</sub>";
        assert!(contains_tag(body, &review_tag("0b1c-22")));
        assert!(contains_tag(body, &thread_tag("9f")));
        assert!(!contains_tag(body, &review_tag("0b1c")));
        assert!(!contains_tag(body, &thread_tag("9")));
        assert!(!contains_tag("xreview::0b1c-22", &review_tag("0b1c-22")));
    }

    #[test]
    fn bodies_compare_across_line_endings() {
        assert!(same_body("a\r\nb\n", "a\nb"));
        assert!(!same_body("a b", "a  b"));
    }
}
