//! Scoring: which findings hit which golden findings, and the totals.
//!
//! A finding matches a golden finding when it is on the same file and side
//! and its line range overlaps the golden range widened by `window` lines on
//! each side. Each golden finding matches at most one finding and the other
//! way round, and as many pairs as possible are made: a **maximum bipartite
//! matching** (a greedy start, then Kuhn's augmenting paths, iterative), not a greedy pass alone — a
//! greedy pass can give a finding to the first golden finding in reach and
//! leave a second one, which only that finding reaches, missed. Among equally
//! large matchings the closer finding is tried first, so pairs read naturally.
//!
//! A golden finding without a line is reached only through the judge
//! (`eval --judge`): [`match_findings_judged`] takes the pairs the judge said
//! match as that golden finding's candidates, and the same maximum matching
//! keeps every pair one-to-one.
//!
//! Precision = matched / findings, recall = matched / golden (0 when the
//! denominator is 0), F1 their harmonic mean (0 when both are 0).

use review_core::anchor::Side;
use serde::{Deserialize, Serialize};

use crate::case::GoldenFinding;

/// The default `--window`: how many lines off a finding may be and still hit.
pub const DEFAULT_WINDOW: u32 = 3;

/// A finding the review would post with a file and a line (inline, or under
/// "Outside the diff"); general comments are not findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Path from the repository root.
    pub file: String,
    /// The line (the last line of a range).
    pub line: u32,
    /// The first line of a range ending at `line`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    /// The side `line` is numbered on.
    pub side: Side,
    /// The finding's title.
    #[serde(default)]
    pub title: String,
    /// The finding's confidence, 0–100.
    #[serde(default)]
    pub confidence: u8,
}

impl Finding {
    /// The finding's first line.
    pub fn first_line(&self) -> u32 {
        self.start_line.unwrap_or(self.line).min(self.line)
    }
}

/// How many lines lie between a finding and a golden range (0: they
/// overlap), or `None` when they are on another file or side.
pub fn distance(golden: &GoldenFinding, finding: &Finding) -> Option<u32> {
    if golden.file != finding.file || golden.side() != finding.side {
        return None;
    }
    let (golden_first, golden_last) = (golden.line?, golden.last_line()?);
    let (first, last) = (finding.first_line(), finding.line);
    Some(if last < golden_first {
        golden_first - last
    } else {
        first.saturating_sub(golden_last)
    })
}

/// Whether `finding` hits `golden` with `window` lines of slack.
pub fn hits(golden: &GoldenFinding, finding: &Finding, window: u32) -> bool {
    distance(golden, finding).is_some_and(|lines| lines <= window)
}

/// The pairs of one case, by index into its golden findings and findings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Matching {
    /// (golden index, finding index), in golden order.
    pub matched: Vec<(usize, usize)>,
    /// Golden findings no finding hit.
    pub missed: Vec<usize>,
    /// Findings that hit no golden finding.
    pub extra: Vec<usize>,
}

/// The maximum one-to-one matching of `findings` to `golden` (see the module
/// documentation).
pub fn match_findings(golden: &[GoldenFinding], findings: &[Finding], window: u32) -> Matching {
    match_findings_judged(golden, findings, window, &[])
}

/// [`match_findings`] with the judge's edges: `(golden index, finding
/// index)` pairs the judge said match, the only candidates of a golden
/// finding without a line (edges to a golden finding with a line are
/// ignored: the window decides those).
pub fn match_findings_judged(
    golden: &[GoldenFinding],
    findings: &[Finding],
    window: u32,
    judged: &[(usize, usize)],
) -> Matching {
    // Each golden finding's candidates, closest first.
    let candidates: Vec<Vec<usize>> = golden
        .iter()
        .enumerate()
        .map(|(golden_index, golden)| {
            if golden.line.is_none() {
                let mut edges: Vec<usize> = judged
                    .iter()
                    .filter(|(judged_golden, finding)| {
                        *judged_golden == golden_index && *finding < findings.len()
                    })
                    .map(|(_, finding)| *finding)
                    .collect();
                edges.sort_unstable();
                edges.dedup();
                return edges;
            }
            let mut reachable: Vec<(u32, usize)> = findings
                .iter()
                .enumerate()
                .filter_map(|(index, finding)| {
                    distance(golden, finding)
                        .filter(|lines| *lines <= window)
                        .map(|lines| (lines, index))
                })
                .collect();
            reachable.sort_unstable();
            reachable.into_iter().map(|(_, index)| index).collect()
        })
        .collect();
    let mut finding_of: Vec<Option<usize>> = vec![None; golden.len()];
    let mut golden_of: Vec<Option<usize>> = vec![None; findings.len()];
    // A greedy start (closest free candidate) makes most pairs cheaply; the
    // augmenting paths then make the matching maximum.
    for (root, reachable) in candidates.iter().enumerate() {
        if let Some(&finding) = reachable
            .iter()
            .find(|finding| golden_of[**finding].is_none())
        {
            finding_of[root] = Some(finding);
            golden_of[finding] = Some(root);
        }
    }
    let mut visited = vec![false; findings.len()];
    for root in 0..golden.len() {
        if candidates[root].is_empty() || finding_of[root].is_some() {
            continue;
        }
        visited.fill(false);
        augment(
            root,
            &candidates,
            &mut finding_of,
            &mut golden_of,
            &mut visited,
        );
    }
    Matching {
        matched: finding_of
            .iter()
            .enumerate()
            .filter_map(|(golden, finding)| finding.map(|finding| (golden, finding)))
            .collect(),
        missed: finding_of
            .iter()
            .enumerate()
            .filter(|(_, finding)| finding.is_none())
            .map(|(golden, _)| golden)
            .collect(),
        extra: golden_of
            .iter()
            .enumerate()
            .filter(|(_, golden)| golden.is_none())
            .map(|(finding, _)| finding)
            .collect(),
    }
}

/// Looks for an augmenting path from the unmatched golden finding `root`
/// (a depth-first search with an explicit stack, so a huge case cannot
/// overflow the thread's stack) and flips it; true when one was found.
fn augment(
    root: usize,
    candidates: &[Vec<usize>],
    finding_of: &mut [Option<usize>],
    golden_of: &mut [Option<usize>],
    visited: &mut [bool],
) -> bool {
    // (golden finding, how many of its candidates were tried)
    let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
    while let Some(top) = stack.len().checked_sub(1) {
        let (golden, tried) = stack[top];
        let Some(&finding) = candidates[golden].get(tried) else {
            stack.pop();
            continue;
        };
        stack[top].1 += 1;
        if visited[finding] {
            continue;
        }
        visited[finding] = true;
        if let Some(other) = golden_of[finding] {
            stack.push((other, 0));
        } else {
            // Each golden finding on the path takes the finding it tried last.
            for &(golden, tried) in &stack {
                let finding = candidates[golden][tried - 1];
                finding_of[golden] = Some(finding);
                golden_of[finding] = Some(golden);
            }
            return true;
        }
    }
    false
}

/// Counts and the scores made of them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts {
    /// Golden findings.
    pub golden: usize,
    /// Findings.
    pub findings: usize,
    /// Pairs.
    pub matched: usize,
}

impl Counts {
    /// matched / findings, 0 without findings.
    pub fn precision(&self) -> f64 {
        ratio(self.matched, self.findings)
    }

    /// matched / golden, 0 without golden findings.
    pub fn recall(&self) -> f64 {
        ratio(self.matched, self.golden)
    }

    /// The harmonic mean of precision and recall, 0 when both are 0.
    pub fn f1(&self) -> f64 {
        let (precision, recall) = (self.precision(), self.recall());
        if precision + recall == 0.0 {
            0.0
        } else {
            2.0 * precision * recall / (precision + recall)
        }
    }
}

fn ratio(numerator: usize, denominator: usize) -> f64 {
    if denominator == 0 {
        0.0
    } else {
        // Counts of findings stay far below 2^52.
        #[allow(clippy::cast_precision_loss)]
        let value = numerator as f64 / denominator as f64;
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn golden(file: &str, line: u32, end_line: Option<u32>) -> GoldenFinding {
        GoldenFinding {
            file: file.to_owned(),
            line: Some(line),
            end_line,
            side: None,
            description: String::new(),
        }
    }

    fn finding(file: &str, line: u32) -> Finding {
        Finding {
            file: file.to_owned(),
            line,
            start_line: None,
            side: Side::Right,
            title: String::new(),
            confidence: 80,
        }
    }

    #[test]
    fn the_window_widens_the_golden_range_on_both_sides() {
        let range = golden("a.rs", 10, Some(12));
        // On the range, and 3 lines either side: hits.
        for line in [7, 10, 11, 12, 15] {
            assert!(hits(&range, &finding("a.rs", line), 3), "line {line}");
        }
        // 4 lines off: misses.
        for line in [6, 16] {
            assert!(!hits(&range, &finding("a.rs", line), 3), "line {line}");
        }
        // Window 0: only the range itself.
        assert!(!hits(&range, &finding("a.rs", 9), 0));
        assert!(hits(&range, &finding("a.rs", 12), 0));
        // A finding's range that reaches into the window hits.
        let spanning = Finding {
            start_line: Some(1),
            ..finding("a.rs", 7)
        };
        assert!(hits(&range, &spanning, 3));
        // Another file, or the other side: never, however close.
        assert!(!hits(&range, &finding("b.rs", 10), 3));
        let left = Finding {
            side: Side::Left,
            ..finding("a.rs", 10)
        };
        assert!(!hits(&range, &left, 3));
        // Near line 1 the window does not wrap.
        assert!(hits(&golden("a.rs", 2, None), &finding("a.rs", 1), 3));
    }

    /// A case worked by hand: golden findings at a.rs:10, a.rs:20–22, b.rs:5
    /// (LEFT); findings at a.rs:10 (on the line), a.rs:25 (3 off: inside the
    /// window), a.rs:30 (8 off: outside), c.rs:10 (another file), b.rs:5 on
    /// the RIGHT (the other side). Matched 2 of 5 findings and 2 of 3 golden:
    /// precision 2/5, recall 2/3, F1 = 2·(0.4·0.667)/(0.4+0.667) = 0.5.
    #[test]
    fn a_case_scored_by_hand() {
        let goldens = [
            golden("a.rs", 10, None),
            golden("a.rs", 20, Some(22)),
            GoldenFinding {
                side: Some(Side::Left),
                ..golden("b.rs", 5, None)
            },
        ];
        let findings = [
            finding("a.rs", 10),
            finding("a.rs", 25),
            finding("a.rs", 30),
            finding("c.rs", 10),
            finding("b.rs", 5),
        ];
        let matching = match_findings(&goldens, &findings, DEFAULT_WINDOW);
        assert_eq!(matching.matched, [(0, 0), (1, 1)]);
        assert_eq!(matching.missed, [2]);
        assert_eq!(matching.extra, [2, 3, 4]);
        let counts = Counts {
            golden: 3,
            findings: 5,
            matched: 2,
        };
        assert!((counts.precision() - 0.4).abs() < 1e-12);
        assert!((counts.recall() - 2.0 / 3.0).abs() < 1e-12);
        assert!((counts.f1() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn one_finding_matches_one_golden_finding() {
        // Two golden findings on neighbouring lines, one finding between
        // them: one pair, one missed.
        let goldens = [golden("a.rs", 10, None), golden("a.rs", 12, None)];
        let matching = match_findings(&goldens, &[finding("a.rs", 11)], 3);
        assert_eq!(matching.matched, [(0, 0)]);
        assert_eq!(matching.missed, [1]);
        // Two findings on one golden line: one pair, one extra.
        let matching = match_findings(
            &[golden("a.rs", 10, None)],
            &[finding("a.rs", 10), finding("a.rs", 10)],
            3,
        );
        assert_eq!(matching.matched, [(0, 0)]);
        assert_eq!(matching.extra, [1]);
    }

    #[test]
    fn the_matching_is_maximum_where_greedy_is_not() {
        // Golden 0 (line 12) reaches findings at 13 (1 off) and 9 (3 off);
        // golden 1 (line 16) reaches only 13. A greedy pass, closest first,
        // gives 13 to golden 0 and misses golden 1.
        let goldens = [golden("a.rs", 12, None), golden("a.rs", 16, None)];
        let findings = [finding("a.rs", 13), finding("a.rs", 9)];
        let matching = match_findings(&goldens, &findings, 3);
        // Golden 0 first takes 13 (1 off), then golden 1 needs 13 (3 off):
        // the augmenting path moves golden 0 to 9 (3 off).
        assert_eq!(matching.matched, [(0, 1), (1, 0)]);
        assert!(matching.missed.is_empty());
        assert!(matching.extra.is_empty());
    }

    #[test]
    fn no_findings_and_no_golden_score_zero_without_dividing_by_zero() {
        let matching = match_findings(&[golden("a.rs", 1, None)], &[], 3);
        assert_eq!(matching.missed, [0]);
        let counts = Counts {
            golden: 1,
            findings: 0,
            matched: 0,
        };
        assert!(counts.precision() == 0.0 && counts.recall() == 0.0 && counts.f1() == 0.0);
        let nothing = Counts::default();
        assert!(nothing.f1() == 0.0);
    }

    #[test]
    fn golden_findings_without_a_line_match_only_through_the_judge_one_to_one() {
        let described = |description: &str| GoldenFinding {
            file: String::new(),
            line: None,
            end_line: None,
            side: None,
            description: description.to_owned(),
        };
        // Golden 0 has a line; 1 and 2 are descriptions. The judge says
        // finding 0 matches both descriptions and finding 1 matches golden 1;
        // an edge to golden 0 (which has a line) is ignored, and so is an
        // edge to a finding that does not exist.
        let goldens = [
            golden("a.rs", 40, None),
            described("leak"),
            described("race"),
        ];
        let findings = [finding("a.rs", 10), finding("b.rs", 3)];
        assert!(distance(&goldens[1], &findings[0]).is_none());
        let unjudged = match_findings(&goldens, &findings, 3);
        assert!(unjudged.matched.is_empty());
        let judged = match_findings_judged(
            &goldens,
            &findings,
            3,
            &[(1, 0), (2, 0), (1, 1), (0, 0), (2, 9)],
        );
        // One-to-one: golden 1 gets finding 1 so golden 2 can have finding 0.
        assert_eq!(judged.matched, [(1, 1), (2, 0)]);
        assert_eq!(judged.missed, [0]);
        assert!(judged.extra.is_empty());
    }

    #[test]
    fn a_huge_case_neither_overflows_nor_stalls() {
        // 2,000 golden findings on one line and 2,000 findings on it: the
        // augmenting paths grow 2,000 deep and must not overflow the stack.
        let goldens: Vec<GoldenFinding> = (0..2_000).map(|_| golden("a.rs", 5, None)).collect();
        let findings: Vec<Finding> = (0..2_000).map(|_| finding("a.rs", 5)).collect();
        let matching = match_findings(&goldens, &findings, 3);
        assert_eq!(matching.matched.len(), 2_000);
    }
}
