--[[
  decide-approval: a person approves or denies a call awaiting approval. The
  decision is fenced: it names the receipt's lifetime (epoch) and the
  arguments' digest it decides, so it can never release another call or a
  later lifetime, and of two racing decisions exactly one is written. See
  includes/approval.lua for the states and fields.

  KEYS[1]  receipt hash   <prefix>:rcpt:{<tenant>|<run>}:<tool>:<argsHash>
  KEYS[2]  run index      <prefix>:run:{<tenant>|<run>}
  KEYS[3]  counting set   <prefix>:cnt:{<tenant>|<run>}

  ARGV[1]  the epoch the decision names
  ARGV[2]  the arguments' digest it names, raw (as the receipt's args_hash
           field holds it; for a layout-4 receipt it is compared with the
           key's digest, see sameArgsHash below)
  ARGV[3]  'approve' | 'deny'
  ARGV[4]  who decides    ARGV[5] note ('' = none)    ARGV[6] source ('cli', 'console', 'code')
  ARGV[7]  retention in milliseconds (positive integer): a denied receipt
           lives that long from now; an approved one at least that long

  Returns { 'ok', decision, now_ms, job }  written: status approved or denied,
            approval_decision, approval_by, approval_note, approval_source,
            approval_decided_ms = now, a history entry approval.<decision>;
            job is approval_job ('' = none), the job to promote
    or    { 'refused', why, status, by, decision, decided_ms, now_ms, expires_ms }  nothing written:
            why 'not_pending'     no receipt, or not awaiting approval (by,
                                  decision and decided_ms name who decided)
                'stale_lifetime'  the epoch is not the receipt's
                'args_mismatch'   the digest is not the receipt's
                'expired'         approval_expires_ms has passed (TIME)
  The lifetime a decision may name is the receipt's epoch or, once an
  approved call has started (which moves the epoch on), approval_epoch, the
  one that was decided: a late decision about the lifetime somebody already
  decided is 'not_pending' naming them, whatever the epoch is now; one about
  a lifetime the receipt never had is 'stale_lifetime'.
  error 'TRC_CORRUPT <key>: <why>' when a key has the wrong type; nothing written.
]]
--- @include "server-now"
--- @include "observe-receipt"
--- @include "history"
--- @include "ttl"
--- @include "approval"

-- Whether `given` (a raw digest, as a caller names it) is the digest of the receipt `a` =
-- approvalFields(key): its args_hash field, or in layouts 4 and 5 the key's last part, which holds the
-- digest percent-encoded (as src/redis/keys.ts encodes it), so `given` is encoded so too first.
local function sameArgsHash(key, a, given)
  if a.schema ~= LEAN_TEXT and a.schema ~= COMPACT_TEXT then return a.argsHash == given end
  local encoded = string.gsub(given, '[^A-Za-z0-9._~%-]', function(c) return string.format('%%%02X', string.byte(c)) end)
  return string.match(key, ':([^:]*)$') == encoded
end

local now = serverNow()
local bad = wrongType(KEYS[1], 'hash') or wrongType(KEYS[2], 'zset') or wrongType(KEYS[3], 'zset')
if bad then return bad end
local a = approvalFields(KEYS[1])
local function refused(why) return { 'refused', why, a.status, a.by, a.decision, a.decidedMs, now, intText(a.expiresMs) } end

if a.status == '' then return refused('not_pending') end
if a.epoch ~= ARGV[1] and a.approvedEpoch ~= ARGV[1] then return refused('stale_lifetime') end
if not sameArgsHash(KEYS[1], a, ARGV[2]) then return refused('args_mismatch') end
if a.status ~= 'awaiting_approval' then return refused('not_pending') end
if now >= a.expiresMs then return refused('expired') end

local decision = 'denied'
if ARGV[3] == 'approve' then decision = 'approved' end
local nowText = intText(now)
local fields = { 'status', decision, 'approval_decision', decision, 'approval_by', ARGV[4], 'approval_source', ARGV[6],
  'approval_decided_ms', nowText, 'updated_ms', nowText }
if ARGV[5] ~= '' then fields[#fields + 1] = 'approval_note'; fields[#fields + 1] = ARGV[5] end
redis.call('HSET', KEYS[1], unpack(fields))
local retention = tonumber(ARGV[7])
if decision == 'denied' then redis.call('PEXPIRE', KEYS[1], intText(retention)) else keepAtLeast(KEYS[1], retention) end
keepRunKeyAtLeast(KEYS[2], retention)
appendHistory(KEYS[1], { at = now, what = 'approval.' .. decision, by = ARGV[4], attempt = 0, note = clipText(ARGV[5], 1000),
  source = ARGV[6] })
return { 'ok', decision, now, a.job }
