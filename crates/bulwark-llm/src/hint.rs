//! The safety hint a tainted request gets, placed where each API keeps its instructions.

use serde_json::{Value, json};

use crate::api::Api;

/// Adds `hint` to the request: a system message after the leading ones (Chat), the
/// `system` prompt (Messages) or `instructions` (Responses). Existing instructions stay
/// first and unchanged.
pub fn inject(api: Api, body: &mut Value, hint: &str) {
    let Some(obj) = body.as_object_mut() else {
        return;
    };
    match api {
        Api::Chat => {
            if let Some(Value::Array(messages)) = obj.get_mut("messages") {
                let at = messages
                    .iter()
                    .take_while(|m| {
                        matches!(
                            m.get("role").and_then(Value::as_str),
                            Some("system" | "developer")
                        )
                    })
                    .count();
                messages.insert(at, json!({"role": "system", "content": hint}));
            }
        }
        Api::Messages => {
            let system = match obj.remove("system") {
                None | Some(Value::Null) => Value::String(hint.to_string()),
                Some(Value::String(s)) if s.is_empty() => Value::String(hint.to_string()),
                Some(Value::String(s)) => Value::String(format!("{s}\n\n{hint}")),
                Some(Value::Array(mut blocks)) => {
                    blocks.push(json!({"type": "text", "text": hint}));
                    Value::Array(blocks)
                }
                // Not a shape the API accepts; leave it for the API to refuse.
                Some(other) => other,
            };
            obj.insert("system".into(), system);
        }
        Api::Responses => {
            let instructions = match obj.remove("instructions") {
                Some(Value::String(s)) if !s.is_empty() => Value::String(format!("{s}\n\n{hint}")),
                None | Some(Value::Null) | Some(Value::String(_)) => {
                    Value::String(hint.to_string())
                }
                Some(other) => other,
            };
            obj.insert("instructions".into(), instructions);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_goes_where_each_api_reads_instructions() {
        let mut chat = json!({"messages": [{"role": "system", "content": "be nice"}, {"role": "user", "content": "hi"}]});
        inject(Api::Chat, &mut chat, "H");
        assert_eq!(
            chat["messages"][1],
            json!({"role": "system", "content": "H"})
        );
        assert_eq!(chat["messages"][0]["content"], "be nice");

        let mut msg = json!({"system": [{"type": "text", "text": "S"}]});
        inject(Api::Messages, &mut msg, "H");
        assert_eq!(msg["system"][1]["text"], "H");
        let mut msg = json!({"messages": []});
        inject(Api::Messages, &mut msg, "H");
        assert_eq!(msg["system"], "H");

        let mut resp = json!({"instructions": "I"});
        inject(Api::Responses, &mut resp, "H");
        assert_eq!(resp["instructions"], "I\n\nH");
    }
}
