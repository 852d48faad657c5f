--[[
  limit-slots: the steps the scripts of an in-flight cap (limit-slot-*-3.lua)
  share, on the cap's own three keys, which every caller takes as its KEYS
  in this order (one hash tag):
    KEYS[1]  state    hash: cap (k), name, kind = 'cap', seq (the arrival
                      counter), h:<receipt key> (the holder's token),
                      w:<receipt key> ('<kept until ms> <job to wake>')
    KEYS[2]  holders  zset: receipt key, score = lease deadline ms
    KEYS[3]  line     zset: receipt key, score = arrival seq

  slotKeysCorrupt()          a TRC_CORRUPT reply when a key has the wrong type, else nil
  freeLapsed(now)            frees the slots whose lease passed (their holders
                             stopped renewing): up to 100, oldest first
  dropStalePlaces(now)       drops places kept past their time from the head
                             of the line (up to 100): their jobs did not come back
  waitersToWake(free)        the jobs of the first `free` places in line: those
                             a slot is free for now, to be woken
  keepSlots(now, untilMs, leaseMs)  keeps the three keys a lease past untilMs
]]
--- @include "observe-receipt"
--- @include "int-text"
--- @include "ttl"

local function slotKeysCorrupt()
  return wrongType(KEYS[1], 'hash') or wrongType(KEYS[2], 'zset') or wrongType(KEYS[3], 'zset')
end

local function freeLapsed(now)
  local lapsed = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', intText(now), 'LIMIT', 0, 100)
  for _, holder in ipairs(lapsed) do
    redis.call('ZREM', KEYS[2], holder)
    redis.call('HDEL', KEYS[1], 'h:' .. holder)
  end
end

local function dropStalePlaces(now)
  for _, waiter in ipairs(redis.call('ZRANGE', KEYS[3], 0, 99)) do
    local kept = redis.call('HGET', KEYS[1], 'w:' .. waiter)
    local untilMs = kept and tonumber(string.match(kept, '^(%d+)'))
    if not untilMs or untilMs < now then
      redis.call('ZREM', KEYS[3], waiter)
      redis.call('HDEL', KEYS[1], 'w:' .. waiter)
    end
  end
end

local function waitersToWake(free)
  local jobs = {}
  if free <= 0 then return jobs end
  for _, waiter in ipairs(redis.call('ZRANGE', KEYS[3], 0, free - 1)) do
    local kept = redis.call('HGET', KEYS[1], 'w:' .. waiter)
    local job = kept and string.match(kept, '^%d+ (.*)$')
    if job and job ~= '' then jobs[#jobs + 1] = job end
  end
  return jobs
end

local function keepSlots(now, untilMs, leaseMs)
  for i = 1, 3 do keepAtLeast(KEYS[i], untilMs - now + leaseMs) end
end
