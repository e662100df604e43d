//! Our own generator for keyword-context secrets: a seed set of random secrets written
//! under secret-named keys into every common file syntax (YAML, JSON, INI/TOML, .env,
//! shell, Python, JS/TS, Go, Java, C#, Kotlin, Swift, Objective-C, PHP, Ruby, Rust, C,
//! HCL, XML, CLI flags, URLs with userinfo, SQL), and every stand-in a real file holds in
//! the same place (templates, variables, env lookups, function calls, masks, secret-manager
//! references), written into the same syntaxes.
//!
//! A positive counts only when a secret finding covers the whole value, so what the engine
//! masks is the secret. The generator and the rules were written by the same people: these
//! rates show what the classes cover, not how they do on files nobody here wrote (that is
//! `tests/split.rs` with `EVAL=1`).
//! `cargo test -p bulwark-scan --release --test secrets_generated -- --nocapture`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::collections::BTreeMap;

use bulwark_scan::{Category, Scope};
use common::{Tally, scanner, table};

/// A deterministic generator (xorshift64*), so the seed set is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn pick(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize] as char)
            .collect()
    }
}

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const HEX: &[u8] = b"0123456789abcdef";
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const PASS: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789!#%&*+-.:=?@^_";

/// The seed set: the shapes secrets come in (generated passwords, hex and base64 keys,
/// alphanumeric tokens, UUID-shaped keys), each drawn anew per shape and seed.
fn seeds() -> Vec<(&'static str, String)> {
    let mut rng = Rng(0x005e_ed24_5ec7);
    let mut out = Vec::new();
    for _ in 0..2 {
        out.push(("alnum-20", rng.pick(ALNUM, 20)));
        out.push(("alnum-32", rng.pick(ALNUM, 32)));
        out.push(("hex-32", rng.pick(HEX, 32)));
        out.push(("hex-40", rng.pick(HEX, 40)));
        out.push(("base64-40", rng.pick(B64, 40)));
        out.push(("password-14", {
            // A generated password: symbols, but none that ends a quoted value.
            let mut p = rng.pick(PASS, 13);
            p.push(ALNUM[(rng.next() % 52) as usize] as char);
            p.insert(3, '7');
            p
        }));
        out.push((
            "uuid",
            format!(
                "{}-{}-4{}-a{}-{}",
                rng.pick(HEX, 8),
                rng.pick(HEX, 4),
                rng.pick(HEX, 3),
                rng.pick(HEX, 3),
                rng.pick(HEX, 12)
            ),
        ));
    }
    out
}

/// Secret-named keys, snake_case; each syntax spells them its own way.
const KEYS: &[&str] = &[
    "password",
    "passwd",
    "db_password",
    "secret",
    "client_secret",
    "secret_key",
    "token",
    "auth_token",
    "access_token",
    "api_key",
    "private_key",
    "access_key",
    "auth",
    "credential",
    "credentials",
];

#[derive(Clone, Copy)]
enum Case {
    Snake,
    Upper,
    Camel,
    Kebab,
}

fn spell(key: &str, case: Case) -> String {
    match case {
        Case::Snake => key.to_string(),
        Case::Upper => key.to_ascii_uppercase(),
        Case::Kebab => key.replace('_', "-"),
        Case::Camel => {
            let mut out = String::new();
            let mut up = false;
            for c in key.chars() {
                if c == '_' {
                    up = true;
                } else if up {
                    out.push(c.to_ascii_uppercase());
                    up = false;
                } else {
                    out.push(c);
                }
            }
            out
        }
    }
}

/// A file syntax: how a key is spelt, the line with a literal value (`{k}`, `{v}`), and the
/// line with a code expression as the value (`{e}`), where the language has expressions.
struct Syntax {
    name: &'static str,
    case: Case,
    literal: &'static str,
    expr: Option<(&'static str, Lang)>,
}

/// Which language's expressions (env lookups, calls) fit a syntax.
#[derive(Clone, Copy, PartialEq)]
enum Lang {
    Python,
    Js,
    Go,
    Java,
    CSharp,
    Kotlin,
    Swift,
    Php,
    Ruby,
    Rust,
    Shell,
    Hcl,
}

const SYNTAXES: &[Syntax] = &[
    Syntax {
        name: "yaml bare",
        case: Case::Snake,
        literal: "{k}: {v}\nport: 5432",
        expr: None,
    },
    Syntax {
        name: "yaml double",
        case: Case::Snake,
        literal: "  {k}: \"{v}\"",
        expr: None,
    },
    Syntax {
        name: "yaml single",
        case: Case::Snake,
        literal: "- {k}: '{v}'",
        expr: None,
    },
    Syntax {
        name: "json",
        case: Case::Snake,
        literal: "{\"user\": \"svc\", \"{k}\": \"{v}\"}",
        expr: None,
    },
    Syntax {
        name: "json camel",
        case: Case::Camel,
        literal: "  \"{k}\": \"{v}\",",
        expr: None,
    },
    Syntax {
        name: "ini",
        case: Case::Snake,
        literal: "[db]\n{k} = {v}",
        expr: None,
    },
    Syntax {
        name: "toml",
        case: Case::Snake,
        literal: "{k} = \"{v}\"",
        expr: None,
    },
    Syntax {
        name: "properties",
        case: Case::Snake,
        literal: "app.{k}={v}",
        expr: None,
    },
    Syntax {
        name: "dotenv",
        case: Case::Upper,
        literal: "{k}={v}",
        expr: None,
    },
    Syntax {
        name: "dotenv quoted",
        case: Case::Upper,
        literal: "{k}=\"{v}\"",
        expr: None,
    },
    Syntax {
        name: "shell export",
        case: Case::Upper,
        literal: "export {k}='{v}'",
        expr: Some(("export {k}={e}", Lang::Shell)),
    },
    Syntax {
        name: "python",
        case: Case::Snake,
        literal: "{k} = \"{v}\"",
        expr: Some(("{k} = {e}", Lang::Python)),
    },
    Syntax {
        name: "python dict",
        case: Case::Snake,
        literal: "cfg = {'{k}': '{v}'}",
        expr: Some(("cfg = {'{k}': {e}}", Lang::Python)),
    },
    Syntax {
        name: "python kwarg",
        case: Case::Snake,
        literal: "client = Client({k}=\"{v}\")",
        expr: Some(("client = Client({k}={e})", Lang::Python)),
    },
    Syntax {
        name: "js const",
        case: Case::Camel,
        literal: "const {k} = \"{v}\";",
        expr: Some(("const {k} = {e};", Lang::Js)),
    },
    Syntax {
        name: "js object",
        case: Case::Camel,
        literal: "  {k}: '{v}',",
        expr: Some(("  {k}: {e},", Lang::Js)),
    },
    Syntax {
        name: "js template",
        case: Case::Camel,
        literal: "let {k} = `{v}`;",
        expr: None,
    },
    Syntax {
        name: "ts typed",
        case: Case::Camel,
        literal: "const {k}: string = '{v}';",
        expr: Some(("const {k}: string = {e};", Lang::Js)),
    },
    Syntax {
        name: "go short",
        case: Case::Camel,
        literal: "\t{k} := \"{v}\"",
        expr: Some(("\t{k} := {e}", Lang::Go)),
    },
    Syntax {
        name: "go var",
        case: Case::Camel,
        literal: "var {k} string = \"{v}\"",
        expr: Some(("var {k} string = {e}", Lang::Go)),
    },
    Syntax {
        name: "go struct",
        case: Case::Camel,
        literal: "\t\t{k}: \"{v}\",",
        expr: Some(("\t\t{k}: {e},", Lang::Go)),
    },
    Syntax {
        name: "java field",
        case: Case::Upper,
        literal: "private static final String {k} = \"{v}\";",
        expr: Some(("private static final String {k} = {e};", Lang::Java)),
    },
    Syntax {
        name: "java local",
        case: Case::Camel,
        literal: "String {k} = \"{v}\";",
        expr: Some(("String {k} = {e};", Lang::Java)),
    },
    Syntax {
        name: "csharp",
        case: Case::Camel,
        literal: "string {k} = \"{v}\";",
        expr: Some(("string {k} = {e};", Lang::CSharp)),
    },
    Syntax {
        name: "csharp verbatim",
        case: Case::Camel,
        literal: "var {k} = @\"{v}\";",
        expr: Some(("var {k} = {e};", Lang::CSharp)),
    },
    Syntax {
        name: "kotlin",
        case: Case::Camel,
        literal: "val {k}: String = \"{v}\"",
        expr: Some(("val {k}: String = {e}", Lang::Kotlin)),
    },
    Syntax {
        name: "swift",
        case: Case::Camel,
        literal: "let {k} = \"{v}\"",
        expr: Some(("let {k} = {e}", Lang::Swift)),
    },
    Syntax {
        name: "objc",
        case: Case::Camel,
        literal: "NSString *{k} = @\"{v}\";",
        expr: None,
    },
    Syntax {
        name: "php define",
        case: Case::Upper,
        literal: "define('{k}', '{v}');",
        expr: Some(("define('{k}', {e});", Lang::Php)),
    },
    Syntax {
        name: "php var",
        case: Case::Snake,
        literal: "$this->{k} = '{v}';",
        expr: Some(("$this->{k} = {e};", Lang::Php)),
    },
    Syntax {
        name: "php array",
        case: Case::Snake,
        literal: "    '{k}' => '{v}',",
        expr: Some(("    '{k}' => {e},", Lang::Php)),
    },
    Syntax {
        name: "ruby hash",
        case: Case::Snake,
        literal: "  {k}: '{v}',",
        expr: Some(("  {k}: {e},", Lang::Ruby)),
    },
    Syntax {
        name: "ruby rocket",
        case: Case::Snake,
        literal: "  :{k} => \"{v}\",",
        expr: Some(("  :{k} => {e},", Lang::Ruby)),
    },
    Syntax {
        name: "ruby assign",
        case: Case::Snake,
        literal: "config.{k} = '{v}'",
        expr: Some(("config.{k} = {e}", Lang::Ruby)),
    },
    Syntax {
        name: "rust",
        case: Case::Upper,
        literal: "const {k}: &str = \"{v}\";",
        expr: Some(("let {k} = {e};", Lang::Rust)),
    },
    Syntax {
        name: "c define",
        case: Case::Upper,
        literal: "#define {k} \"{v}\"",
        expr: None,
    },
    Syntax {
        name: "c string",
        case: Case::Snake,
        literal: "static const char *{k} = \"{v}\";",
        expr: None,
    },
    Syntax {
        name: "hcl",
        case: Case::Snake,
        literal: "  {k} = \"{v}\"",
        expr: Some(("  {k} = {e}", Lang::Hcl)),
    },
    Syntax {
        name: "xml element",
        case: Case::Camel,
        literal: "<{k}>{v}</{k}>",
        expr: None,
    },
    Syntax {
        name: "xml attribute",
        case: Case::Camel,
        literal: "<datasource user=\"svc\" {k}=\"{v}\"/>",
        expr: None,
    },
    Syntax {
        name: "xml add key",
        case: Case::Camel,
        literal: "<add key=\"{k}\" value=\"{v}\" />",
        expr: None,
    },
    Syntax {
        name: "cli equals",
        case: Case::Kebab,
        literal: "deploy --{k}={v} --verbose",
        expr: Some(("deploy --{k}={e}", Lang::Shell)),
    },
    Syntax {
        name: "cli space",
        case: Case::Kebab,
        literal: "tool login --{k} \"{v}\"",
        expr: Some(("tool login --{k} {e}", Lang::Shell)),
    },
    Syntax {
        name: "compose list",
        case: Case::Upper,
        literal: "    environment:\n      - {k}={v}",
        expr: None,
    },
    Syntax {
        name: "k8s env pair",
        case: Case::Upper,
        literal: "        - name: {k}\n          value: \"{v}\"",
        expr: None,
    },
    Syntax {
        name: "powershell",
        case: Case::Camel,
        literal: "${k} = \"{v}\"",
        expr: None,
    },
    Syntax {
        name: "groovy",
        case: Case::Camel,
        literal: "def {k} = '{v}'",
        expr: None,
    },
    Syntax {
        name: "json escaped",
        case: Case::Snake,
        literal: "{\"body\": \"{\\\"{k}\\\": \\\"{v}\\\"}\"}",
        expr: None,
    },
];

/// Lines that carry a secret without a key name of their own (userinfo, `-p`).
fn keyless(v: &str) -> Vec<(&'static str, String)> {
    // Userinfo in a URL is percent-encoded where it holds reserved characters.
    let enc: String = v
        .chars()
        .map(|c| match c {
            ':' | '@' | '/' | '?' | '#' | '%' => format!("%{:02X}", c as u32),
            c => c.to_string(),
        })
        .collect();
    vec![
        (
            "url https",
            format!("https://deploy:{enc}@git.internal.example.net/org/repo.git"),
        ),
        (
            "url postgres",
            format!("DATABASE_URL=postgres://app:{enc}@db.internal:5432/app"),
        ),
        (
            "url redis",
            format!("redis://default:{enc}@cache-1.internal:6379/0"),
        ),
        (
            "mysql -p",
            format!("mysql -h db.internal -u root -p'{v}' app"),
        ),
        (
            "sql password",
            format!("ALTER USER app WITH PASSWORD '{v}';"),
        ),
        (
            "netrc",
            format!("machine api.internal.example.net login deploy password {v}"),
        ),
        (
            "basic auth header",
            format!("Authorization: Basic {}", b64(&format!("deploy:{v}"))),
        ),
    ]
}

/// Standard base64, for `Authorization: Basic` lines.
fn b64(s: &str) -> String {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in s.as_bytes().chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Random values under names that are not secrets (digests, ids, checksums, versions):
/// a detector that flags any random string under any key fails here.
fn not_secret_names(rng: &mut Rng) -> Vec<String> {
    let hex40 = rng.pick(HEX, 40);
    let hex64 = rng.pick(HEX, 64);
    let uuid = format!(
        "{}-{}-4{}-a{}-{}",
        rng.pick(HEX, 8),
        rng.pick(HEX, 4),
        rng.pick(HEX, 3),
        rng.pick(HEX, 3),
        rng.pick(HEX, 12)
    );
    let b64 = rng.pick(B64, 43);
    vec![
        format!("commit: {hex40}"),
        format!("\"sha\": \"{hex40}\","),
        format!("image: registry.example.net/app@sha256:{hex64}"),
        format!("checksum = \"sha256:{hex64}\""),
        format!("request_id = \"{uuid}\""),
        format!("\"traceId\": \"{hex40}\""),
        format!("ETag: \"{}\"", &hex64[..32]),
        format!("\"integrity\": \"sha512-{b64}==\""),
        format!("const buildId = '{}';", &hex40[..20]),
        format!("user_id: {uuid}"),
        "TOKEN_LIMIT=4096".to_string(),
        "password_min_length: 12".to_string(),
        format!(
            "token_url = \"https://auth.example.net/oauth/token?id={}\"",
            &hex40[..12]
        ),
        format!("api_key_id = \"{uuid}\""),
        "secretName: db-credentials-prod-2024".to_string(),
    ]
}

/// The keyless lines with the value as written (stand-ins are not percent-encoded).
fn keyless_raw(v: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "url https",
            format!("https://deploy:{v}@git.internal.example.net/org/repo.git"),
        ),
        (
            "url postgres",
            format!("DATABASE_URL=postgres://app:{v}@db.internal:5432/app"),
        ),
        (
            "url redis",
            format!("redis://default:{v}@cache-1.internal:6379/0"),
        ),
        (
            "mysql -p",
            format!("mysql -h db.internal -u root -p'{v}' app"),
        ),
        (
            "sql password",
            format!("ALTER USER app WITH PASSWORD '{v}';"),
        ),
        (
            "netrc",
            format!("machine api.internal.example.net login deploy password {v}"),
        ),
    ]
}

/// Stand-ins written as literals: templates, variables, masks, placeholders, references.
const STAND_INS: &[&str] = &[
    "${DB_PASSWORD}",
    "${env:API_TOKEN}",
    "{{ .Values.password }}",
    "{{ secret_key }}",
    "<password>",
    "<YOUR_API_KEY>",
    "changeme",
    "change_me_please",
    "xxxxxxxxxxxxxxxx",
    "XXXXXXXX-XXXX-XXXX",
    "****************",
    "$SECRET_TOKEN",
    "%API_KEY%",
    "your-api-key-here",
    "REPLACE_ME",
    "<%= ENV['SECRET'] %>",
    "op://prod/db/password",
    "$(op read op://prod/db/password)",
    "$(vault kv get -field=password secret/db)",
    "{{ secrets.DEPLOY_TOKEN }}",
    "@SECRET@",
    "password",
    "secret",
    "null",
    "",
];

/// Code expressions per language: env lookups, secret-manager calls, function calls,
/// fields of another object.
fn expressions(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Python => &[
            "os.environ[\"API_KEY\"]",
            "os.environ.get(\"DB_PASSWORD\")",
            "os.getenv(\"SECRET_TOKEN\")",
            "get_secret(\"prod/db\")",
            "settings.SECRET_KEY",
            "args.password",
            "secrets.token_hex(32)",
            "None",
        ],
        Lang::Js => &[
            "process.env.API_KEY",
            "process.env[\"DB_PASSWORD\"]",
            "await getSecret('prod/db')",
            "config.get('auth.token')",
            "options.password",
            "crypto.randomBytes(32).toString('hex')",
            "undefined",
        ],
        Lang::Go => &[
            "os.Getenv(\"API_KEY\")",
            "viper.GetString(\"db.password\")",
            "cfg.Secret",
            "secrets.Get(ctx, \"prod/db\")",
            "\"\"",
        ],
        Lang::Java => &[
            "System.getenv(\"API_KEY\")",
            "props.getProperty(\"db.password\")",
            "config.getSecret()",
            "null",
        ],
        Lang::CSharp => &[
            "Environment.GetEnvironmentVariable(\"API_KEY\")",
            "Configuration[\"Db:Password\"]",
            "options.Value.Secret",
            "null",
        ],
        Lang::Kotlin => &[
            "System.getenv(\"API_KEY\")",
            "BuildConfig.API_KEY",
            "config.secret",
        ],
        Lang::Swift => &[
            "ProcessInfo.processInfo.environment[\"API_KEY\"]",
            "Keychain.read(\"token\")",
            "nil",
        ],
        Lang::Php => &[
            "getenv('DB_PASSWORD')",
            "env('APP_KEY')",
            "$_ENV['API_KEY']",
            "null",
        ],
        Lang::Ruby => &[
            "ENV['SECRET_KEY_BASE']",
            "ENV.fetch('API_TOKEN')",
            "Rails.application.credentials.secret_key_base",
            "nil",
        ],
        Lang::Rust => &[
            "std::env::var(\"API_KEY\")?",
            "env!(\"API_TOKEN\")",
            "config.secret.clone()",
        ],
        Lang::Shell => &[
            "$API_TOKEN",
            "\"$DB_PASSWORD\"",
            "\"$(op read op://prod/db/password)\"",
            "\"${SECRET:-}\"",
        ],
        Lang::Hcl => &[
            "var.db_password",
            "random_password.db.result",
            "data.vault_generic_secret.db.data[\"password\"]",
        ],
    }
}

/// Whether a secret finding covers `value` in `text` (so masking removes all of it).
fn covered(text: &str, value: &str) -> bool {
    let Some(at) = text.find(value) else {
        return false;
    };
    let (s, e) = (at, at + value.len());
    scanner()
        .scan(text, Scope::Request)
        .unwrap()
        .iter()
        .any(|f| f.category == Category::Secret && f.span.0 <= s && f.span.1 >= e)
}

fn flagged(text: &str) -> Vec<&'static str> {
    scanner()
        .scan(text, Scope::Request)
        .unwrap()
        .iter()
        .filter(|f| f.category == Category::Secret)
        .map(|f| f.rule_id)
        .collect()
}

fn show(kind: &str, text: &str) {
    if std::env::var("SHOW").is_ok_and(|s| kind.contains(&s)) {
        println!("  {kind}: {text} {:?}", flagged(text));
    }
}

#[test]
fn keyword_secrets_in_every_syntax() {
    let seeds = seeds();
    let mut by_syntax: BTreeMap<String, Tally> = BTreeMap::new();
    let mut by_shape: BTreeMap<String, Tally> = BTreeMap::new();
    let mut by_key: BTreeMap<String, Tally> = BTreeMap::new();
    let mut total = Tally::default();
    for (shape, v) in &seeds {
        for syn in SYNTAXES {
            for key in KEYS {
                let k = spell(key, syn.case);
                let text = syn.literal.replace("{k}", &k).replace("{v}", v);
                let hit = covered(&text, v);
                if !hit {
                    show("MISS", &text);
                }
                total.add(true, hit);
                by_syntax.entry(syn.name.into()).or_default().add(true, hit);
                by_shape.entry((*shape).into()).or_default().add(true, hit);
                by_key.entry((*key).into()).or_default().add(true, hit);
            }
        }
        for (name, text) in keyless(v) {
            let hit = !flagged(&text).is_empty();
            if !hit {
                show("MISS", &text);
            }
            total.add(true, hit);
            by_syntax.entry(name.into()).or_default().add(true, hit);
            by_shape.entry((*shape).into()).or_default().add(true, hit);
        }
    }
    // Stand-ins: every literal stand-in in every syntax, every expression in its language.
    for syn in SYNTAXES {
        for key in KEYS {
            let k = spell(key, syn.case);
            for s in STAND_INS {
                let text = syn.literal.replace("{k}", &k).replace("{v}", s);
                let hit = !flagged(&text).is_empty();
                if hit {
                    show("FALSE", &text);
                }
                total.add(false, hit);
                by_syntax
                    .entry(syn.name.into())
                    .or_default()
                    .add(false, hit);
                by_key.entry((*key).into()).or_default().add(false, hit);
            }
            if let Some((line, lang)) = syn.expr {
                for e in expressions(lang) {
                    let text = line.replace("{k}", &k).replace("{e}", e);
                    let hit = !flagged(&text).is_empty();
                    if hit {
                        show("FALSE", &text);
                    }
                    total.add(false, hit);
                    by_syntax
                        .entry(syn.name.into())
                        .or_default()
                        .add(false, hit);
                    by_key.entry((*key).into()).or_default().add(false, hit);
                }
            }
        }
    }
    // In a URL only the stand-ins a URL can hold (no `/`, `:`, `@` or space of their own).
    for s in STAND_INS
        .iter()
        .filter(|s| !s.is_empty() && !s.contains(['/', ':', '@', ' ']))
    {
        for (name, text) in keyless_raw(s) {
            let hit = !flagged(&text).is_empty();
            if hit {
                show("FALSE", &text);
            }
            total.add(false, hit);
            by_syntax.entry(name.into()).or_default().add(false, hit);
        }
    }
    let mut rng = Rng(0x0dd_5eed);
    for _ in 0..4 {
        for text in not_secret_names(&mut rng) {
            let hit = !flagged(&text).is_empty();
            if hit {
                show("FALSE", &text);
            }
            total.add(false, hit);
            by_syntax
                .entry("not-secret names".into())
                .or_default()
                .add(false, hit);
        }
    }
    table("secrets generator: per syntax", &by_syntax);
    table("secrets generator: per value shape (positives)", &by_shape);
    table("secrets generator: per key", &by_key);
    let mut all = BTreeMap::new();
    all.insert("all generated lines".to_string(), total);
    table("secrets generator: overall", &all);
    // Floors: overall, and no syntax far behind (a syntax the rules do not read at all).
    assert!(total.recall().unwrap() >= 0.95, "{total:?}");
    assert!(total.precision().unwrap() >= 0.98, "{total:?}");
    for (name, t) in &by_syntax {
        assert!(t.recall().unwrap_or(1.0) >= 0.8, "{name}: {t:?}");
        assert!(t.fpr().unwrap_or(0.0) <= 0.05, "{name}: {t:?}");
    }
}
