--[[
  settle: defines settleReceipt(key, indexKey, receipt, now, ttl, fields,
  drop), the part complete and fail share once the caller's attempt holds
  the fence: stamp completed_ms and updated_ms with `now`, clear the lease,
  record a late settle when a claim had already reported the attempt
  ambiguous, write the caller's status and outcome (`fields`, a list of
  field, value pairs) and delete the fields it names in `drop`, and keep the
  receipt `ttl` ms from now (the run index at least that long). One HSET and
  one HDEL for all of it: each redis.call costs a script about a microsecond.

  Returns 2 when the settle is late (ambiguous_ms was set: late_settle_ms =
  now and late_settle_attempt = the attempt are written, ambiguous_ms is
  kept), else 1; then the TTL as intText gives it, for the caller's
  countReceipt. It touches only the keys it is given, which the calling
  script takes from its KEYS.
]]
--- @include "int-text"

local function settleReceipt(key, indexKey, receipt, now, ttl, fields, drop)
  local code = 1
  local nowText, ttlText = intText(now), intText(ttl)
  local set = { 'completed_ms', nowText, 'updated_ms', nowText }
  if receipt.ambiguous ~= '' then
    set[5], set[6], set[7], set[8] = 'late_settle_ms', nowText, 'late_settle_attempt', receipt.attempts
    code = 2
  end
  for i = 1, #fields do set[#set + 1] = fields[i] end
  redis.call('HSET', key, unpack(set))
  redis.call('HDEL', key, 'lease_until_ms', unpack(drop))
  redis.call('PEXPIRE', key, ttlText)
  keepAtLeast(indexKey, ttl, ttlText)
  return code, ttlText
end
