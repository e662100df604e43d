//! The gateway's decisions, independent of the transport: a message in from the client or
//! the server, the messages to send on out.
//!
//! What it decides (DESIGN §7, seed 002 and 003):
//!
//! - `tools/call` requests: the arguments go through the engine; a refused call is answered
//!   here and never reaches the server; masked arguments are forwarded masked.
//! - their results, and `resources/read` and `prompts/get` contents: a refused result is
//!   replaced by an error (`-32095`), a masked one is returned masked.
//! - `tools/list` results: every definition is pinned on first sight and checked for
//!   poisoning; a changed (rug pull), poisoned or shadowing tool is withheld from the list
//!   and its calls are refused (`-32096`) until a person accepts it.
//! - `initialize` results: the server's `instructions` are pinned and scanned like a
//!   definition, and dropped when they changed or carry instructions to the model.
//!
//! Everything else passes through unchanged, in both directions. Requests waiting for the
//! server are bounded in number and in time; when the server goes away or does not answer,
//! the client gets an error for each, never silence.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use bulwark_engine::{
    Call, Decision, Definition, Direction, Principal, Profile, SharedEngine, ToolRef, Verdict,
};
use bulwark_policy::BlockAs;
use serde_json::{Map, Value, json};

use crate::enforce;
use crate::jsonrpc::{self, Kind};
use crate::pinfile::PinFile;

/// The name under which a server's `instructions` are pinned: not a valid MCP tool name,
/// so no tool can collide with it.
pub const INSTRUCTIONS: &str = "(instructions)";

/// Requests waiting for the server at once, by default.
pub const MAX_PENDING: usize = 1024;

/// Where a message goes.
#[derive(Debug, PartialEq)]
pub enum Out {
    /// To the client.
    Client(Value),
    /// To the server.
    Server(Value),
}

/// What the gateway is told about its server and client.
#[derive(Debug, Clone)]
pub struct Config {
    /// The server's identity for pins: operator-chosen, never taken from the server.
    pub server: String,
    /// The session taint and sequences belong to.
    pub session: String,
    /// Who the client is.
    pub principal: Principal,
    /// Requests waiting for the server at once.
    pub max_pending: usize,
}

#[derive(Debug)]
struct Pending {
    id: Value,
    method: String,
    tool: Option<String>,
    args: Value,
    deadline_ms: u64,
}

/// One client's gateway to one server.
pub struct Gateway {
    engine: Arc<SharedEngine>,
    config: Config,
    pins: Option<PinFile>,
    pending: Mutex<HashMap<String, Pending>>,
    audit: Option<Mutex<Box<dyn Write + Send>>>,
    log: Box<dyn Fn(&str) + Send + Sync>,
}

impl Gateway {
    /// A gateway deciding with `engine`. With `pins`, definitions are pinned in that file
    /// (loaded now; a corrupt file is an error, not an empty one). `log` receives one line
    /// per notable event (withheld tools, refused calls, late replies).
    pub fn new(
        engine: Arc<SharedEngine>,
        config: Config,
        pins: Option<PinFile>,
        audit: Option<Box<dyn Write + Send>>,
        log: Box<dyn Fn(&str) + Send + Sync>,
    ) -> Result<Gateway, crate::pinfile::PinError> {
        let g = Gateway {
            engine,
            config,
            pins,
            pending: Mutex::new(HashMap::new()),
            audit: audit.map(Mutex::new),
            log,
        };
        if let Some(p) = &g.pins {
            let records = p.locked(|p| p.load())??;
            g.engine
                .state()
                .pins
                .import(Some(&g.config.server), &records);
        }
        Ok(g)
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        match self.pending.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// How many requests wait for the server.
    pub fn waiting(&self) -> usize {
        self.pending().len()
    }

    fn block_as(&self) -> BlockAs {
        self.engine.engine().policy().mcp.block_as
    }

    fn timeout_ms(&self) -> u64 {
        self.engine.engine().policy().mcp.request_timeout_ms
    }

    #[cfg(test)]
    fn request_timeout_for_test(&self) -> u64 {
        self.timeout_ms()
    }

    fn record(&self, d: &Decision) {
        if let Some(a) = &self.audit {
            let mut f = match a.lock() {
                Ok(f) => f,
                Err(p) => p.into_inner(),
            };
            if let Err(e) = writeln!(f, "{}", d.to_json()).and_then(|()| f.flush()) {
                (self.log)(&format!("cannot write the audit file: {e}"));
            }
        }
    }

    fn call(&self, tool: &str, direction: Direction) -> Call {
        Call {
            principal: self.config.principal.clone(),
            session: self.config.session.clone(),
            tool: ToolRef {
                name: tool.to_string(),
                server: Some(self.config.server.clone()),
                hash: None,
            },
            direction,
            args: Value::Null,
            result: None,
            definition: None,
            destination: None,
            declared_capabilities: None,
            profile: Profile::Standard,
        }
    }

    fn decide(&self, call: &Call, now_ms: u64) -> Decision {
        let t0 = std::time::Instant::now();
        let mut d = self.engine.evaluate(call, now_ms);
        d.eval_us = t0.elapsed().as_micros() as u64;
        self.record(&d);
        if d.decision > Verdict::Allow {
            (self.log)(&format!(
                "{} {} {}: {}{}",
                d.decision.as_str(),
                direction_word(call.direction),
                call.tool.name,
                d.reason,
                d.rule_id
                    .as_deref()
                    .map(|r| format!(" [{r}]"))
                    .unwrap_or_default()
            ));
        }
        d
    }

    /// Takes in an operator's `bulwark pins accept` or `reset` made since the last look.
    fn refresh_pins(&self) {
        let Some(p) = &self.pins else { return };
        if !p.changed() {
            return;
        }
        match p.locked(|p| p.load()) {
            Ok(Ok(records)) => {
                self.engine
                    .state()
                    .pins
                    .import(Some(&self.config.server), &records);
                (self.log)("pins changed on disk; reloaded");
            }
            Ok(Err(e)) | Err(e) => (self.log)(&format!("cannot reload pins: {e}")),
        }
    }

    /// A frame from the client.
    pub fn from_client(&self, frame: &[u8], now_ms: u64) -> Vec<Out> {
        let (msg, kind) = match jsonrpc::parse(frame) {
            Ok(m) => m,
            Err(e) => {
                return vec![Out::Client(jsonrpc::error(
                    &Value::Null,
                    e.code(),
                    &e.to_string(),
                    None,
                ))];
            }
        };
        match kind {
            Kind::Request { id, method } => self.client_request(msg, id, method, now_ms),
            Kind::Notification { method } => {
                if method == "notifications/cancelled"
                    && let Some(req) = msg.pointer("/params/requestId")
                {
                    // The server will not answer a cancelled request; stop waiting for it.
                    self.pending().remove(&jsonrpc::id_key(req));
                }
                vec![Out::Server(msg)]
            }
            // The client answering a request of the server's (sampling, elicitation, roots).
            Kind::Response { .. } => vec![Out::Server(msg)],
        }
    }

    fn client_request(&self, mut msg: Value, id: Value, method: String, now_ms: u64) -> Vec<Out> {
        let key = jsonrpc::id_key(&id);
        {
            let pending = self.pending();
            if pending.contains_key(&key) {
                return vec![Out::Client(jsonrpc::error(
                    &id,
                    jsonrpc::INVALID_REQUEST,
                    &format!("request id {key} is already in use by a request in flight"),
                    None,
                ))];
            }
            if pending.len() >= self.config.max_pending {
                return vec![Out::Client(jsonrpc::error(
                    &id,
                    -32000,
                    &format!(
                        "too many requests in flight (limit {}); retry when some have been answered",
                        self.config.max_pending
                    ),
                    None,
                ))];
            }
        }
        let mut tool = None;
        let mut args = Value::Null;
        if method == "tools/call" {
            let name = msg
                .pointer("/params/name")
                .and_then(Value::as_str)
                .map(str::to_string);
            let arguments = msg
                .pointer("/params/arguments")
                .cloned()
                .unwrap_or_else(|| json!({}));
            let (Some(name), true) = (name, arguments.is_object()) else {
                return vec![Out::Client(jsonrpc::error(
                    &id,
                    -32602,
                    "tools/call needs params.name (a string) and params.arguments (an object)",
                    None,
                ))];
            };
            self.refresh_pins();
            let mut call = self.call(&name, Direction::Request);
            call.args = arguments.clone();
            let d = self.decide(&call, now_ms);
            match d.decision {
                Verdict::Allow | Verdict::Warn => {}
                Verdict::Mask => {
                    if let (Some(masked), Some(params)) = (&d.masked, msg.get_mut("params")) {
                        params["arguments"] = masked.clone();
                    }
                }
                Verdict::Approve | Verdict::Block => {
                    return vec![Out::Client(enforce::refusal(
                        &id,
                        &d,
                        Direction::Request,
                        self.block_as(),
                    ))];
                }
            }
            tool = Some(name);
            args = msg
                .pointer("/params/arguments")
                .cloned()
                .unwrap_or(arguments);
        } else if method == "resources/read" {
            args = json!({"uri": msg.pointer("/params/uri").cloned().unwrap_or(Value::Null)});
        } else if method == "prompts/get" {
            args = json!({
                "name": msg.pointer("/params/name").cloned().unwrap_or(Value::Null),
                "arguments": msg.pointer("/params/arguments").cloned().unwrap_or(Value::Null),
            });
        }
        self.pending().insert(
            key,
            Pending {
                id,
                method,
                tool,
                args,
                deadline_ms: now_ms.saturating_add(self.timeout_ms()),
            },
        );
        vec![Out::Server(msg)]
    }

    /// A frame from the server.
    pub fn from_server(&self, frame: &[u8], now_ms: u64) -> Vec<Out> {
        let (msg, kind) = match jsonrpc::parse(frame) {
            Ok(m) => m,
            Err(e) => {
                // Nothing to route it to; the request it may have answered times out.
                (self.log)(&format!("dropped a frame from the server: {e}"));
                return Vec::new();
            }
        };
        match kind {
            Kind::Request { .. } | Kind::Notification { .. } => vec![Out::Client(msg)],
            Kind::Response { id } => {
                let Some(p) = self.pending().remove(&jsonrpc::id_key(&id)) else {
                    (self.log)(&format!(
                        "dropped a reply to request {id}, which is not waiting (late, cancelled or never sent)"
                    ));
                    return Vec::new();
                };
                if msg.get("result").is_none() {
                    return vec![Out::Client(msg)];
                }
                vec![Out::Client(self.server_result(msg, &p, now_ms))]
            }
        }
    }

    fn server_result(&self, mut msg: Value, p: &Pending, now_ms: u64) -> Value {
        match p.method.as_str() {
            "tools/call" | "resources/read" | "prompts/get" => {
                let name = match (&p.tool, p.method.as_str()) {
                    (Some(t), _) => t.clone(),
                    (None, m) => m.to_string(),
                };
                let mut call = self.call(&name, Direction::Response);
                call.args = p.args.clone();
                call.result = msg.get("result").cloned();
                let d = self.decide(&call, now_ms);
                match d.decision {
                    Verdict::Allow | Verdict::Warn => msg,
                    Verdict::Mask => match d.masked {
                        Some(masked) => jsonrpc::result(&p.id, masked),
                        // Nothing to return masked: refuse rather than pass it clear.
                        None => enforce::refusal(&p.id, &d, Direction::Response, self.block_as()),
                    },
                    Verdict::Approve | Verdict::Block => {
                        enforce::refusal(&p.id, &d, Direction::Response, self.block_as())
                    }
                }
            }
            "tools/list" => {
                if let Some(tools) = msg
                    .pointer_mut("/result/tools")
                    .and_then(Value::as_array_mut)
                {
                    let listed = std::mem::take(tools);
                    *tools = self.check_definitions(listed, now_ms);
                }
                msg
            }
            "initialize" => {
                if let Some(result) = msg.get_mut("result").and_then(Value::as_object_mut) {
                    self.check_instructions(result, now_ms);
                }
                msg
            }
            _ => msg,
        }
    }

    /// Pins and checks each listed tool; returns those that may be shown.
    fn check_definitions(&self, listed: Vec<Value>, now_ms: u64) -> Vec<Value> {
        let run = || {
            // The file is the source of truth while we hold its lock: another gateway in
            // front of the same server, or an operator, may have written it.
            if let Some(p) = &self.pins {
                match p.load() {
                    Ok(records) => self
                        .engine
                        .state()
                        .pins
                        .import(Some(&self.config.server), &records),
                    Err(e) => (self.log)(&format!("cannot read pins, using those in memory: {e}")),
                }
            }
            let kept: Vec<Value> = listed
                .into_iter()
                .filter(|tool| self.definition_allowed(tool, now_ms))
                .collect();
            if let Some(p) = &self.pins {
                let records = self.engine.state().pins.export(Some(&self.config.server));
                if let Err(e) = p.save(records) {
                    (self.log)(&format!(
                        "cannot save pins (they hold in memory until restart): {e}"
                    ));
                }
            }
            kept
        };
        match &self.pins {
            Some(p) => match p.locked(|_| run()) {
                Ok(kept) => kept,
                Err(e) => {
                    // Without the lock the pins cannot be trusted to be current: show nothing
                    // rather than a tool that may have been withheld.
                    (self.log)(&format!("cannot lock pins; withholding every tool: {e}"));
                    Vec::new()
                }
            },
            None => run(),
        }
    }

    fn definition_allowed(&self, tool: &Value, now_ms: u64) -> bool {
        let Some(obj) = tool.as_object() else {
            (self.log)("withheld a tool definition that is not an object");
            return false;
        };
        let Some(name) = obj.get("name").and_then(Value::as_str) else {
            (self.log)("withheld a tool definition without a name");
            return false;
        };
        let mut rest: Map<String, Value> = obj.clone();
        rest.remove("name");
        let description = match rest.remove("description") {
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let input_schema = rest.remove("inputSchema").unwrap_or(Value::Null);
        let mut call = self.call(name, Direction::Definition);
        call.definition = Some(Definition {
            description,
            input_schema,
            // Title, output schema, annotations, icons, _meta: all of it is pinned.
            annotations: Value::Object(rest),
        });
        self.decide(&call, now_ms).decision != Verdict::Block
    }

    fn check_instructions(&self, result: &mut Map<String, Value>, now_ms: u64) {
        let Some(text) = result.get("instructions").and_then(Value::as_str) else {
            return;
        };
        let mut call = self.call(INSTRUCTIONS, Direction::Definition);
        call.definition = Some(Definition {
            description: text.to_string(),
            input_schema: Value::Null,
            annotations: Value::Null,
        });
        let allowed = match &self.pins {
            Some(p) => p
                .locked(|p| {
                    if let Ok(records) = p.load() {
                        self.engine
                            .state()
                            .pins
                            .import(Some(&self.config.server), &records);
                    }
                    let d = self.decide(&call, now_ms);
                    let records = self.engine.state().pins.export(Some(&self.config.server));
                    if let Err(e) = p.save(records) {
                        (self.log)(&format!("cannot save pins: {e}"));
                    }
                    d.decision != Verdict::Block
                })
                .unwrap_or(false),
            None => self.decide(&call, now_ms).decision != Verdict::Block,
        };
        if !allowed {
            result.remove("instructions");
        }
    }

    /// Fails every request that waited past its deadline, telling the server to stop
    /// working on it.
    pub fn expire(&self, now_ms: u64) -> Vec<Out> {
        let mut pending = self.pending();
        let late: Vec<String> = pending
            .iter()
            .filter(|(_, p)| p.deadline_ms <= now_ms)
            .map(|(k, _)| k.clone())
            .collect();
        let mut out = Vec::new();
        for k in late {
            if let Some(p) = pending.remove(&k) {
                let secs = self.timeout_ms() / 1000;
                (self.log)(&format!("{} {}: no answer within {secs} s", p.method, p.id));
                out.push(Out::Server(json!({
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": p.id, "reason": "timed out in the gateway"},
                })));
                out.push(Out::Client(jsonrpc::error(
                    &p.id,
                    jsonrpc::INTERNAL_ERROR,
                    &format!("the server did not answer within {secs} s (policy mcp.request_timeout_secs)"),
                    None,
                )));
            }
        }
        out
    }

    /// The server is gone: every waiting request gets an error saying so.
    pub fn server_gone(&self, why: &str) -> Vec<Out> {
        self.pending()
            .drain()
            .map(|(_, p)| {
                Out::Client(jsonrpc::error(
                    &p.id,
                    jsonrpc::INTERNAL_ERROR,
                    &format!("the MCP server is gone ({why})"),
                    None,
                ))
            })
            .collect()
    }

    /// The server sent a frame larger than the limit: the request it answers (if its id
    /// can be read from the start) is failed instead of left waiting.
    pub fn oversized_from_server(&self, prefix: &[u8], limit: usize) -> Vec<Out> {
        let Some(id) = jsonrpc::sniff_id(prefix) else {
            (self.log)(&format!(
                "dropped a frame from the server larger than {limit} bytes"
            ));
            return Vec::new();
        };
        let Some(p) = self.pending().remove(&jsonrpc::id_key(&id)) else {
            return Vec::new();
        };
        (self.log)(&format!(
            "{} {}: the answer is larger than {limit} bytes; refused",
            p.method, p.id
        ));
        vec![Out::Client(jsonrpc::error(
            &p.id,
            -32095,
            "result_blocked",
            Some(json!({
                "decision": "block",
                "reason_code": "INVALID_INPUT",
                "reason": format!("The server's answer is larger than {limit} bytes."),
            })),
        ))]
    }
}

fn direction_word(d: Direction) -> &'static str {
    match d {
        Direction::Request => "call",
        Direction::Response => "result of",
        Direction::Definition => "definition of",
        _ => "proposal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulwark_policy::Policy;

    fn gateway(policy: Policy, max_pending: usize) -> Gateway {
        Gateway::new(
            Arc::new(SharedEngine::new(policy)),
            Config {
                server: "test".into(),
                session: "s".into(),
                principal: Principal::default(),
                max_pending,
            },
            None,
            None,
            Box::new(|_| {}),
        )
        .unwrap()
    }

    fn client(g: &Gateway, v: Value) -> Vec<Out> {
        g.from_client(v.to_string().as_bytes(), 0)
    }

    fn server(g: &Gateway, v: Value) -> Vec<Out> {
        g.from_server(v.to_string().as_bytes(), 0)
    }

    fn call(id: u64, tool: &str, args: Value) -> Value {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}})
    }

    #[test]
    fn requests_in_flight_are_bounded_and_unique() {
        let g = gateway(Policy::builtin().unwrap(), 2);
        assert!(matches!(
            &client(&g, call(1, "echo", json!({})))[..],
            [Out::Server(_)]
        ));
        let dup = client(&g, call(1, "echo", json!({})));
        assert!(matches!(&dup[..], [Out::Client(v)] if v["error"]["code"] == -32600));
        assert!(matches!(
            &client(&g, call(2, "echo", json!({})))[..],
            [Out::Server(_)]
        ));
        let full = client(&g, call(3, "echo", json!({})));
        assert!(matches!(&full[..], [Out::Client(v)] if v["error"]["code"] == -32000));
        // A cancellation stops the wait; a reply arriving after it is dropped.
        client(
            &g,
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}),
        );
        assert_eq!(g.waiting(), 1);
        assert!(server(&g, json!({"jsonrpc":"2.0","id":1,"result":{}})).is_empty());
        // The string id "2" is not the number 2.
        assert!(server(&g, json!({"jsonrpc":"2.0","id":"2","result":{}})).is_empty());
        assert_eq!(g.waiting(), 1);
    }

    #[test]
    fn deadlines_and_a_dead_server_answer_every_waiting_request() {
        let g = gateway(Policy::builtin().unwrap(), 8);
        client(&g, call(1, "echo", json!({})));
        client(&g, call(2, "echo", json!({})));
        assert!(g.expire(1).is_empty());
        let timeout = g.request_timeout_for_test();
        let outs = g.expire(timeout + 1);
        // Each late request: a cancellation to the server, an error to the client.
        assert_eq!(outs.len(), 4);
        client(&g, call(3, "echo", json!({})));
        let outs = g.server_gone("it exited with status 1");
        assert!(
            matches!(&outs[..], [Out::Client(v)] if v["id"] == 3 && v["error"]["code"] == -32603)
        );
        assert_eq!(g.waiting(), 0);
    }

    #[test]
    fn block_as_result_answers_with_an_error_result() {
        let policy =
            bulwark_policy::load_str("test.yaml", "version: 1\nmcp:\n  block_as: result\n")
                .unwrap();
        let g = gateway(policy, 8);
        let outs = client(&g, call(1, "bash", json!({"command": "rm -rf /"})));
        let [Out::Client(v)] = &outs[..] else {
            panic!("{outs:?}")
        };
        assert_eq!(v["result"]["isError"], true, "{v}");
        assert_eq!(
            v["result"]["_meta"]["dev.bulwark/decision"]["rule_id"],
            "fs.rm_root_or_home"
        );
    }

    #[test]
    fn server_requests_and_notifications_pass_both_ways() {
        let g = gateway(Policy::builtin().unwrap(), 8);
        let sampling =
            json!({"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}});
        assert_eq!(server(&g, sampling.clone()), vec![Out::Client(sampling)]);
        let reply =
            json!({"jsonrpc":"2.0","id":"s1","result":{"content":{"type":"text","text":"ok"}}});
        assert_eq!(client(&g, reply.clone()), vec![Out::Server(reply)]);
        let progress = json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}});
        assert_eq!(server(&g, progress.clone()), vec![Out::Client(progress)]);
    }
}
