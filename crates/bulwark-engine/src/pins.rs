//! Trust-on-first-use pins of tool definitions (seed 003): the first definition a server
//! lists for a tool is pinned; a different one later is a rug pull and the tool is withheld.

use std::sync::Arc;

use bulwark_policy::ReasonCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bounded::BoundedMap;

/// What a tool name looks like to a person: compatibility forms folded, look-alike letters
/// mapped to ASCII, case folded, invisible characters and whitespace dropped. Two names with
/// one skeleton cannot be told apart by a model reading a tool list.
pub fn name_skeleton(tool: &str) -> String {
    bulwark_scan::normalize(tool)
        .text
        .split_whitespace()
        .collect()
}

/// A pinned definition.
#[derive(Clone, Debug, PartialEq)]
pub struct Pin {
    /// SHA-256 of the canonical definition, hex.
    pub digest: String,
    /// The input schema, for argument validation.
    pub input_schema: Value,
    /// Why the tool is withheld, if it is.
    pub quarantined: Option<(ReasonCode, String)>,
    /// The digest of the definition that was withheld, which `accept` pins.
    pub offered: Option<String>,
}

/// A pin as stored by a front (`pins.json`), one per tool of a server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PinRecord {
    /// The tool's name as the server lists it.
    pub tool: String,
    /// SHA-256 of the pinned definition.
    pub digest: String,
    /// The pinned input schema.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub input_schema: Value,
    /// The reason code it is withheld for, if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<ReasonCode>,
    /// Why, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The digest of the withheld definition, which accepting pins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered: Option<String>,
}

/// Pins by `(server, lower-cased tool name)`.
#[derive(Debug)]
pub struct Pins {
    map: BoundedMap<(String, String), Arc<Pin>>,
}

impl Pins {
    /// A pin store for at most `limit` tools.
    pub fn new(limit: usize) -> Self {
        Pins {
            map: BoundedMap::new(limit),
        }
    }

    fn key(server: Option<&str>, tool: &str) -> (String, String) {
        (server.unwrap_or("").to_string(), tool.to_lowercase())
    }

    /// The pin for a tool on a server.
    pub fn get(&self, server: Option<&str>, tool: &str) -> Option<&Pin> {
        self.map.peek(&Self::key(server, tool)).map(|p| &**p)
    }

    /// The pin for a tool on a server, shared (a store hands it to a decision without
    /// holding its lock, or copying the schema).
    pub fn get_shared(&self, server: Option<&str>, tool: &str) -> Option<Arc<Pin>> {
        self.map.peek(&Self::key(server, tool)).cloned()
    }

    /// What a definition that went through changes: a tool with no pin is pinned to it;
    /// a pin with the same digest and no schema learns this one's.
    pub fn on_allowed(&mut self, server: Option<&str>, tool: &str, digest: String, schema: &Value) {
        match self.get(server, tool) {
            Some(p) if p.digest == digest => self.learn_schema(server, tool, schema),
            Some(_) => {}
            None => self.set(
                server,
                tool,
                Pin {
                    digest,
                    input_schema: schema.clone(),
                    quarantined: None,
                    offered: None,
                },
            ),
        }
    }

    /// A tool pinned already that this one would shadow, as (server, tool): the same name
    /// on another server, or a name that looks the same ([`name_skeleton`]) on any server,
    /// this one included.
    pub fn other_server(&self, server: Option<&str>, tool: &str) -> Option<(String, String)> {
        let (me, name) = Self::key(server, tool);
        let skeleton = name_skeleton(tool);
        self.map
            .iter()
            .find(|((s, t), _)| {
                let alike = *t == name || name_skeleton(t) == skeleton;
                alike && (*s != me || *t != name)
            })
            .map(|((s, t), _)| (s.clone(), t.clone()))
    }

    /// Whether no new tool can be pinned. Pins are never evicted to make room — that would
    /// let a server flood the table until its quarantined tool is forgotten — so a full
    /// table withholds new tools instead.
    pub fn is_full(&self) -> bool {
        self.map.len() >= self.map.limit()
    }

    /// Pins a definition (first use) or records a quarantine; a new tool is not pinned when
    /// the table is full.
    pub fn set(&mut self, server: Option<&str>, tool: &str, pin: Pin) {
        let key = Self::key(server, tool);
        if self.map.peek(&key).is_some() || !self.is_full() {
            self.map.insert(key, Arc::new(pin));
        }
    }

    /// Learns the input schema of a pinned tool that has none (one accepted by an operator).
    pub fn learn_schema(&mut self, server: Option<&str>, tool: &str, schema: &Value) {
        if let Some(pin) = self.map.get_mut(&Self::key(server, tool))
            && pin.input_schema.is_null()
        {
            Arc::make_mut(pin).input_schema = schema.clone();
        }
    }

    /// Marks a tool withheld, pinning it if it was not.
    pub fn quarantine(
        &mut self,
        server: Option<&str>,
        tool: &str,
        digest: String,
        code: ReasonCode,
        reason: String,
    ) {
        let key = Self::key(server, tool);
        let full = self.is_full();
        match self.map.get_mut(&key) {
            Some(pin) => {
                let pin = Arc::make_mut(pin);
                pin.quarantined = Some((code, reason));
                pin.offered = Some(digest);
            }
            None if full => {}
            None => self.map.insert(
                key,
                Arc::new(Pin {
                    digest: digest.clone(),
                    input_schema: Value::Null,
                    quarantined: Some((code, reason)),
                    offered: Some(digest),
                }),
            ),
        }
    }

    /// Lifts a quarantine and re-pins to `digest` (an operator accepted the new definition).
    pub fn accept(
        &mut self,
        server: Option<&str>,
        tool: &str,
        digest: String,
        input_schema: Value,
    ) {
        self.map.insert(
            Self::key(server, tool),
            Arc::new(Pin {
                digest,
                input_schema,
                quarantined: None,
                offered: None,
            }),
        );
    }

    /// The pins of one server, for storing. Tool names are the lower-cased keys.
    pub fn export(&self, server: Option<&str>) -> Vec<PinRecord> {
        let me = server.unwrap_or("");
        let mut out: Vec<PinRecord> = self
            .map
            .iter()
            .filter(|((s, _), _)| s == me)
            .map(|((_, tool), pin)| PinRecord {
                tool: tool.clone(),
                digest: pin.digest.clone(),
                input_schema: pin.input_schema.clone(),
                withheld: pin.quarantined.as_ref().map(|(c, _)| *c),
                reason: pin.quarantined.as_ref().map(|(_, r)| r.clone()),
                offered: pin.offered.clone(),
            })
            .collect();
        out.sort_by(|a, b| a.tool.cmp(&b.tool));
        out
    }

    /// Replaces one server's pins with stored ones (a front loading `pins.json`, or taking
    /// in an operator's `bulwark pins accept`).
    pub fn import(&mut self, server: Option<&str>, records: &[PinRecord]) {
        let me = server.unwrap_or("").to_string();
        self.map.retain(|(s, _), _| *s != me);
        for r in records {
            let quarantined = r.withheld.map(|c| {
                (
                    c,
                    r.reason
                        .clone()
                        .unwrap_or_else(|| format!("withheld ({})", c.as_str())),
                )
            });
            self.map.insert(
                (me.clone(), r.tool.to_lowercase()),
                Arc::new(Pin {
                    digest: r.digest.clone(),
                    input_schema: r.input_schema.clone(),
                    quarantined,
                    offered: r.offered.clone(),
                }),
            );
        }
    }

    /// Number of pinned tools.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nothing is pinned.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_withholds_new_tools_and_never_forgets_a_quarantine() {
        let mut p = Pins::new(3);
        p.quarantine(
            Some("s"),
            "bad",
            "d0".into(),
            ReasonCode::RugPull,
            "changed".into(),
        );
        for i in 0..10 {
            let pin = Pin {
                digest: format!("d{i}"),
                input_schema: Value::Null,
                quarantined: None,
                offered: None,
            };
            p.set(Some("s"), &format!("junk{i}"), pin);
        }
        assert!(p.is_full());
        assert!(p.get(Some("s"), "bad").unwrap().quarantined.is_some());
        assert!(p.get(Some("s"), "junk9").is_none());
    }

    #[test]
    fn look_alike_names_shadow_on_any_server_and_the_same_name_on_another() {
        let mut p = Pins::new(16);
        p.on_allowed(Some("a"), "read_file", "d".into(), &Value::Null);
        // The same tool again on its own server shadows nothing.
        assert_eq!(p.other_server(Some("a"), "read_file"), None);
        assert_eq!(p.other_server(Some("a"), "write_file"), None);
        let hit = Some(("a".to_string(), "read_file".to_string()));
        assert_eq!(p.other_server(Some("b"), "read_file"), hit);
        for like in [
            "re\u{430}d_file",
            "read\u{200b}_file",
            "\u{ff52}ead_file",
            "read_file ",
        ] {
            assert_eq!(p.other_server(Some("a"), like), hit, "{like:?}");
            assert_eq!(p.other_server(Some("b"), like), hit, "{like:?}");
        }
    }
}
