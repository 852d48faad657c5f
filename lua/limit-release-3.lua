--[[
  limit-release: give a reservation back: its call did not execute (a
  replay, a wait, a refusal by another limit, a revoked or never-started
  attempt), or it was committed and its attempt then settled as never
  started.

  KEYS[1]  limit state    <prefix>:lim:<scope>:{<tag>}:<name>       (hash: loses the record)
  KEYS[2]  pending        <prefix>:lim:<scope>:{<tag>}:<name>:due   (zset: a pending id leaves it)
  KEYS[3]  committed      <prefix>:lim:<scope>:{<tag>}:<name>:done  (zset: a committed id leaves it)
           (the layout: includes/limit-state.lua)

  ARGV[1]  reservation id

  Returns { code }
    code 1  a pending reservation given back: its record and due entry
            deleted (and the receipt's p:<receipt key> when it names it); when reserved in the stored window, pending shrank by
            its amount.
    code 2  a committed reservation given back: its record deleted; when
            committed in the stored window, used shrank by its amount
            (a bucket's tat stays: a committed unit is not given back to a
            bucket, see includes/limit-smooth.lua).
    code 0  unknown: given back already, or its window's records are gone
            (that window's count is over); nothing written.
  error 'TRC_CORRUPT <key>: <why>' as includes/limit-state.lua's
  openReservation answers it (nothing written, no time judged).
]]
--- @include "limit-state"

local s, record, answered = openReservation(KEYS[1], KEYS[2], KEYS[3], ARGV[1])
if answered then return answered end

redis.call('HDEL', KEYS[1], 'r:' .. ARGV[1])
if record.state == 'p' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  forgetPending(KEYS[1], ARGV[1], record)
  if record.gen == s.gen then redis.call('HSET', KEYS[1], 'pending', intText(s.pending - record.amount)) end
  return { 1 }
end
redis.call('ZREM', KEYS[3], ARGV[1])
if record.gen == s.gen and s.kind ~= 'bucket' then redis.call('HSET', KEYS[1], 'used', intText(s.used - record.amount)) end
return { 2 }
