//! Job leases, on both databases: exclusivity, renewal, release, take-over,
//! and many tasks racing for the same jobs.

use std::collections::HashSet;
use std::time::Duration;

use review_store::{JobKind, Store, StoreError};

use crate::support::{TestDatabase, both};

both!(
    a_live_lease_excludes_other_holders,
    the_same_holder_may_claim_again,
    a_released_lease_can_be_claimed_at_once,
    a_late_heartbeat_does_not_revive_a_released_lease,
    a_lapsed_lease_is_not_renewed_even_when_nobody_took_it,
    holders_learn_their_remaining_time_from_the_database,
    an_expired_lease_is_taken_over_and_fences_the_old_holder,
    expiry_is_measured_by_the_database_clock,
    invalid_holders_and_durations_are_rejected,
    tasks_racing_for_the_same_jobs_claim_each_exactly_once,
);

const HOUR: Duration = Duration::from_hours(1);

async fn a_live_lease_excludes_other_holders(database: TestDatabase) {
    let store = database.open().await;
    let lease = store
        .claim("o/r", 7, JobKind::Review, "replica-a", HOUR)
        .await
        .unwrap()
        .expect("nobody holds it yet");
    assert_eq!(lease.holder, "replica-a");
    assert_eq!(lease.generation, 1);
    // The lease covers the pull request, whatever the kind of job.
    for kind in [JobKind::Review, JobKind::Write, JobKind::Ci] {
        assert_eq!(
            store
                .claim("o/r", 7, kind, "replica-b", HOUR)
                .await
                .unwrap(),
            None
        );
    }
    // Other pull requests are free.
    assert!(
        store
            .claim("o/r", 8, JobKind::Review, "replica-b", HOUR)
            .await
            .unwrap()
            .is_some()
    );
    let active: Vec<(u64, String)> = store
        .active_leases()
        .await
        .unwrap()
        .into_iter()
        .map(|lease| (lease.pull_request, lease.holder))
        .collect();
    assert_eq!(
        active,
        vec![(7, "replica-a".to_owned()), (8, "replica-b".to_owned())]
    );
}

async fn the_same_holder_may_claim_again(database: TestDatabase) {
    let store = database.open().await;
    let first = store
        .claim("o/r", 1, JobKind::Review, "replica-a", HOUR)
        .await
        .unwrap()
        .unwrap();
    let second = store
        .claim("o/r", 1, JobKind::Write, "replica-a", HOUR)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.generation, first.generation + 1);
    assert_eq!(second.kind, JobKind::Write);
    // The re-issued lease supersedes the first handle.
    assert_eq!(store.renew(&first, HOUR).await.unwrap(), None);
    assert!(store.renew(&second, HOUR).await.unwrap().is_some());
}

async fn a_released_lease_can_be_claimed_at_once(database: TestDatabase) {
    let store = database.open().await;
    let lease = store
        .claim("o/r", 3, JobKind::Ci, "replica-a", HOUR)
        .await
        .unwrap()
        .unwrap();
    assert!(store.release(&lease).await.unwrap());
    assert!(store.active_leases().await.unwrap().is_empty());
    let taken = store
        .claim("o/r", 3, JobKind::Review, "replica-b", HOUR)
        .await
        .unwrap()
        .expect("released leases are free");
    assert_eq!(taken.generation, lease.generation + 1);
    // Releasing the old handle again must not free the new holder's lease.
    assert!(!store.release(&lease).await.unwrap());
    assert_eq!(
        store
            .claim("o/r", 3, JobKind::Review, "replica-c", HOUR)
            .await
            .unwrap(),
        None
    );
}

/// Issue 19, item 7: A claims, releases, then a heartbeat scheduled before the
/// release arrives late. It must not renew the lease, or B finds the pull
/// request held by a holder that stopped working on it.
async fn a_late_heartbeat_does_not_revive_a_released_lease(database: TestDatabase) {
    let store = database.open().await;
    let lease = store
        .claim("o/r", 6, JobKind::Review, "replica-a", HOUR)
        .await
        .unwrap()
        .unwrap();
    assert!(store.release(&lease).await.unwrap());
    assert_eq!(store.renew(&lease, HOUR).await.unwrap(), None);
    assert!(store.active_leases().await.unwrap().is_empty());
    let taken = store
        .claim("o/r", 6, JobKind::Review, "replica-b", HOUR)
        .await
        .unwrap()
        .expect("a released lease stays free after a late heartbeat");
    assert_eq!(taken.holder, "replica-b");
    // Releasing twice is not "still held" either.
    assert!(!store.release(&lease).await.unwrap());
}

async fn a_lapsed_lease_is_not_renewed_even_when_nobody_took_it(database: TestDatabase) {
    let store = database.open().await;
    // A zero-length lease has lapsed as soon as it is granted.
    let lapsed = store
        .claim("o/r", 9, JobKind::Write, "replica-a", Duration::ZERO)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lapsed.remaining, Duration::ZERO);
    assert_eq!(store.renew(&lapsed, HOUR).await.unwrap(), None);
    assert!(!store.release(&lapsed).await.unwrap());
    assert!(store.active_leases().await.unwrap().is_empty());
    // The holder must claim again, which fences the lapsed handle.
    let again = store
        .claim("o/r", 9, JobKind::Write, "replica-a", HOUR)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.generation, lapsed.generation + 1);
}

async fn holders_learn_their_remaining_time_from_the_database(database: TestDatabase) {
    let store = database.open().await;
    let ttl = Duration::from_micros(3_600_000_321);
    let lease = store
        .claim("o/r", 10, JobKind::Ci, "replica-a", ttl)
        .await
        .unwrap()
        .unwrap();
    // Expiry and "now" come from one reading of the database's clock.
    assert_eq!(lease.remaining, ttl);
    let renewed = store.renew(&lease, ttl).await.unwrap().unwrap();
    assert_eq!(renewed.remaining, ttl);
    let listed = store.active_leases().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].remaining <= ttl && listed[0].remaining > Duration::ZERO);
}

async fn an_expired_lease_is_taken_over_and_fences_the_old_holder(database: TestDatabase) {
    let store = database.open().await;
    // A zero-length lease is expired as soon as it is granted.
    let stale = store
        .claim("o/r", 4, JobKind::Write, "replica-a", Duration::ZERO)
        .await
        .unwrap()
        .unwrap();
    let fresh = store
        .claim("o/r", 4, JobKind::Write, "replica-b", HOUR)
        .await
        .unwrap()
        .expect("an expired lease can be taken over");
    assert_eq!(fresh.generation, stale.generation + 1);
    // The stalled holder finds out it lost the job, and cannot disturb the new one.
    assert_eq!(store.renew(&stale, HOUR).await.unwrap(), None);
    assert!(!store.release(&stale).await.unwrap());
    let renewed = store.renew(&fresh, HOUR).await.unwrap().unwrap();
    assert!(renewed.expires_at >= fresh.expires_at);
    assert_eq!(renewed.generation, fresh.generation);
    let active = store.active_leases().await.unwrap();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].holder, "replica-b");
}

async fn expiry_is_measured_by_the_database_clock(database: TestDatabase) {
    let store = database.open().await;
    let ttl = Duration::from_micros(90_000_123);
    let lease = store
        .claim("o/r", 5, JobKind::Review, "replica-a", ttl)
        .await
        .unwrap()
        .unwrap();
    // Both ends come from one reading of the database's clock.
    assert_eq!(
        (lease.expires_at - lease.acquired_at).to_std().unwrap(),
        ttl
    );
}

async fn invalid_holders_and_durations_are_rejected(database: TestDatabase) {
    let store = database.open().await;
    for holder in ["", "tab\there"] {
        let error = store
            .claim("o/r", 1, JobKind::Review, holder, HOUR)
            .await
            .unwrap_err();
        assert!(
            matches!(error, StoreError::InvalidInput { .. }),
            "{error:?}"
        );
    }
    let error = store
        .claim(
            "o/r",
            1,
            JobKind::Review,
            "a",
            Duration::from_hours(24 * 365),
        )
        .await
        .unwrap_err();
    assert!(error.to_string().contains("lease duration"), "{error}");
}

async fn tasks_racing_for_the_same_jobs_claim_each_exactly_once(database: TestDatabase) {
    const JOBS: u64 = 100;
    // Two stores, each with its own pool, as two replicas would have; every job
    // claimed by one task per store at the same time.
    let stores = [database.open().await, database.open().await];
    let claims = stores.iter().enumerate().flat_map(|(replica, store)| {
        (1..=JOBS).map(move |pull_request| claim_one(store, replica, pull_request))
    });
    let won: Vec<(usize, u64)> = futures::future::join_all(claims)
        .await
        .into_iter()
        .flatten()
        .collect();
    let mut pull_requests: Vec<u64> = won.iter().map(|(_, pull_request)| *pull_request).collect();
    pull_requests.sort_unstable();
    assert_eq!(
        pull_requests,
        (1..=JOBS).collect::<Vec<_>>(),
        "each job exactly once"
    );
    // And the database agrees on who holds what.
    let held: HashSet<(String, u64)> = stores[0]
        .active_leases()
        .await
        .unwrap()
        .into_iter()
        .map(|lease| (lease.holder, lease.pull_request))
        .collect();
    let expected: HashSet<(String, u64)> = won
        .iter()
        .map(|(replica, pull_request)| (format!("replica-{replica}"), *pull_request))
        .collect();
    assert_eq!(held, expected);
}

async fn claim_one(store: &Store, replica: usize, pull_request: u64) -> Option<(usize, u64)> {
    store
        .claim(
            "race/jobs",
            pull_request,
            JobKind::Review,
            &format!("replica-{replica}"),
            HOUR,
        )
        .await
        .unwrap()
        .map(|_| (replica, pull_request))
}
