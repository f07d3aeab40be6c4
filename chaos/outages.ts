/**
 * Outages, through a TCP proxy (support/tcp-proxy.ts) in front of each store:
 * - PostgreSQL silent (open connections frozen, new ones accepted into nowhere) and down (connections dropped,
 *   port refused): how long requests and /readyz take to answer 503 (target: DB_TIMEOUT_MS + 100 ms), and how
 *   long service takes to resume once PostgreSQL is back.
 * - Redis down for one instance in the middle of a minute: how many requests that instance admits in the
 *   minute, before, during and after the outage, against the key's per-minute quota (target: never more).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { serve, terminate, type Server } from '../support/processes.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import {
  createKey,
  ms,
  NoAnswer,
  PeakRss,
  percentile,
  PG_URL,
  postgresEnv,
  REDIS_URL,
  request,
  row,
  sqliteEnv,
  type Cleanup,
  type ExperimentResult,
  type Row,
  type Settings,
} from './common.js';

const DB_TIMEOUT_MS = 1000;
const BOUND_MS = DB_TIMEOUT_MS + 100;
/** The Redis experiment's per-minute quota. */
const QUOTA = 40;
/** Generous: only there so that a hang ends the measurement instead of the run. */
const HANG_MS = 15_000;

async function startProxy(url: string, label: string, cleanup: Cleanup): Promise<TcpProxy> {
  const target = new URL(url);
  const port = Number(target.port || (target.protocol.startsWith('redis') ? 6379 : 5432));
  const proxy = await new TcpProxy({ host: target.hostname, port }, label).start();
  cleanup.add(`close ${proxy}`, () => proxy.close());
  return proxy;
}

/** Time to an answer, or NaN and the error code when none came within HANG_MS. */
async function timed(
  base: string,
  method: string,
  path: string,
  key?: string,
): Promise<{ ms: number; status: number | string }> {
  const started = performance.now();
  try {
    const body = method === 'POST' ? { name: 'outage', categoryId: 1 } : undefined;
    const answer = await request(base, method, path, { key, body, timeoutMs: HANG_MS });
    return { ms: answer.ms, status: answer.status };
  } catch (error) {
    if (!(error instanceof NoAnswer)) throw error;
    return { ms: performance.now() - started, status: error.code };
  }
}

async function postgresShape(
  shape: 'silent' | 'down',
  server: Server,
  proxy: TcpProxy,
  key: string,
): Promise<{ rows: Row[]; details: Record<string, unknown> }> {
  // Fill the pool, so the fault lands under open connections as it would in production.
  await Promise.all(Array.from({ length: 6 }, () => timed(server.base, 'GET', '/pets?limit=5', key)));
  if (shape === 'silent') proxy.blackhole();
  else {
    proxy.dropAll();
    proxy.refuse();
  }
  const requests: Array<{ ms: number; status: number | string }> = [];
  const readyz: Array<{ ms: number; status: number | string }> = [];
  await Promise.all([
    ...Array.from({ length: 6 }, async (_, w) => {
      for (let i = 0; i < 2; i++) {
        requests.push(
          await timed(server.base, w % 2 ? 'POST' : 'GET', w % 2 ? '/pets' : '/pets?limit=5', key),
        );
      }
    }),
    (async () => {
      for (let i = 0; i < 3; i++) readyz.push(await timed(server.origin, 'GET', '/readyz'));
    })(),
  ]);
  const restored = performance.now();
  await proxy.restore();
  let recoveryMs = NaN;
  while (performance.now() - restored < 30_000) {
    const probe = await timed(server.base, 'GET', '/pets?limit=1', key);
    if (probe.status === 200) {
      recoveryMs = performance.now() - restored;
      break;
    }
    await sleep(50);
  }
  const summarise = (what: string, samples: typeof requests): Row => {
    const times = samples.map((s) => s.ms);
    const all503 = samples.every((s) => s.status === 503);
    const others = samples.filter((s) => s.status !== 503).map((s) => s.status);
    return row(
      `PostgreSQL ${shape}: ${what} to 503, p50 / max (n=${samples.length}${all503 ? '' : `; not 503: ${others.join(',')}`})`,
      `${ms(percentile(times, 50))} / ${ms(Math.max(...times))}`,
      `≤ ${BOUND_MS} ms`,
      all503 && Math.max(...times) <= BOUND_MS,
    );
  };
  return {
    rows: [
      summarise('requests', requests),
      summarise('/readyz', readyz),
      row(
        `PostgreSQL ${shape}: service back after PostgreSQL returns`,
        ms(recoveryMs),
        '≤ 15 s',
        recoveryMs <= 15_000,
      ),
    ],
    details: { requests, readyz, recoveryMs },
  };
}

async function postgresOutages(
  cleanup: Cleanup,
  rss: PeakRss,
): Promise<{ rows: Row[]; details: Record<string, unknown> }> {
  const proxy = await startProxy(PG_URL, 'pg', cleanup);
  const env = { ...(await postgresEnv(cleanup, 'outage', proxy.port)), DB_TIMEOUT_MS: String(DB_TIMEOUT_MS) };
  const key = await createKey(env);
  const server = await serve('outage-pg', env);
  rss.watch(server.child);
  const silent = await postgresShape('silent', server, proxy, key);
  const down = await postgresShape('down', server, proxy, key);
  await terminate(server);
  return { rows: [...silent.rows, ...down.rows], details: { silent: silent.details, down: down.details } };
}

/** Sends GETs until the first 429 (or `max`); how many were admitted. */
async function admitted(base: string, key: string, max: number): Promise<number> {
  let ok = 0;
  for (let i = 0; i < max; i++) {
    const { status } = await timed(base, 'GET', '/pets?limit=1', key);
    if (status === 429) break;
    if (status === 200) ok++;
  }
  return ok;
}

async function rateLimitStore(server: Server): Promise<string> {
  const answer = await request(server.origin, 'GET', '/readyz', { timeoutMs: HANG_MS });
  return (JSON.parse(answer.text) as { rateLimitStore: string }).rateLimitStore;
}

async function redisOutage(
  cleanup: Cleanup,
  rss: PeakRss,
): Promise<{ rows: Row[]; details: Record<string, unknown> }> {
  const proxy = await startProxy(REDIS_URL, 'redis', cleanup);
  const through = new URL(REDIS_URL);
  through.port = String(proxy.port);
  const env = {
    ...sqliteEnv(cleanup),
    REDIS_URL: through.toString(),
    REDIS_PREFIX: await cleanup.redisPrefix('outage'),
  };
  const key = await createKey(env, QUOTA);
  const server = await serve('outage-redis', env);
  rss.watch(server.child);
  // Fixed windows follow the UTC minute: the whole scenario must fit in one.
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 20_000) await sleep(left + 250);
  const minute = Math.floor(Date.now() / 60_000);
  const before = await admitted(server.base, key, Math.round((QUOTA * 5) / 8));
  proxy.dropAll();
  proxy.refuse();
  const during = await admitted(server.base, key, 2 * QUOTA);
  const storeDuring = await rateLimitStore(server);
  await proxy.restore();
  const back = performance.now();
  while ((await rateLimitStore(server)) !== 'redis' && performance.now() - back < 10_000) await sleep(50);
  const reconnectMs = performance.now() - back;
  const afterwards = await admitted(server.base, key, 2 * QUOTA);
  const sameMinute = Math.floor(Date.now() / 60_000) === minute;
  await terminate(server);
  const total = before + during + afterwards;
  return {
    rows: [
      row(
        `Redis down for one instance mid-minute: admitted in the minute (${before} before + ${during} during + ${afterwards} after)${sameMinute ? '' : ' [crossed a minute: invalid]'}`,
        total,
        `≤ ${QUOTA} (quota)`,
        sameMinute && total <= QUOTA,
      ),
    ],
    details: { quota: QUOTA, before, during, afterwards, storeDuring, reconnectMs, sameMinute },
  };
}

export async function outages(settings: Settings, cleanup: Cleanup): Promise<ExperimentResult> {
  if (!settings.external) {
    return {
      name: 'outages',
      rows: [row('all', 'skipped', 'PostgreSQL and Redis unreachable', undefined)],
      details: {},
    };
  }
  const rss = new PeakRss();
  const pg = await postgresOutages(cleanup, rss);
  const redis = await redisOutage(cleanup, rss);
  return {
    name: 'outages',
    rows: [...pg.rows, ...redis.rows],
    details: { dbTimeoutMs: DB_TIMEOUT_MS, postgres: pg.details, redis: redis.details },
    peakRssMb: rss.stop(),
  };
}
