//! Secret detectors: provider token formats (with checksums where the format has one),
//! private keys, JWTs, connection strings with passwords, and keyword-context assignments
//! of high-entropy values. Documented example keys and obvious placeholders are not
//! findings.

use crate::entropy::{base62, crc32, is_placeholder, shannon};
use crate::finding::Severity;
use crate::rules::{ANY_GROUP, BASE, RuleDef};

fn not_placeholder(v: &[u8]) -> bool {
    !is_placeholder(v)
}

/// A high-entropy value that is not a placeholder, word or path.
fn random_looking(v: &[u8]) -> bool {
    if is_placeholder(v) || v.len() < 8 {
        return false;
    }
    let has_digit = v.iter().any(u8::is_ascii_digit);
    let has_alpha = v.iter().any(u8::is_ascii_alphabetic);
    let threshold = if v.len() >= 20 { 3.0 } else { 2.7 };
    has_alpha
        && (has_digit || v.len() >= 20)
        && shannon(v) >= threshold
        && !v.starts_with(b"/")
        && !v.contains(&b' ')
}

/// GitHub's classic tokens end in a CRC-32 of the rest, base62-encoded in six characters.
fn github_checksum(v: &[u8]) -> bool {
    if v.len() != 40 || is_placeholder(v) {
        return false;
    }
    let (body, sum) = v.split_at(34);
    let random = &body[4..];
    base62(crc32(random), 6).as_bytes() == sum || shannon(random) > 3.0
}

fn aws_secret(v: &[u8]) -> bool {
    v.len() == 40 && !is_placeholder(v) && shannon(v) > 4.0 && v.iter().any(u8::is_ascii_digit)
}

/// Public Firebase SDK example keys, which look random but are published on purpose.
const FIREBASE_EXAMPLES: &[&[u8]] = &[
    b"AIzaSyabcdefghijklmnopqrstuvwxyz1234567",
    b"AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs",
    b"AIzaSyCkEhVjf3pduRDt6d1yKOMitrUEke8agEM",
    b"AIzaSyDMAScliyLx7F0NPDEJi1QmyCgHIAODrlU",
    b"AIzaSyD3asb-2pEZVqMkmL6M9N6nHZRR_znhrh0",
    b"AIzayDNSXIbFmlXbIE6mCzDLQAqITYefhixbX4A",
    b"AIzaSyAdOS2zB6NCsk1pCdZ4-P6GBdi_UUPwX7c",
    b"AIzaSyASWm6HmTMdYWpgMnjRBjxcQ9CKctWmLd4",
    b"AIzaSyANUvH9H9BsUccjsu2pCmEkOPjjaXeDQgY",
    b"AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM",
    b"AIzaSyA4UrcGxgwQFTfaI3no3t7Lt1sjmdnP5sQ",
    b"AIzaSyDSb51JiIcB6OJpwwMicseKRhhrOq1cS7g",
    b"AIzaSyBF2RrAIm4a0mO64EShQfqfd2AFnzAvvuU",
    b"AIzaSyBcE-OOIbhjyR83gm4r2MFCu4MJmprNXsw",
    b"AIzaSyB8qGxt4ec15vitgn44duC5ucxaOi4FmqE",
    b"AIzaSyA8vmApnrHNFE0bApF4hoZ11srVL_n0nvY",
];

fn gcp_key(v: &[u8]) -> bool {
    !FIREBASE_EXAMPLES.contains(&v) && !is_placeholder(v) && shannon(v) >= 3.5
}

/// The value of an authorization header or bearer token: long enough, not a placeholder
/// or a bare word.
fn credential_value(v: &[u8]) -> bool {
    // A credential cut short with "..." still leaks its prefix; judge what is there.
    let mut v = v;
    while let Some(rest) = v.strip_suffix(b".") {
        v = rest;
    }
    if v.len() < 12 {
        return false;
    }
    let has_digit = v.iter().any(u8::is_ascii_digit);
    // A provider's published sample (jwt.io's token in an `Authorization` header) is
    // documentation, whichever rule found it.
    !is_placeholder(v)
        && !published_example(v)
        && !code_expression(v)
        && !secret_reference(&v.to_ascii_lowercase())
        && (has_digit || v.len() >= 16)
        && shannon(v) >= 2.5
}

/// Names that hold identifiers, sizes, names or public values rather than secrets
/// (`key_name`, `public_key`, `credentialsId`, `KeySize`, `kms_key_id`, …).
pub(crate) fn not_an_identifier_name(whole: &[u8]) -> bool {
    const NOT_SECRET: &[&str] = &[
        "public",
        "pub_",
        "pubkey",
        "pub const",
        "primary",
        "foreign",
        "bucket",
        "schema",
        "sequence",
        "idx",
        "key_id",
        "keyid",
        "key_name",
        "keyname",
        "key_size",
        "keysize",
        "key_length",
        "keylength",
        "key_pair",
        "keypair",
        "keypress",
        "keyboard",
        "keycode",
        "keyframe",
        "key_alias",
        "keyalias",
        "keystore",
        "keytab",
        "keyvault",
        "key_vault",
        "kms",
        "secret_name",
        "secretname",
        "secret_length",
        "secret_size",
        "credentialsid",
        "credentialid",
        "credentials_id",
        "csrf",
        // Anti-forgery tokens are written into every page the server sends.
        "xsrf",
        "authenticity_token",
        "__requestverificationtoken",
        "monkey",
        "keying",
        "keyword",
        "token_url",
        "token_uri",
        "tokenurl",
        "token_endpoint",
        "token_type",
        "tokentype",
        "api_version",
        "apiversion",
        "author",
        "accessor",
        "access_id",
        "_length",
        "_size",
        "_path",
        "_file",
        "_type",
        "keymeshing",
        "entry key",
        "idempotency",
        "cache_key",
        "cachekey",
        "sort_key",
        "sortkey",
        "partition_key",
        "hash_key",
        "foreign_key",
        "primary_key",
        "keyspace",
    ];
    // Only the name part: everything before the first operator character.
    let cut = whole
        .iter()
        .position(|&b| matches!(b, b'=' | b':' | b',' | b'>'))
        .unwrap_or(whole.len());
    let name = String::from_utf8_lossy(&whole[..cut]).to_ascii_lowercase();
    !NOT_SECRET.iter().any(|w| name.contains(w))
}

/// gitleaks-style generic assignments: at least 10 characters, a digit, entropy 3.5.
fn generic_secret(v: &[u8]) -> bool {
    !published_example(v)
        && v.len() >= 10
        && v.iter().any(u8::is_ascii_digit)
        && v.iter().any(u8::is_ascii_alphabetic)
        && shannon(v) >= 3.5
        && !is_placeholder(v)
        && !code_expression(v)
        && !v.starts_with(b"/")
        && !v.contains(&b' ')
}

fn jwt(v: &[u8]) -> bool {
    if published_example(v) {
        return false;
    }
    // The header must decode to a JSON object naming an algorithm or type.
    let header = v.split(|&b| b == b'.').next().unwrap_or_default();
    crate::decode::base64(header).is_some_and(|h| {
        let h = String::from_utf8_lossy(&h).to_ascii_lowercase();
        let h = h.trim();
        h.starts_with('{') && h.ends_with('}') && (h.contains("\"alg\"") || h.contains("\"typ\""))
    })
}

fn password_value(v: &[u8]) -> bool {
    if shannon(v) < 1.5 {
        return false;
    }
    let lower = v.to_ascii_lowercase();
    let word = matches!(
        lower.as_slice(),
        b"password"
            | b"pass"
            | b"passwd"
            | b"secret"
            | b"pwd"
            | b"root"
            | b"admin"
            | b"string"
            | b"prompt"
            | b"required"
            | b"optional"
            | b"hidden"
            | b"text"
    );
    // Code, not a literal: a call (`get_secret()`), member access, `new …`.
    let ident = lower
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.'))
        .count();
    let call = ident > 0 && lower.get(ident) == Some(&b'(');
    let code = call
        || lower.starts_with(b"this.")
        || lower.starts_with(b"self.")
        || lower.starts_with(b"os.")
        || lower.starts_with(b"new ")
        || lower.starts_with(b"fs.")
        || lower.starts_with(b"request.");
    v.len() >= 3
        && !is_placeholder(v)
        && !word
        && !code
        && !code_expression(v)
        && !secret_reference(&lower)
        && !published_example(v)
        && v.iter().any(|b| b.is_ascii_alphanumeric())
}

/// A reference to a secret kept elsewhere — a secret manager's URI or a command that reads
/// one (`op://vault/item/field`, `$(op read …)`, `vault kv get …`, `${{ secrets.X }}`) — is
/// where a secret lives, not the secret.
fn secret_reference(lower: &[u8]) -> bool {
    const REFS: &[&[u8]] = &[
        b"op://",
        b"$(op ",
        b"$(vault ",
        b"vault kv ",
        b"vault read ",
        b"${{",
        b"{{",
        b"$(aws secretsmanager",
        b"$(gcloud secrets",
        b"$(az keyvault",
        b"arn:aws:secretsmanager",
        b"projects/",
        b"keyvault:",
        b"vault:",
        b"ref+",
    ];
    let t = lower.trim_ascii_start();
    REFS.iter().any(|r| t.starts_with(r))
}

/// Documented example tokens that providers publish on purpose (jwt.io's sample, Stripe's
/// test-mode key from its API reference).
const PUBLISHED_EXAMPLES: &[&[u8]] = &[
    b"SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    b"sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    b"sk_test_BQokikJOvBiI2HlWgH4olfQ2",
    b"sk_test_51HqLyjWDarjtT1zdp7dc",
];

/// Published examples, and keys that are public by design: Stripe's and Flutterwave's
/// publishable keys and Mapbox's public tokens go into web pages on purpose.
pub(crate) fn published_example(v: &[u8]) -> bool {
    const PUBLIC: &[&[u8]] = &[b"pk_live_", b"pk_test_", b"pk.eyJ", b"FLWPUBK"];
    PUBLIC.iter().any(|p| v.starts_with(p))
        || PUBLISHED_EXAMPLES
            .iter()
            .any(|e| v.windows(e.len()).any(|w| w == *e))
}

fn stripe_key(v: &[u8]) -> bool {
    not_placeholder(v) && !published_example(v)
}

/// A bearer credential, unless it is an OAuth response's field list
/// (`token_type=bearer expires_in=3600`) or a reference.
fn bearer_value(v: &[u8]) -> bool {
    let lower = v.to_ascii_lowercase();
    let key_value = v
        .iter()
        .position(|b| *b == b'=')
        .is_some_and(|i| i > 0 && v[..i].iter().all(|b| b.is_ascii_lowercase() || *b == b'_'));
    credential_value(v) && !key_value && !secret_reference(&lower)
}

/// Docker `config.json` `auth` values are base64 of `user:token`.
fn docker_auth(v: &[u8]) -> bool {
    crate::decode::base64(v).is_some_and(|d| {
        let colon = d.iter().position(|b| *b == b':');
        colon.is_some_and(|i| i > 0 && d.len() - i > 4)
            && d.iter().all(|b| b.is_ascii_graphic())
            && !is_placeholder(&d)
    })
}

/// An XML element that holds a secret, not its name or settings (`<secretName>`,
/// `<tokenType>` are left out by `not_an_identifier_name`).
fn xml_element_name(whole: &[u8]) -> bool {
    let open = whole
        .iter()
        .skip(1)
        .position(|b| *b == b'>')
        .map_or(whole, |i| &whole[1..=i]);
    not_an_identifier_name(open)
}

/// A Slack token: the `xox?-` prefix and its digit groups say what it is, so a lower
/// entropy floor than for bare values (legacy workspace tokens repeat digits).
fn slack_value(v: &[u8]) -> bool {
    !is_placeholder(v) && shannon(v) >= 2.0 && v.iter().any(u8::is_ascii_digit)
}

fn vault_token(v: &[u8]) -> bool {
    random_looking(v.get(4..).unwrap_or_default())
}

/// The last word of an assignment's name, split at separators and camelCase humps
/// (`db_password_file` → `file`, `authTokenUrl` → `url`), lower-cased.
pub(crate) fn last_word(name: &str) -> String {
    let mut last = String::new();
    for c in name.chars() {
        if matches!(
            c,
            '_' | '-' | '.' | ' ' | '\t' | '$' | '>' | '[' | ']' | '\'' | '"' | ':' | '*'
        ) {
            last.clear();
        } else if c.is_ascii_uppercase()
            && last
                .chars()
                .next_back()
                .is_some_and(|p| p.is_ascii_lowercase())
        {
            last.clear();
            last.push(c);
        } else {
            last.push(c);
        }
    }
    last.to_ascii_lowercase()
}

/// Last words that make a secret-named key hold something about the secret rather than the
/// secret (`token_url`, `passwordPolicy`, `auth_type`, `secretRef`, `api_key_header`).
const ABOUT_THE_SECRET: &[&str] = &[
    "id",
    "ids",
    "url",
    "uri",
    "urls",
    "host",
    "hostname",
    "name",
    "names",
    "type",
    "mode",
    "method",
    "header",
    "scheme",
    "endpoint",
    "provider",
    "version",
    "file",
    "path",
    "dir",
    "length",
    "len",
    "size",
    "expiry",
    "expires",
    "expiration",
    "ttl",
    "timeout",
    "enabled",
    "enable",
    "required",
    "field",
    "column",
    "label",
    "hint",
    "prompt",
    "placeholder",
    "format",
    "regex",
    "pattern",
    "policy",
    "rule",
    "rules",
    "strategy",
    "plugin",
    "backend",
    "server",
    "domain",
    "realm",
    "scope",
    "scopes",
    "issuer",
    "audience",
    "algorithm",
    "alg",
    "count",
    "limit",
    "index",
    "prefix",
    "suffix",
    "user",
    "username",
    "email",
    "owner",
    "status",
    "state",
    "flow",
    "grant",
    "kind",
    "class",
    "handler",
    "env",
    "var",
    "variable",
    "ref",
    "reference",
    "arn",
    "location",
    "source",
    "store",
    "manager",
    "service",
    "tokens",
    "validator",
    "validation",
    "min",
    "max",
    "attempts",
    "retries",
    "changed",
    "reset",
    "storage",
    "cache",
    "generator",
    "encoder",
    "mask",
    "input",
    "text",
    "message",
    "error",
];

/// The name of a keyword assignment: not an identifier's name, not a setting about the
/// secret.
fn keyword_name(whole: &[u8]) -> bool {
    // The regex's first byte is the boundary before the name (`>` of `$this->`, a quote).
    let whole = match whole.first() {
        Some(b) if !b.is_ascii_alphanumeric() && *b != b'-' => &whole[1..],
        _ => whole,
    };
    let cut = whole
        .iter()
        .position(|&b| matches!(b, b'=' | b',' | b'>' | b'|' | b'?'))
        .unwrap_or(whole.len());
    // A type annotation (`apiKey: string`) or Go's `var k string` is not part of the name.
    let head = String::from_utf8_lossy(&whole[..cut]);
    let name = head
        .trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
        .split([':', ' ', '\t', '"', '\''])
        .find(|w| {
            !w.is_empty()
                && !matches!(
                    *w,
                    "var"
                        | "val"
                        | "let"
                        | "const"
                        | "define("
                        | "private"
                        | "static"
                        | "final"
                        | "public"
                        | "String"
                        | "string"
                        | "NSString"
                        | "char"
                )
        })
        .unwrap_or_default();
    let name = name.trim_start_matches(['$', '*', '@', '-', '(', '\'']);
    let lw = last_word(name);
    !name.is_empty()
        && not_an_identifier_name(name.as_bytes())
        && !ABOUT_THE_SECRET.contains(&lw.as_str())
}

/// Code rather than a literal: a dotted or scoped path (`settings.SECRET_KEY`,
/// `options.Value.Secret`, `std::env::var`), a call or an index (`getenv(`, `$_ENV[`),
/// command substitution (`$(vault kv get …)`), a server-side template (`<%= … %>`), a flag.
pub(crate) fn code_expression(v: &[u8]) -> bool {
    // What closes the surrounding call, list or object is not part of the expression.
    let mut t = v.trim_ascii();
    while let Some((last, rest)) = t.split_last()
        && matches!(last, b')' | b']' | b'}' | b';' | b',')
    {
        t = rest;
    }
    if t.starts_with(b"$(")
        || t.starts_with(b"`")
        || t.starts_with(b"<%")
        || t.starts_with(b"#{")
        || t.starts_with(b"--")
        || t.starts_with(b"${")
    {
        return true;
    }
    let t = t.strip_prefix(b"$").unwrap_or(t);
    let t = t.strip_prefix(b"@").unwrap_or(t);
    // An identifier, then segments joined by `.`, `::` or `->`.
    let mut i = 0;
    let mut segments = 0;
    let mut digits = 0;
    loop {
        let start = i;
        if !t
            .get(i)
            .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
        {
            break;
        }
        while t
            .get(i)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            digits += usize::from(t[i].is_ascii_digit());
            i += 1;
        }
        if i - start > 40 {
            return false;
        }
        segments += 1;
        if t.get(i) == Some(&b'.') {
            i += 1;
        } else if t[i..].starts_with(b"::") || t[i..].starts_with(b"->") {
            i += 2;
        } else {
            break;
        }
    }
    if segments == 0 {
        return false;
    }
    let rest = &t[i..];
    let call_or_index = matches!(rest.first(), Some(b'(' | b'['));
    // `a.b.c` with few digits is a path of names; a lone word is code only if called.
    let path = segments >= 2 && rest.is_empty() && digits <= 2 && i == t.len();
    call_or_index || path
}

/// A value that looks generated rather than written: random-looking segments make up
/// most of it, the entropy is high enough for its length, and it is not a URL, path,
/// e-mail address, word list, reference or stand-in.
pub(crate) fn random_value(v: &[u8]) -> bool {
    if v.len() < 8
        || v.len() > 200
        || is_placeholder(v)
        || published_example(v)
        || code_expression(v)
        || secret_reference(&v.to_ascii_lowercase())
        || v.contains(&b' ')
        || v.windows(3).any(|w| w == b"://")
        || v.starts_with(b"/")
        || v.starts_with(b"~")
        || v.starts_with(b"./")
        || v.starts_with(b"../")
    {
        return false;
    }
    // An e-mail address: local part, `@`, a dotted domain ending in letters.
    if let Some(at) = v.iter().position(|b| *b == b'@') {
        let domain = &v[at + 1..];
        let tld = domain.rsplit(|b| *b == b'.').next().unwrap_or_default();
        if at > 0
            && domain.contains(&b'.')
            && tld.len() >= 2
            && tld.iter().all(u8::is_ascii_alphabetic)
        {
            return false;
        }
    }
    // Segments between separators: random ones mix letters and digits or hold symbols.
    let mut random_len = 0;
    for seg in v.split(|b| matches!(b, b'_' | b'-' | b'.' | b'/' | b':')) {
        let letters = seg.iter().any(u8::is_ascii_alphabetic);
        let digits = seg.iter().any(u8::is_ascii_digit);
        let symbols = seg.iter().any(|b| !b.is_ascii_alphanumeric());
        if seg.len() >= 4 && ((letters && digits) || symbols) {
            random_len += seg.len();
        }
    }
    // A short value with a run like `abc` or `123` is a stand-in someone typed
    // (`AbCeFG123`), not a generated secret.
    let lower = v.to_ascii_lowercase();
    let typed_run = v.len() < 12
        && lower
            .windows(3)
            .any(|w| w[1] == w[0].wrapping_add(1) && w[2] == w[1].wrapping_add(1));
    let floor = if v.len() >= 16 { 3.0 } else { 2.5 };
    !typed_run && random_len * 2 >= v.len() && shannon(v) >= floor
}

/// A keyword assignment's value, quoted or not.
fn keyword_value(v: &[u8]) -> bool {
    random_value(v)
}

/// A secret-named key: a word for a password, secret, token, key or credential, inside a
/// longer name (`DB_PASSWORD`, `stripeApiKey`, `--auth-token`, `app.client.secret`).
macro_rules! secret_name {
    () => {
        r"[A-Za-z0-9_.\-]{0,40}(?:passw(?:or)?d|pwd|secret|token|api[_\-]?key|access[_\-]?key|auth|credentials?|creds|private[_\-]?key|signing[_\-]?key|encryption[_\-]?key|master[_\-]?key|(?:db|database|redis|mysql|postgres|smtp|ldap|admin|root|mail|ftp|user)[_\-]?pass)[A-Za-z0-9_.\-]{0,30}"
    };
}

/// A quoted literal in any common syntax: `"…"`, `'…'`, a backtick string, C#/Objective-C
/// `@"…"`, Python's `r"…"`/`b"…"`, and quotes escaped inside another string (`\"…\"`).
macro_rules! quoted_value {
    () => {
        r#"(?:@|[rbu])?(?:\\?"([^"\\\n]{6,200})\\?"|\\?'([^'\\\n]{6,200})\\?'|`([^`\n]{6,200})`)"#
    };
}

/// An unquoted value (YAML, .env, INI, properties, flags), ended by what ends a value.
macro_rules! bare_value {
    () => {
        r#"([^\s"'`,;<>(){}\[\]\\]{8,200})(?:[\s"'`,;<>)\]}\\]|$)"#
    };
}

/// The keyword-literal rule's regex: a secret-named key, its closing quote or bracket, an
/// optional type (`: string`, `: &str`, Go's `string`), then an assignment operator of any
/// common syntax and a quoted or bare value — or a comma or whitespace and a quoted value
/// (PHP's `define('K', '…')`, C's `#define K "…"`, `--token "…"`).
const KEYWORD_LITERAL: &str = concat!(
    r"(?i)(?:^|[^A-Za-z0-9_])",
    secret_name!(),
    r#"(?:\\?["'])?\]?(?:[ \t]*:[ \t]*(?:&(?:'static[ \t]+)?str|string|str|secret(?:string)?)\??|[ \t]+string)?"#,
    r"(?:[ \t]*(?::=|=>|\?\?=|\|\|=|\.=|=|:)[ \t]*(?:",
    quoted_value!(),
    "|",
    bare_value!(),
    r")|(?:[ \t]*,[ \t]*|[ \t]+)",
    quoted_value!(),
    ")",
);

/// A name/value pair in XML configuration (`<add key="ApiKey" value="…"/>`,
/// `<property name="db.password" value="…"/>`, `<env name="TOKEN" value="…"/>`).
const XML_PAIR: &str = concat!(
    r#"(?i)<(?:add|property|entry|param|setting|env|variable|parameter)\b[^>]{0,80}?\b(?:key|name)[ \t]*=[ \t]*"("#,
    secret_name!(),
    r#")"[^>]{0,80}?\bvalue[ \t]*=[ \t]*"([^"\n]{6,200})""#,
);

/// A name/value pair in YAML or JSON, the way Kubernetes, Compose, ECS task definitions and
/// CI files list environment variables: `- name: DB_PASSWORD` then `value: "…"`, or
/// `{"name": "API_TOKEN", "value": "…"}`.
const NAME_VALUE_PAIR: &str = concat!(
    r#"(?i)\bname\\?["']?[ \t]*[:=][ \t]*\\?["']?(?:"#,
    secret_name!(),
    r#")\\?["']?[ \t]*,?[ \t]*(?:\r?\n[ \t]*(?:-[ \t]+)?)?\\?["']?value\\?["']?[ \t]*[:=][ \t]*(?:"#,
    quoted_value!(),
    "|",
    bare_value!(),
    ")",
);

/// The name of a name/value pair (the first quoted or bare word after `name`).
fn pair_name(whole: &[u8]) -> bool {
    let rest = whole.get(4..).unwrap_or_default();
    let start = rest
        .iter()
        .position(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .unwrap_or(rest.len());
    let len = rest[start..]
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')))
        .unwrap_or(rest.len() - start);
    keyword_name(&rest[start..start + len])
}

/// The name of an XML name/value pair (the pair's `key` or `name`).
fn xml_pair_name(whole: &[u8]) -> bool {
    let lower = whole.to_ascii_lowercase();
    let at = lower
        .windows(4)
        .position(|w| w == b"key=" || w == b"key " || w == b"name")
        .unwrap_or(0);
    let rest = &whole[at..];
    let name = rest.split(|b| *b == b'"').nth(1).unwrap_or_default();
    keyword_name(name)
}

/// The secret detectors.
pub const RULES: &[RuleDef] = &[
    // --- cloud ---
    RuleDef {
        id: "secret.aws_access_key",
        label: "aws_access_key",
        keywords: &["akia", "asia", "abia", "acca", "a3t"],
        regex: r"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b",
        group: 1,
        before: 8,
        after: 24,
        check: Some(not_placeholder),
        ..BASE
    },
    RuleDef {
        id: "secret.aws_secret_key",
        label: "aws_secret_key",
        severity: Severity::Critical,
        keywords: &[
            "aws_secret",
            "secret_access_key",
            "secretaccesskey",
            "aws secret",
            "aws_session_token",
        ],
        regex: r#"(?i)(?:aws)?[_\-. ]?(?:secret[_\-. ]?access[_\-. ]?key|secret[_\-. ]?key|secretaccesskey)["']?\s*(?:[:=]|:=|=>|\s)\s*["']?([A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)"#,
        group: 1,
        before: 16,
        after: 120,
        check: Some(aws_secret),
        ..BASE
    },
    RuleDef {
        id: "secret.gcp_api_key",
        label: "gcp_api_key",
        keywords: &["aiza"],
        regex: r"\b(AIza[0-9A-Za-z_\-]{35})(?:[^0-9A-Za-z_\-]|$)",
        group: 1,
        before: 4,
        after: 48,
        check: Some(gcp_key),
        ..BASE
    },
    RuleDef {
        id: "secret.gcp_service_account",
        label: "gcp_service_account",
        severity: Severity::Critical,
        keywords: &["service_account"],
        regex: r#""type"\s*:\s*"service_account""#,
        before: 32,
        after: 32,
        ..BASE
    },
    RuleDef {
        id: "secret.google_oauth_secret",
        label: "google_oauth_secret",
        keywords: &["gocspx-"],
        regex: r"\b(GOCSPX-[A-Za-z0-9_\-]{28})(?:[^A-Za-z0-9_\-]|$)",
        group: 1,
        before: 4,
        after: 40,
        ..BASE
    },
    RuleDef {
        id: "secret.azure_storage_key",
        label: "azure_storage_key",
        severity: Severity::Critical,
        keywords: &["accountkey="],
        regex: r"AccountKey=([A-Za-z0-9+/]{86}==)",
        group: 1,
        after: 110,
        check: Some(not_placeholder),
        ..BASE
    },
    RuleDef {
        id: "secret.azure_client_secret",
        label: "azure_client_secret",
        keywords: &["q~"],
        regex: r"(?:^|[^A-Za-z0-9_~.\-])([A-Za-z0-9_~.\-]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34})(?:[^A-Za-z0-9_~.\-]|$)",
        group: 1,
        before: 8,
        after: 40,
        check: Some(random_looking),
        ..BASE
    },
    RuleDef {
        id: "secret.digitalocean_token",
        label: "digitalocean_token",
        keywords: &["dop_v1_", "doo_v1_", "dor_v1_"],
        regex: r"\b(do[opr]_v1_[a-f0-9]{64})\b",
        group: 1,
        after: 80,
        ..BASE
    },
    RuleDef {
        id: "secret.databricks_token",
        label: "databricks_token",
        keywords: &["dapi"],
        regex: r"\b(dapi[a-f0-9]{32}(?:-\d)?)\b",
        group: 1,
        after: 44,
        check: Some(random_looking),
        ..BASE
    },
    // --- source control ---
    RuleDef {
        id: "secret.github_token",
        label: "github_token",
        keywords: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        regex: r"\b(gh[pousr]_[A-Za-z0-9]{36})\b",
        group: 1,
        before: 4,
        after: 44,
        check: Some(github_checksum),
        ..BASE
    },
    RuleDef {
        id: "secret.github_fine_grained_token",
        label: "github_token",
        keywords: &["github_pat_"],
        regex: r"\b(github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})\b",
        group: 1,
        after: 96,
        check: Some(not_placeholder),
        ..BASE
    },
    RuleDef {
        id: "secret.gitlab_token",
        label: "gitlab_token",
        keywords: &[
            "glpat-",
            "gldt-",
            "glptt-",
            "glrt-",
            "glsoat-",
            "glcbt-",
            "glft-",
            "glimt-",
            "glagent-",
            "gloas-",
            "gr1348941",
        ],
        regex: r"\b(glpat-[A-Za-z0-9_\-]{27,300}\.[0-9a-z]{2}(?:\.[0-9a-z]{2})?[0-9a-z]{7}|(?:glpat|gldt|glrt|glft|glsoat)-[A-Za-z0-9_\-]{20}|glrt-t[0-9]_[A-Za-z0-9_\-]{27,300}\.[0-9a-z]{2}[0-9a-z]{7}|glimt-[A-Za-z0-9_\-]{25}|glagent-[A-Za-z0-9_\-]{50,1024}|gloas-[A-Za-z0-9_\-]{64}|glptt-[0-9a-f]{40}|glcbt-[0-9A-Za-z]{1,5}_[A-Za-z0-9_\-]{20}|GR1348941[A-Za-z0-9_\-]{20})(?:[^A-Za-z0-9_\-]|$)",
        group: 1,
        after: 330,
        check: Some(random_looking),
        ..BASE
    },
    // --- chat and mail ---
    RuleDef {
        id: "secret.slack_token",
        label: "slack_token",
        keywords: &[
            "xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxo-", "xoxe", "xapp-",
        ],
        regex: r"\b(xoxb-[0-9]{10,13}-[0-9]{10,13}[A-Za-z0-9\-]*|xoxb-[0-9]{8,14}-[A-Za-z0-9]{18,26}|xox[pe](?:-[0-9]{10,13}){3}-[A-Za-z0-9\-]{28,34}|xox[abposr]-(?:[0-9]+-)+[A-Za-z0-9]{12,}|xox[ar]-(?:[0-9]-)?[0-9A-Za-z]{8,48}|xox[os]-[0-9]+-[0-9]+-[0-9]+-[A-Fa-f0-9]+|xapp-[0-9]-[A-Z0-9]+-[0-9]+-[a-z0-9]+|(?i:xoxe\.xox[bp]-[0-9]-[A-Z0-9]{163,166})|(?i:xoxe-[0-9]-[A-Z0-9]{146}))(?:[^A-Za-z0-9\-]|$)",
        group: 1,
        after: 260,
        check: Some(slack_value),
        ..BASE
    },
    RuleDef {
        id: "secret.slack_webhook",
        label: "slack_webhook",
        keywords: &["hooks.slack.com"],
        regex: r"(https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,120})",
        group: 1,
        before: 8,
        after: 140,
        ..BASE
    },
    RuleDef {
        id: "secret.discord_webhook",
        label: "discord_webhook",
        keywords: &["/api/webhooks/"],
        regex: r"(https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/[A-Za-z0-9_\-]{60,70})",
        group: 1,
        before: 40,
        after: 120,
        ..BASE
    },
    RuleDef {
        id: "secret.vault_token",
        label: "vault_token",
        keywords: &["hvs.", "hvb.", "hvr."],
        regex: r"\b(hvs\.[A-Za-z0-9_\-]{24,200}|hvb\.[A-Za-z0-9_\-]{100,300}|hvr\.[A-Za-z0-9_\-]{20,200})(?:[^A-Za-z0-9_\-]|$)",
        group: 1,
        after: 310,
        check: Some(vault_token),
        ..BASE
    },
    RuleDef {
        id: "secret.azure_sas",
        label: "azure_sas",
        keywords: &["sig="],
        regex: r"(?i)\bsv=[0-9]{4}-[0-9]{2}-[0-9]{2}[^\s\x22'<>]{0,300}?[?&]sig=([A-Za-z0-9%+/=]{30,120})|[?&]sig=([A-Za-z0-9%+/=]{30,120})[^\s\x22'<>]{0,300}?[?&]sv=[0-9]{4}-[0-9]{2}-[0-9]{2}",
        group: ANY_GROUP,
        before: 320,
        after: 440,
        check: Some(not_placeholder),
        ..BASE
    },
    RuleDef {
        id: "secret.docker_auth",
        label: "docker_auth",
        keywords: &["\"auth\""],
        regex: r#""auth"\s*:\s*"([A-Za-z0-9+/]{12,400}={0,2})""#,
        group: 1,
        after: 420,
        check: Some(docker_auth),
        ..BASE
    },
    RuleDef {
        id: "secret.sendgrid_key",
        label: "sendgrid_key",
        keywords: &["sg."],
        regex: r"\b(SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43})(?:[^A-Za-z0-9_\-]|$)",
        group: 1,
        after: 72,
        ..BASE
    },
    RuleDef {
        id: "secret.mailgun_key",
        label: "mailgun_key",
        keywords: &["key-"],
        regex: r"\b(key-[0-9a-f]{32})\b",
        group: 1,
        after: 40,
        check: Some(random_looking),
        ..BASE
    },
    RuleDef {
        id: "secret.telegram_bot_token",
        label: "telegram_bot_token",
        keywords: &[":aa"],
        regex: r"\b([0-9]{8,10}:AA[0-9A-Za-z_\-]{33})(?:[^0-9A-Za-z_\-]|$)",
        group: 1,
        before: 12,
        after: 40,
        ..BASE
    },
    RuleDef {
        id: "secret.discord_bot_token",
        label: "discord_bot_token",
        keywords: &["discord", "bot "],
        regex: r"\b([MNO][A-Za-z\d_\-]{23,25}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,38})\b",
        group: 1,
        before: 80,
        after: 120,
        check: Some(random_looking),
        ..BASE
    },
    // --- payments and commerce ---
    RuleDef {
        id: "secret.stripe_key",
        label: "stripe_key",
        keywords: &["sk_live_", "rk_live_", "sk_test_", "rk_test_"],
        regex: r"\b([rs]k_(?:live|test)_[0-9a-zA-Z]{24,247})\b",
        group: 1,
        after: 260,
        check: Some(stripe_key),
        ..BASE
    },
    RuleDef {
        id: "secret.shopify_token",
        label: "shopify_token",
        keywords: &["shpat_", "shpss_", "shpca_", "shppa_"],
        regex: r"\b(shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32})\b",
        group: 1,
        after: 40,
        ..BASE
    },
    // --- AI providers ---
    RuleDef {
        id: "secret.anthropic_key",
        label: "anthropic_key",
        severity: Severity::Critical,
        keywords: &["sk-ant-"],
        regex: r"\b(sk-ant-(?:api03|admin01)-[A-Za-z0-9_\-]{93}AA|sk-ant-(?:oat|sid|ort)[0-9]{2}-[A-Za-z0-9_\-]{80,120})(?:[^A-Za-z0-9_\-]|$)",
        group: 1,
        after: 140,
        check: Some(not_placeholder),
        ..BASE
    },
    RuleDef {
        id: "secret.openai_key",
        label: "openai_key",
        severity: Severity::Critical,
        keywords: &[
            "t3blbkfj",
            "sk-proj-",
            "sk-svcacct-",
            "sk-admin-",
            "sk-none-",
        ],
        regex: r"\b(sk-(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_\-]{16,200}T3BlbkFJ[A-Za-z0-9_\-]{16,200}|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{100,250})(?:[^A-Za-z0-9_\-]|$)",
        group: 1,
        before: 220,
        after: 260,
        check: Some(not_placeholder),
        ..BASE
    },
    RuleDef {
        id: "secret.huggingface_token",
        label: "huggingface_token",
        keywords: &["hf_", "api_org_"],
        regex: r"\b((?:hf_|api_org_)[A-Za-z0-9]{34})\b",
        group: 1,
        after: 44,
        check: Some(random_looking),
        ..BASE
    },
    // --- package registries ---
    RuleDef {
        id: "secret.npm_token",
        label: "npm_token",
        keywords: &["npm_"],
        regex: r"\b(npm_[A-Za-z0-9]{36})\b",
        group: 1,
        after: 44,
        check: Some(random_looking),
        ..BASE
    },
    RuleDef {
        id: "secret.pypi_token",
        label: "pypi_token",
        keywords: &["pypi-ageichlwas5vcmc", "pypi-agendgvzdc5wexbplm9yzw"],
        regex: r"\b(pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_\-]{70,})",
        group: 1,
        after: 1100,
        ..BASE
    },
    // --- keys and tokens ---
    RuleDef {
        id: "secret.private_key",
        label: "private_key",
        severity: Severity::Critical,
        keywords: &[
            "-----begin",
            "begin ssh2 encrypted private key",
            "putty-user-key-file-",
        ],
        regex: r"(-----BEGIN[ A-Z0-9_]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[ A-Z0-9_]{0,40}PRIVATE KEY(?: BLOCK)?-----|[\sA-Za-z0-9+/=:,.]{64,})?|-{4} BEGIN SSH2 ENCRYPTED PRIVATE KEY -{4}|PuTTY-User-Key-File-[23]:)",
        group: 1,
        after: 16500,
        ..BASE
    },
    RuleDef {
        id: "secret.jwt",
        label: "jwt",
        keywords: &["eyj"],
        regex: r"\b(eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{5,}(?:\.[A-Za-z0-9_\-]{10,})?)(?:[^A-Za-z0-9_\-.]|$)",
        group: 1,
        after: 8192,
        check: Some(jwt),
        ..BASE
    },
    RuleDef {
        id: "secret.auth_header",
        label: "auth_header",
        keywords: &[
            "authorization",
            "api-key",
            "apikey",
            "api_key",
            "api-token",
            "auth-token",
            "x-auth",
            "token:",
            "bearer",
        ],
        regex: r#"(?i)(?:authorization|x-[a-z0-9\-]{0,30}(?:api-?key|token|auth)|api[-_]?key|api-token|auth-token|token)["']?\s*:\s*(?:(?:bearer|basic|token|api-token|digest|apikey|key)\s+)?([A-Za-z0-9_\-.=:/+~@]{8,})"#,
        group: 1,
        before: 32,
        after: 400,
        check: Some(credential_value),
        ..BASE
    },
    RuleDef {
        id: "secret.bearer_token",
        label: "bearer_token",
        keywords: &["bearer "],
        regex: r"(?i)\bbearer\s+([A-Za-z0-9_\-.=:/+~]{12,})",
        group: 1,
        before: 2,
        after: 400,
        check: Some(bearer_value),
        ..BASE
    },
    RuleDef {
        id: "secret.npm_auth_token",
        label: "npm_token",
        keywords: &["_authtoken"],
        regex: r"(?:^|[\s\x22'])//[^\s/]+(?:/[^\s:]*)?/:_authToken=\s*([A-Fa-f0-9\-]{36}|npm_[A-Za-z0-9]{36})",
        group: 1,
        before: 120,
        after: 80,
        check: Some(not_placeholder),
        ..BASE
    },
    RuleDef {
        id: "secret.connection_string",
        label: "password",
        keywords: &["://"],
        regex: r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:@/\\?#\x22'<>]{1,64}:([^\s@/\\?#\x22'<>]{3,128})@[A-Za-z0-9.\-_\[\]:]+",
        group: 1,
        before: 90,
        after: 220,
        check: Some(password_value),
        ..BASE
    },
    // --- keyword context ---
    RuleDef {
        id: "secret.keyword_assignment",
        label: "secret",
        severity: Severity::High,
        keywords: &[
            "password",
            "passwd",
            "pwd",
            "secret",
            "token",
            "api_key",
            "apikey",
            "api-key",
            "access_key",
            "accesskey",
            "auth",
            "private_key",
            "credential",
            "creds",
            "key",
        ],
        regex: r#"(?i)[A-Za-z0-9_.\-]{0,50}(?:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|auth[_\-]?key|private[_\-]?key|client[_\-]?secret|credentials?|creds|key)(?:[ \t\w.\-]{0,20})[\x22'\]]{0,3}\s{0,3}(?:=|:=|::=|:::=|\.=|=>|:|\?=|\|\||,|>)\s{0,3}[\x22'`]{0,3}([A-Za-z0-9_.=+/\-]{10,150})(?:[\x22'`\s;,)<]|\\[nr]|$)"#,
        group: 1,
        before: 72,
        after: 240,
        check: Some(generic_secret),
        context: Some(keyword_name),
        ..BASE
    },
    RuleDef {
        // Any syntax's secret-named assignment of a generated-looking value (see
        // `KEYWORD_LITERAL`); the value must look random, not code or a stand-in.
        id: "secret.keyword_literal",
        label: "secret",
        severity: Severity::High,
        // Not a bare "pass": "passed", "passport" and "compass" would open a window at
        // every mention.
        keywords: &[
            "passw",
            "_pass",
            "-pass",
            "dbpass",
            "userpass",
            "rootpass",
            "adminpass",
            "pwd",
            "secret",
            "token",
            "api_key",
            "apikey",
            "api-key",
            "access_key",
            "accesskey",
            "access-key",
            "auth",
            "credential",
            "creds",
            "private_key",
            "privatekey",
            "private-key",
            "signing",
            "encryption",
            "master_key",
            "masterkey",
            "master-key",
        ],
        regex: KEYWORD_LITERAL,
        group: ANY_GROUP,
        before: 64,
        after: 300,
        check: Some(keyword_value),
        context: Some(keyword_name),
        ..BASE
    },
    RuleDef {
        id: "secret.xml_pair",
        label: "secret",
        severity: Severity::High,
        keywords: &["value="],
        regex: XML_PAIR,
        group: 2,
        before: 200,
        after: 260,
        check: Some(keyword_value),
        context: Some(xml_pair_name),
        ..BASE
    },
    RuleDef {
        id: "secret.name_value_pair",
        label: "secret",
        severity: Severity::High,
        keywords: &["value"],
        regex: NAME_VALUE_PAIR,
        group: ANY_GROUP,
        before: 120,
        after: 260,
        check: Some(keyword_value),
        context: Some(pair_name),
        ..BASE
    },
    RuleDef {
        // `.netrc`: `machine HOST login USER password PASS`, on one line or several.
        id: "secret.netrc_password",
        label: "password",
        keywords: &["machine"],
        regex: r"(?i)\bmachine\s+\S+\s+login\s+\S+\s+password\s+(\S{4,200})",
        group: 1,
        before: 8,
        after: 520,
        check: Some(password_value),
        ..BASE
    },
    RuleDef {
        // The MySQL/MariaDB clients take the password glued to `-p` (`-p'…'`, `-pS3cr…`);
        // `-p` alone prompts for it.
        id: "secret.mysql_password_flag",
        label: "password",
        keywords: &["mysql", "mariadb"],
        regex: r#"(?i)\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mariadb|mariadb-dump)\b[^\n|;&]{0,200}?[ \t]-p(?:'([^'\n]{4,200})'|"([^"\n]{4,200})"|([^\s'"\-][^\s'"]{3,200}))"#,
        group: ANY_GROUP,
        before: 8,
        after: 420,
        check: Some(password_value),
        ..BASE
    },
    RuleDef {
        // XML configuration (Maven `settings.xml`, .NET `web.config`, Spring beans):
        // `<password>…</password>`, `<db.secret>…</db.secret>`.
        id: "secret.xml_element",
        label: "password",
        keywords: &[
            "password>",
            "passwd>",
            "pwd>",
            "secret>",
            "apikey>",
            "api_key>",
            "token>",
        ],
        regex: r"(?i)<([A-Za-z0-9_.:\-]{0,40}(?:password|passwd|pwd|secret|api_?key|token))>\s*([^<\s]{4,200})\s*</([A-Za-z0-9_.:\-]{0,40}(?:password|passwd|pwd|secret|api_?key|token))>",
        group: 2,
        before: 60,
        after: 260,
        check: Some(password_value),
        context: Some(xml_element_name),
        ..BASE
    },
    RuleDef {
        // The same for elements named for a token, key or credential, whose values must
        // look generated (`<auth>kerberos</auth>` is a setting, not a secret).
        id: "secret.xml_element",
        label: "secret",
        keywords: &[
            "auth>",
            "credential>",
            "credentials>",
            "accesskey>",
            "access_key>",
            "privatekey>",
            "private_key>",
            "secretkey>",
            "accesstoken>",
            "authtoken>",
        ],
        regex: r"(?i)<([A-Za-z0-9_.:\-]{0,40}(?:auth|credentials?|access_?key|private_?key|secret_?key|access_?token|auth_?token))>\s*([^<\s]{8,200})\s*</([A-Za-z0-9_.:\-]{0,40}(?:auth|credentials?|access_?key|private_?key|secret_?key|access_?token|auth_?token))>",
        group: 2,
        before: 60,
        after: 260,
        check: Some(keyword_value),
        context: Some(xml_element_name),
        ..BASE
    },
    RuleDef {
        id: "secret.password_assignment",
        label: "password",
        severity: Severity::Medium,
        keywords: &[
            "password",
            "passwd",
            "pwd",
            "db_pass",
            "secret",
            "api_key",
            "apikey",
            "private_key",
            "auth_key",
        ],
        regex: r#"(?i)(?:(?:^|[^A-Za-z0-9_])[A-Za-z0-9_.\-]{0,40}(?:password|passwd|pwd|db_?pass|secrete?|api_?key|auth_?key|private_?key|service_?key|client_?secret)[A-Za-z0-9_.\-]{0,30}[\x22']?(?:[ \t]{0,3}(?:=|:=|==|!=|===|!==|=>|:)[ \t]{0,3}(?:(?:"([^"\n]{4,200})"|'([^'\n]{4,200})'|`([^`\n]{4,200})`)|([^\s"'`,;]{6,200}))|[ \t]+(?:"([^"\n]{4,200})"|'([^'\n]{4,200})'|`([^`\n]{4,200})`))|"([^"\n]{4,200})"\s{0,3}(?:==|!=|===|!==)\s{0,3}[A-Za-z0-9_.\-]{0,40}(?:password|passwd|pwd|db_?pass|secrete?|api_?key|auth_?key|private_?key|client_?secret))"#,
        group: ANY_GROUP,
        before: 240,
        after: 240,
        check: Some(password_value),
        context: Some(keyword_name),
        ..BASE
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Category;

    fn found(text: &str) -> Vec<&'static str> {
        let s = crate::Scanner::new().unwrap_or_else(|e| panic!("{e}"));
        s.scan(text, crate::Scope::Request)
            .unwrap_or_default()
            .into_iter()
            .filter(|f| f.category == Category::Secret)
            .map(|f| f.rule_id)
            .collect()
    }

    #[test]
    fn missing_classes_are_found() {
        for (text, id) in [
            (
                "url=https://discord.com/api/webhooks/123456789012345678/Zq3kL9xV2pT7mN4bR8cY1wE6uI0oA5sD3fG7hJ2kL9zX4cV8bN1mQ6wE0rT5yU3iO",
                "secret.discord_webhook",
            ),
            (
                "VAULT_TOKEN=hvs.CAESIJ8rZk3Xq9vN2pL7mT4bR1cY6wE0uI5oA3sD8fG2hJ7k",
                "secret.vault_token",
            ),
            (
                "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&srt=o&sp=r&se=2025-01-01T00:00:00Z&sig=Zq3kL9xV2pT7mN4bR8cY1wE6uI0oA5sD3fG7hJ2kL9z%3D",
                "secret.azure_sas",
            ),
            (
                r#"{"auths": {"registry.example.io": {"auth": "ZGVwbG95OmdocF9aM3FMOXhWMnBUN21ONGJSOGNZMXdFNnVJMG9BNXNEM2ZH"}}}"#,
                "secret.docker_auth",
            ),
            (
                "<server><id>nexus</id><username>deploy</username><password>q8Rz2LmX7vTp</password></server>",
                "secret.xml_element",
            ),
        ] {
            assert!(found(text).contains(&id), "{id}: {text} {:?}", found(text));
        }
    }

    #[test]
    fn known_false_alarms_stay_quiet() {
        for text in [
            "stripe.api_key = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc'",
            "const stripe = Stripe('pk_live_51HqLyjWDarjtT1zdp7dcZq3kL9xV2pT7mN4bR8cY1wE6')",
            "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
            "token_type=bearer expires_in=3600",
            "export DB_PASSWORD=\"$(op read op://prod/db/password)\"",
            "password: op://prod/db/password",
            "vault kv get -field=password secret/prod/db",
            "<password>${env.DB_PASSWORD}</password>",
            "<tokenType>bearer</tokenType>",
            // The same classes in the other shapes they come in.
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
            "STRIPE_PUBLISHABLE_KEY=pk_live_51HqLyjWDarjtT1zdp7dcZq3kL9xV2pT7mN4bR8cY1wE6",
            "const apiKey = 'pk_test_TYooMQauvdEDq54NiTphI7jx';",
            "STRIPE_SECRET_KEY=sk_test_4eC39HqLyjWDarjtT1zdp7dc",
            r#"{"access_token": "", "token_type": "bearer", "expires_in": 3600}"#,
            "token_type=Bearer&expires_in=3600&scope=read",
            "op read op://prod/db/password",
            "op read \"op://Private/GitHub/token\" --no-newline",
            "export GITHUB_TOKEN=$(op read op://dev/github/token)",
            "API_KEY=\"$(op read 'op://dev/stripe/secret key')\"",
            "vault kv get -mount=secret -field=api_key prod/payments",
            "export VAULT_TOKEN=$(vault kv get -field=token secret/ci)",
            "DB_PASSWORD=$(aws secretsmanager get-secret-value --secret-id prod/db --query SecretString --output text)",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }

    #[test]
    fn keyword_literals_are_found_in_every_syntax() {
        let v = "q8Rz2LmX7vTp4KdN";
        for text in [
            format!("apiKey: string = '{v}';"),
            format!("val authToken: String = \"{v}\""),
            format!("var accessKey = @\"{v}\";"),
            format!("NSString *secret = @\"{v}\";"),
            format!("define('AUTH_TOKEN', '{v}');"),
            format!("$this->credentials = '{v}';"),
            format!("  :auth => \"{v}\","),
            format!("#define API_TOKEN \"{v}\""),
            format!("const TOKEN: &str = \"{v}\";"),
            format!("var token string = \"{v}\""),
            format!("tool login --auth-token \"{v}\""),
            format!("<add key=\"StorageToken\" value=\"{v}\" />"),
            format!("<auth>{v}</auth>"),
            format!("mysql -u root -p'{v}' app"),
            format!("        - name: DB_PASSWORD\n          value: \"{v}\""),
            format!(r#"{{"name": "STRIPE_TOKEN", "value": "{v}"}}"#),
            format!("machine api.example.net login deploy password {v}"),
            format!(r#"{{"config": "{{\"token\": \"{v}\"}}"}}"#),
        ] {
            let ids = found(&text);
            assert!(!ids.is_empty(), "{text}");
        }
    }

    #[test]
    fn code_and_stand_ins_under_secret_names_are_not_secrets() {
        for text in [
            "cfg = {'password': settings.SECRET_KEY}",
            "client = Client(api_key=args.api_key)",
            "var token = Configuration[\"Auth:Token\"];",
            "let secret = std::env::var(\"SECRET\")?;",
            "  password: '<%= ENV['DB_PASSWORD'] %>'",
            "  db_password = random_password.db.result",
            "$this->token = $_ENV['API_TOKEN'];",
            "authToken: crypto.randomBytes(32).toString('hex'),",
            "token: op://prod/ci/token",
            "DB_PASSWORD=$(vault kv get -field=password secret/db)",
            "deploy --password= --verbose",
            "SUMO_ACCESS_KEY: AbCeFG123",
            "tokenizer: \"meta-llama/Llama-2-7b-hf\"",
            "auth_url = \"https://login.example.net/oauth2/v2.0/token\"",
            "password_policy = \"min12-upper1-digit1\"",
            "auth: ops-team@example.org",
            "        - name: DB_PASSWORD\n          valueFrom:\n            secretKeyRef:",
            r#"{"name": "API_TOKEN_URL", "value": "9f3a1c7e2b4d4e8fa6c1"}"#,
            "machine api.example.net login deploy password $NETRC_PASSWORD",
            r#"<input type="hidden" name="authenticity_token" value="q8Rz2LmX7vTp4KdNq8Rz2LmX7vTp4KdN" />"#,
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }

    #[test]
    fn every_rule_is_a_secret() {
        assert!(RULES.iter().all(|r| r.category == Category::Secret));
    }
}
