//! Trust-on-first-use pins of tool definitions (seed 003): the first definition a server
//! lists for a tool is pinned; a different one later is a rug pull and the tool is withheld.

use bulwark_policy::ReasonCode;
use serde_json::Value;

use crate::bounded::BoundedMap;

/// A pinned definition.
#[derive(Clone, Debug, PartialEq)]
pub struct Pin {
    /// SHA-256 of the canonical definition, hex.
    pub digest: String,
    /// The input schema, for argument validation.
    pub input_schema: Value,
    /// Why the tool is withheld, if it is.
    pub quarantined: Option<(ReasonCode, String)>,
}

/// Pins by `(server, lower-cased tool name)`.
#[derive(Debug)]
pub struct Pins {
    map: BoundedMap<(String, String), Pin>,
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
        self.map.peek(&Self::key(server, tool))
    }

    /// Another server that already pinned a tool of this name.
    pub fn other_server(&self, server: Option<&str>, tool: &str) -> Option<String> {
        let (me, name) = Self::key(server, tool);
        self.map
            .iter()
            .find(|((s, t), _)| *t == name && *s != me)
            .map(|((s, _), _)| s.clone())
    }

    /// Pins a definition (first use) or records a quarantine.
    pub fn set(&mut self, server: Option<&str>, tool: &str, pin: Pin) {
        self.map.insert(Self::key(server, tool), pin);
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
        match self.map.get_mut(&key) {
            Some(pin) => pin.quarantined = Some((code, reason)),
            None => self.map.insert(
                key,
                Pin {
                    digest,
                    input_schema: Value::Null,
                    quarantined: Some((code, reason)),
                },
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
            Pin {
                digest,
                input_schema,
                quarantined: None,
            },
        );
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
