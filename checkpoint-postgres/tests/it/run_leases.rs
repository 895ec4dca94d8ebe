//! Run leases as several processes (connections) see them: an expired run goes to exactly one
//! contender, the owner that lost it can no longer write, ended runs are never taken, and the
//! event ceiling only rises.

use crate::common;

use agentgraph_postgres::{PostgresCheckpointer, PostgresOptions, PostgresRunLeases};
use agentgraph_runtime::checkpoint::{RunLeases, RunOutcome, RunRecord};
use serde_json::json;
use std::time::Duration;

async fn leases(url: &str, schema: &str, owner: &str) -> PostgresRunLeases {
    PostgresCheckpointer::connect_with(url, PostgresOptions::default().schema(schema))
        .await
        .expect("connect")
        .run_leases(owner)
        .await
        .expect("run table")
}

fn record(run: &str, thread: &str) -> RunRecord {
    RunRecord {
        run_id: run.to_string(),
        thread_id: thread.to_string(),
        graph: "g".to_string(),
        spec: json!({ "input": { "n": 1 } }),
    }
}

/// Long enough that no renewal is needed during a test; short ones expire at once.
const LONG: Duration = Duration::from_secs(60);
const EXPIRED: Duration = Duration::ZERO;

#[tokio::test]
async fn an_expired_run_goes_to_exactly_one_contender() {
    let Some(url) = common::url() else {
        return;
    };
    let schema = common::fresh_schema();
    let owner = leases(&url, &schema, "dead").await;
    let mut contenders = Vec::new();
    for i in 0..8 {
        contenders.push(leases(&url, &schema, &format!("c{i}")).await);
    }
    for round in 0..20 {
        let run = format!("r{round}");
        owner
            .record(&record(&run, &format!("t{round}")), EXPIRED, 0)
            .await
            .expect("record");
        // Every contender tries at the same moment, each on its own connection.
        let claims = futures::future::join_all(
            contenders
                .iter()
                .map(|c| async move { (c.owner().to_string(), c.claim_expired(LONG, 5).await) }),
        )
        .await;
        let winners: Vec<_> = claims
            .into_iter()
            .filter_map(|(who, claim)| claim.expect("claim").map(|c| (who, c)))
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
        let (who, claim) = &winners[0];
        assert_eq!(claim.record, record(&run, &format!("t{round}")));
        assert_eq!(claim.previous_owner.as_deref(), Some("dead"));
        assert_eq!(claim.attempts, 2);
        assert!(!claim.gave_up);
        // Only the winner holds it; the first owner is fenced off.
        for c in &contenders {
            assert_eq!(
                c.holds(&run).await.unwrap(),
                c.owner() == who,
                "{}",
                c.owner()
            );
        }
        assert!(!owner.holds(&run).await.unwrap());
        assert!(!owner.reserve_events(&run, 99).await.unwrap());
        assert!(!owner.finish(&run, RunOutcome::Done, None).await.unwrap());
        assert_eq!(
            owner.renew(std::slice::from_ref(&run), LONG).await.unwrap(),
            Vec::<String>::new()
        );
        // Taken and leased: nobody else gets it.
        for c in &contenders {
            assert!(c.claim_expired(LONG, 5).await.unwrap().is_none());
        }
    }
    owner.drop_table().await.expect("drop");
    common::drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn ended_runs_stay_put_and_handed_back_runs_are_taken_at_once() {
    let Some(url) = common::url() else {
        return;
    };
    let schema = common::fresh_schema();
    let (a, b) = (
        leases(&url, &schema, "a").await,
        leases(&url, &schema, "b").await,
    );
    for (run, outcome) in [
        ("done", RunOutcome::Done),
        ("failed", RunOutcome::Failed),
        ("cancelled", RunOutcome::Cancelled),
        ("human", RunOutcome::Interrupted),
    ] {
        a.record(&record(run, run), Duration::from_millis(300), 0)
            .await
            .unwrap();
        assert!(a.finish(run, outcome, None).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(b.claim_expired(LONG, 5).await.unwrap().is_none());

    a.record(&record("moving", "m"), LONG, 0).await.unwrap();
    assert!(b.claim_expired(LONG, 5).await.unwrap().is_none(), "leased");
    assert!(a.renew(&["moving".to_string()], LONG).await.unwrap() == ["moving"]);
    assert!(a.hand_back("moving").await.unwrap());
    let claim = b
        .claim_expired(LONG, 5)
        .await
        .unwrap()
        .expect("handed back");
    assert_eq!(claim.previous_owner, None);
    assert_eq!(claim.attempts, 1, "a hand-over is no failure");
    assert!(b.holds("moving").await.unwrap());
    assert!(!a.holds("moving").await.unwrap());
    a.drop_table().await.unwrap();
    common::drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn a_run_taken_too_often_is_given_up() {
    let Some(url) = common::url() else {
        return;
    };
    let schema = common::fresh_schema();
    let a = leases(&url, &schema, "a").await;
    a.record(&record("poison", "p"), EXPIRED, 0).await.unwrap();
    // Recorded once (attempt 1), taken twice more with max_attempts 3.
    for attempts in [2, 3] {
        let c = a.claim_expired(EXPIRED, 3).await.unwrap().expect("taken");
        assert_eq!((c.attempts, c.gave_up), (attempts, false));
    }
    let c = a
        .claim_expired(EXPIRED, 3)
        .await
        .unwrap()
        .expect("given up");
    assert!(c.gave_up);
    assert!(a.claim_expired(EXPIRED, 3).await.unwrap().is_none());
    a.drop_table().await.unwrap();
    common::drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn event_ceilings_rise_across_runs_and_owners() {
    let Some(url) = common::url() else {
        return;
    };
    let schema = common::fresh_schema();
    let (a, b) = (
        leases(&url, &schema, "a").await,
        leases(&url, &schema, "b").await,
    );
    assert_eq!(a.record(&record("r1", "t"), LONG, 7).await.unwrap(), 7);
    assert!(a.reserve_events("r1", 300).await.unwrap());
    assert!(a.reserve_events("r1", 100).await.unwrap(), "never lowered");
    // A new run on the thread (another owner, a smaller floor) starts above it, and the
    // unfinished first run is superseded.
    assert_eq!(b.record(&record("r2", "t"), LONG, 3).await.unwrap(), 300);
    assert!(!a.holds("r1").await.unwrap());
    let superseded = b.statuses("t").await.unwrap();
    assert_eq!(
        superseded,
        [
            ("r1".to_string(), "cancelled".to_string()),
            ("r2".to_string(), "running".to_string())
        ]
    );
    assert_eq!(b.record(&record("r3", "u"), LONG, 0).await.unwrap(), 0);
    // Ended runs are deleted when the thread's next run is recorded; the ceiling carries on.
    assert!(b.reserve_events("r2", 600).await.unwrap());
    assert!(b.finish("r2", RunOutcome::Done, None).await.unwrap());
    assert_eq!(a.record(&record("r4", "t"), LONG, 0).await.unwrap(), 600);
    assert!(a.finish("r4", RunOutcome::Done, None).await.unwrap());
    assert_eq!(a.record(&record("r5", "t"), LONG, 0).await.unwrap(), 600);
    let left = a.statuses("t").await.unwrap();
    assert_eq!(left, [("r5".to_string(), "running".to_string())]);
    a.drop_table().await.unwrap();
    common::drop_schema(&url, &schema).await;
}
