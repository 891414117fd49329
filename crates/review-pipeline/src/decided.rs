//! What a person decided while a job ran (issue 25 item 3), read from the
//! pull request as the job found it and as it is right before the job's first
//! write. One rule for the review and the write flows: a decision of the
//! person's wins, and the job then writes nothing.

use review_core::labels::{Label, managed_labels};
use review_github::{PullRequest, PullRequestState};

/// Why the job must not write, or `None`: the pull request was closed or
/// merged, its `trigger` label was taken off, or a label handing it to a
/// human (`bot-human-intervention`, `human-review-needed`) was added between
/// `before` (read when the job started) and `now`. Only a change counts: a
/// label the bot itself set before the job (a review by hand with `--force`)
/// is not a person's decision. `during` ends each reason ("while it was being
/// reviewed").
pub fn person_decided(
    before: &PullRequest,
    now: &PullRequest,
    trigger: Label,
    during: &str,
) -> Option<String> {
    if now.merged || now.state != PullRequestState::Open {
        return Some(format!(
            "the pull request was {} {during}",
            if now.merged { "merged" } else { "closed" }
        ));
    }
    let earlier = managed_labels(&before.labels);
    let current = managed_labels(&now.labels);
    if let Some(terminal) = current.iter().find(|label| {
        matches!(
            label,
            Label::BotHumanIntervention | Label::HumanReviewNeeded
        ) && !earlier.contains(label)
    }) {
        return Some(format!(
            "someone labelled it `{}` {during}, and a person's decision wins",
            terminal.name()
        ));
    }
    (earlier.contains(&trigger) && !current.contains(&trigger))
        .then(|| format!("the `{}` label was removed {during}", trigger.name()))
}
