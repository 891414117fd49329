//! The label state machine of seed 004.
//!
//! Pull-request labels are the loop's only state (DESIGN.md invariant 3). Three
//! *trigger* labels each start one job when the poller finds them; every job
//! outcome names the label to set next (or none: leave the labels alone and
//! re-check on the next poll). Two *terminal* labels hand the pull request to a
//! human and trigger nothing.
//!
//! Setting a label removes every other label of the five, trigger or terminal:
//! seed 004 keeps one of them active at a time, and a stale
//! `human-review-needed` left beside a fresh `bot-changes-needed` would tell a
//! human to look at a pull request the bot is still fixing. Labels that are not
//! ours are never touched. Names are compared case-insensitively (GitHub treats
//! label names that way) and a removal uses the spelling the pull request has,
//! and only for labels it has — removing a missing label is a 404.

use std::fmt;

/// The five labels the bot manages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Label {
    /// `bot-review-needed`: ready for the review pipeline.
    BotReviewNeeded,
    /// `bot-changes-needed`: the review found issues; the write pipeline fixes them.
    BotChangesNeeded,
    /// `bot-ci-pending`: the write pipeline pushed; waiting for CI.
    BotCiPending,
    /// `human-review-needed`: the review bot approved; a human takes over.
    HumanReviewNeeded,
    /// `bot-human-intervention`: the cycle limit was reached; a human must help.
    BotHumanIntervention,
}

impl Label {
    /// All five, in the loop's order.
    pub const ALL: [Label; 5] = [
        Label::BotReviewNeeded,
        Label::BotChangesNeeded,
        Label::BotCiPending,
        Label::HumanReviewNeeded,
        Label::BotHumanIntervention,
    ];

    /// The labels the poller searches for: each starts a job.
    pub const TRIGGERS: [Label; 3] = [
        Label::BotReviewNeeded,
        Label::BotChangesNeeded,
        Label::BotCiPending,
    ];

    /// The label's name on GitHub.
    pub const fn name(self) -> &'static str {
        match self {
            Label::BotReviewNeeded => "bot-review-needed",
            Label::BotChangesNeeded => "bot-changes-needed",
            Label::BotCiPending => "bot-ci-pending",
            Label::HumanReviewNeeded => "human-review-needed",
            Label::BotHumanIntervention => "bot-human-intervention",
        }
    }

    /// The managed label with this name (case-insensitive), if it is one.
    pub fn from_name(name: &str) -> Option<Label> {
        Label::ALL
            .into_iter()
            .find(|label| label.name().eq_ignore_ascii_case(name.trim()))
    }

    /// The job this label starts; `None` for the two terminal labels.
    pub const fn job(self) -> Option<Job> {
        match self {
            Label::BotReviewNeeded => Some(Job::Review),
            Label::BotChangesNeeded => Some(Job::Write),
            Label::BotCiPending => Some(Job::CiCheck),
            Label::HumanReviewNeeded | Label::BotHumanIntervention => None,
        }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// The work a trigger label starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Job {
    /// Build + test gate, two review passes, one posted review.
    Review,
    /// Cycle-limit check, merge of the base, code-fix pass, build, push.
    Write,
    /// A look at the head commit's check runs and statuses (no agent).
    CiCheck,
}

impl Job {
    /// The label that starts this job.
    pub const fn trigger(self) -> Label {
        match self {
            Job::Review => Label::BotReviewNeeded,
            Job::Write => Label::BotChangesNeeded,
            Job::CiCheck => Label::BotCiPending,
        }
    }
}

/// How a job ended, as far as the labels are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Review job: the build or the tests failed; a failure comment was posted.
    BuildFailed,
    /// Review job: the review left unresolved comments.
    ChangesRequested,
    /// Review job: nothing unresolved; an LGTM review was posted.
    Approved,
    /// Write job: the pull request has had more review cycles than allowed.
    CycleLimitReached,
    /// Write job: fixes were built, committed and pushed.
    Pushed,
    /// Write job: the agent changed nothing, or the fixed build failed; an
    /// error comment was posted and the write job will be retried.
    NotFixed,
    /// CI job: every check passed, or the repository has no CI.
    CiPassed,
    /// CI job: a check failed; a comment names it.
    CiFailed,
    /// CI job: checks still pending past the timeout (measured from the head commit).
    CiTimedOut,
    /// CI job: checks still pending within the timeout; look again next poll.
    CiPending,
}

impl Outcome {
    /// The job that can end this way.
    pub const fn job(self) -> Job {
        match self {
            Outcome::BuildFailed | Outcome::ChangesRequested | Outcome::Approved => Job::Review,
            Outcome::CycleLimitReached | Outcome::Pushed | Outcome::NotFixed => Job::Write,
            Outcome::CiPassed | Outcome::CiFailed | Outcome::CiTimedOut | Outcome::CiPending => {
                Job::CiCheck
            }
        }
    }

    /// The label to set after this outcome; `None` leaves the labels as they are.
    pub const fn next_label(self) -> Option<Label> {
        match self {
            Outcome::BuildFailed
            | Outcome::ChangesRequested
            | Outcome::CiFailed
            | Outcome::CiTimedOut => Some(Label::BotChangesNeeded),
            Outcome::Approved => Some(Label::HumanReviewNeeded),
            Outcome::CycleLimitReached => Some(Label::BotHumanIntervention),
            Outcome::Pushed => Some(Label::BotCiPending),
            Outcome::CiPassed => Some(Label::BotReviewNeeded),
            // `NotFixed` keeps `bot-changes-needed` (seed 004): already set.
            Outcome::NotFixed | Outcome::CiPending => None,
        }
    }
}

/// The label edits that make `target` the pull request's only managed label.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelChange {
    /// The label to add, or `None` when the pull request already has it.
    pub add: Option<Label>,
    /// Names to remove, spelled as the pull request has them (each one present).
    pub remove: Vec<String>,
}

impl LabelChange {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.add.is_none() && self.remove.is_empty()
    }
}

/// The change that sets `target` given the pull request's `current` labels:
/// every other managed label present is removed, every other label is kept.
pub fn set_label<S: AsRef<str>>(current: &[S], target: Label) -> LabelChange {
    let mut change = LabelChange {
        add: Some(target),
        remove: Vec::new(),
    };
    for name in current.iter().map(AsRef::as_ref) {
        match Label::from_name(name) {
            Some(label) if label == target => change.add = None,
            Some(_) if !change.remove.iter().any(|seen| seen == name) => {
                change.remove.push(name.to_owned());
            }
            _ => {}
        }
    }
    change
}

/// The change an outcome calls for; empty when the outcome keeps the labels.
pub fn after_outcome<S: AsRef<str>>(current: &[S], outcome: Outcome) -> LabelChange {
    outcome
        .next_label()
        .map(|target| set_label(current, target))
        .unwrap_or_default()
}

/// The managed labels among `current`, in the loop's order.
pub fn managed_labels<S: AsRef<str>>(current: &[S]) -> Vec<Label> {
    let mut labels: Vec<Label> = current
        .iter()
        .filter_map(|name| Label::from_name(name.as_ref()))
        .collect();
    labels.sort_unstable();
    labels.dedup();
    labels
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_trigger_label_starts_its_job() {
        for label in Label::TRIGGERS {
            assert_eq!(label.job().unwrap().trigger(), label);
        }
        assert_eq!(Label::HumanReviewNeeded.job(), None);
        assert_eq!(Label::BotHumanIntervention.job(), None);
    }

    #[test]
    fn outcomes_follow_seed_004() {
        use Outcome::*;
        let expected = [
            (BuildFailed, Some(Label::BotChangesNeeded)),
            (ChangesRequested, Some(Label::BotChangesNeeded)),
            (Approved, Some(Label::HumanReviewNeeded)),
            (CycleLimitReached, Some(Label::BotHumanIntervention)),
            (Pushed, Some(Label::BotCiPending)),
            (NotFixed, None),
            (CiPassed, Some(Label::BotReviewNeeded)),
            (CiFailed, Some(Label::BotChangesNeeded)),
            (CiTimedOut, Some(Label::BotChangesNeeded)),
            (CiPending, None),
        ];
        for (outcome, label) in expected {
            assert_eq!(outcome.next_label(), label, "{outcome:?}");
        }
        assert_eq!(Pushed.job(), Job::Write);
        assert_eq!(CiTimedOut.job(), Job::CiCheck);
    }

    #[test]
    fn setting_a_label_swaps_managed_labels_only() {
        let current = [
            "bug",
            "bot-review-needed",
            "Human-Review-Needed",
            "priority: high",
        ];
        let change = set_label(&current, Label::BotChangesNeeded);
        assert_eq!(change.add, Some(Label::BotChangesNeeded));
        assert_eq!(change.remove, ["bot-review-needed", "Human-Review-Needed"]);
    }

    #[test]
    fn setting_a_present_label_adds_nothing_and_removes_nothing_missing() {
        let change = set_label(&["BOT-CI-PENDING"], Label::BotCiPending);
        assert!(change.is_empty());
        assert!(
            set_label::<&str>(&[], Label::BotReviewNeeded)
                .remove
                .is_empty()
        );
        assert!(after_outcome(&["bot-ci-pending"], Outcome::CiPending).is_empty());
        assert_eq!(
            after_outcome(&["bot-ci-pending"], Outcome::CiPassed),
            LabelChange {
                add: Some(Label::BotReviewNeeded),
                remove: vec!["bot-ci-pending".to_owned()],
            }
        );
    }

    #[test]
    fn lists_managed_labels() {
        assert_eq!(
            managed_labels(&["x", "bot-ci-pending", "bot-review-needed", "bot-ci-pending"]),
            [Label::BotReviewNeeded, Label::BotCiPending]
        );
    }

    proptest! {
        #[test]
        fn change_leaves_exactly_the_target(
            current in proptest::collection::vec(
                prop_oneof![
                    proptest::sample::select(Label::ALL.map(Label::name).to_vec()).prop_map(str::to_owned),
                    "[a-z: -]{1,12}",
                ],
                0..8,
            ),
            target in proptest::sample::select(Label::ALL.to_vec()),
        ) {
            let change = set_label(&current, target);
            // Never remove what is not there, never touch a label that is not ours.
            for removed in &change.remove {
                prop_assert!(current.contains(removed));
                prop_assert!(Label::from_name(removed).is_some());
            }
            // Applying the change leaves the target as the only managed label and
            // every other label in place.
            let mut after: Vec<String> = current
                .iter()
                .filter(|name| !change.remove.contains(name))
                .cloned()
                .collect();
            after.extend(change.add.map(|label| label.name().to_owned()));
            prop_assert_eq!(managed_labels(&after), vec![target]);
            for name in &current {
                if Label::from_name(name).is_none() {
                    prop_assert!(after.contains(name));
                }
            }
        }
    }
}
