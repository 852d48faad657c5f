--[[
  complete: defines completeReceipt(receiptKey, indexKey, breakerKey,
  countKey, args, now), the whole of a complete (see complete-4.lua for what
  it does and returns), shared by the plain complete and the complete that
  carries the next call's claim (complete-claim-5.lua).

  args  the complete's arguments as complete-4.lua takes them in ARGV[1..5]
        (attempt, result text, retention, rejections field, epoch)
  now   the server clock (serverNow) of the calling script

  Returns complete-4.lua's reply (an observation, or the TRC_CORRUPT error
  reply with nothing written), then true when the receipt was settled
  (codes 1 and 2, through settleReceipt in includes/settle.lua). A refused
  complete of an attempt a verdict had settled is noted in the history
  (noteRefusedSettle). It touches only the keys it is given, which the
  calling script takes from its KEYS.
]]
--- @include "ttl"
--- @include "fenced"
--- @include "settle"
--- @include "count"

local function completeReceipt(receiptKey, indexKey, breakerKey, countKey, args, now)
  -- The counting set's type is checked by the settle's first write (settleReceipt counts first), or here when nothing settles.
  local receipt, refused = openFenced(receiptKey, indexKey, args[1], args[5], now)
  if refused then
    local bad = receipt and wrongType(countKey, 'zset')
    if bad then return bad, false end
    if receipt then noteRefusedSettle(receiptKey, receipt, args[1], args[5], 'completed', nil, now) end
    return refused, false
  end
  -- Read before any write, so a breaker of the wrong type refuses the settle whole.
  local streak = redis.pcall('HGET', breakerKey, args[4])
  if type(streak) == 'table' and streak.err then return wrongType(breakerKey, 'hash') or corruptReply(breakerKey, streak.err), false end

  local code, corrupt = settleReceipt(receiptKey, indexKey, countKey, receipt, now, tonumber(args[3]), { status = 'completed', result = args[2] })
  if corrupt then return corrupt, false end
  streak = tonumber(streak)
  if streak ~= nil and streak > 0 then redis.call('HSET', breakerKey, args[4], 0) end
  return observation(code, receipt, now), true
end
