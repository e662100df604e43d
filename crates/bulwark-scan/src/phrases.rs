//! Instructions aimed at the model: injection, concealment and tool poisoning (read over
//! the normalised text, so spacing, case, look-alike letters and invisible characters do
//! not hide a phrase), and prefill, role markers and data-carrying links (read over the
//! raw text, where line breaks and exact tokens matter).

use crate::finding::{Category, Scope, Severity};
use crate::rules::{BASE, RuleDef};

const ALL: &[Scope] = &[Scope::Request, Scope::Response, Scope::Definition];
const DEFINITION: &[Scope] = &[Scope::Definition];

/// Rules over the normalised (lower-case, folded, single-spaced) text.
pub const NORMALIZED: &[RuleDef] = &[
    RuleDef {
        id: "injection.override",
        category: Category::Injection,
        severity: Severity::High,
        label: "injection",
        keywords: &["ignore", "disregard", "forget", "override", "bypass", "neglect", "abandon", "discard", "set aside", "pay no attention"],
        regex: r"\b(?:ignore|disregard|forget|override|bypass|neglect|abandon|discard|set aside|pay no attention to)\b(?: [a-z'\-]+){0,4}? (?:previous|prior|above|earlier|preceding|former|initial|original|old|all|any|every|your|the|these|those|system|existing|current|other)\b(?: [a-z'\-]+){0,3}? (?:instructions?|directions?|directives?|rules?|prompts?|guidelines?|commands?|context|constraints?|guardrails?|restrictions?|policies|programming|training|orders?|tasks?|text|content|messages?)\b",
        before: 0,
        after: 200,
        scopes: ALL,
        ..BASE
    },
    RuleDef {
        id: "injection.new_role",
        category: Category::Injection,
        severity: Severity::High,
        label: "injection",
        keywords: &["you are now", "from now on", "new instructions", "updated instructions", "new task", "developer mode", "dan mode", "do anything now", "jailbreak", "act as", "pretend to be", "pretend you are", "roleplay as"],
        regex: r"\b(?:you are now (?:a |an |in |the |no longer |free|unrestricted|dan|jailbroken)|from now on,? (?:you|your|ignore|respond|act|answer|always|only|do not|don't)|(?:new|updated|revised|real|actual|secret) instructions?\b|your (?:new|real|actual|true) (?:task|goal|instructions?|objective|purpose) is|(?:enable|enter|activate|switch to) (?:developer|dan|god|debug|admin) mode|do anything now|jailbreak(?:ed|ing)? (?:mode|prompt)|(?:act as|pretend (?:to be|you are)|roleplay as) (?:a |an )?(?:unrestricted|unfiltered|evil|malicious|hacker|dan|jailbroken|system|administrator|root|developer))",
        before: 8,
        after: 120,
        scopes: ALL,
        ..BASE
    },
    RuleDef {
        id: "injection.fake_system",
        category: Category::Injection,
        severity: Severity::High,
        label: "injection",
        keywords: &["system", "developer message", "admin", "assistant instructions", "note to the ai", "to the ai", "ai assistant", "language model", "llm"],
        regex: r"(?:\[(?:system|admin|developer|sys)(?: message| note| prompt| override)?\]|<(?:system|admin|developer)(?:_message)?>|#{2,} ?(?:system|developer|admin)(?: message| prompt| instructions?)?\b|\b(?:system|admin|developer|security) (?:override|alert|notice|update)\b ?:|\b(?:message|instructions?|note|update) (?:from|for) (?:the )?(?:system|admin(?:istrator)?|developer|ai|assistant|llm|language model)\b|\b(?:attention|note to|dear|hey|hello|hi) (?:the )?(?:ai|llm|assistant|ai assistant|language model|chatbot|agent)\b ?[,:!]|\bif you are an? (?:ai|llm|language model|assistant|agent)\b)",
        before: 48,
        after: 120,
        scopes: ALL,
        ..BASE
    },
    RuleDef {
        id: "injection.exfiltrate",
        category: Category::Injection,
        severity: Severity::High,
        label: "injection",
        keywords: &["send", "forward", "email", "upload", "post", "exfiltrate", "leak", "transmit", "share", "copy"],
        regex: r"\b(?:send|forward|e-?mail|upload|post|exfiltrate|leak|transmit|share|copy)\b(?: [a-z0-9'\-]+){0,6}? (?:(?:your|the|all|any|my|user'?s?|their|this|these|those) )?(?:password|credentials?|secrets?|api keys?|tokens?|ssh keys?|private keys?|keys|files?|data|conversation|chat history|history|messages|emails|contents?|cookies?|session|environment variables?|env|\.env|system prompt|instructions)\b(?: [a-z0-9'\-]+){0,6}? (?:to|at|into) (?:https?://|[a-z0-9._%+\-]+@[a-z0-9.\-]+\.[a-z]{2,}|the (?:following|attacker|url|address|endpoint|server|webhook)|this (?:url|address|endpoint|server|webhook|email))",
        before: 4,
        after: 300,
        scopes: ALL,
        ..BASE
    },
    RuleDef {
        id: "injection.tool_call",
        category: Category::Injection,
        severity: Severity::Medium,
        label: "injection",
        keywords: &["call the", "use the", "invoke the", "run the", "execute the", "run this", "execute this", "run the following", "execute the following"],
        regex: r"\b(?:(?:call|use|invoke|trigger) the [a-z0-9_\-]+ (?:tool|function)|(?:run|execute) (?:the following|this) (?:command|code|script|shell|bash|python|sql)|(?:run|execute) `)",
        before: 8,
        after: 120,
        scopes: &[Scope::Response, Scope::Request],
        ..BASE
    },
    RuleDef {
        id: "injection.reveal_prompt",
        category: Category::Injection,
        severity: Severity::Medium,
        label: "injection",
        keywords: &["reveal", "print", "output", "repeat", "show", "display", "tell me", "what are your"],
        regex: r"\b(?:reveal|print|output|repeat|show|display|tell me|leak|dump|what (?:are|is|were)) (?:me )?(?:your|the|all|everything in your|the text (?:above|before))\b(?: [a-z]+){0,2}? (?:system prompt|initial (?:prompt|instructions)|hidden (?:prompt|instructions)|instructions (?:above|you were given)|prompt above|words above|text above|secret (?:key|instructions))",
        before: 8,
        after: 120,
        scopes: ALL,
        ..BASE
    },
    RuleDef {
        id: "concealment.hide_from_user",
        category: Category::Concealment,
        severity: Severity::High,
        label: "concealment",
        keywords: &["user", "silently", "secretly", "covertly", "do not mention", "don't mention", "never mention"],
        regex: r"\b(?:(?:do not|don't|never|must not|should not|shouldn't|mustn't) (?:tell|inform|notify|alert|mention (?:this|it|that|anything) to|reveal (?:this|it|that|anything) to|show|let) (?:the )?(?:user|human|person|operator|customer)s?\b|without (?:telling|informing|notifying|alerting|asking|the knowledge of) (?:the )?(?:user|human|operator)s?\b|without the (?:user|human)'?s? (?:knowing|knowledge|consent|noticing)|(?:hide|conceal|keep) (?:this|it|that|these|everything)(?: [a-z]+){0,3}? (?:from|away from) (?:the )?(?:user|human|operator)s?\b|(?:the )?(?:user|human)s? (?:must|should|will|may) (?:not|never) (?:see|know|notice|find out|be told|learn)|(?:do not|don't|never) (?:mention|reveal|disclose) (?:this|these|that)(?: [a-z]+){0,2}? (?:in your (?:response|reply|answer)|to anyone)|(?:silently|secretly|covertly|quietly) (?:send|forward|upload|exfiltrate|copy|call|run|execute|add|include|append))",
        before: 96,
        after: 160,
        scopes: ALL,
        ..BASE
    },
    RuleDef {
        id: "poisoning.important_block",
        category: Category::Poisoning,
        severity: Severity::High,
        label: "poisoning",
        keywords: &["<important>", "<instructions>", "<system>", "<secret>", "<hidden>", "<critical>"],
        regex: r"<(?:important|instructions?|system|secret|hidden|critical)>",
        after: 16,
        scopes: DEFINITION,
        ..BASE
    },
    RuleDef {
        id: "poisoning.side_task",
        category: Category::Poisoning,
        severity: Severity::High,
        label: "poisoning",
        keywords: &["before using", "before you use", "before calling", "before invoking", "before running", "you must first", "must first", "first read", "also read", "also send", "sidenote", "side note", "side effect", "prerequisite"],
        regex: r"\b(?:before (?:using|you use|calling|invoking|running) (?:this|the) (?:tool|function)|(?:you )?must first|first (?:read|open|fetch|send|call|include)|(?:also|additionally) (?:read|send|include|attach|pass|forward|call)|as a side ?note|very important side effect|this is a (?:required|mandatory) (?:step|prerequisite)|prerequisite)\b",
        before: 8,
        after: 200,
        scopes: DEFINITION,
        ..BASE
    },
    RuleDef {
        id: "poisoning.sensitive_file",
        category: Category::Poisoning,
        severity: Severity::Critical,
        label: "poisoning",
        keywords: &["~/.ssh", "id_rsa", "id_ed25519", "mcp.json", ".cursor", ".aws", "credentials", ".env", "private key", "/etc/passwd", "/etc/shadow", "claude_desktop_config"],
        regex: r"(?:~/\.ssh|\bid_(?:rsa|ed25519|ecdsa)\b|\bmcp\.json\b|\.cursor/|~/\.aws|\.aws/credentials|\bcredentials\.json\b|(?:^|[ /])\.env\b|\bprivate key\b|/etc/(?:passwd|shadow)|claude_desktop_config)",
        before: 8,
        after: 40,
        scopes: DEFINITION,
        ..BASE
    },
    RuleDef {
        id: "poisoning.shadowing",
        category: Category::Poisoning,
        severity: Severity::High,
        label: "poisoning",
        keywords: &["instead of", "do not use", "don't use", "never use", "always use", "must use", "only use", "replaces", "overrides"],
        regex: r"\b(?:(?:always|must|only) use this (?:tool|function)|use this (?:tool|function) instead|instead of (?:the |using the )?[a-z0-9_\-]+ (?:tool|function)|(?:do not|don't|never) (?:use|call|invoke) (?:the |any )?(?:other |[a-z0-9_\-]+ )?(?:tools?|functions?)|this (?:tool|function) (?:replaces|overrides|supersedes))\b",
        before: 48,
        after: 120,
        scopes: DEFINITION,
        ..BASE
    },
    RuleDef {
        id: "hidden_text.html_comment",
        category: Category::HiddenText,
        severity: Severity::Medium,
        label: "hidden_text",
        keywords: &["<!--"],
        regex: r"<!--[\s\S]{3,4096}?-->",
        after: 4104,
        scopes: ALL,
        ..BASE
    },
    RuleDef {
        id: "hidden_text.css",
        category: Category::HiddenText,
        severity: Severity::Medium,
        label: "hidden_text",
        keywords: &["display", "visibility", "font-size", "opacity", "color", "left:-", "left: -"],
        regex: r"(?:display ?: ?none|visibility ?: ?hidden|font-size ?: ?0(?:px|pt|em|rem|%)?\b|opacity ?: ?0(?:\.0+)?\b|(?:^|[; \x22'])color ?: ?(?:white|#fff\b|#ffffff|transparent|rgba\(\d+, ?\d+, ?\d+, ?0\))|left ?: ?-\d{4,}px)",
        before: 4,
        after: 40,
        scopes: ALL,
        ..BASE
    },
];

/// Rules over the raw text.
pub const RAW: &[RuleDef] = &[
    RuleDef {
        id: "prefill.chat_template",
        category: Category::Prefill,
        severity: Severity::High,
        label: "prefill",
        keywords: &["<|", "[inst]", "[/inst]", "<<sys>>", "<</sys>>", "<start_of_turn>", "<end_of_turn>", "### instruction", "### response", "<function_results>", "</function_results>", "<tool_result>", "</tool_result>", "<function_calls>", "</function_calls>", "<|im_start|>"],
        regex: r"(?i)(?:<\|(?:im_start|im_end|im_sep|endoftext|system|user|assistant|begin_of_text|end_of_text|start_header_id|end_header_id|eot_id|eom_id|tool_call|python_tag|fim_prefix|fim_middle|fim_suffix)\|>|\[/?INST\]|<</?SYS>>|<(?:start|end)_of_turn>|(?:^|\n)#{3} ?(?:instruction|response|system)\s*:|</?(?:function_results|tool_result|function_calls|antml:function_calls|tool_use)>)",
        before: 2,
        after: 40,
        scopes: ALL,
        ..BASE
    },
    RuleDef {
        id: "prefill.role_turn",
        category: Category::Prefill,
        severity: Severity::High,
        label: "prefill",
        keywords: &["human:", "assistant:", "user:", "system:"],
        regex: r"(?:\r?\n\r?\n|^)(?:Human|Assistant)\s*:",
        before: 6,
        after: 4,
        scopes: ALL,
        ..BASE
    },
    RuleDef {
        id: "prefill.fake_message",
        category: Category::Prefill,
        severity: Severity::High,
        label: "prefill",
        keywords: &["\"role\""],
        regex: r#""role"\s*:\s*"(?:system|assistant|developer|tool)"\s*,\s*"content"\s*:"#,
        after: 80,
        scopes: &[Scope::Response, Scope::Request],
        ..BASE
    },
    RuleDef {
        id: "injection.markdown_image_exfil",
        category: Category::Injection,
        severity: Severity::High,
        label: "injection",
        keywords: &["![", "<img"],
        regex: r#"(?i)(?:!\[[^\]\n]{0,200}\]\(\s*<?|<img\b[^>]{0,200}\bsrc\s*=\s*["']?)(https?://[^\s)"'>]{1,2048}[?&][^\s)"'>]*=[^\s)"'>]{0,2048})"#,
        group: 1,
        after: 4500,
        scopes: &[Scope::Response, Scope::Request],
        ..BASE
    },
    RuleDef {
        id: "injection.markdown_link_exfil",
        category: Category::Injection,
        severity: Severity::Medium,
        label: "injection",
        keywords: &["]("],
        regex: r"\]\(\s*<?(https?://[^\s)>]{1,2048}[?&](?:data|d|q|query|content|text|secret|token|key|payload|info|msg|message|exfil|c|p|email|pw|password)=[^\s)>]{24,2048})",
        group: 1,
        before: 2,
        after: 4200,
        scopes: &[Scope::Response],
        ..BASE
    },
];
