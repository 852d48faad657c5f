--[[
  record-step: store the outcome of one resumable sub-step, fenced on the
  caller's attempt and epoch. A later attempt that reclaims the receipt reads
  it back.

  KEYS[1]  receipt hash
  KEYS[2]  run index
  KEYS[3]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]  attempt of the caller
  ARGV[2]  field name: 'step:' .. step name
  ARGV[3]  value as JSON text
  ARGV[4]  retention in milliseconds
  ARGV[5]  epoch of the caller's lifetime (from its claim)

  Returns an observation (see includes/observe-receipt.lua):
  code  1  recorded: field ARGV[2] = ARGV[3]; the TTL is kept at least
           (lease remaining + retention), which it already is unless the
           retention setting grew. A step recorded after a claim reported the
           attempt ambiguous is recorded too (the receipt stays ambiguous).
  code  0  fenced out: status is not running, or attempts or epoch differ
           (status '' when the receipt does not exist). Nothing was written.
  error 'TRC_CORRUPT <key>: <why>', or 'TRC_VERSION <key>: …' for a receipt a
        newer release wrote (see includes/observe-receipt.lua); nothing written.
]]
--- @include "server-now"
--- @include "ttl"
--- @include "fenced"
--- @include "count"

local rcall = redis.call
local now = serverNow()

local receipt, refused = openFenced(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[5], now)
if refused then return refused end

local _, remaining = leaseState(receipt, now)
rcall('HSET', KEYS[1], ARGV[2], ARGV[3], 'updated_ms', now)
local ttl = remaining + tonumber(ARGV[4])
-- The receipt's TTL as keepAtLeast left it, so the count need not read it again.
local receiptTtl = keepAtLeast(KEYS[1], ttl)
keepAtLeast(KEYS[2], ttl)
countReceipt(KEYS[3], KEYS[1], receipt, now, receiptTtl)
return observation(1, receipt, now)
