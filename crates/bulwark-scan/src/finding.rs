//! What a scan reports: a category, the detector, a severity and a byte span.

use std::fmt;

macro_rules! names {
    ($(#[$m:meta])* pub enum $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vm])* $v),+ }
        impl $name {
            /// Every value.
            pub const ALL: &'static [$name] = &[$($name::$v),+];
            /// The name used in reports.
            pub fn as_str(self) -> &'static str { match self { $($name::$v => $s),+ } }
            /// Looks a value up by name.
            pub fn from_name(s: &str) -> Option<Self> { match s { $($s => Some($name::$v),)+ _ => None } }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
    };
}

names! {
    /// What kind of thing was found.
    pub enum Category {
        /// Credentials and keys.
        Secret = "secret",
        /// Personal data.
        Pii = "pii",
        /// Instructions aimed at the model.
        Injection = "injection",
        /// Role markers and chat-template tokens.
        Prefill = "prefill",
        /// Requests to hide something from the user.
        Concealment = "concealment",
        /// Instructions hidden in tool definitions.
        Poisoning = "poisoning",
        /// Invisible characters and hidden markup.
        HiddenText = "hidden_text",
        /// Long encoded blobs.
        Exfil = "exfil",
    }
}

names! {
    /// How bad a finding is.
    pub enum Severity {
        /// Worth a note.
        Low = "low",
        /// Worth a warning.
        Medium = "medium",
        /// Worth stopping for.
        High = "high",
        /// Never pass.
        Critical = "critical",
    }
}

names! {
    /// Which way the text travels; selects detectors (seed 000's scope table).
    pub enum Scope {
        /// Arguments on their way to a tool.
        Request = "request",
        /// A tool's result on its way to the model.
        Response = "response",
        /// A tool definition.
        Definition = "definition",
    }
}

/// How a finding's text was encoded, when it was found after decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// Base64 (standard or URL-safe).
    Base64,
    /// Percent-encoding.
    Percent,
    /// HTML character references.
    HtmlEntities,
    /// Hexadecimal.
    Hex,
    /// Unicode tag characters spelling ASCII.
    UnicodeTags,
}

/// One finding. `span` is a byte range into the scanned text; for findings inside encoded
/// text it covers the whole encoded run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The category.
    pub category: Category,
    /// The detector, e.g. `secret.aws_access_key`.
    pub rule_id: &'static str,
    /// How bad.
    pub severity: Severity,
    /// Byte range `[start, end)`.
    pub span: (usize, usize),
    /// The placeholder label when masked, e.g. `aws_access_key`.
    pub label: &'static str,
    /// Set when the finding was inside encoded text.
    pub encoding: Option<Encoding>,
}
