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

  keepRunKeyAtLeast(key, ttl) does the same for a key of the run (its index
  and its counting set, which only need to outlive its receipts), but when
  it raises the expiry it adds headroom: an eighth of `ttl`, at most an
  hour. The run's next transitions then find enough left and write nothing,
  so the run's keys cost one PEXPIRE each per headroom instead of one per
  transition; they may outlive the run's last receipt by that much.
]]
--- @include "int-text"

local function keepAtLeast(key, ttl, ttlText)
  local left = redis.call('PTTL', key)
  if left >= ttl then return left end
  if redis.call('PEXPIRE', key, ttlText or ttl) == 1 then return ttl end
  return -2
end

local function keepRunKeyAtLeast(key, ttl)
  if redis.call('PTTL', key) >= ttl then return end
  redis.call('PEXPIRE', key, intText(ttl + math.min(math.floor(ttl / 8), 3600000)))
end
