--[[
  ttl: defines keepAtLeast(key, ttl), which raises the time to live of `key`
  to `ttl` milliseconds when it is lower and never shortens it. Receipts and
  run indexes use it so that no transition can bring an expiry forward (a
  key without an expiry reads as lower and gets one). It touches only the key
  it is given, which the calling script takes from its KEYS.
]]
local function keepAtLeast(key, ttl)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
