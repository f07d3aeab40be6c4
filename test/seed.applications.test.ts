/**
 * `seed` adds demo applications in every status of the workflow, through the module's seed step (what
 * `pet-adoption seed` runs), identically on both backends: the API then shows them, their order and pets moved
 * as the workflow moves them, and their events carry no personal data. A second seed adds as many again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MODULES } from '../src/modules/index.js';
import { seedCatalogue } from '../src/modules/listings/seed.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';

/** What the plan reaches, in the order the applications were submitted. */
const EXPECTED = [
  ['submitted', undefined],
  ['in_review', undefined],
  ['needs_info', undefined],
  ['approved', undefined],
  ['submitted', undefined],
  ['closed', 'pet_adopted'],
  ['adopted', undefined],
  ['rejected', 'incomplete'],
];

interface Shown {
  id: string;
  applicantId: string;
  petId: number;
  status: string;
  statusReason?: string;
  orderId?: number;
  message?: string;
  answers: Record<string, unknown>;
  applicant: { name: string; email: string };
  history: { status: string; by: string | null; at: string }[];
  createdAt: string;
}

for (const backend of await backends()) {
  describe(`seed: demo applications [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;
    const seed = () =>
      MODULES.find((module) => module.name === 'applications')!.seed!.run({
        database: ctx.database,
        count: 40,
        now: ctx.clock.now,
        onProgress: () => {},
      });
    const all = async (): Promise<Shown[]> => {
      const res = await ctx.app.inject({
        url: '/v1/applications?sort=oldest&limit=100',
        headers: bearer(key),
      });
      assert.equal(res.statusCode, 200, res.body);
      return res.json();
    };

    before(async () => {
      ctx = await createTestContext(backend);
      ({ key } = await ctx.createKey());
      await ctx.pets.seed(40, ctx.clock.now);
      await seedCatalogue(ctx.database, 40, { withPhotos: 0, now: ctx.clock.now });
    });
    after(() => ctx.close());

    test('every status of the workflow, with the order, the pets and the events it implies', async () => {
      await seed();
      const shown = await all();
      assert.deepEqual(
        shown.map((a) => [a.status, a.statusReason]),
        EXPECTED,
      );
      assert.equal(new Set(shown.map((a) => a.petId)).size, 6, 'six pets');
      const approved = shown[3]!;
      const adopted = shown[6]!;
      const pet = async (id: number) =>
        (await ctx.app.inject({ url: `/v1/pets/${id}`, headers: bearer(key) })).json().status;
      assert.equal(await pet(approved.petId), 'pending', 'the approval holds its pet');
      assert.equal(await pet(adopted.petId), 'sold', 'the adoption sold its pet');
      const order = async (id: number) =>
        (await ctx.app.inject({ url: `/v1/store/orders/${id}`, headers: bearer(key) })).json().status;
      assert.equal(await order(approved.orderId!), 'placed');
      assert.equal(await order(adopted.orderId!), 'delivered');
      assert.match(shown[2]!.message ?? '', /fence/);
      assert.equal(shown[0]!.applicant.name, 'Mara Klein');
      assert.equal(shown[4]!.applicantId, shown[0]!.applicantId, 'Mara applied twice as one applicant');

      // The answers fit the form in force: a PATCH re-checks them against it.
      const form = (await ctx.app.inject({ url: '/v1/application-form', headers: bearer(key) })).json();
      for (const q of form.questions as { id: string }[]) assert.ok(q.id in shown[0]!.answers, q.id);
      const patched = await ctx.app.inject({
        method: 'PATCH',
        url: `/v1/applications/${shown[0]!.id}`,
        headers: { ...bearer(key), 'content-type': 'application/merge-patch+json' },
        payload: {},
      });
      assert.equal(patched.statusCode, 200, patched.body);

      // A queue spread over days, steps in order.
      for (const a of shown) {
        const times = a.history.map((step) => Date.parse(step.at));
        assert.deepEqual(
          times,
          [...times].sort((x, y) => x - y),
        );
        assert.ok(a.history.every((step) => step.by === 'seed' || step.by === null));
      }
      assert.ok(Date.parse(shown[0]!.createdAt) < Date.parse(shown.at(-1)!.createdAt));

      const events = await ctx.app.inject({ url: '/v1/events?limit=100', headers: bearer(key) });
      const applicationEvents = (events.json() as { type: string }[]).filter((e) =>
        e.type.startsWith('application.'),
      );
      assert.ok(applicationEvents.some((e) => e.type === 'application.adopted'));
      assert.ok(applicationEvents.some((e) => e.type === 'application.closed'));
      assert.doesNotMatch(JSON.stringify(applicationEvents), /Mara|example\.org|\+49/);
    });

    test('a second seed adds as many again, with new applicants', async () => {
      await ctx.pets.seed(40, ctx.clock.now);
      await seedCatalogue(ctx.database, 40, { withPhotos: 0, now: ctx.clock.now });
      await seed();
      const shown = await all();
      assert.equal(shown.length, 2 * EXPECTED.length);
      assert.deepEqual(
        shown.slice(EXPECTED.length).map((a) => [a.status, a.statusReason]),
        EXPECTED,
      );
      assert.equal(new Set(shown.map((a) => a.applicantId)).size, 12);
    });
  });
}
