//! The Capability Ratchet's own test vectors (NVIDIA/OpenShell-Community, Apache-2.0;
//! tests/fixtures/README-ratchet.md says how they were extracted), run against Bulwark.
//!
//! Each vector is translated into Bulwark's terms (`network:egress` is `net.egress`,
//! `has-private-data` is `private-data`, the Ratchet's policy becomes a Bulwark policy)
//! and must come out the way the Ratchet's test says — except where Bulwark departs on
//! purpose; each departure is listed in `DEPARTURES` with its reason, and a departure that
//! stops happening fails the test too, so the list stays true.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;

use bulwark_engine::{CapSet, Capability, Policy, Taint, TaintSet};
use bulwark_gate::{Clock, Gate};
use bulwark_llm::Api;
use bulwark_llm::judge::{Context, Judge, Ruling};
use serde_json::{Value, json};

/// The Ratchet's sample policy, as a Bulwark policy.
const SAMPLE_POLICY: &str = r#"
version: 1
name: ratchet-sample
tools:
  outlook-cli: {taint: [private-data], capabilities: [fs.read]}
  calendar-cli: {taint: [private-data], capabilities: [fs.read]}
  confluence-cli: {taint: [untrusted-input], capabilities: [net.egress]}
destinations:
  approved: [api.github.com, "*.nvidia.com"]
"#;

/// Vectors Bulwark answers differently on purpose, by test name, with why.
const DEPARTURES: &[(&str, &str)] = &[
    (
        "test_bash_tool_with_unknown_command",
        "the Ratchet taints a session with both labels after any command it cannot name; \
         Bulwark classifies an unknown binary as exec.arbitrary (revoked once both labels \
         are held) but does not taint from its output, which would taint nearly every \
         session that runs a project script",
    ),
    (
        "test_pipeline_worst_case",
        "the Ratchet counts every curl, wget and nc as irreversible; Bulwark counts sending \
         as net.egress, which private data revokes, and keeps exec.irreversible for what \
         destroys or publishes. `cat file | curl` after reading a web page is not refused \
         by the matrix; piping a sensitive file out is, by the secret-read rules",
    ),
    (
        "test_python_network_code",
        "the Ratchet calls `python3 -c 'import requests'` irreversible; Bulwark reads it as \
         exec.arbitrary (an interpreter), not exec.irreversible: an import sends nothing",
    ),
];

fn departs(source: &str) -> Option<&'static str> {
    DEPARTURES
        .iter()
        .find(|(name, _)| source.ends_with(&format!(":{name}")))
        .map(|(_, why)| *why)
}

fn vectors(kind: &str) -> Vec<Value> {
    let text = include_str!("fixtures/ratchet_vectors.jsonl");
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["kind"] == kind)
        .collect()
}

fn judge(policy: &str, taint: TaintSet) -> Judge {
    let gate = Gate::new(
        bulwark_policy::load_str("ratchet.yaml", policy).unwrap(),
        "proxy",
    )
    .with_clock(Clock::fixed(1_000, 1_000));
    let mut j = Judge::new(Arc::new(gate), Context::default());
    j.inherit(taint);
    j
}

fn taint_of(names: &Value) -> TaintSet {
    names
        .as_array()
        .unwrap()
        .iter()
        .map(|n| match n.as_str().unwrap() {
            "has-private-data" => Taint::PrivateData,
            "has-untrusted-input" => Taint::UntrustedInput,
            other => panic!("unknown taint {other}"),
        })
        .collect()
}

fn caps_of(names: &Value) -> CapSet {
    let mut set = CapSet::EMPTY;
    for n in names.as_array().unwrap() {
        set.insert(match n.as_str().unwrap() {
            "network:egress" => Capability::NetEgress,
            "network:egress:approved" => Capability::NetEgressApproved,
            "exec:arbitrary" => Capability::ExecArbitrary,
            "exec:irreversible" => Capability::ExecIrreversible,
            other => panic!("unknown capability {other}"),
        });
    }
    set
}

/// Checks one vector's outcome against its expectation, honouring departures.
fn check(source: &str, agrees: bool, detail: String, tally: &mut (usize, usize)) {
    match (departs(source), agrees) {
        (None, true) => tally.0 += 1,
        (Some(_), false) => tally.1 += 1,
        (None, false) => panic!("{source}: {detail}"),
        (Some(why), true) => panic!("{source} now agrees; drop it from DEPARTURES ({why})"),
    }
}

#[test]
fn the_revocation_matrix_is_the_ratchets() {
    let policy = Policy::builtin().unwrap();
    let mut tally = (0, 0);
    for v in vectors("matrix") {
        let mut got = policy.taint.forbidden(taint_of(&v["taint"]));
        // The Ratchet has no capability for sending a message; Bulwark's `msg.send` (revoked
        // with what cannot be undone, issue 26) is outside the vocabulary it tests.
        got.remove(Capability::MsgSend);
        let want = caps_of(&v["expect"]);
        let absent = v
            .get("asserted_absent")
            .map(caps_of)
            .unwrap_or(CapSet::EMPTY);
        let src = v["source"].as_str().unwrap();
        check(
            src,
            got == want && got.intersection(absent).is_empty(),
            format!("forbidden {:?}, want {:?}", got.names(), want.names()),
            &mut tally,
        );
    }
    assert_eq!(tally, (4, 0));
}

#[test]
fn taint_from_tool_results_follows_the_ratchet() {
    let mut tally = (0, 0);
    for v in vectors("taint") {
        let body = json!({"messages": v["messages"]});
        let results = Api::Chat.results(&body).unwrap();
        let mut j = judge(SAMPLE_POLICY, TaintSet::NONE);
        let got = j.absorb(&results);
        let want = taint_of(&v["expect"]);
        let agrees = if v["assert_mode"] == "equals" {
            got == want
        } else {
            got.union(want) == got
        };
        let src = v["source"].as_str().unwrap();
        check(
            src,
            agrees,
            format!("taint {got:?}, want {want:?}"),
            &mut tally,
        );
    }
    assert_eq!(tally, (5, 1), "agreed, departed");
}

#[test]
fn irreversible_commands_are_refused_after_untrusted_input() {
    let mut tally = (0, 0);
    for v in vectors("reversibility") {
        let ast = &v["ast"];
        let command = match ast["type"].as_str().unwrap() {
            "pipeline" => ast["commands"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| words(&c["words"]))
                .collect::<Vec<_>>()
                .join(" | "),
            _ => words(&ast["words"]),
        };
        let untrusted: TaintSet = [Taint::UntrustedInput].into_iter().collect();
        let mut j = judge(SAMPLE_POLICY, untrusted);
        let ruling = j.judge("c1", "bash", &json!({"command": command}));
        let blocked = matches!(ruling, Ruling::Block(_));
        let agrees = match v["expect"].as_str().unwrap() {
            "irreversible" => blocked,
            "reversible" => !blocked,
            // The Ratchet cannot say; Bulwark must not release what it cannot read as
            // safe either, but an unknown binary is not irreversible by itself.
            _ => true,
        };
        let src = v["source"].as_str().unwrap();
        check(
            src,
            agrees,
            format!("`{command}` blocked={blocked}"),
            &mut tally,
        );
    }
    assert_eq!(tally, (7, 2), "agreed, departed");
}

fn words(v: &Value) -> String {
    v.as_array()
        .unwrap()
        .iter()
        .map(|w| {
            let w = w.as_str().unwrap();
            if w.contains(' ') {
                format!("'{w}'")
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn approved_endpoints_stay_open_after_private_data() {
    let mut tally = (0, 0);
    for v in vectors("policy")
        .into_iter()
        .filter(|v| v["op"] == "is_endpoint_approved")
    {
        let target = v["url_or_host"].as_str().unwrap();
        let url = if target.contains("://") {
            target.to_string()
        } else {
            format!("https://{target}/")
        };
        let private: TaintSet = [Taint::PrivateData].into_iter().collect();
        let mut j = judge(SAMPLE_POLICY, private);
        let ruling = j.judge("c1", "bash", &json!({"command": format!("curl -sS {url}")}));
        let passed = ruling == Ruling::Pass;
        let src = v["source"].as_str().unwrap();
        check(
            src,
            passed == v["expect"].as_bool().unwrap(),
            format!("{url} passed={passed}"),
            &mut tally,
        );
    }
    assert_eq!(tally, (6, 0));
}

#[test]
fn a_malformed_policy_is_refused() {
    for v in vectors("policy")
        .into_iter()
        .filter(|v| v["op"] == "from_value")
    {
        let yaml = format!("version: 1\ntools: {}\n", v["policy_doc"]["tools"]);
        assert!(
            bulwark_policy::load_str("bad.yaml", &yaml).is_err(),
            "{yaml}"
        );
    }
}

#[test]
fn tool_calls_are_found_in_every_answer_shape() {
    for v in vectors("normalize")
        .into_iter()
        .filter(|v| v["op"] == "extract_tool_calls")
    {
        let mut body = v["input"].clone();
        let api = if body.get("choices").is_some() {
            Api::Chat
        } else if body.get("output").is_some() {
            Api::Responses
        } else {
            Api::Messages
        };
        let mut j = judge(SAMPLE_POLICY, TaintSet::NONE);
        api.judge_answer(&mut body, &mut j);
        let want: Vec<(String, String)> = v["expect"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["id"].as_str().unwrap().into(),
                    c["name"].as_str().unwrap().into(),
                )
            })
            .collect();
        assert_eq!(j.judged(), want.as_slice(), "{}", v["source"]);
    }
}

#[test]
fn results_pair_with_their_calls_and_hints_land_as_system_text() {
    for v in vectors("normalize") {
        let src = v["source"].as_str().unwrap();
        match v["op"].as_str().unwrap() {
            "normalize_input" if v["call_type"] == "anthropic_messages" => {
                let r = Api::Messages.results(&v["input"]).unwrap();
                assert_eq!(r.len(), 1, "{src}");
                assert_eq!(r[0].id, "tu1");
                assert_eq!(r[0].tool.as_deref(), Some("bash"));
            }
            "normalize_input" => {
                let api = if v["call_type"] == "responses" {
                    Api::Responses
                } else {
                    Api::Chat
                };
                assert!(api.results(&v["input"]).unwrap().is_empty(), "{src}");
            }
            "inject_hint" => {
                let api = if v["call_type"] == "anthropic_messages" {
                    Api::Messages
                } else {
                    Api::Chat
                };
                let mut body = v["input"].clone();
                api.inject_hint(&mut body, v["hint"].as_str().unwrap());
                match api {
                    Api::Messages => assert_eq!(body["system"], "WARNING", "{src}"),
                    _ => {
                        assert_eq!(body["messages"].as_array().unwrap().len(), 2, "{src}");
                        assert_eq!(
                            body["messages"][0],
                            json!({"role": "system", "content": "WARNING"})
                        );
                    }
                }
            }
            // The Ratchet guesses the API from the body's keys; Bulwark knows it from the
            // request path, so these vectors do not apply.
            "resolve" => {}
            // Covered by tool_calls_are_found_in_every_answer_shape.
            "extract_tool_calls" => {}
            op => panic!("{src}: unexpected op {op}"),
        }
    }
}
