--[[
  inspect: read a receipt together with the server time and its TTL, so lease
  expiry is judged on the server clock. Read-only.

  KEYS[1]  receipt hash

  ARGV  none.

  Returns { now_ms, pttl, field1, value1, field2, value2, ... }
    pttl  -2 when the receipt does not exist (no fields follow),
          -1 when it has no TTL, otherwise milliseconds left.
  error 'TRC_CORRUPT <key>: is a <type>, not a hash' when KEYS[1] holds
    another type. (A hash with a bad status is returned as it is; the
    caller reports it as corrupt.)
]]
--- @include "server-now"
--- @include "observe-receipt"

local corrupt = wrongType(KEYS[1], 'hash')
if corrupt then return corrupt end
local now = serverNow()
local reply = { now, redis.call('PTTL', KEYS[1]) }
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields do reply[i + 2] = fields[i] end
return reply
