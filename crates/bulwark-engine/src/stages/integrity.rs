//! Stage 5, integrity (seed 003's pins, seed 002's schema check): is this still the tool that
//! was reviewed?
//!
//! For calls: a tool the policy quarantines is refused (`POLICY_TABLE`); a tool withheld
//! after a rug pull, poisoning or shadowing is refused with that code; arguments are
//! validated against the tool's known input schema (`SCHEMA_INVALID`, mapped by
//! `on_error`). For definitions: the first definition a server lists is pinned; a changed
//! one is a rug pull (`RUG_PULL`), and the same name on a second server is shadowing
//! (`TOOL_POISONING`). Never reads what the arguments mean.

use bulwark_policy::{ReasonCode, Severity, Verdict};
use serde_json::json;

use crate::call::Direction;
use crate::canonical::{sha256_hex, to_string};
use crate::decision::Finding;
use crate::pipeline::Ctx;
use crate::schema_check;
use crate::state::Env;

/// SHA-256 over the canonical `{name, description, input_schema, annotations}`.
pub fn definition_digest(name: &str, def: &crate::call::Definition) -> String {
    let doc = json!({"name": name, "description": def.description, "input_schema": def.input_schema, "annotations": def.annotations});
    sha256_hex(to_string(&doc).as_bytes())
}

pub(crate) fn run(ctx: &mut Ctx<'_>, env: &mut Env<'_>) {
    let call = ctx.call;
    let server = call.tool.server.as_deref();
    let name = &call.tool.name;
    if call.direction == Direction::Definition {
        return definition(ctx, env);
    }
    if ctx.spec.is_some_and(|s| s.quarantine) {
        ctx.raise(
            Verdict::Block,
            ReasonCode::PolicyTable,
            None,
            Some(Severity::High),
            format!("Tool {name:?} is quarantined by policy."),
            Some("Use another tool, or ask the operator why it is quarantined.".into()),
        );
        return;
    }
    let pin = env.tables.pin(server, name);
    let pin = pin.as_deref();
    if let Some((code, reason)) = pin.and_then(|p| p.quarantined.clone()) {
        ctx.findings.push(Finding::new(
            format!("integrity.{}", code.as_str().to_lowercase()),
            "integrity",
        ));
        ctx.raise(
            Verdict::Block,
            code,
            None,
            Some(Severity::Critical),
            reason,
            Some("Ask the operator to review the tool's definition and accept it.".into()),
        );
        return;
    }
    let schema = ctx
        .spec
        .and_then(|s| s.input_schema.as_ref())
        .or_else(|| pin.map(|p| &p.input_schema).filter(|s| !s.is_null()));
    if let Some(schema) = schema
        && let Err(why) = schema_check::validate(schema, &call.args)
    {
        let verdict = ctx.policy.on_error(ReasonCode::SchemaInvalid);
        ctx.findings
            .push(Finding::new("integrity.schema", "schema"));
        ctx.raise(
            verdict,
            ReasonCode::SchemaInvalid,
            None,
            Some(Severity::Medium),
            format!("The arguments do not match {name:?}'s input schema: {why}."),
            Some("Call the tool with the arguments its schema declares.".into()),
        );
    }
}

fn definition(ctx: &mut Ctx<'_>, env: &mut Env<'_>) {
    let call = ctx.call;
    let (Some(def), true) = (&call.definition, ctx.policy.pinning.enabled) else {
        return;
    };
    let server = call.tool.server.as_deref();
    let name = &call.tool.name;
    let digest = definition_digest(name, def);
    if let Some(pin) = env.tables.pin(server, name) {
        if let Some((code, reason)) = &pin.quarantined {
            ctx.raise(
                Verdict::Block,
                *code,
                None,
                Some(Severity::Critical),
                reason.clone(),
                None,
            );
            return;
        }
        if pin.digest != digest {
            ctx.findings
                .push(Finding::new("integrity.rug_pull", "integrity"));
            ctx.raise(
                ctx.policy.pinning.on_change,
                ReasonCode::RugPull,
                None,
                Some(Severity::Critical),
                format!("Tool {name:?} changed its definition after it was pinned (rug pull); it is withheld."),
                Some("Ask the operator to review the new definition and accept it.".into()),
            );
            ctx.explain(|| format!("pinned {} → now {}", &pin.digest[..12], &digest[..12]));
        }
        return;
    }
    if env.tables.pins_full() {
        ctx.raise(
            Verdict::Block,
            ReasonCode::InvalidInput,
            None,
            Some(Severity::High),
            format!("Tool {name:?} is new, and the pin table is full; it is withheld."),
            Some("Ask the operator to reset pins of servers no longer used.".into()),
        );
        return;
    }
    if server.is_some()
        && let Some((other, like)) = env
            .tables
            .pinned_elsewhere(server, name)
            .filter(|(o, _)| !o.is_empty())
    {
        ctx.findings
            .push(Finding::new("integrity.shadowing", "poisoning"));
        let reason = if like == name.to_lowercase() {
            format!(
                "Tool {name:?} is already offered by server {other:?}; a second server with the same name shadows it."
            )
        } else {
            // Case, width, invisible characters or look-alike letters: a model cannot tell
            // the two apart in a tool list.
            format!(
                "Tool {name:?} looks like {like:?}, already offered by server {other:?}; a look-alike name shadows it."
            )
        };
        ctx.raise(
            Verdict::Block,
            ReasonCode::ToolPoisoning,
            None,
            Some(Severity::High),
            reason,
            Some("Rename one of the tools, or prefix tools by server.".into()),
        );
    }
}

/// Pins a definition that went through; withholds one that was blocked.
pub(crate) fn commit_definition(ctx: &Ctx<'_>, env: &mut Env<'_>, allowed: bool) {
    let call = ctx.call;
    let (Some(def), true) = (&call.definition, ctx.policy.pinning.enabled) else {
        return;
    };
    let server = call.tool.server.as_deref();
    let name = &call.tool.name;
    let digest = definition_digest(name, def);
    if allowed {
        env.tables
            .pin_definition(server, name, digest, &def.input_schema);
    } else if let Some(
        code @ (ReasonCode::RugPull
        | ReasonCode::ToolPoisoning
        | ReasonCode::Injection
        | ReasonCode::ContentBlock
        | ReasonCode::Rule),
    ) = ctx.outcome.code
    {
        // Withheld for what it says, not for why this one listing was refused (lockdown, limits).
        env.tables
            .quarantine(server, name, digest, code, ctx.outcome.reason.clone());
    }
}
