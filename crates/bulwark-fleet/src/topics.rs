//! The topic layout, under `bulwark/v1/FLEET/`:
//!
//! | topic | from → to | QoS | retained |
//! |---|---|---|---|
//! | `verdict/request/DEVICE` | device → service | 1 | no |
//! | `verdict/reply/DEVICE` | service → device | 1 | no |
//! | `policy` | publisher → devices | 1 | yes |
//! | `kill` | publisher → devices | 1 | yes |
//! | `status/DEVICE` | device → service | 1 | no |

/// The topic prefix of a fleet.
pub fn prefix(fleet: &str) -> String {
    format!("bulwark/v1/{fleet}")
}

/// Where `device` sends verdict requests.
pub fn request(fleet: &str, device: &str) -> String {
    format!("{}/verdict/request/{device}", prefix(fleet))
}

/// What the service subscribes to for requests.
pub fn requests(fleet: &str) -> String {
    format!("{}/verdict/request/+", prefix(fleet))
}

/// Where `device` gets its replies.
pub fn reply(fleet: &str, device: &str) -> String {
    format!("{}/verdict/reply/{device}", prefix(fleet))
}

/// The retained signed policy.
pub fn policy(fleet: &str) -> String {
    format!("{}/policy", prefix(fleet))
}

/// The retained signed kill command.
pub fn kill(fleet: &str) -> String {
    format!("{}/kill", prefix(fleet))
}

/// Where `device` reports.
pub fn status(fleet: &str, device: &str) -> String {
    format!("{}/status/{device}", prefix(fleet))
}

/// What the service subscribes to for reports.
pub fn statuses(fleet: &str) -> String {
    format!("{}/status/+", prefix(fleet))
}

/// The device a `.../DEVICE` topic names, when it is one of this fleet's.
pub fn device_of<'a>(topic: &'a str, fleet: &str, kind: &str) -> Option<&'a str> {
    let want = format!("{}/{kind}/", prefix(fleet));
    topic
        .strip_prefix(&want)
        .filter(|d| !d.is_empty() && !d.contains('/'))
}

/// Whether `id` may name a device or a fleet: letters, digits, `-`, `_`, `.`, at most 64
/// (no MQTT wildcards or separators).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}
