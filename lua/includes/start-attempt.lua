--[[
  start-attempt: defines startAttempt(receiptKey, indexKey, countKey,
  receipt, now, lease, retention, owner, job, extra), which starts attempt
  n + 1 of a receipt's lifetime (its epoch is kept): the one way a takeover
  (reclaim-3.lua), a provider-keyed re-run (reclaim-keyed-3.lua) and a
  reconcile's not_started verdict (reconcile-settle-3.lua) start the next
  attempt.

  Writes attempts + 1, status running, lease_until_ms = now + lease, owner,
  updated_ms = started_ms = now, schema = keptSchema(receipt) (the new
  attempt writes this release's layout, or keeps a newer one the receipt
  already has: see includes/observe-receipt.lua),
  job:<n + 1> = job (the BullMQ job as JSON; none when '' or nil) and the
  field, value pairs of `extra`, the caller's own (keyed_rerun_ms,
  claim_token; nil for none). Deletes what the previous attempt left: error,
  tier, completed_ms, ambiguous_ms, resolved_ms and late_heartbeat_ms
  (late_settle_ms and late_settle_attempt stay as history, step:* fields for
  the new attempt to resume from). Scores the receipt in the run index by
  created_ms (now when absent), keeps the receipt and the run index at least
  lease + retention ms from now, and counts it (keepCounted,
  includes/count.lua).

  Updates `receipt` to the new attempt (attempts, status, leaseUntil,
  ambiguous, result) for the caller's reply. It touches only the keys it is
  given, which the calling script takes from its KEYS.
]]
--- @include "int-text"
--- @include "observe-receipt"
--- @include "count"

local function startAttempt(receiptKey, indexKey, countKey, receipt, now, lease, retention, owner, job, extra)
  local nowText = intText(now)
  receipt.attempts = redis.call('HINCRBY', receiptKey, 'attempts', 1)
  receipt.status, receipt.leaseUntil, receipt.ambiguous, receipt.result = 'running', now + lease, '', ''
  local fields = { 'status', 'running', 'lease_until_ms', intText(receipt.leaseUntil), 'owner', owner,
    'updated_ms', nowText, 'started_ms', nowText, 'schema', keptSchema(receipt) }
  local compact = isCompact(receipt.schema)
  if compact and not receipt.member then
    -- Running again, a compact receipt keeps its member at hand until it settles (index_member, includes/claim.lua).
    receipt.member = countMember(receiptKey, true)
    fields[#fields + 1] = 'index_member'
    fields[#fields + 1] = receipt.member
  end
  if job and job ~= '' then
    fields[#fields + 1] = 'job:' .. intText(receipt.attempts)
    fields[#fields + 1] = job
  end
  for i = 1, #(extra or {}) do fields[#fields + 1] = extra[i] end
  redis.call('HSET', receiptKey, unpack(fields))
  redis.call('HDEL', receiptKey, 'error', 'tier', 'completed_ms', 'ambiguous_ms', 'resolved_ms', 'late_heartbeat_ms')
  redis.call('ZADD', indexKey, tonumber(redis.call('HGET', receiptKey, 'created_ms')) or now, compact and receipt.member or receiptKey)
  keepCounted(receiptKey, indexKey, countKey, receipt, now, lease + retention)
end
