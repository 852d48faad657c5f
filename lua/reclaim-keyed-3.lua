--[[
  reclaim-keyed: run a provider-keyed call again after its attempt lost its
  lease, while the provider's deduplication window is still open. The new
  attempt uses the same idempotency key, so a provider that keeps its promise
  absorbs the repeat if the lost attempt's request had landed.

  KEYS[1]  receipt hash
  KEYS[2]  run index
  KEYS[3]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]  attempts the caller observed (the lost attempt)
  ARGV[2]  the provider's window in milliseconds, counted from created_ms
           (the first attempt's start)
  ARGV[3]  lease of the new attempt in milliseconds
  ARGV[4]  retention in milliseconds
  ARGV[5]  owner of the new attempt
  ARGV[6]  the BullMQ job of the new attempt as JSON ('' = none)
  ARGV[7]  epoch of the lost attempt's lifetime (kept by the new attempt)

  The window must still be open at the end of the new lease
  (TIME + ARGV[3] <= created_ms + ARGV[2]), so the repeat reaches the
  provider inside it.

  Returns { code, n, now_ms }:
  code  1  reclaimed: attempt n = attempts + 1 started as every next attempt
           is (includes/start-attempt.lua, as reclaim-3.lua starts one):
           lease until TIME + ARGV[3] owned by ARGV[5], started_ms =
           updated_ms = TIME, schema = keptSchema(receipt), job:<n> = ARGV[6];
           error, tier, completed_ms, ambiguous_ms, resolved_ms and
           late_heartbeat_ms cleared, steps kept. Its own: keyed_rerun_ms =
           TIME.
  code  2  a reconcile holds a live lease: n = ms left on it. Nothing written.
  code  3  the window is closed (or closes within the new lease). Nothing written.
  code  0  not running at ARGV[1] of epoch ARGV[7], lease still live, or
           gone. Nothing written.
  error 'TRC_CORRUPT <key>: <why>', or 'TRC_VERSION <key>: …' for a receipt a
        newer release wrote (see includes/observe-receipt.lua); nothing written.
]]
--- @include "reconcile-lease"
--- @include "start-attempt"
--- @include "open-transition"

if not holdsFence(receipt, ARGV[1], ARGV[7]) or receipt.leaseUntil > now then
  return { 0, 0, now }
end
local left = reconcileLeaseLeft(KEYS[1], now)
if left > 0 then return { 2, left, now } end
local lease = tonumber(ARGV[3])
local created = tonumber(rcall('HGET', KEYS[1], 'created_ms')) or 0
if now + lease > created + tonumber(ARGV[2]) then return { 3, 0, now } end

startAttempt(KEYS[1], KEYS[2], KEYS[3], receipt, now, lease, tonumber(ARGV[4]), ARGV[5], ARGV[6], { 'keyed_rerun_ms', now })
return { 1, receipt.attempts, now }
