--[[
  limit-bind: defines bindLimit(receiptKey, bindingsKey, args), the whole of
  a bind (see limit-bind-2.lua for what it does and returns), shared by the
  bind alone and group commit's batch (commit-batch-N.lua).

  args  the bind's arguments as limit-bind-2.lua takes them in ARGV[1..3], and ARGV[4] when sent

  Returns limit-bind-2.lua's reply, or an error reply (then nothing was
  written). It touches only the keys it is given, which the calling script
  takes from its KEYS.
]]
--- @include "observe-receipt"
--- @include "limit-bindings"
--- @include "int-text"

local function bindLimit(receiptKey, bindingsKey, args)
  local receipt, corrupt = openReceiptHash(receiptKey)
  if corrupt then return corrupt end
  corrupt = wrongType(bindingsKey, 'hash')
  if corrupt then return corrupt end

  local id, field = args[1], args[2]
  local value = redis.call('HGET', bindingsKey, id)
  if value == revokedMark() then return { 0, '' } end
  if value == receiptKey then
    -- Bound to this receipt already. For this very attempt (a concurrent delivery's settle bound it to the running
    -- attempt before this bind came): bound. For an earlier attempt (a takeover that reused the share its lifetime's
    -- earlier attempt bound, and maybe ran under), or by a release that named no attempt: counted by this very id,
    -- which the caller commits and never gives back, as this attempt's end must not take back that count.
    if redis.call('HGET', receiptKey, bindingAttemptField(field)) == intText(receipt.attempts) then return { 1, '' } end
    return { 2, id }
  end
  if value then return redis.error_reply('TRC_CORRUPT ' .. bindingsKey .. ': reservation ' .. id .. ' is bound to another receipt') end
  if receipt.status ~= 'running' then return { 3, '' } end
  -- Sent beside the claim that may create the attempt: binds only the attempt that claim started.
  if args[4] and args[4] ~= '' and (receipt.epoch ~= args[4] or receipt.attempts ~= 1) then return { 3, '' } end

  local holder = redis.call('HGET', receiptKey, field)
  if holder and holder ~= id then
    redis.call('HSET', bindingsKey, id, revokedMark())
    keepBindings(bindingsKey, args[3])
    return { 2, holder }
  end
  redis.call('HSET', receiptKey, field, id, bindingAttemptField(field), intText(receipt.attempts))
  redis.call('HSET', bindingsKey, id, receiptKey)
  keepBindings(bindingsKey, args[3])
  return { 1, '' }
end
