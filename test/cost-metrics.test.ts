/**
 * The per-request cost counters behind docs/capacity.md are in /metrics (statements, database round trips,
 * Redis commands), they count what the operations really send, and two instances on one database (and one
 * Redis) each show the same cost per request as one instance alone: scaling out adds no per-request work
 * (no cross-instance chatter, no cache that a second instance defeats).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import type { Database } from '../src/db/database.js';
import { SqliteDatabase } from '../src/db/sqlite.js';
import { mintKey } from '../src/modules/accounts/mint.js';
import { accountRepository } from '../src/modules/accounts/repository.js';
import { MemoryCounterStore } from '../src/ratelimit/memory.js';
import type { CounterStore } from '../src/ratelimit/store.js';
import { bearer, defaultTestConfig, externalServicesAvailable, uniqueName } from './helpers.js';
import { createTestPostgresDatabase, dropSchema } from '../support/postgres.js';
import { createTestRedisStore } from '../support/redis.js';

interface Instances {
  databases: [Database, Database];
  stores: [CounterStore, CounterStore];
  close(): Promise<void>;
}

async function sqliteInstances(): Promise<Instances> {
  const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-costs-'));
  const databases: [Database, Database] = [
    new SqliteDatabase(join(dir, 'shared.db')),
    new SqliteDatabase(join(dir, 'shared.db')),
  ];
  return {
    databases,
    stores: [new MemoryCounterStore(), new MemoryCounterStore()],
    async close() {
      for (const database of databases) await database.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgresRedisInstances(): Promise<Instances> {
  const schema = uniqueName('costs');
  const databases: [Database, Database] = [
    await createTestPostgresDatabase({ schema, dropOnClose: false }),
    await createTestPostgresDatabase({ schema, dropOnClose: false }),
  ];
  await databases[0].migrate();
  const installationId = await databases[0].installationId();
  const first = await createTestRedisStore({ installationId });
  const second = await createTestRedisStore({ installationId, prefix: first.prefix });
  return {
    databases,
    stores: [first, second],
    async close() {
      for (const store of [second, first]) await store.close();
      for (const database of databases) await database.close();
      await dropSchema(schema);
    },
  };
}

const setups: [string, () => Promise<Instances>][] = [['sqlite+memory', sqliteInstances]];
if (await externalServicesAvailable()) setups.push(['postgres+redis', postgresRedisInstances]);

const COUNTERS = [
  'pet_adoption_db_statements_total',
  'pet_adoption_db_round_trips_total',
  'pet_adoption_redis_commands_total',
] as const;
type Costs = Record<(typeof COUNTERS)[number], number>;

async function scrape(app: FastifyInstance): Promise<Costs> {
  const text = (await app.inject({ url: '/metrics' })).body;
  const costs = {} as Costs;
  for (const name of COUNTERS) {
    assert.match(text, new RegExp(`^# HELP ${name} `, 'm'), `${name} is documented in /metrics`);
    const match = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)$`, 'm').exec(text);
    assert.ok(match, `${name} has a value`);
    costs[name] = Number(match[1]);
  }
  return costs;
}

function perRequest(before: Costs, after: Costs, requests: number): Costs {
  const out = {} as Costs;
  for (const name of COUNTERS) out[name] = (after[name] - before[name]) / requests;
  return out;
}

for (const [backend, setup] of setups) {
  describe(`cost counters in /metrics [${backend}]`, () => {
    let instances: Instances;
    let apps: FastifyInstance[];
    let auth: Record<string, string>;
    let petId: number;

    before(async () => {
      instances = await setup();
      apps = [];
      for (let i = 0; i < 2; i++) {
        await instances.databases[i]!.migrate();
        const app = await buildApp({
          config: defaultTestConfig,
          database: instances.databases[i]!,
          counterStore: instances.stores[i]!,
        });
        await app.ready();
        apps.push(app);
      }
      const accounts = instances.databases[0].repository(accountRepository);
      const account = await accounts.upsertAccount(
        { name: 'costs', plan: 'enterprise', perMinute: 1e6, perDay: 1e9 },
        Date.now(),
      );
      auth = bearer((await mintKey(accounts, account.id, Date.now(), null, null)).key);
      const created = await apps[0]!.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: auth,
        payload: { name: 'Rex', categoryId: 1 },
      });
      petId = created.json<{ id: number }>().id;
    });
    after(async () => {
      for (const app of apps ?? []) await app.close();
      await instances?.close();
    });

    const operations: [string, (app: FastifyInstance, i: number) => Promise<number>][] = [
      ['listPets', async (app) => (await app.inject({ url: '/v1/pets', headers: auth })).statusCode],
      ['getPet', async (app) => (await app.inject({ url: `/v1/pets/${petId}`, headers: auth })).statusCode],
      [
        'createPet',
        async (app, i) =>
          (
            await app.inject({
              method: 'POST',
              url: '/v1/pets',
              headers: { ...auth, 'idempotency-key': `costs-${backend}-${i}-${Math.random()}` },
              payload: { name: `Pet ${i}`, categoryId: 1 },
            })
          ).statusCode,
      ],
    ];
    const N = 10;

    for (const [name, operation] of operations) {
      test(`${name}: counted, and per request on each of two instances as on one alone`, async () => {
        /** Runs `N` of the operation on each app in `on`, alternating, after a warm-up; costs per request of each. */
        const measure = async (on: FastifyInstance[]): Promise<Costs[]> => {
          for (const app of on) assert.ok([200, 201].includes(await operation(app, -1)));
          const before = await Promise.all(on.map(scrape));
          for (let i = 0; i < N; i++) {
            for (const app of on) assert.ok([200, 201].includes(await operation(app, i)));
          }
          const after = await Promise.all(on.map(scrape));
          return on.map((_, k) => perRequest(before[k]!, after[k]!, N));
        };
        // Reading /metrics itself must cost nothing, or the differences above would include it.
        const idle = await scrape(apps[0]!);
        assert.deepEqual(await scrape(apps[0]!), idle, 'a scrape sends nothing to the stores');

        const [alone] = await measure([apps[0]!]);
        const pair = await measure([apps[0]!, apps[1]!]);
        assert.ok(alone!.pet_adoption_db_statements_total >= 1, `${name} runs SQL: ${JSON.stringify(alone)}`);
        if (backend === 'postgres+redis') {
          assert.ok(alone!.pet_adoption_db_round_trips_total >= 1, JSON.stringify(alone));
          assert.equal(alone!.pet_adoption_redis_commands_total, 1, 'one EVALSHA per request');
        } else {
          assert.equal(alone!.pet_adoption_db_round_trips_total, 0, 'SQLite is in-process');
          assert.equal(alone!.pet_adoption_redis_commands_total, 0, 'counters in memory');
        }
        // SQLite only: each instance remembers keys until its file changes (accounts/repository.sqlite.ts), so
        // when the other instance writes, the next request looks its key up again: one statement more per
        // write request. PostgreSQL looks keys up on every request anyway, so there nothing changes.
        const expected =
          backend === 'sqlite+memory' && name === 'createPet'
            ? { ...alone!, pet_adoption_db_statements_total: alone!.pet_adoption_db_statements_total + 1 }
            : alone;
        for (const costs of pair) assert.deepEqual(costs, expected, `${name}: two instances vs one`);
      });
    }
  });
}
