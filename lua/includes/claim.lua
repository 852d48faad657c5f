--[[
  claim: defines claimReceipt(receiptKey, indexKey, breakerKey, countKey,
  args, now), the whole of a claim (see claim-4.lua for what it does and
  returns), so the plain claim and a settle that carries the next call's
  claim (complete-claim-5.lua) decide by one piece of code.

  args  the claim's arguments as claim-4.lua takes them in ARGV[1..12]
        (lease, retention, owner, effect, tenant, run, tool, args hash,
        removal field, rejections field, epoch, job)
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

local function claimReceipt(receiptKey, indexKey, breakerKey, countKey, args, now)
  local receipt, corrupt = openReceipt(receiptKey, indexKey, countKey, true)
  if corrupt then return corrupt end
  -- As with the receipt, the read reports a wrong type itself, before anything is written.
  local breaker = redis.pcall('HMGET', breakerKey, args[9], args[10])
  if breaker.err then return wrongType(breakerKey, 'hash') or corruptReply(breakerKey, breaker.err) end
  local removal = breaker[1] or ''
  if breaker[1] and removal == '' then removal = 'removed' end
  local rejections = tonumber(breaker[2]) or 0

  local reply
  if receipt.status == 'approved' then
    -- A person approved the call: this claim starts it (includes/approval.lua), unless the tool is removed.
    if removal ~= '' then reply = observation(2, { status = '', attempts = 0, leaseUntil = 0, effect = '', result = '', ambiguous = '', epoch = '' }, now)
    else reply = startApprovedLifetime(receiptKey, indexKey, countKey, receipt, args, now) end
  elseif receipt.status ~= '' then
    reply = observation(0, receipt, now)
  elseif removal ~= '' then
    reply = observation(2, receipt, now)
  else
    local lease = tonumber(args[1])
    local ttl = lease + tonumber(args[2])
    local leaseUntil = now + lease
    -- Each value as text, formatted once (see includes/int-text.lua).
    local nowText, ttlText = intText(now), intText(ttl)
    local fields = {
      'tenant', args[5], 'run', args[6], 'tool', args[7], 'args_hash', args[8],
      'status', 'running', 'attempts', '1', 'lease_until_ms', intText(leaseUntil), 'owner', args[3],
      'effect', args[4], 'created_ms', nowText, 'updated_ms', nowText, 'epoch', args[11], 'started_ms', nowText,
      'schema', createdSchema(args[4]) }
    -- One HSET for all of it: each redis.call costs a script about a microsecond.
    if args[12] and args[12] ~= '' then
      fields[#fields + 1] = 'job:1'
      fields[#fields + 1] = args[12]
    end
    redis.call('HSET', receiptKey, unpack(fields))
    redis.call('PEXPIRE', receiptKey, ttlText)
    redis.call('ZADD', indexKey, nowText, receiptKey)
    keepRunKeyAtLeast(indexKey, ttl)
    countReceipt(countKey, receiptKey, { status = 'running', effect = args[4], leaseUntil = leaseUntil, ambiguous = '' }, now, ttl)
    reply = { 1, 'running', 1, 0, lease, args[4], '', '', now, leaseUntil, args[11] }
  end
  reply[#reply + 1] = removal
  reply[#reply + 1] = rejections
  return reply
end
