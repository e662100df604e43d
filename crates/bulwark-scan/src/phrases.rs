//! Hand-written phrase rules that complement the generated table in `injection.rs`: hidden
//! CSS over the normalised text, and role turns and fake chat messages over the raw text,
//! where line breaks and exact tokens matter.

use crate::finding::{Category, Scope, Severity};
use crate::rules::{BASE, RuleDef};

const ALL: &[Scope] = &[Scope::Request, Scope::Response, Scope::Definition];

/// Rules over the normalised text besides the generated phrase rules (`injection.rs`).
pub const NORMALIZED: &[RuleDef] = &[RuleDef {
    id: "hidden_text.css",
    category: Category::HiddenText,
    severity: Severity::Low,
    label: "hidden_text",
    keywords: &[
        "display",
        "visibility",
        "font-size",
        "opacity",
        "color",
        "left:-",
        "left: -",
    ],
    regex: r"(?:display ?: ?none|visibility ?: ?hidden|font-size ?: ?0(?:px|pt|em|rem|%)?\b|opacity ?: ?0(?:\.0+)?\b|(?:^|[; \x22'])color ?: ?(?:white|#fff\b|#ffffff|transparent|rgba\(\d+, ?\d+, ?\d+, ?0\))|left ?: ?-\d{4,}px)",
    before: 4,
    after: 40,
    scopes: ALL,
    ..BASE
}];

/// Rules over the raw text, where line breaks and exact tokens matter.
pub const RAW: &[RuleDef] = &[
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
];
