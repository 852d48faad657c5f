--[[
  release-lost-claim: settle as failed (tier neverStarted) an attempt whose
  claim this worker sent but whose reply it never got (the command timed
  out, or its connection was lost), so the call is not left running until
  its lease lapses and then found ambiguous. The worker knows the effect
  never started: it starts only after the claim's reply.

  KEYS[1]  receipt hash
  KEYS[2]  run index
  KEYS[3]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]  attempt the lost claim would have started (1 for a claim that
           creates the receipt; observed attempts + 1 for a takeover)
  ARGV[2]  epoch of that attempt's lifetime (the epoch the claim minted, or
           the observed epoch for a takeover)
  ARGV[3]  owner the lost claim wrote
  ARGV[4]  claim token: the unguessable token the lost claim carried. A claim
           that creates a receipt stores it as the lifetime's epoch; a
           takeover (reclaim-3.lua) stores it as field claim_token.
  ARGV[5]  error text to store
  ARGV[6]  retention in milliseconds

  Releases only an attempt this very claim started: the receipt is running
  at exactly ARGV[1] of lifetime ARGV[2] (includes/fenced.lua's holdsFence),
  its owner is ARGV[3], and either ARGV[1] is 1 and its epoch is ARGV[4] (the
  claim created this lifetime) or its claim_token is ARGV[4] (the takeover
  that stored that token).
  Anything else (no receipt: the claim never landed; another attempt or
  lifetime; another owner; already settled) is left exactly as it is.

  Returns an observation (see includes/observe-receipt.lua):
  code  1  released: settled as failed, tier neverStarted, as fail-3.lua does.
  code  2  released late: as code 1, but a claim had already reported the
           attempt ambiguous (late_settle_ms and late_settle_attempt written).
  code  3  already released: the receipt is failed at exactly this attempt,
           lifetime, owner and token (an earlier try of this release, sent
           while Redis was not answering, landed); nothing written.
  code  0  not this claim's attempt (status '' when there is no receipt);
           nothing written.
  error 'TRC_CORRUPT <key>: <why>', or 'TRC_VERSION <key>: …' for a receipt a
        newer release wrote (see includes/observe-receipt.lua); nothing written.
]]
--- @include "settle"
--- @include "open-transition"

local fenced = holdsFence(receipt, ARGV[1], ARGV[2])
if not fenced and receipt.status ~= 'failed' then return observation(0, receipt, now) end
local owner, token, tier = unpack(rcall('HMGET', KEYS[1], 'owner', 'claim_token', 'tier'))
-- The epoch names the claim only for the attempt that created the lifetime; a takeover is named by its claim_token.
local ours = owner == ARGV[3] and ((tonumber(ARGV[1]) == 1 and receipt.epoch == ARGV[4]) or token == ARGV[4])
if not fenced then
  if ours and tier == 'neverStarted' and stillAt(receipt, 'failed', ARGV[1], ARGV[2]) then return observation(3, receipt, now) end
  return observation(0, receipt, now)
end
if not ours then return observation(0, receipt, now) end

local released = { status = 'failed', error = ARGV[5], tier = 'neverStarted' }
return observation(settleReceipt(KEYS[1], KEYS[2], KEYS[3], receipt, now, tonumber(ARGV[6]), released), receipt, now)
