--[[
  limit-slot-release: defines releaseSlot(stateKey, holdersKey, lineKey,
  args), the whole of a slot's release (see limit-slot-release-3.lua for
  what it does and returns), shared by the release alone and group
  commit's batch (commit-batch-N.lua).

  args  the release's arguments as limit-slot-release-3.lua takes them in
        ARGV[1..3]

  Returns limit-slot-release-3.lua's reply, or the TRC_CORRUPT error reply
  (then nothing was written). It touches only the keys it is given, which
  the calling script takes from its KEYS.
]]
--- @include "limit-slots"
--- @include "server-now"

local function releaseSlot(stateKey, holdersKey, lineKey, args)
  local bad = slotKeysCorrupt(stateKey, holdersKey, lineKey)
  if bad then return bad end
  local now = serverNow()
  local receipt = args[1]
  local released = 0
  if redis.call('ZSCORE', holdersKey, receipt) and redis.call('HGET', stateKey, 'h:' .. receipt) == args[2] then
    redis.call('ZREM', holdersKey, receipt)
    redis.call('HDEL', stateKey, 'h:' .. receipt)
    released = 1
  end
  -- Leaving the line too: a place the call holds for this very job (its call will not come back for it).
  local waker = args[3]
  if waker and waker ~= '' then
    local place = redis.call('HGET', stateKey, 'w:' .. receipt)
    if place and string.sub(place, -(#waker + 1)) == ' ' .. waker then
      redis.call('ZREM', lineKey, receipt)
      redis.call('HDEL', stateKey, 'w:' .. receipt)
    end
  end
  freeLapsed(stateKey, holdersKey, now)
  dropStalePlaces(stateKey, lineKey, now)
  local held = redis.call('ZCARD', holdersKey)
  local free = (tonumber(redis.call('HGET', stateKey, 'cap')) or 0) - held
  local reply = { released, now, held, redis.call('ZCARD', lineKey) }
  for _, job in ipairs(waitersToWake(stateKey, lineKey, free)) do reply[#reply + 1] = job end
  return reply
end
