/**
 * The applications store contract (src/modules/applications/store.ts) on every backend: the form and its
 * versions, submission with the applicant found again by email, refusals that write nothing, listing in both
 * directions with filters, actions with the approval's order, the listeners of order moves and pet removals,
 * erasure and retention, and two instances on one database approving for one pet at once.
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import { accountRepository } from '../../src/modules/accounts/repository.js';
import type { ActionRequest } from '../../src/modules/applications/decisions.js';
import { applicationStore } from '../../src/modules/applications/factory.js';
import type { FullApplication, WriteOutcome } from '../../src/modules/applications/store.js';
import { orderRepository } from '../../src/modules/orders/repository.js';
import { petRepository } from '../../src/modules/pets/repository.js';
import { contractSuite, DAY, T0 } from '../support/contract.js';
import { createdPet } from '../support/pets.js';

const ANSWERS = { household: 'Two', home: 'house', 'other-pets': true };

function done(result: unknown): FullApplication {
  const outcome = result as WriteOutcome;
  assert.equal(outcome.kind, 'done', `expected done, got ${JSON.stringify(result)}`);
  return (outcome as { application: FullApplication }).application;
}

contractSuite('applications', (target) => {
  let s: Database;
  let account: number;
  const staff = { keyId: 'key_staff', accountId: 0, manager: true };

  before(async () => {
    s = await target.fresh();
    account = (await s.repository(accountRepository).upsertAccount({ name: 'partner' }, T0)).id;
  });

  const store = (db = s) => db.repository(applicationStore);
  const pet = async (db = s) =>
    createdPet(await db.repository(petRepository).create({ name: 'P', categoryId: 1, status: 'available' }))
      .id;
  const submit = (petId: number, email: string, db = s, now = T0) =>
    store(db).submit({
      accountId: account,
      petId,
      applicant: { name: 'N', email },
      answers: ANSWERS,
      keyId: 'key_partner',
      max: 5,
      now,
    });
  const act = (id: string, action: ActionRequest['action'], extra: Partial<ActionRequest> = {}, db = s) =>
    store(db).act({ id, request: { action, actor: staff, now: T0 + 1, ...extra } });

  test('the default form is version 1; putForm adds a version, honouring ifMatch', async () => {
    const db = await target.fresh();
    const form = await store(db).form();
    assert.equal(form.version, 1);
    assert.ok(form.questions.some((q) => q.required));
    const stale = await store(db).putForm(form.questions, (v) => v === 7, T0);
    assert.deepEqual(stale, { kind: 'precondition_failed', version: 1 });
    const put = await store(db).putForm(form.questions.slice(0, 3), (v) => v === 1, T0);
    assert.equal(put.kind, 'done');
    assert.equal((await store(db).form()).version, 2);
    assert.equal((await store(db).form()).questions.length, 3);
  });

  test('submit: the applicant is found again by lower(email); refusals write nothing', async () => {
    const petId = await pet();
    const first = done(await submit(petId, 'Same@Example.org'));
    const second = done(await submit(await pet(), 'same@example.ORG'));
    assert.equal(second.applicant.id, first.applicant.id);
    assert.equal(second.applicant.email, 'same@example.ORG');
    assert.deepEqual(await submit(petId, 'SAME@example.org'), { kind: 'application_exists' });
    const unknown = await submit(987654321, 'nobody@example.org');
    assert.deepEqual(unknown, { kind: 'pet_not_available', unknown: true });
    const listed = await store().list({ sort: 'oldest', limit: 100, applicantId: first.applicant.id });
    assert.equal(listed.length, 2, 'the refused submissions left nothing');
    const bad = await store().submit({
      accountId: account,
      petId: await pet(),
      applicant: { name: 'N', email: 'fresh@example.org' },
      answers: {},
      keyId: 'k',
      max: 5,
      now: T0,
    });
    assert.equal(bad.kind, 'invalid_answers');
  });

  test('list: keyset pages both ways, status and pet filters', async () => {
    const petId = await pet();
    const made = [];
    for (let i = 0; i < 4; i++) made.push(done(await submit(petId, `list${i}@example.org`)));
    done(await act(made[2]!.application.id, 'review'));
    const newest = await store().list({ petId, sort: 'newest', limit: 2 });
    assert.deepEqual(
      newest.map((r) => r.application.id),
      [made[3]!.application.id, made[2]!.application.id],
    );
    const next = await store().list({ petId, sort: 'newest', limit: 2, after: newest[1]!.application.seq });
    assert.deepEqual(
      next.map((r) => r.application.id),
      [made[1]!.application.id, made[0]!.application.id],
    );
    const oldest = await store().list({ petId, sort: 'oldest', limit: 1, after: made[0]!.application.seq });
    assert.equal(oldest[0]!.application.id, made[1]!.application.id);
    const reviewing = await store().list({
      petId,
      sort: 'oldest',
      limit: 10,
      statuses: ['in_review', 'approved'],
    });
    assert.deepEqual(
      reviewing.map((r) => r.application.id),
      [made[2]!.application.id],
    );
    assert.equal(
      (await store().list({ petId, accountId: account + 999, sort: 'oldest', limit: 10 })).length,
      0,
    );
  });

  test('approve places the order and holds the pet; delivery adopts and closes the rest', async () => {
    const petId = await pet();
    const a = done(await submit(petId, 'adopt-a@example.org'));
    const b = done(await submit(petId, 'adopt-b@example.org'));
    done(await act(a.application.id, 'review'));
    assert.deepEqual(await act(a.application.id, 'review'), {
      kind: 'invalid_transition',
      status: 'in_review',
    });
    assert.deepEqual(await act(a.application.id, 'approve', { ifMatch: (v) => v === 1 }), {
      kind: 'precondition_failed',
      version: 2,
    });
    const approved = done(await act(a.application.id, 'approve'));
    const orderId = approved.application.orderId!;
    assert.equal((await s.repository(petRepository).get(petId))!.pet.status, 'pending');
    const orders = s.repository(orderRepository);
    await orders.transition({ id: orderId, action: 'approve', now: T0 + 2 });
    await orders.transition({ id: orderId, action: 'deliver', now: T0 + 3 });
    assert.equal((await store().get(a.application.id))!.application.status, 'adopted');
    const closed = (await store().get(b.application.id))!.application;
    assert.deepEqual([closed.status, closed.statusReason], ['closed', 'pet_adopted']);
  });

  test('a pet removed closes its open applications', async () => {
    const petId = await pet();
    const a = done(await submit(petId, 'removed@example.org'));
    const removed = await s.repository(petRepository).delete(petId, undefined, undefined, T0 + 5);
    assert.equal(removed.kind, 'deleted');
    const after = (await store().get(a.application.id))!.application;
    assert.deepEqual([after.status, after.statusReason], ['closed', 'pet_removed']);
  });

  test('erase clears personal data, withdraws open ones, is repeatable; retention erases what ended', async () => {
    const a = done(await submit(await pet(), 'erase@example.org'));
    assert.deepEqual(await store().erase({ id: a.applicant.id, keyId: null, now: T0 + 9 }), {
      kind: 'erased',
    });
    const after = (await store().get(a.application.id))!;
    assert.equal(after.applicant.email, null);
    assert.equal(after.applicant.erasedAt, T0 + 9);
    assert.equal(after.application.answers, null);
    assert.deepEqual([after.application.status, after.application.statusReason], ['withdrawn', 'erased']);
    assert.deepEqual(await store().erase({ id: a.applicant.id, keyId: null, now: T0 + 10 }), {
      kind: 'erased',
    });
    assert.deepEqual(await store().erase({ id: 'apl_none', keyId: null, now: T0 }), { kind: 'not_found' });

    const db = await target.fresh();
    account = (await db.repository(accountRepository).upsertAccount({ name: 'partner' }, T0)).id;
    const ended = done(await submit(await pet(db), 'ended@example.org', db));
    done(await act(ended.application.id, 'reject', { reason: 'other' }, db));
    const open = done(await submit(await pet(db), 'open@example.org', db));
    assert.equal(await store(db).eraseExpired(T0, T0 + DAY), 0, 'ended after the cut-off');
    assert.equal(await store(db).eraseExpired(T0 + 10, T0 + DAY), 1);
    assert.notEqual((await store(db).applicant(ended.applicant.id))!.erasedAt, null);
    assert.equal((await store(db).applicant(open.applicant.id))!.erasedAt, null);
    account = (await s.repository(accountRepository).upsertAccount({ name: 'partner' }, T0)).id;
  });

  test('two instances on one database approving for one pet at once: exactly one order', async () => {
    const pair = await target.createPair();
    const { a: one, b: two } = pair;
    await one.migrate();
    const partner = (await one.repository(accountRepository).upsertAccount({ name: 'pair' }, T0)).id;
    const petId = await pet(one);
    const ids = [];
    for (const [i, db] of [one, two].entries()) {
      const made = done(
        await db.repository(applicationStore).submit({
          accountId: partner,
          petId,
          applicant: { name: 'N', email: `pair${i}@example.org` },
          answers: ANSWERS,
          keyId: 'k',
          max: 5,
          now: T0,
        }),
      );
      done(await act(made.application.id, 'review', {}, db));
      ids.push(made.application.id);
    }
    const results = await Promise.all([act(ids[0]!, 'approve', {}, one), act(ids[1]!, 'approve', {}, two)]);
    assert.deepEqual(results.map((r) => r.kind).sort(), ['done', 'pet_not_available']);
    await pair.close();
  });
});
