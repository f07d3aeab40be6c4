/**
 * The orders repository contract (src/modules/orders/repository.ts) on every backend: placing (the pet must
 * be available and moves to pending with its version + 1, in one transaction), the open-order limit, the
 * transitions and their refusals, If-Match and account visibility on the locked row, listing with filters
 * and keyset pages, the inventory, and two instances racing on one database.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import { accountRepository } from '../../src/modules/accounts/repository.js';
import {
  orderRepository,
  type OrderAction,
  type OrderRecord,
  type PlaceOrderResult,
  type TransitionResult,
} from '../../src/modules/orders/repository.js';
import { TRANSITIONS } from '../../src/modules/orders/decisions.js';
import { petRepository } from '../../src/modules/pets/repository.js';
import type { PetStatus } from '../../src/modules/pets/schemas.js';
import { contractSuite, T0 } from '../support/contract.js';
import { createdPet } from '../support/pets.js';

const MAX_OPEN = 3;

function placedOrder(result: PlaceOrderResult): OrderRecord {
  assert.equal(result.kind, 'placed', `expected placed, got ${JSON.stringify(result)}`);
  return (result as { order: OrderRecord }).order;
}

function doneOrder(result: TransitionResult): OrderRecord {
  assert.equal(result.kind, 'done', `expected done, got ${JSON.stringify(result)}`);
  return (result as { order: OrderRecord }).order;
}

contractSuite('orders', (target) => {
  let s: Database;
  let alice: { id: number; name: string };
  let bob: { id: number; name: string };

  before(async () => {
    s = await target.fresh();
    alice = await s.repository(accountRepository).upsertAccount({ name: 'alice' }, T0);
    bob = await s.repository(accountRepository).upsertAccount({ name: 'bob' }, T0);
  });

  async function pet(status: PetStatus = 'available', storage = s): Promise<number> {
    return createdPet(await storage.repository(petRepository).create({ name: 'P', categoryId: 1, status }))
      .id;
  }
  /** Places with room to spare (accounts here hold many orders); the limit's own tests pass MAX_OPEN. */
  const place = (accountId: number, petId: number, now = T0, storage = s, maxOpen = 1000) =>
    storage.repository(orderRepository).place({ accountId, petId, maxOpen, now });
  const act = (id: number, action: OrderAction, extra: { accountId?: number; now?: number } = {}) =>
    s.repository(orderRepository).transition({ id, action, now: extra.now ?? T0 + 1, ...extra });
  const petOf = async (id: number) => (await s.repository(petRepository).get(id))!;

  describe('place', () => {
    test('an available pet: the order is placed and the pet becomes pending with version + 1', async () => {
      const petId = await pet();
      const order = placedOrder(await place(alice.id, petId, T0 + 5));
      assert.deepEqual(order, {
        id: order.id,
        accountId: alice.id,
        accountName: 'alice',
        petId,
        status: 'placed',
        version: 1,
        createdAt: T0 + 5,
        updatedAt: T0 + 5,
      });
      assert.ok(Number.isSafeInteger(order.id) && order.id > 0);
      assert.deepEqual(await petOf(petId), {
        pet: { id: petId, name: 'P', categoryId: 1, status: 'pending' },
        version: 2,
      });
      assert.deepEqual(await s.repository(orderRepository).get(order.id), order);
    });

    test('a pending or sold pet is pet_not_available, an unknown one unknown_pet; nothing is written', async () => {
      for (const status of ['pending', 'sold'] as const) {
        const petId = await pet(status);
        const before = await s.repository(orderRepository).list({ limit: 1000 });
        assert.deepEqual(await place(alice.id, petId), { kind: 'pet_not_available' });
        assert.deepEqual(await petOf(petId), { pet: (await petOf(petId)).pet, version: 1 });
        assert.equal((await petOf(petId)).pet.status, status);
        assert.deepEqual(await s.repository(orderRepository).list({ limit: 1000 }), before);
      }
      assert.deepEqual(await place(alice.id, Number.MAX_SAFE_INTEGER), { kind: 'unknown_pet' });
    });

    test('concurrent orders for one pet: exactly one is placed', async () => {
      const petId = await pet();
      const accounts = [alice.id, bob.id, alice.id, bob.id, alice.id, bob.id];
      const results = await Promise.all(accounts.map((accountId) => place(accountId, petId)));
      assert.equal(results.filter((r) => r.kind === 'placed').length, 1, JSON.stringify(results));
      assert.ok(results.every((r) => r.kind === 'placed' || r.kind === 'pet_not_available'));
      assert.deepEqual(
        await s.repository(orderRepository).list({ petId, limit: 10 }),
        results.filter((r) => r.kind === 'placed').map((r) => (r as { order: OrderRecord }).order),
      );
    });

    test('the open-order limit counts placed and approved orders only, also when ordering at once', async () => {
      const carol = await s.repository(accountRepository).upsertAccount({ name: 'carol' }, T0);
      const pets = await Promise.all(Array.from({ length: MAX_OPEN + 3 }, () => pet()));
      const results = await Promise.all(pets.map((petId) => place(carol.id, petId, T0, s, MAX_OPEN)));
      const placed = results
        .filter((r) => r.kind === 'placed')
        .map((r) => (r as { order: OrderRecord }).order);
      assert.equal(placed.length, MAX_OPEN, JSON.stringify(results));
      for (const r of results) {
        if (r.kind !== 'placed') assert.deepEqual(r, { kind: 'open_order_limit', limit: MAX_OPEN });
      }
      // The refused pets were left alone.
      for (const [i, r] of results.entries()) {
        if (r.kind !== 'placed') assert.equal((await petOf(pets[i]!)).pet.status, 'available');
      }
      // Approved still counts; delivered and cancelled free a place.
      doneOrder(await act(placed[0]!.id, 'approve'));
      const spare = await pet();
      assert.deepEqual(await place(carol.id, spare, T0, s, MAX_OPEN), {
        kind: 'open_order_limit',
        limit: MAX_OPEN,
      });
      doneOrder(await act(placed[0]!.id, 'deliver'));
      placedOrder(await place(carol.id, spare, T0, s, MAX_OPEN));
      doneOrder(await act(placed[1]!.id, 'cancel'));
      placedOrder(await place(carol.id, await pet(), T0, s, MAX_OPEN));
    });
  });

  describe('transition', () => {
    test('approve, deliver: the order and its pet move together, versions + 1, updatedAt = now', async () => {
      const petId = await pet();
      const order = placedOrder(await place(alice.id, petId));
      const approved = doneOrder(await act(order.id, 'approve', { now: T0 + 10 }));
      assert.deepEqual(approved, { ...order, status: 'approved', version: 2, updatedAt: T0 + 10 });
      assert.deepEqual(await petOf(petId), {
        pet: { id: petId, name: 'P', categoryId: 1, status: 'pending' },
        version: 2,
      });
      const delivered = doneOrder(await act(order.id, 'deliver', { now: T0 + 20 }));
      assert.deepEqual(delivered, { ...order, status: 'delivered', version: 3, updatedAt: T0 + 20 });
      assert.deepEqual((await petOf(petId)).pet.status, 'sold');
      assert.equal((await petOf(petId)).version, 3);
    });

    test('cancel from placed and from approved makes the pet available again', async () => {
      for (const approveFirst of [false, true]) {
        const petId = await pet();
        const order = placedOrder(await place(bob.id, petId));
        if (approveFirst) doneOrder(await act(order.id, 'approve'));
        const cancelled = doneOrder(await act(order.id, 'cancel', { now: T0 + 30 }));
        assert.equal(cancelled.status, 'cancelled');
        assert.equal(cancelled.updatedAt, T0 + 30);
        assert.equal((await petOf(petId)).pet.status, 'available');
        // The pet can be ordered again.
        placedOrder(await place(alice.id, petId));
      }
    });

    test('every move the table does not allow is invalid_transition and changes nothing', async () => {
      const petId = await pet();
      const order = placedOrder(await place(alice.id, petId));
      const path: OrderAction[] = ['approve', 'deliver'];
      for (const step of [undefined, ...path]) {
        if (step) doneOrder(await act(order.id, step));
        const current = (await s.repository(orderRepository).get(order.id))!;
        const pet = await petOf(petId);
        for (const action of Object.keys(TRANSITIONS) as OrderAction[]) {
          if (TRANSITIONS[action].from.includes(current.status)) continue;
          assert.deepEqual(await act(order.id, action), {
            kind: 'invalid_transition',
            status: current.status,
          });
          assert.deepEqual(await s.repository(orderRepository).get(order.id), current);
          assert.deepEqual(await petOf(petId), pet);
        }
      }
      const other = placedOrder(await place(alice.id, await pet()));
      doneOrder(await act(other.id, 'cancel'));
      for (const action of ['approve', 'deliver', 'cancel'] as const) {
        assert.deepEqual(await act(other.id, action), { kind: 'invalid_transition', status: 'cancelled' });
      }
    });

    test('another account is not_found; an unknown id too; no account (a manager) may act', async () => {
      const order = placedOrder(await place(alice.id, await pet()));
      assert.deepEqual(await act(order.id, 'cancel', { accountId: bob.id }), { kind: 'not_found' });
      assert.equal((await s.repository(orderRepository).get(order.id))?.status, 'placed');
      assert.deepEqual(await act(Number.MAX_SAFE_INTEGER, 'cancel'), { kind: 'not_found' });
      doneOrder(await act(order.id, 'approve', { accountId: alice.id }));
      doneOrder(await act(order.id, 'cancel'));
    });

    test('ifMatch is tested against the current version: stale is precondition_failed and changes nothing', async () => {
      const order = placedOrder(await place(alice.id, await pet()));
      const seen: number[] = [];
      const stale = await s.repository(orderRepository).transition({
        id: order.id,
        action: 'approve',
        ifMatch: (version) => (seen.push(version), version === 7),
        now: T0,
      });
      assert.deepEqual(stale, { kind: 'precondition_failed', version: 1 });
      assert.deepEqual(seen, [1]);
      assert.deepEqual(await s.repository(orderRepository).get(order.id), order);
      const fresh = await s.repository(orderRepository).transition({
        id: order.id,
        action: 'approve',
        ifMatch: (version) => version === 1,
        now: T0,
      });
      assert.equal(doneOrder(fresh).version, 2);
    });

    test('approve racing cancel on one order: exactly one applies, and the pet matches the order', async () => {
      for (let i = 0; i < 5; i++) {
        const petId = await pet();
        const order = placedOrder(await place(bob.id, petId));
        const [a, b] = await Promise.all([act(order.id, 'approve'), act(order.id, 'cancel')]);
        const final = (await s.repository(orderRepository).get(order.id))!;
        // Either cancel won outright, or approve ran first and cancel (which applies to approved) too.
        if (a.kind === 'done' && b.kind === 'done') assert.equal(final.status, 'cancelled');
        else assert.equal([a, b].filter((r) => r.kind === 'done').length, 1);
        assert.equal((await petOf(petId)).pet.status, final.status === 'cancelled' ? 'available' : 'pending');
      }
    });
  });

  describe('list', () => {
    let ls: Database;
    let all: OrderRecord[];
    let x: { id: number };
    let y: { id: number };
    before(async () => {
      ls = await target.fresh();
      x = await ls.repository(accountRepository).upsertAccount({ name: 'x' }, T0);
      y = await ls.repository(accountRepository).upsertAccount({ name: 'y' }, T0);
      const repo = ls.repository(orderRepository);
      for (let i = 0; i < 12; i++) {
        const petId = await pet('available', ls);
        const order = placedOrder(
          await repo.place({ accountId: i % 2 ? y.id : x.id, petId, maxOpen: 100, now: T0 + i }),
        );
        if (i % 3 === 1) await repo.transition({ id: order.id, action: 'approve', now: T0 + 100 });
        if (i % 3 === 2) await repo.transition({ id: order.id, action: 'cancel', now: T0 + 100 });
      }
      // A second order on a pet whose first was cancelled.
      const first = (await repo.list({ status: 'cancelled', limit: 1 }))[0]!;
      placedOrder(await repo.place({ accountId: y.id, petId: first.petId, maxOpen: 100, now: T0 + 50 }));
      all = [];
      for (let afterId = 0; ;) {
        const page = await repo.list({ afterId, limit: 1000 });
        all.push(...page);
        if (page.length < 1000) break;
        afterId = page.at(-1)!.id;
      }
      assert.equal(all.length, 13);
    });

    test('ordered by id, at most limit, after afterId; every page size covers each order once', async () => {
      const repo = ls.repository(orderRepository);
      const ids = all.map((o) => o.id);
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => a - b),
      );
      assert.deepEqual(await repo.list({ limit: 5 }), all.slice(0, 5));
      assert.deepEqual(await repo.list({ afterId: all[4]!.id, limit: 3 }), all.slice(5, 8));
      assert.deepEqual(await repo.list({ afterId: all.at(-1)!.id, limit: 3 }), []);
      for (const size of [1, 4, 13, 20]) {
        const walked: OrderRecord[] = [];
        for (;;) {
          const page = await repo.list({ afterId: walked.at(-1)?.id, limit: size });
          assert.ok(page.length <= size);
          walked.push(...page);
          if (page.length < size) break;
        }
        assert.deepEqual(walked, all, `page size ${size}`);
      }
    });

    test('filters by account (id or name), status and pet, alone and combined, with paging', async () => {
      const repo = ls.repository(orderRepository);
      const cases: [Parameters<typeof repo.list>[0], (o: OrderRecord) => boolean][] = [
        [{ accountId: x.id, limit: 100 }, (o) => o.accountId === x.id],
        [{ accountName: 'y', limit: 100 }, (o) => o.accountName === 'y'],
        [{ status: 'approved', limit: 100 }, (o) => o.status === 'approved'],
        [{ petId: all[2]!.petId, limit: 100 }, (o) => o.petId === all[2]!.petId],
        [
          { accountId: y.id, status: 'placed', limit: 100 },
          (o) => o.accountId === y.id && o.status === 'placed',
        ],
        [
          { accountId: x.id, afterId: all[3]!.id, limit: 2 },
          (o) => o.accountId === x.id && o.id > all[3]!.id,
        ],
        [{ status: 'cancelled', accountName: 'nobody', limit: 100 }, () => false],
        [{ accountId: 987654, limit: 100 }, () => false],
      ];
      for (const [query, keep] of cases) {
        assert.deepEqual(
          await repo.list(query),
          all.filter(keep).slice(0, query.limit),
          JSON.stringify(query),
        );
      }
      assert.equal(
        (await repo.list({ petId: all[2]!.petId, limit: 100 })).length,
        2,
        'both orders of one pet',
      );
    });

    test('pages asked for at the same time each get their own', async () => {
      const repo = ls.repository(orderRepository);
      const queries = [
        { limit: 3 },
        { accountId: x.id, limit: 2 },
        { status: 'approved' as const, limit: 10 },
        { afterId: all[6]!.id, limit: 4 },
      ];
      const together = await Promise.all(queries.map((q) => repo.list(q)));
      const alone = [];
      for (const q of queries) alone.push(await repo.list(q));
      assert.deepEqual(together, alone);
    });

    test('inventory counts pets by status, zeros included', async () => {
      const fresh = await target.fresh();
      assert.deepEqual(await fresh.repository(orderRepository).inventory(), {
        available: 0,
        pending: 0,
        sold: 0,
      });
      const inv = await ls.repository(orderRepository).inventory();
      const open = all.filter((o) => o.status === 'placed' || o.status === 'approved').length;
      assert.deepEqual(inv, { available: 12 + 0 - open, pending: open, sold: 0 });
    });
  });

  test('two instances on one database: one order per pet, the limit holds across both', async () => {
    const pair = await target.createPair();
    try {
      await pair.a.migrate();
      await pair.b.migrate();
      const account = await pair.a.repository(accountRepository).upsertAccount({ name: 'shared' }, T0);
      const petId = await pet('available', pair.a);
      const results = await Promise.all(
        [pair.a, pair.b, pair.a, pair.b].map((db) => place(account.id, petId, T0, db, MAX_OPEN)),
      );
      assert.equal(results.filter((r) => r.kind === 'placed').length, 1, JSON.stringify(results));
      const pets = [];
      for (let i = 0; i < MAX_OPEN + 2; i++) pets.push(await pet('available', pair.b));
      const more = await Promise.all(
        pets.map((p, i) => place(account.id, p, T0, i % 2 ? pair.a : pair.b, MAX_OPEN)),
      );
      assert.equal(more.filter((r) => r.kind === 'placed').length, MAX_OPEN - 1, JSON.stringify(more));
    } finally {
      await pair.close();
    }
  });
});
