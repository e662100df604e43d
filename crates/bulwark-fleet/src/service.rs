//! The fleet service (`bulwark fleet serve`): answers verdict requests from its verdict
//! store keyed by tool hash — unknown hashes are `BLOCK` — signs every reply with the
//! fleet key, and keeps track of the devices that report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
use serde::{Deserialize, Serialize};

use crate::auth::FleetSigner;
use crate::topics;
use crate::wire::{Action, Status, VERSION, VerdictReply, VerdictRequest};

/// Devices tracked at most; past it the longest silent is forgotten.
pub const MAX_DEVICES: usize = 100_000;
/// Verdicts stored at most.
pub const MAX_VERDICTS: usize = 100_000;
/// The TTL of the `BLOCK` an unknown tool gets, in minutes: short, so a verdict set later
/// reaches devices soon.
pub const UNKNOWN_TTL_MIN: u64 = 1;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// A stored verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredVerdict {
    /// The action.
    pub action: Action,
    /// TTL in minutes sent to devices.
    pub ttl_min: u64,
    /// The tool name, when the operator gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Why.
    #[serde(default)]
    pub note: String,
}

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file system refused.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// Not a verdict store.
    #[error("{0} is not a verdict store: {1}")]
    Corrupt(PathBuf, String),
    /// Too many verdicts.
    #[error("the verdict store holds {MAX_VERDICTS} verdicts already")]
    Full,
}

type Stamp = Option<(u64, std::time::SystemTime, u64)>;

/// The verdict store: `STATE_DIR/fleet/verdicts.json`, tool hash → verdict. The CLI edits
/// the file; a running service reads it again when it changes.
pub struct VerdictStore {
    path: PathBuf,
    cache: Mutex<(Stamp, Arc<BTreeMap<String, StoredVerdict>>)>,
}

impl VerdictStore {
    /// The store at `path` (it need not exist yet).
    pub fn open(path: &Path) -> Result<VerdictStore, StoreError> {
        let s = VerdictStore {
            path: path.to_path_buf(),
            cache: Mutex::new((None, Arc::new(BTreeMap::new()))),
        };
        s.load()?;
        Ok(s)
    }

    fn read(&self) -> Result<BTreeMap<String, StoredVerdict>, StoreError> {
        match std::fs::read_to_string(&self.path) {
            Ok(t) => serde_json::from_str(&t)
                .map_err(|e| StoreError::Corrupt(self.path.clone(), e.to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(StoreError::Io(self.path.clone(), e)),
        }
    }

    fn load(&self) -> Result<Arc<BTreeMap<String, StoredVerdict>>, StoreError> {
        use std::os::unix::fs::MetadataExt;
        // The file is replaced by rename on every change: a new inode even within one
        // tick of the clock.
        let stamp = std::fs::metadata(&self.path)
            .ok()
            .and_then(|m| Some((m.ino(), m.modified().ok()?, m.len())));
        {
            let c = lock(&self.cache);
            if stamp.is_some() && c.0 == stamp {
                return Ok(Arc::clone(&c.1));
            }
        }
        let map = Arc::new(self.read()?);
        *lock(&self.cache) = (stamp, Arc::clone(&map));
        Ok(map)
    }

    /// The verdict for a tool hash.
    pub fn get(&self, hash: &str) -> Result<Option<StoredVerdict>, StoreError> {
        Ok(self.load()?.get(hash).cloned())
    }

    /// Every verdict.
    pub fn list(&self) -> Result<BTreeMap<String, StoredVerdict>, StoreError> {
        Ok((*self.load()?).clone())
    }

    /// Sets (or with `None`, removes) the verdict for `hash`.
    pub fn set(&self, hash: &str, v: Option<StoredVerdict>) -> Result<bool, StoreError> {
        let mut map = self.read()?;
        let changed = match v {
            Some(v) => {
                if map.len() >= MAX_VERDICTS && !map.contains_key(hash) {
                    return Err(StoreError::Full);
                }
                map.insert(hash.to_string(), v);
                true
            }
            None => map.remove(hash).is_some(),
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Io(dir.to_path_buf(), e))?;
        }
        let tmp = self.path.with_extension("tmp");
        let text = serde_json::to_string_pretty(&map)
            .map_err(|e| StoreError::Corrupt(self.path.clone(), e.to_string()))?;
        std::fs::write(&tmp, text).map_err(|e| StoreError::Io(tmp.clone(), e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| StoreError::Io(self.path.clone(), e))?;
        *lock(&self.cache) = (None, Arc::new(BTreeMap::new()));
        Ok(changed)
    }
}

/// What the service knows of a device.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DeviceInfo {
    /// Last message, Unix milliseconds (service clock).
    pub last_seen_ms: u64,
    /// Its policy version, as it last reported.
    pub policy_version: u64,
    /// Whether a canary window was open.
    pub canary: bool,
    /// Its block rate, as it last reported.
    pub block_rate: f64,
    /// Its last event.
    pub last_event: String,
    /// Its last event's detail.
    pub detail: String,
    /// Verdict requests answered.
    pub requests: u64,
}

/// The service.
pub struct FleetService {
    fleet: String,
    signer: FleetSigner,
    store: VerdictStore,
    devices: Mutex<BTreeMap<String, DeviceInfo>>,
    /// Requests answered, and messages refused.
    pub answered: std::sync::atomic::AtomicU64,
    /// Malformed or misaddressed messages dropped.
    pub dropped: std::sync::atomic::AtomicU64,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl FleetService {
    /// A service for `fleet`, signing with `signer`, answering from `store`.
    pub fn new(fleet: &str, signer: FleetSigner, store: VerdictStore) -> FleetService {
        FleetService {
            fleet: fleet.to_string(),
            signer,
            store,
            devices: Mutex::new(BTreeMap::new()),
            answered: std::sync::atomic::AtomicU64::new(0),
            dropped: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn seen(&self, device: &str, f: impl FnOnce(&mut DeviceInfo)) {
        let mut d = lock(&self.devices);
        if d.len() >= MAX_DEVICES && !d.contains_key(device) {
            let oldest = d
                .iter()
                .min_by_key(|(_, i)| i.last_seen_ms)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                d.remove(&k);
            }
        }
        let info = d.entry(device.to_string()).or_default();
        info.last_seen_ms = now_ms();
        f(info);
    }

    /// The signed answer to a request that came on `topic`; `None` for a message that is
    /// not a request of the device the topic names.
    pub fn answer(&self, topic: &str, payload: &[u8]) -> Option<(String, VerdictReply)> {
        let device = topics::device_of(topic, &self.fleet, "verdict/request")?;
        let req: VerdictRequest = serde_json::from_slice(payload).ok()?;
        if req.device != device
            || req.v != VERSION
            || req.tool_hash.len() != 64
            || !topics::valid_id(device)
        {
            return None;
        }
        let stored = self.store.get(&req.tool_hash).ok().flatten();
        let (action, ttl_min, reason) = match stored {
            Some(v) => (v.action, v.ttl_min, v.note),
            None => (
                Action::Block,
                UNKNOWN_TTL_MIN,
                "unknown tool: the fleet has no verdict for it".to_string(),
            ),
        };
        let mut reply = VerdictReply {
            v: VERSION,
            device: req.device.clone(),
            nonce: req.nonce,
            tool_hash: req.tool_hash,
            action,
            ttl_min,
            reason,
            sig: None,
        };
        reply.sig = Some(self.signer.sign("verdict-reply", &reply));
        self.seen(device, |i| i.requests += 1);
        Some((topics::reply(&self.fleet, device), reply))
    }

    /// Takes in a device's report.
    pub fn status(&self, topic: &str, payload: &[u8]) -> bool {
        let Some(device) = topics::device_of(topic, &self.fleet, "status") else {
            return false;
        };
        let Ok(s) = serde_json::from_slice::<Status>(payload) else {
            return false;
        };
        if s.device != device {
            return false;
        }
        self.seen(device, |i| {
            i.policy_version = s.policy_version;
            i.canary = s.canary;
            i.block_rate = s.block_rate;
            i.last_event = crate::wire::cut(&s.event, 64);
            i.detail = crate::wire::cut(&s.detail, 500);
        });
        true
    }

    /// The devices seen.
    pub fn devices(&self) -> BTreeMap<String, DeviceInfo> {
        lock(&self.devices).clone()
    }

    /// Serves on the broker at `host:port` until `shutdown` completes; every `every`, the
    /// device table goes to `on_tick` (for `bulwark fleet status`).
    pub async fn serve(
        self: Arc<Self>,
        host: &str,
        port: u16,
        tls: Option<Arc<rustls::ClientConfig>>,
        shutdown: impl std::future::Future<Output = ()>,
        on_tick: impl Fn(&FleetService) + Send + 'static,
    ) {
        let mut opts = MqttOptions::new(
            format!("bulwark-fleet-{}-{}", self.fleet, std::process::id()),
            host,
            port,
        );
        opts.set_keep_alive(Duration::from_secs(10));
        opts.set_clean_session(true);
        opts.set_max_packet_size(crate::wire::MAX_MESSAGE, crate::wire::MAX_MESSAGE);
        if let Some(tls) = tls {
            opts.set_transport(rumqttc::Transport::tls_with_config(
                rumqttc::TlsConfiguration::Rustls(tls),
            ));
        }
        let (client, mut eventloop) = AsyncClient::new(opts, 4096);
        // Small messages both ways: Nagle and delayed ACKs would add tens of ms each.
        let mut net = rumqttc::NetworkOptions::new();
        net.set_tcp_nodelay(true);
        eventloop.set_network_options(net);
        let this = Arc::clone(&self);
        let run = async move {
            let mut backoff = Duration::from_millis(100);
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            let mut resubscribe = false;
            loop {
                // Never awaited: this loop alone drains the request queue.
                if resubscribe {
                    resubscribe = ![topics::requests(&this.fleet), topics::statuses(&this.fleet)]
                        .into_iter()
                        .all(|t| client.try_subscribe(t, QoS::AtLeastOnce).is_ok());
                }
                tokio::select! {
                    ev = eventloop.poll() => match ev {
                        Ok(Event::Incoming(Packet::ConnAck(_))) => {
                            backoff = Duration::from_millis(100);
                            resubscribe = true;
                        }
                        Ok(Event::Incoming(Packet::Publish(p))) => {
                            if let Some((topic, reply)) = this.answer(&p.topic, &p.payload) {
                                if let Ok(body) = serde_json::to_vec(&reply) {
                                    // Never waits on the event loop it runs in.
                                    let _ = client.try_publish(topic, QoS::AtLeastOnce, false, body);
                                    this.answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                }
                            } else if !this.status(&p.topic, &p.payload) {
                                this.dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                        }
                        Ok(_) => {}
                        Err(_) => {
                            tokio::time::sleep(backoff).await;
                            backoff = (backoff * 2).min(Duration::from_secs(5));
                        }
                    },
                    _ = tick.tick() => on_tick(&this),
                }
            }
        };
        tokio::select! {
            _ = run => {}
            _ = shutdown => {}
        }
    }
}

/// Publishes one retained message and waits until the broker has it (QoS 1 acknowledged),
/// at most `within`.
pub async fn publish_retained(
    host: &str,
    port: u16,
    tls: Option<Arc<rustls::ClientConfig>>,
    topic: &str,
    body: Vec<u8>,
    within: Duration,
) -> Result<(), String> {
    let mut opts = MqttOptions::new(
        format!("bulwark-publish-{}", std::process::id()),
        host,
        port,
    );
    opts.set_keep_alive(Duration::from_secs(5));
    opts.set_max_packet_size(crate::wire::MAX_MESSAGE, crate::wire::MAX_MESSAGE);
    if let Some(tls) = tls {
        opts.set_transport(rumqttc::Transport::tls_with_config(
            rumqttc::TlsConfiguration::Rustls(tls),
        ));
    }
    let (client, mut eventloop) = AsyncClient::new(opts, 16);
    // Small messages both ways: Nagle and delayed ACKs would add tens of ms each.
    let mut net = rumqttc::NetworkOptions::new();
    net.set_tcp_nodelay(true);
    eventloop.set_network_options(net);
    client
        .publish(topic, QoS::AtLeastOnce, true, body)
        .await
        .map_err(|e| e.to_string())?;
    let wait = async {
        loop {
            match eventloop.poll().await {
                Ok(Event::Incoming(Packet::PubAck(_))) => return Ok(()),
                Ok(_) => {}
                Err(e) => return Err(format!("cannot reach the broker at {host}:{port}: {e}")),
            }
        }
    };
    let r = tokio::time::timeout(within, wait)
        .await
        .map_err(|_| format!("the broker at {host}:{port} did not acknowledge in time"))?;
    let _ = client.disconnect().await;
    r
}
