--[[
  limit-slots: the steps the scripts of an in-flight cap (limit-slot-*-3.lua)
  share, on the cap's own three keys, which every caller takes as its KEYS
  1 to 3 in this order (one hash tag) and passes in:
    state    hash: cap (k), name, kind = 'cap', seq (the arrival counter),
             h:<receipt key> (the holder's token), w:<receipt key>
             ('<kept until ms> <job to wake>')
    holders  zset: receipt key, score = lease deadline ms
    line     zset: receipt key, score = arrival seq

  slotKeysCorrupt(state, holders, line)  a TRC_CORRUPT reply when a key has the wrong type, else nil
  freeLapsed(state, holders, now)  frees the slots whose lease passed (their holders
                             stopped renewing): up to 100, oldest first
  dropStalePlaces(state, line, now)  drops places kept past their time from the head
                             of the line (up to 100): their jobs did not come back
  waitersToWake(state, line, free)  the jobs of the first `free` places in line: those
                             a slot is free for now, to be woken
  keepSlots(state, holders, line, now, untilMs, leaseMs)  keeps the three keys a lease past untilMs
]]
--- @include "observe-receipt"
--- @include "int-text"
--- @include "ttl"

local function slotKeysCorrupt(state, holders, line)
  return wrongType(state, 'hash') or wrongType(holders, 'zset') or wrongType(line, 'zset')
end

local function freeLapsed(state, holders, now)
  local lapsed = redis.call('ZRANGEBYSCORE', holders, '-inf', intText(now), 'LIMIT', 0, 100)
  for _, holder in ipairs(lapsed) do
    redis.call('ZREM', holders, holder)
    redis.call('HDEL', state, 'h:' .. holder)
  end
end

local function dropStalePlaces(state, line, now)
  for _, waiter in ipairs(redis.call('ZRANGE', line, 0, 99)) do
    local kept = redis.call('HGET', state, 'w:' .. waiter)
    local untilMs = kept and tonumber(string.match(kept, '^(%d+)'))
    if not untilMs or untilMs < now then
      redis.call('ZREM', line, waiter)
      redis.call('HDEL', state, 'w:' .. waiter)
    end
  end
end

local function waitersToWake(state, line, free)
  local jobs = {}
  if free <= 0 then return jobs end
  for _, waiter in ipairs(redis.call('ZRANGE', line, 0, free - 1)) do
    local kept = redis.call('HGET', state, 'w:' .. waiter)
    local job = kept and string.match(kept, '^%d+ (.*)$')
    if job and job ~= '' then jobs[#jobs + 1] = job end
  end
  return jobs
end

local function keepSlots(state, holders, line, now, untilMs, leaseMs)
  local ttl = untilMs - now + leaseMs
  keepAtLeast(state, ttl)
  keepAtLeast(holders, ttl)
  keepAtLeast(line, ttl)
end
