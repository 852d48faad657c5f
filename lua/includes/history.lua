--[[
  history: defines historyCap(), clipText(text, max), historySeq(key),
  appendHistory(key, entry), isSettlingVerdict(what) and
  historyVerdictOn(key, attempt): the receipt's audit trail, kept
  in the receipt hash itself so it lives exactly as long as the receipt, and
  written only by the script that makes the transition it records.

  Layout (additive: no existing field changes meaning):
    hist_seq   the number of the last entry written (entries ever appended in
               this lifetime of the receipt); absent before the first
    hist:<n>   entry n (1, 2, 3, ...), a small JSON object:
                 at            server time of the event (ms, TIME)
                 what          'resolve.completed' | 'resolve.failed'
                               | 'reconcile.completed' | 'reconcile.not_started'
                               | 'reconcile.unknown'
                               | 'late.completed' | 'late.failed'
                 by            who: the operator a resolve names, the
                               reconciler's worker id, or the owner of the
                               attempt that settled late
                 attempt       the attempt the event is about
                 note          (optional) the operator's or reconcile's note,
                               cut to 1000 bytes
                 error         (optional) the error text of a failed verdict
                               or settle, cut to 500 bytes
                 ambiguous_ms  (optional) when the attempt was reported
                               ambiguous, if it was
                 refused       (optional) true for a settle that came after a
                               verdict had settled its attempt: it changed
                               nothing, and is kept so the trail shows it
  At most historyCap() = 20 entries are kept: appending entry n deletes
  hist:<n - 20> (RECEIPT_HISTORY_CAP in src/redis/receipts/reads/history.ts). No
  transition deletes either field, so the trail survives reclaims, re-runs
  and later verdicts for as long as the receipt lives.

  historyCap()  the cap, 20.
  clipText(text, max)  text cut to at most `max` bytes, never inside a UTF-8
    sequence; nil for nil or ''.
  historySeq(key)  hist_seq as a number, 0 when absent.
  appendHistory(key, entry)  appends `entry` (a table of the fields above,
    numbers, strings and booleans only) and returns its number. A hist_seq that is not a whole number >= 0 (edited by hand) is
    taken as 0 rather than failing a transition that already wrote.
  isSettlingVerdict(what)  true for the entries that settle an attempt:
    resolve.*, reconcile.completed, reconcile.not_started.
  historyVerdictOn(key, attempt)  the `what` of the newest kept entry that is
    a settling verdict on `attempt`, or nil.
  It touches only the key it is given, which the calling script takes from
  its KEYS.
]]
--- @include "int-text"

local function historyCap()
  return 20
end

local function clipText(text, max)
  if text == nil or text == '' then return nil end
  if #text <= max then return text end
  local cut = max
  -- Back off to the start of a UTF-8 sequence: bytes 0x80..0xBF continue one.
  while cut > 0 do
    local b = string.byte(text, cut + 1)
    if b == nil or b < 0x80 or b >= 0xC0 then break end
    cut = cut - 1
  end
  return string.sub(text, 1, cut)
end

local function historySeq(key)
  local n = tonumber(redis.call('HGET', key, 'hist_seq'))
  if n == nil or n ~= n or n < 0 or n % 1 ~= 0 or n >= 9007199254740992 then return 0 end
  return n
end

local function appendHistory(key, entry)
  local n = historySeq(key) + 1
  redis.call('HSET', key, 'hist_seq', intText(n), 'hist:' .. intText(n), cjson.encode(entry))
  if n > historyCap() then redis.call('HDEL', key, 'hist:' .. intText(n - historyCap())) end
  return n
end

local function isSettlingVerdict(what)
  return what == 'resolve.completed' or what == 'resolve.failed' or what == 'reconcile.completed' or what == 'reconcile.not_started'
end

local function historyVerdictOn(key, attempt)
  local last = historySeq(key)
  local first = math.max(1, last - historyCap() + 1)
  for n = last, first, -1 do
    local text = redis.call('HGET', key, 'hist:' .. intText(n))
    if text then
      local ok, entry = pcall(cjson.decode, text)
      if ok and type(entry) == 'table' and isSettlingVerdict(entry.what) and tonumber(entry.attempt) == attempt then
        return entry.what
      end
    end
  end
  return nil
end
