//! Stage 1, validate (seed 000 stage 1, seed 002 phase 1): the call's shape and size.
//!
//! Emits `HASH_MISMATCH` when a declared tool hash is not SHA-256 of the name (DefenseClaw's
//! binding), `UNAUTHENTICATED` when policy requires a verified principal, and
//! `INVALID_INPUT` (mapped by `on_error`) for empty or oversized names, arguments and
//! results, or nesting beyond the limit. Never looks at what the arguments mean.

use bulwark_policy::{ReasonCode, Severity};

use crate::analysis::json;
use crate::call::Direction;
use crate::canonical::sha256_hex;
use crate::decision::Finding;
use crate::pipeline::Ctx;

pub(crate) fn run(ctx: &mut Ctx<'_>) {
    let call = ctx.call;
    let limits = &ctx.policy.limits;
    let name = &call.tool.name;
    let invalid = |ctx: &mut Ctx<'_>, what: String| {
        let verdict = ctx.policy.on_error(ReasonCode::InvalidInput);
        ctx.findings
            .push(Finding::new("validate.invalid_input", "input"));
        ctx.raise(
            verdict,
            ReasonCode::InvalidInput,
            None,
            Some(Severity::High),
            what,
            Some("Send a well-formed call within the configured limits.".into()),
        );
    };
    if name.trim().is_empty() {
        return invalid(ctx, "The tool name is empty.".into());
    }
    if name.len() > limits.max_tool_name {
        return invalid(
            ctx,
            format!(
                "The tool name is longer than {} bytes.",
                limits.max_tool_name
            ),
        );
    }
    if name.chars().any(char::is_control) {
        return invalid(ctx, "The tool name contains control characters.".into());
    }
    if let Some(declared) = &call.tool.hash {
        let actual = sha256_hex(name.as_bytes());
        if !declared.eq_ignore_ascii_case(&actual) {
            ctx.findings
                .push(Finding::new("validate.hash_mismatch", "integrity"));
            ctx.raise(
                bulwark_policy::Verdict::Block,
                ReasonCode::HashMismatch,
                None,
                Some(Severity::Critical),
                "tool_hash is not the SHA-256 of tool_name: the call is not bound to the tool it names.",
                Some("Send tool_hash = lower-case hex SHA-256 of the exact tool_name.".into()),
            );
            return;
        }
    }
    if ctx.policy.identities.require_verified && !call.principal.verified {
        ctx.raise(
            bulwark_policy::Verdict::Block,
            ReasonCode::Unauthenticated,
            None,
            Some(Severity::High),
            "The caller is not authenticated and the policy requires it.",
            Some("Authenticate with a bearer token or signed identity headers.".into()),
        );
        return;
    }
    let (doc, max_bytes, what) = match call.direction {
        Direction::Response => (call.result.as_ref(), limits.max_result_bytes, "result"),
        _ => (Some(&call.args), limits.max_args_bytes, "arguments"),
    };
    if let Some(doc) = doc {
        let m = json::measure(doc, limits.max_depth);
        if m.depth > limits.max_depth {
            return invalid(
                ctx,
                format!("The {what} nest deeper than {} levels.", limits.max_depth),
            );
        }
        if m.bytes > max_bytes {
            return invalid(
                ctx,
                format!("The {what} are larger than {max_bytes} bytes."),
            );
        }
    }
    if call.direction == Direction::Definition && call.definition.is_none() {
        invalid(ctx, "A definition call carries no definition.".into());
    }
}
