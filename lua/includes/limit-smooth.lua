--[[
  limit-smooth: the two windows that do not reset all at once, on the state
  includes/limit-state.lua reads. Defines askedWindow(kind, len, max, burst),
  viewWindow(stateKey, doneKey, s, now), forgetDropped(stateKey, doneKey,
  ids), capOf(s), fitsNow(s, now, amount),
  retryAt(stateKey, dueKey, doneKey, s, now, amount, boundMs),
  commitNow(stateKey, doneKey, s, now, id, amount), bucketAhead(s, now) and
  bucketTime(s, units). They touch only the keys
  they are given, which the calling script takes from its KEYS.

  Both count a pending reservation as taken now, for as long as it is
  pending, and a committed one from the moment it was committed (done is
  scored by that time, ms on the server clock). The wrapper commits a
  reservation of these kinds when its attempt ends, so that moment is never
  before the execution it counts (docs/limits.md).

  sliding  used = what was committed in the last len ms (committed at a
           time > now - len); a call fits when used + pending + amount <=
           max. So no stretch of len ms ever holds more than max
           executions. A give-back takes a unit out, pending or committed.
  bucket   GCRA: tat (tat_ms + tat_rem / max ms) is when the committed
           units are all paid back at one unit every len / max ms; a call
           fits when (tat - now) * max + (pending + amount) * len <= burst *
           len, in whole units of 1/max ms (exact while burst * len <= 2^52,
           which the definition checks). A commit moves tat to max(tat, now)
           + amount * len / max. A committed unit is never given back: a
           later commit may have relied on it, and a bucket given units back
           could let more than burst run at once.

  askedWindow(kind, len, max, burst)  the `asked` of openLimit, from a
    script's ARGV (kind nil or '' is 'fixed').

  bucketAhead(s, now)  how far a bucket's tat is ahead of now, in 1/max ms
    (0 when it is not): what its committed units still hold.

  bucketTime(s, units)  the first whole ms by which the bucket has paid
    back all but `units` (1/max ms) of what it is ahead.

  viewWindow(stateKey, doneKey, s, now)  sets s.used (what committed units
    hold now), s.resetsAt (when they are all free: a fixed window's reset,
    the last one committed + len, tat) and s.nextFree (when the next one
    frees by time alone; nil when none is held), and returns the ids of
    committed records that no longer count (sliding: committed at or
    before now - len; bucket: the same, kept only to answer a second commit)
    and what they held. Reads only.

  forgetDropped(stateKey, doneKey, ids)  deletes those records.

  capOf(s)  the most one call may use: max, or a bucket's burst.

  fitsNow(s, now, amount)  whether amount more fits beside what is
    committed and pending, as viewWindow left s.

  retryAt(stateKey, dueKey, doneKey, s, now, amount, boundMs)  for a call
    that does not fit: when it may, at the earliest, and whether only
    pending reservations stand in the way then ('held': they are given back
    by that deadline if their calls do not run), as `time, held`. A fixed
    window answers its reset (or the pending deadline before it, see
    freesAt in includes/limit-state.lua); when pending shares decide it and
    more than 1,000 would have to go, now + boundMs (by then every pending
    one is past its deadline). A sliding window answers the moment enough
    committed units leave it, a bucket when enough is paid back; when
    pending shares alone stand in the way (their calls may be running, so
    they are never 'held'), the earlier of the first pending deadline and
    the soonest a running call's share can make room (it ends now: a window
    later, or a unit's pay-back later for a bucket; a second at least).

  commitNow(stateKey, doneKey, s, now, id, amount)  counts a pending
    reservation of the stored gen as committed now, in s (pending, used,
    tat; saveLimit writes them) and in doneKey.
]]
--- @include "limit-state"

local function askedWindow(kind, len, max, burst)
  if kind == nil or kind == '' then kind = 'fixed' end
  return { kind = kind, len = tonumber(len), max = tonumber(max), burst = tonumber(burst) }
end

-- How far the bucket's tat is ahead of now, in 1/max ms (0 when it is not).
local function bucketAhead(s, now)
  if s.tatMs > now or (s.tatMs == now and s.tatRem > 0) then return (s.tatMs - now) * s.max + s.tatRem end
  return 0
end

-- The first whole ms t with tat_ms + (tat_rem - units) / max <= t: when `units` (1/max ms) more are paid back.
local function bucketTime(s, units)
  return s.tatMs + math.ceil((s.tatRem - units) / s.max)
end

local function viewWindow(stateKey, doneKey, s, now)
  if s.kind == 'fixed' then
    if s.used > 0 then s.nextFree = s.resetsAt end
    return {}, 0
  end
  local ids = redis.call('ZRANGEBYSCORE', doneKey, '-inf', intText(now - s.len))
  local dropped = 0
  for _, id in ipairs(ids) do
    local record = limitRecord(stateKey, id)
    if record and record.gen == s.gen then dropped = dropped + record.amount end
  end
  if s.kind == 'sliding' then
    s.used = s.used - dropped
    local first = redis.call('ZRANGEBYSCORE', doneKey, '(' .. intText(now - s.len), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    local last = redis.call('ZREVRANGEBYSCORE', doneKey, '+inf', '(' .. intText(now - s.len), 'WITHSCORES', 'LIMIT', 0, 1)
    s.resetsAt = now
    if last[2] and s.used > 0 then s.resetsAt = tonumber(last[2]) + s.len end
    if first[2] and s.used > 0 then s.nextFree = tonumber(first[2]) + s.len end
  else
    local ahead = bucketAhead(s, now)
    local held = math.ceil(ahead / s.len)
    s.used = held
    s.resetsAt = now
    if ahead > 0 then
      s.resetsAt = bucketTime(s, 0)
      s.nextFree = bucketTime(s, (held - 1) * s.len)
    end
  end
  return ids, dropped
end

local function forgetDropped(stateKey, doneKey, ids)
  for from = 1, #ids, 1000 do
    local fields, members = {}, {}
    for i = from, math.min(from + 999, #ids) do
      fields[#fields + 1] = 'r:' .. ids[i]
      members[#members + 1] = ids[i]
    end
    redis.call('HDEL', stateKey, unpack(fields))
    redis.call('ZREM', doneKey, unpack(members))
  end
end

local function capOf(s)
  if s.kind == 'bucket' then return s.burst end
  return s.max
end

local function fitsNow(s, now, amount)
  if s.kind == 'bucket' then
    if s.pending + amount > s.burst then return false end
    return bucketAhead(s, now) + (s.pending + amount) * s.len <= s.burst * s.len
  end
  return s.used + s.pending + amount <= s.max
end

local function retryAt(stateKey, dueKey, doneKey, s, now, amount, boundMs)
  local cap = capOf(s)
  -- When time alone makes room, with the pending shares as they are (nil: it cannot).
  local byTime
  if s.kind == 'fixed' then
    byTime = s.resetsAt
  elseif s.kind == 'bucket' then
    -- tat - now <= (burst - pending - amount) * len / max.
    if s.pending + amount <= s.burst then byTime = math.max(now, bucketTime(s, (s.burst - s.pending - amount) * s.len)) end
  else
    local needed, freed = s.used + s.pending + amount - cap, 0
    local ids = redis.call('ZRANGEBYSCORE', doneKey, '(' .. intText(now - s.len), '+inf', 'WITHSCORES', 'LIMIT', 0, 1000)
    for i = 1, #ids, 2 do
      local record = limitRecord(stateKey, ids[i])
      if record and record.gen == s.gen then freed = freed + record.amount end
      if freed >= needed then
        byTime = tonumber(ids[i + 1]) + s.len
        break
      end
    end
  end
  local frees = freesAt(stateKey, dueKey, s, now, amount, cap)
  if s.kind ~= 'fixed' then
    -- These kinds' pending shares are of calls running (committed when they end) or about to run, so none is
    -- promised back ('held' is a fixed window's only). When they alone stand in the way, the soonest one makes
    -- room is its call ending now: a unit's pay-back later for a bucket, a window later for a sliding window;
    -- never sooner than a second, so a call waiting on long ones is not asked again and again meanwhile.
    local soonest = byTime
    if soonest == nil then
      soonest = now + math.max(1000, s.kind == 'bucket' and math.ceil(s.len / s.max) or s.len)
      if frees and frees < soonest then soonest = frees end
    end
    return soonest, false
  end
  if frees and (byTime == nil or frees < byTime) then return frees, true end
  if byTime then return byTime, false end
  return now + boundMs, s.used + amount <= cap
end

local function commitNow(stateKey, doneKey, s, now, id, amount)
  s.pending = s.pending - amount
  if s.kind == 'sliding' then
    s.used = s.used + amount
    s.resetsAt = now + s.len
  elseif s.kind == 'bucket' then
    if bucketAhead(s, now) == 0 then s.tatMs, s.tatRem = now, 0 end
    -- Exact: tat_rem + amount * len stays below 2^53 (amount <= burst, burst * len <= 2^52).
    local units = s.tatRem + amount * s.len
    local whole = math.floor(units / s.max)
    local rest = units - whole * s.max
    if rest < 0 then whole, rest = whole - 1, rest + s.max elseif rest >= s.max then whole, rest = whole + 1, rest - s.max end
    s.tatMs, s.tatRem = s.tatMs + whole, rest
    s.resetsAt = bucketTime(s, 0)
  end
  local score = intText(s.gen)
  if s.kind ~= 'fixed' then score = intText(now) end
  redis.call('ZADD', doneKey, score, id)
end
