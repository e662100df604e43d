//! Which HTTP stream each message from the server goes out on, and the events kept so a
//! client that lost a stream can resume it with `Last-Event-ID`.
//!
//! Every POSTed request gets a stream of its own; the server's answer ends it. Progress
//! notifications follow their request's `progressToken`. Everything else the server sends on
//! its own (log lines, sampling and elicitation requests, list changes) goes where a directly
//! connected server would most likely have sent it: the newest request stream still open (a
//! stdio server cannot say which request a message belongs to), else the client's `GET`
//! stream, else it waits (bounded) for one.
//!
//! Event ids are `S-N`, stream and sequence, so a resumption replays only the stream it
//! names, never another's events.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use crate::jsonrpc::{self, Kind};

/// Events kept per stream for resumption; a reader further behind loses its stream.
pub const MAX_EVENTS: usize = 512;
/// Finished request streams kept for resumption.
pub const MAX_FINISHED: usize = 64;
/// Messages kept while no stream can take them.
pub const MAX_WAITING: usize = 256;
/// Streams open at once in one session.
pub const MAX_OPEN: usize = 256;

/// The id of the standalone (`GET`) stream.
pub const GET_STREAM: u64 = 0;

/// How a request's stream answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `text/event-stream`: every message for the request, then its answer.
    Events,
    /// `application/json`: the answer only; other messages go where unrelated ones go.
    Json,
}

#[derive(Debug)]
struct Stream {
    events: VecDeque<(u64, Arc<str>)>,
    next_seq: u64,
    mode: Mode,
    done: bool,
    /// Which reader owns the stream: a resumption takes it over from the one before.
    reader: u64,
    /// The last sequence a reader was sent: a new standalone reader starts after it.
    delivered: u64,
    progress: Option<String>,
    request: Option<String>,
    /// Wakes this stream's reader (only it: a session's other readers sleep on).
    wake: Arc<tokio::sync::Notify>,
}

impl Stream {
    fn new(mode: Mode) -> Stream {
        Stream {
            events: VecDeque::new(),
            next_seq: 1,
            mode,
            done: false,
            reader: 0,
            delivered: 0,
            progress: None,
            request: None,
            wake: Arc::new(tokio::sync::Notify::new()),
        }
    }

    fn push(&mut self, message: Arc<str>) {
        if self.events.len() >= MAX_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back((self.next_seq, message));
        self.next_seq += 1;
    }
}

/// Why a stream could not be opened or resumed.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// A request with that id is still open.
    #[error("a request with id {0} is already in progress")]
    DuplicateId(String),
    /// Too many streams at once.
    #[error("too many requests in progress in this session (at most {MAX_OPEN})")]
    TooMany,
    /// The `Last-Event-ID` names no stream of this session.
    #[error("Last-Event-ID {0:?} names no stream of this session")]
    UnknownEvent(String),
    /// The standalone stream is already being read.
    #[error("this session's GET stream is already open")]
    GetOpen,
}

/// What a reader gets: the events after its cursor, and whether the stream has ended.
#[derive(Debug, PartialEq)]
pub enum Poll {
    /// New events (sequence, JSON text).
    Events(Vec<(u64, Arc<str>)>),
    /// Nothing new yet.
    Wait,
    /// The stream has ended (answered, taken over by a resumption, or the session ended),
    /// or the reader fell further behind than the kept events reach.
    End,
}

/// One session's streams.
#[derive(Debug, Default)]
pub struct Streams {
    streams: HashMap<u64, Stream>,
    finished: VecDeque<u64>,
    by_request: HashMap<String, u64>,
    by_progress: HashMap<String, u64>,
    /// Open event-mode request streams, oldest first.
    open: Vec<u64>,
    get_open: bool,
    waiting: VecDeque<Arc<str>>,
    next_stream: u64,
    next_reader: u64,
    ended: bool,
    dropped: u64,
}

impl Streams {
    /// No streams yet.
    pub fn new() -> Streams {
        Streams {
            next_stream: GET_STREAM + 1,
            next_reader: 1,
            ..Streams::default()
        }
    }

    /// Opens the stream for the request `message` (already classified as a request with
    /// `id`): returns its id and the reader id that owns it.
    pub fn open(
        &mut self,
        id: &Value,
        message: &Value,
        mode: Mode,
    ) -> Result<(u64, u64), StreamError> {
        let key = jsonrpc::id_key(id);
        if self.by_request.contains_key(&key) {
            return Err(StreamError::DuplicateId(key));
        }
        if self.by_request.len() >= MAX_OPEN {
            return Err(StreamError::TooMany);
        }
        let n = self.next_stream;
        self.next_stream += 1;
        let mut s = Stream::new(mode);
        s.request = Some(key.clone());
        s.reader = self.reader();
        if let Some(token) = jsonrpc::at(message, "/params/_meta/progressToken")
            .filter(|t| t.is_string() || t.is_number())
        {
            let t = jsonrpc::id_key(token);
            self.by_progress.insert(t.clone(), n);
            s.progress = Some(t);
        }
        let reader = s.reader;
        self.streams.insert(n, s);
        self.by_request.insert(key, n);
        if mode == Mode::Events {
            self.open.push(n);
        }
        Ok((n, reader))
    }

    /// What wakes stream `stream`'s reader; a fresh one (nobody wakes it) for a stream that
    /// is gone, whose reader's next look ends it anyway.
    pub fn waker(&self, stream: u64) -> Arc<tokio::sync::Notify> {
        self.streams
            .get(&stream)
            .map(|s| Arc::clone(&s.wake))
            .unwrap_or_default()
    }

    /// Wakes stream `stream`'s reader.
    pub fn wake(&self, stream: u64) {
        if let Some(s) = self.streams.get(&stream) {
            s.wake.notify_waiters();
        }
    }

    fn wake_all(&self) {
        for s in self.streams.values() {
            s.wake.notify_waiters();
        }
    }

    /// Whether stream `stream` still waits for its answer.
    pub fn is_open(&self, stream: u64) -> bool {
        self.streams.get(&stream).is_some_and(|s| !s.done)
    }

    /// A request whose stream was opened but which could not be sent on: forgotten.
    pub fn abandon(&mut self, stream: u64) {
        if let Some(s) = self.streams.remove(&stream) {
            self.forget(stream, &s);
        }
    }

    fn forget(&mut self, n: u64, s: &Stream) {
        if let Some(r) = &s.request {
            self.by_request.remove(r);
        }
        if let Some(p) = &s.progress
            && self.by_progress.get(p) == Some(&n)
        {
            self.by_progress.remove(p);
        }
        self.open.retain(|o| *o != n);
    }

    fn reader(&mut self) -> u64 {
        let r = self.next_reader;
        self.next_reader += 1;
        r
    }

    /// Opens the standalone stream. Returns the reader id and the cursor to read from: what
    /// an earlier reader of it was sent is not sent again.
    pub fn open_get(&mut self) -> Result<(u64, u64), StreamError> {
        if self.get_open {
            return Err(StreamError::GetOpen);
        }
        let reader = self.reader();
        let waiting: Vec<Arc<str>> = self.waiting.drain(..).collect();
        let s = self
            .streams
            .entry(GET_STREAM)
            .or_insert_with(|| Stream::new(Mode::Events));
        s.reader = reader;
        s.done = false;
        // After what the last reader was sent, or — if more came meanwhile than is kept —
        // from the oldest kept (what fell out is counted, not replayed forever).
        let first_kept = s.events.front().map_or(s.next_seq, |(n, _)| *n);
        if first_kept > s.delivered + 1 {
            self.dropped += first_kept - s.delivered - 1;
        }
        let cursor = s.delivered.max(first_kept.saturating_sub(1));
        for m in waiting {
            s.push(m);
        }
        self.get_open = true;
        Ok((reader, cursor))
    }

    /// The standalone stream's reader went away: later messages are kept for the next one.
    pub fn close_get(&mut self, reader: u64) {
        if let Some(s) = self.streams.get(&GET_STREAM)
            && s.reader == reader
        {
            self.get_open = false;
        }
    }

    /// Takes stream `stream` over for a new reader, from an event id `S-N`: the reader then
    /// gets what came after N. Returns (stream, reader, cursor).
    pub fn resume(&mut self, last_event_id: &str) -> Result<(u64, u64, u64), StreamError> {
        let unknown = || StreamError::UnknownEvent(last_event_id.to_string());
        let (s, n) = last_event_id.split_once('-').ok_or_else(unknown)?;
        let (stream, seq) = match (s.parse::<u64>(), n.parse::<u64>()) {
            (Ok(s), Ok(n)) => (s, n),
            _ => return Err(unknown()),
        };
        if stream == GET_STREAM && self.get_open {
            return Err(StreamError::GetOpen);
        }
        if !self.streams.contains_key(&stream) {
            return Err(unknown());
        }
        let reader = self.reader();
        if stream == GET_STREAM {
            self.get_open = true;
        }
        if let Some(st) = self.streams.get_mut(&stream) {
            st.reader = reader;
            // The reader it is taken from wakes to find it gone.
            st.wake.notify_waiters();
        }
        Ok((stream, reader, seq))
    }

    /// What reader `reader` of stream `stream` gets after sequence `cursor`.
    pub fn poll(&self, stream: u64, reader: u64, cursor: u64) -> Poll {
        let Some(s) = self.streams.get(&stream) else {
            return Poll::End;
        };
        if s.reader != reader || self.ended && s.events.back().is_none_or(|(n, _)| *n <= cursor) {
            return Poll::End;
        }
        if s.events
            .front()
            .is_some_and(|(first, _)| *first > cursor.saturating_add(1))
        {
            return Poll::End;
        }
        let new: Vec<(u64, Arc<str>)> = s
            .events
            .iter()
            .filter(|(n, _)| *n > cursor)
            .cloned()
            .collect();
        if !new.is_empty() {
            return Poll::Events(new);
        }
        if s.done { Poll::End } else { Poll::Wait }
    }

    /// Routes one message from the server. Returns the stream it went to (`None`: kept
    /// until a stream can take it).
    pub fn route(&mut self, message: &Value, text: Arc<str>) -> Option<u64> {
        let target = match jsonrpc::classify(message) {
            Ok(Kind::Response { id }) => self.by_request.get(&jsonrpc::id_key(&id)).copied(),
            Ok(Kind::Notification { method }) if method == "notifications/progress" => {
                jsonrpc::at(message, "/params/progressToken")
                    .and_then(|t| self.by_progress.get(&jsonrpc::id_key(t)))
                    .copied()
            }
            _ => None,
        };
        if let Some(n) = target
            && let Some(s) = self.streams.get_mut(&n)
        {
            let answer = matches!(jsonrpc::classify(message), Ok(Kind::Response { .. }));
            if !answer && s.mode == Mode::Json {
                return self.unrelated(text);
            }
            s.push(text);
            if answer {
                s.done = true;
                if let Some(s) = self.streams.get(&n) {
                    let (req, prog) = (s.request.clone(), s.progress.clone());
                    if let Some(r) = req {
                        self.by_request.remove(&r);
                    }
                    if let Some(p) = prog
                        && self.by_progress.get(&p) == Some(&n)
                    {
                        self.by_progress.remove(&p);
                    }
                }
                self.open.retain(|o| *o != n);
                self.finished.push_back(n);
                self.trim_finished();
            }
            return Some(n);
        }
        self.unrelated(text)
    }

    /// Keeps at most [`MAX_FINISHED`] finished streams whose reader has had the answer; one
    /// whose answer is still unread is kept too (up to [`MAX_OPEN`] of them), or a burst of
    /// answers could be dropped before their readers run.
    fn trim_finished(&mut self) {
        while self.finished.len() > MAX_FINISHED {
            let read = self.finished.iter().position(|n| {
                self.streams
                    .get(n)
                    .is_none_or(|s| s.events.back().is_none_or(|(last, _)| s.delivered >= *last))
            });
            let victim = match read {
                Some(i) => self.finished.remove(i),
                None if self.finished.len() > MAX_OPEN => self.finished.pop_front(),
                None => break,
            };
            if let Some(old) = victim {
                self.streams.remove(&old);
            }
        }
    }

    fn unrelated(&mut self, text: Arc<str>) -> Option<u64> {
        let target = self
            .open
            .last()
            .copied()
            .or(if self.streams.contains_key(&GET_STREAM) {
                Some(GET_STREAM)
            } else {
                None
            });
        match target.and_then(|n| self.streams.get_mut(&n).map(|s| (n, s))) {
            Some((n, s)) => {
                s.push(text);
                Some(n)
            }
            None => {
                if self.waiting.len() >= MAX_WAITING {
                    self.waiting.pop_front();
                    self.dropped += 1;
                }
                self.waiting.push_back(text);
                None
            }
        }
    }

    /// The session is over: every request still waiting gets an error answer (never a
    /// stream that just stops), and every reader ends once it has what was sent.
    pub fn end(&mut self) {
        if self.ended {
            return;
        }
        let waiting: Vec<String> = self.by_request.keys().cloned().collect();
        for key in waiting {
            let id: Value = serde_json::from_str(&key).unwrap_or(Value::Null);
            let e = jsonrpc::error(
                &id,
                jsonrpc::INTERNAL_ERROR,
                "the session ended before the answer came",
                None,
            );
            let text: Arc<str> = Arc::from(e.to_string());
            self.route(&e, text);
        }
        self.ended = true;
        self.wake_all();
    }

    /// Whether the session is over.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Messages dropped because no stream took them and too many waited.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Reader `reader` of `stream` has sent the client everything up to `seq`.
    pub fn delivered(&mut self, stream: u64, reader: u64, seq: u64) {
        if let Some(s) = self.streams.get_mut(&stream)
            && s.reader == reader
        {
            s.delivered = s.delivered.max(seq);
        }
    }

    /// Whether a client reads the standalone stream now.
    pub fn listening(&self) -> bool {
        self.get_open
    }

    /// Requests still waiting for their answer.
    pub fn in_progress(&self) -> usize {
        self.by_request.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(v: &Value) -> Arc<str> {
        Arc::from(v.to_string())
    }

    fn route(s: &mut Streams, v: Value) -> Option<u64> {
        let t = text(&v);
        s.route(&v, t)
    }

    #[test]
    fn answers_end_their_own_stream_and_progress_follows_its_token() {
        let mut s = Streams::new();
        let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"p"}}});
        let (a, ra) = s.open(&json!(1), &call, Mode::Events).unwrap();
        let (b, rb) = s
            .open(
                &json!(2),
                &json!({"jsonrpc":"2.0","id":2,"method":"ping"}),
                Mode::Events,
            )
            .unwrap();
        assert_eq!(
            route(
                &mut s,
                json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}})
            ),
            Some(a)
        );
        assert_eq!(
            route(&mut s, json!({"jsonrpc":"2.0","id":2,"result":{}})),
            Some(b)
        );
        assert!(matches!(s.poll(b, rb, 0), Poll::Events(e) if e.len() == 1));
        assert_eq!(s.poll(b, rb, 1), Poll::End);
        assert_eq!(s.poll(a, ra, 1), Poll::Wait);
        // Log lines go to the newest open request stream: `a` now.
        assert_eq!(
            route(
                &mut s,
                json!({"jsonrpc":"2.0","method":"notifications/message","params":{}})
            ),
            Some(a)
        );
        assert_eq!(
            route(&mut s, json!({"jsonrpc":"2.0","id":1,"result":{}})),
            Some(a)
        );
        assert!(matches!(s.poll(a, ra, 0), Poll::Events(e) if e.len() == 3));
        assert_eq!(s.in_progress(), 0);
    }

    #[test]
    fn unrelated_messages_wait_for_a_get_stream_bounded() {
        let mut s = Streams::new();
        for i in 0..MAX_WAITING + 3 {
            assert_eq!(
                route(
                    &mut s,
                    json!({"jsonrpc":"2.0","method":"notifications/message","params":{"i":i}})
                ),
                None
            );
        }
        assert_eq!(s.dropped(), 3);
        let (r, cursor) = s.open_get().unwrap();
        assert_eq!(cursor, 0);
        assert_eq!(s.open_get(), Err(StreamError::GetOpen));
        match s.poll(GET_STREAM, r, 0) {
            Poll::Events(e) => {
                assert_eq!(e.len(), MAX_WAITING);
                assert!(e[0].1.contains("\"i\":3"));
            }
            other => panic!("{other:?}"),
        }
        s.delivered(GET_STREAM, r, MAX_WAITING as u64);
        s.close_get(r);
        assert_eq!(
            route(&mut s, json!({"jsonrpc":"2.0","method":"x"})),
            Some(GET_STREAM)
        );
        // A new GET stream starts after what the last one was sent, plus what came since.
        let (r2, cursor) = s.open_get().unwrap();
        assert_eq!(cursor, MAX_WAITING as u64);
        assert!(matches!(s.poll(GET_STREAM, r2, cursor), Poll::Events(e) if e.len() == 1));
    }

    #[test]
    fn resumption_replays_only_the_named_stream_and_takes_it_over() {
        let mut s = Streams::new();
        let (a, ra) = s
            .open(
                &json!("a"),
                &json!({"jsonrpc":"2.0","id":"a","method":"tools/call"}),
                Mode::Events,
            )
            .unwrap();
        let (b, _) = s
            .open(
                &json!("b"),
                &json!({"jsonrpc":"2.0","id":"b","method":"tools/call"}),
                Mode::Events,
            )
            .unwrap();
        route(
            &mut s,
            json!({"jsonrpc":"2.0","method":"notifications/message"}),
        ); // to b
        route(&mut s, json!({"jsonrpc":"2.0","id":"a","result":{"n":1}}));
        let (st, r2, cur) = s.resume(&format!("{a}-0")).unwrap();
        assert_eq!((st, cur), (a, 0));
        assert_eq!(
            s.poll(a, ra, 0),
            Poll::End,
            "the old reader loses the stream"
        );
        match s.poll(a, r2, cur) {
            Poll::Events(e) => {
                assert_eq!(e.len(), 1);
                assert!(e[0].1.contains("\"n\":1"));
            }
            other => panic!("{other:?}"),
        }
        assert!(b != a);
        assert!(s.resume("99-0").is_err());
        assert!(s.resume("x").is_err());
        assert_eq!(
            s.open(&json!("b"), &json!({}), Mode::Events),
            Err(StreamError::DuplicateId("\"b\"".into()))
        );
    }

    #[test]
    fn a_reader_too_far_behind_loses_the_stream() {
        let mut s = Streams::new();
        let (a, ra) = s
            .open(
                &json!(1),
                &json!({"jsonrpc":"2.0","id":1,"method":"tools/call"}),
                Mode::Events,
            )
            .unwrap();
        for _ in 0..MAX_EVENTS + 1 {
            route(
                &mut s,
                json!({"jsonrpc":"2.0","method":"notifications/message"}),
            );
        }
        assert_eq!(s.poll(a, ra, 0), Poll::End);
        assert!(matches!(s.poll(a, ra, 1), Poll::Events(_)));
    }

    #[test]
    fn json_mode_streams_take_only_the_answer() {
        let mut s = Streams::new();
        let (a, ra) = s
            .open(&json!(1), &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":1}}}), Mode::Json)
            .unwrap();
        assert_eq!(
            route(
                &mut s,
                json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}})
            ),
            None
        );
        assert_eq!(
            route(&mut s, json!({"jsonrpc":"2.0","id":1,"result":{}})),
            Some(a)
        );
        assert!(matches!(s.poll(a, ra, 0), Poll::Events(e) if e.len() == 1));
    }

    #[test]
    fn a_get_reader_behind_what_is_kept_starts_from_the_oldest_kept() {
        let mut s = Streams::new();
        let (r, _) = s.open_get().unwrap();
        s.close_get(r);
        for i in 0..MAX_EVENTS + 10 {
            route(
                &mut s,
                json!({"jsonrpc":"2.0","method":"notifications/message","params":{"i":i}}),
            );
        }
        let (r2, cursor) = s.open_get().unwrap();
        match s.poll(GET_STREAM, r2, cursor) {
            Poll::Events(e) => assert_eq!(e.len(), MAX_EVENTS),
            other => panic!("a reader must not be ended for what it could not see: {other:?}"),
        }
        assert_eq!(s.dropped(), 10);
    }

    #[test]
    fn a_session_that_ends_answers_what_waits() {
        let mut s = Streams::new();
        let (a, ra) = s
            .open(
                &json!(7),
                &json!({"jsonrpc":"2.0","id":7,"method":"tools/call"}),
                Mode::Events,
            )
            .unwrap();
        s.end();
        match s.poll(a, ra, 0) {
            Poll::Events(e) => {
                let v: Value = serde_json::from_str(&e[0].1).unwrap();
                assert_eq!(
                    (v["id"].clone(), v["error"]["code"].clone()),
                    (json!(7), json!(-32603))
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(s.poll(a, ra, 1), Poll::End);
    }

    #[test]
    fn finished_streams_are_bounded() {
        let mut s = Streams::new();
        // Answers nobody has read yet are kept (a burst must not lose them)…
        let mut opened = Vec::new();
        for i in 0..MAX_FINISHED as u64 + 10 {
            let (n, r) = s
                .open(
                    &json!(i),
                    &json!({"jsonrpc":"2.0","id":i,"method":"ping"}),
                    Mode::Events,
                )
                .unwrap();
            route(&mut s, json!({"jsonrpc":"2.0","id":i,"result":{}}));
            opened.push((n, r));
        }
        assert_eq!(s.streams.len(), MAX_FINISHED + 10);
        assert!(matches!(
            s.poll(opened[0].0, opened[0].1, 0),
            Poll::Events(_)
        ));
        // …and once read, the oldest go.
        for (n, r) in &opened {
            s.delivered(*n, *r, 1);
        }
        s.open(
            &json!("x"),
            &json!({"jsonrpc":"2.0","id":"x","method":"ping"}),
            Mode::Events,
        )
        .unwrap();
        route(&mut s, json!({"jsonrpc":"2.0","id":"x","result":{}}));
        assert_eq!(s.streams.len(), MAX_FINISHED);
        assert!(s.resume("1-0").is_err());
        // Unread ones are bounded too.
        let mut t = Streams::new();
        for i in 0..MAX_OPEN as u64 + 5 {
            t.open(
                &json!(i),
                &json!({"jsonrpc":"2.0","id":i,"method":"ping"}),
                Mode::Events,
            )
            .unwrap();
            route(&mut t, json!({"jsonrpc":"2.0","id":i,"result":{}}));
        }
        assert_eq!(t.streams.len(), MAX_OPEN);
    }
}
