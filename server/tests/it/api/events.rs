//! SSE replay after a dropped connection and the bounded event log.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn sse_replay_after_a_dropped_connection_loses_and_repeats_nothing() {
    let config = ServerConfig {
        events_per_thread: 5_000,
        event_bytes_per_thread: 8 << 20,
        ..ServerConfig::new(graphs_dir(), "unused").storage(Storage::Memory)
    };
    let s = Server::start(config).await;
    let limit = 1_500;
    let (st, _) = s
        .post(
            "/threads/r1/runs",
            json!({"graph": "counter", "input": {"limit": limit}, "stream_modes": ["updates"]}),
        )
        .await;
    assert_eq!(st, 202);
    // First connection: drop it after 300 events.
    let mut seen = 0usize;
    let first = s
        .events_until("r1", Some(0), |_| {
            seen += 1;
            seen == 300
        })
        .await;
    let last = first.last().expect("events").0;
    // Second connection resumes with ?lastEventId= (the first used the header).
    let resp = s
        .http
        .get(s.url(&format!("/threads/r1/events?lastEventId={last}")))
        .send()
        .await
        .expect("sse");
    let mut stream = resp.bytes_stream().eventsource();
    let mut second = Vec::new();
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(60), stream.next())
        .await
        .expect("in time")
    {
        let ev = ev.expect("event");
        let data: Value = serde_json::from_str(&ev.data).expect("json");
        let end = is_end(&data);
        second.push((ev.id.parse::<u64>().expect("id"), data));
        if end {
            break;
        }
    }
    let ids: Vec<u64> = first.iter().chain(&second).map(|(id, _)| *id).collect();
    let expected: Vec<u64> = (1..=ids.len() as u64).collect();
    assert_eq!(
        ids, expected,
        "contiguous ids from 1, none lost or repeated"
    );
    // started + one update per step + end
    assert_eq!(ids.len(), limit + 2);
    let counts: Vec<i64> = first
        .iter()
        .chain(&second)
        .filter(|(_, d)| d["mode"] == "updates")
        .map(|(_, d)| d["data"]["bump"]["count"].as_i64().expect("count"))
        .collect();
    assert_eq!(counts, (1..=limit as i64).collect::<Vec<_>>());

    // Without Last-Event-ID only new events come; a new run on the thread continues the ids.
    let (st, _) = s
        .post(
            "/threads/r1/runs",
            json!({"graph": "counter", "input": {"limit": 1}}),
        )
        .await;
    assert_eq!(st, 202);
    let more = s.run_end("r1", *ids.last().expect("id")).await;
    assert_eq!(more[0].0, *ids.last().expect("id") + 1);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn event_log_is_bounded_by_count_and_bytes() {
    let config = ServerConfig {
        events_per_thread: 50,
        ..ServerConfig::new(graphs_dir(), "unused").storage(Storage::Memory)
    };
    let s = Server::start(config).await;
    let (st, _) = s
        .post(
            "/threads/b1/runs",
            json!({"graph": "counter", "input": {"limit": 200}, "stream_modes": ["updates"]}),
        )
        .await;
    assert_eq!(st, 202);
    // Wait for the end, then replay from 0: only the newest 50 remain.
    s.wait_idle("b1").await;
    let evs = s.run_end("b1", 0).await;
    assert_eq!(evs.len(), 50);
    assert_eq!(evs.last().expect("end").0, 202);
    // The replay starts with a `gap` event naming the ids the log no longer holds.
    let resp = s
        .http
        .get(s.url("/threads/b1/events?lastEventId=0"))
        .send()
        .await
        .expect("sse");
    let mut stream = resp.bytes_stream().eventsource();
    let first = stream.next().await.expect("open").expect("event");
    assert_eq!(first.event, "gap");
    let gap: Value = serde_json::from_str(&first.data).expect("json");
    assert_eq!(gap, json!({"from": 1, "to": 152}));
    let second = stream.next().await.expect("open").expect("event");
    assert_eq!(second.id, "153");
    s.stop().await;

    let config = ServerConfig {
        event_bytes_per_thread: 2_000,
        ..ServerConfig::new(graphs_dir(), "unused").storage(Storage::Memory)
    };
    let s = Server::start(config).await;
    s.post(
        "/threads/b2/runs",
        json!({"graph": "counter", "input": {"limit": 200}, "stream_modes": ["updates"]}),
    )
    .await;
    s.wait_idle("b2").await;
    let evs = s.run_end("b2", 0).await;
    let bytes: usize = evs.iter().map(|(_, d)| d.to_string().len()).sum();
    assert!(
        bytes <= 2_000 && evs.len() < 100,
        "{} events, {bytes} bytes",
        evs.len()
    );
    s.stop().await;
}
