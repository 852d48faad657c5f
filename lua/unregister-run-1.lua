--[[
  unregister-run: drop a run from a registry shard, only if nobody
  registered it again since the caller read it.

  KEYS[1]  registry shard   <prefix>:runs:{runs-<n>}

  ARGV[1]  the run's member (its hash-tag text <tenant>|<run>)
  ARGV[2]  the score the caller read

  Returns 1 when the member was removed, 0 when it is gone or now has
  another score (registered again: it stays).
]]
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
