--[[
  limit-reserve: defines reserveLimit(stateKey, dueKey, doneKey, args), the
  whole of a reserve (see limit-reserve-3.lua for what it does and returns),
  shared by the reserve alone and group commit's batch (commit-batch-N.lua).

  args  the reserve's arguments as limit-reserve-3.lua takes them in
        ARGV[1..11]

  Returns limit-reserve-3.lua's reply, or the TRC_CORRUPT error reply (then
  nothing was written). It touches only the keys it is given, which the
  calling script takes from its KEYS.
]]
--- @include "limit-smooth"

local function reserveLimit(stateKey, dueKey, doneKey, args)
  local asked = askedWindow(args[10], args[4], args[3], args[11])
  local s, now, corrupt = openLimitNow(stateKey, dueKey, doneKey, asked)
  if corrupt then return corrupt end
  local id, amount = args[1], tonumber(args[2])

  local existing, bad = limitRecord(stateKey, id)
  if bad then return bad end
  local expired, orphans, broken = expiredReservations(stateKey, dueKey, now, tonumber(args[9]))
  if broken then return broken end
  if #orphans > 0 then redis.call('ZREM', dueKey, unpack(orphans)) end
  local dropped = viewWindow(stateKey, doneKey, s, now)
  local code, deadline, reused, retry, held = 0, 0, 0, 0, 0
  local own = not existing and pendingFor(stateKey, s, args[6])
  if existing then
    code = 1
    deadline = tonumber(redis.call('ZSCORE', dueKey, id)) or 0
  elseif own then
    code, reused, id = 1, 1, own
    deadline = math.max(tonumber(redis.call('ZSCORE', dueKey, own)) or 0, now + tonumber(args[5]))
    redis.call('ZADD', dueKey, intText(deadline), own)
  elseif amount > capOf(s) then
    code = 2
  elseif fitsNow(s, now, amount) then
    code = 1
    deadline = now + tonumber(args[5])
    redis.call('HSET', stateKey, 'r:' .. id, recordText(s.gen, amount, 'p', args[6], args[7]), 'p:' .. args[6], id)
    redis.call('ZADD', dueKey, intText(deadline), id)
    s.pending = s.pending + amount
  else
    local onlyHeld
    retry, onlyHeld = retryAt(stateKey, dueKey, doneKey, s, now, amount, tonumber(args[5]))
    if onlyHeld then held = 1 end
  end
  if code ~= 1 then id = '' end

  forgetDropped(stateKey, doneKey, dropped)
  saveLimit(stateKey, s, doneKey, { 'max', args[3], 'name', args[8] })
  pruneCommitted(stateKey, doneKey, s)
  local keptUntil = keepLimit(stateKey, dueKey, doneKey, s, now)

  local reply = { code, now, s.start, s.resetsAt, s.used, s.pending, deadline, id, reused, retry, keptUntil, held,
    s.nextFree or 0, #expired / 3 }
  for i = 1, #expired do reply[#reply + 1] = expired[i] end
  return reply
end
