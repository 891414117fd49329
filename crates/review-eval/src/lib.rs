//! Review quality you can measure (`review-bot eval`): case sets of pull
//! requests with golden findings, the review flow run on each case as
//! `review --local` runs it, the findings scored against the golden ones, and
//! cases built from a repository's own bug fixes.
//!
//! - [`case`]: the case format (JSON), loading and checking it.
//! - [`score`]: matching findings to golden findings (a maximum bipartite
//!   matching inside a line window) and the totals (precision, recall, F1).
//! - [`report`]: the per-case table and the `--json` document.
//! - [`git`]: the hardened, time-bounded git this crate runs.
//! - [`run`]: one case through review-pipeline's local flow, in a scratch
//!   clone of the case's repository.
//! - [`history`]: cases from a repository's fix commits (`--from-history`).
//! - [`judge`]: the agent matching findings to golden findings that have no
//!   line (`--judge`).

pub mod case;
pub mod git;
pub mod history;
pub mod judge;
pub mod report;
pub mod run;
pub mod score;
