/**
 * Webhooks on the embedded default (SQLite; webhooksPostgres.ts runs the same on PostgreSQL + Redis): the
 * service of its own (a fresh database of 10,000 pets, since the shared service's environment has no
 * WEBHOOK_ALLOW_HOSTS) with one endpoint subscribed to every event on a receiver in this process that
 * answers 200 at once. Reports POST /v1/pets and GET /v1/pets?limit=20
 * against the baseline with the endpoint subscribed; then a POST run as fast as answered: deliveries
 * received per second from its start until the queue has drained (the throughput); then POSTs paced at
 * 500/s, the throughput target: p99 from commit (the event's timestamp) to receipt (the latency).
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { externalServicesAvailable, PG_URL, REDIS_URL, uniqueName } from '../../support/services.js';
import { terminate, type Server } from '../../support/processes.js';
import { dropSchema, postgresUrl } from '../../support/postgres.js';
import { deleteKeys } from '../../support/redis.js';
import { defineScenario, Skip, type Outcome, type Scenario } from '../lib/scenario.js';
import { createKey, logFile, seed, trimLog } from '../lib/service.js';

const PETS = 10_000;
/** The delivery latency is measured with POSTs paced at the throughput target, for this long. */
const PACED_PER_S = 500;
const PACED_S = 10;
/** The queue counts as drained when nothing arrived for this long. */
const QUIET_MS = 2000;

interface State {
  dir: string;
  receiver: http.Server;
  /** Receipt time and commit-to-receipt latency (ms) of every delivery. */
  received: { at: number; latencyMs: number }[];
  server?: Server;
  key?: string;
  /** PostgreSQL: the schema and Redis key prefix of this run, dropped afterwards. */
  schema?: string;
}

function startReceiver(received: State['received']): http.Server {
  return http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const { timestamp } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { timestamp: string };
      received.push({ at, latencyMs: at - Date.parse(timestamp) });
      res.writeHead(200).end();
    });
  });
}

const percentile = (xs: number[], p: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
};

async function drained(received: State['received']): Promise<void> {
  for (let seen = -1; seen !== received.length;) {
    seen = received.length;
    await pause(QUIET_MS);
  }
}

export function webhooksScenario(backend: 'sqlite' | 'postgres'): Scenario<State> {
  const pg = backend === 'postgres';
  const logName = pg ? 'service-webhooks-postgres' : 'service-webhooks';
  return defineScenario({
    name: pg ? 'webhooksPostgres' : 'webhooks',
    label: `POST /v1/pets with a webhook endpoint on every event${pg ? ' on PostgreSQL + Redis' : ''}`,
    order: pg ? 206 : 150,
    ...(pg ? { tags: ['postgres'] } : {}),
    usesSqlite: false,
    // Judged on the embedded default; reported on PostgreSQL + Redis, like its other write rows.
    ...(pg
      ? {}
      : {
          target: {
            bounds: [
              { metric: 'ratio', atLeast: 0.15 },
              { metric: 'listRatio', atLeast: 0.35 },
              { metric: 'deliveriesPerS', atLeast: 500 },
              { metric: 'deliveryP99Ms', atMost: 1000 },
            ],
            context: 'SQLite, 10,000 pets',
          },
        }),
    async setup(ctx): Promise<State> {
      if (pg && !(await externalServicesAvailable())) {
        throw new Skip(`PostgreSQL at ${PG_URL} or Redis at ${REDIS_URL} is unreachable`);
      }
      const received: State['received'] = [];
      const state: State = {
        dir: mkdtempSync(join(tmpdir(), 'pet-adoption-bench-webhooks-')),
        receiver: startReceiver(received),
        received,
      };
      state.receiver.listen(0, '127.0.0.1');
      await once(state.receiver, 'listening');
      const env: Record<string, string> = {
        DATABASE_URL: `sqlite:${join(state.dir, 'db.sqlite')}`,
        WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
        LOG_LEVEL: 'info',
        NODE_OPTIONS: '',
      };
      if (pg) {
        state.schema = uniqueName('bench_webhooks');
        Object.assign(env, {
          DATABASE_URL: postgresUrl(state.schema),
          REDIS_URL,
          REDIS_PREFIX: `${state.schema}:`,
        });
      }
      state.key = await createKey(env, 'bench');
      await seed(env, PETS);
      state.server = await ctx.serve(`service (webhooks, ${backend})`, logName, env);
      const url = `http://127.0.0.1:${(state.receiver.address() as AddressInfo).port}/hook`;
      const res = await fetch(`${state.server.base}/webhook-endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${state.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url, events: ['*'] }),
      });
      if (res.status !== 201) throw new Error(`endpoint not created (${res.status}): ${await res.text()}`);
      return state;
    },
    async measure(ctx, state): Promise<Outcome> {
      const server = state.server!;
      const headers = { authorization: `Bearer ${state.key!}` };
      const post = {
        pid: server.child.pid!,
        url: server.origin,
        headers: { ...headers, 'content-type': 'application/json' },
        requests: [
          {
            method: 'POST' as const,
            path: '/v1/pets',
            body: JSON.stringify({ name: 'Hooked', categoryId: 3 }),
          },
        ],
        // Deliveries still running after a round would otherwise share the machine with the next baseline
        // round and lower it.
        settle: () => drained(state.received),
      };
      const created = await ctx.measure('POST /v1/pets (webhook endpoint on *)', post);
      const list = await ctx.measure('GET /v1/pets?limit=20 (webhook endpoint on *)', {
        pid: server.child.pid!,
        url: `${server.origin}/v1/pets?limit=20`,
        headers,
      });
      await drained(state.received);

      // Throughput: a POST run as fast as the service answers, then until the queue drains. The commits
      // outpace one instance's deliveries here (both share one event loop), so the latency of this run is
      // the age of the backlog at its end, reported but not judged.
      const from = state.received.length;
      const start = Date.now();
      const run = await ctx.run(post, ctx.settings.rounds * ctx.settings.roundS);
      await drained(state.received);
      const deliveries = state.received.slice(from);
      const seconds = ((deliveries.at(-1)?.at ?? start) - start) / 1000;
      const deliveriesPerS = deliveries.length / seconds;
      const backlogP99Ms = percentile(
        deliveries.map((d) => d.latencyMs),
        99,
      );

      // Latency: commit → receipt while events arrive at the throughput target's rate (POSTs paced at
      // PACED_PER_S from an empty queue), i.e. what a receiver sees when the instance delivers as fast as
      // it commits.
      const pacedFrom = state.received.length;
      const paced = await ctx.run({ ...post, overallRate: PACED_PER_S }, ctx.settings.quick ? 3 : PACED_S);
      await drained(state.received);
      const pacedLatencies = state.received.slice(pacedFrom).map((d) => d.latencyMs);
      const deliveryP50Ms = percentile(pacedLatencies, 50);
      const deliveryP99Ms = percentile(pacedLatencies, 99);
      const failures =
        created.non2xx +
        created.errors +
        list.non2xx +
        list.errors +
        run.non2xx +
        run.errors +
        paced.non2xx +
        paced.errors;
      const missing = run.requests - deliveries.length + (paced.requests - pacedLatencies.length);
      return {
        row: {
          rps: created.rps,
          ratio: created.ratio,
          ratios: created.ratios,
          p50: created.p50,
          p99: created.p99,
          cpuUs: created.cpuUs,
          note:
            `list ${list.rps.toFixed(0)} req/s, ratio ${list.ratio.toFixed(2)}; ` +
            `${deliveries.length} deliveries in ${seconds.toFixed(1)} s = ${deliveriesPerS.toFixed(0)}/s ` +
            `(POST ${run.rps.toFixed(0)} req/s, backlog age p99 ${backlogP99Ms.toFixed(0)} ms); ` +
            `at ${PACED_PER_S} POST/s: commit→receipt p50 ${deliveryP50Ms.toFixed(0)} ms ` +
            `p99 ${deliveryP99Ms.toFixed(0)} ms` +
            (missing > 0 ? `; ${missing} created pets not delivered` : ''),
        },
        metrics: { ratio: created.ratio, listRatio: list.ratio, deliveriesPerS, deliveryP99Ms },
        failures: failures + Math.max(0, missing),
      };
    },
    async teardown(state) {
      if (state.server) await terminate(state.server);
      trimLog(logFile(logName));
      state.receiver.closeAllConnections();
      await new Promise<void>((resolve) => state.receiver.close(() => resolve()));
      rmSync(state.dir, { recursive: true, force: true });
      if (state.schema) {
        await dropSchema(state.schema);
        await deleteKeys(REDIS_URL, `${state.schema}:`);
      }
    },
  });
}

export default webhooksScenario('sqlite');
