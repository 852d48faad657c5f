--[[
  reconcile-lease: defines reconcileLeaseLeft(key, now), the milliseconds left
  on the reconcile lease of receipt hash `key` by the server clock `now`
  (0 when no reconcile is under way or its lease has run out). While it is
  above 0 one worker is asking the tool whether a lost attempt's effect
  landed, and nobody else may reconcile or run the call. It touches only the
  key it is given, which the calling script takes from its KEYS.
]]
local function reconcileLeaseLeft(key, now)
  local untilMs = tonumber(redis.call('HGET', key, 'reconciling_until_ms')) or 0
  if untilMs > now then return untilMs - now end
  return 0
end
