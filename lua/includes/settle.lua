--[[
  settle: defines settleReceipt(key, indexKey, receipt, now, ttl), the part
  complete and fail share once the caller's attempt holds the fence: stamp
  completed_ms and updated_ms with `now`, clear the lease, record a late
  settle when a claim had already reported the attempt ambiguous, and keep
  the receipt `ttl` ms from now (the run index at least that long). The
  caller then writes its status and outcome fields.

  Returns 2 when the settle is late (ambiguous_ms was set: late_settle_ms =
  now and late_settle_attempt = the attempt are written, ambiguous_ms is
  kept), else 1. It touches only the keys it is given, which the calling
  script takes from its KEYS.
]]
local function settleReceipt(key, indexKey, receipt, now, ttl)
  local code = 1
  redis.call('HSET', key, 'completed_ms', now, 'updated_ms', now)
  redis.call('HDEL', key, 'lease_until_ms')
  if receipt.ambiguous ~= '' then
    redis.call('HSET', key, 'late_settle_ms', now, 'late_settle_attempt', receipt.attempts)
    code = 2
  end
  redis.call('PEXPIRE', key, ttl)
  keepAtLeast(indexKey, ttl)
  return code
end
