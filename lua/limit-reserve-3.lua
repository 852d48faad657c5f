--[[
  limit-reserve: reserve `amount` of one limit's window for one call, when
  it fits, and report the pending reservations whose deadline has passed
  (for the caller to settle: see limit-settle-2.lua).

  KEYS[1]  limit state    <prefix>:lim:<scope>:{<tag>}:<name>       (hash)
  KEYS[2]  pending        <prefix>:lim:<scope>:{<tag>}:<name>:due   (zset, score = deadline ms)
  KEYS[3]  committed      <prefix>:lim:<scope>:{<tag>}:<name>:done  (zset, score = window gen)
           (see includes/limit-state.lua)

  ARGV[1]  reservation id (random, minted by the caller; no spaces), used
           when the receipt has no pending reservation of its own
  ARGV[2]  amount: a whole number >= 1 (1 for a count, the call's cost for a budget)
  ARGV[3]  max: the most the window holds, a whole number >= 1
  ARGV[4]  window length in ms (whole number >= 1)
  ARGV[5]  bound in ms: how long the reservation waits for its claim
  ARGV[6]  the receipt key the reservation is for
  ARGV[7]  the bindings hash of that receipt's run  <prefix>:lbd:{<tenant>|<run>}
  ARGV[8]  the limit's name (kept in the state for readers)
  ARGV[9]  the most expired reservations to report

  Returns { code, now_ms, window_start_ms, resets_at_ms, used, pending,
            deadline_ms, id, reused, frees_at_ms, kept_until_ms, n,
            id1, bindings1, receipt1, ..., idn, bindingsn, receiptn }
    code 1  granted: the record r:<id> (pending) is written with
            p:<ARGV[6]> = id, the id is due at deadline_ms = now + ARGV[5],
            pending grew by the amount; reused 0. When the receipt already
            has a pending reservation in this window (a delivery of the same
            call made it, and died before its claim or is still on its way),
            that one is granted instead, reused 1: its id, its deadline moved
            to now + ARGV[5] if that is later, nothing else written (whoever
            holds it does not give it back blindly: see limit-settle-2.lua).
            A reservation id already recorded is answered granted again with
            its deadline (0 when committed) and nothing is written for it:
            a reserve sent twice reserves once.
    code 0  full: used + pending + amount > max; nothing reserved
            (deadline_ms 0). The window allows it again at resets_at_ms at
            the latest; frees_at_ms, when not 0, is earlier: the deadline by
            which enough pending reservations are given back if their calls
            do not run (see freesAt in includes/limit-state.lua).
    code 2  exceeds: amount > max; no window will ever hold it.
    id       the reservation granted ('' unless code 1).
    kept_until_ms  how long the keys are kept now (see keepLimit): the
             caller lists the count in its prefix's index until then.
    used     committed in the current window; pending: amounts of the live
             reservations of the current window (expired ones included until
             they are settled), after this call.
    n        expired pending reservations reported, at most ARGV[9]: each
             its id, its run's bindings hash and its receipt key.
  Every answer stores the current window (a new one starts used and
  pending at 0), max and name, drops records committed in earlier windows
  (100 at most) and due entries whose record is gone, and keeps the keys
  (see keepLimit). The expired reservations are read before this call's
  own (whose deadline is in the future).
  error 'TRC_CORRUPT <key>: <why>' when a key has the wrong type or the
  state does not parse; nothing written.
  Time comes only from TIME.
]]
--- @include "limit-state"

local s, now, corrupt = openLimitNow(KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[4]))
if corrupt then return corrupt end
local id, amount, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])

local existing, bad = limitRecord(KEYS[1], id)
if bad then return bad end
local expired, orphans, broken = expiredReservations(KEYS[1], KEYS[2], now, tonumber(ARGV[9]))
if broken then return broken end
if #orphans > 0 then redis.call('ZREM', KEYS[2], unpack(orphans)) end
local code, deadline, reused, frees = 0, 0, 0, 0
local own = not existing and pendingFor(KEYS[1], s, ARGV[6])
if existing then
  code = 1
  deadline = tonumber(redis.call('ZSCORE', KEYS[2], id)) or 0
elseif own then
  code, reused, id = 1, 1, own
  deadline = math.max(tonumber(redis.call('ZSCORE', KEYS[2], own)) or 0, now + tonumber(ARGV[5]))
  redis.call('ZADD', KEYS[2], intText(deadline), own)
elseif amount > max then
  code = 2
elseif s.used + s.pending + amount <= max then
  code = 1
  deadline = now + tonumber(ARGV[5])
  redis.call('HSET', KEYS[1], 'r:' .. id, recordText(s.gen, amount, 'p', ARGV[6], ARGV[7]), 'p:' .. ARGV[6], id)
  redis.call('ZADD', KEYS[2], intText(deadline), id)
  s.pending = s.pending + amount
else
  frees = freesAt(KEYS[1], KEYS[2], s, now, amount, max) or 0
end
if code ~= 1 then id = '' end

saveLimit(KEYS[1], s)
redis.call('HSET', KEYS[1], 'max', ARGV[3], 'name', ARGV[8])
pruneCommitted(KEYS[1], KEYS[3], s)
local keptUntil = keepLimit(KEYS[1], KEYS[2], KEYS[3], s, now)

local reply = { code, now, s.start, s.resetsAt, s.used, s.pending, deadline, id, reused, frees, keptUntil, #expired / 3 }
for i = 1, #expired do reply[#reply + 1] = expired[i] end
return reply
