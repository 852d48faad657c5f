--[[
  recount-run: rebuild a run's counting set (see includes/count.lua) from its
  receipts, for receipts written before the set existed or a set lost.

  KEYS[1]     counting set   <prefix>:cnt:{<tenant>|<run>}
  KEYS[2..n]  receipt hashes of that run (its run index's members)

  ARGV  none.

  Returns { counted, gone, corrupt }: receipts counted, listed receipts that
  no longer exist (their entries removed), and keys skipped because they are
  not well-formed receipts (left as they are: `tool-receipts show` names
  what is wrong).
  error 'TRC_CORRUPT <key>: <why>' when KEYS[1] is not a sorted set, or
    'TRC_VERSION <key>: …' when a newer release wrote one of the receipts
    (see includes/observe-receipt.lua: this release cannot count it); nothing written.
]]
--- @include "server-now"
--- @include "ttl"
--- @include "observe-receipt"
--- @include "count"

local now = serverNow()
local corrupt = wrongType(KEYS[1], 'zset')
if corrupt then return corrupt end

-- Every receipt is read before anything is written, so a receipt a newer
-- release wrote refuses the whole rebuild instead of leaving it half done.
local receipts = {}
for i = 2, #KEYS do
  local receipt, bad = openReceiptHash(KEYS[i])
  if bad and string.sub(bad.err, 1, 12) == 'TRC_VERSION ' then return bad end
  receipts[i] = receipt or false
end

local counted, gone, skipped = 0, 0, 0
for i = 2, #KEYS do
  local receipt = receipts[i]
  if not receipt then
    skipped = skipped + 1
  else
    if receipt.status == '' then gone = gone + 1 else counted = counted + 1 end
    countReceipt(KEYS[1], KEYS[i], receipt, now)
  end
end
return { counted, gone, skipped }
