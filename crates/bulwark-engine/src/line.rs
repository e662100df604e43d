//! One call as a JSON object — the `bulwark check` line, which `libbulwark` and the daemon's
//! `check` method also take: the call, plus the testing aids (`expect`, `session_taint`,
//! `time_ms`). See docs/check.md.

use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

use crate::{Call, CapSet, Capability, Definition, Direction, Principal, Taint, ToolRef, Verdict};

/// Why a line is not a call.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum LineError {
    /// Not JSON, or not the expected fields.
    #[error("{0}")]
    Json(String),
    /// A field has a value outside its vocabulary.
    #[error("{0}")]
    Field(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    tool: String,
    args: Option<Value>,
    result: Option<Value>,
    description: Option<String>,
    input_schema: Option<Value>,
    annotations: Option<Value>,
    direction: Option<String>,
    session: Option<String>,
    principal: Option<String>,
    server: Option<String>,
    tool_hash: Option<String>,
    destination: Option<String>,
    capabilities: Option<Value>,
    expect: Option<String>,
    session_taint: Option<Vec<String>>,
    time_ms: Option<u64>,
}

/// A parsed line.
#[derive(Debug)]
pub struct Line {
    /// The call.
    pub call: Call,
    /// The expected decision.
    pub expect: Option<Verdict>,
    /// Taint to raise the session to first.
    pub session_taint: Vec<Taint>,
    /// A fixed monotonic time for this line.
    pub time_ms: Option<u64>,
}

fn field(msg: String) -> LineError {
    LineError::Field(msg)
}

/// Parses a line. Lines without a `session` get `default_session` as their own.
///
/// ```
/// let l = bulwark_engine::line::parse(r#"{"tool":"bash","args":{"command":"ls"}}"#, "s").unwrap();
/// assert_eq!(l.call.tool.name, "bash");
/// assert!(bulwark_engine::line::parse("{}", "s").is_err());
/// ```
pub fn parse(text: &str, default_session: &str) -> Result<Line, LineError> {
    let raw: Raw = serde_json::from_str(text).map_err(|e| LineError::Json(e.to_string()))?;
    let direction = match raw.direction.as_deref() {
        Some(d) => Direction::from_name(d).ok_or_else(|| {
            field(format!(
                "direction {d:?}: expected request, response, definition or proposal"
            ))
        })?,
        None if raw.result.is_some() => Direction::Response,
        None if raw.description.is_some() || raw.input_schema.is_some() => Direction::Definition,
        None => Direction::Request,
    };
    let args = raw.args.unwrap_or(Value::Object(Default::default()));
    if direction.acts() && !args.is_object() {
        return Err(field("args must be a JSON object".into()));
    }
    let expect = match raw.expect.as_deref() {
        Some(e) => Some(Verdict::from_name(e).ok_or_else(|| {
            field(format!(
                "expect {e:?}: expected allow, warn, mask, approve or block"
            ))
        })?),
        None => None,
    };
    let session_taint = raw
        .session_taint
        .unwrap_or_default()
        .iter()
        .map(|t| {
            Taint::from_name(t).ok_or_else(|| {
                field(format!(
                    "session_taint {t:?}: expected private-data or untrusted-input"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let declared_capabilities = match raw.capabilities {
        None => None,
        Some(Value::Number(n)) => {
            let bits = n.as_u64().filter(|b| *b <= 0x7f).ok_or_else(|| {
                field(format!(
                    "capabilities {n}: expected DefenseClaw bits 0..=0x7F"
                ))
            })?;
            Some(CapSet::from_defenseclaw(bits as u8).unwrap_or_default())
        }
        Some(Value::Array(names)) => Some(
            names
                .iter()
                .map(|v| {
                    v.as_str()
                        .and_then(Capability::from_name)
                        .ok_or_else(|| field(format!("capabilities: {v} is not a capability name")))
                })
                .collect::<Result<CapSet, _>>()?,
        ),
        Some(other) => {
            return Err(field(format!(
                "capabilities {other}: expected DefenseClaw bits or a list of names"
            )));
        }
    };
    // A request may carry its tool's definition too: what the words infer (issue 26).
    let definition = (direction == Direction::Definition
        || raw.description.is_some()
        || raw.input_schema.is_some()
        || raw.annotations.is_some())
    .then(|| Definition {
        description: raw.description.unwrap_or_default(),
        input_schema: raw.input_schema.unwrap_or(Value::Null),
        annotations: raw.annotations.unwrap_or(Value::Null),
    });
    let call = Call {
        principal: Principal {
            id: raw.principal,
            verified: false,
        },
        session: raw.session.unwrap_or_else(|| default_session.to_string()),
        tool: ToolRef {
            name: raw.tool,
            server: raw.server,
            hash: raw.tool_hash,
        },
        direction,
        args,
        result: raw.result,
        definition,
        destination: raw.destination,
        declared_capabilities,
        profile: crate::Profile::Standard,
    };
    Ok(Line {
        call,
        expect,
        session_taint,
        time_ms: raw.time_ms,
    })
}
