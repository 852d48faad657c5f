--[[
  register-run: name a run in a registry shard, scored by the server clock,
  so `stats` finds its counting set. The score only moves forward.

  KEYS[1]  registry shard   <prefix>:runs:{runs-<n>}

  ARGV[1]  the run's member (its hash-tag text <tenant>|<run>)

  Returns the member's score afterwards (ms, server time).
]]
--- @include "server-now"

local now = serverNow()
local score = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if score == nil or score < now then
  redis.call('ZADD', KEYS[1], now, ARGV[1])
  score = now
end
return score
