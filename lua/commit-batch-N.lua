--[[
  commit-batch: group commit. The claims and completes that different jobs
  of one worker send in the same tick, and the limit writes that go with
  them, in one script call, so the fixed cost of a script call and of a
  socket write is paid once for the batch. Each entry runs exactly as its
  own script would run it alone (claim-4.lua, complete-4.lua,
  complete-claim-5.lua, limit-reserve-3.lua, limit-bind-2.lua,
  limit-commit-3.lua, limit-slot-acquire-3.lua, limit-slot-release-3.lua),
  in the order given, so an entry sees what the entries before it wrote.

  KEYS[1] .. KEYS[#KEYS]  each entry's keys in turn, as its own script
           takes them:
             claim           receipt hash, run index, breaker hash, counting set
             complete        receipt hash, run index, breaker hash, counting set
             complete-claim  receipt hash, run index, breaker hash, the next
                             call's receipt hash, counting set
             limit-reserve   limit state, pending, committed
             limit-bind      receipt hash, bindings hash
             limit-commit    limit state, pending, committed
             limit-slot-acquire, limit-slot-release
                             cap state, holders, line
           Entries may belong to different runs, so this is the one script
           whose keys span several hash tags: the store sends it to a single
           node only, or on a Cluster only with entries whose keys hash to
           one slot (never a cross-slot call).

  ARGV[1]  the number of entries n (n >= 1)
  then, per entry in order:
    kind   one of the nine above
    count  how many arguments follow for this entry
    the entry's arguments, as its own script takes them in ARGV (claim-4.lua
           thirteen, complete-4.lua five, complete-claim-5.lua eighteen)

  Returns one reply per entry, in order: what that entry's own script would
  have returned, except that an entry whose script would have answered an
  error (TRC_CORRUPT, TRC_VERSION) answers { -1, <that error's text> }
  instead, so one corrupt receipt or count fails its own entry only
  (nothing was written for it, as alone).
  error 'TRC_BATCH <why>' when the layout above does not hold; nothing written.

  Time comes only from TIME: read once for the receipts' entries, which
  all see the same now; each limit entry reads it as its own script does.
]]
--- @include "server-now"
--- @include "claim"
--- @include "complete"
--- @include "complete-claim"
--- @include "limit-reserve"
--- @include "limit-bind"
--- @include "limit-commit"
--- @include "limit-slot-acquire"
--- @include "limit-slot-release"

local KEYS_OF = { ['claim'] = 4, ['complete'] = 4, ['complete-claim'] = 5, ['limit-reserve'] = 3, ['limit-bind'] = 2, ['limit-commit'] = 3,
  ['limit-slot-acquire'] = 3, ['limit-slot-release'] = 3 }

local n = tonumber(ARGV[1])
if n == nil or n < 1 then return redis.error_reply('TRC_BATCH ' .. tostring(ARGV[1]) .. ' is not a number of entries') end
-- The layout is checked whole before anything is written.
local entries = {}
local at, keysUsed = 2, 0
for i = 1, n do
  local kind, count = ARGV[at], tonumber(ARGV[at + 1])
  if KEYS_OF[kind] == nil or count == nil or at + 1 + count > #ARGV then
    return redis.error_reply('TRC_BATCH entry ' .. i .. ' is not <kind> <count> <arguments>')
  end
  entries[i] = { kind, { unpack(ARGV, at + 2, at + 1 + count) }, keysUsed }
  at = at + 2 + count
  keysUsed = keysUsed + KEYS_OF[kind]
end
if at ~= #ARGV + 1 or keysUsed ~= #KEYS then
  return redis.error_reply('TRC_BATCH ' .. n .. ' entries take ' .. keysUsed .. ' keys and ' .. (at - 1) .. ' arguments, not ' .. #KEYS .. ' and ' .. #ARGV)
end

local now = serverNow()
local replies = {}
for i = 1, n do
  local kind, args, k = entries[i][1], entries[i][2], entries[i][3]
  local reply
  if kind == 'claim' then
    reply = claimReceipt(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], args, now)
  elseif kind == 'complete' then
    reply = completeReceipt(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], args, now)
  elseif kind == 'complete-claim' then
    reply = completeThenClaim(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], args, now)
  elseif kind == 'limit-reserve' then
    reply = reserveLimit(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], args)
  elseif kind == 'limit-bind' then
    reply = bindLimit(KEYS[k + 1], KEYS[k + 2], args)
  elseif kind == 'limit-commit' then
    reply = commitLimit(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], args)
  elseif kind == 'limit-slot-acquire' then
    reply = acquireSlot(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], args)
  else
    reply = releaseSlot(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], args)
  end
  if reply.err then reply = { -1, reply.err } end
  replies[i] = reply
end
return replies
