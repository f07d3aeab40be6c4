/**
 * Handing back to Redis what the Redis store's in-process fallback counted during an outage (see redis.ts).
 */
import type { ChainableCommander, Redis } from 'ioredis';
import { withDeadline } from './deadline.js';
import type { MemoryCounterStore, PendingBan, PendingCount } from './memory.js';

/**
 * Hands one count taken during an outage back to Redis. KEYS: the counter. ARGV: delta, floor, ttl.
 * The floor is this instance's whole count (Redis' last answer plus the delta): a Redis that came back
 * empty (restarted without persistence) must not forget what was admitted before the outage.
 */
const ADD_LUA = `
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if v < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[1], ARGV[2])
  v = tonumber(ARGV[2])
end
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return v
`;

/** Hands a ban set during an outage back to Redis, unless Redis holds one lasting as long. ARGV: since, until, ttl. */
const BAN_LUA = `
local current = redis.call('HGET', KEYS[1], 'until')
if not current or tonumber(current) < tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], 'since', ARGV[1], 'until', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 1
`;

/** Commands per round trip when handing counts back. */
const HANDBACK_CHUNK = 500;

type HandBackPipeline = ChainableCommander & {
  rateLimitAdd(key: string, delta: string, floor: string, ttlMs: string): HandBackPipeline;
  rateLimitBan(key: string, since: string, until: string, ttlMs: string): HandBackPipeline;
};

export function defineHandBackCommands(client: Redis): void {
  client.defineCommand('rateLimitAdd', { numberOfKeys: 1, lua: ADD_LUA });
  client.defineCommand('rateLimitBan', { numberOfKeys: 1, lua: BAN_LUA });
}

/** Runs a pipeline within `deadlineMs`; every command's error, if any, fails the whole batch. */
async function run(pipeline: ChainableCommander, deadlineMs: number): Promise<unknown[]> {
  const replies = (await withDeadline(pipeline.exec(), deadlineMs)) ?? [];
  return replies.map(([error, reply]) => {
    if (error) throw error;
    return reply;
  });
}

/**
 * Adds the fallback's pending counts to Redis, HANDBACK_CHUNK per round trip, and tells the fallback what
 * Redis now holds for each. Rejects at the first failure; what was not acknowledged stays pending.
 */
export async function sendCounts(
  client: Redis,
  fallback: MemoryCounterStore,
  counts: PendingCount[],
  keyBase: (subject: string) => string,
  deadlineMs: number,
): Promise<void> {
  for (let start = 0; start < counts.length; start += HANDBACK_CHUNK) {
    const chunk = counts.slice(start, start + HANDBACK_CHUNK);
    const pipeline = client.pipeline() as HandBackPipeline;
    for (const c of chunk)
      pipeline.rateLimitAdd(keyBase(c.subject) + c.id, String(c.delta), String(c.value), ttl(c.ttlMs));
    const totals = await run(pipeline, deadlineMs);
    chunk.forEach((c, i) => fallback.acknowledgeCount(c.subject, c.id, c.delta, Number(totals[i])));
  }
}

/** Sets the bans decided during the outage in Redis, like sendCounts. */
export async function sendBans(
  client: Redis,
  fallback: MemoryCounterStore,
  bans: PendingBan[],
  keyBase: (subject: string) => string,
  deadlineMs: number,
): Promise<void> {
  for (let start = 0; start < bans.length; start += HANDBACK_CHUNK) {
    const chunk = bans.slice(start, start + HANDBACK_CHUNK);
    const pipeline = client.pipeline() as HandBackPipeline;
    for (const b of chunk)
      pipeline.rateLimitBan(`${keyBase(b.subject)}ban`, String(b.since), String(b.until), ttl(b.ttlMs));
    await run(pipeline, deadlineMs);
    for (const b of chunk) fallback.acknowledgeBan(b.subject, b.until);
  }
}

function ttl(ms: number): string {
  return String(Math.max(1, Math.ceil(ms)));
}
