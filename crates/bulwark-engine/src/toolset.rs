//! A set of tool definitions as an operator reviews it (issue 26, item 3): what each tool
//! is taken to do, where that comes from, and a reviewed mapping to start from.
//!
//! Definitions arrive in every shape the fronts see — an MCP `tools/list` result (or the
//! whole JSON-RPC answer), a model request's `tools` array (Chat Completions nests each
//! under `function`, the Responses API flattens it, Anthropic Messages names the schema
//! `input_schema`), or a bare array of any of these — and [`read`] turns each into a
//! [`Definition`] the way the fronts do ([`entry`] is the one reader they share).
//!
//! [`review`] then says, per tool, what the engine would use and why, in the engine's own
//! order of precedence: the policy's reviewed mapping, else the built-in catalogue, else
//! what the definition's words infer ([`crate::infer`]). [`render`] prints that for
//! `bulwark tools`; [`mapping_yaml`] writes it as a policy whose `tools:` section a person
//! confirms line by line (`bulwark init --from-server`): every entry carries, as comments,
//! the first sentence of the tool's description and the words that led to each capability,
//! so the review is reading, not research. No I/O here: the caller fetched the definitions.

use bulwark_policy::{CapSet, Policy, Taint, TaintSet};
use serde_json::Value;

use crate::analysis::catalogue;
use crate::call::Definition;
use crate::infer::{self, Inference};

/// Most definitions read from one document; the rest are left out (and said so).
pub const MAX_TOOLS: usize = 512;

/// Why a document holds no tool definitions.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ToolsetError {
    /// Neither an array of tools nor an object with a `tools` array (at the top or under
    /// `result`).
    #[error(
        "no tools found: expected an MCP tools/list result ({{\"tools\": […]}}), a JSON-RPC answer holding one, or a tools array (OpenAI or Anthropic shape)"
    )]
    NoTools,
}

/// One tool definition in any of the shapes the fronts see: `{name, description,
/// inputSchema | input_schema | parameters, annotations}`, or Chat Completions'
/// `{type: "function", function: {…}}`. `None` for an entry without a name, and for a
/// provider-run tool (web search, code execution) with neither description nor schema.
pub fn entry(t: &Value) -> Option<(String, Definition)> {
    let f = t.get("function").filter(|f| f.is_object()).unwrap_or(t);
    let name = f.get("name").and_then(Value::as_str)?;
    let schema = f
        .get("inputSchema")
        .or_else(|| f.get("input_schema"))
        .or_else(|| f.get("parameters"))
        .cloned()
        .unwrap_or(Value::Null);
    let description = f
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if description.is_empty() && schema.is_null() {
        return None;
    }
    let annotations = f.get("annotations").cloned().unwrap_or(Value::Null);
    Some((
        name.to_string(),
        Definition {
            description: description.to_string(),
            input_schema: schema,
            annotations,
        },
    ))
}

/// Every definition a document holds, in its order (at most [`MAX_TOOLS`]; the first of
/// a repeated name wins).
pub fn read(doc: &Value) -> Result<Vec<(String, Definition)>, ToolsetError> {
    let list = match doc {
        Value::Array(a) => a,
        Value::Object(_) => doc
            .get("tools")
            .or_else(|| doc.pointer("/result/tools"))
            .and_then(Value::as_array)
            .ok_or(ToolsetError::NoTools)?,
        _ => return Err(ToolsetError::NoTools),
    };
    let mut out: Vec<(String, Definition)> = Vec::new();
    for (name, def) in list.iter().take(MAX_TOOLS).filter_map(entry) {
        if !out.iter().any(|(n, _)| *n == name) {
            out.push((name, def));
        }
    }
    Ok(out)
}

/// Where what the engine uses for a tool comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The policy's reviewed mapping.
    Mapping,
    /// The built-in catalogue of common tool names.
    Catalogue,
    /// The definition's words.
    Inferred,
}

impl Source {
    /// The word `bulwark tools` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Mapping => "mapping",
            Source::Catalogue => "catalogue",
            Source::Inferred => "inferred",
        }
    }
}

/// One tool as the engine takes it.
#[derive(Clone, Debug)]
pub struct Reviewed {
    /// The tool's name.
    pub name: String,
    /// Its definition.
    pub definition: Definition,
    /// Where `capabilities` and `taint` come from.
    pub source: Source,
    /// What the engine starts from before reading a call's arguments.
    pub capabilities: CapSet,
    /// Taint its results give a session.
    pub taint: TaintSet,
    /// What the definition's words say, whatever the source (shown beside a mapping or a
    /// catalogue entry so a reviewer sees where they disagree).
    pub inference: Inference,
}

/// What the engine takes each tool to do under `policy`, in the engine's precedence.
pub fn review(policy: &Policy, tools: &[(String, Definition)]) -> Vec<Reviewed> {
    tools
        .iter()
        .map(|(name, def)| {
            let inference = infer::infer(name, def);
            let (source, capabilities, taint) = if let Some(spec) = policy.tools.get(name) {
                (Source::Mapping, spec.capabilities, spec.taint)
            } else if let Some(e) = catalogue::lookup(name) {
                // As the engine does: the words may add `untrusted-input` to a reader
                // (stages/classify.rs).
                let mut taint = e.taint();
                if e.kind == catalogue::Kind::Read
                    && inference.taint.contains(Taint::UntrustedInput)
                {
                    taint.insert(Taint::UntrustedInput);
                }
                (Source::Catalogue, e.capabilities(), taint)
            } else {
                (Source::Inferred, inference.capabilities, inference.taint)
            };
            Reviewed {
                name: name.clone(),
                definition: def.clone(),
                source,
                capabilities,
                taint,
                inference,
            }
        })
        .collect()
}

/// The first sentence of a description, on one line, at most 100 characters.
fn first_sentence(s: &str) -> String {
    let line: String = s
        .split_inclusive(['.', '\n'])
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut out: String = line.chars().filter(|c| !c.is_control()).take(100).collect();
    if line.chars().count() > 100 {
        out.push('…');
    }
    out
}

fn list(names: Vec<&'static str>) -> String {
    if names.is_empty() {
        "-".into()
    } else {
        names.join(", ")
    }
}

fn taint_names(t: TaintSet) -> Vec<&'static str> {
    t.iter().map(|t| t.as_str()).collect()
}

/// The text `bulwark tools` prints for one source of definitions: per tool, its
/// capabilities and taint, where they come from, and the words behind the inference.
pub fn render(source: &str, tools: &[Reviewed]) -> String {
    let mut out = format!("{source}: {} tools\n", tools.len());
    for t in tools {
        out.push_str(&format!(
            "\n{}  [{}]\n  capabilities: {}\n  taint:        {}\n",
            t.name,
            t.source.as_str(),
            list(t.capabilities.names()),
            list(taint_names(t.taint)),
        ));
        match t.source {
            Source::Inferred => {}
            Source::Mapping => out.push_str("  from the policy's reviewed mapping\n"),
            Source::Catalogue => out.push_str(
                "  from the built-in catalogue of common tool names (a mapping overrides it)\n",
            ),
        }
        if t.inference.because.is_empty() {
            out.push_str("  words: nothing inferred from the definition\n");
        } else {
            for why in &t.inference.because {
                out.push_str(&format!("  words: {why}\n"));
            }
        }
    }
    out
}

/// A policy holding a reviewed mapping for `tools`, every entry commented with what it
/// was inferred from, for a person to confirm (`bulwark init --from-server`). Tools the
/// words say nothing about are written with empty sets, so the reviewer sees each one.
pub fn mapping_yaml(source: &str, tools: &[Reviewed]) -> String {
    let mut out = String::new();
    out.push_str("# Bulwark policy: a reviewed mapping for the tools of\n");
    out.push_str(&format!("#   {}\n", one_line(source)));
    out.push_str(
        "# written by `bulwark init --from-server`. NOT YET REVIEWED: each entry below is what\n\
         # Bulwark inferred from the tool's definition (or knows from its catalogue of common\n\
         # tool names); the comments say which words led where. Read each one, correct it,\n\
         # then check the file with `bulwark policy check FILE`. A mapped tool is taken at its\n\
         # word: its capabilities replace inference, so a wrong entry here is a hole.\n\
         # Capabilities: exec.irreversible (cannot be undone: money, bookings, deletes,\n\
         # membership), msg.send (reaches a person), net.egress (reaches a network address),\n\
         # fs.read, fs.write, exec.shell, … (docs/policy.md). Taint: what a tool's results\n\
         # give the session (private-data, untrusted-input).\n\
         # Every section left out keeps the built-in default (`bulwark policy default`).\n",
    );
    out.push_str("version: 1\nname: reviewed-mapping\n\ntools:\n");
    for t in tools {
        let desc = first_sentence(&t.definition.description);
        if !desc.is_empty() {
            out.push_str(&format!("  # {}\n", one_line(&desc)));
        }
        match t.source {
            Source::Catalogue => out.push_str(
                "  # from the built-in catalogue; words of the definition, for comparison:\n",
            ),
            Source::Mapping => out
                .push_str("  # from the policy given; words of the definition, for comparison:\n"),
            Source::Inferred => {}
        }
        if t.inference.because.is_empty() {
            out.push_str("  # inferred: nothing (no words in a class); decide by hand\n");
        }
        for why in &t.inference.because {
            out.push_str(&format!("  # inferred: {}\n", one_line(why)));
        }
        // JSON strings are YAML strings: any name is written safely.
        out.push_str(&format!(
            "  {}:\n    capabilities: [{}]\n    taint: [{}]\n\n",
            Value::String(t.name.clone()),
            t.capabilities.names().join(", "),
            taint_names(t.taint).join(", "),
        ));
    }
    out
}

/// Text safe inside a YAML comment: one line, no control characters.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_shape_is_read() {
        let mcp = json!({"tools": [{"name": "send_money", "description": "Sends money.",
            "inputSchema": {"type": "object"}}]});
        let rpc = json!({"jsonrpc": "2.0", "id": 1, "result": mcp.clone()});
        let chat = json!([{"type": "function", "function": {"name": "send_money",
            "description": "Sends money.", "parameters": {"type": "object"}}}]);
        let anthropic = json!([{"name": "send_money", "description": "Sends money.",
            "input_schema": {"type": "object"}}, {"type": "web_search_20250305", "name": "web_search"}]);
        for doc in [mcp, rpc, chat, anthropic] {
            let tools = read(&doc).unwrap();
            assert_eq!(tools.len(), 1, "{doc}");
            assert_eq!(tools[0].0, "send_money");
            assert_eq!(tools[0].1.input_schema, json!({"type": "object"}));
        }
        assert_eq!(read(&json!({"x": 1})), Err(ToolsetError::NoTools));
        assert_eq!(read(&json!("tools")), Err(ToolsetError::NoTools));
    }

    #[test]
    fn a_document_is_read_bounded() {
        let many: Vec<Value> = (0..MAX_TOOLS + 10)
            .map(|i| json!({"name": format!("t{i}"), "description": "x"}))
            .collect();
        assert_eq!(read(&Value::Array(many)).unwrap().len(), MAX_TOOLS);
    }

    fn tools() -> Vec<(String, Definition)> {
        read(&json!([
            {"name": "send_money", "description": "Sends money to a recipient.\nSecond line."},
            {"name": "read_file", "description": "Reads a file."},
            {"name": "frobnicate", "description": "Frobnicates."},
            {"name": "call_api", "description": "Calls an API."}
        ]))
        .unwrap()
    }

    #[test]
    fn precedence_is_the_engines() {
        let r = review(&Policy::builtin().unwrap(), &tools());
        let by = |n: &str| r.iter().find(|t| t.name == n).unwrap();
        assert_eq!(by("send_money").source, Source::Inferred);
        assert_eq!(by("send_money").capabilities.names(), ["exec.irreversible"]);
        assert_eq!(by("read_file").source, Source::Catalogue);
        // The default policy maps DefenseClaw's example tool.
        assert_eq!(by("call_api").source, Source::Mapping);
        assert_eq!(by("call_api").capabilities.names(), ["net.egress"]);
        assert!(by("frobnicate").capabilities.is_empty());
    }

    #[test]
    fn the_listing_says_why() {
        let text = render("server x", &review(&Policy::builtin().unwrap(), &tools()));
        assert!(text.contains("send_money  [inferred]"), "{text}");
        assert!(text.contains("capabilities: exec.irreversible"), "{text}");
        assert!(
            text.contains("words: \"send\" (name verb) + \"money\" (money) → exec.irreversible"),
            "{text}"
        );
        assert!(text.contains("read_file  [catalogue]"), "{text}");
        assert!(text.contains("words: nothing inferred"), "{text}");
    }

    #[test]
    fn the_mapping_loads_and_maps_what_was_inferred() {
        let mut t = tools();
        // A name and a description no YAML reader must trip on.
        t.push((
            "weird: name # x".into(),
            Definition {
                description: "Deletes\r\nthings: all # of them.".into(),
                ..Definition::default()
            },
        ));
        let yaml = mapping_yaml("npx server\nx", &review(&Policy::builtin().unwrap(), &t));
        let policy = bulwark_policy::load_str("mapping.yaml", &yaml)
            .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        let send = policy.tools.get("send_money").unwrap();
        assert_eq!(send.capabilities.names(), ["exec.irreversible"]);
        assert_eq!(
            policy
                .tools
                .get("weird: name # x")
                .unwrap()
                .capabilities
                .names(),
            ["exec.irreversible"]
        );
        assert!(
            policy
                .tools
                .get("frobnicate")
                .unwrap()
                .capabilities
                .is_empty()
        );
        assert!(yaml.contains("  # Sends money to a recipient.\n"), "{yaml}");
        assert!(
            yaml.contains("  # inferred: \"send\" (name verb)"),
            "{yaml}"
        );
        assert!(yaml.contains("NOT YET REVIEWED"), "{yaml}");
    }
}
