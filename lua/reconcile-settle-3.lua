--[[
  reconcile-settle: record a reconcile's verdict on the attempt it judged and
  act on it, fenced on that attempt and on the reconcile that asked.

  KEYS[1]  receipt hash
  KEYS[2]  run index
  KEYS[3]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]  the attempt judged (attempts when the reconcile began)
  ARGV[2]  reconciles: the fence reconcile-begin returned
  ARGV[3]  verdict: 'completed' | 'not_started' | 'unknown'
  ARGV[4]  worker id of the reconciler (stored as reconciled_by; for
           not_started also the owner of the new attempt)
  ARGV[5]  completed: result as JSON text ('' = no result value);
           unknown: why, stored as reconcile_note ('' = none)
  ARGV[6]  not_started: lease of the new attempt in milliseconds, or 0 to
           release the call for a later claim instead of starting it here
  ARGV[7]  retention in milliseconds
  ARGV[8]  not_started: the BullMQ job of the new attempt as JSON ('' = none)
  ARGV[9]  epoch of the judged attempt's lifetime (kept by a not_started re-run)
  ARGV[10] completed / not_started: a note for the history entry, saying what
           settled it ('settled from PostgreSQL: …' for a transactional
           call); '' or absent = none
  ARGV[11] when this reconcile began: the now_ms its reconcile-begin-3.lua
           answered. A judged attempt whose lease_until_ms is later was
           alive after the reconcile began (a heartbeat, a transactional
           attempt's confirm, an outcome-unknown), so what the reconcile read
           may be stale: the verdict is refused. '' or absent = not checked

  Every verdict sets reconciled = ARGV[3], reconciled_ms = TIME,
  reconciled_by = ARGV[4], reconciled_attempt = ARGV[1], ends the
  reconcile lease, and appends a reconcile.<verdict> entry (by ARGV[4], the
  judged attempt, for unknown the note) to the history
  (includes/history.lua), which later attempts keep. Then:
    completed    settled as complete-4.lua settles (includes/settle.lua,
                 never as late): status completed, result stored,
                 completed_ms = TIME, lease cleared; the receipt expires
                 retention ms from now.
    not_started  attempt + 1 started as every next attempt is
                 (includes/start-attempt.lua, as reclaim-3.lua starts one):
                 a fresh lease owned by ARGV[4], started_ms = updated_ms =
                 TIME, schema = keptSchema(receipt), job:<attempt> = ARGV[8];
                 error, tier, completed_ms, ambiguous_ms, resolved_ms and
                 late_heartbeat_ms are cleared.
                 With ARGV[6] = 0: settled as fail-3.lua settles (status
                 failed, tier neverStarted, error saying so, completed_ms =
                 TIME, lease cleared), so the next claim runs it as
                 attempt + 1; expires retention ms from now.
    unknown      still running and expired: ambiguous_ms is set if unset and
                 the receipt kept at least retention ms, for an operator.

  Returns { code, attempts, lease_until_ms, ambiguous_ms }:
  code  1  recorded as above (lease_until_ms 0 unless not_started,
           ambiguous_ms '' unless unknown)
  code  0  fenced out: not running at ARGV[1] of epoch ARGV[9], another reconcile began
           since (reconciles differs), or the judged attempt's lease is live
           again or was renewed after ARGV[11] (it heartbeated: it was paused,
           not lost). Nothing written.
  error 'TRC_CORRUPT <key>: <why>', or 'TRC_VERSION <key>: …' for a receipt a
        newer release wrote (see includes/observe-receipt.lua); nothing written.
]]
--- @include "settle"
--- @include "start-attempt"
--- @include "open-transition"

local reconciles = tonumber(rcall('HGET', KEYS[1], 'reconciles')) or 0
-- A lost attempt that heartbeated since (it was paused, not dead) owns the call again, or did after the reconcile
-- began (its lease lapsed again since): the verdict is dropped, as what the reconcile read may be stale.
local begun = tonumber(ARGV[11])
if not holdsFence(receipt, ARGV[1], ARGV[9]) or reconciles ~= tonumber(ARGV[2]) or receipt.leaseUntil > now
  or (begun and receipt.leaseUntil > begun) then
  return { 0, receipt.attempts, 0, '' }
end

local verdict = ARGV[3]
local retention = tonumber(ARGV[7])
rcall('HSET', KEYS[1], 'reconciled', verdict, 'reconciled_ms', now, 'reconciled_by', ARGV[4],
  'reconciled_attempt', ARGV[1], 'updated_ms', now)
rcall('HDEL', KEYS[1], 'reconciling_until_ms', 'reconciler')
local note = nil
if verdict == 'unknown' then note = clipText(ARGV[5], 1000)
elseif ARGV[10] and ARGV[10] ~= '' then note = clipText(ARGV[10], 1000) end
local entry = {
  at = now, what = 'reconcile.' .. verdict, by = ARGV[4], attempt = receipt.attempts, note = note,
  ambiguous_ms = tonumber(receipt.ambiguous) }

if verdict == 'completed' then
  settleReceipt(KEYS[1], KEYS[2], KEYS[3], receipt, now, retention, { status = 'completed', result = ARGV[5] }, nil, entry)
  return { 1, receipt.attempts, 0, '' }
end
if verdict == 'not_started' and tonumber(ARGV[6]) == 0 then
  local never = { status = 'failed', error = 'a reconcile found that the effect never started', tier = 'neverStarted' }
  settleReceipt(KEYS[1], KEYS[2], KEYS[3], receipt, now, retention, never, nil, entry)
  return { 1, receipt.attempts, 0, '' }
end

appendHistory(KEYS[1], entry)
if verdict == 'not_started' then
  startAttempt(KEYS[1], KEYS[2], KEYS[3], receipt, now, tonumber(ARGV[6]), retention, ARGV[4], ARGV[8])
  return { 1, receipt.attempts, receipt.leaseUntil, '' }
end
if ARGV[5] == '' then rcall('HDEL', KEYS[1], 'reconcile_note') else rcall('HSET', KEYS[1], 'reconcile_note', ARGV[5]) end
flagAmbiguous(KEYS[1], receipt, now)
keepCounted(KEYS[1], KEYS[2], KEYS[3], receipt, now, retention)
return { 1, receipt.attempts, 0, receipt.ambiguous }
