/**
 * The whole `consume` contract of store.ts in one script, so Redis runs it atomically: with N concurrent
 * requests from any number of instances against a remaining quota R, exactly R are allowed. One call carries
 * every consume one subject asked for in one turn of the event loop, run in order as if sent one by one
 * (the requests of a busy account cost one command per turn, not one each).
 *
 * Hand-written rather than rate-limiter-flexible's RateLimiterRedis because the contract checks two windows
 * together and must not count rejected requests; the library's `consume` increments before it decides, and
 * one limiter per window could not undo the first window's increment when the second one rejects.
 *
 * ARGV[1]: how many groups of identical consumes (one subject's requests of one turn are usually all alike,
 * and their arguments would otherwise be most of what the command sends); then, per group, KEYS: window
 * counters 1..n, the rejected counter, the ban; ARGV: how many consumes, n, limits 1..n, ttls 1..n,
 * banThreshold (-1: never), banMs, now, banLiftedAt (-1: none), bannedUntil.
 * Reply, per consume in order: allowed (1|0), bannedUntil ('' when not banned), event ('', 'banned': this
 * request started the ban, 'unbanned': it found a ban lifted by `accounts unban`), count 1..n.
 *
 * Times are the caller's, passed in ARGV: `since`/`until` are compared with the caller's `now`, never with
 * Redis' clock, so tests can move time; the PEXPIREs are real time and only collect garbage. `until` is
 * computed by the caller and stored as received because Lua 5.1 would print large numbers in exponent form.
 */
export const CONSUME_LUA = `
local function consume(k, a)
  local n = tonumber(ARGV[a])
  local rejectedKey = KEYS[k + n + 1]
  local banKey = KEYS[k + n + 2]
  local base = a + 2 * n
  local threshold = tonumber(ARGV[base + 1])
  local banMs = ARGV[base + 2]
  local now = tonumber(ARGV[base + 3])
  local liftedAt = tonumber(ARGV[base + 4])
  local bannedUntil = ARGV[base + 5]

  local counts = {}
  for i = 1, n do
    counts[i] = tonumber(redis.call('GET', KEYS[k + i]) or '0')
  end

  local event = ''
  local ban = redis.call('HMGET', banKey, 'since', 'until')
  if ban[1] then
    local lifted = liftedAt >= 0 and liftedAt >= tonumber(ban[1])
    if lifted or tonumber(ban[2]) <= now then
      redis.call('DEL', banKey)
      if lifted then redis.call('DEL', rejectedKey) end
      if lifted and tonumber(ban[2]) > now then event = 'unbanned' end
    else
      return { 0, ban[2], '' }, counts
    end
  end

  local allowed = true
  for i = 1, n do
    if counts[i] >= tonumber(ARGV[a + i]) then allowed = false end
  end

  if allowed then
    for i = 1, n do
      counts[i] = redis.call('INCR', KEYS[k + i])
      if counts[i] == 1 then redis.call('PEXPIRE', KEYS[k + i], ARGV[a + n + i]) end
    end
    return { 1, '', event }, counts
  end

  local rejected = redis.call('INCR', rejectedKey)
  if rejected == 1 then redis.call('PEXPIRE', rejectedKey, 60000) end
  if threshold >= 0 and rejected > threshold then
    redis.call('HSET', banKey, 'since', ARGV[base + 3], 'until', bannedUntil)
    redis.call('PEXPIRE', banKey, banMs)
    return { 0, bannedUntil, 'banned' }, counts
  end
  return { 0, '', event }, counts
end

local reply = {}
local k, a = 0, 2
for _ = 1, tonumber(ARGV[1]) do
  for _ = 1, tonumber(ARGV[a]) do
    local head, counts = consume(k, a + 1)
    for _, v in ipairs(head) do reply[#reply + 1] = v end
    for _, v in ipairs(counts) do reply[#reply + 1] = v end
  end
  local n = tonumber(ARGV[a + 1])
  k = k + n + 2
  a = a + 2 * n + 7
end
return reply
`;
