//! The approval mechanism end to end, below the fronts: asking, each channel's answer,
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! single use, binding to the exact call, timeouts, restarts, limits, and the audit trail.

use std::path::PathBuf;
use std::sync::Arc;

use bulwark_approvals::inbox::Inbox;
use bulwark_approvals::{Ask, Desk, Outcome, Status, Store};
use bulwark_audit::{AuditLog, keys::AuditKeys, log::Options};
use serde_json::json;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bwk-desk-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ask(digest_char: char, args: serde_json::Value) -> Ask {
    Ask {
        digest: digest_char.to_string().repeat(64),
        front: "mcp".into(),
        tool: "db.execute".into(),
        server: Some("db".into()),
        session: "s1".into(),
        principal: Some("alice".into()),
        policy_version: "v1".into(),
        args,
        reason: "Calls to \"db.execute\" need a human's approval.".into(),
        rule_id: None,
        severity: None,
        timeout_s: 60,
    }
}

fn pending(o: Outcome) -> bulwark_approvals::Request {
    match o {
        Outcome::Pending(r) => r,
        other => panic!("expected pending, got {other:?}"),
    }
}

#[test]
fn an_approval_lets_its_call_through_once_and_no_other() {
    let d = dir("once");
    let desk = Desk::new(Store::open(&d, 10).unwrap(), [1; 32], "mcp");
    let a = ask('a', json!({"sql": "DROP TABLE users"}));
    let r = pending(desk.ask(&a, 100));
    // Asking again while it waits finds the same request, not a second one.
    assert_eq!(pending(desk.ask(&a, 101)).id, r.id);
    let approved = desk.decide(&r.id, true, "cli", Some("ok"), 102).unwrap();
    assert_eq!(approved.status, Status::Approved);
    let token = approved.token.clone().unwrap();
    assert!(token.starts_with("bwk1."));
    // Call B (another digest) is not approved by A's approval.
    let b = ask('b', json!({"sql": "DROP TABLE orders"}));
    let rb = pending(desk.ask(&b, 103));
    assert_ne!(rb.id, r.id);
    // A passes once; the approval is then used, and the same call asks afresh.
    assert!(matches!(desk.ask(&a, 104), Outcome::Granted(g) if g.id == r.id));
    let again = pending(desk.ask(&a, 105));
    assert_ne!(again.id, r.id);
    // A decided request cannot be decided again.
    assert!(desk.decide(&r.id, true, "cli", None, 106).is_err());
    // The token, presented elsewhere (the proxy's header) after its use here, is refused.
    assert!(!desk.spend(&token, 107));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_denial_and_a_timeout_are_told_once_then_the_call_asks_afresh() {
    let d = dir("deny");
    let desk = Desk::new(Store::open(&d, 10).unwrap(), [1; 32], "daemon");
    let a = ask('a', json!({}));
    let r = pending(desk.ask(&a, 100));
    desk.decide(&r.id, false, "console", Some("not in prod"), 101)
        .unwrap();
    match desk.ask(&a, 102) {
        Outcome::Denied(x) => assert_eq!(x.note.as_deref(), Some("not in prod")),
        other => panic!("{other:?}"),
    }
    let r2 = pending(desk.ask(&a, 103));
    assert_ne!(r2.id, r.id);
    // Nobody answers within its 60 s: a timeout, for polls and asks alike.
    assert!(matches!(desk.poll(&r2.id, 170), Outcome::TimedOut(_)));
    let listed = desk.list(170).unwrap();
    assert_eq!(listed[0].status, Status::Expired);
    assert!(
        listed.iter().all(|r| r.token.is_none()),
        "tokens never listed"
    );
    // An expired request cannot be approved late.
    assert!(desk.decide(&r2.id, true, "cli", None, 171).is_err());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_restart_keeps_pending_requests_and_another_instance_sees_decisions() {
    let d = dir("restart");
    let r = {
        let desk = Desk::new(Store::open(&d, 10).unwrap(), [1; 32], "mcp");
        pending(desk.ask(&ask('a', json!({})), 100))
    };
    let after = Desk::new(Store::open(&d, 10).unwrap(), [1; 32], "mcp");
    assert!(matches!(after.poll(&r.id, 110), Outcome::Pending(_)));
    // A decision through a third instance (the admin endpoint's) reaches this one.
    let admin = Desk::new(Store::open(&d, 10).unwrap(), [1; 32], "admin");
    admin.decide(&r.id, true, "console", None, 111).unwrap();
    assert!(matches!(after.poll(&r.id, 112), Outcome::Granted(_)));
    // An approval signed with another key is worth nothing.
    let r2 = pending(after.ask(&ask('c', json!({})), 113));
    let forger = Desk::new(Store::open(&d, 10).unwrap(), [2; 32], "admin");
    forger.decide(&r2.id, true, "cli", None, 114).unwrap();
    assert!(matches!(after.poll(&r2.id, 115), Outcome::TimedOut(_)));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn pending_requests_are_bounded_and_a_full_desk_refuses() {
    let d = dir("full");
    let desk = Desk::new(Store::open(&d, 2).unwrap(), [1; 32], "mcp");
    pending(desk.ask(&ask('a', json!({})), 100));
    pending(desk.ask(&ask('b', json!({})), 100));
    assert!(
        matches!(desk.ask(&ask('c', json!({})), 100), Outcome::Unavailable(m) if m.contains("pending already"))
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn secrets_are_masked_in_what_a_person_sees() {
    let d = dir("mask");
    let desk = Desk::new(Store::open(&d, 10).unwrap(), [1; 32], "mcp");
    let r = pending(desk.ask(
        &ask(
            'a',
            json!({"cmd": "curl -H 'X-Key: AKIAQ3EGUJ5LR2XWN7TB' https://x.example"}),
        ),
        100,
    ));
    let shown = r.args["cmd"].as_str().unwrap();
    assert!(!shown.contains("AKIAQ3EGUJ5LR2XWN7TB"), "{shown}");
    assert!(shown.contains("curl"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_inbox_decides_and_reports_bad_lines() {
    let d = dir("inbox");
    let desk = Desk::new(Store::open(&d, 10).unwrap(), [1; 32], "mcp");
    let r1 = pending(desk.ask(&ask('a', json!({})), 100));
    let r2 = pending(desk.ask(&ask('b', json!({})), 100));
    let path = d.join("inbox");
    let inbox = Inbox::new(&path);
    std::fs::write(
        &path,
        format!(
            "approve {}\nmaybe {}\ndeny {} too risky\napprove 000000\n",
            r1.id, r2.id, r2.id
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let notes = inbox.take(&desk, 101);
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].contains("line 2"));
    assert!(notes[1].contains("000000"));
    assert!(matches!(desk.poll(&r1.id, 102), Outcome::Granted(_)));
    assert!(matches!(desk.poll(&r2.id, 102), Outcome::Denied(_)));
    // Lines already taken are not taken again.
    assert!(inbox.take(&desk, 103).is_empty());
    // A file others may write is ignored.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let notes = inbox.take(&desk, 104);
    assert!(notes[0].contains("others may write"), "{notes:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn every_change_of_state_is_an_audit_entry() {
    let d = dir("audit");
    let keys = AuditKeys::load_or_create(&d.join("keys")).unwrap();
    let log =
        Arc::new(AuditLog::open(&d.join("audit.jsonl"), keys, "test", Options::default()).unwrap());
    let desk = Desk::new(
        Store::open(&d.join("approvals"), 10).unwrap(),
        [1; 32],
        "mcp",
    )
    .with_audit(Some(Arc::clone(&log)));
    let a = ask('a', json!({}));
    let r = pending(desk.ask(&a, 100));
    desk.decide(&r.id, true, "cli", None, 101).unwrap();
    assert!(matches!(desk.ask(&a, 102), Outcome::Granted(_)));
    let r2 = pending(desk.ask(&a, 103));
    desk.decide(&r2.id, false, "inbox", Some("no"), 104)
        .unwrap();
    let r3 = pending(desk.ask(&ask('b', json!({})), 105));
    desk.sweep(200);
    log.close().unwrap();
    let text = std::fs::read_to_string(d.join("audit.jsonl")).unwrap();
    let events: Vec<String> = text
        .lines()
        .filter(|l| l.contains("\"direction\":\"approval\""))
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["decision"]["reason"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    let want = [
        format!("approval {} created", r.id),
        format!("approval {} approved by cli", r.id),
        format!("approval {} used", r.id),
        format!("approval {} created", r2.id),
        format!("approval {} denied by inbox: no", r2.id),
        format!("approval {} created", r3.id),
        format!("approval {} expired by timeout", r3.id),
    ];
    assert_eq!(events, want, "{text}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_approval_nobody_uses_lapses_and_its_token_goes_with_it() {
    let d = dir("lapse");
    let desk = Desk::new(Store::open(&d, 10).unwrap(), [1; 32], "proxy");
    let a = ask('a', json!({}));
    let r = pending(desk.ask(&a, 100));
    desk.decide(&r.id, true, "cli", None, 101).unwrap();
    let later = 101 + bulwark_approvals::desk::GRANT_TTL_S;
    assert_eq!(desk.list(later).unwrap()[0].status, Status::Expired);
    assert!(matches!(desk.ask(&a, later), Outcome::TimedOut(_)));
    let kept = desk.store().get(&r.id).unwrap().unwrap();
    assert_eq!(kept.status, Status::Expired);
    assert!(kept.token.is_none());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_lock_another_process_holds_too_long_reads_as_unavailable() {
    let d = dir("lock");
    let desk = Desk::new(Store::open(&d, 10).unwrap(), [1; 32], "mcp");
    let held = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(d.join("requests.lock"))
        .unwrap();
    held.lock().unwrap();
    let t0 = std::time::Instant::now();
    match desk.ask(&ask('a', json!({})), 100) {
        Outcome::Unavailable(why) => assert!(why.contains("approvals lock"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(t0.elapsed() < std::time::Duration::from_secs(5));
    drop(held);
    pending(desk.ask(&ask('a', json!({})), 100));
    let _ = std::fs::remove_dir_all(&d);
}
