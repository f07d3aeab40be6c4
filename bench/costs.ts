/**
 * The cost of one request of each operation, measured on the real service (`node dist/cli.js serve`, as
 * `npm start` runs it) under the benchmark's load (autocannon, 50 connections): server CPU µs (from
 * /proc/<pid>/stat), SQL statements, database round trips and Redis commands (the service's own counters,
 * read from /metrics before and after), and bytes on the wire per request and response (autocannon's
 * totals). On PostgreSQL + Redis, or SQLite with `sqlite` as argument. Numbers for docs/capacity.md.
 *
 *   npm run build && node --import tsx bench/costs.ts [postgres|sqlite] [seconds, default 5]
 */
import autocannon from 'autocannon';
import { readFileSync } from 'node:fs';
import { killAll, serve } from '../support/processes.js';
import { startOrdersService, placeOrderLoad, type OrdersService } from './lib/orders.js';
import type { Load } from './lib/load.js';
import type { Context } from './lib/scenario.js';
import { logFile, serviceArgv } from './lib/service.js';
import { settingsFor } from './lib/load.js';

const backend = (process.argv[2] ?? 'postgres') as 'postgres' | 'sqlite';
const SECONDS = Number(process.argv[3] ?? 5);
// placeOrder takes an available pet per order: SQLite orders ~7,000/s, so it needs more of them for a run.
const PETS = backend === 'sqlite' ? 200_000 : 40_000;
const COUNTERS = [
  'pet_adoption_db_statements_total',
  'pet_adoption_db_round_trips_total',
  'pet_adoption_redis_commands_total',
] as const;

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function counters(origin: string): Promise<number[]> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  return COUNTERS.map((name) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)$`, 'm').exec(text)?.[1]));
}

interface Cost {
  operation: string;
  requests: number;
  rps: number;
  non2xx: number;
  cpuUs: number;
  statements: number;
  roundTrips: number;
  redisCommands: number;
  bytesIn: number;
  bytesOut: number;
}

async function measure(operation: string, target: Load, origin: string): Promise<Cost> {
  const before = await counters(origin);
  const cpu = cpuSeconds(target.pid);
  const result = await autocannon({
    url: target.url,
    connections: 50,
    duration: SECONDS,
    headers: target.headers,
    requests: target.requests,
  });
  const cpuUsed = cpuSeconds(target.pid) - cpu;
  const after = await counters(origin);
  // The two /metrics scrapes send nothing to the stores (test/cost-metrics.test.ts).
  const n = result.requests.total;
  const per = (i: number): number => (after[i]! - before[i]!) / n;
  const requestBytes = target.requests?.[0]?.body ? String(target.requests[0].body).length : 0;
  return {
    operation,
    requests: n,
    rps: result.requests.average,
    non2xx: result.non2xx,
    cpuUs: (cpuUsed / n) * 1e6,
    statements: per(0),
    roundTrips: per(1),
    redisCommands: per(2),
    bytesIn: requestBytes,
    bytesOut: result.throughput.total / n,
  };
}

// costs reads autocannon's own byte counts, so it always drives the load with autocannon.
const settings = settingsFor(false, false, 'autocannon');
const ctx = {
  settings,
  log: (line: string) => console.error(`[costs] ${line}`),
  serve: (name: string, logName: string, env: Record<string, string>, argv?: string[]) =>
    serve(name, env, { argv: argv ?? serviceArgv(settings), logFile: logFile(logName) }),
} as unknown as Context;

let service: OrdersService | undefined;
try {
  service = await startOrdersService(ctx, backend, PETS);
  const s = service;
  const pid = s.server.child.pid!;
  const origin = s.server.origin;
  const auth = { authorization: `Bearer ${s.key}` };
  const json = { ...auth, 'content-type': 'application/json' };
  // Orders to list and to warm up with (by the bench account, which holds orders:manage).
  for (let i = 0; i < 200; i++) {
    await fetch(`${origin}/v1/store/orders`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ petId: s.nextAvailablePet() }),
    });
  }
  const loads: [string, Load][] = [
    ['listPets (limit=20)', { pid, url: `${origin}/v1/pets?limit=20`, headers: auth }],
    [
      'listPets (status=available, limit=100)',
      { pid, url: `${origin}/v1/pets?status=available&limit=100`, headers: auth },
    ],
    [
      'getPet',
      {
        pid,
        url: origin,
        headers: auth,
        requests: Array.from({ length: 1000 }, (_, i) => ({
          method: 'GET' as const,
          path: `/v1/pets/${1 + ((i * 7919) % PETS)}`,
        })),
      },
    ],
    ['listOrders (limit=20)', { pid, url: `${origin}/v1/store/orders?limit=20`, headers: auth }],
    [
      'createPet',
      {
        pid,
        url: origin,
        headers: json,
        requests: [
          { method: 'POST', path: '/v1/pets', body: JSON.stringify({ name: 'Costly', categoryId: 1 }) },
        ],
      },
    ],
    [
      'updatePet (PATCH)',
      {
        pid,
        url: origin,
        headers: { ...auth, 'content-type': 'application/merge-patch+json' },
        requests: Array.from({ length: 1000 }, (_, i) => ({
          method: 'PATCH' as const,
          path: `/v1/pets/${1 + ((i * 7919 + 13) % PETS)}`,
          body: JSON.stringify({ name: i % 2 === 0 ? 'Bench Even' : 'Bench Odd' }),
        })),
      },
    ],
    ['placeOrder', placeOrderLoad(s)],
  ];
  const costs: Cost[] = [];
  for (const [operation, target] of loads) {
    await autocannon({
      url: target.url,
      connections: 50,
      duration: 2,
      headers: target.headers,
      requests: target.requests,
    });
    const cost = await measure(operation, target, origin);
    costs.push(cost);
    console.error(`[costs] ${JSON.stringify(cost)}`);
  }
  console.log(
    `| operation (${backend}) | req/s | cpu µs | SQL statements | DB round trips | Redis commands | bytes in / out |`,
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const c of costs) {
    console.log(
      `| ${c.operation} | ${c.rps.toFixed(0)} | ${c.cpuUs.toFixed(0)} | ${c.statements.toFixed(2)} | ${c.roundTrips.toFixed(2)} | ` +
        `${c.redisCommands.toFixed(2)} | ${c.bytesIn} / ${c.bytesOut.toFixed(0)} |${c.non2xx ? ` (${c.non2xx} non-2xx)` : ''}`,
    );
  }
} finally {
  await service?.cleanup();
  await killAll();
}
