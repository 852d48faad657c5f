--[[
  ttl: defines keepAtLeast(key, ttl), which raises the time to live of `key`
  to `ttl` milliseconds when it is lower and never shortens it. Receipts and
  run indexes use it so that no transition can bring an expiry forward (a
  key without an expiry reads as lower and gets one). It touches only the key
  it is given, which the calling script takes from its KEYS.

  keepAtLeast(key, ttl, ttlText) sets the expiry from ttlText, the TTL as
  intText (includes/int-text.lua) gives it, when the caller has it.

  Returns the key's time to live afterwards, as PTTL would read it (-2 when
  the key does not exist), so a caller that needs it next (countReceipt)
  does not read it again.
]]
local function keepAtLeast(key, ttl, ttlText)
  local left = redis.call('PTTL', key)
  if left >= ttl then return left end
  if redis.call('PEXPIRE', key, ttlText or ttl) == 1 then return ttl end
  return -2
end
