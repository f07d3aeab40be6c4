/**
 * Micro-benchmarks of the hot path's pieces, before and after each optimisation in bench/README.md, in one
 * process (best of 10 batches, so other load on the machine inflates them less than the HTTP figures).
 *
 *   node --import tsx bench/micro.ts
 */
import * as crypto from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fastJson from 'fast-json-stringify';
import pino from 'pino';
import { Histogram, Registry } from 'prom-client';
import { generateApiKey, generateKeyId, hashApiKey, keyHint } from '../src/modules/accounts/keys.js';
import { RateLimiter } from '../src/ratelimit/limiter.js';
import { MemoryCounterStore } from '../src/ratelimit/memory.js';
import type { ConsumeRequest, ConsumeResult, CounterStore } from '../src/ratelimit/store.js';
import { Pets } from '../src/modules/pets/schemas.js';
import { SqliteDatabase } from '../src/db/sqlite.js';
import { accountRepository } from '../src/modules/accounts/repository.js';
import { petRepository } from '../src/modules/pets/repository.js';

async function bench(label: string, fn: () => unknown, n = 40_000): Promise<number> {
  for (let i = 0; i < Math.min(n, 5000); i++) await fn();
  const batches: number[] = [];
  for (let b = 0; b < 10; b++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < n / 10; i++) await fn();
    batches.push(Number(process.hrtime.bigint() - t) / (n / 10) / 1000);
  }
  const best = Math.min(...batches);
  process.stdout.write(`${label.padEnd(74)} ${best.toFixed(2).padStart(7)} µs\n`);
  return best;
}

const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-micro-'));
const file = join(dir, 'micro.db');
const storage = new SqliteDatabase(file);
await storage.repository(petRepository).seed(100_000, Date.now());
const account = await storage
  .repository(accountRepository)
  .upsertAccount({ name: 'micro', plan: 'enterprise' }, Date.now());
const key = generateApiKey();
const hash = hashApiKey(key);
await storage
  .repository(accountRepository)
  .createKey(account.id, { id: generateKeyId(), hash, hint: keyHint(key), expiresAt: null }, Date.now());

// The statements as they were before: bound LIMIT, row objects built by better-sqlite3.
const db = new Database(file);
const cols = 'id, name, category_id AS categoryId, status';
const boundAll = db.prepare(`SELECT ${cols} FROM pets WHERE id > ? ORDER BY id LIMIT ?`);
const boundStatus = db.prepare(`SELECT ${cols} FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ?`);
const literalAll = db.prepare(`SELECT ${cols} FROM pets WHERE id > ? ORDER BY id LIMIT 21`);
const findKey = db.prepare(
  `SELECT k.id AS keyId, k.expires_at AS expiresAt, k.revoked_at AS revokedAt, a.id, a.name, a.plan,
          a.per_minute AS perMinute, a.per_day AS perDay, a.ban_lifted_at AS banLiftedAt
   FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.hash = ?`,
);
const pageJson = db
  .prepare(
    `SELECT '[' || coalesce(group_concat(pet, ',' ORDER BY id), '') || ']' FROM (
       SELECT id, json_object('id', id, 'name', name, 'categoryId', category_id, 'status', status) AS pet
       FROM pets WHERE id > ? ORDER BY id LIMIT 20)`,
  )
  .pluck();
const serialize = fastJson(Pets as object);

process.stdout.write('page of 20 (what GET /v1/pets?limit=20 asks the storage: 21 rows), serialized:\n');
await bench('  before: bound LIMIT ?, better-sqlite3 row objects', () => {
  const rows = boundAll.all(0, 21) as unknown[];
  rows.length = 20;
  return serialize(rows);
});
await bench('  literal LIMIT 21, better-sqlite3 row objects', () => {
  const rows = literalAll.all(0) as unknown[];
  rows.length = 20;
  return serialize(rows);
});
await bench('  after: SqliteDatabase.listPets (literal LIMIT, raw rows + JS objects)', async () => {
  const rows = await storage.repository(petRepository).list({ limit: 21 });
  rows.length = 20;
  return serialize(rows);
});
await bench('  not applied: page JSON written by SQLite (json_object + group_concat)', () => pageJson.get(0));

process.stdout.write('page of 100 with status=available (101 rows), serialized:\n');
await bench(
  '  before: bound LIMIT ?, better-sqlite3 row objects',
  () => {
    const rows = boundStatus.all('available', 0, 101) as unknown[];
    rows.length = 100;
    return serialize(rows);
  },
  10_000,
);
await bench(
  '  after: SqliteDatabase.listPets',
  async () => {
    const rows = await storage.repository(petRepository).list({ status: 'available', limit: 101 });
    rows.length = 100;
    return serialize(rows);
  },
  10_000,
);

process.stdout.write('authentication (per request):\n');
await bench('  before: sha256 via createHash().update().digest()', () =>
  crypto.createHash('sha256').update(key).digest('hex'),
);
await bench('  after: hashApiKey (crypto.hash one-shot)', () => hashApiKey(key));
await bench('  before: key lookup, one JOIN query per request', () => {
  const row = findKey.get(hash) as Record<string, unknown>;
  const { keyId, expiresAt, revokedAt, ...acc } = row;
  return { keyId, expiresAt, revokedAt, account: acc };
});
// findKeyByHash answers the lookups of one event-loop turn together (TurnBatch): under the benchmark's 50
// connections a turn carries many, so time 50 at once and report the cost per lookup.
const TURN = 50;
const perTurn = await bench(
  '  after: findKeyByHash, 50 in one turn (data_version once + cache hits)',
  () =>
    Promise.all(
      Array.from({ length: TURN }, () => storage.repository(accountRepository).findKeyByHash(hash)),
    ),
  4_000,
);
process.stdout.write(`${'    … per lookup'.padEnd(74)} ${(perTurn / TURN).toFixed(2).padStart(7)} µs\n`);

process.stdout.write('rate limit (per request):\n');
/** The memory store's hot path as it was: each window key built and looked up twice. */
class BeforeStore implements CounterStore {
  readonly kind = 'memory' as const;
  private readonly counters = new Map<string, { value: number; expiresAt: number }>();
  private read(key: string, now: number): number {
    const e = this.counters.get(key);
    if (!e) return 0;
    if (e.expiresAt <= now) {
      this.counters.delete(key);
      return 0;
    }
    return e.value;
  }
  private increment(key: string, ttl: number, now: number): number {
    const e = this.counters.get(key);
    if (e && e.expiresAt > now) return ++e.value;
    this.counters.set(key, { value: 1, expiresAt: now + ttl });
    return 1;
  }
  consume(r: ConsumeRequest): Promise<ConsumeResult> {
    const now = Date.now();
    const counts = r.windows.map((w) => this.read(`${r.subject}|${w.id}`, now));
    const allowed = r.windows.every((w, i) => counts[i]! < w.limit);
    if (allowed)
      r.windows.forEach((w, i) => (counts[i] = this.increment(`${r.subject}|${w.id}`, w.ttlMs, now)));
    return Promise.resolve({ allowed, counts, bannedUntil: null });
  }
  healthy(): boolean {
    return true;
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}
const quota = { perMinute: 1e9, perDay: 1e9 };
const before = new RateLimiter(new BeforeStore(), { banThresholdFactor: 1, banSeconds: 900 });
const memory = new MemoryCounterStore();
const after = new RateLimiter(memory, { banThresholdFactor: 1, banSeconds: 900 });
await bench(
  '  before: limiter.check, two lookups per window',
  () => before.check('a:1', quota, Date.now()),
  200_000,
);
await bench(
  '  after: limiter.check, one lookup per window',
  () => after.check('a:1', quota, Date.now()),
  200_000,
);
await memory.close();

process.stdout.write('response headers and observability (per request):\n');
const cursor = Buffer.from('id:20').toString('base64url');
await bench(
  '  before: Link header through URLSearchParams',
  () => {
    const params = new URLSearchParams({ limit: '20' });
    params.set('cursor', cursor);
    return `</v1/pets?${params.toString()}>; rel="next"`;
  },
  200_000,
);
await bench(
  '  after: Link header by template',
  () => `</v1/pets?limit=${20}&cursor=${cursor}>; rel="next"`,
  200_000,
);
const logger = pino(
  { level: 'info', redact: ['req.headers.authorization', 'headers.authorization'] },
  pino.destination({ dest: join(dir, 'micro.log'), sync: false }),
);
const child = logger.child({ reqId: crypto.randomUUID() });
await bench(
  '  kept: access log line (pino child + info, async destination)',
  () => {
    logger.child({ reqId: 'x' });
    child.info({ method: 'GET', url: '/v1/pets?limit=20', statusCode: 200, ms: 1.2 }, 'request');
  },
  100_000,
);
const registry = new Registry();
const histogram = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'x',
  labelNames: ['method', 'route', 'status_code'],
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});
await bench(
  '  kept: prom-client histogram observe with labels',
  () => histogram.observe({ method: 'GET', route: '/v1/pets', status_code: '200' }, 0.0012),
  200_000,
);
await bench('  kept: request id (crypto.randomUUID)', () => crypto.randomUUID(), 200_000);

logger.flush();
db.close();
await storage.close();
rmSync(dir, { recursive: true, force: true });
