//! Every kind of tampering is caught, and the first bad line is named — with the HMAC key,
//! and with only the public key.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::BufReader;
use std::path::PathBuf;

use bulwark_audit::{AuditKeys, AuditLog, Entry, Options, VerifyKey, verify};
use bulwark_engine::{Call, Engine, Now, State};

fn keys() -> AuditKeys {
    AuditKeys::from_bytes([3; 32], [4; 32])
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bulwark-audit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("audit.jsonl")
}

/// A closed log: start, 12 decisions with a checkpoint every 4 records, closing checkpoint.
fn sample(name: &str) -> (PathBuf, Vec<String>) {
    let path = scratch(name);
    let opts = Options {
        checkpoint_every: 4,
        ..Options::default()
    };
    let log = AuditLog::open(&path, keys(), "check", opts).unwrap();
    let engine = Engine::new(bulwark_policy::Policy::builtin().unwrap());
    let mut state = State::new(engine.policy());
    for i in 0..12 {
        let cmd = if i % 3 == 0 { "rm -rf /" } else { "ls" };
        let call = Call::request("s1", "bash", serde_json::json!({"command": cmd}));
        let d = engine.evaluate(&call, &mut state, Now::at(i));
        log.record(&Entry::for_call("check", &call, &d)).unwrap();
        // Allows wait for a group commit; sealing them as they come keeps the checkpoints
        // where `checkpoint_every` puts them, whatever the policy decides.
        log.tick();
    }
    log.close().unwrap();
    let lines = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    (path, lines)
}

fn check(
    lines: &[String],
    key: &VerifyKey,
) -> Result<bulwark_audit::Report, bulwark_audit::Failure> {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    verify(BufReader::new(text.as_bytes()), key)
}

fn hmac_key() -> VerifyKey {
    VerifyKey::hmac(keys().hmac_key(), Some(keys().public()))
}

fn public_key() -> VerifyKey {
    VerifyKey::Public(keys().public())
}

#[test]
fn an_untouched_log_verifies_both_ways() {
    let (_, lines) = sample("clean");
    for key in [hmac_key(), public_key()] {
        let r = check(&lines, &key).unwrap();
        assert_eq!(r.decisions, 12);
        assert!(r.closed);
        assert_eq!(r.unsealed, 0);
        assert!(r.checkpoints >= 4, "{r:?}");
    }
    // Blocks and allows are both there; no argument is stored, only its digest.
    let text = lines.join("\n");
    assert!(text.contains("\"decision\":\"block\""));
    assert!(!text.contains("rm -rf"), "arguments are hashed, not stored");
}

#[test]
fn an_edited_record_is_named() {
    let (_, mut lines) = sample("edit");
    // Line 3 is a decision: turn its block into an allow.
    let i = lines
        .iter()
        .position(|l| l.contains("\"decision\":\"block\""))
        .unwrap();
    lines[i] = lines[i].replace("\"decision\":\"block\"", "\"decision\":\"allow\"");
    let f = check(&lines, &hmac_key()).unwrap_err();
    assert_eq!(f.line, i as u64 + 1, "{f}");
    assert!(f.why.contains("MAC"), "{f}");
    // With only the public key, the next checkpoint no longer matches what it covers.
    let f = check(&lines, &public_key()).unwrap_err();
    assert!(f.why.contains("checkpoint"), "{f}");
    assert!(
        f.why.contains(&format!("{}", i + 1)) || f.line > i as u64,
        "{f}"
    );
}

#[test]
fn dropped_inserted_and_reordered_records_are_named() {
    let (_, lines) = sample("order");
    for key in [hmac_key(), public_key()] {
        let mut dropped = lines.clone();
        dropped.remove(5);
        assert_eq!(check(&dropped, &key).unwrap_err().line, 6);

        let mut inserted = lines.clone();
        inserted.insert(5, lines[2].clone());
        assert_eq!(check(&inserted, &key).unwrap_err().line, 6);

        let mut swapped = lines.clone();
        swapped.swap(6, 7);
        let f = check(&swapped, &key).unwrap_err();
        assert_eq!(f.line, 7, "{f}");
        assert!(f.why.contains("sequence"), "{f}");
    }
}

#[test]
fn a_truncated_log_is_caught() {
    let (_, lines) = sample("truncate");
    // Cut inside the last line.
    let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    text.truncate(text.len() - 20);
    let f = verify(BufReader::new(text.as_bytes()), &hmac_key()).unwrap_err();
    assert_eq!(f.line, lines.len() as u64);
    assert!(f.why.contains("incomplete"), "{f}");
    // Whole records cut from the end: the chain holds, but the log is not closed.
    let cut = &lines[..lines.len() - 3];
    for key in [hmac_key(), public_key()] {
        let r = check(cut, &key).unwrap();
        assert!(!r.closed);
        assert!(r.unsealed > 0);
    }
}

#[test]
fn a_forged_signature_or_another_key_fails() {
    let (_, lines) = sample("forge");
    let other = AuditKeys::from_bytes([3; 32], [9; 32]);
    // Another public key: the log names the key it was started with.
    let f = check(&lines, &VerifyKey::Public(other.public())).unwrap_err();
    assert_eq!(f.line, 1, "{f}");
    assert!(f.why.contains("key id"), "{f}");
    // A checkpoint whose signature was tampered with.
    let mut bad = lines.clone();
    let i = bad
        .iter()
        .position(|l| l.contains("\"type\":\"checkpoint\""))
        .unwrap();
    let sig_at = bad[i].find("\"sig\":\"").unwrap() + 7;
    let flipped = if &bad[i][sig_at..sig_at + 1] == "0" {
        "1"
    } else {
        "0"
    };
    bad[i].replace_range(sig_at..sig_at + 1, flipped);
    let f = check(&bad, &VerifyKey::Public(keys().public())).unwrap_err();
    assert_eq!(f.line, i as u64 + 1, "{f}");
    assert!(f.why.contains("signature"), "{f}");
    let f = check(&lines, &VerifyKey::hmac([5; 32], None)).unwrap_err();
    assert_eq!(f.line, 1);
}

#[test]
fn a_crashed_writer_is_recovered_and_the_chain_goes_on() {
    let path = scratch("recover");
    let log = AuditLog::open(&path, keys(), "daemon", Options::default()).unwrap();
    let d = bulwark_engine::Decision::invalid_input("x", "v");
    let e = Entry::bare("daemon", "s", &d);
    log.record(&e).unwrap();
    // The process dies: no closing checkpoint, and half a line at the end.
    drop(log);
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"{\"type\":\"decision\",\"se")
        .unwrap();
    let log = AuditLog::open(&path, keys(), "daemon", Options::default()).unwrap();
    log.record(&e).unwrap();
    log.close().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"type\":\"recover\""), "{text}");
    assert!(text.contains("\"dropped_bytes\":22"), "{text}");
    let r = verify(BufReader::new(text.as_bytes()), &hmac_key()).unwrap();
    assert!(r.closed);
    assert_eq!(r.decisions, 2);
    // A log edited while nobody was writing is refused, not extended.
    let edited = text.replacen("\"front\":\"daemon\"", "\"front\":\"other\"", 1);
    std::fs::write(&path, edited).unwrap();
    assert!(AuditLog::open(&path, keys(), "daemon", Options::default()).is_err());
}

#[test]
fn a_rotation_hands_the_chain_to_the_new_key_and_cannot_be_forged() {
    let (path, _) = sample("rotate");
    let old = keys();
    let new = AuditKeys::from_bytes([7; 32], [8; 32]);
    // Opening with new keys and the old one retired records the rotation, signed by the old.
    let log = AuditLog::open_with_retired(
        &path,
        new.clone(),
        std::slice::from_ref(&old),
        "check",
        Options::default(),
    )
    .unwrap();
    let d = bulwark_engine::Decision::invalid_input("x", "v");
    log.record(&Entry::bare("check", "s2", &d)).unwrap();
    log.close().unwrap();
    let lines: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert!(lines.iter().any(|l| l.contains("\"type\":\"rotate\"")));
    // Both keys in the ring; or only the public key the log was started with.
    let ring = VerifyKey::Hmac(vec![
        bulwark_audit::verify::RingKey {
            hmac: new.hmac_key(),
            public: Some(new.public()),
        },
        bulwark_audit::verify::RingKey {
            hmac: old.hmac_key(),
            public: Some(old.public()),
        },
    ]);
    let r = check(&lines, &ring).unwrap();
    assert!(r.closed);
    assert_eq!(r.key_id.as_deref(), Some(new.key_id().as_str()));
    let r = check(&lines, &VerifyKey::Public(old.public())).unwrap();
    assert_eq!(r.decisions, 13);
    // The new public key alone did not start the log.
    assert_eq!(
        check(&lines, &VerifyKey::Public(new.public()))
            .unwrap_err()
            .line,
        1
    );
    // Without the new HMAC key the part after the rotation cannot be checked.
    let f = check(&lines, &VerifyKey::hmac(old.hmac_key(), Some(old.public()))).unwrap_err();
    assert!(f.why.contains("not in the keyring"), "{f}");
    // A rotation to an attacker's key: the old key's signature no longer matches.
    let attacker = AuditKeys::from_bytes([9; 32], [9; 32]);
    let i = lines
        .iter()
        .position(|l| l.contains("\"type\":\"rotate\""))
        .unwrap();
    let mut forged = lines.clone();
    forged[i] = forged[i].replace(
        &bulwark_audit::keys::hex(&new.public().to_bytes()),
        &bulwark_audit::keys::hex(&attacker.public().to_bytes()),
    );
    let f = check(&forged, &VerifyKey::Public(old.public())).unwrap_err();
    assert_eq!(f.line, i as u64 + 1, "{f}");
}

#[test]
fn records_cut_at_a_closing_checkpoint_are_noticed_through_the_head() {
    let path = scratch("head");
    let head = path.with_file_name("head.json");
    let opts = || Options {
        head: Some(head.clone()),
        ..Options::default()
    };
    let d = bulwark_engine::Decision::invalid_input("x", "v");
    let entry = Entry::bare("daemon", "s", &d);
    // Two runs, each closed: the file ends at a final checkpoint twice.
    for _ in 0..2 {
        let log = AuditLog::open(&path, keys(), "daemon", opts()).unwrap();
        log.record(&entry).unwrap();
        log.close().unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    // Cut right after the first run's closing checkpoint: the rest still verifies…
    let first_final = text.find("\"final\":true").unwrap();
    let cut = text[first_final..].find('\n').unwrap() + first_final + 1;
    std::fs::write(&path, &text[..cut]).unwrap();
    let r = verify(BufReader::new(&text.as_bytes()[..cut]), &hmac_key()).unwrap();
    assert!(r.closed);
    // …but the head says the log went further, and the next writer refuses it.
    let Err(e) = AuditLog::open(&path, keys(), "daemon", opts()) else {
        panic!("a shortened log was accepted")
    };
    assert!(e.to_string().contains("cut off the end"), "{e}");
    // Another genuine log under the same keys, longer, put in its place: refused too.
    let other = path.with_file_name("other.jsonl");
    let o = AuditLog::open(&other, keys(), "check", Options::default()).unwrap();
    for _ in 0..5 {
        o.record(&entry).unwrap();
    }
    o.close().unwrap();
    drop(o);
    std::fs::copy(&other, &path).unwrap();
    let Err(e) = AuditLog::open(&path, keys(), "daemon", opts()) else {
        panic!("a substituted log was accepted")
    };
    assert!(e.to_string().contains("another log"), "{e}");
    // A forged head (without the key) is refused too.
    std::fs::write(&path, &text).unwrap();
    let h = std::fs::read_to_string(&head).unwrap();
    std::fs::write(&head, h.replace("\"seq\":", "\"seq\":1")).unwrap();
    assert!(AuditLog::open(&path, keys(), "daemon", opts()).is_err());
}

#[test]
fn one_writer_per_log() {
    let path = scratch("busy");
    let a = AuditLog::open(&path, keys(), "daemon", Options::default()).unwrap();
    let Err(e) = AuditLog::open(&path, keys(), "check", Options::default()) else {
        panic!("a second writer was let in")
    };
    assert!(matches!(e, bulwark_audit::AuditError::Busy(_)), "{e}");
    a.close().unwrap();
    drop(a);
    assert!(AuditLog::open(&path, keys(), "check", Options::default()).is_ok());
}
