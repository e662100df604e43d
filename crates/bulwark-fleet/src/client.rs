//! The device's MQTT client: one connection per device (clean session, its own client id),
//! reconnecting with backoff, that sends verdict requests and reports, and hands the front
//! what it accepts — verdicts, policy updates, kill commands — after [`Device`] checked
//! them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, oneshot};

use crate::device::{Accepted, Device, Escalation};
use crate::topics;
use crate::wire::{Kill, KillCommand, PolicyUpdate, Status, VerdictReply};

/// Where and who.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Broker host.
    pub host: String,
    /// Broker port.
    pub port: u16,
    /// The fleet's name (topic prefix).
    pub fleet: String,
    /// This device.
    pub device: String,
    /// TLS to the broker (`mqtts://`), trusting the fleet's CA.
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

/// What the front is told.
#[derive(Debug)]
pub enum FleetEvent {
    /// A verdict arrived for a request nobody waits for any more (speculative, or late
    /// within its deadline for a waiter that gave up): cache it.
    Verdict(Accepted),
    /// A policy update passed its checks: validate, apply, report.
    Policy(PolicyUpdate),
    /// A kill command passed its checks: carry it out.
    Kill(KillCommand, u64, String),
}

/// Verdicts queued for the front at most; past it they are dropped and counted (a dropped
/// verdict is only a cache miss later).
pub const EVENT_QUEUE: usize = 1024;
/// Policy updates and kill commands queued at most. They come on their own queue, which
/// nothing unsigned reaches, so junk on a device's topics cannot crowd them out.
pub const CONTROL_QUEUE: usize = 64;

/// The two queues a front reads.
pub struct Events {
    /// Verdicts for calls nobody waits for.
    pub verdicts: mpsc::Receiver<FleetEvent>,
    /// Policy updates and kill commands.
    pub control: mpsc::Receiver<FleetEvent>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// A connected device.
pub struct FleetClient {
    client: AsyncClient,
    cfg: ClientConfig,
    device: Mutex<Device>,
    waiters: Mutex<HashMap<String, oneshot::Sender<Accepted>>>,
    seed: [u8; 32],
    counter: std::sync::atomic::AtomicU64,
    clock: std::time::Instant,
    dropped: std::sync::atomic::AtomicU64,
    last_dropped: Mutex<String>,
}

impl FleetClient {
    /// Connects in the background (the returned client works before the broker answers:
    /// requests fail or time out until it does) and starts the event loop.
    pub fn start(cfg: ClientConfig, device: Device, seed: [u8; 32]) -> (Arc<FleetClient>, Events) {
        let mut opts = MqttOptions::new(
            format!("bulwark-{}", cfg.device),
            cfg.host.clone(),
            cfg.port,
        );
        opts.set_keep_alive(Duration::from_secs(10));
        opts.set_clean_session(true);
        opts.set_max_packet_size(crate::wire::MAX_MESSAGE, crate::wire::MAX_MESSAGE);
        if let Some(tls) = &cfg.tls {
            opts.set_transport(rumqttc::Transport::tls_with_config(
                rumqttc::TlsConfiguration::Rustls(Arc::clone(tls)),
            ));
        }
        let (client, mut eventloop) = AsyncClient::new(opts, 256);
        // Small messages both ways: Nagle and delayed ACKs would add tens of ms each.
        let mut net = rumqttc::NetworkOptions::new();
        net.set_tcp_nodelay(true);
        eventloop.set_network_options(net);
        let (tx, verdicts) = mpsc::channel(EVENT_QUEUE);
        let (ctl, control) = mpsc::channel(CONTROL_QUEUE);
        let me = Arc::new(FleetClient {
            client,
            cfg,
            device: Mutex::new(device),
            waiters: Mutex::new(HashMap::new()),
            seed,
            counter: std::sync::atomic::AtomicU64::new(0),
            clock: std::time::Instant::now(),
            dropped: std::sync::atomic::AtomicU64::new(0),
            last_dropped: Mutex::new(String::new()),
        });
        let this = Arc::clone(&me);
        tokio::spawn(async move {
            let mut backoff = Duration::from_millis(100);
            let mut resubscribe = false;
            loop {
                match eventloop.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => {
                        backoff = Duration::from_millis(100);
                        // A clean session forgets subscriptions: make them on every connect.
                        resubscribe = true;
                    }
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        this.incoming(&p.topic, &p.payload, &tx, &ctl);
                    }
                    Ok(_) => {}
                    Err(_) => {
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                    }
                }
                // Never awaited here: only this loop drains the request queue, so waiting
                // for room in it would wait for ever. A full queue is tried again next turn.
                if resubscribe {
                    resubscribe = !this.subscribe();
                }
                this.expire();
            }
        });
        (me, Events { verdicts, control })
    }

    fn subscribe(&self) -> bool {
        let c = &self.cfg;
        [
            topics::reply(&c.fleet, &c.device),
            topics::policy(&c.fleet),
            topics::kill(&c.fleet),
        ]
        .into_iter()
        .all(|t| self.client.try_subscribe(t, QoS::AtLeastOnce).is_ok())
    }

    fn drop_message(&self, why: String) {
        self.dropped
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *lock(&self.last_dropped) = why;
    }

    /// Messages dropped so far (forged, replayed, late, mismatched, malformed, refused),
    /// and why the last one was.
    pub fn dropped(&self) -> (u64, String) {
        (
            self.dropped.load(std::sync::atomic::Ordering::Relaxed),
            lock(&self.last_dropped).clone(),
        )
    }

    fn now_ms(&self) -> u64 {
        self.clock.elapsed().as_millis() as u64
    }

    fn expire(&self) {
        let late = lock(&self.device).expire(self.now_ms());
        let mut w = lock(&self.waiters);
        for n in late {
            w.remove(&n);
        }
    }

    fn incoming(
        &self,
        topic: &str,
        payload: &[u8],
        tx: &mpsc::Sender<FleetEvent>,
        ctl: &mpsc::Sender<FleetEvent>,
    ) {
        let c = &self.cfg;
        let send = |e: FleetEvent| {
            if tx.try_send(e).is_err() {
                self.drop_message("the verdict queue is full".into());
            }
        };
        let control = |e: FleetEvent| {
            if ctl.try_send(e).is_err() {
                self.drop_message("the control queue is full".into());
            }
        };
        if payload.len() > crate::wire::MAX_MESSAGE {
            return self.drop_message(format!("{topic}: message too large"));
        }
        if topic == topics::reply(&c.fleet, &c.device) {
            let Ok(reply) = serde_json::from_slice::<VerdictReply>(payload) else {
                return self.drop_message("a reply that is not JSON".into());
            };
            let accepted = lock(&self.device).accept(&reply);
            match accepted {
                Ok(a) => {
                    let waiter = lock(&self.waiters).remove(&a.nonce);
                    match waiter {
                        Some(w) => {
                            if let Err(a) = w.send(a) {
                                send(FleetEvent::Verdict(a));
                            }
                        }
                        None => send(FleetEvent::Verdict(a)),
                    }
                }
                Err(why) => self.drop_message(format!("verdict reply dropped: {why}")),
            }
        } else if topic == topics::policy(&c.fleet) {
            let Ok(u) = serde_json::from_slice::<PolicyUpdate>(payload) else {
                return self.drop_message("a policy update that is not JSON".into());
            };
            let checked = lock(&self.device).check_policy(&u);
            match checked {
                Ok(()) => control(FleetEvent::Policy(u)),
                Err(why) => self.drop_message(format!(
                    "policy update {} (seq {}) refused: {why}",
                    u.version, u.seq
                )),
            }
        } else if topic == topics::kill(&c.fleet) {
            let Ok(k) = serde_json::from_slice::<Kill>(payload) else {
                return self.drop_message("a kill command that is not JSON".into());
            };
            let checked = lock(&self.device).check_kill(&k);
            match checked {
                Ok(cmd) => control(FleetEvent::Kill(cmd, k.seq, k.reason)),
                Err(why) => self.drop_message(format!("kill command refused: {why}")),
            }
        }
    }

    /// A fresh nonce: SHA-256 of a per-process random seed and a counter, 32 hex digits.
    fn nonce(&self) -> String {
        let n = self
            .counter
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut h = Sha256::new();
        h.update(self.seed);
        h.update(n.to_le_bytes());
        h.finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// Asks the fleet about a call. With `wait`, waits that long for the verdict (`None`
    /// when none came: the caller blocks); without, returns at once and the verdict comes
    /// later as [`FleetEvent::Verdict`]. A publish that fails is `None` too.
    pub async fn escalate(&self, e: &Escalation<'_>, wait: Option<Duration>) -> Option<Accepted> {
        let nonce = self.nonce();
        let within = wait.unwrap_or(Duration::from_secs(30));
        let deadline = self.now_ms().saturating_add(within.as_millis() as u64);
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let req = lock(&self.device).request(&nonce, e, deadline, ts).ok()?;
        let (tx, rx) = oneshot::channel();
        if wait.is_some() {
            lock(&self.waiters).insert(nonce.clone(), tx);
        }
        let body = serde_json::to_vec(&req).ok()?;
        let topic = topics::request(&self.cfg.fleet, &self.cfg.device);
        let published = self
            .client
            .try_publish(topic, QoS::AtLeastOnce, false, body);
        if published.is_err() {
            lock(&self.waiters).remove(&nonce);
            lock(&self.device).forget(&nonce);
            return None;
        }
        let wait = wait?;
        match tokio::time::timeout(wait, rx).await {
            Ok(Ok(a)) => Some(a),
            _ => {
                lock(&self.waiters).remove(&nonce);
                lock(&self.device).forget(&nonce);
                None
            }
        }
    }

    /// Reports to the fleet (best effort), with the policy version running.
    pub fn report(&self, event: &str, detail: &str, running: u64, canary: bool, block_rate: f64) {
        let status = Status {
            v: crate::wire::VERSION,
            device: self.cfg.device.clone(),
            event: event.to_string(),
            policy_version: running,
            canary,
            block_rate,
            detail: crate::wire::cut(detail, 1000),
            ts_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
        };
        if let Ok(body) = serde_json::to_vec(&status) {
            let topic = topics::status(&self.cfg.fleet, &self.cfg.device);
            let _ = self
                .client
                .try_publish(topic, QoS::AtLeastOnce, false, body);
        }
    }

    /// The policy `version` is in force.
    pub fn applied(&self, version: u64) {
        lock(&self.device).applied(version);
    }

    /// What was accepted and dropped so far.
    pub fn counters(&self) -> crate::device::Counters {
        lock(&self.device).counters
    }

    /// Disconnects.
    pub async fn stop(&self) {
        let _ = self.client.disconnect().await;
    }
}
