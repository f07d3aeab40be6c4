/**
 * How many requests' worth of work one PostgreSQL and one Redis on this machine sustain, measured with their
 * own load tools and the service's own statements (docs/capacity.md):
 *
 * - PostgreSQL: `pgbench -M prepared` with each of bench/capacity/*.sql (the statements and transactions an
 *   operation sends, copied from the repositories) at 1, 10 and 20 clients, in a schema of its own migrated by
 *   the service's CLI and filled with 1,000 accounts and keys, 10,000 pets and 100,000 more for placeOrder;
 *   dropped afterwards. Scripts that write events run with the feed's publisher beside them (one more
 *   connection numbering the committed events in passes back to back, as busy instances would), its passes
 *   counted.
 * - `--design old` (or `both`): the design before the publisher (main @ 8aa39bb): a schema with only the
 *   migrations it had (001–012, unchanged since), and every event insert taking the events advisory lock
 *   held to COMMIT, as it did then; no publisher. `both` measures old then new in one sitting.
 * - Redis: `redis-benchmark` sending the rate limiter's own EVALSHA (src/ratelimit/redis.ts CONSUME_LUA)
 *   over 10,000 subjects, one command per round trip and auto-pipelined (16 per write), under a key prefix
 *   of its own, deleted afterwards.
 *
 *   npm run build && node --import tsx bench/capacity.ts [seconds per figure, default 10] [clients, default 1,10,20]
 *     --design new | old | both   which design's PostgreSQL schema and scripts (default new)
 *     --only writes | <script,…>  some scripts: the write transactions, or by name (e.g. place-order)
 *     --repeat N                  each figure N times, interleaved (the table gives the median, and min..max)
 *     --no-redis                  PostgreSQL only
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { Redis } from 'ioredis';
import { migrationsFor } from '../src/db/migrations.js';
import { CONSUME_LUA } from '../src/ratelimit/redis-script.js';
import { PG_URL, REDIS_URL, uniqueName } from '../support/services.js';
import { cli } from '../support/processes.js';
import { dropSchema, postgresUrl, withPostgresClient } from '../support/postgres.js';
import { deleteKeys } from '../support/redis.js';

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    design: { type: 'string', default: 'new' },
    only: { type: 'string' },
    repeat: { type: 'string', default: '1' },
    'no-redis': { type: 'boolean', default: false },
  },
});
const DIR = join(dirname(fileURLToPath(import.meta.url)), 'capacity');
const SECONDS = Number(positionals[0] ?? 10);
/** 10 is the service's PG_POOL_SIZE default; 1 and 20 show whether writes queue on something. */
const PG_CLIENTS = (positionals[1] ?? '1,10,20').split(',').map(Number);
const REPEAT = Number(opts.repeat);
const REDIS_CLIENTS = 50;
type Design = 'old' | 'new';
const DESIGNS: Design[] = opts.design === 'both' ? ['old', 'new'] : opts.design === 'old' ? ['old'] : ['new'];
/** The last migration of main @ 8aa39bb: the events feed before the publisher (015) and what came after it. */
const OLD_DESIGN_MIGRATIONS = 12;
if (
  !['old', 'new', 'both'].includes(opts.design) ||
  PG_CLIENTS.some((c) => !(c >= 1)) ||
  !(SECONDS > 0) ||
  !(REPEAT >= 1)
) {
  console.error(
    'usage: bench/capacity.ts [seconds] [clients,…] [--design new|old|both] [--only …] [--repeat N]',
  );
  process.exit(2);
}

/** The scripts to run, by name (file without .sql), with the text each design sends. */
function scripts(): { name: string; sql: string; writesEvents: boolean }[] {
  const all = readdirSync(DIR)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((f) => {
      const sql = readFileSync(join(DIR, f), 'utf8');
      return { name: f.slice(0, -4), sql, writesEvents: sql.includes('INSERT INTO events') };
    });
  const only = opts.only?.split(',').map((s) => s.trim());
  if (!only) return all;
  const picked = all.filter((s) => only.includes(s.name) || (only.includes('writes') && s.writesEvents));
  if (picked.length === 0)
    throw new Error(`--only ${opts.only}: scripts are ${all.map((s) => s.name).join(', ')}`);
  return picked;
}

/**
 * The event insert as it was before the publisher: under the events advisory lock, held to COMMIT (so event
 * order was commit order), exactly as the scripts of 8aa39bb sent it.
 */
function withEventsLock(sql: string): string {
  const insert = /INSERT INTO events (\([^)]*\))\s+VALUES (\(.*\));/s;
  if (!insert.test(sql)) throw new Error('no event insert to put under the lock');
  return sql.replace(
    insert,
    (_all, columns: string, values: string) =>
      `WITH lock AS (SELECT pg_advisory_xact_lock(hashtextextended('["pet-adoption","events"]', 0)))\n` +
      `  INSERT INTO events ${columns}\n  SELECT ${values.slice(1, -1)} FROM lock;`,
  );
}

/** A fresh schema for one design: migrated (all migrations, or the old design's), then filled. */
async function prepare(design: Design): Promise<string> {
  const schema = uniqueName(`capacity_${design}`);
  if (design === 'new') {
    const migrated = await cli(['migrate'], { DATABASE_URL: postgresUrl(schema) });
    if (migrated.code !== 0) throw new Error(`migrate failed: ${migrated.stderr}`);
  }
  await withPostgresClient(async (client) => {
    if (design === 'old') {
      await client.query(`CREATE SCHEMA ${schema}`);
      await client.query(`SET search_path = ${schema}`);
      for (const m of migrationsFor('postgres').slice(0, OLD_DESIGN_MIGRATIONS)) await client.query(m.sql);
    }
    await client.query(`SET search_path = ${schema}`);
    await client.query(`INSERT INTO accounts (name, plan, per_minute, per_day, created_at)
      SELECT 'capacity-' || i, 'enterprise', 1000000000, 1000000000, 1 FROM generate_series(1, 1000) i`);
    await client.query(`INSERT INTO api_keys (id, account_id, hash, hint, created_at)
      SELECT 'key_' || id, id, 'hash-' || id, 'pas_xxxxxx…', 1 FROM accounts`);
    await client.query(`INSERT INTO pets (name, category_id, status, created_at)
      SELECT 'Pet ' || i, 1 + i % 7, (ARRAY['available', 'available', 'pending', 'sold'])[1 + i % 4], 1
      FROM generate_series(1, 10000) i`);
    // placeOrder takes a fresh pet per transaction: enough for 20 clients at a few thousand a second, repeated.
    await client.query(`INSERT INTO pets (name, category_id, status, created_at)
      SELECT 'Held ' || i, 1, 'available', 1 FROM generate_series(1, ${Math.max(100_000, SECONDS * REPEAT * 20_000)}) i`);
    await client.query('CREATE SEQUENCE capacity_pet START 10001');
    await client.query('ANALYZE');
  });
  return schema;
}

interface Figure {
  design: Design;
  script: string;
  clients: number;
  /** Transactions per second of each repetition. */
  tps: number[];
  /** Publisher passes and events it numbered (new design, scripts that write events), over all repetitions. */
  passes?: number;
  events?: number;
}

async function pgbench(schema: string, file: string, clients: number): Promise<number> {
  const url = new URL(PG_URL);
  const { stdout: out } = await promisify(execFile)(
    'pgbench',
    [
      ...['-n', '-M', 'prepared', '-c', String(clients), '-j', String(Math.min(2, clients))],
      ...['-T', String(SECONDS), '-f', file, url.pathname.slice(1)],
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
  const match = /tps = ([\d.]+) \(without initial connection time\)/.exec(out);
  return match ? Number(match[1]) : NaN;
}

async function postgres(): Promise<Figure[]> {
  const tmp = mkdtempSync(join(tmpdir(), 'pet-adoption-capacity-'));
  const schemas = new Map<Design, string>();
  const figures: Figure[] = [];
  try {
    for (const design of DESIGNS) schemas.set(design, await prepare(design));
    const picked = scripts();
    // Repetitions outermost and designs innermost: a burst of load from elsewhere on the machine then spoils
    // one repetition of every figure alike, not all of one design's.
    for (let r = 0; r < REPEAT; r++) {
      for (const script of picked) {
        for (const clients of PG_CLIENTS) {
          for (const design of DESIGNS) {
            const file = join(tmp, `${design}-${script.name}.sql`);
            writeFileSync(
              file,
              design === 'old' && script.writesEvents ? withEventsLock(script.sql) : script.sql,
            );
            const publisher =
              design === 'new' && script.writesEvents ? publishWhile(schemas.get(design)!) : undefined;
            const tps = await pgbench(schemas.get(design)!, file, clients);
            const passes = await publisher?.stop();
            let figure = figures.find(
              (f) => f.design === design && f.script === script.name && f.clients === clients,
            );
            if (!figure) figures.push((figure = { design, script: script.name, clients, tps: [] }));
            figure.tps.push(tps);
            if (passes) {
              figure.passes = (figure.passes ?? 0) + passes.passes;
              figure.events = (figure.events ?? 0) + passes.events;
            }
            console.log(
              `pgbench ${script.name} (${design} design): ${tps.toFixed(0)} transactions/s ` +
                `(${clients} clients, ${SECONDS} s)` +
                (passes ? `; publisher: ${passes.passes} passes, ${passes.events} events numbered` : ''),
            );
          }
        }
      }
    }
  } finally {
    for (const schema of schemas.values()) await dropSchema(schema);
    rmSync(tmp, { recursive: true, force: true });
  }
  console.log(`\n${table(figures)}`);
  return figures;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** One row per script (and design), one column per client count: median tps, and min..max when repeated. */
function table(figures: Figure[]): string {
  const cell = (f: Figure | undefined): string => {
    if (!f) return '—';
    const m = median(f.tps).toFixed(0);
    return f.tps.length > 1 ? `${m} (${Math.min(...f.tps).toFixed(0)}..${Math.max(...f.tps).toFixed(0)})` : m;
  };
  const rows = [...new Set(figures.map((f) => `${f.script}|${f.design}`))].map((key) => {
    const [script, design] = key.split('|');
    const cells = PG_CLIENTS.map((c) =>
      cell(figures.find((f) => f.script === script && f.design === design && f.clients === c)),
    );
    return [`${script} (${design})`, ...cells];
  });
  // Old → new at each client count, when both designs ran.
  if (DESIGNS.length === 2) {
    for (const script of [...new Set(figures.map((f) => f.script))]) {
      const ratio = PG_CLIENTS.map((c) => {
        const [o, n] = DESIGNS.map((d) =>
          figures.find((f) => f.script === script && f.design === d && f.clients === c),
        );
        return o && n ? `${(median(n.tps) / median(o.tps)).toFixed(2)}×` : '—';
      });
      rows.push([`${script} new ÷ old`, ...ratio]);
    }
  }
  const header = [
    'transactions/s (script, design)',
    ...PG_CLIENTS.map((c) => `${c} client${c === 1 ? '' : 's'}`),
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
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

const pgFigures = await postgres();
const redisFigures = opts['no-redis'] ? undefined : await redis();
console.log(
  JSON.stringify(
    {
      seconds: SECONDS,
      clients: PG_CLIENTS,
      repeat: REPEAT,
      postgres: pgFigures.map((f) => ({ ...f, medianTps: median(f.tps) })),
      redis: redisFigures,
    },
    null,
    2,
  ),
);
