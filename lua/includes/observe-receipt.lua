--[[
  observe-receipt: defines readReceipt(key), leaseState(receipt, now) and
  observation(code, receipt, now), the reading and the reply every receipt
  script shares. They touch only the key they are given, which the calling
  script takes from its KEYS.

  readReceipt(key)  HMGET of the observed fields of receipt hash `key`, as
    { status      'running' | 'completed' | 'failed'; '' when no receipt
      attempts    number, 0 when absent
      leaseUntil  lease_until_ms as a number, 0 when absent
      effect      '' when absent
      result      stored result text, '' when absent
      ambiguous   ambiguous_ms as stored, '' when unset }

  leaseState(receipt, now)  expired (0|1), remaining_ms of the lease of a
    running receipt on the server clock `now`; 0, 0 when not running.

  observation(code, receipt, now)  the reply
    { code, status, attempts, lease_expired (0|1), lease_remaining_ms,
      effect, result ('' unless completed), ambiguous_ms, now_ms, lease_until_ms }
    for `receipt` as read, or as the caller has updated it after a write.
]]
local function readReceipt(key)
  local f = redis.call('HMGET', key, 'status', 'attempts', 'lease_until_ms', 'effect', 'result', 'ambiguous_ms')
  return {
    status = f[1] or '',
    attempts = tonumber(f[2]) or 0,
    leaseUntil = tonumber(f[3]) or 0,
    effect = f[4] or '',
    result = f[5] or '',
    ambiguous = f[6] or '',
  }
end

local function leaseState(receipt, now)
  if receipt.status ~= 'running' then return 0, 0 end
  if receipt.leaseUntil <= now then return 1, 0 end
  return 0, receipt.leaseUntil - now
end

local function observation(code, receipt, now)
  local expired, remaining = leaseState(receipt, now)
  local result = ''
  if receipt.status == 'completed' then result = receipt.result end
  return { code, receipt.status, receipt.attempts, expired, remaining,
    receipt.effect, result, receipt.ambiguous, now, receipt.leaseUntil }
end
