//! Reading the comments file back after the agent exits (seed 000's collector).
//!
//! The file is read line by line. Each line becomes a domain value
//! ([`AgentRequest`]) or a [`LineReport`] saying which line was skipped and
//! why. We improve on the seed here: one corrupt line — torn by a crash, not
//! JSON, missing fields, wrong types — never skips the review; every other
//! line is kept. A missing file means the agent left no comments. The caller
//! removes the file with [`remove_comments_file`] once it has used it; a failed
//! removal is logged, not fatal.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use review_core::agent_requests::{AgentRequest, LineProblem, ParsedLine, parse_line};

/// The longest line the collector reads. Our writer never writes more than
/// [`crate::comments_file::MAX_LINE_BYTES`]; anything longer was written by
/// something else and is skipped without being held in memory.
pub const MAX_READ_LINE_BYTES: usize = 4 * crate::comments_file::MAX_LINE_BYTES;

/// How many bytes of a skipped line a report quotes.
const PREVIEW_CHARS: usize = 80;

/// Everything read from one comments file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Collection {
    /// The valid requests, in file order.
    pub requests: Vec<CollectedRequest>,
    /// The lines (or parts of lines) that were skipped, in file order.
    pub reports: Vec<LineReport>,
}

/// A valid request and where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectedRequest {
    /// 1-based line number in the comments file.
    pub line_number: usize,
    /// The request.
    pub request: AgentRequest,
}

/// A skipped line: which one, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineReport {
    /// 1-based line number in the comments file.
    pub line_number: usize,
    /// What was wrong.
    pub problem: SkippedLine,
    /// The start of the line, for the operator (lossy UTF-8, at most 80 characters).
    pub preview: String,
}

/// Why a line (or part of one) was skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkippedLine {
    /// The line held nothing usable.
    #[error("{0}")]
    Corrupt(LineProblem),
    /// A torn write preceded a complete request on the same line; the request
    /// was kept, the torn bytes skipped.
    #[error(
        "{torn_bytes} bytes of a torn write were skipped; the complete request after them was kept"
    )]
    TornPrefix {
        /// How many bytes were skipped.
        torn_bytes: usize,
    },
    /// The line was longer than [`MAX_READ_LINE_BYTES`].
    #[error(
        "the line is {bytes} bytes long, more than the {MAX_READ_LINE_BYTES} bytes a request can be"
    )]
    TooLong {
        /// Its length.
        bytes: usize,
    },
}

/// The comments file could not be read (it exists but is unreadable).
#[derive(Debug, thiserror::Error)]
#[error("could not read the comments file {path}: {source}; the agent's comments are still in it")]
pub struct CollectError {
    /// The comments file.
    pub path: PathBuf,
    /// What the system said.
    #[source]
    pub source: io::Error,
}

/// Reads a comments file. A missing file is an empty collection. Each
/// skipped line is also logged as a warning with its line number.
pub fn collect(path: &Path) -> Result<Collection, CollectError> {
    let error = |source| CollectError {
        path: path.to_owned(),
        source,
    };
    let file = match File::open(path) {
        Ok(file) => file,
        Err(source) if source.kind() == io::ErrorKind::NotFound => {
            tracing::info!(path = %path.display(), "no comments file: the agent left no comments");
            return Ok(Collection::default());
        }
        Err(source) => return Err(error(source)),
    };
    let collection = read_requests(BufReader::new(file)).map_err(error)?;
    for report in &collection.reports {
        tracing::warn!(
            path = %path.display(),
            line = report.line_number,
            preview = %report.preview,
            "skipped a line of the comments file: {}",
            report.problem
        );
    }
    Ok(collection)
}

/// Reads requests from any line-oriented source; see [`collect`].
pub fn read_requests(mut reader: impl BufRead) -> io::Result<Collection> {
    let mut collection = Collection::default();
    let mut line = Vec::new();
    let mut line_number = 0;
    while let Some(length) = read_bounded_line(&mut reader, &mut line)? {
        line_number += 1;
        if length > MAX_READ_LINE_BYTES {
            collection.reports.push(LineReport {
                line_number,
                problem: SkippedLine::TooLong { bytes: length },
                preview: preview(&line),
            });
            continue;
        }
        match parse_line(&line) {
            ParsedLine::Blank => {}
            ParsedLine::Request(request) => collection.requests.push(CollectedRequest {
                line_number,
                request,
            }),
            ParsedLine::TornThenRequest {
                torn_bytes,
                request,
            } => {
                collection.reports.push(LineReport {
                    line_number,
                    problem: SkippedLine::TornPrefix { torn_bytes },
                    preview: preview(&line[..torn_bytes]),
                });
                collection.requests.push(CollectedRequest {
                    line_number,
                    request,
                });
            }
            ParsedLine::Corrupt(problem) => collection.reports.push(LineReport {
                line_number,
                problem: SkippedLine::Corrupt(problem),
                preview: preview(&line),
            }),
        }
    }
    Ok(collection)
}

/// Reads up to the next `\n` (not kept) into `line`, keeping at most
/// [`MAX_READ_LINE_BYTES`] + 1 bytes. Returns the line's full length, or
/// `None` at the end of input.
fn read_bounded_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<Option<usize>> {
    line.clear();
    let mut length = 0;
    let mut read_anything = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if available.is_empty() {
            return Ok(read_anything.then_some(length));
        }
        read_anything = true;
        let (chunk, consumed, finished) = match available.iter().position(|&byte| byte == b'\n') {
            Some(newline) => (&available[..newline], newline + 1, true),
            None => (available, available.len(), false),
        };
        let room = (MAX_READ_LINE_BYTES + 1).saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        length += chunk.len();
        reader.consume(consumed);
        if finished {
            return Ok(Some(length));
        }
    }
}

fn preview(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .take(PREVIEW_CHARS)
        .collect()
}

/// Removes a comments file (or any temporary file of a run) after use. A
/// missing file is fine; any other failure is logged as a warning and
/// otherwise ignored, so cleanup never fails a job.
pub fn remove_comments_file(path: &Path) {
    match std::fs::remove_file(path) {
        Ok(()) => tracing::debug!(path = %path.display(), "removed the comments file"),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => tracing::warn!(
            path = %path.display(),
            "could not remove the comments file ({error}); remove it by hand, it is no longer needed"
        ),
    }
}

#[cfg(test)]
mod tests {
    use review_core::agent_requests::{GeneralComment, InlineComment};

    use super::*;

    fn general(message: &str) -> AgentRequest {
        AgentRequest::General(GeneralComment {
            message: message.into(),
        })
    }

    #[test]
    fn bad_lines_are_reported_with_their_numbers_and_the_rest_kept() {
        let text = concat!(
            "{\"type\":\"general\",\"message\":\"one\"}\n",
            "not json at all\n",
            "{\"type\":\"inline\",\"message\":\"x\",\"path\":\"a.rs\"}\n",
            "\n",
            "{\"type\":\"inline\",\"message\":\"two\",\"path\":\"a.rs\",\"line\":3}\n",
            "{\"type\":\"general\",\"message\":\"to",
        );
        let collection = read_requests(text.as_bytes()).unwrap();
        let lines: Vec<_> = collection.requests.iter().map(|r| r.line_number).collect();
        assert_eq!(lines, [1, 5]);
        assert_eq!(collection.requests[0].request, general("one"));
        assert!(matches!(
            &collection.requests[1].request,
            AgentRequest::Inline(InlineComment { line: 3, .. })
        ));
        let reported: Vec<_> = collection
            .reports
            .iter()
            .map(|report| (report.line_number, report.problem.to_string()))
            .collect();
        assert_eq!(reported.len(), 3, "{reported:?}");
        assert_eq!(reported[0].0, 2);
        assert_eq!(reported[1].0, 3);
        assert!(
            reported[1].1.contains("missing field `line`"),
            "{reported:?}"
        );
        assert_eq!(reported[2].0, 6);
        assert_eq!(collection.reports[0].preview, "not json at all");
    }

    #[test]
    fn a_torn_line_keeps_the_request_glued_to_it() {
        let torn = "{\"type\":\"general\",\"mes";
        let text = format!("{torn}{{\"type\":\"general\",\"message\":\"kept\"}}\n");
        let collection = read_requests(text.as_bytes()).unwrap();
        assert_eq!(collection.requests.len(), 1);
        assert_eq!(collection.requests[0].request, general("kept"));
        assert_eq!(
            collection.reports[0].problem,
            SkippedLine::TornPrefix {
                torn_bytes: torn.len()
            }
        );
    }

    #[test]
    fn overlong_lines_are_skipped_without_losing_the_next() {
        let mut text = "x".repeat(MAX_READ_LINE_BYTES + 10);
        text.push('\n');
        text.push_str("{\"type\":\"general\",\"message\":\"after\"}\n");
        let collection = read_requests(text.as_bytes()).unwrap();
        assert_eq!(collection.requests.len(), 1);
        assert_eq!(collection.requests[0].line_number, 2);
        assert_eq!(
            collection.reports[0].problem,
            SkippedLine::TooLong {
                bytes: MAX_READ_LINE_BYTES + 10
            }
        );
    }

    #[test]
    fn a_missing_file_is_no_comments_and_removal_is_forgiving() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("comments.jsonl");
        assert_eq!(collect(&path).unwrap(), Collection::default());
        std::fs::write(&path, "{\"type\":\"general\",\"message\":\"hi\"}\n").unwrap();
        assert_eq!(collect(&path).unwrap().requests.len(), 1);
        remove_comments_file(&path);
        assert!(!path.exists());
        remove_comments_file(&path);
        // A directory cannot be removed as a file: logged, not fatal.
        remove_comments_file(directory.path());
        assert!(directory.path().exists());
    }

    #[test]
    fn an_unreadable_file_is_an_error_naming_it() {
        let directory = tempfile::tempdir().unwrap();
        let error = collect(directory.path()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains(&directory.path().display().to_string())
        );
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::*;
        use review_core::agent_requests::{
            CommentSide, GeneralComment, InlineComment, ReplyRequest, ReplyTarget, Severity,
        };

        fn message() -> impl Strategy<Value = String> {
            // Anything with a visible character: quotes, newlines, braces, unicode.
            "[ -~\\n\\t{}\"\\\\é世🎉]{0,40}[a-z]"
        }

        fn request() -> impl Strategy<Value = AgentRequest> {
            prop_oneof![
                message().prop_map(|message| AgentRequest::General(GeneralComment { message })),
                (
                    message(),
                    "[a-z]{1,8}(/[a-z]{1,8}){0,2}\\.rs",
                    2u64..10_000,
                    proptest::option::of(1u64..2),
                    proptest::option::of(prop_oneof![
                        Just(CommentSide::Left),
                        Just(CommentSide::Right)
                    ]),
                    proptest::option::of(0u8..=100),
                    proptest::option::of(proptest::sample::select(Severity::ALL.to_vec())),
                )
                    .prop_map(
                        |(message, path, line, start_line, side, confidence, severity)| {
                            AgentRequest::Inline(InlineComment {
                                message,
                                path,
                                line,
                                start_line,
                                side,
                                title: None,
                                severity,
                                confidence,
                                suggestion: None,
                            })
                        }
                    ),
                (message(), any::<u64>(), any::<bool>()).prop_map(
                    |(message, comment_id, issue)| {
                        AgentRequest::Reply(ReplyRequest {
                            comment_id,
                            target: if issue {
                                ReplyTarget::IssueComment
                            } else {
                                ReplyTarget::ReviewComment
                            },
                            message,
                        })
                    }
                ),
            ]
        }

        /// Garbage as a crash or a stray writer leaves it: arbitrary bytes,
        /// a prefix of a valid line (a torn write), with or without a newline.
        fn garbage() -> impl Strategy<Value = Vec<u8>> {
            prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..60),
                (request(), any::<prop::sample::Index>()).prop_map(|(request, cut)| {
                    let line = request.to_json_line().into_bytes();
                    line[..cut.index(line.len())].to_vec()
                }),
                "[{}\\[\\]\":,a-z0-9 ]{0,30}".prop_map(String::into_bytes),
            ]
        }

        #[derive(Debug, Clone)]
        enum Piece {
            Valid(AgentRequest),
            Garbage(Vec<u8>),
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            #[test]
            fn garbage_interleaved_with_valid_lines_never_loses_a_valid_line(
                pieces in proptest::collection::vec(
                    prop_oneof![
                        request().prop_map(Piece::Valid),
                        garbage().prop_map(Piece::Garbage),
                    ],
                    0..30,
                )
            ) {
                let mut file = Vec::new();
                let mut expected = Vec::new();
                for piece in &pieces {
                    match piece {
                        Piece::Valid(request) => {
                            file.extend_from_slice(request.to_json_line().as_bytes());
                            expected.push(request.clone());
                        }
                        Piece::Garbage(bytes) => file.extend_from_slice(bytes),
                    }
                }
                let collection = read_requests(file.as_slice()).unwrap();
                let found: Vec<AgentRequest> =
                    collection.requests.into_iter().map(|collected| collected.request).collect();
                // Every valid line is found, in order; garbage may by chance
                // contain extra valid requests, never fewer.
                let mut remaining = found.iter();
                for request in &expected {
                    prop_assert!(
                        remaining.any(|candidate| candidate == request),
                        "lost {:?}; found {:?}", request, found
                    );
                }
            }
        }
    }
}
