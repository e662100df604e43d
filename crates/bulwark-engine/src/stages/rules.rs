//! Stage 10, rules (seed 003's catalogue and composite scoring): every rule whose `where`
//! covers this direction is matched; points add up across matches into a tier, a burst of
//! destructive matches in one session raises the tier by one, and the tier's action (or a
//! rule's own action) decides. Emits `RULE`.
//!
//! `where`: requests run `tool_call` rules, proposals `tool_call` and `llm_response`
//! rules, results `tool_result`, definitions `tool_description`.

use bulwark_policy::{
    ArgTest, CommandMatch, Condition, ReasonCode, Rule, RuleScope, Severity, TaintSet,
};
use bulwark_shell::Invocation;
use serde_json::Value;

use crate::analysis::json;
use crate::call::Direction;
use crate::decision::Finding;
use crate::pipeline::Ctx;
use crate::state::Env;

/// What a condition tree needs to look at.
struct Subject<'a> {
    tool: &'a str,
    ctx: &'a Ctx<'a>,
    doc: &'a Value,
    /// Built on first use: most rules never look at free text.
    strings: std::cell::OnceCell<Vec<&'a str>>,
    taint: TaintSet,
}

/// Where a regex matched, for the finding's span.
type Hit = Option<(String, [usize; 2])>;

fn eval(c: &Condition, s: &Subject<'_>, hit: &mut Hit) -> bool {
    match c {
        Condition::All(cs) => cs.iter().all(|c| eval(c, s, hit)),
        Condition::Any(cs) => cs.iter().any(|c| eval(c, s, hit)),
        Condition::Not(c) => {
            let mut ignored = None;
            !eval(c, s, &mut ignored)
        }
        Condition::Tools(globs) => globs.iter().any(|g| g.matches(s.tool)),
        Condition::Capabilities(fams) => fams.iter().any(|f| s.ctx.caps.has_family(f)),
        Condition::Predicate(p) => s.ctx.predicates.iter().any(|q| q == p),
        Condition::Taint(t) => t.iter().all(|x| s.taint.contains(x)),
        Condition::Command(m) => s.ctx.commands.iter().any(|inv| command_matches(m, inv)),
        Condition::Text(re) => {
            let strings = s.strings.get_or_init(|| json::strings(s.doc));
            for (i, text) in strings.iter().enumerate() {
                if let Some(m) = re.find(text) {
                    if hit.is_none() {
                        *hit = Some((
                            json::pointer_of(s.doc, i).unwrap_or_default(),
                            [m.start(), m.end()],
                        ));
                    }
                    return true;
                }
            }
            false
        }
        Condition::Arg { pointer, test } => {
            let v = s.doc.pointer(pointer);
            match test {
                ArgTest::Exists(want) => v.is_some() == *want,
                ArgTest::Equals(want) => v == Some(want),
                ArgTest::Regex(re) => {
                    let text = match v {
                        Some(Value::String(t)) => std::borrow::Cow::Borrowed(t.as_str()),
                        Some(Value::Number(n)) => std::borrow::Cow::Owned(n.to_string()),
                        Some(Value::Bool(b)) => std::borrow::Cow::Owned(b.to_string()),
                        _ => return false,
                    };
                    match re.find(&text) {
                        Some(m) => {
                            hit.get_or_insert_with(|| (pointer.clone(), [m.start(), m.end()]));
                            true
                        }
                        None => false,
                    }
                }
            }
        }
    }
}

/// Whether one command satisfies every field of a `command:` condition.
fn command_matches(m: &CommandMatch, inv: &Invocation) -> bool {
    if !m.names_match(&inv.name) {
        return false;
    }
    let mut rest: &[String] = &inv.args;
    if !m.sub.is_empty() {
        let matched = m.sub.iter().find_map(|words| {
            (words.len() <= inv.args.len()
                && words.iter().zip(&inv.args).all(|(g, a)| g.matches(a)))
            .then_some(words.len())
        });
        match matched {
            Some(n) => rest = &inv.args[n..],
            None => return false,
        }
    }
    let a = &inv.argv;
    if !m.flags_any.is_empty() && !m.flags_any.iter().any(|f| a.flag(f)) {
        return false;
    }
    if !m.flags_all.iter().all(|f| a.flag(f)) || m.flags_none.iter().any(|f| a.flag(f)) {
        return false;
    }
    if !m
        .options
        .iter()
        .all(|(name, re)| a.values(name).any(|v| re.is_match(v)))
    {
        return false;
    }
    if m.options_none
        .iter()
        .any(|(name, re)| a.values(name).any(|v| re.is_match(v)))
    {
        return false;
    }
    // `args_any`/`args_except` describe one operand; `args_regex` may be another
    // (`service nginx stop`: the name and the action).
    if (!m.args_any.is_empty() || !m.args_except.is_empty())
        && !rest.iter().any(|o| {
            (m.args_any.is_empty() || m.args_any.iter().any(|g| g.matches(o)))
                && !m.args_except.iter().any(|g| g.matches(o))
        })
    {
        return false;
    }
    if let Some(re) = &m.args_regex
        && !rest.iter().any(|o| re.is_match(o))
    {
        return false;
    }
    if !m.writes_any.is_empty()
        && !inv
            .writes
            .iter()
            .any(|w| m.writes_any.iter().any(|g| g.matches(w)))
    {
        return false;
    }
    if !m.reads_any.is_empty()
        && !inv
            .reads
            .iter()
            .any(|r| m.reads_any.iter().any(|g| g.matches(r)))
    {
        return false;
    }
    if let Some(re) = &m.code
        && !inv.code.as_deref().is_some_and(|c| re.is_match(c))
    {
        return false;
    }
    if !m.via.is_empty() && !inv.via.iter().any(|v| m.via.iter().any(|g| g.matches(v))) {
        return false;
    }
    if !m.capabilities.is_empty()
        && !inv.caps.iter().any(|c| {
            m.capabilities
                .iter()
                .any(|f| c.name() == f || c.name().starts_with(&format!("{f}.")))
        })
    {
        return false;
    }
    m.predicates
        .iter()
        .all(|p| inv.predicates.iter().any(|q| q == p))
}

fn applies(rule: &Rule, d: Direction) -> bool {
    rule.scopes.iter().any(|s| {
        matches!(
            (s, d),
            (
                RuleScope::ToolCall,
                Direction::Request | Direction::Proposal
            ) | (RuleScope::LlmResponse, Direction::Proposal)
                | (RuleScope::ToolResult, Direction::Response)
                | (RuleScope::ToolDescription, Direction::Definition)
        )
    })
}

fn raise_tier(s: Severity) -> Severity {
    match s {
        Severity::Low => Severity::Medium,
        Severity::Medium => Severity::High,
        _ => Severity::Critical,
    }
}

pub(crate) fn run(ctx: &mut Ctx<'_>, env: &mut Env<'_>) {
    let policy = ctx.policy;
    let direction = ctx.call.direction;
    let definition_doc;
    let doc: &Value = match (direction, &ctx.call.definition) {
        (Direction::Definition, Some(def)) => {
            definition_doc = serde_json::json!({"description": def.description, "input_schema": def.input_schema, "annotations": def.annotations});
            &definition_doc
        }
        _ => ctx.call.payload(),
    };
    let now = ctx.now.mono_ms;
    let session = &mut *env.session;
    let taint = session.taint;

    let mut matched: Vec<(&Rule, Hit)> = Vec::new();
    {
        let subject = Subject {
            tool: &ctx.call.tool.name,
            ctx,
            doc,
            strings: std::cell::OnceCell::new(),
            taint,
        };
        let candidates = policy.rule_index.candidates(
            ctx.commands.iter().map(|i| i.name.as_str()),
            &ctx.predicates,
            ctx.commands.iter().any(|i| !i.writes.is_empty()),
        );
        for rule in candidates
            .into_iter()
            .filter_map(|i| policy.rules.get(i))
            .filter(|r| applies(r, direction))
        {
            let mut hit = None;
            if eval(&rule.condition, &subject, &mut hit) {
                matched.push((rule, hit));
            }
        }
    }
    if matched.is_empty() {
        return;
    }

    // Points of rules without an explicit action add into a tier.
    let points: u32 = matched
        .iter()
        .filter(|(r, _)| r.action.is_none())
        .map(|(r, _)| r.points)
        .sum();
    let mut tier = policy.scoring.tier(points);
    let counted = matched
        .iter()
        .filter(|(r, _)| r.severity >= policy.scoring.burst_min_severity)
        .count();
    // Hits of other calls only: asking about the same call again (or deciding it again
    // with the fleet's answer, whose hits the first decision saved) is not a burst.
    let window = policy.scoring.burst_window_ms;
    let print = call_print(ctx);
    let recent_burst = session
        .burst
        .iter()
        .filter(|(p, t)| *p != print && now.saturating_sub(*t) <= window)
        .count();
    // A burst is calls in a row, so it needs an earlier call's hits: one call matching
    // several rules is already scored by its points.
    let burst = policy.scoring.burst_count > 0
        && counted > 0
        && recent_burst > 0
        && recent_burst + counted >= policy.scoring.burst_count as usize;
    if burst {
        tier = tier.map(raise_tier);
    }
    for (rule, hit) in &matched {
        let (pointer, span) = match hit {
            Some((p, s)) => (Some(p.clone()), Some(*s)),
            None => (None, None),
        };
        let category = rule.id.split('.').next().unwrap_or("rule").to_string();
        ctx.findings.push(Finding {
            rule_id: rule.id.clone(),
            category,
            span,
            pointer,
            severity: Some(rule.severity),
            score: None,
        });
        ctx.rule_hits.push(rule.severity);
    }
    // The primary rule: strongest own verdict, then severity, then points.
    let own = |r: &Rule| {
        r.action
            .unwrap_or_else(|| policy.scoring.action(r.severity))
    };
    let primary = matched
        .iter()
        .map(|(r, _)| *r)
        .max_by_key(|r| (own(r), r.severity, r.points));
    let Some(primary) = primary else { return };
    let mut verdict = own(primary);
    let mut severity = primary.severity;
    if let Some(t) = tier {
        let tier_verdict = policy.scoring.action(t);
        if (tier_verdict, t) > (verdict, severity) {
            verdict = tier_verdict;
            severity = t;
        }
    }
    // The reason is read by the model and the user: the rule's own words. How many rules
    // matched and what they scored is in the findings and the explanation.
    let mut reason = primary.reason.clone();
    if burst {
        reason.push_str(" This session has made several such calls in a short time, so it is treated more strictly.");
    }
    let n = matched.len();
    ctx.explain(|| {
        format!(
            "{n} rules matched; {points} points; tier {}",
            tier.map_or("none", |t| t.as_str())
        )
    });
    ctx.raise(
        verdict,
        ReasonCode::Rule,
        Some(primary.id.clone()),
        Some(severity),
        reason,
        primary.safer_alternative.clone(),
    );
}

/// Remembers destructive matches for burst detection, whether or not the call went through:
/// an agent that keeps trying is the signal.
pub(crate) fn commit(ctx: &Ctx<'_>, env: &mut Env<'_>) {
    if ctx.fleet_answer.is_some() {
        // Counted when the call was first decided.
        return;
    }
    let min = ctx.policy.scoring.burst_min_severity;
    let n = ctx.rule_hits.iter().filter(|s| **s >= min).count();
    if n == 0 {
        return;
    }
    let now = ctx.now.mono_ms;
    let print = call_print(ctx);
    let session = &mut *env.session;
    for _ in 0..n {
        if session.burst.len() == crate::session::HISTORY {
            session.burst.pop_front();
        }
        session.burst.push_back((print, now));
    }
}

/// The call's fingerprint, as the loop guard took it (or, with the loop guard off, taken
/// the same way).
fn call_print(ctx: &Ctx<'_>) -> u64 {
    ctx.loop_print
        .unwrap_or_else(|| crate::canonical::fingerprint(&ctx.tool_lc(), ctx.call.payload()))
}
