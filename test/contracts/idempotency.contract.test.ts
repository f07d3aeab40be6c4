/**
 * The idempotency contract (src/db/idempotency and src/http/idempotency) on every backend, through the write it guards (pet
 * creation): replay, mismatch, expiry, per-account keys, purge, and concurrent requests with one key; then
 * PostgreSQL's per-schema advisory locks.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import { idempotencyRepository } from '../../src/db/idempotency/repository.js';
import { accountRepository } from '../../src/modules/accounts/repository.js';
import { petRepository } from '../../src/modules/pets/repository.js';
import { contractSuite, DAY, postgresSuite, T0 } from '../support/contract.js';
import { createdPet, idem, listAll } from '../support/pets.js';

contractSuite('idempotency', (target) => {
  let storage: Database;
  before(async () => {
    storage = await target.fresh();
  });

  describe('idempotency', () => {
    let accountId: number;
    let otherAccountId: number;
    before(async () => {
      accountId = (await storage.repository(accountRepository).upsertAccount({ name: 'idem-owner' }, T0)).id;
      otherAccountId = (await storage.repository(accountRepository).upsertAccount({ name: 'idem-other' }, T0))
        .id;
    });
    const rex = { name: 'Rex', categoryId: 1, status: 'available' as const };

    test('a repeat with the same fingerprint replays the first response and creates nothing', async () => {
      const first = createdPet(
        await storage.repository(petRepository).create(rex, idem(accountId, 'k-replay', 'fp1', T0)),
      );
      const countBefore = (await listAll(storage)).length;
      const again = await storage
        .repository(petRepository)
        .create(rex, idem(accountId, 'k-replay', 'fp1', T0 + 60_000));
      assert.deepEqual(again, { kind: 'replayed', status: 201, body: first });
      assert.equal((await listAll(storage)).length, countBefore);
    });

    test('the same key with another fingerprint is a mismatch', async () => {
      createdPet(
        await storage.repository(petRepository).create(rex, idem(accountId, 'k-mismatch', 'fp1', T0)),
      );
      assert.deepEqual(
        await storage
          .repository(petRepository)
          .create({ ...rex, name: 'Other' }, idem(accountId, 'k-mismatch', 'fp2', T0 + 1)),
        { kind: 'idempotency_mismatch' },
      );
    });

    test('records older than notBefore are ignored and replaced', async () => {
      const first = createdPet(
        await storage.repository(petRepository).create(rex, idem(accountId, 'k-expiry', 'fp1', T0)),
      );
      // Exactly at the boundary the record still counts.
      assert.equal(
        (await storage.repository(petRepository).create(rex, idem(accountId, 'k-expiry', 'fp1', T0 + DAY)))
          .kind,
        'replayed',
      );
      const later = T0 + DAY + 1;
      const second = createdPet(
        await storage.repository(petRepository).create(rex, idem(accountId, 'k-expiry', 'fp2', later)),
      );
      assert.notEqual(second.id, first.id);
      assert.deepEqual(
        await storage.repository(petRepository).create(rex, idem(accountId, 'k-expiry', 'fp2', later + 1)),
        {
          kind: 'replayed',
          status: 201,
          body: second,
        },
      );
    });

    test('keys are per account', async () => {
      const mine = createdPet(
        await storage.repository(petRepository).create(rex, idem(accountId, 'k-shared', 'fp1', T0)),
      );
      const theirs = createdPet(
        await storage.repository(petRepository).create(rex, idem(otherAccountId, 'k-shared', 'fp1', T0)),
      );
      assert.notEqual(mine.id, theirs.id);
    });

    test('an unknown category stores no record, so a corrected retry with the key succeeds', async () => {
      assert.deepEqual(
        await storage
          .repository(petRepository)
          .create({ ...rex, categoryId: 999 }, idem(accountId, 'k-badcat', 'fp1', T0)),
        { kind: 'unknown_category' },
      );
      createdPet(
        await storage.repository(petRepository).create(rex, idem(accountId, 'k-badcat', 'fp2', T0 + 1)),
      );
    });

    test('purgeIdempotency deletes records created before the cutoff only', async () => {
      const old = createdPet(
        await storage.repository(petRepository).create(rex, idem(accountId, 'k-purge-old', 'fp', T0 - 10)),
      );
      const kept = createdPet(
        await storage.repository(petRepository).create(rex, idem(accountId, 'k-purge-kept', 'fp', T0)),
      );
      await storage.repository(idempotencyRepository).purge(T0);
      const retryOld = createdPet(
        await storage.repository(petRepository).create(rex, idem(accountId, 'k-purge-old', 'fp', T0 + 1)),
      );
      assert.notEqual(retryOld.id, old.id);
      assert.deepEqual(
        await storage.repository(petRepository).create(rex, idem(accountId, 'k-purge-kept', 'fp', T0 + 1)),
        {
          kind: 'replayed',
          status: 201,
          body: kept,
        },
      );
    });

    test('20 concurrent requests with one key create exactly one pet', async () => {
      const countBefore = (await listAll(storage)).length;
      const results = await Promise.all(
        Array.from({ length: 20 }, () =>
          storage.repository(petRepository).create(rex, idem(accountId, 'k-race', 'fp', T0)),
        ),
      );
      const created = results.filter((r) => r.kind === 'created');
      assert.equal(created.length, 1, JSON.stringify(results));
      const pet = createdPet(created[0]!);
      for (const r of results) {
        if (r.kind === 'replayed') assert.deepEqual(r.body, pet);
        else assert.ok(r.kind === 'created' || r.kind === 'idempotency_in_progress', JSON.stringify(r));
      }
      assert.equal((await listAll(storage)).length, countBefore + 1);
      // Once the first has committed, every retry replays.
      assert.deepEqual(
        await storage.repository(petRepository).create(rex, idem(accountId, 'k-race', 'fp', T0 + 1)),
        {
          kind: 'replayed',
          status: 201,
          body: pet,
        },
      );
    });

    test('concurrent creations commit independently: one that fails takes none of the others down', async () => {
      const countBefore = (await listAll(storage)).length;
      // A name the database itself refuses (NOT NULL): storage-level input the API would never pass.
      const broken = { ...rex, name: null as unknown as string };
      const settled = await Promise.allSettled([
        storage.repository(petRepository).create(rex),
        storage.repository(petRepository).create({ ...rex, categoryId: 999_999 }),
        storage.repository(petRepository).create(broken),
        storage.repository(petRepository).create(rex, idem(accountId, 'k-batch', 'fp', T0)),
        storage.repository(petRepository).create(rex, idem(accountId, 'k-batch', 'fp', T0)),
        storage.repository(petRepository).create(rex),
      ]);
      assert.equal(settled[2]!.status, 'rejected', 'the broken creation rejects');
      const results = settled.map((r) => (r.status === 'fulfilled' ? r.value : undefined));
      assert.equal(results[1]?.kind, 'unknown_category');
      const created = results.filter((r) => r?.kind === 'created').map((r) => createdPet(r!));
      const sameKey = [results[3], results[4]];
      // One of the two with the same key creates; the other replays it (or, on PostgreSQL, may find it
      // still in progress).
      assert.equal(sameKey.filter((r) => r?.kind === 'created').length, 1, JSON.stringify(sameKey));
      assert.ok(
        sameKey.every(
          (r) => r?.kind === 'created' || r?.kind === 'replayed' || r?.kind === 'idempotency_in_progress',
        ),
        JSON.stringify(sameKey),
      );
      assert.equal(created.length, 3, JSON.stringify(results));
      const all = await listAll(storage);
      assert.equal(all.length, countBefore + 3, 'exactly the acknowledged pets exist');
      for (const pet of created)
        assert.deepEqual((await storage.repository(petRepository).get(pet.id))?.pet, pet);
    });

    test('concurrent requests with different keys all create', async () => {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          storage.repository(petRepository).create(rex, idem(accountId, `k-many-${i}`, 'fp', T0)),
        ),
      );
      const ids = results.map((r) => createdPet(r).id);
      assert.equal(new Set(ids).size, 20);
    });
  });
});

postgresSuite('idempotency', ({ open }) => {
  test('idempotency locks are per schema: the same account id and key in two schemas do not block', async () => {
    const a = await open();
    const b = await open();
    await Promise.all([a.migrate(), b.migrate()]);
    const [accA, accB] = await Promise.all([
      a.repository(accountRepository).upsertAccount({ name: 'same' }, T0),
      b.repository(accountRepository).upsertAccount({ name: 'same' }, T0),
    ]);
    assert.equal(accA.id, accB.id);
    const pet = { name: 'Twin', categoryId: 1, status: 'available' as const };
    for (let i = 0; i < 5; i++) {
      const results = await Promise.all([
        a.repository(petRepository).create(pet, idem(accA.id, `k${i}`, 'fp', T0)),
        b.repository(petRepository).create(pet, idem(accB.id, `k${i}`, 'fp', T0)),
      ]);
      assert.deepEqual(
        results.map((r) => r.kind),
        ['created', 'created'],
      );
    }
  });
});
