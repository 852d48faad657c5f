--[[
  prune-index: drop a run-index entry whose receipt has expired, atomically
  with the existence check so a receipt created meanwhile keeps its entry.

  KEYS[1]  run index (sorted set)
  KEYS[2]  receipt hash the entry names

  Returns 1 when the entry was removed, 0 when the receipt exists (kept) or
  the entry was already gone.
]]
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
return redis.call('ZREM', KEYS[1], KEYS[2])
