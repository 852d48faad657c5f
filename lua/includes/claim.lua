--[[
  claim: defines claimReceipt(receiptKey, indexKey, breakerKey, countKey,
  args, now) and createReceipt(receiptKey, indexKey, countKey, args, now):
  claimReceipt is the whole of a claim (see claim-4.lua for what it does and
  returns), so the plain claim and a settle that carries the next call's
  claim (complete-claim-5.lua) decide by one piece of code.

  args  the claim's arguments as claim-4.lua takes them in ARGV[1..14]
        (lease, retention, owner, effect, tenant, run, tool, args hash,
        removal field, rejections field, epoch, job, layout, approval
        needed; a carried claim passes thirteen: no approval needed)
  now   the server clock (serverNow) of the calling script

  Returns claim-4.lua's reply: the observation followed by the breaker state,
  or the TRC_CORRUPT error reply (then nothing was written). It touches only
  the keys it is given, which the calling script takes from its KEYS.
]]
--- @include "ttl"
--- @include "observe-receipt"
--- @include "count"
--- @include "int-text"
--- @include "approval"

-- The claim that creates the receipt (no receipt, tool not removed), with no
-- TYPE read of the run index or the counting set: each refuses a wrong type at
-- its first write, which comes before any other, and the undo of what came
-- before is exact. The index entry is added only if new (NX), so a refused
-- counting set takes back exactly that; an entry an earlier lifetime left gets
-- its new score once the set has taken its write. Returns claim-4.lua's code-1
-- reply before the breaker state, or the corrupt reply with nothing written.
local function createReceipt(receiptKey, indexKey, countKey, args, now)
  local lease = tonumber(args[1])
  local ttl = lease + tonumber(args[2])
  local leaseUntil = now + lease
  -- Each value as text, formatted once (see includes/int-text.lua).
  local nowText, ttlText = intText(now), intText(ttl)
  local layout, member = args[13], nil
  -- The compact layout names the receipt by one short member in both run sets (includes/count-score.lua):
  -- the caller's, or made here once. The receipt keeps it while it runs (index_member), for its settle.
  if layout and string.sub(layout, 1, 2) == COMPACT_TEXT .. ':' then layout, member = COMPACT_TEXT, string.sub(layout, 3) end
  local schema = createdSchema(args[4], layout)
  if isCompact(schema) and (member == nil or member == '') then member = countMember(receiptKey, true) end
  local entry = member or receiptKey
  local listed = redis.pcall('ZADD', indexKey, 'NX', nowText, entry)
  if type(listed) == 'table' and listed.err then return refusedWrite(indexKey, 'zset', listed) end
  local refused = countReceipt(countKey, receiptKey, { status = 'running', effect = args[4], leaseUntil = leaseUntil, ambiguous = '', member = member }, now, ttl, true)
  if refused then
    if listed == 1 then redis.call('ZREM', indexKey, entry) end
    return refused
  end
  if listed == 0 then redis.call('ZADD', indexKey, nowText, entry) end
  -- One HSET for all of it: each redis.call costs a script about a microsecond. Layouts 4 and 5
  -- leave out the first eight values, the names its key holds (see includes/observe-receipt.lua),
  -- and layout 5 the next four too, two times that repeat created_ms (readers take them from it);
  -- one table either way, as a table grown after it is made costs the server a resize.
  local fields = {
    'tenant', args[5], 'run', args[6], 'tool', args[7], 'args_hash', args[8],
    'updated_ms', nowText, 'started_ms', nowText,
    'status', 'running', 'attempts', '1', 'lease_until_ms', intText(leaseUntil), 'owner', args[3],
    'effect', args[4], 'created_ms', nowText, 'epoch', args[11], 'schema', schema }
  if args[12] and args[12] ~= '' then
    fields[#fields + 1] = 'job:1'
    fields[#fields + 1] = args[12]
  end
  if member then
    fields[#fields + 1] = 'index_member'
    fields[#fields + 1] = member
  end
  redis.call('HSET', receiptKey, unpack(fields, (schema == COMPACT_SCHEMA and 13) or (schema >= LEAN_SCHEMA and 9) or 1))
  redis.call('PEXPIRE', receiptKey, ttlText)
  keepRunKeyAtLeast(indexKey, ttl)
  keepRunKeyAtLeast(countKey, ttl)
  return { 1, 'running', 1, 0, lease, args[4], '', '', now, leaseUntil, args[11] }
end

local function claimReceipt(receiptKey, indexKey, breakerKey, countKey, args, now)
  local receipt, corrupt = openReceiptHash(receiptKey, true)
  if corrupt then return corrupt end
  -- As with the receipt, the read reports a wrong type itself, before anything is written.
  local breaker = redis.pcall('HMGET', breakerKey, args[9], args[10])
  if breaker.err then return wrongType(breakerKey, 'hash') or corruptReply(breakerKey, breaker.err) end
  local removal = breaker[1] or ''
  if breaker[1] and removal == '' then removal = 'removed' end
  local rejections = tonumber(breaker[2]) or 0

  local reply
  if receipt.status == '' and removal == '' and args[14] == '1' then
    -- A call that needs approval never starts a lifetime nobody approved: the gate asks again.
    reply = observation(3, receipt, now)
  elseif receipt.status == '' and removal == '' then
    reply = createReceipt(receiptKey, indexKey, countKey, args, now)
    if reply.err then return reply end
  else
    -- Only a creating claim checks the run's keys by its writes; every other answer reads their types.
    local bad = wrongType(indexKey, 'zset') or wrongType(countKey, 'zset')
    if bad then return bad end
    if receipt.status == 'approved' then
      -- A person approved the call: this claim starts it (includes/approval.lua), unless the tool is removed.
      if removal ~= '' then reply = observation(2, { status = '', attempts = 0, leaseUntil = 0, effect = '', result = '', ambiguous = '', epoch = '' }, now)
      else reply = startApprovedLifetime(receiptKey, indexKey, countKey, receipt, args, now) end
    elseif receipt.status ~= '' then
      reply = observation(0, receipt, now)
    else
      reply = observation(2, receipt, now)
    end
  end
  reply[#reply + 1] = removal
  reply[#reply + 1] = rejections
  return reply
end
