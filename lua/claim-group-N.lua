--[[
  claim-group: claim every call of a group of calls of one run that run side
  by side, in one round trip. Each call is claimed exactly as claim-4.lua
  would claim it on its own, in the order given, so a call later in the
  group sees what the claims before it wrote (the same call twice: the
  second finds the first's attempt running).

  KEYS[1]  run index      <prefix>:run:{<tenant>|<run>}
  KEYS[2]  breaker hash   <prefix>:brk:{<tenant>|<run>}
  KEYS[3] .. KEYS[#KEYS - 1]  the receipt hash of each call, in order
  KEYS[#KEYS]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1] .. ARGV[13]  the first call's claim arguments, as claim-4.lua's
           ARGV[1..13] (lease, retention, owner, effect, tenant, run, tool,
           args hash, removal field, rejections field, epoch, job, layout);
           the i-th call's are ARGV[13 * (i - 1) + 1] .. ARGV[13 * i]

  Returns one reply per call, in order: claim-4.lua's reply (codes 0, 1, 2),
  or an empty array when that call's keys are corrupt or its receipt was
  written by a newer release (then nothing was written for it, and the
  caller claims it on its own to learn why).
]]
--- @include "server-now"
--- @include "claim"

local now = serverNow()
local index, breaker, last = 1, 2, #KEYS
local replies = {}
for i = 3, last - 1 do
  local from = 13 * (i - 3)
  local reply = claimReceipt(KEYS[i], KEYS[index], KEYS[breaker], KEYS[last], { unpack(ARGV, from + 1, from + 13) }, now)
  if reply.err then reply = {} end
  replies[#replies + 1] = reply
end
return replies
