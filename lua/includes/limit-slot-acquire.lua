--[[
  limit-slot-acquire: defines acquireSlot(stateKey, holdersKey, lineKey,
  args), the whole of a slot's acquire (see limit-slot-acquire-3.lua for
  what it does and returns), shared by the acquire alone and group commit's
  batch (commit-batch-N.lua).

  args  the acquire's arguments as limit-slot-acquire-3.lua takes them in
        ARGV[1..9]

  Returns limit-slot-acquire-3.lua's reply, or the TRC_CORRUPT error reply
  (then nothing was written). It touches only the keys it is given, which
  the calling script takes from its KEYS.

  grantSlot(stateKey, holdersKey, lineKey, receipt, token, now, deadline,
    leaseMs, held)  records receipt as a holder with token until deadline,
    keeps the keys, and answers the granted reply (held: the holders after it).
]]
--- @include "limit-slots"
--- @include "server-now"

local function grantSlot(stateKey, holdersKey, lineKey, receipt, token, now, deadline, leaseMs, held)
  redis.call('ZADD', holdersKey, intText(deadline), receipt)
  redis.call('HSET', stateKey, 'h:' .. receipt, token)
  keepSlots(stateKey, holdersKey, lineKey, now, deadline, leaseMs)
  return { 1, now, deadline, held, 0, 0 }
end

local function acquireSlot(stateKey, holdersKey, lineKey, args)
  local bad = slotKeysCorrupt(stateKey, holdersKey, lineKey)
  if bad then return bad end
  local now = serverNow()
  local receipt, cap, leaseMs, token = args[1], tonumber(args[2]), tonumber(args[3]), args[8]

  freeLapsed(stateKey, holdersKey, now)
  dropStalePlaces(stateKey, lineKey, now)
  redis.call('HSET', stateKey, 'cap', args[2], 'name', args[7], 'kind', 'cap')

  local deadline = now + leaseMs

  if redis.call('ZSCORE', holdersKey, receipt) then
    if args[9] == '1' or redis.call('HGET', stateKey, 'h:' .. receipt) == token then
      return grantSlot(stateKey, holdersKey, lineKey, receipt, token, now, deadline, leaseMs, redis.call('ZCARD', holdersKey))
    end
    return { 3, now, 0, redis.call('ZCARD', holdersKey), 0, 0 }
  end

  local held = redis.call('ZCARD', holdersKey)
  local rank = redis.call('ZRANK', lineKey, receipt)
  local ahead = rank or redis.call('ZCARD', lineKey)
  if held < cap and ahead < cap - held then
    redis.call('ZREM', lineKey, receipt)
    redis.call('HDEL', stateKey, 'w:' .. receipt)
    return grantSlot(stateKey, holdersKey, lineKey, receipt, token, now, deadline, leaseMs, held + 1)
  end

  local first = redis.call('ZRANGE', holdersKey, 0, 0, 'WITHSCORES')
  -- No holder: the free slots are kept for calls ahead in line, which take them or lose their places; ask
  -- again in a lease (a release wakes the calls first in line sooner).
  local retryAt = tonumber(first[2]) or (now + leaseMs)
  if args[4] ~= 'wait' then return { 0, now, 0, held, -1, retryAt } end
  if not rank then
    redis.call('ZADD', lineKey, redis.call('HINCRBY', stateKey, 'seq', 1), receipt)
  end
  local placeUntil = now + tonumber(args[6])
  redis.call('HSET', stateKey, 'w:' .. receipt, intText(placeUntil) .. ' ' .. args[5])
  keepSlots(stateKey, holdersKey, lineKey, now, math.max(placeUntil, retryAt), leaseMs)
  return { 0, now, 0, held, ahead, retryAt }
end
