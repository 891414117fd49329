//! Reading the comments file back after the agent exits (seed 000's collector).
//!
//! The file is read line by line. Each line becomes a domain value
//! ([`AgentRequest`]) or a [`LineReport`] saying which line was skipped and
//! why. We improve on the seed here: one corrupt line — torn by a crash, not
//! JSON, missing fields, wrong types — never skips the review; every other
//! line is kept. A missing file means the agent left no comments. The caller
//! removes the file with [`remove_comments_file`] once it has used it; a failed
//! removal is logged, not fatal.
//!
//! The file sits in a directory the agent (and the pull request's code) can
//! write to, so it is read as hostile input: it must be a regular file, opened
//! without following a symbolic link and without blocking on a FIFO, and the
//! collector reads at most [`MAX_FILE_BYTES`] and [`MAX_LINES`] lines. Past
//! either bound it fails with a clear error instead of stalling the job or
//! exhausting memory.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader};
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use review_core::agent_requests::{AgentRequest, LineProblem, ParsedLine, parse_line};

/// The longest line the collector reads. Our writer never writes more than
/// [`crate::comments_file::MAX_LINE_BYTES`]; anything longer was written by
/// something else and is skipped without being held in memory.
pub const MAX_READ_LINE_BYTES: usize = 4 * crate::comments_file::MAX_LINE_BYTES;

/// The largest comments file read: 64 lines of the longest request our writer
/// writes. A review pass writes kilobytes.
pub const MAX_FILE_BYTES: u64 = 64 * crate::comments_file::MAX_LINE_BYTES as u64;

/// The most non-blank lines read (requests and skipped lines together); a
/// review pass leaves tens.
pub const MAX_LINES: usize = 10_000;

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

/// The comments file could not be used; nothing from it was collected.
#[derive(Debug, thiserror::Error)]
#[error("could not collect the agent's requests from the comments file {path}: {problem}")]
pub struct CollectError {
    /// The comments file.
    pub path: PathBuf,
    /// What was wrong.
    #[source]
    pub problem: ReadError,
}

/// Why a comments file (or stream) could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The system refused or failed; the agent's comments are still in the file.
    #[error("{0}; the agent's comments are still in it")]
    Io(#[from] io::Error),
    /// A symbolic link, FIFO, device, socket or directory: our MCP server only
    /// ever creates a regular file, so something else put this there.
    #[error(
        "it is {kind}, not a regular file; review-bot's MCP server only writes a regular file, \
         so something else (the agent's commands, or the pull request's code) replaced it; \
         nothing in it was used"
    )]
    NotRegularFile {
        /// What it is instead.
        kind: &'static str,
    },
    /// Larger than [`MAX_FILE_BYTES`].
    #[error(
        "it holds more than {MAX_FILE_BYTES} bytes, far more than an agent pass writes; \
         nothing in it was used (look at what wrote it)"
    )]
    TooLarge,
    /// More than [`MAX_LINES`] non-blank lines.
    #[error(
        "it holds more than {MAX_LINES} requests, far more than an agent pass writes; \
         nothing in it was used (look at what wrote it)"
    )]
    TooManyLines,
}

/// Reads a comments file. A missing file is an empty collection. Each
/// skipped line is also logged as a warning with its line number.
///
/// The file is opened with `O_NOFOLLOW | O_NONBLOCK` and must then be a
/// regular file: a symbolic link (to `/dev/zero`, or another user's file) or a
/// FIFO (which would block forever) is refused with [`ReadError::NotRegularFile`].
pub fn collect(path: &Path) -> Result<Collection, CollectError> {
    let error = |problem| CollectError {
        path: path.to_owned(),
        problem,
    };
    let file = match open_regular_file(path) {
        Ok(file) => file,
        Err(ReadError::Io(source)) if source.kind() == io::ErrorKind::NotFound => {
            tracing::info!(path = %path.display(), "no comments file: the agent left no comments");
            return Ok(Collection::default());
        }
        Err(problem) => return Err(error(problem)),
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

/// Opens `path` for reading if it is a regular file, without following a
/// symbolic link in its last component and without blocking on a FIFO.
fn open_regular_file(path: &Path) -> Result<File, ReadError> {
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        // O_NOFOLLOW on a symbolic link fails with ELOOP.
        Err(error) if error.raw_os_error() == Some(libc::ELOOP) => {
            return Err(ReadError::NotRegularFile {
                kind: "a symbolic link",
            });
        }
        Err(error) => return Err(ReadError::Io(error)),
    };
    let file_type = file.metadata()?.file_type();
    if file_type.is_file() {
        return Ok(file);
    }
    let kind = if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_dir() {
        "a directory"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() || file_type.is_block_device() {
        "a device"
    } else {
        "not a file"
    };
    Err(ReadError::NotRegularFile { kind })
}

/// Reads requests from any line-oriented source; see [`collect`]. At most
/// [`MAX_FILE_BYTES`] bytes and [`MAX_LINES`] non-blank lines are read; more
/// is an error.
pub fn read_requests(reader: impl BufRead) -> Result<Collection, ReadError> {
    // One byte past the bound, to tell "exactly the bound" from "more".
    let mut reader = reader.take(MAX_FILE_BYTES + 1);
    let mut collection = Collection::default();
    let mut line = Vec::new();
    let mut line_number = 0;
    let mut non_blank = 0;
    while let Some(length) = read_bounded_line(&mut reader, &mut line)? {
        if reader.limit() == 0 {
            return Err(ReadError::TooLarge);
        }
        line_number += 1;
        if !line.iter().all(u8::is_ascii_whitespace) {
            non_blank += 1;
            if non_blank > MAX_LINES {
                return Err(ReadError::TooManyLines);
            }
        }
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

    /// Issue 19, item 10: the agent's commands can replace the comments file.
    /// A link to `/dev/zero` never ended, a FIFO blocked forever, a link to
    /// another file was read as ours: each is now refused at once.
    #[test]
    fn only_a_regular_file_is_read_and_links_are_not_followed() {
        let directory = tempfile::tempdir().unwrap();
        let real = directory.path().join("elsewhere.jsonl");
        std::fs::write(&real, "{\"type\":\"general\",\"message\":\"planted\"}\n").unwrap();
        for (name, target) in [
            ("to-file.jsonl", real.as_path()),
            ("to-zero.jsonl", Path::new("/dev/zero")),
        ] {
            let link = directory.path().join(name);
            std::os::unix::fs::symlink(target, &link).unwrap();
            let error = collect(&link).unwrap_err();
            assert!(
                matches!(
                    error.problem,
                    ReadError::NotRegularFile {
                        kind: "a symbolic link"
                    }
                ),
                "{error}"
            );
            assert!(
                error.to_string().contains(&link.display().to_string()),
                "{error}"
            );
        }
        let fifo = directory.path().join("fifo.jsonl");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let error = collect(&fifo).unwrap_err();
        assert!(
            matches!(error.problem, ReadError::NotRegularFile { kind: "a FIFO" }),
            "{error}"
        );
        let error = collect(Path::new("/dev/zero")).unwrap_err();
        assert!(
            matches!(
                error.problem,
                ReadError::NotRegularFile { kind: "a device" }
            ),
            "{error}"
        );
    }

    #[test]
    fn a_file_past_the_bounds_is_an_error_not_a_stall() {
        let line = "{\"type\":\"general\",\"message\":\"x\"}\n";
        let many = line.repeat(MAX_LINES);
        assert_eq!(
            read_requests(many.as_bytes()).unwrap().requests.len(),
            MAX_LINES
        );
        // Blank lines do not count.
        let padded = format!("{many}\n\n \n");
        assert_eq!(
            read_requests(padded.as_bytes()).unwrap().requests.len(),
            MAX_LINES
        );
        let too_many = format!("{many}not json\n");
        let error = read_requests(too_many.as_bytes()).unwrap_err();
        assert!(matches!(error, ReadError::TooManyLines), "{error}");
        assert!(
            error.to_string().contains("more than 10000 requests"),
            "{error}"
        );

        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("comments.jsonl");
        let file = File::create(&path).unwrap();
        file.set_len(MAX_FILE_BYTES + 1).unwrap();
        let error = collect(&path).unwrap_err();
        assert!(matches!(error.problem, ReadError::TooLarge), "{error}");
        file.set_len(MAX_FILE_BYTES).unwrap();
        // Exactly at the bound: read (NUL bytes make one over-long line).
        let collection = collect(&path).unwrap();
        assert!(collection.requests.is_empty());
        assert_eq!(collection.reports.len(), 1);
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
            GeneralComment, InlineComment, ReplyRequest, ReplyTarget,
        };
        use review_core::anchor::Side;
        use review_core::findings::Severity;

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
                    2u32..10_000,
                    proptest::option::of(1u32..2),
                    proptest::option::of(prop_oneof![Just(Side::Left), Just(Side::Right)]),
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
