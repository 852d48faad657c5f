--[[
  register: defines registerRun(registryKey, member, now), the whole of
  register-run-1.lua (see it for what it does), shared with the group
  commit batch (commit-batch-N.lua), which registers a fresh run in the same
  script call as its first claim.

  Returns the member's score afterwards (ms, server time), or the WRONGTYPE
  error reply when the registry shard is not a sorted set (nothing written).
  It touches only the key it is given, which the calling script takes from
  its KEYS.
]]

local function registerRun(registryKey, member, now)
  local score = redis.pcall('ZSCORE', registryKey, member)
  if type(score) == 'table' and score.err then return score end
  score = tonumber(score)
  if score == nil or score < now then
    redis.call('ZADD', registryKey, now, member)
    score = now
  end
  return score
end
