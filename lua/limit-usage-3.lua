--[[
  limit-usage: read one limit's count in the current window on the server
  clock, and its pending reservations whose deadline has passed. Read only.

  KEYS[1]  limit state    <prefix>:lim:<scope>:{<tag>}:<name>       (hash)
  KEYS[2]  pending        <prefix>:lim:<scope>:{<tag>}:<name>:due   (zset)
  KEYS[3]  committed      <prefix>:lim:<scope>:{<tag>}:<name>:done  (zset)
           (see includes/limit-state.lua)

  ARGV[1]  window length in ms (the definition's: a stored window of
           another length, or one that is over, reads as a new window)
  ARGV[2]  the most expired reservations to report
  ARGV[3]  the kind (fixed when absent), ARGV[4] max, ARGV[5] a bucket's
           burst: as limit-reserve-3.lua takes them (another kind, or a
           bucket of another max or burst, reads as a new count)

  Returns { now_ms, window_start_ms, resets_at_ms, used, pending, overdue,
            reset_ms, next_free_ms, n, id1, bindings1, receipt1, ..., idn, bindingsn, receiptn }
    used     as limit-reserve-3.lua counts it; 0 in a new window. With
             resets_at_ms and next_free_ms as limit-reserve-3.lua says.
    pending  what live reservations hold: those past their deadline are left
             out (a read never counts a share past its give-back bound)
    overdue  what those past their deadline hold, until a reserve or a
             settle decides them (committed if their attempt ran, else given
             back; see includes/limit-state.lua's overdueAmount).
    reset_ms       when an operator last reset the window (limit-reset-3.lua),
                   -1 when never or in an earlier window.
    n              expired pending reservations (of any window), each its
                   id, its run's bindings hash and its receipt, at most ARGV[2].
  error 'TRC_CORRUPT <key>: <why>' when a key has the wrong type or the
  state does not parse.
  Time comes only from TIME.
]]
--- @include "limit-smooth"

local s, now, corrupt = openLimitNow(KEYS[1], KEYS[2], KEYS[3], askedWindow(ARGV[3], ARGV[1], ARGV[4], ARGV[5]))
if corrupt then return corrupt end
viewWindow(KEYS[1], KEYS[3], s, now)
local expired, _, broken = expiredReservations(KEYS[1], KEYS[2], now, tonumber(ARGV[2]))
if broken then return broken end
local resetMs = -1
if not s.rolled then resetMs = tonumber(redis.call('HGET', KEYS[1], 'reset_ms')) or -1 end
if resetMs < s.start then resetMs = -1 end
local overdue = overdueAmount(KEYS[1], KEYS[2], s, now)
local reply = { now, s.start, s.resetsAt, s.used, s.pending - overdue, overdue, resetMs, s.nextFree or 0, #expired / 3 }
for i = 1, #expired do reply[#reply + 1] = expired[i] end
return reply
