--[[
  tally: count a run's receipts by status and effect, and its ambiguous ones,
  in one read-only pass on the server.

  KEYS[1..n]  receipt hashes, all of one run (one hash tag); keys that no
              longer exist (an index entry outliving its receipt) are skipped
              and counted as gone.

  ARGV  none.

  Returns { now_ms, gone, ambiguous, oldest_ambiguous_since_ms,
            status1, effect1, count1, status2, effect2, count2, ... }
    ambiguous  receipts running and either reported ambiguous by a claim
               (ambiguous_ms set; it sticks until a settle, live lease or
               not) or opaque with a lease expired by TIME: as the CLI's
               `ambiguous` and the wrapper judge it.
    oldest_ambiguous_since_ms  the smallest ambiguous_ms, else lease_until_ms,
               among the ambiguous; -1 when none.
    status/effect/count  one triple per pair present, counts > 0. A
               call in an approval state has not run: left out, as the
               counting sets leave it out (countBand knows no such status).
  error 'TRC_VERSION <key>: …' when a newer release wrote one of the
    receipts, so this release cannot tell what it counts as (see
    includes/observe-receipt.lua); a malformed schema field is the
    'TRC_CORRUPT <key>: <why>' error.
]]
--- @include "server-now"
--- @include "observe-receipt"
--- @include "count-score"

local now = serverNow()
local counts = {}
local gone, ambiguous, oldest = 0, 0, -1
for i = 1, #KEYS do
  local f = redis.call('HMGET', KEYS[i], 'status', 'effect', 'lease_until_ms', 'ambiguous_ms', 'schema')
  local status = f[1]
  local newer = f[5] and newerSchemaReply(KEYS[i], f[5])
  if newer then return newer end
  if not status then
    gone = gone + 1
  elseif countBand(status, f[2] or '') ~= nil then
    local effect = f[2] or ''
    local pair = status .. '\n' .. effect
    counts[pair] = (counts[pair] or 0) + 1
    local leaseUntil = tonumber(f[3]) or 0
    local flagged = f[4] and f[4] ~= ''
    if status == 'running' and (flagged or (leaseUntil <= now and effect == 'opaque')) then
      ambiguous = ambiguous + 1
      local since = tonumber(f[4]) or leaseUntil
      if oldest < 0 or since < oldest then oldest = since end
    end
  end
end
local reply = { now, gone, ambiguous, oldest }
for pair, count in pairs(counts) do
  local cut = string.find(pair, '\n', 1, true)
  reply[#reply + 1] = string.sub(pair, 1, cut - 1)
  reply[#reply + 1] = string.sub(pair, cut + 1)
  reply[#reply + 1] = count
end
return reply
