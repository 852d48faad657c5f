--[[
  limit-commit: defines commitLimit(stateKey, dueKey, doneKey, args), the
  whole of a commit (see limit-commit-3.lua for what it does and returns),
  shared by the commit alone and group commit's batch (commit-batch-N.lua).

  args  the commit's arguments as limit-commit-3.lua takes them: ARGV[1]

  Returns limit-commit-3.lua's reply, or the TRC_CORRUPT error reply (then
  nothing was written). It touches only the keys it is given, which the
  calling script takes from its KEYS.
]]
--- @include "limit-smooth"

local function commitLimit(stateKey, dueKey, doneKey, args)
  local s, record, answered = openReservation(stateKey, dueKey, doneKey, args[1])
  if answered then return answered end
  if record.state == 'c' then return { 2 } end

  redis.call('ZREM', dueKey, args[1])
  forgetPending(stateKey, args[1], record)
  if record.gen == s.gen and s.kind ~= 'fixed' then
    local now = serverNow()
    commitNow(stateKey, doneKey, s, now, args[1], record.amount)
    saveLimit(stateKey, s, doneKey)
    redis.call('HSET', stateKey, 'r:' .. args[1], recordText(record.gen, record.amount, 'c', record.receipt, record.bindings))
    -- Counted from now, so kept longer than the reserve said: the caller lists the count that much longer.
    return { 1, keepLimit(stateKey, dueKey, doneKey, s, now), now, s.resetsAt }
  elseif record.gen == s.gen then
    redis.call('HSET', stateKey, 'r:' .. args[1], recordText(record.gen, record.amount, 'c', record.receipt, record.bindings),
      'pending', intText(s.pending - record.amount), 'used', intText(s.used + record.amount))
    redis.call('ZADD', doneKey, intText(record.gen), args[1])
    -- The window's first commit creates its committed list: kept as long as the count it belongs to, since
    -- no reserve may come after it to keep it (a run's limit, a window's last call). A window that counted a
    -- commit already has its list, so only its first commit looks.
    if s.used == 0 and redis.call('ZCARD', doneKey) == 1 then keepAtLeast(doneKey, redis.call('PTTL', stateKey)) end
  else
    redis.call('HDEL', stateKey, 'r:' .. args[1])
  end
  return { 1 }
end
