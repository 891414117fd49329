//! Fingerprints of posted inline comments, so a later review cycle can skip a
//! finding it already posted, unchanged, on the same line.
//!
//! A fingerprint is the SHA-256 of the comment's path, line and normalised body.
//! Normalising drops what differs between two posts of the same finding: the
//! `review::…` and `thread::…` footer tags (a new id each cycle), HTML comments
//! (hidden markers), and whitespace differences (runs collapse to one space,
//! ends trimmed). Wording, path or line changes make a different fingerprint:
//! that finding is new.

use std::collections::HashSet;
use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use sha2::{Digest as _, Sha256};

use crate::dialect::{Dialect as _, Sql, dispatch, sqlite_now};
use crate::{Store, StoreError, to_database_integer};

/// An inline comment, as posted (or about to be).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InlineComment<'a> {
    /// The file, relative to the repository root.
    pub path: &'a str,
    /// The line it is anchored on.
    pub line: u32,
    /// The comment's markdown, with or without footers.
    pub body: &'a str,
}

/// The identity of an inline comment across review cycles.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The fingerprint of `comment`.
    pub fn of(comment: &InlineComment<'_>) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(comment.path.as_bytes());
        hasher.update([0]);
        hasher.update(comment.line.to_string().as_bytes());
        hasher.update([0]);
        hasher.update(normalise_body(comment.body).as_bytes());
        Self(hasher.finalize().into())
    }

    /// The raw digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "Fingerprint({self})")
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&hex::encode(self.0))
    }
}

/// Footer tags (`review::ID`, `thread::ID`) and HTML comments.
static VOLATILE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)\b(?:review|thread)::[A-Za-z0-9_.-]+|<!--.*?-->")
        .expect("the pattern is valid")
});

/// The body without footer tags or HTML comments, whitespace collapsed.
pub(crate) fn normalise_body(body: &str) -> String {
    let without_tags = VOLATILE.replace_all(body, " ");
    without_tags
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

const RECORD: Sql = Sql {
    sqlite: concat!(
        "INSERT INTO posted_comments ",
        "(repository_id, pull_request, fingerprint, path, line, review_id, posted_at) ",
        "VALUES ($1, $2, $3, $4, $5, $6, ",
        sqlite_now!(),
        ") ON CONFLICT (repository_id, pull_request, fingerprint) DO NOTHING"
    ),
    postgres: "INSERT INTO posted_comments \
               (repository_id, pull_request, fingerprint, path, line, review_id, posted_at) \
               VALUES ($1, $2, $3, $4, $5, $6, now()) \
               ON CONFLICT (repository_id, pull_request, fingerprint) DO NOTHING",
};
const POSTED: Sql = Sql::same(
    "SELECT fingerprint FROM posted_comments WHERE repository_id = $1 AND pull_request = $2",
);

impl Store {
    /// Records that `comments` were posted on `pull_request` (by the review
    /// with footer id `review_id`, if any). Recording one again changes nothing.
    pub async fn record_posted_comments(
        &self,
        repository: &str,
        pull_request: u64,
        review_id: Option<&str>,
        comments: &[InlineComment<'_>],
    ) -> Result<(), StoreError> {
        let pull_request = to_database_integer(pull_request, "pull request number")?;
        let repository_id = self.repository_id(repository).await?;
        let operation = "recording posted comments";
        dispatch!(&self.backend, pool => {
            let mut transaction = pool
                .begin_with(pool.begin_statement())
                .await
                .map_err(self.query_error(operation))?;
            for comment in comments {
                sqlx::query(pool.pick(&RECORD))
                    .bind(repository_id)
                    .bind(pull_request)
                    .bind(Fingerprint::of(comment).0.to_vec())
                    .bind(comment.path)
                    .bind(i64::from(comment.line))
                    .bind(review_id)
                    .execute(&mut *transaction)
                    .await
                    .map_err(self.query_error(operation))?;
            }
            transaction.commit().await.map_err(self.query_error(operation))?;
        });
        Ok(())
    }

    /// Which of `candidates` are already posted on `pull_request`.
    pub async fn posted_fingerprints(
        &self,
        repository: &str,
        pull_request: u64,
        candidates: &[Fingerprint],
    ) -> Result<HashSet<Fingerprint>, StoreError> {
        let pull_request = to_database_integer(pull_request, "pull request number")?;
        let Some(repository_id) = self.existing_repository_id(repository).await? else {
            return Ok(HashSet::new());
        };
        // A pull request has at most a few hundred posted comments: read them all
        // and intersect, rather than build an `IN` list per call.
        let posted: Vec<Vec<u8>> = dispatch!(&self.backend, pool => {
            sqlx::query_scalar(pool.pick(&POSTED))
                .bind(repository_id)
                .bind(pull_request)
                .fetch_all(pool)
                .await
                .map_err(self.query_error("reading posted comments"))?
        });
        let posted: HashSet<&[u8]> = posted.iter().map(Vec::as_slice).collect();
        Ok(candidates
            .iter()
            .filter(|candidate| posted.contains(candidate.0.as_slice()))
            .copied()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fingerprint(path: &str, line: u32, body: &str) -> Fingerprint {
        Fingerprint::of(&InlineComment { path, line, body })
    }

    #[test]
    fn a_repost_with_new_footers_and_whitespace_matches() {
        let first = "**Bug**: `len` can be zero here.\n\n<sub>review::3f2a-11 · thread::a1b2</sub>";
        let again =
            "**Bug**:  `len` can be zero here.\r\n<sub>review::9c9c-22 · thread::ffee</sub>\n";
        assert_eq!(
            fingerprint("src/lib.rs", 10, first),
            fingerprint("src/lib.rs", 10, again)
        );
        assert_eq!(
            fingerprint("src/lib.rs", 10, "Check this. <!-- finding:42 -->"),
            fingerprint("src/lib.rs", 10, "Check this.")
        );
    }

    #[test]
    fn a_different_path_line_or_wording_does_not_match() {
        let base = fingerprint("src/lib.rs", 10, "`len` can be zero here.");
        assert_ne!(
            base,
            fingerprint("src/main.rs", 10, "`len` can be zero here.")
        );
        assert_ne!(
            base,
            fingerprint("src/lib.rs", 11, "`len` can be zero here.")
        );
        assert_ne!(
            base,
            fingerprint("src/lib.rs", 10, "`len` can be negative here.")
        );
        // The separator keeps path and line apart: "a1" + 0 is not "a" + 10.
        assert_ne!(fingerprint("a1", 0, "x"), fingerprint("a", 10, "x"));
    }

    #[test]
    fn normalising_keeps_words_that_merely_contain_the_tag_names() {
        assert_eq!(
            normalise_body("see review::abc and prereview:: notes"),
            "see and prereview:: notes"
        );
    }
}
