--[[
  observe-receipt: defines corruptReply(key, why), wrongType(key, expected),
  openReceipt(receiptKey, indexKey, countKey), openReceiptHash(receiptKey), refusedWrite(key, expected, reply),
  receiptFields(key), receiptOf(fields), readReceipt(key), leaseState(receipt, now), isFlagged(receipt) and
  observation(code, receipt, now), createdSchema(effect, layout),
  keptSchema(receipt), schemaVersion(text) and newerSchemaReply(key, text),
  and the layout numbers RECEIPT_SCHEMA, STATE_SCHEMA, LEAN_SCHEMA,
  NEWEST_SCHEMA and LEAN_TEXT: the reading and the reply every receipt
  script shares. They touch only the keys they
  are given, which the calling script takes from its KEYS.

  corruptReply(key, why)  the error reply 'TRC_CORRUPT <key>: <why>' a script
    returns for a key it must not touch; the store turns it into a typed
    CorruptReceiptError.

  The layouts are values, not functions: a script defines every included
  function anew each time it runs (about 700 server instructions apiece,
  counted under callgrind), and a number costs nothing to define.

  RECEIPT_SCHEMA  the layout an ordinary receipt is written in: the
    `schema` field a claim that creates a receipt writes. A receipt without
    the field has layout 1 (written before layouts were numbered). Layout 2
    is layout 1 with the field: what a release adds (more fields) a release
    that does not know them ignores.

  STATE_SCHEMA  the layout (3) of a receipt whose status or effect a
    release reading only layout 2 would misread, so that release refuses it
    instead of guessing; an ordinary receipt stays at 2, so a rolling deploy
    beside the previous release keeps working for every receipt it can read.

  LEAN_SCHEMA  layout 4: everything layout 3 means, without the fields
    `tenant`, `run`, `tool` and `args_hash`, which the receipt's key already
    names (percent-encoded); a reader takes them from the key. Written only
    when the keyspace asks for it (the claim's layout argument is '4').

  LEAN_TEXT  layout 4 as text ('4'): what the `schema` field of such a
    receipt (as read, or approvalFields) and a script's layout argument hold.

  COMPACT_SCHEMA  layout 5, the compact one: layout 4, listed in the run
    index and the counting set by its compact member (countMember and
    indexMember in includes/count-score.lua) instead of its whole key, and
    with a long result kept in parts (RESULT_PART_BYTES each, see
    includes/settle.lua) so the hash stays within the server's default
    hash-max-listpack-value. Written only when the keyspace asks for it (the
    claim's layout argument is COMPACT_TEXT, '5').

  NEWEST_SCHEMA  the newest layout these scripts read (5).

  RESULT_PART_BYTES, RESULT_MAX_PARTS  the largest part of a result kept in
    parts (64 bytes, the server's default hash-max-listpack-value), and the
    most parts (32): see includes/settle.lua. receiptOf reads no more.

  isCompact(schema)  whether a layout (a `schema` field as read, text or
    nil, or a number createdSchema gave) is the compact one.

  createdSchema(effect, layout)  the layout a claim creating a receipt of
    `effect` writes: COMPACT_SCHEMA when `layout` is COMPACT_TEXT;
    LEAN_SCHEMA when `layout` is LEAN_TEXT; else
    STATE_SCHEMA for 'transactional' (a release reading only layout 2 would
    take it for opaque and call a lapsed attempt ambiguous, where this
    release settles it from the PostgreSQL outcome row); else RECEIPT_SCHEMA.

  keptSchema(receipt)  the layout a next attempt writes: the receipt's own
    when newer than RECEIPT_SCHEMA (a layout is never lowered, and never
    raised to 4 or 5: a layout-2 receipt stays 2 whatever the keyspace asks), else
    RECEIPT_SCHEMA.

  schemaVersion(text)  the layout of a `schema` field as read: 1 for nil
    (absent), the whole number >= 1 it holds, or nil when it holds anything
    else.

  newerSchemaReply(key, text)  the error reply
    'TRC_VERSION <key>: schema <n> is newer than <NEWEST_SCHEMA>' when the
    field names a layout newer than NEWEST_SCHEMA (a receipt a newer release
    wrote: never read, never written; the store turns it into a typed
    ReceiptVersionError), the corrupt reply when it is not a whole number
    >= 1, else nil.

  wrongType(key, expected)  corruptReply when `key` exists with a Redis type
    other than `expected` ('hash', 'zset'), else nil (a missing key is fine).

  refusedWrite(key, expected, reply)  for a write made through redis.pcall
    in place of a TYPE read before it (the usual case then pays for no
    TYPE): the corrupt reply when `reply` is a WRONGTYPE error (the write did
    nothing), else it raises `reply`, as redis.call would have.

  openReceipt(receiptKey, indexKey, countKey, approved)  the guard a receipt
    transition opens with, before it writes anything (a claim that creates
    and a complete check the run keys by their first writes instead, see
    refusedWrite, and open with openReceiptHash): returns
    readReceipt(receiptKey), or nil and the corrupt reply when receiptKey is
    not a hash, indexKey or countKey (the run's counting set, see
    includes/count.lua) not a sorted set, the receipt has a layout newer than
    NEWEST_SCHEMA (newerSchemaReply, checked before anything else of it, so a
    state only a newer release knows is never called corrupt), or the receipt
    hash exists with a status other than running,
    completed or failed (a missing status included) or with attempts that
    are not a whole number >= 1. With `approved` true (the claim), an
    approved receipt (includes/approval.lua) of layout STATE_SCHEMA,
    LEAN_SCHEMA or COMPACT_SCHEMA is returned as read. So a corrupt receipt is never taken
    for an absent one, and nothing is written.

  openReceiptHash(receiptKey)  openReceipt for a script that does not touch
    the run index: the same checks of receiptKey alone.

  receiptFields(key)  HMGET of the observed fields of `key`, through
    redis.pcall: a key of the wrong type gives a table with `err` instead of
    raising, so a caller can answer it as corrupt. receiptOf(fields, key)
    makes the receipt table of such a reply, the parts of a result kept in
    parts joined (one more HMGET, only for such a result).

  readReceipt(key)  receiptOf(receiptFields(key)) (a wrong type reads as no
    receipt; callers that must refuse it use openReceiptHash), as
    { status      'running' | 'completed' | 'failed'; '' when no receipt
      attempts    number, 0 when absent
      leaseUntil  lease_until_ms as a number, 0 when absent
      effect      '' when absent
      result      stored result text, '' when absent (joined from its
                  parts when kept so)
      resultParts how many parts the stored result is kept in, 0 when one
                  field holds it (or there is none)
      member      index_member as stored: a running compact receipt's
                  member in its run's sets (countMember in
                  includes/count-score.lua), kept from its claim to its
                  settle so no transition between makes it again; nil
                  when absent
      ambiguous   ambiguous_ms as stored, '' when unset
      epoch       the lifetime's epoch, minted by the claim that created it
                  ('' when absent: a receipt written before epochs existed)
      schema      the `schema` field as stored, nil when absent }

  leaseState(receipt, now)  expired (0|1), remaining_ms of the lease of a
    running receipt on the server clock `now`; 0, 0 when not running.

  isFlagged(receipt)  true when a claim has reported the current attempt
    ambiguous (ambiguous_ms set while running). The verdict sticks: no
    heartbeat or claim clears it, only a settle (an operator's resolve, or
    the attempt itself completing or failing late).

  observation(code, receipt, now)  the reply
    { code, status, attempts, lease_expired (0|1), lease_remaining_ms,
      effect, result ('' unless completed), ambiguous_ms, now_ms, lease_until_ms,
      epoch }
    for `receipt` as read, or as the caller has updated it after a write.
]]
local RECEIPT_SCHEMA, STATE_SCHEMA, LEAN_SCHEMA, COMPACT_SCHEMA, NEWEST_SCHEMA, LEAN_TEXT, COMPACT_TEXT = 2, 3, 4, 5, 5, '4', '5'

local RESULT_PART_BYTES, RESULT_MAX_PARTS = 64, 32

local function isCompact(schema)
  return schema == COMPACT_TEXT or schema == COMPACT_SCHEMA
end

local function createdSchema(effect, layout)
  if layout == COMPACT_TEXT then return COMPACT_SCHEMA end
  if layout == LEAN_TEXT then return LEAN_SCHEMA end
  if effect == 'transactional' then return STATE_SCHEMA end
  return RECEIPT_SCHEMA
end

local function receiptFields(key)
  return redis.pcall('HMGET', key, 'status', 'attempts', 'lease_until_ms', 'effect', 'result', 'ambiguous_ms', 'epoch', 'schema', 'result_parts', 'index_member')
end

local function receiptOf(f, key)
  local result, parts = f[5] or '', tonumber(f[9]) or 0
  -- No more parts than a settle writes: a hand-edited count must not make every read loop on.
  if parts > 1 and parts <= RESULT_MAX_PARTS and key then
    -- A result kept in parts (includes/settle.lua): part 1 in `result`, the rest in result.2 … result.<n>.
    local names = {}
    -- %d text, as intText makes it: 'result.' .. i would format the number as a float (%.14g), several times the cost.
    for i = 2, parts do names[i - 1] = 'result.' .. string.format('%d', i) end
    local rest = redis.call('HMGET', key, unpack(names))
    for i = 1, #rest do rest[i] = rest[i] or '' end
    result = result .. table.concat(rest)
  end
  return {
    status = f[1] or '',
    attempts = tonumber(f[2]) or 0,
    leaseUntil = tonumber(f[3]) or 0,
    effect = f[4] or '',
    result = result,
    ambiguous = f[6] or '',
    epoch = f[7] or '',
    schema = f[8] or nil,
    resultParts = parts,
    member = f[10] or nil,
  }
end

local function readReceipt(key)
  local f = receiptFields(key)
  if f.err then return receiptOf({}, key) end
  return receiptOf(f, key)
end

local function corruptReply(key, why)
  return redis.error_reply('TRC_CORRUPT ' .. key .. ': ' .. why)
end

local function schemaVersion(text)
  if text == nil then return 1 end
  if not string.find(text, '^%d+$') then return nil end
  local n = tonumber(text)
  if n < 1 then return nil end
  return n
end

local function newerSchemaReply(key, text)
  local version = schemaVersion(text)
  if version == nil then return corruptReply(key, 'schema is not a whole number >= 1') end
  if version <= NEWEST_SCHEMA then return nil end
  return redis.error_reply('TRC_VERSION ' .. key .. ': schema ' .. text .. ' is newer than ' .. NEWEST_SCHEMA)
end

local function keptSchema(receipt)
  local own = schemaVersion(receipt.schema) or 1
  if own > RECEIPT_SCHEMA then return own end
  return RECEIPT_SCHEMA
end

local function wrongType(key, expected)
  local actual = redis.call('TYPE', key)['ok']
  if actual == 'none' or actual == expected then return nil end
  return corruptReply(key, 'is a ' .. actual .. ', not a ' .. expected)
end

local function refusedWrite(key, expected, reply)
  if string.find(reply.err, 'WRONGTYPE', 1, true) then return wrongType(key, expected) or corruptReply(key, reply.err) end
  -- Anything else (an out-of-memory refusal of the script's first write) fails the script as redis.call would.
  error(reply)
end

local function openReceiptHash(receiptKey, approved)
  -- The read itself reports a wrong type, so the usual case pays for no TYPE.
  local f = receiptFields(receiptKey)
  if f.err then return nil, wrongType(receiptKey, 'hash') or corruptReply(receiptKey, f.err) end
  local receipt = receiptOf(f, receiptKey)
  -- A claim (`approved` true) starts an approved call; see includes/approval.lua.
  if approved and receipt.status == 'approved' and (receipt.schema == '3' or receipt.schema == LEAN_TEXT or receipt.schema == COMPACT_TEXT) then
    return receipt, nil
  end
  local newer = receipt.schema and newerSchemaReply(receiptKey, receipt.schema)
  if newer then return nil, newer end
  if receipt.status == '' then
    if redis.call('EXISTS', receiptKey) == 1 then
      return nil, corruptReply(receiptKey, 'the hash has no status field')
    end
  elseif receipt.status ~= 'running' and receipt.status ~= 'completed' and receipt.status ~= 'failed' then
    if receipt.status == 'awaiting_approval' or receipt.status == 'approved' or receipt.status == 'denied' then
      return nil, corruptReply(receiptKey, 'the call is ' .. receipt.status .. ': only the approval scripts move it (see includes/approval.lua)')
    end
    return nil, corruptReply(receiptKey, 'status is not running, completed or failed')
  elseif receipt.attempts < 1 or receipt.attempts % 1 ~= 0 then
    return nil, corruptReply(receiptKey, 'attempts is not a whole number >= 1')
  end
  return receipt, nil
end

local function openReceipt(receiptKey, indexKey, countKey, approved)
  local bad = wrongType(indexKey, 'zset') or wrongType(countKey, 'zset')
  if bad then return nil, bad end
  return openReceiptHash(receiptKey, approved)
end

local function leaseState(receipt, now)
  if receipt.status ~= 'running' then return 0, 0 end
  if receipt.leaseUntil <= now then return 1, 0 end
  return 0, receipt.leaseUntil - now
end

local function isFlagged(receipt)
  return receipt.status == 'running' and receipt.ambiguous ~= ''
end

local function observation(code, receipt, now)
  local expired, remaining = leaseState(receipt, now)
  local result = ''
  if receipt.status == 'completed' then result = receipt.result end
  return { code, receipt.status, receipt.attempts, expired, remaining,
    receipt.effect, result, receipt.ambiguous, now, receipt.leaseUntil, receipt.epoch }
end
