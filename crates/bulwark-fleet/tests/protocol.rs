//! The device's side of the protocol without a broker: replies bound to requests, forged,
//! replayed, late and mismatched replies dropped and counted; policy updates signed,
//! newer and unseen; kill commands signed and strictly increasing; canary rollback.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use bulwark_fleet::auth::{FleetSigner, Trust, hmac_sign};
use bulwark_fleet::canary::{Canary, CanaryConfig, Rates};
use bulwark_fleet::device::{Device, Dropped, Escalation, Refused};
use bulwark_fleet::wire::{
    Action, Kill, KillCommand, PolicyUpdate, VERSION, VerdictReply, VerdictRequest,
};
use sha2::{Digest, Sha256};

fn fleet() -> FleetSigner {
    FleetSigner::from_seed(&[7; 32])
}

fn device(f: &FleetSigner) -> Device {
    Device::new("edge-1", Trust::fleet_hex(&f.public_hex()).unwrap(), 3)
}

fn ask(d: &mut Device, nonce: &str, tool: &str) -> VerdictRequest {
    let e = Escalation {
        tool,
        capabilities: 8,
        destination: Some("api.example.com"),
        content: &"x".repeat(1000),
        session: serde_json::json!({"id": "s1", "taint": ["private-data"]}),
    };
    d.request(nonce, &e, 1_000, 0).unwrap()
}

fn reply_to(req: &VerdictRequest, action: Action) -> VerdictReply {
    VerdictReply {
        v: VERSION,
        device: req.device.clone(),
        nonce: req.nonce.clone(),
        tool_hash: req.tool_hash.clone(),
        action,
        ttl_min: 30,
        reason: "reviewed".into(),
        sig: None,
    }
}

fn signed(f: &FleetSigner, mut r: VerdictReply) -> VerdictReply {
    r.sig = None;
    r.sig = Some(f.sign("verdict-reply", &r));
    r
}

#[test]
fn a_request_carries_what_the_seed_says_and_no_more_than_the_limits() {
    let f = fleet();
    let mut d = device(&f);
    let req = ask(&mut d, &"a1".repeat(16), &"t".repeat(200));
    assert_eq!(req.tool.len(), 64);
    assert_eq!(req.snippet.len(), 256);
    assert_eq!(req.tool_hash.len(), 64);
    assert_eq!(req.destination.as_deref(), Some("api.example.com"));
    assert_eq!(req.session["taint"][0], "private-data");
}

#[test]
fn only_authenticated_replies_bound_to_a_waiting_request_are_accepted() {
    let f = fleet();
    let mut d = device(&f);
    let req = ask(&mut d, &"a1".repeat(16), "call_api");
    // Unsigned, signed by another key, or altered after signing: forged.
    assert_eq!(
        d.accept(&reply_to(&req, Action::Allow)),
        Err(Dropped::Forged)
    );
    let other = FleetSigner::from_seed(&[8; 32]);
    assert_eq!(
        d.accept(&signed(&other, reply_to(&req, Action::Allow))),
        Err(Dropped::Forged)
    );
    let mut altered = signed(&f, reply_to(&req, Action::Block));
    altered.action = Action::Allow;
    assert_eq!(d.accept(&altered), Err(Dropped::Forged));
    // Signed, but for another device, another nonce, another tool: mismatched.
    let mut r = reply_to(&req, Action::Allow);
    r.device = "edge-2".into();
    assert_eq!(d.accept(&signed(&f, r)), Err(Dropped::Mismatched));
    let mut r = reply_to(&req, Action::Allow);
    r.nonce = "ff".repeat(16);
    assert_eq!(d.accept(&signed(&f, r)), Err(Dropped::Mismatched));
    let mut r = reply_to(&req, Action::Allow);
    r.tool_hash = Sha256::digest(b"other_tool")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(d.accept(&signed(&f, r)), Err(Dropped::Mismatched));
    // The real one, once; again it is a replay.
    let good = signed(&f, reply_to(&req, Action::Block));
    let a = d.accept(&good).unwrap();
    assert_eq!(a.action, Action::Block);
    assert_eq!(a.tool_hash.to_vec(), Sha256::digest(b"call_api").to_vec());
    assert_eq!(d.accept(&good), Err(Dropped::Replayed));
    // Given up on, then answered: late.
    let req2 = ask(&mut d, &"b2".repeat(16), "call_api");
    assert_eq!(d.expire(2_000), vec!["b2".repeat(16)]);
    assert_eq!(
        d.accept(&signed(&f, reply_to(&req2, Action::Allow))),
        Err(Dropped::Late)
    );
    let c = d.counters;
    assert_eq!(
        (c.accepted, c.forged, c.mismatched, c.replayed, c.late),
        (1, 3, 3, 1, 1)
    );
}

#[test]
fn a_device_key_authenticates_replies_but_a_zero_key_never_does() {
    let f = fleet();
    let mut trust = Trust::fleet_hex(&f.public_hex()).unwrap();
    trust.device = Some([5; 32]);
    let mut d = Device::new("edge-1", trust, 1);
    let req = ask(&mut d, &"c3".repeat(16), "call_api");
    let mut r = reply_to(&req, Action::Allow);
    r.sig = Some(hmac_sign(&[5; 32], "verdict-reply", &r));
    assert!(d.accept(&r).is_ok());
    let mut zero = Trust::fleet_hex(&f.public_hex()).unwrap();
    zero.device = Some([0; 32]);
    let mut d = Device::new("edge-1", zero, 1);
    let req = ask(&mut d, &"d4".repeat(16), "call_api");
    let mut r = reply_to(&req, Action::Allow);
    r.sig = Some(hmac_sign(&[0; 32], "verdict-reply", &r));
    assert_eq!(d.accept(&r), Err(Dropped::Forged));
    // A truncated tag is not a tag.
    let mut r = reply_to(&req, Action::Allow);
    let mut s = hmac_sign(&[5; 32], "verdict-reply", &r);
    s.value.truncate(32);
    r.sig = Some(s);
    assert_eq!(d.accept(&r), Err(Dropped::Forged));
}

fn update(f: &FleetSigner, version: u64, seq: u64, text: &str) -> PolicyUpdate {
    let mut u = PolicyUpdate {
        v: VERSION,
        version,
        seq,
        policy: text.into(),
        sha256: Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        sig: None,
    };
    u.sig = Some(f.sign("policy", &u));
    u
}

#[test]
fn policy_updates_must_be_signed_newer_and_unseen() {
    let f = fleet();
    let mut d = device(&f);
    let u = update(&f, 4, 10, "version: 1\n");
    assert!(d.check_policy(&u).is_ok());
    d.applied(4);
    // The same again: a replay; an older version: a rollback.
    assert_eq!(d.check_policy(&u), Err(Refused::Replay(10)));
    assert!(matches!(
        d.check_policy(&update(&f, 3, 11, "version: 1\n")),
        Err(Refused::Rollback { got: 3, current: 4 })
    ));
    // Signed by someone else, or the text changed after signing.
    let other = FleetSigner::from_seed(&[9; 32]);
    assert_eq!(
        d.check_policy(&update(&other, 5, 12, "version: 1\n")),
        Err(Refused::BadSignature)
    );
    let mut swapped = update(&f, 5, 13, "version: 1\n");
    swapped.policy = "version: 1\nlockdown: false\n".into();
    assert!(d.check_policy(&swapped).is_err());
    assert!(d.check_policy(&update(&f, 5, 14, "version: 1\n")).is_ok());
}

fn kill(f: &FleetSigner, seq: u64, command: KillCommand) -> Kill {
    let mut k = Kill {
        v: VERSION,
        seq,
        command,
        reason: "incident 7".into(),
        sig: None,
    };
    k.sig = Some(f.sign("kill", &k));
    k
}

#[test]
fn kill_commands_are_signed_and_strictly_increasing() {
    let f = fleet();
    let mut d = device(&f);
    assert_eq!(
        d.check_kill(&kill(&f, 1, KillCommand::Lockdown)),
        Ok(KillCommand::Lockdown)
    );
    assert!(d.locked());
    // While locked down, policy updates wait.
    assert_eq!(
        d.check_policy(&update(&f, 9, 1, "version: 1\n")),
        Err(Refused::LockedDown)
    );
    assert!(matches!(
        d.check_kill(&kill(&f, 1, KillCommand::Resume)),
        Err(Refused::Stale { .. })
    ));
    let other = FleetSigner::from_seed(&[9; 32]);
    assert_eq!(
        d.check_kill(&kill(&other, 2, KillCommand::Resume)),
        Err(Refused::BadSignature)
    );
    // A policy signature does not pass for a kill command (domain separation).
    let mut k = kill(&f, 3, KillCommand::Resume);
    let u = update(&f, 9, 2, "x");
    k.sig = u.sig.clone();
    assert_eq!(d.check_kill(&k), Err(Refused::BadSignature));
    assert_eq!(
        d.check_kill(&kill(&f, 3, KillCommand::Resume)),
        Ok(KillCommand::Resume)
    );
    assert!(!d.locked());
}

#[test]
fn a_sustained_spike_after_an_update_rolls_it_back_and_a_blip_does_not() {
    let cfg = CanaryConfig {
        minute_ms: 1_000,
        window_ms: 10_000,
        ..CanaryConfig::default()
    };
    // Before: 1 block in 20 (5%).
    let mut before = Rates::default();
    for i in 0..40 {
        before.observe(i % 20 == 0, i * 100, cfg.minute_ms);
    }
    let baseline = before.baseline(4_000, cfg.minute_ms);
    assert!((baseline - 0.05).abs() < 1e-9, "{baseline}");
    // A one-minute blip: no rollback.
    let mut c = Canary::start(cfg, baseline, 10_000);
    let mut t = 10_000;
    let minute = |c: &mut Canary, t: &mut u64, blocks: u64| -> Option<String> {
        let mut out = None;
        for i in 0..10 {
            out = out.or(c.observe(i < blocks, *t));
            *t += 100;
        }
        out.or(c.judge(*t))
    };
    assert!(minute(&mut c, &mut t, 8).is_none());
    assert!(minute(&mut c, &mut t, 0).is_none());
    assert!(minute(&mut c, &mut t, 8).is_none());
    assert!(minute(&mut c, &mut t, 8).is_none());
    // The third spiking minute in a row triggers it.
    let why = minute(&mut c, &mut t, 8).expect("rollback");
    assert!(why.contains("3 consecutive minutes"), "{why}");
}
