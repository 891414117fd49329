//! What `review-bot eval` prints: a block per case (matched, missed, extra)
//! and the totals as text, or the `--json` document:
//!
//! ```json
//! {"cases": [{"name", "matched": [{"golden", "finding"}], "missed": [golden…],
//!             "extra": [finding…]}],
//!  "totals": {"golden", "findings", "matched", "precision", "recall", "f1",
//!             "cost_usd", "agent_seconds", "turns", "judge_cost_usd"}}
//! ```
//!
//! A failed case's golden findings are all in `missed` (its reason goes to
//! standard error and the text report).

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};

use crate::case::GoldenFinding;
use crate::run::CaseResult;
use crate::score::{Counts, Finding};

/// The totals over a case set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    /// Golden findings, findings and pairs.
    pub counts: Counts,
    /// Cases that failed.
    pub failed: usize,
    /// What the agent cost, in US dollars.
    pub cost_usd: f64,
    /// The agent's time.
    pub agent: Duration,
    /// The agent's turns.
    pub turns: u64,
    /// The cases' wall time, summed.
    pub wall: Duration,
    /// Pairs the judge decided (0 without `--judge`).
    pub judge_pairs: usize,
    /// What the judge cost, in US dollars (apart from `cost_usd`).
    pub judge_cost_usd: f64,
    /// The judge's time.
    pub judge_time: Duration,
}

impl Totals {
    /// Sums `results`.
    pub fn of(results: &[CaseResult]) -> Self {
        let mut totals = Self::default();
        for result in results {
            totals.counts.golden += result.golden.len();
            totals.counts.findings += result.findings.len();
            totals.counts.matched += result.matching.matched.len();
            totals.failed += usize::from(result.error.is_some());
            totals.cost_usd += result.cost_usd;
            totals.agent += result.agent;
            totals.turns += u64::from(result.turns);
            totals.wall += result.wall;
            totals.judge_pairs += result.judge_pairs;
            totals.judge_cost_usd += result.judge_cost_usd;
            totals.judge_time += result.judge_time;
        }
        totals
    }

    /// The wall time that was neither the agent's nor the judge's.
    pub fn overhead(&self) -> Duration {
        self.wall
            .saturating_sub(self.agent)
            .saturating_sub(self.judge_time)
    }

    /// The `totals` object of the JSON document.
    pub fn to_json(&self) -> Value {
        json!({
            "golden": self.counts.golden,
            "findings": self.counts.findings,
            "matched": self.counts.matched,
            "precision": self.counts.precision(),
            "recall": self.counts.recall(),
            "f1": self.counts.f1(),
            "cost_usd": self.cost_usd,
            "agent_seconds": self.agent.as_secs_f64(),
            "turns": self.turns,
            "judge_cost_usd": self.judge_cost_usd,
        })
    }
}

/// One case as JSON: `name`, `matched`, `missed`, `extra`.
pub fn case_json(result: &CaseResult) -> Value {
    let matched: Vec<Value> = result
        .matching
        .matched
        .iter()
        .map(|&(golden, finding)| {
            json!({
                "golden": result.golden[golden],
                "finding": result.findings[finding],
            })
        })
        .collect();
    let missed: Vec<&GoldenFinding> = result
        .matching
        .missed
        .iter()
        .map(|&golden| &result.golden[golden])
        .collect();
    let extra: Vec<&Finding> = result
        .matching
        .extra
        .iter()
        .map(|&finding| &result.findings[finding])
        .collect();
    json!({
        "name": result.name,
        "matched": matched,
        "missed": missed,
        "extra": extra,
    })
}

/// The whole `--json` document.
pub fn json_document(results: &[CaseResult]) -> Value {
    json!({
        "cases": results.iter().map(case_json).collect::<Vec<_>>(),
        "totals": Totals::of(results).to_json(),
    })
}

fn golden_place(golden: &GoldenFinding) -> String {
    let side = if golden.side() == review_core::anchor::Side::Left {
        " (LEFT)"
    } else {
        ""
    };
    let file = if golden.file.is_empty() {
        "(any file)"
    } else {
        golden.file.as_str()
    };
    match (golden.line, golden.last_line()) {
        (None, _) | (_, None) => format!("{file} (judged)"),
        (Some(line), Some(last)) if line == last => format!("{file}:{line}{side}"),
        (Some(line), Some(last)) => format!("{file}:{line}-{last}{side}"),
    }
}

fn finding_place(finding: &Finding) -> String {
    let side = if finding.side == review_core::anchor::Side::Left {
        " (LEFT)"
    } else {
        ""
    };
    if finding.first_line() == finding.line {
        format!("{}:{}{side}", finding.file, finding.line)
    } else {
        format!(
            "{}:{}-{}{side}",
            finding.file,
            finding.first_line(),
            finding.line
        )
    }
}

/// One line of free text, at most `limit` characters.
fn one_line(text: &str, limit: usize) -> String {
    let line = review_core::payload::single_line(text);
    if line.chars().count() <= limit {
        return line;
    }
    let mut cut: String = line.chars().take(limit.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The text report: a block per case, then the totals.
pub fn text_report(results: &[CaseResult], window: u32) -> String {
    let mut text = String::new();
    for result in results {
        let matched = result.matching.matched.len();
        let missed = result.matching.missed.len();
        let extra = result.matching.extra.len();
        match &result.error {
            Some(error) => {
                let _ = writeln!(
                    text,
                    "{}: FAILED: {}\n  {missed} golden finding{} counted as missed",
                    result.name,
                    one_line(error, 400),
                    if missed == 1 { "" } else { "s" }
                );
            }
            None => {
                let _ = writeln!(
                    text,
                    "{}: {matched} matched, {missed} missed, {extra} extra{} · agent ${:.4}, {:.1} s, {} turn{} · overhead {:.1} s",
                    result.name,
                    result
                        .note
                        .as_deref()
                        .map(|note| format!(" ({note})"))
                        .unwrap_or_default(),
                    result.cost_usd,
                    result.agent.as_secs_f64(),
                    result.turns,
                    if result.turns == 1 { "" } else { "s" },
                    result.overhead().as_secs_f64(),
                );
            }
        }
        for &(golden, finding) in &result.matching.matched {
            let _ = writeln!(
                text,
                "  matched  {}  ←  {}  {}",
                golden_place(&result.golden[golden]),
                finding_place(&result.findings[finding]),
                one_line(&result.findings[finding].title, 80),
            );
        }
        for &golden in &result.matching.missed {
            let golden = &result.golden[golden];
            let _ = writeln!(
                text,
                "  missed   {}  {}",
                golden_place(golden),
                one_line(&golden.description, 80),
            );
        }
        for &finding in &result.matching.extra {
            let finding = &result.findings[finding];
            let _ = writeln!(
                text,
                "  extra    {}  {}",
                finding_place(finding),
                one_line(&finding.title, 80),
            );
        }
    }
    let totals = Totals::of(results);
    let _ = writeln!(text, "\n{}", totals_line(&totals, results.len(), window));
    text
}

/// The totals as one line.
pub fn totals_line(totals: &Totals, cases: usize, window: u32) -> String {
    let counts = totals.counts;
    #[allow(clippy::cast_precision_loss)] // A count of cases.
    let per_case = totals.overhead().as_secs_f64() / cases.max(1) as f64;
    format!(
        "{cases} case{}{} · golden {} · findings {} · matched {} · precision {:.3} · recall {:.3} · F1 {:.3} (window {window}) · agent ${:.4}, {:.1} s, {} turn{} · overhead {:.1} s ({per_case:.2} s per case)",
        if cases == 1 { "" } else { "s" },
        if totals.failed == 0 {
            String::new()
        } else {
            format!(" ({} failed)", totals.failed)
        },
        counts.golden,
        counts.findings,
        counts.matched,
        counts.precision(),
        counts.recall(),
        counts.f1(),
        totals.cost_usd,
        totals.agent.as_secs_f64(),
        totals.turns,
        if totals.turns == 1 { "" } else { "s" },
        totals.overhead().as_secs_f64(),
    ) + &judge_line(totals)
}

/// The judge's share, when it ran: its own line.
fn judge_line(totals: &Totals) -> String {
    if totals.judge_pairs == 0 && totals.judge_cost_usd == 0.0 {
        return String::new();
    }
    format!(
        "\njudge: {} pair{} decided · ${:.4}, {:.1} s (not in the agent's figures)",
        totals.judge_pairs,
        if totals.judge_pairs == 1 { "" } else { "s" },
        totals.judge_cost_usd,
        totals.judge_time.as_secs_f64(),
    )
}

/// `eval --compare`'s `--json` document: both runs' documents and the setting.
pub fn comparison_json(baseline: &[CaseResult], compared: &[CaseResult], setting: &str) -> Value {
    json!({
        "baseline": json_document(baseline),
        "compared": json_document(compared),
        "setting": setting,
    })
}

/// The rows of one side-by-side block: name, baseline's value, compared's.
fn comparison_rows(baseline: &Totals, compared: &Totals) -> Vec<(&'static str, String, String)> {
    let row = |name: &'static str, value: &dyn Fn(&Totals) -> String| {
        (name, value(baseline), value(compared))
    };
    let mut rows = vec![
        row("precision", &|totals| {
            format!("{:.3}", totals.counts.precision())
        }),
        row("recall", &|totals| format!("{:.3}", totals.counts.recall())),
        row("F1", &|totals| format!("{:.3}", totals.counts.f1())),
        row("findings", &|totals| totals.counts.findings.to_string()),
        row("matched", &|totals| {
            format!("{} of {}", totals.counts.matched, totals.counts.golden)
        }),
        row("cost (USD)", &|totals| format!("{:.4}", totals.cost_usd)),
        row("agent seconds", &|totals| {
            format!("{:.1}", totals.agent.as_secs_f64())
        }),
        row("turns", &|totals| totals.turns.to_string()),
    ];
    if baseline.judge_pairs + compared.judge_pairs > 0 {
        rows.push(row("judge (USD)", &|totals| {
            format!("{:.4}", totals.judge_cost_usd)
        }));
    }
    rows
}

/// `eval --compare`'s text report: per case and for the totals, each
/// figure as configured (`baseline`) and with the setting (`compared`), side
/// by side. The two runs hold the same cases in the same order.
pub fn comparison_text(
    baseline: &[CaseResult],
    compared: &[CaseResult],
    setting: &str,
    window: u32,
) -> String {
    let width = setting.chars().count().max("as configured".len());
    let mut text = String::new();
    let block = |title: String, left: &Totals, right: &Totals, text: &mut String| {
        let _ = writeln!(
            text,
            "{title}\n  {:<14} {:>width$}  {:>width$}",
            "", "as configured", setting
        );
        for (name, left, right) in comparison_rows(left, right) {
            let _ = writeln!(text, "  {name:<14} {left:>width$}  {right:>width$}");
        }
    };
    for (left, right) in baseline.iter().zip(compared) {
        let failed: Vec<String> = [("as configured", left), (setting, right)]
            .iter()
            .filter_map(|(side, result)| {
                result
                    .error
                    .as_deref()
                    .map(|error| format!("{side}: FAILED: {}", one_line(error, 200)))
            })
            .collect();
        let title = if failed.is_empty() {
            left.name.clone()
        } else {
            format!("{} ({})", left.name, failed.join("; "))
        };
        block(
            title,
            &Totals::of(std::slice::from_ref(left)),
            &Totals::of(std::slice::from_ref(right)),
            &mut text,
        );
    }
    let (left, right) = (Totals::of(baseline), Totals::of(compared));
    block(
        format!(
            "\ntotals: {} case{} (window {window}){}",
            baseline.len(),
            if baseline.len() == 1 { "" } else { "s" },
            if left.failed + right.failed == 0 {
                String::new()
            } else {
                format!(
                    "; failed: {} as configured, {} with {setting}",
                    left.failed, right.failed
                )
            }
        ),
        &left,
        &right,
        &mut text,
    );
    text
}
