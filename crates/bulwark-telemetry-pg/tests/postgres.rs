//! Against a real PostgreSQL of the test's own: two writers (two instances) into one
//! store, the deployment statistics across both, and a store that goes away — the sending
//! side never waits, rows past the queue are dropped and counted, the count reaches the
//! store when it is back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use bulwark_telemetry_pg::{Config, Forward, Row, start};

fn row(i: u64, decision: &str) -> Row {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    Row {
        ts: now,
        front: "mcp".into(),
        session: format!("s{}", i % 3),
        tool: if i.is_multiple_of(2) { "bash" } else { "fetch" }.into(),
        direction: "request".into(),
        decision: decision.into(),
        rule_id: (decision == "block").then(|| "fs.rm_root_or_home".to_string()),
        reason_code: (decision == "block").then(|| "RULE_MATCH".to_string()),
        eval_us: i,
        log: Some("/var/log/bulwark/audit.jsonl".into()),
        seq: Some(i + 1),
        ..Row::default()
    }
}

fn cfg(url: &str, instance: &str, queue: usize) -> Config {
    Config {
        url: url.into(),
        instance: instance.into(),
        queue,
        batch: 100,
        timeout: Duration::from_millis(1000),
    }
}

fn stats(url: &str) -> bulwark_telemetry_pg::DeploymentStats {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = bulwark_telemetry_pg::connect(url, Duration::from_secs(5))
            .await
            .unwrap();
        bulwark_telemetry_pg::stats(&c, None).await.unwrap()
    })
}

#[test]
fn two_instances_write_and_the_stats_cover_both() {
    let pg = support::Postgres::start();
    let url = pg.url();
    let (a, ta) = start(cfg(&url, "replica-a", 4096)).unwrap();
    let (b, tb) = start(cfg(&url, "replica-b", 4096)).unwrap();
    // Both start together: the schema is made once, under the advisory lock.
    for i in 0..300 {
        a.forward(&row(
            i,
            if i.is_multiple_of(10) {
                "block"
            } else {
                "allow"
            },
        ));
    }
    for i in 0..200 {
        b.forward(&row(i, "allow"));
    }
    assert_eq!(a.dropped() + b.dropped(), 0);
    drop(a);
    drop(b);
    ta.join().unwrap();
    tb.join().unwrap();
    let s = stats(&url);
    assert_eq!(s.total.total, 500, "{s:?}");
    assert_eq!(s.instances.len(), 2, "{s:?}");
    let ia = &s.instances[0];
    assert_eq!((ia.instance.as_str(), ia.total), ("replica-a", 300));
    assert!(ia.by_decision.contains(&("block".into(), 30)), "{ia:?}");
    assert_eq!(
        (s.instances[1].instance.as_str(), s.instances[1].total),
        ("replica-b", 200)
    );
    assert!(s.total.by_rule.contains(&("fs.rm_root_or_home".into(), 30)));
    assert_eq!(s.total.eval_us[3], 299);
    assert_eq!(s.total.dropped, 0);
    // A restart of the writer finds the schema there (idempotent create).
    let (a, ta) = start(cfg(&url, "replica-a", 16)).unwrap();
    a.forward(&row(1, "allow"));
    drop(a);
    ta.join().unwrap();
    assert_eq!(stats(&url).total.total, 501);
}

#[test]
fn a_store_away_never_holds_the_sender_and_drops_are_counted() {
    let mut pg = support::Postgres::start();
    let url = pg.url();
    // The schema exists (an earlier run made it); then the database goes away.
    stats(&url);
    pg.stop();
    let (sink, thread) = start(cfg(&url, "replica-a", 64)).unwrap();
    let mut slowest = Duration::ZERO;
    for i in 0..5_000 {
        let t = Instant::now();
        sink.forward(&row(i, "allow"));
        slowest = slowest.max(t.elapsed());
    }
    // The queue (64) and at most one batch (100) in hand; everything else dropped.
    assert!(sink.dropped() >= 5_000 - 64 - 100, "{}", sink.dropped());
    // A send is a try_send: well under this even when both cores are busy elsewhere.
    assert!(
        slowest < Duration::from_millis(500),
        "a send waited {slowest:?} with the store away"
    );
    // The database is back: the writer reconnects on its own, writes what it held, and
    // adds the drops to the store's counter for this instance.
    pg.restart();
    let dropped_before = sink.dropped();
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let s = stats(&url);
        if s.total.total + s.total.dropped == 5_000 {
            let a = &s.instances[0];
            assert_eq!(a.instance, "replica-a");
            assert_eq!(a.dropped, dropped_before, "{s:?}");
            assert_eq!(sink.dropped(), dropped_before);
            break;
        }
        assert!(Instant::now() < until, "not recovered: {s:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // New rows flow again.
    sink.forward(&row(9, "block"));
    drop(sink);
    thread.join().unwrap();
    assert_eq!(
        stats(&url)
            .total
            .by_decision
            .iter()
            .find(|(d, _)| d == "block")
            .map(|x| x.1),
        Some(1)
    );
}

#[test]
fn shutdown_with_the_store_away_is_bounded_and_counted() {
    let mut pg = support::Postgres::start();
    let url = pg.url();
    pg.stop();
    let (sink, thread) = start(cfg(&url, "replica-a", 64)).unwrap();
    for i in 0..10 {
        sink.forward(&row(i, "allow"));
    }
    let (_, dropped) = sink.counters();
    drop(sink);
    let t = Instant::now();
    thread.join().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(dropped.load(std::sync::atomic::Ordering::Relaxed), 10);
}

/// The writer holds a full batch while the database is away, so it reads nothing from the
/// queue: closing the log must still end it within about one timeout, every row counted.
#[test]
fn shutdown_with_a_full_batch_held_and_the_store_away_is_bounded() {
    let mut pg = support::Postgres::start();
    let url = pg.url();
    pg.stop();
    let (sink, thread) = start(cfg(&url, "replica-a", 64)).unwrap();
    for i in 0..150 {
        sink.forward(&row(i, "allow"));
        // Slow enough for the writer to take rows into its batch as they come.
        if i % 20 == 0 {
            std::thread::sleep(Duration::from_millis(60));
        }
    }
    // Time for the batch (100) to fill while the connection attempts fail.
    std::thread::sleep(Duration::from_millis(1500));
    let (_, dropped) = sink.counters();
    drop(sink);
    let t = Instant::now();
    thread.join().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(dropped.load(std::sync::atomic::Ordering::Relaxed), 150);
}

#[test]
fn a_bad_url_is_refused_at_start() {
    assert!(start(cfg("postgres://bulwark@127.0.0.1:notaport/x", "a", 4)).is_err());
}

#[test]
fn the_console_view_shows_every_instance_labelled() {
    let pg = support::Postgres::start();
    let url = pg.url();
    for (inst, n) in [("replica-a", 4u64), ("replica-b", 2)] {
        let (s, t) = start(cfg(&url, inst, 64)).unwrap();
        for i in 0..n {
            s.forward(&row(i, if i == 0 { "block" } else { "allow" }));
        }
        drop(s);
        t.join().unwrap();
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let view = rt.block_on(async {
        let v = bulwark_telemetry_pg::View::spawn(
            url.clone(),
            Duration::from_secs(2),
            Duration::from_millis(100),
        );
        let until = Instant::now() + Duration::from_secs(20);
        while v.feed(0).len() < 6 {
            assert!(Instant::now() < until, "the view never filled");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        v
    });
    let feed = view.feed(0);
    assert_eq!(
        feed.iter().filter(|d| d["instance"] == "replica-a").count(),
        4
    );
    assert_eq!(
        feed.iter().filter(|d| d["instance"] == "replica-b").count(),
        2
    );
    // Paging by row id: nothing after the last one.
    let last = feed.last().unwrap()["seq"].as_u64().unwrap();
    assert!(view.feed(last).is_empty());
    let s = view.summary();
    assert_eq!(s["deployment"], true);
    assert_eq!(s["store_up"], true);
    assert_eq!(s["decisions"]["block"], 2, "{s}");
    assert_eq!(s["instances"]["replica-a"]["allow"], 3, "{s}");
    let text = view.render();
    assert!(
        text.contains(
            "bulwark_deployment_decisions_total{instance=\"replica-b\",decision=\"block\",reason_code=\"RULE_MATCH\"} 1"
        ),
        "{text}"
    );
    assert!(text.contains("bulwark_deployment_store_up 1"), "{text}");
}
