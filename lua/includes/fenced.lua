--[[
  fenced: defines effectIsOpaque(receipt, requested), stillAt(receipt,
  status, attempts, epoch), holdsFence(receipt, attempt, epoch),
  openFenced(receiptKey, indexKey, attempt, epoch, now) and
  flagAmbiguous(key, receipt, now): the compares of every compare-and-set on
  a receipt table read by readReceipt (from observe-receipt), the guarded,
  fenced read complete opens with (a function of its keys, since a batch
  calls it for many receipts), and the one write of the ambiguous flag.

  The fence of an attempt is its number AND the epoch of the receipt's
  lifetime. A receipt that expires and is claimed again starts a new
  lifetime, again at attempt 1, under a new epoch; an attempt of the old
  lifetime (a worker stalled through the whole retention) holds the old
  epoch, so it can never write to the new one.

  effectIsOpaque  the effect a decision is made with, as core/decision.ts's
              effectForClaim: opaque when the receipt's recorded effect is
              not 'resumable' (opaque, or unreadable) or the claim asks for
              'opaque'.
  stillAt     true when the receipt has exactly `status`, `attempts` (an
              ARGV value, compared as a number) and `epoch`.
  holdsFence  true when the receipt is running at exactly `attempt` of
              lifetime `epoch`: the caller's attempt still owns it. A missing
              receipt never does.
  openFenced  the checks of openReceipt for receiptKey and indexKey (the
              caller checks the run's counting set itself: complete by the
              settle's first write, see settleReceipt); returns
              the receipt, then the reply to return instead: the
              corrupt-receipt error, or the code-0 observation when the
              caller's attempt does not hold the fence (nil when it does).
  flagAmbiguous  sets ambiguous_ms = now on receipt hash `key` unless it is
              set (HSETNX: the first time sticks, see isFlagged in
              observe-receipt), reads it back into receipt.ambiguous, and
              returns true when it was set now. It touches only the key it
              is given, which the calling script takes from its KEYS.
]]
--- @include "observe-receipt"

local function effectIsOpaque(receipt, requested)
  return receipt.effect ~= 'resumable' or requested == 'opaque'
end

local function stillAt(receipt, status, attempts, epoch)
  return receipt.status == status and receipt.attempts == tonumber(attempts) and receipt.epoch == epoch
end

local function holdsFence(receipt, attempt, epoch)
  return stillAt(receipt, 'running', attempt, epoch)
end

local function openFenced(receiptKey, indexKey, attempt, epoch, now)
  local bad = wrongType(indexKey, 'zset')
  if bad then return nil, bad end
  local receipt, corrupt = openReceiptHash(receiptKey)
  if corrupt then return nil, corrupt end
  if holdsFence(receipt, attempt, epoch) then return receipt, nil end
  return receipt, observation(0, receipt, now)
end

local function flagAmbiguous(key, receipt, now)
  local set = redis.call('HSETNX', key, 'ambiguous_ms', now) == 1
  receipt.ambiguous = redis.call('HGET', key, 'ambiguous_ms')
  return set
end
