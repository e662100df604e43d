//! The device side inside a front (`bulwark daemon`, `bulwark mcp`, `bulwark proxy`): the
//! MQTT client escalating to the fleet, signed policy updates applied to A/B slots with
//! anti-rollback and a canary that rolls back on a block-rate spike, and the kill switch —
//! all kept on disk so a restart comes back in the state it left.
//!
//! The device drives its front through a [`FleetTarget`] (the gate) and is the front's
//! [`Escalator`]; [`start`] makes, binds and connects one:
//!
//! ```no_run
//! # fn demo(gate: std::sync::Arc<dyn bulwark_engine::FleetTarget>, policy: &bulwark_policy::Policy)
//! # -> Result<(), bulwark_fleet::runtime::FleetError> {
//! let state = std::path::Path::new("/var/lib/bulwark");
//! let device = bulwark_fleet::runtime::start_on_own_thread(
//!     "mcp", Some("db-server"), state, policy, None, gate, None)?;
//! // Some(device) when the policy has a `fleet:` section: give it to the gate as its
//! // escalator (`Gate::set_escalator`).
//! # let _ = device; Ok(()) }
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bulwark_engine::{Call, Decision, Escalator, FleetTarget, Verdict};
use serde_json::json;

use crate::auth::Trust;
use crate::canary::{Canary, CanaryConfig, Rates};
use crate::client::{ClientConfig, FleetClient, FleetEvent};
use crate::device::{Device, Escalation};
use crate::wire::{Action, KillCommand, PolicyUpdate};

/// Why the device could not start, or a slot could not be kept: what was wrong, and where.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FleetError(String);

/// Adds what was being done to an error.
trait Ctx<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T, FleetError>;
}

impl<T, E: std::fmt::Display> Ctx<T> for Result<T, E> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T, FleetError> {
        self.map_err(|e| FleetError(format!("{}: {e}", what())))
    }
}

type Result<T, E = FleetError> = std::result::Result<T, E>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Where the broker is.
pub struct Broker {
    /// Its host name or address.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// TLS settings trusting only the broker's CA, for `mqtts`.
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

/// `mqtt://HOST:PORT`, or `mqtts://HOST:PORT` with the CA that signed the broker's
/// certificate (the only one trusted).
pub fn broker(url: &str, ca: Option<&Path>) -> Result<Broker> {
    let (rest, secure, default_port) = if let Some(r) = url.strip_prefix("mqtts://") {
        (r, true, 8883)
    } else if let Some(r) = url.strip_prefix("mqtt://") {
        (r, false, 1883)
    } else {
        return Err(FleetError(format!(
            "{url:?}: expected mqtt://HOST:PORT or mqtts://HOST:PORT"
        )));
    };
    let tls = match (secure, ca) {
        (true, Some(ca)) => Some(crate::tls::client_config(ca).map_err(FleetError)?),
        (true, None) => {
            return Err(FleetError(format!(
                "{url:?}: mqtts needs the broker's CA (--ca-file, or fleet.ca_file)"
            )));
        }
        (false, _) => None,
    };
    let rest = rest.trim_end_matches('/');
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (
            h.trim_matches(|c| c == '[' || c == ']'),
            p.parse::<u16>().ctx(|| format!("{url:?}: bad port"))?,
        ),
        None => (rest, default_port),
    };
    if host.is_empty() {
        return Err(FleetError(format!("{url:?}: no host")));
    }
    Ok(Broker {
        host: host.to_string(),
        port,
        tls,
    })
}

/// A device id when the policy names none: the host's name, and for a front other than
/// the daemon, the front and its label (an MCP gateway's server name) after it.
fn default_device_id(who: &str, label: Option<&str>) -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| format!("device-{}", std::process::id()));
    let mut id = host;
    if who != "daemon" {
        id.push('-');
        id.push_str(who);
        if let Some(l) = label {
            id.push('-');
            id.extend(l.chars().map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '_'
                }
            }));
        }
    }
    id
}

/// The device side inside a front (`bulwark daemon`, `bulwark mcp`, `bulwark proxy`).
pub struct FleetDevice {
    client: std::sync::OnceLock<Arc<FleetClient>>,
    pending: Mutex<Option<(ClientConfig, Device, [u8; 32])>>,
    handle: tokio::runtime::Handle,
    timeout: Duration,
    watch: Mutex<Watch>,
    retroactive: std::sync::atomic::AtomicU64,
    target: std::sync::OnceLock<Arc<dyn FleetTarget>>,
    /// The front's name, for its log lines.
    who: &'static str,
    files: PolicyFiles,
    audit: Option<Arc<bulwark_audit::AuditLog>>,
    /// The kill switch is on: its blocks say nothing about the policy.
    killed: std::sync::atomic::AtomicBool,
    /// Held while the device runs (`device.lock`): one process per device identity.
    _lock: std::fs::File,
}

struct Watch {
    rates: Rates,
    canary: Option<Canary>,
    cfg: CanaryConfig,
    /// The highest version applied (what anti-rollback compares with).
    accepted: u64,
    /// The version in force (lower than `accepted` after a rollback; 0: not the fleet's).
    running: u64,
}

/// A/B policy slots under STATE_DIR/fleet: the one in force and the one before it, with
/// their versions, and the kill switch's state. Every write is atomic (write, sync,
/// rename), so a crash leaves the old file or the new one.
struct PolicyFiles {
    dir: PathBuf,
}

/// The kill switch state kept across restarts.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct KillState {
    seq: u64,
    /// `BLOCK_ALL` or `LOCKDOWN` in force.
    blocked: bool,
    /// `LOCKDOWN` in force (policy updates refused).
    locked: bool,
}

impl PolicyFiles {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn write(&self, name: &str, text: &str) -> Result<()> {
        use std::io::Write;
        let path = self.path(name);
        let tmp = path.with_extension("tmp");
        let mut f =
            std::fs::File::create(&tmp).ctx(|| format!("cannot write {}", tmp.display()))?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.sync_all())
            .ctx(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).ctx(|| format!("cannot write {}", path.display()))
    }

    fn read(&self, name: &str) -> Result<Option<String>> {
        match std::fs::read_to_string(self.path(name)) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).ctx(|| format!("cannot read {}", self.path(name).display())),
        }
    }

    /// A version file: missing is 0; anything else that is not a number is an error (a
    /// corrupt file must not read as "no policy yet", which would undo anti-rollback).
    fn number(&self, name: &str) -> Result<u64> {
        match self.read(name)? {
            None => Ok(0),
            Some(t) => t.trim().parse().ctx(|| {
                format!(
                    "{} is corrupt; restore it or remove the fleet state",
                    self.path(name).display()
                )
            }),
        }
    }

    fn kill(&self) -> Result<KillState> {
        match self.read("kill.json")? {
            None => Ok(KillState::default()),
            Some(t) => serde_json::from_str(&t)
                .ctx(|| format!("{} is corrupt", self.path("kill.json").display())),
        }
    }
}

fn verdict_of(a: Action) -> Verdict {
    match a {
        Action::Allow => Verdict::Allow,
        Action::Warn => Verdict::Warn,
        Action::Block => Verdict::Block,
    }
}

impl FleetDevice {
    /// The device for the policy's `fleet:` section; nothing connects until
    /// [`FleetDevice::attach`]. The state of an earlier run (the policy version applied,
    /// the kill switch) comes from STATE_DIR/fleet (the daemon) or STATE_DIR/fleet/device-ID.
    /// Call inside a tokio runtime: the device's client will run on it.
    pub fn new(
        who: &'static str,
        label: Option<&str>,
        state_dir: &Path,
        policy: &bulwark_policy::Policy,
        audit: Option<Arc<bulwark_audit::AuditLog>>,
    ) -> Result<Option<Arc<FleetDevice>>> {
        let Some(f) = &policy.fleet else {
            return Ok(None);
        };
        let b = broker(&f.broker, f.ca_file.as_deref().map(Path::new))?;
        let device_id = match &f.device_id {
            Some(d) => d.clone(),
            None => default_device_id(who, label),
        };
        if !crate::topics::valid_id(&device_id) || !crate::topics::valid_id(&f.name) {
            return Err(FleetError(
                "fleet device_id and name: letters, digits, '-', '_' and '.' only".into(),
            ));
        }
        let mut trust = match &f.public_key {
            Some(k) => {
                Trust::fleet_hex(k).map_err(|e| FleetError(format!("fleet.public_key: {e}")))?
            }
            None => {
                return Err(FleetError("fleet.public_key is missing: without it no reply, policy or kill command can be trusted (bulwark fleet keys prints it)".into()));
            }
        };
        if let Some(var) = &f.device_key_env {
            let v = std::env::var(var).ctx(|| format!("fleet.device_key_env: {var} is not set"))?;
            trust.device = Some(
                bulwark_audit::keys::unhex32(&v)
                    .ok_or_else(|| FleetError(format!("{var} must hold 64 hex digits")))?,
            );
        }
        // The daemon keeps its fleet state where it always has; every other front keeps
        // it per device, so a proxy and several MCP gateways on one host never share it.
        let dir = if who == "daemon" {
            state_dir.join("fleet")
        } else {
            state_dir.join("fleet").join(format!("device-{device_id}"))
        };
        std::fs::create_dir_all(&dir).ctx(|| format!("cannot create {}", dir.display()))?;
        // One process per device identity: the broker drops a client whose id connects
        // again, so two would knock each other off and their waits would all time out.
        let lock = std::fs::File::create(dir.join("device.lock"))
            .ctx(|| format!("cannot open {}", dir.join("device.lock").display()))?;
        if lock.try_lock().is_err() {
            return Err(FleetError(format!(
                "another bulwark process is fleet device {device_id:?} (state in {}): give each front its own fleet.device_id or --state-dir",
                dir.display()
            )));
        }
        let files = PolicyFiles { dir };
        let accepted = files.number("policy.version")?;
        let running = files.number("policy.running")?;
        let kill = files.kill()?;
        let mut device = Device::new(&device_id, trust, accepted);
        device.restore_kill(kill.seq, kill.locked);
        let (window, factor, minutes, minute) = f.canary;
        Ok(Some(Arc::new(FleetDevice {
            client: std::sync::OnceLock::new(),
            pending: Mutex::new(Some((
                ClientConfig {
                    host: b.host,
                    port: b.port,
                    fleet: f.name.clone(),
                    device: device_id,
                    tls: b.tls,
                },
                device,
                bulwark_audit::keys::random32()
                    .ctx(|| "cannot draw the device's key".to_string())?,
            ))),
            handle: tokio::runtime::Handle::current(),
            timeout: Duration::from_millis(f.timeout_ms),
            watch: Mutex::new(Watch {
                rates: Rates::default(),
                canary: None,
                cfg: CanaryConfig {
                    window_ms: window,
                    factor,
                    minutes,
                    minute_ms: minute,
                    ..CanaryConfig::default()
                },
                accepted,
                running,
            }),
            retroactive: std::sync::atomic::AtomicU64::new(0),
            target: std::sync::OnceLock::new(),
            who,
            files,
            audit,
            killed: std::sync::atomic::AtomicBool::new(kill.blocked),
            _lock: lock,
        })))
    }

    /// Binds the device to the front whose engine the fleet drives, puts back what an
    /// earlier run left in force (the fleet's policy, the kill switch), then connects.
    /// Before any update, the policy the front started with is kept as the slot a first
    /// rollback returns to (empty: the built-in policy).
    pub fn attach(
        self: &Arc<Self>,
        service: Arc<dyn FleetTarget>,
        started_with: Option<&Path>,
    ) -> Result<()> {
        let _ = self.target.set(Arc::clone(&service));
        let running = lock(&self.watch).running;
        let mut restored = false;
        if running > 0
            && let Some(text) = self.files.read("policy.current.yaml")?
        {
            match load_policy_text(&text) {
                Ok(p) => {
                    service.replace_policy(p);
                    restored = true;
                }
                Err(e) => eprintln!(
                    "bulwark {}: fleet: the fleet's policy {running} does not load ({e}); the file given is in force",
                    self.who
                ),
            }
        }
        if !restored {
            let text = match started_with {
                Some(p) => {
                    std::fs::read_to_string(p).ctx(|| format!("cannot read {}", p.display()))?
                }
                None => String::new(),
            };
            self.files.write("policy.current.yaml", &text)?;
            self.files.write("policy.running", "0")?;
            lock(&self.watch).running = 0;
        }
        if self.files.kill()?.blocked {
            service.set_lockdown(true);
            eprintln!(
                "bulwark {}: fleet: the kill switch is on (from before the restart)",
                self.who
            );
        }
        let Some((cfg, device, seed)) = lock(&self.pending).take() else {
            return Ok(());
        };
        let (client, events) = FleetClient::start(cfg, device, seed);
        let _ = self.client.set(Arc::clone(&client));
        let this = Arc::clone(self);
        tokio::spawn(async move { this.events(events).await });
        client.report("online", "", running, false, 0.0);
        Ok(())
    }

    fn service(&self) -> Option<&dyn FleetTarget> {
        self.target.get().map(|t| t.as_ref())
    }

    fn report(&self, event: &str, detail: &str, canary: bool, rate: f64) {
        if let Some(c) = self.client.get() {
            c.report(event, detail, lock(&self.watch).running, canary, rate);
        }
    }

    fn record(&self, verdict: Verdict, code: Option<bulwark_engine::ReasonCode>, reason: String) {
        let Some(a) = &self.audit else { return };
        let mut d = Decision::invalid_input(reason, "fleet");
        d.findings.clear();
        d.safer_alternative = None;
        d.decision = verdict;
        d.reason_code = code;
        let _ = a.record(&bulwark_audit::Entry::bare("fleet", "fleet", &d));
    }

    async fn events(self: Arc<Self>, mut ev: crate::client::Events) {
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        loop {
            tokio::select! {
                e = ev.control.recv() => match e {
                    Some(e) => self.event(e),
                    None => return,
                },
                e = ev.verdicts.recv() => match e {
                    Some(e) => self.event(e),
                    None => return,
                },
                _ = tick.tick() => self.judge_canary(),
            }
        }
    }

    fn event(&self, ev: FleetEvent) {
        let Some(service) = self.service() else {
            return;
        };
        match ev {
            FleetEvent::Verdict(a) => {
                let v = verdict_of(a.action);
                service.cache_verdict(a.tool_hash, v, a.ttl_min);
                if v == Verdict::Block {
                    // A speculative call already ran: recorded, it cannot be undone.
                    self.retroactive
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let reason = format!(
                        "RETROACTIVE: the fleet blocks tool {} after a speculative allow: {}",
                        hex(&a.tool_hash[..4]),
                        a.reason
                    );
                    eprintln!("bulwark {}: {reason}", self.who);
                    self.record(
                        Verdict::Block,
                        Some(bulwark_engine::ReasonCode::CloudBlock),
                        reason.clone(),
                    );
                    self.report("retroactive_block", &reason, false, 0.0);
                }
            }
            FleetEvent::Policy(u) => self.apply(service, &u),
            FleetEvent::Kill(cmd, seq, reason) => {
                let mut state = self.files.kill().unwrap_or_default();
                state.seq = seq;
                match cmd {
                    KillCommand::BlockAll => state.blocked = true,
                    KillCommand::Lockdown => {
                        state.blocked = true;
                        state.locked = true;
                    }
                    KillCommand::Resume => {
                        state.blocked = false;
                        state.locked = false;
                    }
                    KillCommand::FlushCache => service.flush_verdicts(),
                }
                // Kept before it takes effect, so a restart comes back in the same state.
                if let Err(e) = serde_json::to_string(&state)
                    .map_err(|e| FleetError(e.to_string()))
                    .and_then(|t| self.files.write("kill.json", &t))
                {
                    eprintln!(
                        "bulwark {}: fleet: cannot keep the kill switch state: {e}",
                        self.who
                    );
                }
                service.set_lockdown(state.blocked);
                self.killed
                    .store(state.blocked, std::sync::atomic::Ordering::Relaxed);
                let what = format!("kill switch {cmd:?} (seq {seq}): {reason}");
                eprintln!("bulwark {}: {what}", self.who);
                self.record(
                    Verdict::Block,
                    Some(bulwark_engine::ReasonCode::Lockdown),
                    what.clone(),
                );
                self.report("kill_applied", &what, false, 0.0);
            }
        }
    }

    fn apply(&self, service: &dyn FleetTarget, u: &PolicyUpdate) {
        let policy = match load_policy_text(&u.policy) {
            Ok(p) => p,
            Err(e) => {
                let why = format!("policy {} refused: {e}", u.version);
                eprintln!("bulwark {}: fleet: {why}", self.who);
                self.report("policy_refused", &why, false, 0.0);
                return;
            }
        };
        let running = lock(&self.watch).running;
        // A/B: the slot in force becomes the previous one; then the new policy and its
        // version are on disk before the engine uses it.
        let write = || -> Result<()> {
            let current = self.files.read("policy.current.yaml")?.unwrap_or_default();
            self.files.write("policy.previous.yaml", &current)?;
            self.files
                .write("policy.previous.running", &running.to_string())?;
            self.files.write("policy.current.yaml", &u.policy)?;
            self.files.write("policy.version", &u.version.to_string())?;
            self.files.write("policy.running", &u.version.to_string())
        };
        if let Err(e) = write() {
            let why = format!("policy {} not applied: {e}", u.version);
            eprintln!("bulwark {}: fleet: {why}", self.who);
            self.report("policy_refused", &why, false, 0.0);
            return;
        }
        service.replace_policy(policy);
        service.flush_verdicts();
        if let Some(c) = self.client.get() {
            c.applied(u.version);
        }
        let baseline = {
            let mut w = lock(&self.watch);
            let now = now_ms();
            let base = w.rates.baseline(now, w.cfg.minute_ms);
            w.canary = Some(Canary::start(w.cfg, base, now));
            w.accepted = u.version;
            w.running = u.version;
            base
        };
        let what = format!(
            "policy {} applied (seq {}); canary against a {:.1}% block rate",
            u.version,
            u.seq,
            baseline * 100.0
        );
        eprintln!("bulwark {}: fleet: {what}", self.who);
        self.record(Verdict::Allow, None, what.clone());
        self.report("policy_applied", &what, true, baseline);
    }

    fn judge_canary(&self) {
        let now = now_ms();
        let why = {
            let mut w = lock(&self.watch);
            let Some(c) = w.canary.as_mut() else { return };
            if !c.open(now) {
                w.canary = None;
                return;
            }
            c.judge(now)
        };
        if let Some(why) = why {
            self.roll_back(&why);
        }
    }

    fn roll_back(&self, why: &str) {
        let Some(service) = self.service() else {
            return;
        };
        lock(&self.watch).canary = None;
        let restore = || -> Result<(bulwark_policy::Policy, String, u64)> {
            let previous = self.files.read("policy.previous.yaml")?.unwrap_or_default();
            let version = self.files.number("policy.previous.running")?;
            let policy = load_policy_text(&previous).map_err(FleetError)?;
            self.files.write("policy.current.yaml", &previous)?;
            self.files.write("policy.running", &version.to_string())?;
            Ok((policy, previous, version))
        };
        match restore() {
            Ok((p, _, version)) => {
                service.replace_policy(p);
                service.flush_verdicts();
                lock(&self.watch).running = version;
                let what = format!("rolled back to the previous policy: {why}");
                eprintln!("bulwark {}: fleet: {what}", self.who);
                self.record(Verdict::Block, None, what.clone());
                self.report("rollback", &what, false, 0.0);
            }
            Err(e) => eprintln!("bulwark {}: fleet: cannot roll back: {e}", self.who),
        }
    }
}

/// The device for a front whose `policy` has a `fleet:` section, on the tokio runtime the
/// caller is in: made (its state under `state_dir`), bound to `target` — which gets back
/// what an earlier run left in force (the fleet's policy, the kill switch) — and connected.
/// `None` without a `fleet:` section. The caller makes it its front's escalator.
pub fn start(
    who: &'static str,
    label: Option<&str>,
    state_dir: &Path,
    policy: &bulwark_policy::Policy,
    audit: Option<Arc<bulwark_audit::AuditLog>>,
    target: Arc<dyn FleetTarget>,
    started_with: Option<&Path>,
) -> Result<Option<Arc<FleetDevice>>> {
    let Some(device) = FleetDevice::new(who, label, state_dir, policy, audit)? else {
        return Ok(None);
    };
    device.attach(target, started_with)?;
    Ok(Some(device))
}

/// [`start`] with a thread and current-thread runtime of the device's own: a front on a
/// current-thread runtime may then wait for a `sync_block` verdict without stopping the
/// client that brings it. The thread lives as long as the process.
pub fn start_on_own_thread(
    who: &'static str,
    label: Option<&str>,
    state_dir: &Path,
    policy: &bulwark_policy::Policy,
    audit: Option<Arc<bulwark_audit::AuditLog>>,
    target: Arc<dyn FleetTarget>,
    started_with: Option<&Path>,
) -> Result<Option<Arc<FleetDevice>>> {
    if policy.fleet.is_none() {
        return Ok(None);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ctx(|| "cannot start the fleet client's runtime".to_string())?;
    let device = runtime
        .block_on(async { start(who, label, state_dir, policy, audit, target, started_with) })?;
    std::thread::Builder::new()
        .name("bulwark-fleet".into())
        .spawn(move || runtime.block_on(std::future::pending::<()>()))
        .ctx(|| "cannot start the fleet client's thread".to_string())?;
    Ok(device)
}

/// A policy from a slot's text: empty is the built-in policy.
fn load_policy_text(text: &str) -> std::result::Result<bulwark_policy::Policy, String> {
    if text.is_empty() {
        bulwark_policy::Policy::builtin().map_err(|e| e.to_string())
    } else {
        bulwark_policy::load_str("fleet policy", text).map_err(|e| e.to_string())
    }
}

/// Whether a decision says something about the policy's quality: not while the kill
/// switch blocks everything, and not a block for the fleet not answering.
fn counts_for_canary(d: &Decision, killed: bool) -> bool {
    !killed && d.reason_code != Some(bulwark_engine::ReasonCode::CloudTimeout)
}

impl Escalator for FleetDevice {
    fn escalate(&self, call: &Call, d: &Decision, wait: bool) -> Option<(Verdict, u64)> {
        let client = Arc::clone(self.client.get()?);
        let content = match call.payload() {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let taint: Vec<&str> = d.taint.iter().map(|t| t.as_str()).collect();
        let session = json!({"id": call.session, "taint": taint});
        let caps = d.capabilities.to_defenseclaw();
        let (tool, dest) = (call.tool.name.clone(), call.destination.clone());
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let timeout = self.timeout;
        self.handle.spawn(async move {
            let e = Escalation {
                tool: &tool,
                capabilities: caps,
                destination: dest.as_deref(),
                content: &content,
                session,
            };
            let got = client.escalate(&e, wait.then_some(timeout)).await;
            let _ = tx.send(got);
        });
        if !wait {
            return None;
        }
        // The client runs on the fleet's runtime (`handle`), never on the caller's
        // current-thread one, so blocking here cannot starve it. A worker of a
        // multi-thread runtime steps out while it waits.
        let take = || {
            rx.recv_timeout(timeout + Duration::from_millis(250))
                .ok()
                .flatten()
        };
        let got = match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(take),
            _ => take(),
        };
        got.map(|a| (verdict_of(a.action), a.ttl_min))
    }

    fn observe(&self, d: &Decision) {
        if !counts_for_canary(d, self.killed.load(std::sync::atomic::Ordering::Relaxed)) {
            return;
        }
        let now = now_ms();
        let why = {
            let mut w = lock(&self.watch);
            let minute = w.cfg.minute_ms;
            w.rates.observe(d.decision == Verdict::Block, now, minute);
            w.canary
                .as_mut()
                .and_then(|c| c.observe(d.decision == Verdict::Block, now))
        };
        if let Some(why) = why {
            self.roll_back(&why);
        }
    }

    fn stats(&self) -> serde_json::Value {
        let w = lock(&self.watch);
        let (c, dropped, last) = match self.client.get() {
            Some(cl) => {
                let (n, last) = cl.dropped();
                (cl.counters(), n, last)
            }
            None => (Default::default(), 0, String::new()),
        };
        json!({
            "policy_version": w.running,
            "accepted_version": w.accepted,
            "canary": w.canary.is_some(),
            "replies": {"accepted": c.accepted, "forged": c.forged, "replayed": c.replayed, "late": c.late, "mismatched": c.mismatched},
            "dropped": dropped,
            "last_dropped": last,
            "retroactive_blocks": self.retroactive.load(std::sync::atomic::Ordering::Relaxed),
        })
    }

    fn fleet_policy(&self) -> Option<u64> {
        let running = lock(&self.watch).running;
        (running > 0).then_some(running)
    }
}
