/**
 * How many requests' worth of work one PostgreSQL and one Redis on this machine sustain, measured with their
 * own load tools and the service's own statements (docs/capacity.md):
 *
 * - PostgreSQL: `pgbench -M prepared` with each of bench/capacity/*.sql (the statements and transactions an
 *   operation sends, copied from the repositories), in a schema of its own migrated by the service's CLI and
 *   filled with 1,000 accounts and keys, 10,000 pets and 100,000 more for placeOrder; dropped afterwards.
 * - Redis: `redis-benchmark` sending the rate limiter's own EVALSHA (src/ratelimit/redis.ts CONSUME_LUA)
 *   over 10,000 subjects, one command per round trip and auto-pipelined (16 per write), under a key prefix
 *   of its own, deleted afterwards.
 *
 * - Scripts that write events run with the feed's publisher beside them (one more connection numbering the
 *   committed events in passes back to back, as busy instances would), its passes counted.
 *
 *   npm run build && node --import tsx bench/capacity.ts [seconds per figure, default 10] [pgbench clients, default 10]
 */
import { execFile, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { CONSUME_LUA } from '../src/ratelimit/redis.js';
import { PG_URL, REDIS_URL, uniqueName } from '../support/services.js';
import { cli } from '../support/processes.js';
import { dropSchema, postgresUrl, withPostgresClient } from '../support/postgres.js';
import { deleteKeys } from '../support/redis.js';

const DIR = join(dirname(fileURLToPath(import.meta.url)), 'capacity');
const SECONDS = Number(process.argv[2] ?? 10);
const PG_CLIENTS = Number(process.argv[3] ?? 10); // default: the service's PG_POOL_SIZE default
const REDIS_CLIENTS = 50;

async function postgres(): Promise<Record<string, number>> {
  const schema = uniqueName('capacity');
  const tps: Record<string, number> = {};
  try {
    const migrated = await cli(['migrate'], { DATABASE_URL: postgresUrl(schema) });
    if (migrated.code !== 0) throw new Error(`migrate failed: ${migrated.stderr}`);
    await withPostgresClient(async (client) => {
      await client.query(`SET search_path = ${schema}`);
      await client.query(`INSERT INTO accounts (name, plan, per_minute, per_day, created_at)
        SELECT 'capacity-' || i, 'enterprise', 1000000000, 1000000000, 1 FROM generate_series(1, 1000) i`);
      await client.query(`INSERT INTO api_keys (id, account_id, hash, hint, created_at)
        SELECT 'key_' || id, id, 'hash-' || id, 'pas_xxxxxx…', 1 FROM accounts`);
      await client.query(`INSERT INTO pets (name, category_id, status, created_at)
        SELECT 'Pet ' || i, 1 + i % 7, (ARRAY['available', 'available', 'pending', 'sold'])[1 + i % 4], 1
        FROM generate_series(1, 10000) i`);
      await client.query(`INSERT INTO pets (name, category_id, status, created_at)
        SELECT 'Held ' || i, 1, 'available', 1 FROM generate_series(1, 100000) i`);
      await client.query('CREATE SEQUENCE capacity_pet START 10001');
      await client.query('ANALYZE');
    });
    const url = new URL(PG_URL);
    for (const file of readdirSync(DIR)
      .filter((f) => f.endsWith('.sql'))
      .sort()) {
      const publisher = readFileSync(join(DIR, file), 'utf8').includes('INSERT INTO events')
        ? publishWhile(schema)
        : undefined;
      const { stdout: out } = await promisify(execFile)(
        'pgbench',
        [
          '-n',
          '-M',
          'prepared',
          '-c',
          String(PG_CLIENTS),
          '-j',
          '2',
          '-T',
          String(SECONDS),
          '-f',
          join(DIR, file),
          url.pathname.slice(1),
        ],
        {
          encoding: 'utf8',
          env: {
            ...process.env,
            PGHOST: url.hostname,
            PGPORT: url.port || '5432',
            PGUSER: decodeURIComponent(url.username) || 'postgres',
            PGOPTIONS: `-c search_path=${schema}`,
          },
        },
      );
      const passes = await publisher?.stop();
      const match = /tps = ([\d.]+) \(without initial connection time\)/.exec(out);
      tps[file.replace('.sql', '')] = match ? Number(match[1]) : NaN;
      console.log(
        `pgbench ${file}: ${tps[file.replace('.sql', '')]!.toFixed(0)} transactions/s (${PG_CLIENTS} clients, ${SECONDS} s)` +
          (passes === undefined
            ? ''
            : `; publisher: ${passes.passes} passes, ${passes.events} events numbered`),
      );
    }
  } finally {
    await dropSchema(schema);
  }
  return tps;
}

/** The feed's publisher, passes back to back on a connection of its own, until stopped. */
function publishWhile(schema: string): { stop(): Promise<{ passes: number; events: number }> } {
  let running = true;
  const counts = { passes: 0, events: 0 };
  const done = withPostgresClient(async (client) => {
    await client.query(`SET search_path = ${schema}`);
    while (running) {
      const { rows } = await client.query<{ n: number }>('SELECT publish_events(5000) AS n');
      counts.passes++;
      counts.events += rows[0]!.n;
      // Nothing was waiting: a service would not ask again before its next write either.
      if (rows[0]!.n === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    }
  });
  return {
    async stop() {
      running = false;
      await done;
      return counts;
    },
  };
}

async function redis(): Promise<Record<string, number>> {
  const prefix = `${uniqueName('capacity')}:`;
  const client = new Redis(REDIS_URL);
  const rps: Record<string, number> = {};
  try {
    const sha = (await client.script('LOAD', CONSUME_LUA)) as string;
    const url = new URL(REDIS_URL);
    const base = `${prefix}{__rand_int__}|`;
    // What the limiter sends for an allowed request: the minute and day windows, rejected counter, ban.
    const command = ['EVALSHA', sha, '4', `${base}m`, `${base}d`, `${base}r`, `${base}ban`];
    // One group of one consume (ARGV[1], ARGV[2]): a quiet account's request; a busy one's share a call per turn.
    command.push(
      '1',
      '1',
      '2',
      '1000000000',
      '1000000000',
      '60000',
      '86400000',
      '-1',
      '900000',
      '1',
      '-1',
      '900001',
    );
    const n = String(Math.max(50_000, SECONDS * 20_000));
    for (const pipeline of [1, 16]) {
      const result = spawnSync(
        'redis-benchmark',
        [
          '-h',
          url.hostname,
          '-p',
          url.port || '6379',
          '-c',
          String(REDIS_CLIENTS),
          '-n',
          n,
          '-r',
          '10000',
          '-P',
          String(pipeline),
          '--csv',
          ...command,
        ],
        { encoding: 'utf8' },
      );
      const line = result.stdout.trim().split('\n').at(-1) ?? '';
      const value = Number(line.split(',')[1]?.replace(/"/g, ''));
      rps[`evalsha_P${pipeline}`] = value;
      console.log(`redis-benchmark EVALSHA consume, pipeline ${pipeline}: ${value.toFixed(0)} commands/s`);
    }
  } finally {
    await deleteKeys(REDIS_URL, prefix).catch(() => 0);
    client.disconnect();
  }
  return rps;
}

console.log(JSON.stringify({ postgres: await postgres(), redis: await redis() }, null, 2));
