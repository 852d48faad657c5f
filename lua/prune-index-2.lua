--[[
  prune-index: keep one run-index entry true to what the index promises
  (every live receipt of the run, scored by created_ms of its current
  lifetime), atomically with the read of the receipt, so a receipt created
  meanwhile keeps its entry.

  KEYS[1]  run index (sorted set)
  KEYS[2]  receipt hash the entry names

  ARGV[1]  the entry as the index holds it: the receipt's key (layouts 1 to
           4), or its compact member (layout 5, see includes/count-score.lua);
           '' or absent = KEYS[2] itself.

  Returns 1 when the entry was removed (the receipt has expired, or the
  entry is not the one its receipt's layout lists it by: an earlier
  lifetime's, of another layout), 2 when it was re-scored to the receipt's
  created_ms (an entry left by an earlier lifetime, or by a version that
  kept the first score), 0 when it was right or already gone. A receipt key that is not a readable hash, or a receipt a
  newer release wrote (see includes/observe-receipt.lua), is left alone.
  error 'TRC_CORRUPT <key>: <why>' when KEYS[1] is not a sorted set.
]]
--- @include "observe-receipt"

--- @include "count-score"

local corrupt = wrongType(KEYS[1], 'zset')
if corrupt then return corrupt end
local entry = ARGV[1]
if entry == nil or entry == '' then entry = KEYS[2] end
if redis.call('EXISTS', KEYS[2]) == 0 then return redis.call('ZREM', KEYS[1], entry) end
if wrongType(KEYS[2], 'hash') then return 0 end
local fields = redis.call('HMGET', KEYS[2], 'created_ms', 'schema')
if fields[2] and newerSchemaReply(KEYS[2], fields[2]) then return 0 end
if entry ~= indexMember(KEYS[2], isCompact(fields[2])) then return redis.call('ZREM', KEYS[1], entry) end
local created = tonumber(fields[1])
local score = redis.call('ZSCORE', KEYS[1], entry)
if created == nil or score == false or tonumber(score) == created then return 0 end
redis.call('ZADD', KEYS[1], created, entry)
return 2
