--[[
  limit-state: defines wholeFields(stateKey, fields, names, count),
  openLimit(stateKey, dueKey, doneKey, asked, now),
  openLimitNow(stateKey, dueKey, doneKey, asked), limitRecord(stateKey,
  id), openReservation(stateKey, dueKey, doneKey, id), recordText(gen,
  amount, state, receiptKey, bindingsKey),
  saveLimit(stateKey, s, doneKey), pruneCommitted(stateKey, doneKey, s),
  keepLimit(stateKey, dueKey, doneKey, s, now),
  expiredReservations(stateKey, dueKey, now, most),
  pendingFor(stateKey, s, receiptKey), forgetPending(stateKey, id, record),
  pendingByDeadline(stateKey, dueKey, s, from, to),
  overdueAmount(stateKey, dueKey, s, now) and
  freesAt(stateKey, dueKey, s, now, amount, max): the reading and writing
  every limit script shares. They touch only the keys they are given, which
  the calling script takes from its KEYS.

  One limit's count for one tenant, run or the whole fleet is three keys of
  one hash tag:
    state   hash  gen, kind, window_ms, window_len, used, pending, max,
                  burst, tat_ms, tat_rem, name, reset_ms,
                  r:<id> = the record of reservation <id>, and
                  p:<receipt key> = the id of the receipt's pending
                  reservation (at most one: a redelivery of the call finds
                  and reuses it instead of reserving a second share)
    due     zset  the pending reservations, scored by their deadline (ms)
    done    zset  the committed reservations, scored by their window's gen
                  (kind fixed) or by when they were committed (ms; the
                  other kinds: see includes/limit-smooth.lua)

  A fixed window (kind 'fixed', the default of a state that names none) is
  fixed on the server clock: it starts at a multiple of its length (now -
  now % window_len) and resets at start + window_len. `gen` counts windows:
  it grows by one whenever the window a script is told (by the clock, a new
  window length, or another kind; for a bucket another max or burst too) is
  not the one stored, and then used and pending start again at 0 (and a
  bucket's tat at 0). A record carries the gen it was reserved in; it counts
  towards used or pending only while that gen is the stored one. Sliding
  windows and buckets keep one gen until their definition changes.

  wholeFields(stateKey, fields, names, count)  true, or nil and the corrupt
    reply naming the first of the first `count` of `names` whose value in
    `fields` (an HMGET reply of `names`) is there and not a whole number >= 0.

  openLimit(stateKey, dueKey, doneKey, asked, now)  the state as read,
    moved to the current window (in the table only: saveLimit writes it), as
    { gen, kind, start, len, resetsAt, used, pending, max, burst, tatMs,
    tatRem, rolled (true when moved), clearDone (true when the committed
    list starts anew) }, or nil and the corrupt reply when a key has the
    wrong type or a counter is not a whole number. `asked` is the
    definition as { kind, len, max, burst }; nil keeps the stored window and
    kind (release and commit judge no window). For a sliding window or a
    bucket, start is now - len (resetsAt is set by includes/limit-smooth.lua).

  limitRecord(stateKey, id)  the record of reservation `id` as
    { gen, amount, state ('p' pending | 'c' committed), receipt, bindings },
    false when there is none, or nil and the corrupt reply when it does not
    parse.

  openLimitNow(stateKey, dueKey, doneKey, asked)  the opening of a
    script that judges the window by the clock: openLimit at the server's
    time now (TIME), returned as `s, now, corrupt`.

  openReservation(stateKey, dueKey, doneKey, id)  the opening of a script
    that moves one reservation and judges no time (the window is the one
    stored): the stored state (openLimit with no window) and the record of
    `id`, or a reply the script returns at once having written nothing: the
    corrupt reply when either does not read, { 0 } when `id` has no record.

  recordText(...)  a record as stored: '<gen> <amount> <p|c> <receipt key>
    <bindings key>' (the keys hold no spaces: every component is encoded).

  saveLimit(stateKey, s, doneKey, extra)  writes gen, kind, window_ms,
    window_len, used, pending, tat_ms, tat_rem and burst, and the field /
    value pairs of the list `extra` when given, in one HSET; when
    s.clearDone, first deletes every committed record listed in doneKey,
    and doneKey.

  pruneCommitted(stateKey, doneKey, s)  deletes up to 100 records committed
    in earlier windows (nothing can give them back into a window that is over).

  keepLimit(...)  keeps the three keys at least until the later of the
    window's reset and the last pending deadline, plus one window length, so
    a pending reservation's record outlives its deadline by a whole window
    (whoever touches the limit in that time settles it). Returns that time
    (ms on the server clock).

  expiredReservations(stateKey, dueKey, now, most)  the pending
    reservations whose deadline has passed by `now`, at most `most`, oldest
    deadline first, as a flat list { id1, bindings1, receipt1, id2, ... }
    (bindings: the run's bindings hash, where a settle asks whether the
    reservation was bound; receipt: the receipt it is for), and the due ids
    without a record (their state expired first: a writer drops them); or
    nil, nil and the corrupt reply for a record that does not parse. Reads only.

  pendingFor(stateKey, s, receiptKey)  the id and record of the receipt's
    pending reservation in the current window (p:<receipt key>), or nil when
    there is none (or the index names a record that is gone, committed, or
    of an earlier window: a reserve then makes a new one). Reads only.

  forgetPending(stateKey, id, record)  drops p:<record.receipt> when it names
    `id`: the reservation is pending no more (committed or given back).

  pendingByDeadline(stateKey, dueKey, s, from, to)  the current window's
    pending reservations due between `from` and `to` (ZRANGEBYSCORE bounds),
    deadline first, at most 1,000, each { deadline, amount }. Reads only.

  overdueAmount(stateKey, dueKey, s, now)  what the current window's pending
    reservations past their deadline hold (at most the first 1,000 of them
    are summed): shares about to be settled, which reads do not count as
    held. Reads only.

  freesAt(stateKey, dueKey, s, now, amount, max)  when `amount` would fit if
    every reservation still pending were given back at its deadline, oldest
    first: the first deadline by which enough is freed, or nil when pending
    shares do not decide it (what is committed already leaves no room, or
    more than 1,000 would have to go). Reads only.
]]
--- @include "observe-receipt"
--- @include "int-text"
--- @include "ttl"
--- @include "server-now"

local function wholeFields(stateKey, fields, names, count)
  for i = 1, count do
    local text = fields[i]
    if text and not string.find(text, '^%d+$') then
      return nil, corruptReply(stateKey, names[i] .. ' is not a whole number')
    end
  end
  return true, nil
end

local function openLimit(stateKey, dueKey, doneKey, asked, now)
  local bad = wrongType(stateKey, 'hash') or wrongType(dueKey, 'zset') or wrongType(doneKey, 'zset')
  if bad then return nil, bad end
  -- The kind is read in the same HMGET, last: every field before it is a whole number.
  local names = { 'gen', 'window_ms', 'window_len', 'used', 'pending', 'max', 'burst', 'tat_ms', 'tat_rem', 'kind' }
  local f = redis.call('HMGET', stateKey, unpack(names))
  local ok, corrupt = wholeFields(stateKey, f, names, #names - 1)
  if not ok then return nil, corrupt end
  local kind = f[10] or 'fixed'
  local s = { gen = tonumber(f[1]) or 0, start = tonumber(f[2]), len = tonumber(f[3]),
    used = tonumber(f[4]) or 0, pending = tonumber(f[5]) or 0, max = tonumber(f[6]), burst = tonumber(f[7]),
    tatMs = tonumber(f[8]) or 0, tatRem = tonumber(f[9]) or 0, kind = kind, rolled = false, clearDone = false }
  if asked then
    local start = now - asked.len
    if asked.kind == 'fixed' then start = now - (now % asked.len) end
    local moved = s.len ~= asked.len or s.kind ~= asked.kind
    if asked.kind == 'fixed' then moved = moved or s.start ~= start end
    -- A bucket's time is kept in 1/max ms: another max or burst is another bucket.
    if asked.kind == 'bucket' then moved = moved or s.max ~= asked.max or s.burst ~= asked.burst end
    if moved then
      -- Committed records are listed by window gen (fixed) or by time (the others): another kind starts the list anew.
      s.clearDone = s.kind ~= asked.kind or asked.kind ~= 'fixed'
      s.gen, s.len, s.used, s.pending, s.tatMs, s.tatRem, s.rolled = s.gen + 1, asked.len, 0, 0, 0, 0, true
    end
    s.start, s.kind, s.max, s.burst = start, asked.kind, asked.max, asked.burst
  end
  if s.start and s.len then s.resetsAt = s.start + s.len end
  return s, nil
end

local function limitRecord(stateKey, id)
  local text = redis.call('HGET', stateKey, 'r:' .. id)
  if not text then return false, nil end
  local gen, amount, state, receipt, bindings = string.match(text, '^(%d+) (%d+) ([pc]) (%S+) (%S+)$')
  if not gen then return nil, corruptReply(stateKey, 'the record of reservation ' .. id .. ' does not parse') end
  return { gen = tonumber(gen), amount = tonumber(amount), state = state, receipt = receipt, bindings = bindings }, nil
end

local function openLimitNow(stateKey, dueKey, doneKey, asked)
  local now = serverNow()
  local s, corrupt = openLimit(stateKey, dueKey, doneKey, asked, now)
  return s, now, corrupt
end

local function openReservation(stateKey, dueKey, doneKey, id)
  local s, corrupt = openLimit(stateKey, dueKey, doneKey, nil, 0)
  if corrupt then return nil, nil, corrupt end
  local record, bad = limitRecord(stateKey, id)
  if bad then return nil, nil, bad end
  if not record then return nil, nil, { 0 } end
  return s, record, nil
end

local function recordText(gen, amount, state, receiptKey, bindingsKey)
  return intText(gen) .. ' ' .. intText(amount) .. ' ' .. state .. ' ' .. receiptKey .. ' ' .. bindingsKey
end

local function saveLimit(stateKey, s, doneKey, extra)
  if s.clearDone then
    local ids = redis.call('ZRANGE', doneKey, 0, -1)
    -- In slices: unpack of a very long list would overflow Lua's stack.
    for from = 1, #ids, 1000 do
      local fields = {}
      for i = from, math.min(from + 999, #ids) do fields[#fields + 1] = 'r:' .. ids[i] end
      redis.call('HDEL', stateKey, unpack(fields))
    end
    redis.call('DEL', doneKey)
    s.clearDone = false
  end
  local fields = { 'gen', intText(s.gen), 'window_ms', intText(s.start), 'window_len', intText(s.len),
    'used', intText(s.used), 'pending', intText(s.pending), 'kind', s.kind, 'tat_ms', intText(s.tatMs),
    'tat_rem', intText(s.tatRem) }
  if s.burst then
    fields[#fields + 1] = 'burst'
    fields[#fields + 1] = intText(s.burst)
  end
  if extra then
    for i = 1, #extra do fields[#fields + 1] = extra[i] end
  end
  redis.call('HSET', stateKey, unpack(fields))
end

local function pruneCommitted(stateKey, doneKey, s)
  local old = redis.call('ZRANGEBYSCORE', doneKey, '-inf', '(' .. intText(s.gen), 'LIMIT', 0, 100)
  if #old == 0 then return end
  local fields = {}
  for i = 1, #old do fields[i] = 'r:' .. old[i] end
  redis.call('HDEL', stateKey, unpack(fields))
  redis.call('ZREM', doneKey, unpack(old))
end

local function keepLimit(stateKey, dueKey, doneKey, s, now)
  local keepUntil = s.resetsAt
  local last = redis.call('ZRANGE', dueKey, -1, -1, 'WITHSCORES')
  if last[2] and tonumber(last[2]) > keepUntil then keepUntil = tonumber(last[2]) end
  local ttl = keepUntil + s.len - now
  keepAtLeast(stateKey, ttl)
  keepAtLeast(dueKey, ttl)
  keepAtLeast(doneKey, ttl)
  return keepUntil + s.len
end

local function expiredReservations(stateKey, dueKey, now, most)
  local ids = redis.call('ZRANGEBYSCORE', dueKey, '-inf', intText(now), 'LIMIT', 0, most)
  local out, orphans = {}, {}
  for _, id in ipairs(ids) do
    local record, corrupt = limitRecord(stateKey, id)
    if corrupt then return nil, nil, corrupt end
    if record then
      out[#out + 1] = id
      out[#out + 1] = record.bindings
      out[#out + 1] = record.receipt
    else
      orphans[#orphans + 1] = id
    end
  end
  return out, orphans, nil
end

local function pendingFor(stateKey, s, receiptKey)
  local id = redis.call('HGET', stateKey, 'p:' .. receiptKey)
  if not id then return nil, nil end
  local record = limitRecord(stateKey, id)
  if not record or record.state ~= 'p' or record.gen ~= s.gen then return nil, nil end
  return id, record
end

local function forgetPending(stateKey, id, record)
  local field = 'p:' .. record.receipt
  if redis.call('HGET', stateKey, field) == id then redis.call('HDEL', stateKey, field) end
end

local function pendingByDeadline(stateKey, dueKey, s, from, to)
  local ids = redis.call('ZRANGEBYSCORE', dueKey, from, to, 'WITHSCORES', 'LIMIT', 0, 1000)
  local out = {}
  for i = 1, #ids, 2 do
    local record = limitRecord(stateKey, ids[i])
    if record and record.state == 'p' and record.gen == s.gen then
      out[#out + 1] = { deadline = tonumber(ids[i + 1]), amount = record.amount }
    end
  end
  return out
end

local function overdueAmount(stateKey, dueKey, s, now)
  local sum = 0
  for _, r in ipairs(pendingByDeadline(stateKey, dueKey, s, '-inf', intText(now))) do sum = sum + r.amount end
  return sum
end

local function freesAt(stateKey, dueKey, s, now, amount, max)
  local needed = s.used + s.pending + amount - max
  if s.used + amount > max or needed <= 0 then return nil end
  local freed = 0
  for _, r in ipairs(pendingByDeadline(stateKey, dueKey, s, '-inf', '+inf')) do
    freed = freed + r.amount
    if freed >= needed then
      if r.deadline < now then return now end
      return r.deadline
    end
  end
  return nil
end
