--[[
  count: defines countReceipt(countKey, key, receipt, now, knownTtl),
  recountReceipt(countKey, key, now) and keepCounted(receiptKey, indexKey,
  countKey, receipt, now, ttl), which keep a run's counting set (laid out as
  includes/count-score.lua says) up to date after a transition, so
  `tool-receipts stats` reads counts instead of receipts.

  countReceipt takes the receipt's fields as the calling script left them
  (status, effect, leaseUntil, ambiguous); recountReceipt reads them back.
  Both read the receipt's time to live (unless the caller passes the one it
  just set as knownTtl) and keep the set at least as long (with headroom,
  keepRunKeyAtLeast in includes/ttl.lua), so it never expires before its last
  receipt (entries of expired receipts stay until then, and no longer
  count). A receipt that no longer exists has its entries removed.

  keepCounted is how a transition that leaves a receipt running ends: it
  keeps the receipt at least `ttl` ms from now (keepAtLeast), its run index
  likewise (keepRunKeyAtLeast), and counts the receipt as `receipt` now
  stands, with the time to live keepAtLeast left.
]]
--- @include "ttl"
--- @include "observe-receipt"
--- @include "count-score"
--- @include "int-text"

local function countReceipt(countKey, key, receipt, now, knownTtl)
  local member = countMember(key)
  local band = countBand(receipt.status, receipt.effect)
  local ttl = knownTtl or redis.call('PTTL', key)
  if band == nil or ttl == -2 then
    redis.call('ZREM', countKey, member, '?' .. member)
    return
  end
  local expiresAt = 1e13 - 1
  if ttl >= 0 then expiresAt = now + ttl end
  local score = intText(band * 1e13 + expiresAt)
  if receipt.status == 'running' and (receipt.ambiguous ~= '' or receipt.effect == 'opaque') then
    -- Both entries in one ZADD: each redis.call costs about a microsecond.
    redis.call('ZADD', countKey, score, member, intText(9e13 + (tonumber(receipt.ambiguous) or receipt.leaseUntil)), '?' .. member)
  else
    redis.call('ZADD', countKey, score, member)
    redis.call('ZREM', countKey, '?' .. member)
  end
  if ttl >= 0 then keepRunKeyAtLeast(countKey, ttl) else redis.call('PERSIST', countKey) end
end

local function recountReceipt(countKey, key, now)
  countReceipt(countKey, key, readReceipt(key), now)
end

local function keepCounted(receiptKey, indexKey, countKey, receipt, now, ttl)
  local left = keepAtLeast(receiptKey, ttl, intText(ttl))
  keepRunKeyAtLeast(indexKey, ttl)
  countReceipt(countKey, receiptKey, receipt, now, left)
end
