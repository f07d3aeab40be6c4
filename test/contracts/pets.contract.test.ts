/**
 * The pets repository contract (src/modules/pets/repository.ts) on every backend: creation, lookup, the
 * holds other modules register (petHolds), keyset listing with the status filter, and the demo seed; then
 * the PostgreSQL million-pet seed.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import { eventRepository } from '../../src/modules/events/index.js';
import { petRepository } from '../../src/modules/pets/repository.js';
import { demoPet } from '../../src/modules/pets/demo.js';
import type { Pet } from '../../src/modules/pets/schemas.js';
import { petHolds } from '../../src/modules/pets/registries.js';
import { contractSuite, postgresSuite, T0 } from '../support/contract.js';
import { createdPet, listAll, STATUSES } from '../support/pets.js';

/** The pets this suite's hold claims: petHolds is process-wide, so it holds only these. */
const held = new Set<number>();
petHolds.register({
  sqlite: (_database, ids) => new Set(ids.filter((id) => held.has(id))),
  postgres: async (_database, _client, ids) => new Set(ids.filter((id) => held.has(id))),
});

contractSuite('pets', (target) => {
  let storage: Database;
  before(async () => {
    storage = await target.fresh();
  });

  describe('pets', () => {
    test('createPet returns the pet with a new integer id; getPet finds it', async () => {
      const pet = createdPet(
        await storage
          .repository(petRepository)
          .create({ name: 'Rex', categoryId: 1, status: 'available' }, undefined),
      );
      assert.ok(Number.isSafeInteger(pet.id) && pet.id > 0, `id ${String(pet.id)}`);
      assert.deepEqual(pet, { id: pet.id, name: 'Rex', categoryId: 1, status: 'available' });
      assert.deepEqual(await storage.repository(petRepository).get(pet.id), { pet, version: 1 });
    });

    test('names are stored exactly as given', async () => {
      const name = '  Mr. 🐱 Whiskers — ñandú \'"; DROP TABLE pets; -- ';
      const pet = createdPet(
        await storage.repository(petRepository).create({ name, categoryId: 2, status: 'pending' }),
      );
      assert.equal((await storage.repository(petRepository).get(pet.id))?.pet.name, name);
    });

    test('ids increase with every creation', async () => {
      const ids: number[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push(
          createdPet(
            await storage.repository(petRepository).create({ name: `n${i}`, categoryId: 3, status: 'sold' }),
          ).id,
        );
      }
      assert.deepEqual(
        [...ids].sort((x, y) => x - y),
        ids,
      );
      assert.equal(new Set(ids).size, ids.length);
    });

    test('getPet of an unknown id is undefined', async () => {
      assert.equal(await storage.repository(petRepository).get(Number.MAX_SAFE_INTEGER), undefined);
    });

    test('an unknown category is a result, not an error, and creates nothing', async () => {
      const before = await listAll(storage);
      assert.deepEqual(
        await storage
          .repository(petRepository)
          .create({ name: 'Ghost', categoryId: 999, status: 'available' }),
        {
          kind: 'unknown_category',
        },
      );
      assert.deepEqual(
        await storage
          .repository(petRepository)
          .create({ name: 'Ghost', categoryId: Number.MAX_SAFE_INTEGER, status: 'sold' }),
        {
          kind: 'unknown_category',
        },
      );
      assert.deepEqual(await listAll(storage), before);
    });

    test('creations at the same time each get their own pet; an unknown category among them is answered alone', async () => {
      const before = (await listAll(storage)).length;
      const inputs = [
        { name: 'Twin', categoryId: 1, status: 'available' },
        { name: 'Twin', categoryId: 1, status: 'available' },
        { name: 'Lost', categoryId: 999, status: 'available' },
        { name: 'Other', categoryId: 2, status: 'sold' },
      ] as const;
      // One event-loop turn: one batch where the backend batches creations.
      const results = await Promise.all(inputs.map((pet) => storage.repository(petRepository).create(pet)));
      assert.deepEqual(results[2], { kind: 'unknown_category' });
      const pets = [0, 1, 3].map((i) => {
        const pet = createdPet(results[i]!);
        assert.deepEqual(pet, { id: pet.id, ...inputs[i] });
        return pet;
      });
      assert.equal(new Set(pets.map((pet) => pet.id)).size, 3, 'each creation has its own id');
      for (const pet of pets)
        assert.deepEqual(await storage.repository(petRepository).get(pet.id), { pet, version: 1 });
      assert.equal((await listAll(storage)).length, before + 3, 'exactly the created pets exist');
    });
  });

  describe('holds (petHolds)', () => {
    test("a held pet keeps its status and its row, alone or in a turn's batch; its name and category may change", async () => {
      const pets = storage.repository(petRepository);
      const make = async () =>
        createdPet(await pets.create({ name: 'Held', categoryId: 1, status: 'available' })).id;
      const [a, b] = [await make(), await make()];
      held.add(a);
      try {
        assert.deepEqual(await pets.update(a, { status: 'sold' }), { kind: 'open_order' });
        assert.deepEqual(await pets.delete(a), { kind: 'open_order' });
        assert.deepEqual(await pets.update(a, { name: 'Still held', categoryId: 2, status: 'available' }), {
          kind: 'updated',
          pet: { id: a, name: 'Still held', categoryId: 2, status: 'available' },
          version: 2,
        });
        // Asked in one turn: PostgreSQL writes them in one transaction, each decided on its own pet.
        const changed = await Promise.all([
          pets.update(a, { status: 'pending' }),
          pets.update(b, { status: 'pending' }),
        ]);
        assert.deepEqual(
          changed.map((r) => r.kind),
          ['open_order', 'updated'],
        );
        const removed = await Promise.all([pets.delete(a), pets.delete(b)]);
        assert.deepEqual(removed, [{ kind: 'open_order' }, { kind: 'deleted' }]);
      } finally {
        held.delete(a);
      }
      assert.deepEqual(await pets.delete(a), { kind: 'deleted' });
    });
  });

  describe('listing', () => {
    let s: Database;
    let pets: Pet[];
    before(async () => {
      s = await target.fresh();
      pets = [];
      for (let i = 0; i < 25; i++) {
        const status = STATUSES[i % 3]!;
        pets.push(
          createdPet(
            await s.repository(petRepository).create({ name: `Pet ${i}`, categoryId: (i % 7) + 1, status }),
          ),
        );
      }
    });

    test('ordered by id ascending, at most limit', async () => {
      assert.deepEqual(await s.repository(petRepository).list({ limit: 100 }), pets);
      assert.deepEqual(await s.repository(petRepository).list({ limit: 10 }), pets.slice(0, 10));
      assert.deepEqual(await s.repository(petRepository).list({ limit: 1 }), pets.slice(0, 1));
    });

    test('keyset pages after afterId cover every pet exactly once', async () => {
      for (const size of [1, 7, 25]) assert.deepEqual(await listAll(s, undefined, size), pets);
      const middle = pets[11]!;
      assert.deepEqual(
        await s.repository(petRepository).list({ afterId: middle.id, limit: 5 }),
        pets.slice(12, 17),
      );
      assert.deepEqual(await s.repository(petRepository).list({ afterId: pets.at(-1)!.id, limit: 5 }), []);
      assert.deepEqual(await s.repository(petRepository).list({ afterId: 0, limit: 3 }), pets.slice(0, 3));
    });

    test('status filters, combined with afterId and limit', async () => {
      for (const status of STATUSES) {
        const expected = pets.filter((p) => p.status === status);
        assert.deepEqual(await s.repository(petRepository).list({ status, limit: 100 }), expected);
        assert.deepEqual(await listAll(s, status, 3), expected);
        // afterId need not be a pet of that status.
        const pivot = pets.find((p) => p.status !== status)!;
        assert.deepEqual(
          await s.repository(petRepository).list({ status, afterId: pivot.id, limit: 4 }),
          expected.filter((p) => p.id > pivot.id).slice(0, 4),
        );
      }
    });

    test('pages asked for at the same time each get their own page', async () => {
      const queries = [
        { limit: 5 },
        { status: 'sold' as const, limit: 3 },
        { afterId: pets[11]!.id, limit: 4 },
        { status: 'available' as const, afterId: pets[4]!.id, limit: 100 },
        { afterId: pets.at(-1)!.id, limit: 10 },
        { status: 'pending' as const, afterId: pets.at(-1)!.id, limit: 2 },
        { limit: 5 },
      ];
      const together = await Promise.all(queries.map((q) => s.repository(petRepository).list(q)));
      const alone: Pet[][] = [];
      for (const q of queries) alone.push(await s.repository(petRepository).list(q));
      assert.deepEqual(together, alone);
      assert.deepEqual(together[0], pets.slice(0, 5));
      assert.deepEqual(together[1], pets.filter((p) => p.status === 'sold').slice(0, 3));
      assert.deepEqual(together[2], pets.slice(12, 16));
      assert.deepEqual(
        together[3],
        pets.filter((p) => p.status === 'available' && p.id > pets[4]!.id),
      );
      assert.deepEqual(together[4], []);
      assert.deepEqual(together[5], []);
    });

    test('ids, categoryIds and statuses come back as JSON-ready values', async () => {
      const [first] = await s.repository(petRepository).list({ limit: 1 });
      assert.ok(first);
      assert.equal(typeof first.id, 'number');
      assert.equal(typeof first.categoryId, 'number');
      assert.deepEqual(Object.keys(first).sort(), ['categoryId', 'id', 'name', 'status']);
    });
  });

  describe('seedPets', () => {
    test('inserts demo pets numbered after the existing ones', async () => {
      const s = await target.fresh();
      assert.equal(await s.repository(petRepository).seed(1000, T0), 1000);
      const all = await listAll(s);
      assert.equal(all.length, 1000);
      assert.deepEqual(
        all.map(({ name, categoryId, status }) => ({ name, categoryId, status })),
        Array.from({ length: 1000 }, (_, i) => demoPet(i)),
      );
      assert.equal(await s.repository(petRepository).seed(5, T0), 5);
      const more = await s.repository(petRepository).list({ afterId: all.at(-1)!.id, limit: 100 });
      assert.deepEqual(
        more.map((p) => p.name),
        [1000, 1001, 1002, 1003, 1004].map((i) => demoPet(i).name),
      );
      const sold = await listAll(s, 'sold');
      assert.equal(sold.length, [...all, ...more].filter((p) => p.status === 'sold').length);
      assert.equal(await s.repository(petRepository).seed(0, T0), 0);
    });
  });
});

postgresSuite('pets', ({ open }) => {
  test("a turn's creations are two round trips however many: their ids, then the pets and their events in one statement", async () => {
    const storage = await open();
    await storage.migrate();
    const pets = storage.repository(petRepository);
    const inputs = [1, 2, 999, 1, 2].map((categoryId, i) => ({
      name: `Turn ${i}`,
      categoryId,
      status: 'available' as const,
    }));
    const before = storage.costs.roundTrips;
    // One event-loop turn: one batch.
    const results = await Promise.all(inputs.map((pet) => pets.create(pet)));
    assert.equal(storage.costs.roundTrips - before, 2);
    assert.deepEqual(results[2], { kind: 'unknown_category' });
    const created = [0, 1, 3, 4].map((i) => createdPet(results[i]!));
    assert.deepEqual(
      created.map((pet) => pet.id),
      created.map((pet) => pet.id).sort((a, b) => a - b),
      'numbered in the order asked',
    );
    // Each created pet's event, and none for the unknown category.
    const events = storage.repository(eventRepository);
    await events.publish();
    const stored = await events.list({ limit: 100, viewer: { accountId: 1, allOrders: false } });
    assert.deepEqual(
      stored.map(({ payload }) => {
        const event = JSON.parse(payload) as { type: string; data: { object: unknown } };
        return [event.type, event.data.object];
      }),
      created.map((pet) => ['pet.created', pet]),
    );
  });

  // How fast is a benchmark's business (bench/); here: the million arrive, and deep pages stay cheap.
  test('1,000,000 demo pets seed in one call', { timeout: 120_000 }, async () => {
    const storage = await open();
    await storage.migrate();
    assert.equal(await storage.repository(petRepository).seed(1_000_000, T0), 1_000_000);
    // Deep keyset pages stay cheap.
    const page = await storage
      .repository(petRepository)
      .list({ status: 'pending', afterId: 999_000, limit: 5 });
    assert.deepEqual(
      page.map((p) => p.name),
      page.map((p) => demoPet(p.id - 1).name),
    );
    assert.equal(page.length, 5);
  });
});
