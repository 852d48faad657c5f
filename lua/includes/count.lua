--[[
  count: defines countReceipt(countKey, key, receipt, now, knownTtl,
  unchecked),
  recountReceipt(countKey, key, now) and keepCounted(receiptKey, indexKey,
  countKey, receipt, now, ttl), which keep a run's counting set (laid out as
  includes/count-score.lua says) up to date after a transition, so
  `tool-receipts stats` reads counts instead of receipts.

  countReceipt takes the receipt's fields as the calling script left them
  (status, effect, leaseUntil, ambiguous, and schema, which decides its
  member: countMember in includes/count-score.lua; or member, when the
  caller has made it already); recountReceipt reads them back.
  With `unchecked` true (the caller has not read the set's TYPE, and makes
  the set's first write of the script through it) the write goes through
  redis.pcall and, on a set of the wrong type, nothing is written and it
  returns the corrupt reply (refusedWrite in includes/observe-receipt.lua);
  and it leaves the set's expiry to the caller, who keeps it with
  keepRunKeyAtLeast once the receipt's own is set. Otherwise it returns
  nil.
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

local function countReceipt(countKey, key, receipt, now, knownTtl, unchecked)
  local member = receipt.member or countMember(key, isCompact(receipt.schema))
  local band = countBand(receipt.status, receipt.effect)
  local ttl = knownTtl or redis.call('PTTL', key)
  if band == nil or ttl == -2 then
    redis.call('ZREM', countKey, member, '?' .. member)
    return nil
  end
  local expiresAt = 1e13 - 1
  if ttl >= 0 then expiresAt = now + ttl end
  local score = intText(band * 1e13 + expiresAt)
  -- Unchecked (no TYPE read before), the set's first write goes through pcall and refuses a wrong type itself.
  local write = redis.call
  if unchecked then write = redis.pcall end
  local both = receipt.status == 'running' and (receipt.ambiguous ~= '' or receipt.effect == 'opaque')
  local added
  if both then
    -- Both entries in one ZADD: each redis.call costs about a microsecond.
    added = write('ZADD', countKey, score, member, intText(9e13 + (tonumber(receipt.ambiguous) or receipt.leaseUntil)), '?' .. member)
  else
    added = write('ZADD', countKey, score, member)
  end
  if type(added) == 'table' and added.err then return refusedWrite(countKey, 'zset', added) end
  if not both then redis.call('ZREM', countKey, '?' .. member) end
  -- Unchecked, the caller keeps the set's expiry itself, after the receipt's (so it is read after the receipt's is set).
  if unchecked then return nil end
  if ttl >= 0 then keepRunKeyAtLeast(countKey, ttl) else redis.call('PERSIST', countKey) end
  return nil
end

local function recountReceipt(countKey, key, now)
  countReceipt(countKey, key, readReceipt(key), now)
end

local function keepCounted(receiptKey, indexKey, countKey, receipt, now, ttl)
  local left = keepAtLeast(receiptKey, ttl, intText(ttl))
  keepRunKeyAtLeast(indexKey, ttl)
  countReceipt(countKey, receiptKey, receipt, now, left)
end
