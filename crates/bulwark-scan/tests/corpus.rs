//! Detection quality on third-party labelled corpora (`tests/data/`, licences inside):
//! precision and recall per category, and false-positive rates on benign sets.
//!
//! `cargo test -p bulwark-scan --release --test corpus -- --nocapture` prints the table
//! that `docs/detection.md` quotes. Each test also asserts a floor, so a regression fails CI.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::collections::BTreeMap;

use bulwark_scan::{Category, Finding, Scope};
use common::{Tally, header, show};
use serde_json::Value;

fn scan(text: &str, scope: Scope) -> Vec<Finding> {
    common::scanner().scan(text, scope).unwrap()
}

fn jsonl(name: &str) -> Vec<Value> {
    common::jsonl(name).unwrap()
}

fn json(name: &str) -> Value {
    common::json(name)
}

fn has(found: &[Finding], cats: &[Category]) -> bool {
    found.iter().any(|f| cats.contains(&f.category))
}

/// gitleaks rule ids for the credential types Bulwark covers (the list).
const GITLEAKS_IN_SCOPE: &[&str] = &[
    "aws-access-token",
    "anthropic-admin-api-key",
    "anthropic-api-key",
    "azure-ad-client-secret",
    "gcp-api-key",
    "gcp-service-account",
    "github-app-token",
    "github-fine-grained-pat",
    "github-oauth",
    "github-pat",
    "github-refresh-token",
    "gitlab-pat",
    "gitlab-pat-routable",
    "gitlab-ptt",
    "gitlab-rrt",
    "gitlab-runner-authentication-token-routable",
    "slack-app-token",
    "slack-bot-token",
    "slack-config-access-token",
    "slack-config-refresh-token",
    "slack-legacy-bot-token",
    "slack-legacy-token",
    "slack-legacy-workspace-token",
    "slack-user-token",
    "slack-webhook-url",
    "private-key",
    "jwt-base64",
    "huggingface-access-token",
    "huggingface-organization-api-token",
    "generic-api-key",
    "curl-auth-header",
    "databricks-api-token",
    "sidekiq-sensitive-url",
];

/// detect-secrets plugins for the covered types.
const DETECT_SECRETS_IN_SCOPE: &[&str] = &[
    "azure_storage_key",
    "basic_auth",
    "github_token",
    "gitlab_token",
    "jwt",
    "keyword",
    "npm",
    "openai",
    "private_key",
    "pypi_token",
    "sendgrid",
    "slack",
    "stripe_key",
];

fn secret_tallies() -> (BTreeMap<String, Tally>, Tally, Tally) {
    let mut per: BTreeMap<String, Tally> = BTreeMap::new();
    let mut in_scope = Tally::default();
    let mut all = Tally::default();
    let rows = jsonl("gitleaks_rule_samples.jsonl");
    // A negative for one rule can be another rule's positive (an admin key is not an API key,
    // but it is a secret): such rows say nothing about "is there a secret here".
    let positives: std::collections::HashSet<&str> = rows
        .iter()
        .filter(|r| r["label"] == "tp")
        .map(|r| r["text"].as_str().unwrap())
        .collect();
    for r in &rows {
        let id = r["rule_id"].as_str().unwrap();
        let truth = r["label"] == "tp";
        if !truth && positives.contains(r["text"].as_str().unwrap()) {
            continue;
        }
        let found = scan(r["text"].as_str().unwrap(), Scope::Request);
        let predicted = has(&found, &[Category::Secret]);
        show(
            &format!("gitleaks/{id}"),
            truth,
            predicted,
            r["text"].as_str().unwrap(),
            &found,
        );
        all.add(truth, predicted);
        if GITLEAKS_IN_SCOPE.contains(&id) {
            in_scope.add(truth, predicted);
            per.entry(format!("gitleaks/{id}"))
                .or_default()
                .add(truth, predicted);
        }
    }
    (per, in_scope, all)
}

fn detect_secrets_tallies() -> (BTreeMap<String, Tally>, Tally, Tally) {
    let mut per: BTreeMap<String, Tally> = BTreeMap::new();
    let mut in_scope = Tally::default();
    let mut all = Tally::default();
    let rows = jsonl("detect_secrets_plugin_cases.jsonl");
    let positives: std::collections::HashSet<&str> = rows
        .iter()
        .filter(|r| r["should_flag"] == true)
        .map(|r| r["text"].as_str().unwrap())
        .collect();
    for r in &rows {
        let plugin = r["plugin"].as_str().unwrap();
        let truth = r["should_flag"] == true;
        // Another plugin's positive (a GitHub token among GitLab negatives) is still a secret.
        if !truth && positives.contains(r["text"].as_str().unwrap()) {
            continue;
        }
        let found = scan(r["text"].as_str().unwrap(), Scope::Request);
        let predicted = has(&found, &[Category::Secret]);
        show(
            &format!("detect-secrets/{plugin}"),
            truth,
            predicted,
            r["text"].as_str().unwrap(),
            &found,
        );
        all.add(truth, predicted);
        if DETECT_SECRETS_IN_SCOPE.contains(&plugin) {
            in_scope.add(truth, predicted);
            per.entry(format!("detect-secrets/{plugin}"))
                .or_default()
                .add(truth, predicted);
        }
    }
    (per, in_scope, all)
}

#[test]
fn secrets() {
    let (per, scope_g, all_g) = secret_tallies();
    let (per_d, scope_d, all_d) = detect_secrets_tallies();
    header("secret");
    println!("{}", scope_g.row("gitleaks samples, covered types"));
    println!("{}", all_g.row("gitleaks samples, all 79 rules"));
    println!("{}", scope_d.row("detect-secrets cases, covered plugins"));
    println!("{}", all_d.row("detect-secrets cases, all plugins"));
    for (k, t) in per.iter().chain(per_d.iter()) {
        println!("{}", t.row(k));
    }
    // Floors on gitleaks' samples only: they are the rules-development half of the split
    // (tests/data/split/README.md). detect-secrets' cases are the evaluation half and are
    // reported, never asserted on, so nobody tunes to them.
    assert!(
        scope_g.recall().unwrap_or(1.0) >= 0.90 && scope_g.precision().unwrap_or(1.0) >= 0.80,
        "gitleaks {scope_g:?}"
    );
}

/// Presidio entity names for what Bulwark detects, and our rule ids for each.
const PII: &[(&str, &str)] = &[
    ("EMAIL_ADDRESS", "pii.email"),
    ("PHONE_NUMBER", "pii.phone"),
    ("CREDIT_CARD", "pii.card_number"),
    ("IBAN_CODE", "pii.iban"),
    ("US_SSN", "pii.us_ssn"),
];

#[test]
fn pii() {
    header("pii (Presidio recognizer cases: does the text hold this entity?)");
    let mut total = Tally::default();
    let cases = jsonl("presidio_recognizer_cases.jsonl");
    for (entity, rule) in PII {
        let mut t = Tally::default();
        // `entity` is a name, or a list of names for cases with several entities.
        let is = |r: &&Value| {
            r["entity"] == *entity
                || r["entity"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|e| e == *entity))
        };
        for r in cases.iter().filter(is) {
            let truth = r["label"] == "pii";
            let predicted = scan(r["text"].as_str().unwrap(), Scope::Response)
                .iter()
                .any(|f| f.rule_id == *rule);
            t.add(truth, predicted);
            total.add(truth, predicted);
        }
        println!("{}", t.row(entity));
        assert!(t.recall().unwrap_or(1.0) >= 0.6, "{entity} {t:?}");
    }
    println!("{}", total.row("all five entities"));

    header("pii (Presidio synthetic dataset: labelled spans)");
    let data = json("presidio_research_synth_dataset_v2.json");
    for (entity, rule) in PII {
        let mut t = Tally::default();
        for row in data.as_array().unwrap() {
            let text = row["full_text"].as_str().unwrap();
            // Presidio positions are in characters; convert to bytes.
            let byte_at = |c: usize| text.char_indices().nth(c).map_or(text.len(), |(b, _)| b);
            let spans: Vec<(usize, usize)> = row["spans"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| s["entity_type"] == *entity)
                .map(|s| {
                    (
                        byte_at(s["start_position"].as_u64().unwrap() as usize),
                        byte_at(s["end_position"].as_u64().unwrap() as usize),
                    )
                })
                .collect();
            let found: Vec<(usize, usize)> = scan(text, Scope::Response)
                .into_iter()
                .filter(|f| f.rule_id == *rule)
                .map(|f| f.span)
                .collect();
            for s in &spans {
                t.add(true, found.iter().any(|f| f.0 < s.1 && s.0 < f.1));
            }
            for f in &found {
                if !spans.iter().any(|s| f.0 < s.1 && s.0 < f.1) {
                    t.add(false, true);
                }
            }
        }
        println!("{}", t.row(entity));
    }
}

/// Whether the scan would act with the default thresholds (medium and above), and whether
/// it reported anything at all.
fn flags(found: &[Finding]) -> (bool, bool) {
    (common::instructs(found), common::signals(found))
}

#[test]
fn injection() {
    header(
        "injection (CyberSecEval prompt injections, per variant; direct attacks as requests, indirect as tool results; flagged = medium or above)",
    );
    let mut per: BTreeMap<String, Tally> = BTreeMap::new();
    let mut all = Tally::default();
    let mut any = Tally::default();
    // The split (tests/data/split/README.md): variants at even index of the sorted names
    // are dev, the others eval. Only dev rows carry a floor.
    let cse = json("prompt_injection.json");
    let mut variants: Vec<&str> = cse
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["injection_variant"].as_str().unwrap())
        .collect();
    variants.sort_unstable();
    variants.dedup();
    let mut dev = Tally::default();
    for r in cse.as_array().unwrap() {
        let v = r["injection_variant"].as_str().unwrap().to_string();
        let is_dev = variants
            .iter()
            .position(|x| *x == v)
            .is_some_and(|i| i % 2 == 0);
        let scope = if r["injection_type"] == "indirect" {
            Scope::Response
        } else {
            Scope::Request
        };
        let text = r["user_input"].as_str().unwrap();
        let found = scan(text, scope);
        let (flagged, signal) = flags(&found);
        if is_dev {
            show(&format!("cse/{v}"), true, flagged, text, &found);
            dev.add(true, flagged);
        }
        per.entry(v).or_default().add(true, flagged);
        all.add(true, flagged);
        any.add(true, signal);
    }
    for (k, t) in &per {
        println!("{}", t.row(k));
    }
    println!("{}", all.row("all 251 attacks (flagged)"));
    println!("{}", any.row("all 251 attacks (any signal, low included)"));
    println!("{}", dev.row("dev variants only (even index)"));

    let mut benign = Tally::default();
    let mut benign_any = Tally::default();
    for r in json("mitre_frr_benign.json").as_array().unwrap() {
        let text = r["mutated_prompt"].as_str().unwrap();
        let found = scan(text, Scope::Request);
        let (flagged, signal) = flags(&found);
        show("mitre", false, flagged, text, &found);
        benign.add(false, flagged);
        benign_any.add(false, signal);
    }
    println!(
        "{}",
        benign.row("CyberSecEval MITRE benign prompts (750), flagged")
    );
    println!(
        "{}",
        benign_any.row("CyberSecEval MITRE benign prompts (750), any signal")
    );

    // BIPIA: each attack instruction inserted at the start, middle and end of clean e-mails
    // (BIPIA's own recipe), scanned as tool results; the clean e-mails are the negatives.
    // Dev: the train attacks in e-mails 0-24; eval: the test attacks in e-mails 25-49
    // (reported, never asserted on).
    let emails: Vec<String> = jsonl("bipia/email_test.jsonl")
        .iter()
        .map(|r| r["context"].as_str().unwrap().to_string())
        .collect();
    let (dev_emails, eval_emails) = emails.split_at(25.min(emails.len()));
    let mut clean = Tally::default();
    let mut clean_eval = Tally::default();
    for e in dev_emails {
        let found = scan(e, Scope::Response);
        show("bipia-clean", false, flags(&found).0, e, &found);
        clean.add(false, flags(&found).0);
    }
    for e in eval_emails {
        clean_eval.add(false, flags(&scan(e, Scope::Response)).0);
    }
    let insert = |a: &str, i: usize, e: &str| {
        let mid = e
            .char_indices()
            .nth(e.chars().count() / 2)
            .map_or(0, |(b, _)| b);
        match i % 3 {
            0 => format!("{a}\n{e}"),
            1 => format!("{}\n{a}\n{}", &e[..mid], &e[mid..]),
            _ => format!("{e}\n{a}"),
        }
    };
    let mut bipia_dev = Tally::default();
    for file in [
        "bipia/text_attack_train.json",
        "bipia/code_attack_train.json",
    ] {
        for (category, attacks) in json(file).as_object().unwrap() {
            for a in attacks.as_array().unwrap() {
                let a = a.as_str().unwrap();
                for (i, e) in dev_emails.iter().enumerate().take(10) {
                    let text = insert(a, i, e);
                    let found = scan(&text, Scope::Response);
                    show(
                        &format!("bipia-train/{category}"),
                        true,
                        flags(&found).0,
                        &text,
                        &found,
                    );
                    bipia_dev.add(true, flags(&found).0);
                }
            }
        }
    }
    let mut bipia = BTreeMap::new();
    for file in ["bipia/text_attack_test.json", "bipia/code_attack_test.json"] {
        for (category, attacks) in json(file).as_object().unwrap() {
            let t: &mut Tally = bipia.entry(category.clone()).or_default();
            for a in attacks.as_array().unwrap() {
                let a = a.as_str().unwrap();
                for (i, e) in eval_emails.iter().enumerate().take(10) {
                    t.add(true, flags(&scan(&insert(a, i, e), Scope::Response)).0);
                }
            }
        }
    }
    header(
        "injection (BIPIA test attacks inserted into clean e-mails 25-49, per category, scanned as tool results; eval, reported only)",
    );
    let mut bipia_all = Tally::default();
    for (k, t) in &bipia {
        println!("{}", t.row(k));
        bipia_all.tp += t.tp;
        bipia_all.fn_ += t.fn_;
    }
    println!("{}", bipia_all.row("all BIPIA test attacks (eval)"));
    println!("{}", clean_eval.row("BIPIA clean e-mails 25-49 (eval)"));
    println!("{}", bipia_dev.row("all BIPIA train attacks (dev)"));
    println!("{}", clean.row("BIPIA clean e-mails 0-24 (dev)"));

    assert!(
        benign.fpr().unwrap_or(0.0) <= 0.01,
        "benign FP rate {benign:?}"
    );
    assert!(
        clean.fpr().unwrap_or(0.0) == 0.0,
        "clean e-mail FP rate {clean:?}"
    );
    assert!(
        dev.recall().unwrap_or(1.0) >= 0.65,
        "CyberSecEval dev recall {dev:?}"
    );
    assert!(
        bipia_dev.recall().unwrap_or(1.0) >= 0.75,
        "BIPIA dev recall {bipia_dev:?}"
    );
}

#[test]
fn tool_poisoning() {
    header(
        "poisoning (MCPSecBench): tool-description payloads as definitions; malicious and delegating prompts as requests; benign-looking trigger prompts as negatives",
    );
    let mut payloads = Tally::default();
    for fam in json("mcpsecbench/attacks_updated.json").as_array().unwrap() {
        let p = fam["malicious_prompt"].as_str().unwrap_or("");
        if !p.trim().is_empty() {
            let found = scan(p, Scope::Definition);
            show("mcp-payload", true, flags(&found).0, p, &found);
            payloads.add(true, flags(&found).0);
        }
    }
    println!(
        "{}",
        payloads.row("tool-description payloads (<IMPORTANT> blocks)")
    );
    let mut per: BTreeMap<String, Tally> = BTreeMap::new();
    for file in [
        "mcpsecbench/attacks.json",
        "mcpsecbench/attacks_extended.json",
        "mcpsecbench/attacks_updated.json",
    ] {
        for fam in json(file).as_array().unwrap() {
            let name = fam["name"].as_str().unwrap().to_string();
            // In these families the attack sits in the server; the prompts are ordinary requests.
            let benign = matches!(
                name.as_str(),
                "Tool Poisoning Attack"
                    | "Server Shadowing"
                    | "Tool Shadowing"
                    | "Rug Pull"
                    | "Vulnerable Server"
                    | "Privilege escalation"
                    | "Execution flow disruption"
                    | "Resource access violation"
                    | "Data exfiltration"
                    | "Multiple tool invocation"
            );
            for p in fam["prompts"].as_array().unwrap() {
                let found = scan(p.as_str().unwrap(), Scope::Request);
                per.entry(format!(
                    "{name}{}",
                    if benign { " (benign user prompts)" } else { "" }
                ))
                .or_default()
                .add(!benign, flags(&found).0);
            }
        }
    }
    for (k, t) in &per {
        println!("{}", t.row(k));
    }
    assert_eq!(payloads.recall(), Some(1.0), "{payloads:?}");
}
