--[[
  fenced: defines stillAt(receipt, status, attempts),
  holdsFence(receipt, attempt) and readFenced(key, attempt, now): the compare
  of every compare-and-set on a receipt table read by readReceipt (from
  observe-receipt), and the fenced read most transitions open with.

  stillAt     true when the receipt has exactly `status` and `attempts`
              (an ARGV value, compared as a number).
  holdsFence  true when the receipt is running at exactly `attempt`: the
              caller's attempt still owns it. A missing receipt never does.
  readFenced  readReceipt(key), plus the code-0 observation to return when
              the caller's `attempt` does not hold the fence (else nil).
]]
--- @include "observe-receipt"

local function stillAt(receipt, status, attempts)
  return receipt.status == status and receipt.attempts == tonumber(attempts)
end

local function holdsFence(receipt, attempt)
  return stillAt(receipt, 'running', attempt)
end

local function readFenced(key, attempt, now)
  local receipt = readReceipt(key)
  if holdsFence(receipt, attempt) then return receipt, nil end
  return receipt, observation(0, receipt, now)
end
