--[[
  complete-claim: defines completeThenClaim(receiptKey, indexKey, breakerKey,
  nextKey, countKey, args, now), the whole of complete-claim-5.lua (see it
  for what it does and returns), shared with the group commit batch
  (commit-batch-N.lua).

  args  complete-claim-5.lua's ARGV[1..18]: the complete's five arguments,
        then the next call's thirteen claim arguments
  now   the server clock (serverNow) of the calling script

  It touches only the keys it is given, which the calling script takes from
  its KEYS.
]]
--- @include "complete"
--- @include "claim"

local function completeThenClaim(receiptKey, indexKey, breakerKey, nextKey, countKey, args, now)
  local settle, settled = completeReceipt(receiptKey, indexKey, breakerKey, countKey, { args[1], args[2], args[3], args[4], args[5] }, now)
  if settle.err then return settle end
  if not settled then return { settle, {} } end
  local claim = claimReceipt(nextKey, indexKey, breakerKey, countKey, { unpack(args, 6, 18) }, now)
  if claim.err then return { settle, {} } end
  return { settle, claim }
end
