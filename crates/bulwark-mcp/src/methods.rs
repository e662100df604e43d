//! The methods the gateway knows, by who may send them: the MCP revisions it speaks
//! (2024-11-05 to 2025-11-25, and 2026-07-28). A method is known only by its exact name;
//! anything else — a method of no revision, a case or whitespace variant of a known one, a
//! known method sent the wrong way — is not forwarded: a request is answered `-32601` by
//! the gateway, a notification dropped. The policy's `mcp.extra_methods` names methods to
//! forward anyway (exactly; they get no decision of their own, only passage).
//!
//! Each family has its decision path in [`crate::gateway`]: calls and their results,
//! reads, listings, a server's requests to the client; the rest (lifecycle, ping,
//! subscriptions, tasks) carries nothing the model reads and passes as it is.

/// Requests a client may send to a server.
const CLIENT_REQUESTS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    // 2025-11-25: tasks.
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    // 2026-07-28.
    "server/discover",
    "subscriptions/listen",
    "tasks/update",
];

/// Notifications a client may send.
const CLIENT_NOTIFICATIONS: &[&str] = &[
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "notifications/tasks/status",
];

/// Requests a server may send to its client.
const SERVER_REQUESTS: &[&str] = &[
    "ping",
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
];

/// Notifications a server may send.
const SERVER_NOTIFICATIONS: &[&str] = &[
    "notifications/cancelled",
    "notifications/progress",
    "notifications/message",
    "notifications/resources/updated",
    "notifications/resources/list_changed",
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/elicitation/complete",
    "notifications/tasks/status",
    "notifications/subscriptions/acknowledged",
];

/// Who sends a message, and whether it expects an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// A client's request.
    ClientRequest,
    /// A client's notification.
    ClientNotification,
    /// A server's request.
    ServerRequest,
    /// A server's notification.
    ServerNotification,
}

/// Whether `method` may be forwarded when `sent` so: a method of the revisions spoken, by
/// its exact name and in its direction, or one of `extra` (the policy's allowlist).
pub fn allowed(sent: Sent, method: &str, extra: &[String]) -> bool {
    let known = match sent {
        Sent::ClientRequest => CLIENT_REQUESTS,
        Sent::ClientNotification => CLIENT_NOTIFICATIONS,
        Sent::ServerRequest => SERVER_REQUESTS,
        Sent::ServerNotification => SERVER_NOTIFICATIONS,
    };
    known.contains(&method) || extra.iter().any(|m| m == method)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_names_in_their_direction() {
        let none: &[String] = &[];
        assert!(allowed(Sent::ClientRequest, "tools/call", none));
        for m in [
            "Tools/Call",
            " tools/call",
            "tools/call ",
            "tools/call\u{200b}",
            "admin/exec",
        ] {
            assert!(!allowed(Sent::ClientRequest, m, none), "{m:?}");
        }
        // Known, but not from that side.
        assert!(!allowed(
            Sent::ClientRequest,
            "sampling/createMessage",
            none
        ));
        assert!(!allowed(Sent::ServerRequest, "tools/call", none));
        assert!(!allowed(
            Sent::ClientNotification,
            "notifications/tools/list_changed",
            none
        ));
        let extra = vec!["admin/exec".to_string()];
        assert!(allowed(Sent::ClientRequest, "admin/exec", &extra));
        assert!(!allowed(Sent::ClientRequest, "Admin/Exec", &extra));
    }
}
