//! Capabilities and taint sources inferred from a tool's definition, for tools nobody
//! mapped (issue 26, item 1).
//!
//! A tool's definition says what it does in words: `send_money`, "Deletes the email with
//! the given id", a `participants` parameter. This module reads those words by class —
//! action verbs (pay, book, send, post, share, invite, delete, deploy, read, fetch…) and the
//! objects they act on (money, credentials, members, mail, files, web pages, reviews…) — and
//! derives what a reviewer would map: `exec.irreversible` for what cannot be undone,
//! `msg.send` for what reaches a person, `net.egress` for what reaches a URL, and the taint
//! its results give (`private-data`, `untrusted-input`). It never names tools.
//!
//! Where the words come from, and how much each counts:
//! - **the name**: its first present-tense verb is the action (`get_sent_emails` is a read:
//!   past forms are adjectives, never actions), plus verbs joined to it by `and`/`or`; every
//!   other word is an object;
//! - **the description**: each sentence's leading verb phrase, after fillers ("Use this to",
//!   "It will also"), is an action too — "It also sends an email to the participants" makes
//!   a calendar tool a sender. Objects come from the first sentence;
//! - **parameter names**: a recipient-like parameter (`recipients`, `participants`, `cc`)
//!   on a tool that is not a read means it reaches people; a URL-like one means a network
//!   destination; an `amount` means money;
//! - **MCP annotations**, as hints that can only add: `destructiveHint: true` (unless the
//!   tool also says `readOnlyHint: true`) is `exec.irreversible`; `openWorldHint: true` on a
//!   read is `untrusted-input`. `readOnlyHint` never removes anything the words say.
//!
//! The result is deterministic and explainable: every effect carries the words that led to
//! it. It is conservative where unsure: a write that is neither money, credentials,
//! membership, deletion nor sending (a file edit, a calendar entry) gets no revocable
//! capability, and words in no class give nothing — the call is then analysed on its
//! arguments as before. It always sits below the reviewed mapping and the catalogue
//! (`stages::classify`).

use bulwark_policy::{CapSet, Capability, Taint, TaintSet};
use serde_json::Value;

use crate::call::Definition;

/// What the definition's words say a tool does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inference {
    /// Capabilities inferred.
    pub capabilities: CapSet,
    /// Taint its results give a session.
    pub taint: TaintSet,
    /// Which words led where, one line each.
    pub because: Vec<String>,
}

impl Inference {
    /// Whether nothing was inferred.
    pub fn is_empty(&self) -> bool {
        self.capabilities.is_empty() && self.taint.is_empty()
    }

    /// One line for `policy explain`.
    pub fn summary(&self) -> String {
        if self.because.is_empty() {
            return "nothing inferred from the definition".into();
        }
        format!("inferred from the definition: {}", self.because.join("; "))
    }

    fn add(&mut self, caps: &[Capability], taint: &[Taint], why: String) {
        let mut new = false;
        for c in caps {
            new |= !self.capabilities.contains(*c);
            self.capabilities.insert(*c);
        }
        for t in taint {
            new |= !self.taint.contains(*t);
            self.taint.insert(*t);
        }
        if new && self.because.len() < MAX_REASONS {
            let gives: Vec<&str> = caps
                .iter()
                .map(|c| c.as_str())
                .chain(taint.iter().map(|t| t.as_str()))
                .collect();
            self.because.push(format!("{why} → {}", gives.join(", ")));
        }
    }
}

const MAX_REASONS: usize = 16;
/// Bounds on what is read: a definition is outside input.
const MAX_DESCRIPTION: usize = 4096;
const MAX_PARAMS: usize = 64;
const MAX_SENTENCES: usize = 16;

/// What an action verb does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    /// Reads, lists, searches.
    Read,
    /// Reads from the network (browse, download, crawl).
    Fetch,
    /// Creates or changes something that can be changed back.
    Write,
    /// Sends a message to a person.
    Send,
    /// Publishes (post, publish, comment).
    Publish,
    /// Gives someone access (share, invite).
    Share,
    /// Changes membership or permissions (grant, revoke, kick, ban).
    Member,
    /// Deletes, cancels, wipes.
    Delete,
    /// Ships code or state (deploy, merge, release).
    Deploy,
    /// Moves money (pay, transfer, purchase).
    Money,
    /// Books (reserve, book, rent).
    Book,
}

const VERBS: &[(&str, Act)] = &[
    // Reads.
    ("get", Act::Read),
    ("read", Act::Read),
    ("list", Act::Read),
    ("search", Act::Read),
    ("find", Act::Read),
    ("retrieve", Act::Read),
    ("show", Act::Read),
    ("view", Act::Read),
    ("query", Act::Read),
    ("lookup", Act::Read),
    ("look", Act::Read),
    ("check", Act::Read),
    ("open", Act::Read),
    ("load", Act::Read),
    ("scan", Act::Read),
    ("describe", Act::Read),
    ("inspect", Act::Read),
    ("count", Act::Read),
    ("summarize", Act::Read),
    ("summarise", Act::Read),
    ("return", Act::Read),
    ("fetch", Act::Read),
    ("watch", Act::Read),
    ("explore", Act::Read),
    ("preview", Act::Read),
    ("peek", Act::Read),
    ("grep", Act::Read),
    ("stat", Act::Read),
    ("compute", Act::Read),
    ("calculate", Act::Read),
    ("convert", Act::Read),
    ("translate", Act::Read),
    ("analyze", Act::Read),
    ("analyse", Act::Read),
    ("validate", Act::Read),
    ("verify", Act::Read),
    ("estimate", Act::Read),
    ("recommend", Act::Read),
    ("suggest", Act::Read),
    // Network reads.
    ("browse", Act::Fetch),
    ("visit", Act::Fetch),
    ("download", Act::Fetch),
    ("crawl", Act::Fetch),
    ("scrape", Act::Fetch),
    ("navigate", Act::Fetch),
    ("curl", Act::Fetch),
    // Writes that can be changed back.
    ("create", Act::Write),
    ("update", Act::Write),
    ("edit", Act::Write),
    ("modify", Act::Write),
    ("set", Act::Write),
    ("add", Act::Write),
    ("append", Act::Write),
    ("write", Act::Write),
    ("insert", Act::Write),
    ("save", Act::Write),
    ("put", Act::Write),
    ("patch", Act::Write),
    ("change", Act::Write),
    ("rename", Act::Write),
    ("move", Act::Write),
    ("copy", Act::Write),
    ("upload", Act::Write),
    ("schedule", Act::Write),
    ("reschedule", Act::Write),
    ("make", Act::Write),
    ("mark", Act::Write),
    ("tag", Act::Write),
    ("label", Act::Write),
    ("assign", Act::Write),
    ("draft", Act::Write),
    ("store", Act::Write),
    ("upsert", Act::Write),
    ("rotate", Act::Write),
    ("regenerate", Act::Write),
    ("replace", Act::Write),
    ("configure", Act::Write),
    ("enable", Act::Write),
    ("disable", Act::Write),
    ("reset", Act::Write),
    ("register", Act::Write),
    // Reaching people.
    ("send", Act::Send),
    ("email", Act::Send),
    ("mail", Act::Send),
    ("reply", Act::Send),
    ("respond", Act::Send),
    ("forward", Act::Send),
    ("notify", Act::Send),
    ("dm", Act::Send),
    ("sms", Act::Send),
    ("text", Act::Send),
    ("message", Act::Send),
    ("broadcast", Act::Send),
    ("post", Act::Publish),
    ("publish", Act::Publish),
    ("tweet", Act::Publish),
    ("comment", Act::Publish),
    ("share", Act::Share),
    ("invite", Act::Share),
    ("grant", Act::Member),
    ("revoke", Act::Member),
    ("kick", Act::Member),
    ("ban", Act::Member),
    ("unban", Act::Member),
    ("promote", Act::Member),
    ("demote", Act::Member),
    ("delete", Act::Delete),
    ("remove", Act::Delete),
    ("erase", Act::Delete),
    ("destroy", Act::Delete),
    ("purge", Act::Delete),
    ("drop", Act::Delete),
    ("wipe", Act::Delete),
    ("trash", Act::Delete),
    ("cancel", Act::Delete),
    ("terminate", Act::Delete),
    ("unsubscribe", Act::Delete),
    ("uninstall", Act::Delete),
    ("truncate", Act::Delete),
    ("discard", Act::Delete),
    ("kill", Act::Delete),
    ("clear", Act::Delete),
    ("deploy", Act::Deploy),
    ("release", Act::Deploy),
    ("merge", Act::Deploy),
    ("push", Act::Deploy),
    ("rollout", Act::Deploy),
    ("rollback", Act::Deploy),
    ("ship", Act::Deploy),
    ("approve", Act::Deploy),
    ("sign", Act::Deploy),
    ("pay", Act::Money),
    ("transfer", Act::Money),
    ("withdraw", Act::Money),
    ("refund", Act::Money),
    ("remit", Act::Money),
    ("wire", Act::Money),
    ("donate", Act::Money),
    ("charge", Act::Money),
    ("tip", Act::Money),
    ("purchase", Act::Money),
    ("buy", Act::Money),
    ("checkout", Act::Money),
    ("order", Act::Money),
    ("sell", Act::Money),
    ("trade", Act::Money),
    ("invest", Act::Money),
    ("bid", Act::Money),
    ("book", Act::Book),
    ("reserve", Act::Book),
    ("rent", Act::Book),
    ("hire", Act::Book),
    ("enroll", Act::Book),
    ("subscribe", Act::Book),
];

/// What an object word names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Obj {
    /// Text other people write into the user's private space: mail, messages, files,
    /// calendar entries, transactions (the counterparty writes the subject).
    Inbox,
    /// The user's own private records.
    Private,
    /// Public text anyone can write: web pages, reviews, posts.
    Public,
    /// A network location.
    Web,
    /// Money.
    Money,
    /// Credentials.
    Credential,
    /// People as members of something.
    Person,
    /// A reservation (a booking's object).
    Booking,
}

const OBJECTS: &[(&str, Obj)] = &[
    ("email", Obj::Inbox),
    ("mail", Obj::Inbox),
    ("inbox", Obj::Inbox),
    ("message", Obj::Inbox),
    ("chat", Obj::Inbox),
    ("channel", Obj::Inbox),
    ("conversation", Obj::Inbox),
    ("dm", Obj::Inbox),
    ("thread", Obj::Inbox),
    ("sms", Obj::Inbox),
    ("notification", Obj::Inbox),
    ("mention", Obj::Inbox),
    ("file", Obj::Inbox),
    ("document", Obj::Inbox),
    ("doc", Obj::Inbox),
    ("drive", Obj::Inbox),
    ("folder", Obj::Inbox),
    ("directory", Obj::Inbox),
    ("note", Obj::Inbox),
    ("attachment", Obj::Inbox),
    ("spreadsheet", Obj::Inbox),
    ("sheet", Obj::Inbox),
    ("calendar", Obj::Inbox),
    ("event", Obj::Inbox),
    ("appointment", Obj::Inbox),
    ("meeting", Obj::Inbox),
    ("invitation", Obj::Inbox),
    ("transaction", Obj::Inbox),
    ("ticket", Obj::Inbox),
    ("issue", Obj::Inbox),
    ("balance", Obj::Private),
    ("account", Obj::Private),
    ("iban", Obj::Private),
    ("profile", Obj::Private),
    ("user", Obj::Private),
    ("contact", Obj::Private),
    ("history", Obj::Private),
    ("statement", Obj::Private),
    ("passport", Obj::Private),
    ("card", Obj::Private),
    ("salary", Obj::Private),
    ("medical", Obj::Private),
    ("health", Obj::Private),
    ("ssn", Obj::Private),
    ("location", Obj::Private),
    ("webpage", Obj::Web),
    ("website", Obj::Web),
    ("web", Obj::Web),
    ("url", Obj::Web),
    ("uri", Obj::Web),
    ("http", Obj::Web),
    ("https", Obj::Web),
    ("internet", Obj::Web),
    ("html", Obj::Web),
    ("review", Obj::Public),
    ("comment", Obj::Public),
    ("feedback", Obj::Public),
    ("forum", Obj::Public),
    ("news", Obj::Public),
    ("article", Obj::Public),
    ("feed", Obj::Public),
    ("tweet", Obj::Public),
    ("post", Obj::Public),
    ("money", Obj::Money),
    ("fund", Obj::Money),
    ("payment", Obj::Money),
    ("amount", Obj::Money),
    ("invoice", Obj::Money),
    ("bill", Obj::Money),
    ("wallet", Obj::Money),
    ("crypto", Obj::Money),
    ("bitcoin", Obj::Money),
    ("password", Obj::Credential),
    ("passcode", Obj::Credential),
    ("passphrase", Obj::Credential),
    ("credential", Obj::Credential),
    ("token", Obj::Credential),
    ("secret", Obj::Credential),
    ("apikey", Obj::Credential),
    ("mfa", Obj::Credential),
    ("2fa", Obj::Credential),
    ("otp", Obj::Credential),
    ("member", Obj::Person),
    ("participant", Obj::Person),
    ("attendee", Obj::Person),
    ("collaborator", Obj::Person),
    ("guest", Obj::Person),
    ("admin", Obj::Person),
    ("owner", Obj::Person),
    ("role", Obj::Person),
    ("permission", Obj::Person),
    ("access", Obj::Person),
    ("reservation", Obj::Booking),
    ("booking", Obj::Booking),
];

/// Parameters that name who a call reaches.
const RECIPIENT_PARAMS: &[&str] = &[
    "to",
    "recipient",
    "recipients",
    "cc",
    "bcc",
    "participants",
    "attendees",
    "invitees",
    "guests",
    "emails",
    "email",
    "user_email",
    "phone_number",
    "address",
    "addresses",
];

/// Words skipped before a sentence's leading verb: "Use this tool to", "It will also".
const FILLERS: &[&str] = &[
    "this",
    "tool",
    "function",
    "endpoint",
    "api",
    "use",
    "to",
    "can",
    "will",
    "may",
    "also",
    "then",
    "allows",
    "allow",
    "lets",
    "let",
    "you",
    "the",
    "a",
    "an",
    "it",
    "helps",
    "help",
    "for",
    "please",
    "we",
    "i",
    "user",
    "agent",
    "model",
    "additionally",
    "automatically",
    "simply",
    "just",
    "used",
    "that",
    "which",
];

/// Words that are verbs and nouns alike (`email`, `post`, `order`): an action only where
/// the name has no other verb, and never at the head of a description sentence ("Email
/// address of …", "Post id to read").
const AMBIGUOUS: &[&str] = &[
    "email", "mail", "text", "message", "sms", "dm", "tweet", "comment", "post", "book", "order",
    "tip", "wire", "charge", "label", "tag", "mark", "draft", "store", "sign", "ship", "release",
    "drop", "count", "view", "show", "trade", "bid", "check", "open", "clear",
];

const JOINERS: &[&str] = &["and", "or", "then", "also", "and/or"];

/// Infers what a tool does from its name and definition.
///
/// ```
/// use bulwark_engine::{Definition, infer::infer};
/// use bulwark_policy::Capability;
/// let i = infer("send_money", &Definition::default());
/// assert!(i.capabilities.contains(Capability::ExecIrreversible));
/// ```
pub fn infer(name: &str, def: &Definition) -> Inference {
    let mut out = Inference::default();
    let name_words = words(name);
    let description: String = def.description.chars().take(MAX_DESCRIPTION).collect();
    let sentences: Vec<Vec<String>> = sentences(&description)
        .into_iter()
        .take(MAX_SENTENCES)
        .map(|s| words(&s))
        .collect();
    let params = param_names(&def.input_schema);

    // Actions: the name's leading verb (and verbs joined to it), each sentence's leading
    // verb phrase.
    let mut acts: Vec<(Act, String, &'static str)> = name_acts(&name_words)
        .into_iter()
        .map(|(a, w)| (a, w, "name"))
        .collect();
    for s in &sentences {
        for (a, w) in leading_acts(s) {
            acts.push((a, w, "description"));
        }
    }

    // Objects: every non-verb word of the name, the first sentence, parameter names.
    let mut objects: Vec<(Obj, String)> = Vec::new();
    let first = sentences.first().cloned().unwrap_or_default();
    let leading: Vec<String> = acts.iter().map(|(_, w, _)| w.clone()).collect();
    for w in name_words.iter().chain(first.iter()) {
        if leading.contains(w) {
            continue;
        }
        if let Some(o) = object(w) {
            objects.push((o, w.clone()));
        }
    }
    for p in &params {
        for w in words(p) {
            if let Some(o) = object(&w) {
                objects.push((o, w));
            }
        }
    }
    let has = |o: Obj| {
        objects
            .iter()
            .find(|(x, _)| *x == o)
            .map(|(_, w)| w.clone())
    };
    let recipient = params
        .iter()
        .find(|p| RECIPIENT_PARAMS.contains(&p.to_lowercase().as_str()))
        .cloned();
    let url_param = params.iter().find(|p| {
        let p = p.to_lowercase();
        p == "url" || p == "uri" || p.ends_with("_url") || p == "link" || p == "href"
    });

    let reads_only = !acts.is_empty() && acts.iter().all(|(a, _, _)| *a == Act::Read);
    let annotation = |key: &str| def.annotations.get(key).and_then(Value::as_bool);

    use Capability as C;
    use Taint as T;
    for (act, word, from) in &acts {
        let verb = format!("{word:?} ({from} verb)");
        match act {
            Act::Read | Act::Fetch => {
                // The network is a capability only where the agent picks the address (a
                // URL parameter); a tool that reads the web through its own provider (a
                // search, "browse attractions") reaches no address the agent chose, and
                // what it returns is still written by anyone.
                if let Some(p) = url_param {
                    out.add(
                        &[C::NetEgress],
                        &[T::UntrustedInput],
                        format!("{verb} + parameter {p:?}"),
                    );
                } else if *act == Act::Fetch || has(Obj::Web).is_some() {
                    let why = has(Obj::Web)
                        .map(|w| format!("{verb} + {w:?} (web, through the tool's own provider)"))
                        .unwrap_or(format!("{verb} (web, through the tool's own provider)"));
                    out.add(&[], &[T::UntrustedInput], why);
                }
                if let Some(w) = has(Obj::Inbox) {
                    out.add(
                        &[],
                        &[T::PrivateData, T::UntrustedInput],
                        format!("{verb} + {w:?} (written by others into the user's space)"),
                    );
                }
                if let Some(w) = has(Obj::Private)
                    .or_else(|| has(Obj::Credential))
                    .or_else(|| has(Obj::Money))
                    .or_else(|| has(Obj::Booking))
                {
                    out.add(&[], &[T::PrivateData], format!("{verb} + {w:?} (private)"));
                }
                if let Some(w) = has(Obj::Public) {
                    out.add(
                        &[],
                        &[T::UntrustedInput],
                        format!("{verb} + {w:?} (written by anyone)"),
                    );
                }
            }
            Act::Write => {
                if let Some(w) = has(Obj::Money) {
                    out.add(
                        &[C::ExecIrreversible],
                        &[],
                        format!("{verb} + {w:?} (money)"),
                    );
                } else if let Some(w) = has(Obj::Inbox).filter(|w| w == "transaction") {
                    out.add(
                        &[C::ExecIrreversible],
                        &[],
                        format!("{verb} + {w:?} (money)"),
                    );
                }
                if let Some(w) = has(Obj::Credential) {
                    out.add(
                        &[C::ExecIrreversible],
                        &[],
                        format!("{verb} + {w:?} (credential)"),
                    );
                }
                if let Some(w) = has(Obj::Booking) {
                    out.add(
                        &[C::ExecIrreversible],
                        &[],
                        format!("{verb} + {w:?} (a booking)"),
                    );
                }
                if matches!(
                    word.as_str(),
                    "add" | "assign" | "set" | "change" | "update"
                ) && let Some(w) = has(Obj::Person).filter(|w| {
                    matches!(
                        w.as_str(),
                        "role" | "permission" | "access" | "admin" | "owner"
                    ) || word == "add"
                }) {
                    out.add(
                        &[C::ExecIrreversible],
                        &[],
                        format!("{verb} + {w:?} (membership)"),
                    );
                } else if word == "add"
                    && let Some(w) = has(Obj::Private).filter(|w| w == "user")
                {
                    out.add(
                        &[C::ExecIrreversible],
                        &[],
                        format!("{verb} + {w:?} (membership)"),
                    );
                }
                // On a payment the recipient is a payee, not someone who gets a message.
                let money = has(Obj::Money).is_some()
                    || has(Obj::Inbox).is_some_and(|w| w == "transaction");
                if let Some(p) = recipient.as_ref().filter(|_| !money) {
                    out.add(
                        &[C::MsgSend],
                        &[],
                        format!("{verb} + parameter {p:?} (reaches people)"),
                    );
                }
            }
            Act::Send => {
                if let Some(w) = has(Obj::Money) {
                    out.add(
                        &[C::ExecIrreversible],
                        &[],
                        format!("{verb} + {w:?} (money)"),
                    );
                } else if let Some(w) = has(Obj::Inbox).filter(|w| w == "transaction") {
                    out.add(
                        &[C::ExecIrreversible],
                        &[],
                        format!("{verb} + {w:?} (money)"),
                    );
                } else {
                    out.add(&[C::MsgSend], &[], verb.clone());
                }
            }
            Act::Publish => {
                out.add(&[C::ExecIrreversible], &[], format!("{verb} (publishes)"));
                if let Some(p) = url_param {
                    out.add(&[C::NetEgress], &[], format!("{verb} + parameter {p:?}"));
                } else {
                    out.add(&[C::MsgSend], &[], format!("{verb} (reaches readers)"));
                }
            }
            Act::Share => {
                out.add(
                    &[C::MsgSend],
                    &[],
                    format!("{verb} (gives a person access)"),
                );
                if word == "invite" || has(Obj::Person).is_some() {
                    out.add(&[C::ExecIrreversible], &[], format!("{verb} (membership)"));
                }
            }
            Act::Member | Act::Delete | Act::Deploy | Act::Money | Act::Book => {
                let what = match act {
                    Act::Member => "membership",
                    Act::Delete => "cannot be undone",
                    Act::Deploy => "ships",
                    Act::Money => "money",
                    _ => "a booking",
                };
                out.add(&[C::ExecIrreversible], &[], format!("{verb} ({what})"));
            }
        }
    }

    // Parameters that say "money" or "reaches people" on a tool whose words are unclear.
    if acts.is_empty()
        && let Some(p) = params.iter().find(|p| p.to_lowercase() == "amount")
        && recipient.is_some()
    {
        out.add(
            &[C::ExecIrreversible],
            &[],
            format!("parameters {p:?} and a recipient (money)"),
        );
    }

    // MCP annotations: hints that only add.
    if annotation("destructiveHint") == Some(true) && annotation("readOnlyHint") != Some(true) {
        out.add(
            &[C::ExecIrreversible],
            &[],
            "annotation destructiveHint: true".into(),
        );
    }
    if annotation("openWorldHint") == Some(true) && reads_only {
        out.add(
            &[],
            &[T::UntrustedInput],
            "annotation openWorldHint: true on a read".into(),
        );
    }
    out
}

/// The leading action of a name: the first verb in a present form, and any verb joined to
/// it by `and`/`or`.
fn name_acts(ws: &[String]) -> Vec<(Act, String)> {
    let mut out = Vec::new();
    let clear = |w: &String| verb(w).is_some_and(|(_, l)| !AMBIGUOUS.contains(&l.as_str()));
    let Some(i) = ws
        .iter()
        .position(clear)
        .or_else(|| ws.iter().position(|w| verb(w).is_some()))
    else {
        return out;
    };
    let mut j = i;
    while j < ws.len() {
        match verb(&ws[j]) {
            Some((a, lemma)) if j == i || JOINERS.contains(&ws[j - 1].as_str()) => {
                out.push((a, lemma));
            }
            _ => {}
        }
        j += 1;
    }
    out
}

/// A sentence's leading verb phrase, after fillers: "Use this to send and delete …".
fn leading_acts(ws: &[String]) -> Vec<(Act, String)> {
    let mut out = Vec::new();
    for w in ws {
        if let Some(v) = verb(w).filter(|(_, l)| !AMBIGUOUS.contains(&l.as_str())) {
            out.push(v);
        } else if JOINERS.contains(&w.as_str()) || (out.is_empty() && FILLERS.contains(&w.as_str()))
        {
            continue;
        } else {
            break;
        }
    }
    out
}

/// The verb class of a word in a base, third-person or -ing form. Past forms (`sent`,
/// `deleted`, `shared`) are not actions: they describe what a read returns.
fn verb(w: &str) -> Option<(Act, String)> {
    for lemma in lemmas(w, true) {
        if let Some((v, a)) = VERBS.iter().find(|(v, _)| *v == lemma) {
            return Some((*a, (*v).to_string()));
        }
    }
    None
}

fn object(w: &str) -> Option<Obj> {
    lemmas(w, false)
        .into_iter()
        .find_map(|l| OBJECTS.iter().find(|(o, _)| *o == l).map(|(_, c)| *c))
}

/// The word and its singular / base forms.
fn lemmas(w: &str, verbal: bool) -> Vec<String> {
    let mut out = vec![w.to_string()];
    if let Some(s) = w.strip_suffix("ies") {
        out.push(format!("{s}y"));
    }
    if let Some(s) = w.strip_suffix("es") {
        out.push(s.to_string());
    }
    if let Some(s) = w.strip_suffix('s')
        && !w.ends_with("ss")
    {
        out.push(s.to_string());
    }
    if verbal && let Some(s) = w.strip_suffix("ing") {
        out.push(s.to_string());
        out.push(format!("{s}e"));
        let b = s.as_bytes();
        if b.len() >= 2 && b[b.len() - 1] == b[b.len() - 2] {
            out.push(s[..s.len() - 1].to_string());
        }
    }
    out
}

/// Lower-case words: split on anything not alphanumeric and at camelCase boundaries.
fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in s.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            cur.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Sentences, ending at `.`, `:`, `;`, `(`, `!`, `?` or a line break.
fn sentences(s: &str) -> Vec<String> {
    s.split(['.', ':', ';', '(', '!', '?', '\n'])
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// The names of the top-level parameters of a JSON schema.
fn param_names(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().take(MAX_PARAMS).cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(description: &str, params: &[&str]) -> Definition {
        let props: serde_json::Map<String, Value> = params
            .iter()
            .map(|p| (p.to_string(), json!({"type": "string"})))
            .collect();
        Definition {
            description: description.into(),
            input_schema: json!({"type": "object", "properties": props}),
            annotations: Value::Null,
        }
    }

    fn caps(name: &str, d: &Definition) -> Vec<&'static str> {
        infer(name, d).capabilities.names()
    }

    fn taint(name: &str, d: &Definition) -> Vec<&'static str> {
        infer(name, d).taint.iter().map(|t| t.as_str()).collect()
    }

    #[test]
    fn money_moves_are_irreversible() {
        for name in [
            "pay_invoice",
            "transferFunds",
            "wire_money",
            "purchase_item",
        ] {
            assert_eq!(
                caps(name, &Definition::default()),
                ["exec.irreversible"],
                "{name}"
            );
        }
        assert_eq!(caps("send_money", &def("", &[])), ["exec.irreversible"]);
        assert_eq!(
            caps("schedule_payment", &def("Schedule a payment.", &["amount"])),
            ["exec.irreversible"]
        );
        // A payment written elsewhere in the name is an object of "update".
        // On a payment the recipient is a payee, not a message's.
        assert_eq!(
            caps("update_recurring_transaction", &def("", &["recipient"])),
            ["exec.irreversible"]
        );
    }

    #[test]
    fn bookings_are_irreversible() {
        for name in ["book_flight", "reserve_table", "rent_car"] {
            assert_eq!(
                caps(name, &Definition::default()),
                ["exec.irreversible"],
                "{name}"
            );
        }
        assert_eq!(
            caps("hotel", &def("Makes a reservation for a hotel.", &[])),
            ["exec.irreversible"]
        );
    }

    #[test]
    fn sends_reach_people() {
        assert_eq!(caps("send_email", &def("", &["to", "body"])), ["msg.send"]);
        assert_eq!(
            caps("reply_to_thread", &Definition::default()),
            ["msg.send"]
        );
        assert_eq!(
            caps("slack", &def("Sends a message to a channel.", &["channel"])),
            ["msg.send"]
        );
    }

    #[test]
    fn a_write_that_reaches_people_sends() {
        let d = def(
            "Creates a calendar event. It also sends an email to the participants.",
            &["participants", "title"],
        );
        assert_eq!(caps("create_event", &d), ["msg.send"]);
        // Without the sentence or the parameter, a calendar entry is an ordinary write.
        assert!(caps("create_event", &def("Creates an event.", &["title"])).is_empty());
    }

    #[test]
    fn posts_publish() {
        assert_eq!(
            caps(
                "post_webpage",
                &def("Posts content at a URL.", &["url", "content"])
            ),
            ["net.egress", "exec.irreversible"]
        );
        assert_eq!(
            caps("post_comment", &def("", &["issue", "body"])),
            ["msg.send", "exec.irreversible"]
        );
    }

    #[test]
    fn shares_and_invites_give_access() {
        assert_eq!(caps("share_document", &def("", &["doc_id"])), ["msg.send"]);
        assert_eq!(
            caps("invite_member", &def("", &["email"])),
            ["msg.send", "exec.irreversible"]
        );
    }

    #[test]
    fn membership_and_credentials_are_irreversible() {
        assert_eq!(
            caps("add_user_to_group", &def("", &["user"])),
            ["exec.irreversible"]
        );
        assert_eq!(
            caps("grant_access", &Definition::default()),
            ["exec.irreversible"]
        );
        assert_eq!(
            caps("change_password", &def("", &["password"])),
            ["exec.irreversible"]
        );
        assert_eq!(
            caps("rotate_api_token", &Definition::default()),
            ["exec.irreversible"]
        );
        assert_eq!(
            caps("set_user_role", &def("", &["role"])),
            ["exec.irreversible"]
        );
    }

    #[test]
    fn deletes_deploys_merges_are_irreversible() {
        for name in [
            "delete_repo",
            "removeFile",
            "cancel_order",
            "deploy_service",
            "merge_pull_request",
            "purge_cache",
        ] {
            assert_eq!(
                caps(name, &Definition::default()),
                ["exec.irreversible"],
                "{name}"
            );
        }
    }

    #[test]
    fn reading_mail_files_calendars_is_private_and_untrusted() {
        for name in [
            "get_unread_emails",
            "read_channel_messages",
            "search_files",
            "list_calendar_events",
        ] {
            assert_eq!(
                taint(name, &Definition::default()),
                ["private-data", "untrusted-input"],
                "{name}"
            );
            assert!(caps(name, &Definition::default()).is_empty(), "{name}");
        }
    }

    #[test]
    fn reading_own_records_is_private() {
        assert_eq!(
            taint("get_balance", &Definition::default()),
            ["private-data"]
        );
        assert_eq!(
            taint("get_user_profile", &Definition::default()),
            ["private-data"]
        );
    }

    #[test]
    fn reading_the_web_and_reviews_is_untrusted() {
        assert_eq!(
            taint("get_reviews", &Definition::default()),
            ["untrusted-input"]
        );
        let d = def("Returns the content of the page at a URL.", &["url"]);
        assert_eq!(caps("fetch", &d), ["net.egress"]);
        assert_eq!(taint("fetch", &d), ["untrusted-input"]);
    }

    #[test]
    fn the_web_through_a_provider_is_untrusted_but_no_egress() {
        // No address the agent picks: a search or a browse through the tool's own provider.
        for (name, d) in [
            ("browse", Definition::default()),
            ("search_web", def("Searches the web.", &["query"])),
            (
                "find_attractions",
                def("Browse attractions in a city.", &["city"]),
            ),
        ] {
            assert!(caps(name, &d).is_empty(), "{name}");
            assert_eq!(taint(name, &d), ["untrusted-input"], "{name}");
        }
    }

    #[test]
    fn words_that_are_nouns_too_are_verbs_only_alone() {
        assert!(caps("email_search", &Definition::default()).is_empty());
        assert_eq!(caps("email_user", &Definition::default()), ["msg.send"]);
        assert!(caps("get_post", &Definition::default()).is_empty());
        assert_eq!(
            caps("order_pizza", &Definition::default()),
            ["exec.irreversible"]
        );
        assert!(caps("lookup", &def("Email address of a contact.", &[])).is_empty());
    }

    #[test]
    fn past_forms_are_not_actions() {
        assert_eq!(
            taint("get_sent_emails", &Definition::default()),
            ["private-data", "untrusted-input"]
        );
        assert!(caps("get_sent_emails", &Definition::default()).is_empty());
        assert!(caps("list_deleted_files", &Definition::default()).is_empty());
        assert!(caps("list", &def("Lists events the user was invited to.", &[])).is_empty());
    }

    #[test]
    fn public_listings_give_nothing() {
        for name in [
            "get_weather",
            "get_all_hotels_in_city",
            "get_flight_prices",
            "get_current_time",
        ] {
            assert!(infer(name, &Definition::default()).is_empty(), "{name}");
        }
    }

    #[test]
    fn the_description_can_name_the_action() {
        let d = def("Use this tool to delete a record.", &["id"]);
        assert_eq!(caps("records", &d), ["exec.irreversible"]);
        // A verb later in the sentence is not its leading verb.
        let d = def("Lists the channels you can post to.", &[]);
        assert!(caps("channels", &d).is_empty());
    }

    #[test]
    fn annotations_only_add() {
        let mut d = def("Deletes a file.", &["path"]);
        d.annotations = json!({"readOnlyHint": true});
        assert_eq!(caps("remove_path", &d), ["exec.irreversible"]);
        let mut d = def("", &[]);
        d.annotations = json!({"destructiveHint": true});
        assert_eq!(caps("frobnicate", &d), ["exec.irreversible"]);
        d.annotations = json!({"destructiveHint": true, "readOnlyHint": true});
        assert!(caps("frobnicate", &d).is_empty());
        d.annotations = json!({"openWorldHint": true});
        assert_eq!(taint("lookup_thing", &d), ["untrusted-input"]);
    }

    #[test]
    fn every_effect_says_why() {
        let i = infer("send_money", &Definition::default());
        assert!(
            i.summary()
                .contains("\"send\" (name verb) + \"money\" (money) → exec.irreversible"),
            "{}",
            i.summary()
        );
        assert_eq!(
            infer("zzz", &Definition::default()).summary(),
            "nothing inferred from the definition"
        );
    }

    #[test]
    fn unbounded_definitions_are_read_bounded() {
        let d = def(&"delete ".repeat(100_000), &[]);
        assert_eq!(caps("x", &d), ["exec.irreversible"]);
    }
}
