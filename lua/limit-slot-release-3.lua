--[[
  limit-slot-release: free the slot of an in-flight cap its holder holds
  (its attempt was settled), and name the jobs to wake: those first in line
  that a slot is free for now. The keys are laid out in
  includes/limit-slots.lua.

  KEYS[1]  cap state   <prefix>:lim:<scope>:{<tag>}:<name>          (hash)
  KEYS[2]  holders     <prefix>:lim:<scope>:{<tag>}:<name>:held     (zset)
  KEYS[3]  line        <prefix>:lim:<scope>:{<tag>}:<name>:line     (zset)

  ARGV[1]  the receipt key of the call
  ARGV[2]  the holder's token (a slot another delivery adopted is not freed)

  Returns { released, now_ms, held, waiting, job1, ..., jobn }
    released  1 when this freed the slot, 0 when the holder did not hold it
    held, waiting  slots held and places in line afterwards
    job1..n   the jobs (as the acquire kept them) of the first places in
              line a slot is free for, at most the free slots
  error 'TRC_CORRUPT <key>: <why>' when a key has the wrong type.
  Time comes only from TIME.
]]
--- @include "limit-slots"
--- @include "server-now"

local bad = slotKeysCorrupt(KEYS[1], KEYS[2], KEYS[3])
if bad then return bad end
local now = serverNow()
local receipt = ARGV[1]
local released = 0
if redis.call('ZSCORE', KEYS[2], receipt) and redis.call('HGET', KEYS[1], 'h:' .. receipt) == ARGV[2] then
  redis.call('ZREM', KEYS[2], receipt)
  redis.call('HDEL', KEYS[1], 'h:' .. receipt)
  released = 1
end
freeLapsed(KEYS[1], KEYS[2], now)
dropStalePlaces(KEYS[1], KEYS[3], now)
local held = redis.call('ZCARD', KEYS[2])
local free = (tonumber(redis.call('HGET', KEYS[1], 'cap')) or 0) - held
local reply = { released, now, held, redis.call('ZCARD', KEYS[3]) }
for _, job in ipairs(waitersToWake(KEYS[1], KEYS[3], free)) do reply[#reply + 1] = job end
return reply
