--[[
  settle: defines settleReceipt(key, indexKey, receipt, now, ttl, fields,
  drop), the part complete and fail share once the caller's attempt holds
  the fence: stamp completed_ms and updated_ms with `now`, clear the lease,
  record a late settle when a claim had already reported the attempt
  ambiguous, write the caller's status and outcome (`fields`, a list of
  field, value pairs) and delete the fields it names in `drop`, and keep the
  receipt `ttl` ms from now (the run index at least that long, see
  keepRunKeyAtLeast in includes/ttl.lua). One HSET and
  one HDEL for all of it: each redis.call costs a script about a microsecond.

  Returns 2 when the settle is late (ambiguous_ms was set: late_settle_ms =
  now and late_settle_attempt = the attempt are written, ambiguous_ms is
  kept, and a late.<status> entry is appended to the history, see
  includes/history.lua), else 1. It touches only the keys it is given, which the
  calling script takes from its KEYS.

  fieldValue(fields, name) is the value after `name` in such a list, or nil.

  Also defines noteRefusedSettle(key, receipt, attempt, epoch, status,
  errorText, now), for a complete or fail whose fence was refused: when the
  receipt is in the caller's lifetime (same epoch) and a verdict settled the
  caller's attempt (an operator's resolve, or a reconcile's completed or
  not_started, found in the history), the settle is appended to the history
  as late.<status> with refused = true, so the trail shows what the attempt
  itself reported after the verdict. Nothing else is written. Returns true
  when it appended.
]]
--- @include "int-text"
--- @include "history"

local function fieldValue(fields, name)
  for i = 1, #fields - 1, 2 do
    if fields[i] == name then return fields[i + 1] end
  end
  return nil
end

local function settleReceipt(key, indexKey, receipt, now, ttl, fields, drop)
  local code = 1
  local nowText, ttlText = intText(now), intText(ttl)
  local set = { 'completed_ms', nowText, 'updated_ms', nowText }
  if receipt.ambiguous ~= '' then
    set[5], set[6], set[7], set[8] = 'late_settle_ms', nowText, 'late_settle_attempt', receipt.attempts
    code = 2
    appendHistory(key, {
      at = now, what = 'late.' .. fieldValue(fields, 'status'), by = redis.call('HGET', key, 'owner') or '',
      attempt = receipt.attempts, error = clipText(fieldValue(fields, 'error'), 500),
      ambiguous_ms = tonumber(receipt.ambiguous) })
  end
  for i = 1, #fields do set[#set + 1] = fields[i] end
  redis.call('HSET', key, unpack(set))
  redis.call('HDEL', key, 'lease_until_ms', unpack(drop))
  redis.call('PEXPIRE', key, ttlText)
  keepRunKeyAtLeast(indexKey, ttl)
  return code
end

local function noteRefusedSettle(key, receipt, attempt, epoch, status, errorText, now)
  local n = tonumber(attempt)
  if receipt.status == '' or receipt.epoch ~= epoch or n == nil or n > receipt.attempts then return false end
  if historyVerdictOn(key, n) == nil then return false end
  appendHistory(key, {
    -- The owner field names the caller only while its attempt is still the receipt's last.
    at = now, what = 'late.' .. status, by = (n == receipt.attempts and redis.call('HGET', key, 'owner')) or '', attempt = n,
    error = clipText(errorText, 500), refused = true })
  return true
end
