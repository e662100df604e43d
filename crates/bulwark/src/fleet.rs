//! `bulwark fleet …` and the device side of a front with `fleet:` in its policy: the MQTT
//! client escalating to the fleet, applying signed policy updates (A/B, canary rollback)
//! and obeying the kill switch.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bulwark_daemon::service::{Escalator, Service};
use bulwark_engine::{Call, Decision, Verdict};
use bulwark_fleet::auth::{FleetSigner, Trust};
use bulwark_fleet::canary::{Canary, CanaryConfig, Rates};
use bulwark_fleet::client::{ClientConfig, FleetClient, FleetEvent};
use bulwark_fleet::device::{Device, Escalation};
use bulwark_fleet::service::{FleetService, StoredVerdict, VerdictStore};
use bulwark_fleet::wire::{Action, Kill, KillCommand, PolicyUpdate, VERSION};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::cli::{Common, FleetCommand, VerdictCommand};
use crate::config;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `mqtt://HOST:PORT` → (host, port).
pub fn broker(url: &str) -> Result<(String, u16)> {
    let rest = url.strip_prefix("mqtt://").with_context(|| {
        format!("{url:?}: expected mqtt://HOST:PORT (mqtts is not supported yet)")
    })?;
    let rest = rest.trim_end_matches('/');
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (
            h.trim_matches(|c| c == '[' || c == ']'),
            p.parse::<u16>()
                .with_context(|| format!("{url:?}: bad port"))?,
        ),
        None => (rest, 1883),
    };
    if host.is_empty() {
        bail!("{url:?}: no host");
    }
    Ok((host.to_string(), port))
}

fn fleet_dir(common: &Common) -> Result<PathBuf> {
    let d = config::state_dir(common)?.join("fleet");
    std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
    Ok(d)
}

/// The fleet's signing key: STATE_DIR/fleet/signing.key, made on first use, with the public
/// key beside it.
fn signer(common: &Common) -> Result<FleetSigner> {
    let dir = fleet_dir(common)?;
    let seed = match std::env::var("BULWARK_FLEET_SIGNING_KEY") {
        Ok(v) => bulwark_audit::keys::unhex32(&v)
            .context("BULWARK_FLEET_SIGNING_KEY must be 64 hex digits")?,
        Err(_) => {
            let path = dir.join("signing.key");
            match std::fs::read_to_string(&path) {
                Ok(t) => bulwark_audit::keys::unhex32(&t)
                    .with_context(|| format!("{} does not hold 64 hex digits", path.display()))?,
                Err(_) => {
                    use std::os::unix::fs::OpenOptionsExt;
                    let key = bulwark_audit::keys::random32()?;
                    let mut f = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(0o600)
                        .open(&path)
                        .with_context(|| format!("cannot create {}", path.display()))?;
                    std::io::Write::write_all(&mut f, hex(&key).as_bytes())?;
                    key
                }
            }
        }
    };
    let s = FleetSigner::from_seed(&seed);
    let _ = std::fs::write(dir.join("signing.pub"), s.public_hex());
    Ok(s)
}

/// The next number of a counter kept in `path` (sequence numbers must never repeat).
fn next_seq(path: &Path) -> Result<u64> {
    let cur = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(0);
    // Never below the clock, so a lost counter file does not replay old numbers.
    let next = (cur + 1).max(now_ms());
    std::fs::write(path, next.to_string())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(next)
}

fn tool_hash(arg: &str) -> String {
    if arg.len() == 64 && arg.bytes().all(|b| b.is_ascii_hexdigit()) {
        arg.to_ascii_lowercase()
    } else {
        hex(&Sha256::digest(arg.as_bytes()))
    }
}

/// `bulwark fleet …`.
pub fn command(cmd: &FleetCommand) -> Result<ExitCode> {
    match cmd {
        FleetCommand::Keys { common } => {
            let s = signer(common)?;
            println!("{}", s.public_hex());
            Ok(ExitCode::SUCCESS)
        }
        FleetCommand::Verdict(v) => verdict(v),
        FleetCommand::Status { common } => {
            let path = fleet_dir(common)?.join("devices.json");
            let text = std::fs::read_to_string(&path).with_context(|| {
                format!(
                    "{} is missing: is `bulwark fleet serve` running?",
                    path.display()
                )
            })?;
            println!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        FleetCommand::Serve {
            common,
            broker: url,
            fleet,
        } => serve(common, url, fleet),
        FleetCommand::PublishPolicy {
            common,
            file,
            version,
            broker: url,
            fleet,
        } => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            if let Err(e) = bulwark_policy::load_str(&file.display().to_string(), &text) {
                eprintln!("{e}");
                bail!("the policy is not valid; nothing was published");
            }
            let s = signer(common)?;
            let seq = next_seq(&fleet_dir(common)?.join("policy.seq"))?;
            let mut u = PolicyUpdate {
                v: VERSION,
                version: *version,
                seq,
                sha256: hex(&Sha256::digest(text.as_bytes())),
                policy: text,
                sig: None,
            };
            u.sig = Some(s.sign("policy", &u));
            publish(
                url,
                &bulwark_fleet::topics::policy(fleet),
                &serde_json::to_vec(&u)?,
            )?;
            println!("published policy version {version} (seq {seq}) to {fleet}");
            Ok(ExitCode::SUCCESS)
        }
        FleetCommand::Kill {
            common,
            command,
            reason,
            broker: url,
            fleet,
        } => {
            let command = match command.to_ascii_uppercase().replace('-', "_").as_str() {
                "BLOCK_ALL" => KillCommand::BlockAll,
                "LOCKDOWN" => KillCommand::Lockdown,
                "FLUSH_CACHE" => KillCommand::FlushCache,
                "RESUME" => KillCommand::Resume,
                other => bail!("{other:?}: expected BLOCK_ALL, LOCKDOWN, FLUSH_CACHE or RESUME"),
            };
            let s = signer(common)?;
            let seq = next_seq(&fleet_dir(common)?.join("kill.seq"))?;
            let mut k = Kill {
                v: VERSION,
                seq,
                command,
                reason: reason.clone().unwrap_or_default(),
                sig: None,
            };
            k.sig = Some(s.sign("kill", &k));
            publish(
                url,
                &bulwark_fleet::topics::kill(fleet),
                &serde_json::to_vec(&k)?,
            )?;
            println!("sent {command:?} (seq {seq}) to {fleet}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn publish(url: &str, topic: &str, body: &[u8]) -> Result<()> {
    let (host, port) = broker(url)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(bulwark_fleet::service::publish_retained(
        &host,
        port,
        topic,
        body.to_vec(),
        Duration::from_secs(10),
    ))
    .map_err(anyhow::Error::msg)
}

fn verdict(cmd: &VerdictCommand) -> Result<ExitCode> {
    let store = |common: &Common| -> Result<VerdictStore> {
        Ok(VerdictStore::open(
            &fleet_dir(common)?.join("verdicts.json"),
        )?)
    };
    match cmd {
        VerdictCommand::Set {
            common,
            tool,
            action,
            ttl,
            note,
        } => {
            let action = match action.to_ascii_lowercase().as_str() {
                "allow" => Action::Allow,
                "warn" => Action::Warn,
                "block" => Action::Block,
                other => bail!("{other:?}: expected allow, warn or block"),
            };
            let hash = tool_hash(tool);
            let named = (hash != tool.to_ascii_lowercase()).then(|| tool.clone());
            store(common)?.set(
                &hash,
                Some(StoredVerdict {
                    action,
                    ttl_min: *ttl,
                    tool: named,
                    note: note.clone().unwrap_or_default(),
                }),
            )?;
            println!("{hash} {action:?} for {ttl} min");
        }
        VerdictCommand::Get { common, tool } => {
            let hash = tool_hash(tool);
            match store(common)?.get(&hash)? {
                Some(v) => println!(
                    "{}",
                    serde_json::to_string_pretty(&json!({"tool_hash": hash, "verdict": v}))?
                ),
                None => {
                    println!("{hash}: no verdict (devices get BLOCK)");
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
        VerdictCommand::List { common } => {
            for (hash, v) in store(common)?.list()? {
                println!(
                    "{hash}  {:<5}  {:>6} min  {}",
                    format!("{:?}", v.action).to_uppercase(),
                    v.ttl_min,
                    v.tool.unwrap_or_default()
                );
            }
        }
        VerdictCommand::Rm { common, tool } => {
            if !store(common)?.set(&tool_hash(tool), None)? {
                eprintln!("no verdict for {tool}");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn serve(common: &Common, url: &str, fleet: &str) -> Result<ExitCode> {
    if !bulwark_fleet::topics::valid_id(fleet) {
        bail!("--fleet {fleet:?}: letters, digits, '-', '_' and '.' only");
    }
    let (host, port) = broker(url)?;
    let dir = fleet_dir(common)?;
    let store = VerdictStore::open(&dir.join("verdicts.json"))?;
    let service = Arc::new(FleetService::new(fleet, signer(common)?, store));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let status = dir.join("devices.json");
    eprintln!("bulwark fleet: serving {fleet} on {host}:{port}");
    rt.block_on(async move {
        let stop = async {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
            }
        };
        service
            .serve(&host, port, stop, move |s| {
                let doc = json!({
                    "devices": s.devices(),
                    "answered": s.answered.load(std::sync::atomic::Ordering::Relaxed),
                    "dropped": s.dropped.load(std::sync::atomic::Ordering::Relaxed),
                });
                let tmp = status.with_extension("tmp");
                if std::fs::write(&tmp, doc.to_string()).is_ok() {
                    let _ = std::fs::rename(&tmp, &status);
                }
            })
            .await;
    });
    Ok(ExitCode::SUCCESS)
}

/// The device side inside `bulwark daemon`.
pub struct FleetDevice {
    client: Arc<FleetClient>,
    handle: tokio::runtime::Handle,
    timeout: Duration,
    watch: Mutex<Watch>,
    dropped: std::sync::atomic::AtomicU64,
    retroactive: std::sync::atomic::AtomicU64,
    service: std::sync::OnceLock<std::sync::Weak<Service>>,
    files: PolicyFiles,
    audit: Option<Arc<bulwark_audit::AuditLog>>,
}

struct Watch {
    rates: Rates,
    canary: Option<Canary>,
    cfg: CanaryConfig,
    /// Whether a policy update may be rolled back (a previous one is kept).
    version: u64,
}

/// A/B policy slots under STATE_DIR/fleet: the one in force and the one before it.
struct PolicyFiles {
    dir: PathBuf,
}

impl PolicyFiles {
    fn current(&self) -> PathBuf {
        self.dir.join("policy.current.yaml")
    }
    fn previous(&self) -> PathBuf {
        self.dir.join("policy.previous.yaml")
    }
    fn version(&self) -> u64 {
        std::fs::read_to_string(self.dir.join("policy.version"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }
    fn set_version(&self, v: u64) {
        let _ = std::fs::write(self.dir.join("policy.version"), v.to_string());
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
    /// Starts the client for the policy's `fleet:` section, inside the current runtime.
    /// The policy version in force comes from STATE_DIR/fleet/policy.version (0 before any
    /// update).
    pub fn start(
        common: &Common,
        policy: &bulwark_policy::Policy,
        audit: Option<Arc<bulwark_audit::AuditLog>>,
    ) -> Result<Option<Arc<FleetDevice>>> {
        let Some(f) = &policy.fleet else {
            return Ok(None);
        };
        let (host, port) = broker(&f.broker)?;
        let device_id = match &f.device_id {
            Some(d) => d.clone(),
            None => std::fs::read_to_string("/etc/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_else(|_| format!("device-{}", std::process::id())),
        };
        if !bulwark_fleet::topics::valid_id(&device_id) || !bulwark_fleet::topics::valid_id(&f.name)
        {
            bail!("fleet device_id and name: letters, digits, '-', '_' and '.' only");
        }
        let mut trust = match &f.public_key {
            Some(k) => Trust::fleet_hex(k).map_err(|e| anyhow::anyhow!("fleet.public_key: {e}"))?,
            None => bail!(
                "fleet.public_key is missing: without it no reply, policy or kill command can be trusted (bulwark fleet keys prints it)"
            ),
        };
        if let Some(var) = &f.device_key_env {
            let v = std::env::var(var)
                .with_context(|| format!("fleet.device_key_env: {var} is not set"))?;
            trust.device = Some(
                bulwark_audit::keys::unhex32(&v)
                    .with_context(|| format!("{var} must hold 64 hex digits"))?,
            );
        }
        let files = PolicyFiles {
            dir: fleet_dir(common)?,
        };
        let version = files.version();
        let device = Device::new(&device_id, trust, version);
        let (client, events) = FleetClient::start(
            ClientConfig {
                host,
                port,
                fleet: f.name.clone(),
                device: device_id,
            },
            device,
            bulwark_audit::keys::random32()?,
        );
        let (window, factor, minutes, minute) = f.canary;
        let me = Arc::new(FleetDevice {
            client,
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
                version,
            }),
            dropped: std::sync::atomic::AtomicU64::new(0),
            retroactive: std::sync::atomic::AtomicU64::new(0),
            service: std::sync::OnceLock::new(),
            files,
            audit,
        });
        let this = Arc::clone(&me);
        tokio::spawn(async move { this.events(events).await });
        me.client.report("online", "", false, 0.0);
        Ok(Some(me))
    }

    /// The service whose engine the fleet drives.
    pub fn attach(&self, service: &Arc<Service>) {
        let _ = self.service.set(Arc::downgrade(service));
    }

    /// Puts the fleet's policy back in force after a restart (the version the device
    /// reports is that one's), or, before any update, keeps the policy the daemon started
    /// with as the slot a first rollback returns to (empty: the built-in policy).
    pub fn restore(&self, service: &Service, started_with: Option<&Path>) -> Result<()> {
        let current = self.files.current();
        if self.files.version() > 0
            && let Ok(text) = std::fs::read_to_string(&current)
        {
            let policy = if text.is_empty() {
                bulwark_policy::Policy::builtin()
            } else {
                bulwark_policy::load_str("fleet policy", &text)
            };
            match policy {
                Ok(p) => {
                    service.evaluator.replace_policy(p);
                    return Ok(());
                }
                Err(e) => eprintln!(
                    "bulwark daemon: fleet: the fleet's policy in {} does not load ({e}); the file given is in force",
                    current.display()
                ),
            }
        }
        let text = match started_with {
            Some(p) => std::fs::read_to_string(p)
                .with_context(|| format!("cannot read {}", p.display()))?,
            None => String::new(),
        };
        std::fs::write(&current, text)
            .with_context(|| format!("cannot write {}", current.display()))?;
        Ok(())
    }

    fn service(&self) -> Option<Arc<Service>> {
        self.service.get().and_then(std::sync::Weak::upgrade)
    }

    fn record(
        &self,
        tool: &str,
        verdict: Verdict,
        code: Option<bulwark_engine::ReasonCode>,
        reason: String,
    ) {
        let Some(a) = &self.audit else { return };
        let mut d = Decision::invalid_input(reason, "fleet");
        d.findings.clear();
        d.safer_alternative = None;
        d.decision = verdict;
        d.reason_code = code;
        d.tool = tool.to_string();
        let _ = a.record(&bulwark_audit::Entry::bare("fleet", "fleet", &d));
    }

    async fn events(self: Arc<Self>, mut rx: tokio::sync::mpsc::Receiver<FleetEvent>) {
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        loop {
            tokio::select! {
                ev = rx.recv() => match ev {
                    Some(ev) => self.event(ev),
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
                service.evaluator.cache_verdict(a.tool_hash, v, a.ttl_min);
                if v == Verdict::Block {
                    // A speculative call already ran: recorded, it cannot be undone.
                    self.retroactive
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let reason = format!(
                        "RETROACTIVE: the fleet blocks tool {} after a speculative allow: {}",
                        hex(&a.tool_hash[..4]),
                        a.reason
                    );
                    eprintln!("bulwark daemon: {reason}");
                    self.record(
                        "",
                        Verdict::Block,
                        Some(bulwark_engine::ReasonCode::CloudBlock),
                        reason.clone(),
                    );
                    self.client.report("retroactive_block", &reason, false, 0.0);
                }
            }
            FleetEvent::Policy(u) => self.apply(&service, &u),
            FleetEvent::Kill(cmd, reason) => {
                match cmd {
                    KillCommand::BlockAll | KillCommand::Lockdown => {
                        service.evaluator.set_lockdown(true)
                    }
                    KillCommand::Resume => service.evaluator.set_lockdown(false),
                    KillCommand::FlushCache => service.evaluator.flush_verdicts(),
                }
                let what = format!("kill switch {cmd:?}: {reason}");
                eprintln!("bulwark daemon: {what}");
                self.record(
                    "",
                    Verdict::Block,
                    Some(bulwark_engine::ReasonCode::Lockdown),
                    what.clone(),
                );
                self.client.report("kill_applied", &what, false, 0.0);
            }
            FleetEvent::Dropped(why) => {
                self.dropped
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                eprintln!("bulwark daemon: fleet: {why}");
            }
        }
    }

    fn apply(&self, service: &Service, u: &PolicyUpdate) {
        let parsed = bulwark_policy::load_str(&format!("fleet policy v{}", u.version), &u.policy);
        let policy = match parsed {
            Ok(p) => p,
            Err(e) => {
                let why = format!("policy {} refused: {e}", u.version);
                eprintln!("bulwark daemon: fleet: {why}");
                self.client.report("policy_refused", &why, false, 0.0);
                return;
            }
        };
        // A/B: the policy in force becomes the previous one, atomically replaced.
        let current = service_policy_text(service, &self.files);
        let write = || -> std::io::Result<()> {
            std::fs::write(self.files.previous(), &current)?;
            let tmp = self.files.current().with_extension("tmp");
            std::fs::write(&tmp, &u.policy)?;
            std::fs::rename(&tmp, self.files.current())
        };
        if let Err(e) = write() {
            let why = format!("policy {} not applied: {e}", u.version);
            self.client.report("policy_refused", &why, false, 0.0);
            return;
        }
        service.evaluator.replace_policy(policy);
        service.evaluator.flush_verdicts();
        self.files.set_version(u.version);
        self.client.applied(u.version);
        let baseline = {
            let mut w = lock(&self.watch);
            let now = now_ms();
            let base = w.rates.baseline(now, w.cfg.minute_ms);
            w.canary = Some(Canary::start(w.cfg, base, now));
            w.version = u.version;
            base
        };
        let what = format!(
            "policy {} applied (seq {}); canary against a {:.1}% block rate",
            u.version,
            u.seq,
            baseline * 100.0
        );
        eprintln!("bulwark daemon: fleet: {what}");
        self.record("", Verdict::Allow, None, what.clone());
        self.client.report("policy_applied", &what, true, baseline);
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
        let previous = std::fs::read_to_string(self.files.previous()).unwrap_or_default();
        let restored = if previous.is_empty() {
            bulwark_policy::Policy::builtin().map_err(|e| e.to_string())
        } else {
            bulwark_policy::load_str("previous fleet policy", &previous).map_err(|e| e.to_string())
        };
        match restored {
            Ok(p) => {
                service.evaluator.replace_policy(p);
                service.evaluator.flush_verdicts();
                let _ = std::fs::write(self.files.current(), &previous);
                let what = format!("rolled back to the previous policy: {why}");
                eprintln!("bulwark daemon: fleet: {what}");
                self.record("", Verdict::Block, None, what.clone());
                self.client.report("rollback", &what, false, 0.0);
            }
            Err(e) => eprintln!("bulwark daemon: fleet: cannot roll back: {e}"),
        }
    }
}

/// The text of the policy in force, for the A/B slot: the fleet's current one when there
/// is one, else the file the daemon started with.
fn service_policy_text(_service: &Service, files: &PolicyFiles) -> String {
    std::fs::read_to_string(files.current()).unwrap_or_default()
}

impl Escalator for FleetDevice {
    fn escalate(&self, call: &Call, wait: bool) -> Option<(Verdict, u64)> {
        let content = match call.payload() {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let session = json!({"id": call.session});
        let caps = call
            .declared_capabilities
            .map(|c| c.to_defenseclaw())
            .unwrap_or(0);
        if wait {
            let e = Escalation {
                tool: &call.tool.name,
                capabilities: caps,
                destination: call.destination.as_deref(),
                content: &content,
                session,
            };
            let client = Arc::clone(&self.client);
            let timeout = self.timeout;
            let got = tokio::task::block_in_place(|| {
                self.handle
                    .block_on(async move { client.escalate(&e, Some(timeout)).await })
            });
            return got.map(|a| (verdict_of(a.action), a.ttl_min));
        }
        let client = Arc::clone(&self.client);
        let (tool, dest) = (call.tool.name.clone(), call.destination.clone());
        self.handle.spawn(async move {
            let e = Escalation {
                tool: &tool,
                capabilities: caps,
                destination: dest.as_deref(),
                content: &content,
                session,
            };
            client.escalate(&e, None).await;
        });
        None
    }

    fn observe(&self, d: &Decision) {
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
        let c = self.client.counters();
        let w = lock(&self.watch);
        json!({
            "policy_version": w.version,
            "canary": w.canary.is_some(),
            "replies": {"accepted": c.accepted, "forged": c.forged, "replayed": c.replayed, "late": c.late, "mismatched": c.mismatched},
            "dropped": self.dropped.load(std::sync::atomic::Ordering::Relaxed),
            "retroactive_blocks": self.retroactive.load(std::sync::atomic::Ordering::Relaxed),
        })
    }
}
