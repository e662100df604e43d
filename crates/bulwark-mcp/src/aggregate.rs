//! Several MCP servers behind one: the policy's `servers:` aggregated for one client.
//!
//! Each server keeps its own gateway core (its own pins, under its name), so every
//! decision is made exactly as for a single server; this layer only routes. Tools and
//! prompts are offered as `NAME__tool` and `NAME__prompt`; resources keep their URIs and
//! are routed by the listing that offered them. A tool name offered by two servers is
//! shadowing: the engine withholds the second (it sees both under their own names).
//!
//! Listings (`tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list`) and `initialize` go to every server and are merged; a
//! server that fails is left out of the merge (and logged), unless all fail. Requests the
//! servers send (sampling, elicitation, roots) get ids of this layer's own on the way to
//! the client and their own back. Everything waiting is bounded, and a server that goes
//! away fails what waited on it.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::http::Link;
use crate::jsonrpc::{self, Kind};
use crate::port::{self, Port};

/// The separator between a server's name and its tool's or prompt's.
pub const SEPARATOR: &str = "__";

/// Requests (and server-initiated requests) waiting at once.
const MAX_WAITING: usize = 1024;
/// Resource URIs remembered for routing.
const MAX_URIS: usize = 10_000;

/// One aggregated server: its name and the port to its gateway core.
pub struct Member {
    /// The name its tools are prefixed with.
    pub name: String,
    /// The port to its core (see [`crate::http::Link`]).
    pub link: Link,
}

/// Methods answered by merging every server's answer.
const FAN_OUT: &[&str] = &[
    "initialize",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "logging/setLevel",
];

/// Answers by server index.
type Answers = Vec<(usize, Value)>;

struct Group {
    client_id: Value,
    method: String,
    waiting: usize,
    parts: Vec<(usize, Value)>,
    /// Requested version (initialize).
    asked: Option<String>,
    /// Servers still to ask (last first), and what to ask them.
    queue: Vec<usize>,
    template: Value,
}

enum Event {
    Client(Value),
    ClientGone,
    Member(usize, Value),
    MemberGone(usize),
}

/// Joins `members` into one port for a client. The returned link's `stop` ends them all.
pub fn aggregate(members: Vec<Member>, log: Arc<dyn Fn(&str) + Send + Sync>) -> Link {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (events, mut inbox) = mpsc::channel::<Event>(256);
    let mut names = Vec::new();
    let mut writers = Vec::new();
    let mut stops = Vec::new();
    for (i, m) in members.into_iter().enumerate() {
        names.push(m.name);
        stops.push(m.link.stop);
        let Port { tx, mut rx } = m.link.port;
        writers.push(tx);
        let events = events.clone();
        tokio::spawn(async move {
            while let Some(v) = rx.recv().await {
                if events.send(Event::Member(i, v)).await.is_err() {
                    return;
                }
            }
            let _ = events.send(Event::MemberGone(i)).await;
        });
    }
    let (client_tx, mut client_rx) = port::channel(MEMBER_QUEUE);
    let (to_client, client_inbox) = port::channel(CLIENT_QUEUE);
    {
        let tx = events.clone();
        tokio::spawn(async move {
            while let Some(v) = client_rx.recv().await {
                if tx.send(Event::Client(v)).await.is_err() {
                    return;
                }
            }
            let _ = tx.send(Event::ClientGone).await;
        });
    }
    drop(events);
    let mut mux = Mux::new(names, writers, to_client, log);
    tokio::spawn(async move {
        let mut stopped = stopped;
        // Once the client is done sending, what it asked for is still answered (for a
        // while), then everything ends.
        let mut drain: Option<tokio::time::Instant> = None;
        loop {
            if mux.closing
                || drain.is_some() && mux.groups.is_empty()
                || mux.gone.len() == mux.names.len()
            {
                break;
            }
            let until = drain.unwrap_or_else(|| {
                tokio::time::Instant::now() + std::time::Duration::from_secs(86_400)
            });
            tokio::select! {
                e = inbox.recv() => match e {
                    Some(Event::Client(v)) => mux.on_client(v),
                    Some(Event::Member(i, v)) => mux.on_member(i, v),
                    Some(Event::MemberGone(i)) => mux.member_gone(i),
                    Some(Event::ClientGone) => {
                        drain = Some(tokio::time::Instant::now() + DRAIN);
                    }
                    None => break,
                },
                _ = tokio::time::sleep_until(until) => break,
                _ = &mut stopped => break,
            }
        }
        // Ending: every server's core is stopped (children terminated, sessions deleted).
        drop(mux);
        for s in stops {
            let _ = s.send(());
        }
    });
    Link {
        port: Port {
            tx: client_tx,
            rx: client_inbox,
        },
        stop,
        extra: None,
    }
}

/// Messages queued for each server: one that stops reading fails the requests sent its way
/// rather than stalling the others.
const MEMBER_QUEUE: usize = 256;
/// Messages queued for the client: one that stops reading this long loses its session.
const CLIENT_QUEUE: usize = 4096;
/// How long answers are still waited for once the client is done sending.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(10);

struct Mux {
    names: Vec<String>,
    writers: Vec<port::Sender>,
    to_client: port::Sender,
    next: u64,
    /// Sub-request id → its group.
    parts: HashMap<String, (u64, usize)>,
    groups: HashMap<u64, Group>,
    /// Our id for a server's request → (server, its id).
    server_requests: HashMap<String, (usize, Value)>,
    uris: HashMap<String, usize>,
    /// Resource template prefixes (up to the first `{`) → the server that listed them.
    templates: Vec<(String, usize)>,
    gone: Vec<usize>,
    /// The client stopped reading: the session ends.
    closing: bool,
    log: Arc<dyn Fn(&str) + Send + Sync>,
}

impl Mux {
    fn new(
        names: Vec<String>,
        writers: Vec<port::Sender>,
        to_client: port::Sender,
        log: Arc<dyn Fn(&str) + Send + Sync>,
    ) -> Mux {
        Mux {
            names,
            writers,
            to_client,
            next: 0,
            parts: HashMap::new(),
            groups: HashMap::new(),
            server_requests: HashMap::new(),
            uris: HashMap::new(),
            templates: Vec::new(),
            gone: Vec::new(),
            closing: false,
            log,
        }
    }

    /// Never waits: a client that does not read ends its session instead of stalling
    /// every server.
    fn client(&mut self, v: &Value) {
        if !self.to_client.try_send(v.clone()) && !self.closing {
            (self.log)("the client is not reading what it is sent; its session ends");
            self.closing = true;
        }
    }

    /// Never waits: false when the server is not taking messages.
    fn member(&self, i: usize, v: &Value) -> bool {
        self.writers.get(i).is_some_and(|w| w.try_send(v.clone()))
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("bulwark-{prefix}{}", self.next)
    }

    /// `NAME__rest` → (server, rest), by the longest server name that fits.
    fn split(&self, full: &str) -> Option<(usize, String)> {
        self.names
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let rest = full.strip_prefix(n.as_str())?.strip_prefix(SEPARATOR)?;
                Some((n.len(), i, rest))
            })
            .max_by_key(|(len, _, _)| *len)
            .map(|(_, i, rest)| (i, rest.to_string()))
    }

    fn owner_of(&self, uri: &str) -> Option<usize> {
        self.uris
            .get(uri)
            .copied()
            .or_else(|| {
                self.templates
                    .iter()
                    .filter(|(prefix, _)| {
                        prefix.contains("://") && uri.starts_with(prefix.as_str())
                    })
                    .max_by_key(|(prefix, _)| prefix.len())
                    .map(|(_, i)| *i)
            })
            .or_else(|| {
                // With one server offering resources, every URI is its.
                (self.names.len() == 1).then_some(0)
            })
    }

    fn refuse(&mut self, id: &Value, code: i64, message: &str) {
        self.client(&jsonrpc::error(id, code, message, None));
    }

    fn on_client(&mut self, mut msg: Value) {
        let kind = match jsonrpc::classify(&msg) {
            Ok(x) => x,
            Err(e) => return self.refuse(&Value::Null, e.code(), &e.to_string()),
        };
        match kind {
            Kind::Request { id, method } => {
                if self.parts.len() + self.groups.len() + self.server_requests.len() >= MAX_WAITING
                {
                    return self.refuse(
                        &id,
                        -32000,
                        "too many requests in progress; try again shortly",
                    );
                }
                if method == "ping" {
                    return self.client(&jsonrpc::result(&id, json!({})));
                }
                if FAN_OUT.contains(&method.as_str()) {
                    return self.fan_out(id, method, msg);
                }
                let target = match method.as_str() {
                    "tools/call" | "prompts/get" => {
                        let name = jsonrpc::at(&msg, "/params/name")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        self.split(name).map(|(i, rest)| {
                            msg["params"]["name"] = Value::String(rest);
                            i
                        })
                    }
                    "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
                        jsonrpc::at(&msg, "/params/uri")
                            .and_then(Value::as_str)
                            .and_then(|u| self.owner_of(u))
                    }
                    "completion/complete" => {
                        let r = jsonrpc::at(&msg, "/params/ref")
                            .cloned()
                            .unwrap_or(Value::Null);
                        match r.get("type").and_then(Value::as_str) {
                            Some("ref/prompt") => {
                                let name = r.get("name").and_then(Value::as_str).unwrap_or("");
                                self.split(name).map(|(i, rest)| {
                                    msg["params"]["ref"]["name"] = Value::String(rest);
                                    i
                                })
                            }
                            Some("ref/resource") => r
                                .get("uri")
                                .and_then(Value::as_str)
                                .and_then(|u| self.owner_of(u)),
                            _ => None,
                        }
                    }
                    _ => {
                        return self.refuse(&id, -32601, &format!("method not found: {method}"));
                    }
                };
                let Some(i) = target.filter(|i| !self.gone.contains(i)) else {
                    let names = self.names.join(", ");
                    return self.refuse(
                        &id,
                        -32602,
                        &format!(
                            "no server here offers that: names are SERVER{SEPARATOR}NAME (servers: {names})"
                        ),
                    );
                };
                let sub = self.fresh("c");
                msg["id"] = Value::String(sub.clone());
                let g = self.next;
                if !self.member(i, &msg) {
                    let name = self.names[i].clone();
                    return self.refuse(
                        &id,
                        -32000,
                        &format!("server {name} is not taking messages; try again shortly"),
                    );
                }
                self.groups.insert(
                    g,
                    Group {
                        client_id: id,
                        method,
                        waiting: 1,
                        parts: Vec::new(),
                        asked: None,
                        queue: Vec::new(),
                        template: Value::Null,
                    },
                );
                self.parts.insert(sub, (g, i));
            }
            Kind::Notification { method } => {
                if method == "notifications/cancelled" {
                    let Some(rid) = jsonrpc::at(&msg, "/params/requestId").cloned() else {
                        return;
                    };
                    // The client gave up: no answer is owed, and nothing more is waited for.
                    let cancelled: Vec<u64> = self
                        .groups
                        .iter()
                        .filter(|(_, grp)| grp.client_id == rid)
                        .map(|(g, _)| *g)
                        .collect();
                    for g in cancelled {
                        self.groups.remove(&g);
                        let subs: Vec<(String, usize)> = self
                            .parts
                            .iter()
                            .filter(|(_, (pg, _))| *pg == g)
                            .map(|(sub, (_, i))| (sub.clone(), *i))
                            .collect();
                        for (sub, i) in subs {
                            self.parts.remove(&sub);
                            msg["params"]["requestId"] = Value::String(sub);
                            self.member(i, &msg);
                        }
                    }
                    return;
                }
                for i in 0..self.names.len() {
                    if !self.gone.contains(&i) {
                        self.member(i, &msg);
                    }
                }
            }
            Kind::Response { id } => {
                let key = match &id {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                if let Some((i, orig)) = self.server_requests.remove(&key) {
                    msg["id"] = orig;
                    self.member(i, &msg);
                }
            }
        }
    }

    /// Asks every server, one after another in the policy's order: which server pins a
    /// name first (and so which one shadows) never depends on which answers faster.
    fn fan_out(&mut self, id: Value, method: String, msg: Value) {
        let live: Vec<usize> = (0..self.names.len())
            .filter(|i| !self.gone.contains(i))
            .collect();
        if live.is_empty() {
            return self.refuse(&id, jsonrpc::INTERNAL_ERROR, "every server has gone away");
        }
        self.next += 1;
        let g = self.next;
        let asked = jsonrpc::at(&msg, "/params/protocolVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        let mut template = msg;
        // Pages are per server; the merged listing is each server's first page.
        if let Some(p) = template.get_mut("params").and_then(Value::as_object_mut) {
            p.remove("cursor");
        }
        let mut queue = live;
        queue.reverse();
        self.groups.insert(
            g,
            Group {
                client_id: id,
                method,
                waiting: queue.len(),
                parts: Vec::new(),
                asked,
                queue,
                template,
            },
        );
        self.ask_next(g);
    }

    /// Sends group `g`'s request to the next server in its queue.
    fn ask_next(&mut self, g: u64) {
        loop {
            let Some(next) = self.groups.get_mut(&g).and_then(|grp| grp.queue.pop()) else {
                return;
            };
            let Some(mut m) = self.groups.get(&g).map(|grp| grp.template.clone()) else {
                return;
            };
            let sub = self.fresh("f");
            m["id"] = Value::String(sub.clone());
            if !self.gone.contains(&next) && self.member(next, &m) {
                self.parts.insert(sub, (g, next));
                return;
            }
            let name = self.names[next].clone();
            let e = jsonrpc::error(
                &Value::Null,
                jsonrpc::INTERNAL_ERROR,
                &format!("server {name} is not taking messages"),
                None,
            );
            if self.part_done(g, next, e) {
                return;
            }
        }
    }

    fn on_member(&mut self, i: usize, mut msg: Value) {
        let Ok(kind) = jsonrpc::classify(&msg) else {
            return;
        };
        match kind {
            Kind::Response { id } => {
                let key = match &id {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let Some((g, _)) = self.parts.remove(&key) else {
                    return;
                };
                if !self.part_done(g, i, msg) {
                    self.ask_next(g);
                }
            }
            Kind::Request { id, .. } => {
                if self.server_requests.len() >= MAX_WAITING {
                    let e = jsonrpc::error(&id, -32000, "too many requests in progress", None);
                    self.member(i, &e);
                    return;
                }
                let ours = self.fresh("s");
                self.server_requests.insert(ours.clone(), (i, id));
                msg["id"] = Value::String(ours);
                self.client(&msg);
            }
            Kind::Notification { method } => {
                if method == "notifications/cancelled" {
                    // The server gave up on a request of its own: name it as the client knows it.
                    let rid = jsonrpc::at(&msg, "/params/requestId").cloned();
                    let ours = self
                        .server_requests
                        .iter()
                        .find(|(_, (m, orig))| *m == i && Some(orig) == rid.as_ref())
                        .map(|(k, _)| k.clone());
                    match ours {
                        Some(k) => {
                            self.server_requests.remove(&k);
                            msg["params"]["requestId"] = Value::String(k);
                        }
                        None => return,
                    }
                }
                self.client(&msg);
            }
        }
    }

    /// Files server `i`'s answer in group `g`; true when the group is complete (answered).
    fn part_done(&mut self, g: u64, i: usize, msg: Value) -> bool {
        let Some(group) = self.groups.get_mut(&g) else {
            return true;
        };
        group.parts.push((i, msg));
        group.waiting = group.waiting.saturating_sub(1);
        if group.waiting > 0 {
            return false;
        }
        let Some(group) = self.groups.remove(&g) else {
            return true;
        };
        let answer = self.merge(group);
        self.client(&answer);
        true
    }

    /// A server went away: what waited on it fails (or is left out of its merge).
    fn member_gone(&mut self, i: usize) {
        if self.gone.contains(&i) {
            return;
        }
        self.gone.push(i);
        (self.log)(&format!("server {} went away", self.names[i]));
        let waiting: Vec<(String, u64)> = self
            .parts
            .iter()
            .filter(|(_, (_, m))| *m == i)
            .map(|(k, (g, _))| (k.clone(), *g))
            .collect();
        for (k, g) in waiting {
            self.parts.remove(&k);
            let e = jsonrpc::error(
                &Value::Null,
                jsonrpc::INTERNAL_ERROR,
                &format!("server {} went away", self.names[i]),
                None,
            );
            if !self.part_done(g, i, e) {
                self.ask_next(g);
            }
        }
        self.server_requests.retain(|_, (m, _)| *m != i);
    }

    fn merge(&mut self, group: Group) -> Value {
        let id = group.client_id.clone();
        let single = group.parts.len() == 1 && !FAN_OUT.contains(&group.method.as_str());
        if single {
            let Some((_, mut msg)) = group.parts.into_iter().next() else {
                return jsonrpc::error(&id, jsonrpc::INTERNAL_ERROR, "no answer", None);
            };
            msg["id"] = id;
            return msg;
        }
        let (oks, errs): (Answers, Answers) = group
            .parts
            .into_iter()
            .partition(|(_, m)| m.get("result").is_some());
        for (i, e) in &errs {
            (self.log)(&format!(
                "server {} failed {}: {}",
                self.names[*i], group.method, e["error"]
            ));
        }
        if oks.is_empty() {
            let mut e = errs.into_iter().next().map(|(_, e)| e).unwrap_or_else(|| {
                jsonrpc::error(&Value::Null, jsonrpc::INTERNAL_ERROR, "no answer", None)
            });
            e["id"] = id;
            return e;
        }
        let mut oks = oks;
        oks.sort_by_key(|(i, _)| *i);
        let result = match group.method.as_str() {
            "initialize" => self.merge_initialize(&oks, group.asked.as_deref()),
            "tools/list" => json!({"tools": self.prefixed(&oks, "tools")}),
            "prompts/list" => json!({"prompts": self.prefixed(&oks, "prompts")}),
            "resources/list" => {
                let mut all = Vec::new();
                for (i, m) in &oks {
                    for r in m["result"]["resources"].as_array().into_iter().flatten() {
                        if let Some(uri) = r.get("uri").and_then(Value::as_str)
                            && self.uris.len() < MAX_URIS
                        {
                            // The first server (in the policy's order) to list a URI keeps it.
                            self.uris.entry(uri.to_string()).or_insert(*i);
                        }
                        all.push(r.clone());
                    }
                }
                json!({"resources": all})
            }
            "resources/templates/list" => {
                let mut all = Vec::new();
                for (i, m) in &oks {
                    for t in m["result"]["resourceTemplates"]
                        .as_array()
                        .into_iter()
                        .flatten()
                    {
                        if let Some(u) = t.get("uriTemplate").and_then(Value::as_str) {
                            let prefix = u.split('{').next().unwrap_or("").to_string();
                            if self.templates.len() < MAX_URIS
                                && !self.templates.iter().any(|(p, _)| *p == prefix)
                            {
                                self.templates.push((prefix, *i));
                            }
                        }
                        all.push(t.clone());
                    }
                }
                json!({"resourceTemplates": all})
            }
            _ => json!({}),
        };
        jsonrpc::result(&id, result)
    }

    fn prefixed(&self, oks: &[(usize, Value)], key: &str) -> Vec<Value> {
        let mut all = Vec::new();
        for (i, m) in oks {
            for item in m["result"][key].as_array().into_iter().flatten() {
                let mut item = item.clone();
                if let Some(name) = item.get("name").and_then(Value::as_str) {
                    item["name"] = Value::String(format!("{}{SEPARATOR}{name}", self.names[*i]));
                }
                all.push(item);
            }
        }
        all
    }

    fn merge_initialize(&self, oks: &[(usize, Value)], asked: Option<&str>) -> Value {
        let versions: Vec<&str> = oks
            .iter()
            .filter_map(|(_, m)| jsonrpc::at(m, "/result/protocolVersion").and_then(Value::as_str))
            .collect();
        let version = match asked {
            Some(a) if versions.iter().all(|v| *v == a) => a.to_string(),
            _ => versions
                .iter()
                .min()
                .map(|v| v.to_string())
                .unwrap_or_default(),
        };
        let mut caps = Map::new();
        let mut instructions = Vec::new();
        for (i, m) in oks {
            if let Some(c) = jsonrpc::at(m, "/result/capabilities").and_then(Value::as_object) {
                for (k, v) in c {
                    let slot = caps.entry(k.clone()).or_insert_with(|| json!({}));
                    if let (Some(into), Some(from)) = (slot.as_object_mut(), v.as_object()) {
                        for (kk, vv) in from {
                            into.insert(kk.clone(), vv.clone());
                        }
                    }
                }
            }
            if let Some(text) = jsonrpc::at(m, "/result/instructions").and_then(Value::as_str) {
                instructions.push(format!("[{}] {text}", self.names[*i]));
            }
        }
        let mut r = json!({
            "protocolVersion": version,
            "capabilities": caps,
            "serverInfo": {"name": "bulwark", "version": env!("CARGO_PKG_VERSION")},
        });
        if !instructions.is_empty() {
            r["instructions"] = Value::String(instructions.join("\n\n"));
        }
        r
    }
}

/// How one aggregated server is reached.
pub enum Upstream {
    /// A child process per client session.
    Command(crate::stdio::ServerCommand),
    /// A remote server (a session of it per client session).
    Remote(crate::remote::Remote),
}

/// Makes the gateway core for (client session, caller, server name).
pub type MakeMemberGateway = Box<
    dyn Fn(&str, &bulwark_engine::Principal, &str) -> Result<Arc<crate::gateway::Gateway>, String>
        + Send
        + Sync,
>;

/// Every server of the policy's `servers:` per client session, aggregated.
pub struct AggregateConnector {
    /// The servers, by name.
    pub servers: Vec<(String, Upstream)>,
    /// Makes each server's gateway core.
    pub gateway: MakeMemberGateway,
    /// Where notes go.
    pub log: Arc<dyn Fn(&str) + Send + Sync>,
}

impl AggregateConnector {
    /// Opens every server for `session` and joins them.
    pub fn open_all(
        &self,
        session: &str,
        principal: &bulwark_engine::Principal,
    ) -> Result<Link, String> {
        let mut members = Vec::new();
        for (name, upstream) in &self.servers {
            let opened = (self.gateway)(session, principal, name).and_then(|g| {
                let server = match upstream {
                    Upstream::Command(c) => crate::stdio::spawn(c)
                        .map(crate::stdio::Server::Child)
                        .map_err(|e| e.to_string())?,
                    Upstream::Remote(r) => {
                        crate::stdio::Server::Pipe(r.connect(Arc::clone(&self.log), None))
                    }
                };
                Ok(crate::http::link(g, server))
            });
            match opened {
                Ok(link) => members.push(Member {
                    name: name.clone(),
                    link,
                }),
                Err(e) => {
                    // What was started for this session ends with it.
                    for m in members {
                        let _ = m.link.stop.send(());
                    }
                    return Err(format!("server {name}: {e}"));
                }
            }
        }
        Ok(aggregate(members, Arc::clone(&self.log)))
    }
}

impl crate::http::Connector for AggregateConnector {
    fn open(&self, session: &str, principal: &bulwark_engine::Principal) -> Result<Link, String> {
        self.open_all(session, principal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mux(names: &[&str]) -> Mux {
        let (to_client, _rx) = port::channel(1);
        Mux::new(
            names.iter().map(|n| n.to_string()).collect(),
            Vec::new(),
            to_client,
            Arc::new(|_| {}),
        )
    }

    #[test]
    fn names_split_at_the_longest_server_name() {
        let m = mux(&["a", "a_b", "fs"]);
        assert_eq!(m.split("a_b__x"), Some((1, "x".to_string())));
        assert_eq!(m.split("a__b__x"), Some((0, "b__x".to_string())));
        assert_eq!(m.split("fs__read_file"), Some((2, "read_file".to_string())));
        assert_eq!(m.split("nobody__x"), None);
        assert_eq!(m.split("fs_read"), None);
    }

    #[test]
    fn resources_route_by_listing_then_template_prefix() {
        let mut m = mux(&["one", "two"]);
        m.uris.insert("file:///a".into(), 0);
        m.templates.push(("test://template/".into(), 1));
        m.templates.push(("nourl".into(), 0));
        assert_eq!(m.owner_of("file:///a"), Some(0));
        assert_eq!(m.owner_of("test://template/7/data"), Some(1));
        assert_eq!(
            m.owner_of("nourl-x"),
            None,
            "a prefix without a scheme routes nothing"
        );
        assert_eq!(m.owner_of("other://x"), None);
    }
}
