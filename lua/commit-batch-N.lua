--[[
  commit-batch: group commit. The claims and completes that different jobs
  of one worker send in the same tick, in one script call, so the fixed cost
  of a script call and of a socket write is paid once for the batch. Each
  entry runs exactly as claim-4.lua or complete-4.lua would run it alone, in
  the order given, so an entry sees what the entries before it wrote.

  KEYS[4 * i - 3 .. 4 * i]  the i-th entry's receipt hash, run index,
           breaker hash and counting set (the KEYS of claim-4.lua and of
           complete-4.lua). Entries may belong to different runs, so this is
           the one script whose keys span several hash tags: the store sends
           it to a single node only, or on a Cluster only with entries whose
           keys hash to one slot (never a cross-slot call).

  ARGV[1]  the number of entries n (n >= 1, and #KEYS = 4 * n)
  then, per entry in order:
    kind   'claim' | 'complete'
    count  how many arguments follow for this entry
    the entry's arguments: claim-4.lua's ARGV[1..12] for a claim,
           complete-4.lua's ARGV[1..5] for a complete

  Returns one reply per entry, in order: what claim-4.lua or complete-4.lua
  would have returned for it, except that an entry whose script would have
  answered an error (TRC_CORRUPT, TRC_VERSION) answers { -1, <that error's
  text> } instead, so one corrupt receipt fails its own entry only (nothing
  was written for it, as alone).
  error 'TRC_BATCH <why>' when the layout above does not hold; nothing written.

  Time comes only from TIME, read once: every entry sees the same now.
]]
--- @include "server-now"
--- @include "claim"
--- @include "complete"

local n = tonumber(ARGV[1])
if n == nil or n < 1 or #KEYS ~= 4 * n then
  return redis.error_reply('TRC_BATCH ' .. tostring(ARGV[1]) .. ' entries for ' .. #KEYS .. ' keys')
end
-- The layout is checked whole before anything is written.
local entries = {}
local at = 2
for i = 1, n do
  local kind, count = ARGV[at], tonumber(ARGV[at + 1])
  if (kind ~= 'claim' and kind ~= 'complete') or count == nil or at + 1 + count > #ARGV then
    return redis.error_reply('TRC_BATCH entry ' .. i .. ' is not <claim|complete> <count> <arguments>')
  end
  entries[i] = { kind, { unpack(ARGV, at + 2, at + 1 + count) } }
  at = at + 2 + count
end
if at ~= #ARGV + 1 then return redis.error_reply('TRC_BATCH ' .. (#ARGV + 1 - at) .. ' arguments after the last entry') end

local now = serverNow()
local replies = {}
for i = 1, n do
  local kind, args = entries[i][1], entries[i][2]
  local k = 4 * (i - 1)
  local reply
  if kind == 'claim' then
    reply = claimReceipt(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], args, now)
  else
    reply = completeReceipt(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], args, now)
  end
  if reply.err then reply = { -1, reply.err } end
  replies[i] = reply
end
return replies
