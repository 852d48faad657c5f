--[[
  fenced: defines stillAt(receipt, status, attempts) and
  holdsFence(receipt, attempt), the compare of every compare-and-set on a
  receipt table read by readReceipt (from observe-receipt).

  stillAt     true when the receipt has exactly `status` and `attempts`
              (an ARGV value, compared as a number).
  holdsFence  true when the receipt is running at exactly `attempt`: the
              caller's attempt still owns it. A missing receipt never does.
]]
--- @include "observe-receipt"

local function stillAt(receipt, status, attempts)
  return receipt.status == status and receipt.attempts == tonumber(attempts)
end

local function holdsFence(receipt, attempt)
  return stillAt(receipt, 'running', attempt)
end
