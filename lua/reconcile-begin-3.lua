--[[
  reconcile-begin: take the reconcile lease of an opaque receipt whose attempt
  lost its lease, so exactly one worker asks the tool whether the effect
  landed while every other claimant waits.

  KEYS[1]  receipt hash
  KEYS[2]  run index
  KEYS[3]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]  attempts the caller observed (the lost attempt)
  ARGV[2]  reconcile lease in milliseconds
  ARGV[3]  owner: worker id of the reconciler
  ARGV[4]  retention in milliseconds
  ARGV[5]  '1' to ask again about an attempt a reconcile already judged
           unknown (a sweep retrying later); otherwise ''
  ARGV[6]  epoch of the lost attempt's lifetime (the fence is attempt and epoch)

  Returns { code, n, started_ms, now_ms }:
  code  1  begun: reconciles (the fence of this reconcile) = n, incremented;
           reconciling_until_ms = TIME + ARGV[2], reconciler = ARGV[3];
           started_ms is when the lost attempt started (created_ms for a
           receipt written before started_ms existed).
  code  2  another reconcile holds a live lease: n = ms left on it. Nothing written.
  code  3  a reconcile of this very attempt already answered unknown (and
           ARGV[5] is not '1'): the call
           stays ambiguous. ambiguous_ms is set if unset (n = its value) and
           the receipt kept at least retention ms, as flag-ambiguous does.
  code  0  not reconcilable: not running at ARGV[1] of epoch ARGV[6], lease
           still live, or resumable (or gone). Nothing written; the caller
           claims again.
  error 'TRC_CORRUPT <key>: <why>', or 'TRC_VERSION <key>: …' for a receipt a
        newer release wrote (see includes/observe-receipt.lua); nothing written.
]]
--- @include "reconcile-lease"
--- @include "open-transition"

if not holdsFence(receipt, ARGV[1], ARGV[6]) or receipt.leaseUntil > now or receipt.effect == 'resumable' then
  return { 0, 0, 0, now }
end
local verdict = rcall('HMGET', KEYS[1], 'reconciled', 'reconciled_attempt', 'started_ms', 'created_ms')
local retention = tonumber(ARGV[4])
if verdict[1] == 'unknown' and tonumber(verdict[2]) == receipt.attempts and ARGV[5] ~= '1' then
  flagAmbiguous(KEYS[1], receipt, now)
  keepCounted(KEYS[1], KEYS[2], KEYS[3], receipt, now, retention)
  return { 3, tonumber(receipt.ambiguous), 0, now }
end
local left = reconcileLeaseLeft(KEYS[1], now)
if left > 0 then return { 2, left, 0, now } end

local lease = tonumber(ARGV[2])
local reconciles = rcall('HINCRBY', KEYS[1], 'reconciles', 1)
rcall('HSET', KEYS[1], 'reconciling_until_ms', now + lease, 'reconciler', ARGV[3], 'updated_ms', now)
keepCounted(KEYS[1], KEYS[2], KEYS[3], receipt, now, lease + retention)
return { 1, reconciles, tonumber(verdict[3]) or tonumber(verdict[4]) or 0, now }
