--[[
  approval-gate: the step a call of a tool with an approval rule takes before
  its claim. It asks for approval (creating the receipt as awaiting_approval)
  when the call needs it and no receipt exists, and answers what the call
  does about a receipt in an approval state. See includes/approval.lua.

  KEYS[1]  receipt hash   <prefix>:rcpt:{<tenant>|<run>}:<tool>:<argsHash>
  KEYS[2]  run index      <prefix>:run:{<tenant>|<run>}
  KEYS[3]  counting set   <prefix>:cnt:{<tenant>|<run>}

  ARGV[1]  '1' when this call needs approval, '0' when its rule says no
  ARGV[2]  epoch for a new lifetime (a fresh random token)
  ARGV[3]  tenant    ARGV[4] run    ARGV[5] tool    ARGV[6] args hash
  ARGV[7]  effect: 'resumable' | 'opaque' | 'transactional' (as a claim records
           it; the claim that starts an approved call keeps it, see
           includes/approval.lua)
  ARGV[8]  reason ('' = none)
  ARGV[9]  how long the approval may take, ms (positive integer)
  ARGV[10] what an approver is shown, as JSON ('' = nothing stored)
  ARGV[11] retention in milliseconds (positive integer)
  ARGV[12] the BullMQ job as JSON {"queue","prefix","id"} ('' = none)
  ARGV[13] the layout a receipt this gate creates is written in: '4' for
           layout 4 (no tenant, run, tool, args_hash fields: the key names
           them), '5' for the compact layout (as 4, listed in the run index
           by its compact member, see includes/count-score.lua), '2' or
           absent for layout 3 with those fields (see
           includes/approval.lua); the fields go first, as a claim writes them

  Returns { answer, epoch, requested_ms, expires_ms, by, note, denied_reason, now_ms, created }
    answer  'claim'     no approval state (no receipt and no approval needed,
                        or an ordinary receipt): claim as usual; nothing written
            'await'     awaiting approval and not expired (created = 1 when
                        this call created it: epoch ARGV[2], requested_ms =
                        now, expires_ms = now + ARGV[9], history entry
                        approval.requested); the job is recorded as
                        approval_job
            'approved'  approved, not started: claim, and the claim starts it
            'denied'    denied (by, note, denied_reason); an awaiting receipt
                        found expired is denied here first (by 'expiry',
                        denied_reason 'expired', history approval.expired;
                        created = 1 for the call that wrote that)
  error 'TRC_CORRUPT <key>: <why>' when a key has the wrong type; nothing written.

  Time comes only from TIME. An awaiting receipt lives expires + retention.
]]
--- @include "server-now"
--- @include "observe-receipt"
--- @include "history"
--- @include "ttl"
--- @include "approval"

local now = serverNow()
local bad = wrongType(KEYS[1], 'hash') or wrongType(KEYS[2], 'zset') or wrongType(KEYS[3], 'zset')
if bad then return bad end
local a = approvalFields(KEYS[1])
local retention = tonumber(ARGV[11])

local function answer(what, created)
  return { what, a.epoch, redis.call('HGET', KEYS[1], 'approval_requested_ms') or '', intText(a.expiresMs), a.by, a.note,
    a.deniedReason, now, created }
end

if a.status == '' then
  if ARGV[1] ~= '1' then return { 'claim', '', '', '', '', '', '', now, 0 } end
  local expires = now + tonumber(ARGV[9])
  local nowText = intText(now)
  -- Layouts 4 and 5 leave out the first eight values, the names its key holds.
  local schema = createdSchema('transactional', ARGV[13])
  local fields = { 'tenant', ARGV[3], 'run', ARGV[4], 'tool', ARGV[5], 'args_hash', ARGV[6], 'status', 'awaiting_approval',
    'attempts', '0', 'effect', ARGV[7], 'epoch', ARGV[2], 'created_ms', nowText, 'updated_ms', nowText,
    'approval_reason', ARGV[8], 'approval_requested_ms', nowText, 'approval_expires_ms', intText(expires),
    'schema', schema }
  if ARGV[10] ~= '' then fields[#fields + 1] = 'approval_shown'; fields[#fields + 1] = ARGV[10] end
  if ARGV[12] ~= '' then fields[#fields + 1] = 'approval_job'; fields[#fields + 1] = ARGV[12] end
  redis.call('HSET', KEYS[1], unpack(fields, schema >= LEAN_SCHEMA and 9 or 1))
  redis.call('PEXPIRE', KEYS[1], intText(expires - now + retention))
  redis.call('ZADD', KEYS[2], nowText, indexMember(KEYS[1], isCompact(schema)))
  keepRunKeyAtLeast(KEYS[2], expires - now + retention)
  appendHistory(KEYS[1], { at = now, what = 'approval.requested', by = ARGV[5], attempt = 0, note = clipText(ARGV[8], 1000) })
  a.epoch, a.expiresMs = ARGV[2], expires
  return answer('await', 1)
end
if a.status == 'awaiting_approval' then
  if now < a.expiresMs then
    if ARGV[12] ~= '' then redis.call('HSET', KEYS[1], 'approval_job', ARGV[12]) end
    return answer('await', 0)
  end
  local nowText = intText(now)
  redis.call('HSET', KEYS[1], 'status', 'denied', 'approval_decision', 'denied', 'approval_by', 'expiry',
    'approval_denied_reason', 'expired', 'approval_decided_ms', nowText, 'updated_ms', nowText)
  keepAtLeast(KEYS[1], retention)
  appendHistory(KEYS[1], { at = now, what = 'approval.expired', by = 'expiry', attempt = 0 })
  a.by, a.deniedReason = 'expiry', 'expired'
  return answer('denied', 1)
end
if a.status == 'approved' then return answer('approved', 0) end
if a.status == 'denied' then return answer('denied', 0) end
return { 'claim', a.epoch, '', '', '', '', '', now, 0 }
