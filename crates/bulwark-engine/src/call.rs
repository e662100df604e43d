//! The `Call`: one tool call crossing the boundary (DESIGN §4).

use bulwark_policy::CapSet;
use serde_json::Value;

/// Which way the call is going.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Arguments, agent → tool.
    Request,
    /// A result, tool → agent.
    Response,
    /// A tool definition as a server lists it.
    Definition,
    /// A tool call an LLM proposes in a completion.
    Proposal,
}

impl Direction {
    /// The name used on the wire (`request`, `response`, `definition`, `proposal`).
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Request => "request",
            Direction::Response => "response",
            Direction::Definition => "definition",
            Direction::Proposal => "proposal",
        }
    }

    /// Parses a wire name.
    pub fn from_name(s: &str) -> Option<Direction> {
        match s {
            "request" => Some(Direction::Request),
            "response" => Some(Direction::Response),
            "definition" => Some(Direction::Definition),
            "proposal" => Some(Direction::Proposal),
            _ => None,
        }
    }

    /// Whether this direction is a call that would act (request or proposal).
    pub fn acts(self) -> bool {
        matches!(self, Direction::Request | Direction::Proposal)
    }
}

/// Who is calling.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Principal {
    /// Agent id, user id or role, as the front established it.
    pub id: Option<String>,
    /// Whether the front verified it (bearer token, signed header, peer credentials).
    pub verified: bool,
}

/// The tool being called.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolRef {
    /// The name as the caller spelled it.
    pub name: String,
    /// Which upstream server offers it, when the front knows.
    pub server: Option<String>,
    /// A declared SHA-256 of the name in hex (DefenseClaw's binding); checked, never trusted.
    pub hash: Option<String>,
}

/// A tool definition (`tools/list` entry).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Definition {
    /// The description text.
    pub description: String,
    /// The input schema.
    pub input_schema: Value,
    /// Annotations and any other fields the server sent.
    pub annotations: Value,
}

/// One tool call.
///
/// ```
/// use bulwark_engine::{Call, Direction};
/// let call = Call::request("s1", "execute_sql", serde_json::json!({"sql": "SELECT 1"}));
/// assert_eq!(call.direction, Direction::Request);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// Who is calling.
    pub principal: Principal,
    /// The session (conversation or connection) it belongs to.
    pub session: String,
    /// The tool.
    pub tool: ToolRef,
    /// Which way it goes.
    pub direction: Direction,
    /// The JSON arguments (for a response: the arguments of the call that produced it, when
    /// known; `Null` otherwise).
    pub args: Value,
    /// The result, for a response.
    pub result: Option<Value>,
    /// The definition, for a definition.
    pub definition: Option<Definition>,
    /// A destination the caller states separately (DefenseClaw's `destination`).
    pub destination: Option<String>,
    /// Capabilities the caller declares: a hint, which can only add scrutiny.
    pub declared_capabilities: Option<CapSet>,
    /// Whose defaults apply where the policy leaves a choice open.
    pub profile: Profile,
}

/// Whose defaults apply to the choices a policy leaves open (`unknown_tools`,
/// `destinations.hostnames`). A choice the policy makes applies to every profile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Profile {
    /// Gateways, `bulwark check`, hooks and `libbulwark`: an unknown tool is decided on what
    /// its arguments show, and host names are accepted.
    #[default]
    Standard,
    /// DefenseClaw's Edge Connector protocol (the daemon's `evaluate`): the client declares
    /// capabilities itself, so an unknown tool fails closed (`UNKNOWN_TOOL`), and host names
    /// are refused until an enforcing egress resolver exists (seed 000).
    Edge,
}

impl Call {
    /// A request with no principal, server or hash.
    pub fn request(session: impl Into<String>, tool: impl Into<String>, args: Value) -> Call {
        Call {
            principal: Principal::default(),
            session: session.into(),
            tool: ToolRef {
                name: tool.into(),
                ..ToolRef::default()
            },
            direction: Direction::Request,
            args,
            result: None,
            definition: None,
            destination: None,
            declared_capabilities: None,
            profile: Profile::Standard,
        }
    }

    /// A response carrying `result`.
    pub fn response(
        session: impl Into<String>,
        tool: impl Into<String>,
        args: Value,
        result: Value,
    ) -> Call {
        Call {
            direction: Direction::Response,
            result: Some(result),
            ..Call::request(session, tool, args)
        }
    }

    /// The JSON document the call's content stages and rules look at.
    pub fn payload(&self) -> &Value {
        match self.direction {
            Direction::Response => self.result.as_ref().unwrap_or(&Value::Null),
            _ => &self.args,
        }
    }
}
