--[[
  count: defines countReceipt(countKey, key, receipt, now),
  recountReceipt(countKey, key, now), countMember(key), countScore(band, ms)
  and countExpiry(score),
  which keep a run's counting set up to date after a transition, so
  `tool-receipts stats` reads counts instead of receipts.

  The counting set (KEYS of the calling script, <prefix>:cnt:{<tenant>|<run>})
  is a sorted set with up to two members per receipt, named by the receipt
  key's part after the hash tag (<tool>:<argsHash>):
    <member>    score band * 1e13 + the server time the receipt expires (ms),
                band = status (running 0, completed 1, failed 2) * 3
                       + effect (resumable 0, opaque 1, anything else 2)
    ?<member>   only while the receipt is running and either reported
                ambiguous (ambiguous_ms set) or opaque: score 9 * 1e13 + the
                time it is ambiguous from (ambiguous_ms, else lease_until_ms)
  A receipt is live while its expiry is after now, and ambiguous while live
  with its ?-entry at or before now: the rule includes/observe-receipt.lua
  and tally-N.lua apply. Entries of expired receipts stay until the set
  itself expires, which is never before its last receipt (it is kept at
  least as long as every receipt counted in it).

  countScore(band, ms) is the score text of `ms` in `band`, countExpiry(score)
  the ms part back; countMember(key) the member name of receipt `key`.
  countReceipt takes the receipt's fields as the calling script left them
  (status, effect, leaseUntil, ambiguous); recountReceipt reads them back.
  Both read the receipt's time to live. A receipt that no longer exists has
  its entries removed.
]]
--- @include "ttl"
--- @include "observe-receipt"

local function countScore(band, ms)
  return string.format('%.0f', band * 1e13 + ms)
end

local function countExpiry(score)
  return tonumber(score) % 1e13
end

local function countMember(key)
  return string.match(key, '}:(.+)$') or key
end

local function countReceipt(countKey, key, receipt, now)
  local member = countMember(key)
  local status = ({ running = 0, completed = 1, failed = 2 })[receipt.status]
  local ttl = redis.call('PTTL', key)
  if status == nil or ttl == -2 then
    redis.call('ZREM', countKey, member, '?' .. member)
    return
  end
  local expiresAt = 1e13 - 1
  if ttl >= 0 then expiresAt = now + ttl end
  local effect = ({ resumable = 0, opaque = 1 })[receipt.effect] or 2
  redis.call('ZADD', countKey, countScore(status * 3 + effect, expiresAt), member)
  if receipt.status == 'running' and (receipt.ambiguous ~= '' or receipt.effect == 'opaque') then
    redis.call('ZADD', countKey, countScore(9, tonumber(receipt.ambiguous) or receipt.leaseUntil), '?' .. member)
  else
    redis.call('ZREM', countKey, '?' .. member)
  end
  if ttl >= 0 then keepAtLeast(countKey, ttl) else redis.call('PERSIST', countKey) end
end

local function recountReceipt(countKey, key, now)
  countReceipt(countKey, key, readReceipt(key), now)
end
