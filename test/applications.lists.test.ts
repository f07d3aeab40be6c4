/** Applications' lists, the form and Idempotency-Key through the HTTP layer on every backend. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { assertV1Error } from './support/assertions.js';
import { act, acted, createPet, newApplication, submit, submitted } from './support/applications.js';

for (const backend of await backends()) {
  describe(`applications: lists, the form, idempotency [${backend.name}]`, () => {
    let ctx: TestContext;
    let staff: string;
    let partner: string;

    before(async () => {
      ctx = await createTestContext(backend, { config: { maxOpenApplications: 3 } });
      ({ key: staff } = await ctx.createKey({ name: 'staff' }));
      ({ key: partner } = await ctx.createKey({ name: 'partner-a', scopes: ['applications:write'] }));
    });
    after(() => ctx.close());

    test('list: status comma list, petId, applicantId, sort, keyset pages with Link', async () => {
      const petId = await createPet(ctx.app, staff);
      const made = [];
      for (let i = 0; i < 5; i++)
        made.push(await submitted(ctx.app, partner, petId, `list-${i}@example.org`));
      await acted(ctx.app, staff, made[1]!.id, 'review');
      const byPet = await ctx.app.inject({
        url: `/v1/applications?petId=${petId}&limit=2`,
        headers: bearer(staff),
      });
      assert.deepEqual(
        byPet.json().map((a: { id: string }) => a.id),
        [made[4]!.id, made[3]!.id],
        'newest first',
      );
      const link = String(byPet.headers.link);
      assert.match(link, /rel="next"/);
      const next = /<([^>]+)>/.exec(link)![1]!;
      assert.match(next, /petId=/);
      const page2 = await ctx.app.inject({ url: next, headers: bearer(staff) });
      assert.deepEqual(
        page2.json().map((a: { id: string }) => a.id),
        [made[2]!.id, made[1]!.id],
      );
      const oldest = await ctx.app.inject({
        url: `/v1/applications?petId=${petId}&sort=oldest&limit=1`,
        headers: bearer(staff),
      });
      assert.equal(oldest.json()[0].id, made[0]!.id);
      const statuses = await ctx.app.inject({
        url: `/v1/applications?petId=${petId}&status=in_review,needs_info`,
        headers: bearer(staff),
      });
      assert.deepEqual(
        statuses.json().map((a: { id: string }) => a.id),
        [made[1]!.id],
      );
      const byApplicant = await ctx.app.inject({
        url: `/v1/applications?applicantId=${made[2]!.applicantId}`,
        headers: bearer(staff),
      });
      assert.deepEqual(
        byApplicant.json().map((a: { id: string }) => a.id),
        [made[2]!.id],
      );
      assertV1Error(
        await ctx.app.inject({ url: '/v1/applications?status=lost', headers: bearer(staff) }),
        400,
        'validation_failed',
        'bad status',
      );
    });

    test('the form: PUT with If-Match bumps the version; new applications answer the new questions', async () => {
      const current = await ctx.app.inject({ url: '/v1/application-form', headers: bearer(staff) });
      const questions = [
        ...current.json().questions,
        { id: 'move-in', label: 'When can the animal move in?', type: 'date', required: false },
        { id: 'hours-alone', label: 'Hours alone per day', type: 'number', required: false },
      ];
      const stale = await ctx.app.inject({
        method: 'PUT',
        url: '/v1/application-form',
        headers: { ...bearer(staff), 'if-match': '"99"' },
        payload: { questions },
      });
      assertV1Error(stale, 412, 'precondition_failed', 'stale form');
      const put = await ctx.app.inject({
        method: 'PUT',
        url: '/v1/application-form',
        headers: { ...bearer(staff), 'if-match': String(current.headers.etag) },
        payload: { questions },
      });
      assert.equal(put.statusCode, 200, put.body);
      assert.equal(put.json().version, current.json().version + 1);
      assertV1Error(
        await ctx.app.inject({
          method: 'PUT',
          url: '/v1/application-form',
          headers: bearer(partner),
          payload: { questions },
        }),
        403,
        'insufficient_scope',
        'partner',
      );
      const petId = await createPet(ctx.app, staff);
      const base = newApplication(petId, 'form@example.org');
      assertV1Error(
        await submit(ctx.app, partner, { ...base, answers: { ...base.answers, 'move-in': '2026-02-30' } }),
        400,
        'validation_failed',
        'impossible date',
      );
      const ok = await submit(ctx.app, partner, {
        ...base,
        answers: { ...base.answers, 'move-in': '2026-03-01', 'hours-alone': 4 },
      });
      assert.equal(ok.statusCode, 201, ok.body);
      assert.equal(ok.json().formVersion, put.json().version);
    });

    test('Idempotency-Key: a repeat replays the application without a second one', async () => {
      const petId = await createPet(ctx.app, staff);
      const body = newApplication(petId, 'idem@example.org');
      const headers = { 'idempotency-key': 'apply-once' };
      const first = await submit(ctx.app, partner, body, headers);
      const again = await submit(ctx.app, partner, body, headers);
      assert.equal(first.statusCode, 201);
      assert.equal(again.statusCode, 201);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.json().id, first.json().id);
      assertV1Error(
        await submit(
          ctx.app,
          partner,
          { ...body, answers: { ...body.answers, household: 'Three' } },
          headers,
        ),
        422,
        'idempotency_key_reused',
        'other body',
      );
      const review = await act(ctx.app, staff, first.json().id, 'review', undefined, {
        'idempotency-key': 'r1',
      });
      const reviewAgain = await act(ctx.app, staff, first.json().id, 'review', undefined, {
        'idempotency-key': 'r1',
      });
      assert.equal(review.statusCode, 200);
      assert.equal(reviewAgain.statusCode, 200);
      assert.equal(reviewAgain.headers['idempotent-replayed'], 'true');
    });
  });
}
