//! Bulwark's fleet over MQTT 3.1.1 (seed 000's cloud half): devices escalate tools their
//! policy does not decide to a fleet service and trust only authenticated replies bound
//! to their own requests; the fleet pushes signed policies (anti-rollback, replay
//! protection, canary rollback on a block-rate spike) and a signed kill switch.
//!
//! The broker is the distributed part (Mosquitto, or a clustered broker); Bulwark never
//! ships one. The protocol logic here is sans-I/O ([`device`], [`canary`], [`wire`],
//! [`auth`]); [`client`] and [`service`] put it on MQTT with `rumqttc`; [`runtime`] is the
//! device inside a front — its policy slots, kill switch and canary on disk, driving the
//! front's gate and answering its escalations. [`operator`] is the other end, as
//! `bulwark fleet …` drives it — the fleet key, the sequence counters, signed policy
//! pushes and kill commands, and the service keeping its devices' status.
//!
//! ```
//! use bulwark_fleet::auth::{FleetSigner, Trust};
//! use bulwark_fleet::device::{Device, Escalation};
//! use bulwark_fleet::wire::{Action, VerdictReply, VERSION};
//!
//! let fleet = FleetSigner::from_seed(&[7; 32]);
//! let mut device = Device::new("edge-1", Trust::fleet_hex(&fleet.public_hex()).unwrap(), 1);
//! let e = Escalation { tool: "call_api", ..Escalation::default() };
//! let req = device.request(&"ab".repeat(16), &e, 2_000, 0).unwrap();
//! let mut reply = VerdictReply {
//!     v: VERSION, device: req.device.clone(), nonce: req.nonce.clone(),
//!     tool_hash: req.tool_hash.clone(), action: Action::Allow, ttl_min: 30,
//!     reason: String::new(), sig: None,
//! };
//! reply.sig = Some(fleet.sign("verdict-reply", &reply));
//! assert_eq!(device.accept(&reply).unwrap().action, Action::Allow);
//! assert!(device.accept(&reply).is_err()); // a replay is dropped
//! ```

pub mod auth;
pub mod canary;
pub mod client;
pub mod device;
pub mod operator;
pub mod runtime;
pub mod service;
pub mod tls;
pub mod topics;
pub mod wire;
