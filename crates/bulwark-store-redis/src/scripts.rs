//! The Lua scripts: each one is a single atomic step on the server, so no two replicas ever
//! see half of one another's change.
//!
//! Scripts name every key they touch in `KEYS` except the session blobs evicted past the
//! session limit (derived from the prefix), which is fine on one server or a primary with
//! replicas, not on Redis Cluster (not supported yet: docs/scale-out.md).

/// Takes session `id`'s lock and reads what a decision starts from, in one round trip.
///
/// KEYS: blob, taint, lock, kill switch, pin epoch. ARGV: lock owner, lock ttl (ms).
/// Returns `{1, blob, taint, kill, epoch}` (missing values nil) or `{0, lock's ttl}`.
pub const LOAD: &str = r#"
if redis.call('SET', KEYS[3], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2]),
          redis.call('GET', KEYS[4]), redis.call('GET', KEYS[5])}
end
return {0, redis.call('PTTL', KEYS[3])}
"#;

/// Writes a decided session back and lets go of its lock. Taint is merged as a union with
/// what is stored (taint only grows, whoever wrote last), the blob replaced, both kept for
/// the idle time; the session index evicts the oldest sessions past the limit (their taint
/// stays until it idles out, as the in-process store remembers evicted taint).
///
/// KEYS: blob, taint, lock, index. ARGV: owner, blob, taint bits, idle ms, now ms, max
/// sessions, hashed id, blob key prefix. Returns the taint bits now stored.
pub const STORE: &str = r#"
local t = bit.bor(tonumber(redis.call('GET', KEYS[2]) or '0'), tonumber(ARGV[3]))
redis.call('SET', KEYS[2], t, 'PX', ARGV[4])
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[4])
if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end
local now = tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', '(' .. (now - tonumber(ARGV[4])))
redis.call('ZADD', KEYS[4], now, ARGV[7])
redis.call('PEXPIRE', KEYS[4], ARGV[4])
local over = redis.call('ZCARD', KEYS[4]) - tonumber(ARGV[6])
if over > 0 then
  local old = redis.call('ZPOPMIN', KEYS[4], over)
  for i = 1, #old, 2 do redis.call('DEL', ARGV[8] .. old[i]) end
end
return t
"#;

/// Lets go of a session lock this decision holds (a decision that could not be written).
///
/// KEYS: lock. ARGV: owner.
pub const UNLOCK: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"#;

/// Adds taint to a session (union), keeping it for the idle time. KEYS: taint. ARGV: bits,
/// idle ms. Returns the bits now stored.
pub const ADD_TAINT: &str = r#"
local t = bit.bor(tonumber(redis.call('GET', KEYS[1]) or '0'), tonumber(ARGV[1]))
redis.call('SET', KEYS[1], t, 'PX', ARGV[2])
return t
"#;

/// One rate draw over every shared bucket a call needs: from all of them or from none.
///
/// The same arithmetic as the in-process [`bulwark_engine::bucket::Bucket`]: tokens in
/// thousandths, refilled continuously, a missing bucket is full. Time is the server's
/// (`TIME`), so replicas with skewed clocks still share one bucket exactly. A bucket idle for
/// its period is full again, which is what a missing key reads as, so each key expires after
/// its period.
///
/// KEYS: the buckets. ARGV: take (`1`/`0`), then capacity and period (ms) per key.
/// Returns `{longest wait ms, 1-based index of the key that waits longest (0: none)}`.
pub const DRAW: &str = r#"
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local take = ARGV[1] == '1'
local worst, wi = 0, 0
local st = {}
for i = 1, #KEYS do
  local cap = tonumber(ARGV[2 * i])
  local per = tonumber(ARGV[2 * i + 1])
  if per < 1 then per = 1 end
  local max = cap * 1000
  local v = redis.call('HMGET', KEYS[i], 'm', 't')
  local m, t = max, now
  if v[1] then m = tonumber(v[1]); t = tonumber(v[2]) end
  local el = now - t
  if el < 0 then el = 0 end
  if el >= per then m = max else m = math.min(max, m + math.floor(el * max / per)) end
  if t < now then t = now end
  local w = 0
  if m < 1000 then
    w = math.ceil((1000 - m) * per / math.max(max, 1))
    if w < 1 then w = 1 end
  end
  if w > worst then worst = w; wi = i end
  st[i] = {m, t, per}
end
for i = 1, #KEYS do
  local m = st[i][1]
  if worst == 0 and take then m = m - 1000 end
  redis.call('HSET', KEYS[i], 'm', m, 't', st[i][2])
  redis.call('PEXPIRE', KEYS[i], st[i][3])
end
return {worst, wi}
"#;

/// A definition that went through: pinned when the tool has none (and the table has
/// room); a pin with the same digest and no schema learns this one's.
///
/// KEYS: digests, schemas, withheld, reasons, offered, pins of names that look like this one
/// (keyed by the name's skeleton), server's fields, epoch. ARGV: field, digest, schema JSON
/// (empty: none), most pins, server.
pub const PIN: &str = r#"
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  if cur == ARGV[2] and ARGV[3] ~= '' and redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then
    redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
    redis.call('INCR', KEYS[8])
  end
  return 0
end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[2], ARGV[1], ARGV[3]) end
redis.call('SADD', KEYS[6], ARGV[1])
redis.call('SADD', KEYS[7], ARGV[1])
redis.call('INCR', KEYS[8])
return 1
"#;

/// Withholds a tool, pinning it first if it was not (and the table has room).
///
/// KEYS: as [`PIN`]. ARGV: field, offered digest, reason code, reason, most pins, server.
pub const QUARANTINE: &str = r#"
if not redis.call('HGET', KEYS[1], ARGV[1]) then
  if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[5]) then return 0 end
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  redis.call('SADD', KEYS[6], ARGV[1])
  redis.call('SADD', KEYS[7], ARGV[1])
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[4], ARGV[1], ARGV[4])
redis.call('HSET', KEYS[5], ARGV[1], ARGV[2])
redis.call('INCR', KEYS[8])
return 1
"#;

/// Reads one pin whole. KEYS: digests, schemas, withheld, reasons, offered. ARGV: field.
pub const READ_PIN: &str = r#"
local out = {}
for i = 1, 5 do out[i] = redis.call('HGET', KEYS[i], ARGV[1]) end
return out
"#;

/// Replaces one server's pins. KEYS: digests, schemas, withheld, reasons, offered, server's
/// fields, epoch. ARGV: server, the names-set key prefix, then per record: field, the name's
/// skeleton, digest, schema, withheld, reason, offered (empty: none). A replaced pin's field
/// may stay in its names set: readers skip fields that are no longer pinned.
pub const IMPORT: &str = r#"
for _, f in ipairs(redis.call('SMEMBERS', KEYS[6])) do
  for i = 1, 5 do redis.call('HDEL', KEYS[i], f) end
end
redis.call('DEL', KEYS[6])
for j = 3, #ARGV, 7 do
  local f = ARGV[j]
  redis.call('HSET', KEYS[1], f, ARGV[j + 2])
  if ARGV[j + 3] ~= '' then redis.call('HSET', KEYS[2], f, ARGV[j + 3]) end
  if ARGV[j + 4] ~= '' then redis.call('HSET', KEYS[3], f, ARGV[j + 4]) end
  if ARGV[j + 5] ~= '' then redis.call('HSET', KEYS[4], f, ARGV[j + 5]) end
  if ARGV[j + 6] ~= '' then redis.call('HSET', KEYS[5], f, ARGV[j + 6]) end
  redis.call('SADD', KEYS[6], f)
  redis.call('SADD', ARGV[2] .. ARGV[j + 1], f)
end
redis.call('INCR', KEYS[7])
return 1
"#;

/// Takes in one replica's pin file without undoing the shared pins: a field with no pin
/// gets the file's (while the table has room), quarantine included; a pinned field keeps
/// its pin whatever the file says. A file cannot lift a quarantine: a stale file and a
/// person's accept can look the same (a server that changed and changed back is offered its
/// first definition again), so an accept goes to the store itself ([`ACCEPT`]).
///
/// KEYS: as [`IMPORT`]. ARGV: server, the names-set key prefix, most pins, then per record
/// as [`IMPORT`]. Returns how many fields were added (the epoch moves only then).
pub const MERGE: &str = r#"
local changed = 0
for j = 4, #ARGV, 7 do
  local f = ARGV[j]
  if not redis.call('HGET', KEYS[1], f) and redis.call('HLEN', KEYS[1]) < tonumber(ARGV[3]) then
    redis.call('HSET', KEYS[1], f, ARGV[j + 2])
    if ARGV[j + 3] ~= '' then redis.call('HSET', KEYS[2], f, ARGV[j + 3]) end
    if ARGV[j + 4] ~= '' then redis.call('HSET', KEYS[3], f, ARGV[j + 4]) end
    if ARGV[j + 5] ~= '' then redis.call('HSET', KEYS[4], f, ARGV[j + 5]) end
    if ARGV[j + 6] ~= '' then redis.call('HSET', KEYS[5], f, ARGV[j + 6]) end
    redis.call('SADD', KEYS[6], f)
    redis.call('SADD', ARGV[2] .. ARGV[j + 1], f)
    changed = changed + 1
  end
end
if changed > 0 then redis.call('INCR', KEYS[7]) end
return changed
"#;

/// A person accepted these pins (`bulwark pins accept`): each is set as given, its
/// quarantine lifted, the other pins of the server left alone.
///
/// KEYS: as [`IMPORT`]. ARGV: server, the names-set key prefix, then per record as
/// [`IMPORT`] (withheld, reason and offered are ignored: an accepted pin has none).
pub const ACCEPT: &str = r#"
for j = 3, #ARGV, 7 do
  local f = ARGV[j]
  redis.call('HSET', KEYS[1], f, ARGV[j + 2])
  if ARGV[j + 3] ~= '' then redis.call('HSET', KEYS[2], f, ARGV[j + 3])
  else redis.call('HDEL', KEYS[2], f) end
  for i = 3, 5 do redis.call('HDEL', KEYS[i], f) end
  redis.call('SADD', KEYS[6], f)
  redis.call('SADD', ARGV[2] .. ARGV[j + 1], f)
end
redis.call('INCR', KEYS[7])
return 1
"#;

/// One server's pins: `{fields, digests, schemas, withheld, reasons, offered}`.
/// KEYS: digests, schemas, withheld, reasons, offered, server's fields.
pub const EXPORT: &str = r#"
local fs = redis.call('SMEMBERS', KEYS[6])
local out = {fs}
for i = 1, 5 do
  if #fs > 0 then out[i + 1] = redis.call('HMGET', KEYS[i], unpack(fs)) else out[i + 1] = {} end
end
return out
"#;

/// Writes the approvals document while this change still holds its lock, raises the
/// version and lets go. KEYS: document, version, lock. ARGV: owner, document. Returns the
/// new version, or -1 when the lock was lost (held past its lifetime): nothing written.
pub const APPROVALS_WRITE: &str = r#"
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return -1 end
redis.call('SET', KEYS[1], ARGV[2])
local v = redis.call('INCR', KEYS[2])
redis.call('DEL', KEYS[3])
return v
"#;
