/**
 * The list page cache (src/http/page-cache.ts) is exact across instances: two instances on one database
 * (one SQLite file; one PostgreSQL schema), each with a warm cache; once a write has answered 2xx on
 * either, the very next read on both sees it. Every kind of write that changes a page is covered (create,
 * PATCH, DELETE, placing and cancelling an order, which move the pet's status), and a change made outside
 * the service (another connection writing the table directly); the same for the orders pages (listOrders),
 * whose approval writes the order alone. The cache is shown to be in use (a repeated read does not query
 * the pets or the orders), so the exactness checks cannot pass by never caching.
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
import { orderRepository, type OrderRepository } from '../src/modules/orders/repository.js';
import { petRepository, type PetRepository } from '../src/modules/pets/repository.js';
import { MemoryCounterStore } from '../src/ratelimit/memory.js';
import { bearer, defaultTestConfig, externalServicesAvailable, uniqueName } from './helpers.js';
import { createTestPostgresDatabase, dropSchema, withPostgresClient } from '../support/postgres.js';

interface Pair {
  name: string;
  a: Database;
  b: Database;
  /** Renames pet `id` behind the service's back, through a connection of its own. */
  renameDirectly(id: number, name: string): Promise<void>;
  close(): Promise<void>;
}

async function sqlitePair(): Promise<Pair> {
  const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-page-cache-'));
  const file = join(dir, 'shared.db');
  const a = new SqliteDatabase(file);
  const b = new SqliteDatabase(file);
  return {
    name: 'sqlite (one file)',
    a,
    b,
    async renameDirectly(id, name) {
      const other = new SqliteDatabase(file);
      other.db.prepare('UPDATE pets SET name = ? WHERE id = ?').run(name, id);
      await other.close();
    },
    async close() {
      await a.close();
      await b.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgresPair(): Promise<Pair> {
  const schema = uniqueName('cache');
  const a = await createTestPostgresDatabase({ schema, dropOnClose: false });
  const b = await createTestPostgresDatabase({ schema, dropOnClose: false });
  return {
    name: 'postgres (one schema)',
    a,
    b,
    async renameDirectly(id, name) {
      await withPostgresClient((client) =>
        client.query(`UPDATE "${schema}".pets SET name = $1 WHERE id = $2`, [name, id]),
      );
    },
    async close() {
      await a.close();
      await b.close();
      await dropSchema(schema);
    },
  };
}

const pairs: [string, () => Promise<Pair>][] = [['sqlite, one file', sqlitePair]];
if (await externalServicesAvailable()) pairs.push(['postgres, one schema', postgresPair]);

interface Pet {
  id: number;
  name: string;
  categoryId: number;
  status: string;
}

interface Order {
  id: number;
  petId: number;
  status: string;
}

const PAGES = ['/v1/pets', '/v1/pets?limit=100', '/v1/pets?status=available&limit=100'];
const ORDER_PAGES = ['/v1/store/orders', '/v1/store/orders?status=approved'];
/** The orders page of every order of the test (as a manager: every account's). */
const ORDERS = ORDER_PAGES[0]!;

for (const [backend, makePair] of pairs) {
  describe(`page cache across two instances [${backend}]`, () => {
    let pair: Pair;
    let apps: FastifyInstance[];
    let auth: Record<string, string>;
    let petIds: number[];

    before(async () => {
      pair = await makePair();
      await pair.a.migrate();
      await pair.b.migrate();
      apps = [];
      for (const database of [pair.a, pair.b]) {
        const app = await buildApp({
          config: defaultTestConfig,
          database,
          counterStore: new MemoryCounterStore(),
        });
        await app.ready();
        apps.push(app);
      }
      const accounts = pair.a.repository(accountRepository);
      const account = await accounts.upsertAccount(
        { name: 'cache', plan: 'enterprise', perMinute: 1e6, perDay: 1e9 },
        Date.now(),
      );
      const { key } = await mintKey(accounts, account.id, Date.now(), null, null);
      auth = bearer(key);
      petIds = [];
      for (let i = 0; i < 5; i++) {
        const res = await apps[0]!.inject({
          method: 'POST',
          url: '/v1/pets',
          headers: auth,
          payload: { name: `P${i}`, categoryId: 1 },
        });
        assert.equal(res.statusCode, 201);
        petIds.push((res.json() as Pet).id);
      }
    });
    after(async () => {
      for (const app of apps ?? []) await app.close();
      await pair?.close();
    });

    const list = async <T = Pet>(app: FastifyInstance, url: string): Promise<T[]> => {
      const res = await app.inject({ url, headers: auth });
      assert.equal(res.statusCode, 200, res.body);
      return res.json<T[]>();
    };
    /** getPet as a list: `[pet]`, or `[]` when it answers 404. */
    const single = async (app: FastifyInstance, url: string): Promise<(Pet & Order)[]> => {
      const res = await app.inject({ url, headers: auth });
      if (res.statusCode === 404) return [];
      assert.equal(res.statusCode, 200, res.body);
      return [res.json<Pet & Order>()];
    };
    /**
     * Reads every page and every pet (getPet) on both instances twice (the second from the cache) and
     * returns what was read, checking both instances read the same.
     */
    const readEverywhere = async (): Promise<Record<string, (Pet & Order)[]>> => {
      const seen: Record<string, (Pet & Order)[]> = {};
      const reads: [string, typeof single][] = [
        ...[...PAGES, ...ORDER_PAGES].map((url): [string, typeof single] => [url, list]),
        ...petIds.map((id): [string, typeof single] => [`/v1/pets/${id}`, single]),
      ];
      for (const app of apps) {
        for (const [url, read] of reads) {
          const first = await read(app, url);
          assert.deepEqual(await read(app, url), first, `${url} read twice`);
          seen[url] ??= first;
          assert.deepEqual(first, seen[url], `${url} differs between the instances`);
        }
      }
      return seen;
    };

    /** Counts the page and pet queries of instance b's repositories until `restore()`. */
    const countQueries = (): { counts: { pets: number; pet: number; orders: number }; restore(): void } => {
      const pets = pair.b.repository(petRepository) as PetRepository;
      const orders = pair.b.repository(orderRepository) as OrderRepository;
      const originals = {
        pets: pets.list.bind(pets),
        pet: pets.get.bind(pets),
        orders: orders.list.bind(orders),
      };
      const counts = { pets: 0, pet: 0, orders: 0 };
      pets.list = (query) => {
        counts.pets++;
        return originals.pets(query);
      };
      pets.get = (id) => {
        counts.pet++;
        return originals.pet(id);
      };
      orders.list = (query) => {
        counts.orders++;
        return originals.orders(query);
      };
      return {
        counts,
        restore() {
          pets.list = originals.pets;
          pets.get = originals.pet;
          orders.list = originals.orders;
        },
      };
    };
    const total = ({ pets, pet, orders }: { pets: number; pet: number; orders: number }): number =>
      pets + pet + orders;

    test('a repeated read is answered from the cache', async () => {
      await readEverywhere();
      const counting = countQueries();
      try {
        await list(apps[1]!, '/v1/pets');
        await list(apps[1]!, ORDERS);
        await single(apps[1]!, `/v1/pets/${petIds[0]}`);
        assert.equal(total(counting.counts), 0, 'pages and pets read before were answered without a query');
        await list(apps[1]!, '/v1/pets?limit=7');
        await list(apps[1]!, '/v1/store/orders?limit=7');
        assert.equal(total(counting.counts), 2, 'a page not read before is queried');
      } finally {
        counting.restore();
      }
    });

    test('requests that miss the cache together share one read of the page', async () => {
      const counting = countQueries();
      // Sent at once, they arrive in one turn, and each checks the cache before any has read the page.
      const together = (url: string) =>
        Promise.all(Array.from({ length: 10 }, () => apps[1]!.inject({ url, headers: auth })));
      try {
        const answers = await Promise.all([
          together('/v1/pets?limit=3'),
          // Not read before (every pet of the test was), and absent: a failed read is shared as well.
          together(`/v1/pets/${petIds.at(-1)! + 1000}`),
          together('/v1/store/orders?limit=3'),
        ]);
        for (const [i, group] of answers.entries()) {
          for (const res of group) {
            assert.equal(res.statusCode, i === 1 ? 404 : 200, res.body);
            assert.equal(res.body, group[0]!.body);
            assert.equal(res.headers.etag, group[0]!.headers.etag);
            assert.equal(res.headers.link, group[0]!.headers.link);
          }
        }
        assert.ok(answers[0]![0]!.headers.link, 'the shared page carries its Link to every request');
        assert.deepEqual(counting.counts, { pets: 1, pet: 1, orders: 1 });
      } finally {
        counting.restore();
      }
    });

    test('a write answered on one instance is seen at once by the next read on both', async (t) => {
      const writes: [
        string,
        (app: FastifyInstance) => Promise<void>,
        (pages: Record<string, (Pet & Order)[]>) => void,
      ][] = [
        [
          'createPet',
          async (app) => {
            const res = await app.inject({
              method: 'POST',
              url: '/v1/pets',
              headers: auth,
              payload: { name: 'New', categoryId: 2 },
            });
            assert.equal(res.statusCode, 201);
            petIds.push((res.json() as Pet).id);
          },
          (pages) =>
            assert.ok(pages['/v1/pets?limit=100']!.some((p) => p.id === petIds.at(-1) && p.name === 'New')),
        ],
        [
          'updatePet (PATCH)',
          async (app) => {
            const res = await app.inject({
              method: 'PATCH',
              url: `/v1/pets/${petIds[0]}`,
              headers: auth,
              payload: { name: 'Renamed' },
            });
            assert.equal(res.statusCode, 200, res.body);
          },
          (pages) => {
            assert.equal(pages['/v1/pets']!.find((p) => p.id === petIds[0])!.name, 'Renamed');
            assert.equal(pages[`/v1/pets/${petIds[0]}`]![0]!.name, 'Renamed', 'getPet');
          },
        ],
        [
          'deletePet',
          async (app) => {
            const res = await app.inject({ method: 'DELETE', url: `/v1/pets/${petIds[1]}`, headers: auth });
            assert.equal(res.statusCode, 204, res.body);
          },
          (pages) => {
            assert.ok(!pages['/v1/pets']!.some((p) => p.id === petIds[1]));
            assert.deepEqual(pages[`/v1/pets/${petIds[1]}`], [], 'getPet answers 404');
          },
        ],
        [
          'placeOrder (the pet becomes pending)',
          async (app) => {
            const res = await app.inject({
              method: 'POST',
              url: '/v1/store/orders',
              headers: auth,
              payload: { petId: petIds[2] },
            });
            assert.equal(res.statusCode, 201, res.body);
          },
          (pages) => {
            assert.ok(!pages['/v1/pets?status=available&limit=100']!.some((p) => p.id === petIds[2]));
            assert.equal(pages['/v1/pets']!.find((p) => p.id === petIds[2])!.status, 'pending');
            assert.equal(pages[`/v1/pets/${petIds[2]}`]![0]!.status, 'pending', 'getPet');
            assert.equal(pages[ORDERS]!.find((o) => o.petId === petIds[2])!.status, 'placed');
          },
        ],
        [
          'approveOrder (the order alone changes)',
          async (app) => {
            const orders = await app.inject({ url: `/v1/store/orders?petId=${petIds[2]}`, headers: auth });
            const [order] = orders.json<Order[]>();
            const res = await app.inject({
              method: 'POST',
              url: `/v1/store/orders/${order!.id}/approve`,
              headers: auth,
            });
            assert.equal(res.statusCode, 200, res.body);
          },
          (pages) => {
            assert.equal(pages[ORDERS]!.find((o) => o.petId === petIds[2])!.status, 'approved');
            assert.deepEqual(
              pages['/v1/store/orders?status=approved']!.map((o) => o.petId),
              [petIds[2]],
            );
          },
        ],
        [
          'cancelOrder (the pet is available again)',
          async (app) => {
            const orders = await app.inject({ url: `/v1/store/orders?petId=${petIds[2]}`, headers: auth });
            const [order] = orders.json<{ id: number }[]>();
            const res = await app.inject({
              method: 'POST',
              url: `/v1/store/orders/${order!.id}/cancel`,
              headers: auth,
            });
            assert.equal(res.statusCode, 200, res.body);
          },
          (pages) => {
            assert.ok(pages['/v1/pets?status=available&limit=100']!.some((p) => p.id === petIds[2]));
            assert.equal(pages[ORDERS]!.find((o) => o.petId === petIds[2])!.status, 'cancelled');
            assert.equal(pages[`/v1/pets/${petIds[2]}`]![0]!.status, 'available', 'getPet');
            assert.deepEqual(pages['/v1/store/orders?status=approved'], []);
          },
        ],
        [
          'a change outside the service (another connection)',
          () => pair.renameDirectly(petIds[3]!, 'Behind the back'),
          (pages) => {
            assert.equal(pages['/v1/pets']!.find((p) => p.id === petIds[3])!.name, 'Behind the back');
            assert.equal(pages[`/v1/pets/${petIds[3]}`]![0]!.name, 'Behind the back', 'getPet');
          },
        ],
      ];
      let writer = 0;
      for (const [name, write, check] of writes) {
        await readEverywhere(); // both caches warm with the state before the write
        await write(apps[writer]!);
        writer = 1 - writer; // alternate the instance that writes
        await t.test(name, () => readEverywhere().then(check));
      }
    });

    test('If-None-Match answers 304 from the cache, and 200 with a new ETag once the page changed', async () => {
      const first = await apps[0]!.inject({ url: '/v1/pets', headers: auth });
      const etag = first.headers.etag as string;
      assert.match(etag, /^W\/"/);
      const again = await apps[1]!.inject({ url: '/v1/pets', headers: { ...auth, 'if-none-match': etag } });
      assert.equal(again.statusCode, 304);
      const res = await apps[1]!.inject({
        method: 'PATCH',
        url: `/v1/pets/${petIds[4]}`,
        headers: auth,
        payload: { name: 'Changed' },
      });
      assert.equal(res.statusCode, 200);
      const after = await apps[0]!.inject({ url: '/v1/pets', headers: { ...auth, 'if-none-match': etag } });
      assert.equal(after.statusCode, 200);
      assert.notEqual(after.headers.etag, etag);
      assert.equal(after.json<Pet[]>().find((p) => p.id === petIds[4])!.name, 'Changed');
    });
  });
}
