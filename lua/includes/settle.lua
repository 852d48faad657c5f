--[[
  settle: defines settleReceipt(key, indexKey, countKey, receipt, now, ttl,
  outcome, extra, verdict), the one way a receipt is settled once the
  caller's attempt holds the fence: by the attempt itself (complete, fail,
  a lost claim's release) or by a verdict on it (an operator's resolve, a
  reconcile's completed or not_started). It stamps completed_ms and
  updated_ms with `now` (a compact receipt only completed_ms, and drops
  its updated_ms: readers take the later of the two), clears the lease,
  writes the outcome and the
  field, value pairs of `extra` (resolved_ms for a resolve; nil for none),
  keeps the receipt `ttl` ms from now (the run index and the counting set
  at least that long, see keepRunKeyAtLeast in includes/ttl.lua) and counts
  it, the counting set's write before any other (through redis.pcall, so a
  set of the wrong type refuses the settle whole). One HSET and one HDEL for
  the receipt: each redis.call costs a script about a microsecond.

  outcome  { status = 'completed', result = <JSON text, '' = no result> }:
           result stored, or deleted when ''; for a receipt of the compact
           layout (isCompact, includes/observe-receipt.lua) a result longer
           than RESULT_PART_BYTES (64, the server's default
           hash-max-listpack-value) and at most RESULT_MAX_PARTS (32) parts
           long is kept in parts cut on UTF-8 character boundaries: part 1
           in `result`, the rest in result.2 … result.<n>, and result_parts
           = n, so the hash stays a listpack (receiptOf joins them); a
           longer one is kept whole (it is most of the receipt's size then);
           { status = 'failed', error = <text>, tier = <tier, '' or nil =
           none> }: error and tier stored (tier deleted when none), result
           (and its parts) deleted.
  verdict  nil for the attempt's own settle; for a verdict, its history
           entry (includes/history.lua), appended.

  A counting set of the wrong type makes it return nil and the corrupt
  reply, with nothing written. Only a caller that did not read the set's
  TYPE first (complete) can meet that; the others checked it when they
  opened the receipt.

  Returns 2 when the attempt's own settle is late (ambiguous_ms was set:
  late_settle_ms = now and late_settle_attempt = the attempt are written,
  ambiguous_ms is kept, and a late.<status> entry is appended to the
  history), else 1; a verdict is never late (ambiguous_ms is kept). Updates
  `receipt` (status, result, leaseUntil) for the caller's reply. It touches
  only the keys it is given, which the calling script takes from its KEYS.

  storeResult(set, n, drop, receipt, result)  adds the fields `result` is
    kept in (resultParts(result) for a compact receipt, see `outcome`) to
    the HSET list `set`, which holds n values so far, and the fields it
    leaves behind (no result, or parts an earlier settle kept that this one
    does not, as receipt.resultParts says) to the HDEL list `drop`; returns
    the new n. resultParts(text) is the list of parts of at most
    RESULT_PART_BYTES, or nil when `text` is kept whole.

  Also defines noteRefusedSettle(key, receipt, attempt, epoch, status,
  errorText, now), for a complete or fail whose fence was refused: when the
  receipt is in the caller's lifetime (same epoch) and a verdict settled the
  caller's attempt (an operator's resolve, or a reconcile's completed or
  not_started, found in the history), the settle is appended to the history
  as late.<status> with refused = true, so the trail shows what the attempt
  itself reported after the verdict. Nothing else is written. Returns true
  when it appended.
]]
--- @include "int-text"
--- @include "observe-receipt"
--- @include "history"
--- @include "ttl"
--- @include "count"

local function resultParts(text)
  local length = #text
  if length <= RESULT_PART_BYTES or length > RESULT_PART_BYTES * RESULT_MAX_PARTS then return nil end
  local byte, sub = string.byte, string.sub
  local parts, from = {}, 1
  while from <= length do
    local to = from + RESULT_PART_BYTES - 1
    if to < length then
      -- Never cut inside a character: back up while the next byte continues one (10xxxxxx), so each part reads as text.
      local following = byte(text, to + 1)
      while to > from and following >= 128 and following < 192 do
        to = to - 1
        following = byte(text, to + 1)
      end
    end
    parts[#parts + 1] = sub(text, from, to)
    from = to + 1
  end
  if #parts > RESULT_MAX_PARTS then return nil end
  return parts
end

local function storeResult(set, n, drop, receipt, result)
  local parts = result ~= '' and isCompact(receipt.schema) and resultParts(result) or nil
  local kept = parts and #parts or 0
  local had = receipt.resultParts or 0
  if result == '' then drop[#drop + 1] = 'result'
  elseif parts == nil then set[n + 1], set[n + 2], n = 'result', result, n + 2
  else
    set[n + 1], set[n + 2], set[n + 3], set[n + 4], n = 'result', parts[1], 'result_parts', intText(kept), n + 4
    -- The part's number as intText's text: 'result.' .. i would format it as a float (%.14g), several times the cost.
    for i = 2, kept do set[n + 1], set[n + 2], n = 'result.' .. intText(i), parts[i], n + 2 end
  end
  -- Parts an earlier settle kept that this one does not (a verdict settling over a late result, say).
  if had > 0 and kept == 0 then drop[#drop + 1] = 'result_parts' end
  for i = math.max(kept, 1) + 1, math.min(had, RESULT_MAX_PARTS) do drop[#drop + 1] = 'result.' .. intText(i) end
  return n
end

local function settleReceipt(key, indexKey, countKey, receipt, now, ttl, outcome, extra, verdict)
  local result = ''
  if outcome.status == 'completed' then result = outcome.result end
  -- Counted first, through pcall: the counting set's write is the one that may refuse, before any other write.
  local refused = countReceipt(countKey, key, { status = outcome.status, effect = receipt.effect, leaseUntil = 0, ambiguous = receipt.ambiguous, schema = receipt.schema, member = receipt.member }, now, ttl, true)
  if refused then return nil, refused end
  local code = 1
  local nowText, ttlText = intText(now), intText(ttl)
  local set, n = { 'completed_ms', nowText, 'updated_ms', nowText }, 4
  -- A settled receipt no longer needs its member at hand (index_member, see includes/claim.lua).
  local drop = { 'lease_until_ms', 'index_member' }
  -- A compact receipt keeps no updated_ms that repeats completed_ms (readers take the later of the two).
  if isCompact(receipt.schema) then set[3], set[4], n, drop[3] = nil, nil, 2, 'updated_ms' end
  if verdict == nil and receipt.ambiguous ~= '' then
    set[n + 1], set[n + 2], set[n + 3], set[n + 4], n = 'late_settle_ms', nowText, 'late_settle_attempt', receipt.attempts, n + 4
    code = 2
    appendHistory(key, {
      at = now, what = 'late.' .. outcome.status, by = redis.call('HGET', key, 'owner') or '',
      attempt = receipt.attempts, error = clipText(outcome.error, 500),
      ambiguous_ms = tonumber(receipt.ambiguous) })
  end
  set[n + 1], set[n + 2], n = 'status', outcome.status, n + 2
  if extra then
    for i = 1, #extra do set[n + i] = extra[i] end
    n = n + #extra
  end
  if outcome.status == 'completed' then
    n = storeResult(set, n, drop, receipt, result)
  else
    set[n + 1], set[n + 2], n = 'error', outcome.error, n + 2
    storeResult(set, n, drop, receipt, '')
    if outcome.tier == nil or outcome.tier == '' then drop[#drop + 1] = 'tier' else set[n + 1], set[n + 2] = 'tier', outcome.tier end
  end
  redis.call('HSET', key, unpack(set))
  redis.call('HDEL', key, unpack(drop))
  redis.call('PEXPIRE', key, ttlText)
  keepRunKeyAtLeast(indexKey, ttl)
  keepRunKeyAtLeast(countKey, ttl)
  if verdict then appendHistory(key, verdict) end
  receipt.status, receipt.result, receipt.leaseUntil = outcome.status, result, 0
  return code
end

local function noteRefusedSettle(key, receipt, attempt, epoch, status, errorText, now)
  local n = tonumber(attempt)
  if receipt.status == '' or receipt.epoch ~= epoch or n == nil or n > receipt.attempts then return false end
  if historyVerdictOn(key, n) == nil then return false end
  appendHistory(key, {
    -- The owner field names the caller only while its attempt is still the receipt's last.
    at = now, what = 'late.' .. status, by = (n == receipt.attempts and redis.call('HGET', key, 'owner')) or '', attempt = n,
    error = clipText(errorText, 500), refused = true })
  return true
end
