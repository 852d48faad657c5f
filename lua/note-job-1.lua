--[[
  note-job: record on a receipt that a BullMQ job met it while its call was
  ambiguous (a duplicate of the turn, say), so the job can be retried once
  the call is settled, like the jobs of its attempts.

  KEYS[1]  receipt hash

  ARGV[1]  the job as JSON {"queue","prefix","id"}; stored as the field
           'met_job:' .. ARGV[1] with the server time as its value

  Returns 1 when recorded (or already there), 0 when the receipt does not
  exist or is not running (nothing written: it would create a stray hash or
  mark a settled call).
  error 'TRC_CORRUPT <key>: <why>', or 'TRC_VERSION <key>: …' for a receipt a
        newer release wrote (see includes/observe-receipt.lua); nothing written.
]]
--- @include "server-now"
--- @include "observe-receipt"

local receipt, corrupt = openReceiptHash(KEYS[1])
if corrupt then return corrupt end
if receipt.status ~= 'running' then return 0 end
redis.call('HSETNX', KEYS[1], 'met_job:' .. ARGV[1], serverNow())
return 1
