--[[
  approval: defines approvalFields(key), startApprovedLifetime(receiptKey,
  indexKey, countKey, receipt, args, now) and the approval states of a
  receipt, for the gate a call that needs approval passes (approval-gate-3.lua),
  a person's decision (decide-approval-3.lua) and the claim that starts an
  approved call (includes/claim.lua).

  States (status field), all written with schema = STATE_SCHEMA (3), or
  LEAN_SCHEMA (4) or COMPACT_SCHEMA (5) when the keyspace writes that layout (see
  includes/observe-receipt.lua), so a release that does not know them
  refuses the receipt as written by a newer release instead of misreading it:
    awaiting_approval  created by the gate; nothing has run
    approved           a person said yes; attempt 1 not started yet
    denied             a person said no, or nobody answered before
                       approval_expires_ms (approval_denied_reason 'expired');
                       settled: the call never runs in this lifetime
  Fields (besides tenant, run, tool, args_hash (not in layout 4), effect,
  epoch, created_ms, updated_ms, attempts = 0):
    approval_reason        why it needs approval ('' = none given)
    approval_shown         JSON of what the tool's redact hook returned
                           (absent when the tool has none: the arguments
                           are never copied into the receipt)
    approval_requested_ms  approval_expires_ms   server times (TIME)
    approval_job           the BullMQ job last parked on it, as JSON
                           {"queue","prefix","id"}
    approval_decision      'approved' | 'denied', once decided
    approval_by  approval_note  approval_source  approval_decided_ms
    approval_denied_reason 'expired' for an expiry
    approval_epoch         after the start: the epoch the approval named

  approvalFields(key)  HMGET of the approval fields above, as a table
    (approvedEpoch false when approval_epoch is absent, so it never equals a
    caller's epoch).

  startApprovedLifetime  starts attempt 1 of an approved receipt: status
    running, attempts 1, lease, owner, started_ms, epoch = the claim's new
    epoch (args[11], so a claim whose reply is lost releases exactly it; the
    approved epoch is kept as approval_epoch), job:1, schema =
    createdSchema(effect, layout) as a claim creating the receipt writes it
    (from here on an ordinary receipt): LEAN_SCHEMA or COMPACT_SCHEMA for a
    receipt of layout 4 or 5 (it has no key fields to read as layout 2), STATE_SCHEMA for a
    'transactional' call (a release reading only layout 2 would take it for
    opaque), else RECEIPT_SCHEMA. Returns claim-4.lua's code-1 reply, before
    the breaker state.
]]
--- @include "int-text"
--- @include "ttl"
--- @include "count"
--- @include "observe-receipt"

local function approvalFields(key)
  local f = redis.call('HMGET', key, 'status', 'epoch', 'args_hash', 'approval_expires_ms', 'approval_decision',
    'approval_by', 'approval_note', 'approval_decided_ms', 'approval_denied_reason', 'approval_job', 'schema',
    'approval_epoch')
  return {
    status = f[1] or '', epoch = f[2] or '', argsHash = f[3] or '', expiresMs = tonumber(f[4]) or 0,
    decision = f[5] or '', by = f[6] or '', note = f[7] or '', decidedMs = f[8] or '', deniedReason = f[9] or '',
    job = f[10] or '', schema = f[11], approvedEpoch = f[12] or false,
  }
end

local function startApprovedLifetime(receiptKey, indexKey, countKey, receipt, args, now)
  local lease = tonumber(args[1])
  local ttl = lease + tonumber(args[2])
  local leaseUntil = now + lease
  local nowText = intText(now)
  local effect = receipt.effect
  if effect == '' then effect = args[4] end
  local schema = createdSchema(effect, receipt.schema)
  local fields = { 'status', 'running', 'attempts', '1', 'lease_until_ms', intText(leaseUntil), 'owner', args[3],
    'updated_ms', nowText, 'started_ms', nowText, 'approval_epoch', receipt.epoch, 'epoch', args[11],
    'schema', schema }
  if args[12] and args[12] ~= '' then
    fields[#fields + 1] = 'job:1'
    fields[#fields + 1] = args[12]
  end
  -- A compact receipt keeps its member at hand while it runs (index_member, includes/claim.lua).
  local member = isCompact(schema) and countMember(receiptKey, true) or nil
  if member then
    fields[#fields + 1] = 'index_member'
    fields[#fields + 1] = member
  end
  redis.call('HSET', receiptKey, unpack(fields))
  redis.call('ZADD', indexKey, tonumber(redis.call('HGET', receiptKey, 'created_ms')) or now, member or receiptKey)
  keepCounted(receiptKey, indexKey, countKey, { status = 'running', effect = effect, leaseUntil = leaseUntil, ambiguous = '', member = member }, now, ttl)
  return { 1, 'running', 1, 0, lease, effect, '', '', now, leaseUntil, args[11] }
end
