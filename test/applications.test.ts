/** Applications through the HTTP layer on every backend: the form, submission, the workflow, its bounds. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { assertV1Error } from './support/assertions.js';
import {
  act,
  acted,
  createPet,
  getApplication,
  newApplication,
  petStatusOf,
  submit,
  submitted,
} from './support/applications.js';

for (const backend of await backends()) {
  describe(`applications [${backend.name}]`, () => {
    let ctx: TestContext;
    let staff: string;
    let partner: string;
    let other: string;
    let reader: string;

    before(async () => {
      ctx = await createTestContext(backend, { config: { maxOpenApplications: 3 } });
      ({ key: staff } = await ctx.createKey({ name: 'shelter-staff' }));
      ({ key: partner } = await ctx.createKey({ name: 'partner-a', scopes: ['applications:write'] }));
      ({ key: other } = await ctx.createKey({ name: 'partner-b', scopes: ['applications:write'] }));
      ({ key: reader } = await ctx.createKey({ name: 'partner-a', scopes: ['applications:read'] }));
    });
    after(() => ctx.close());

    test('the default form: versioned, ETag, If-None-Match', async () => {
      const res = await ctx.app.inject({ url: '/v1/application-form', headers: bearer(reader) });
      assert.equal(res.statusCode, 200, res.body);
      const form = res.json();
      assert.equal(form.version, 1);
      assert.equal(res.headers.etag, '"1"');
      assert.ok(form.questions.length >= 3);
      const again = await ctx.app.inject({
        url: '/v1/application-form',
        headers: { ...bearer(reader), 'if-none-match': '"1"' },
      });
      assert.equal(again.statusCode, 304);
    });

    test('submit → review → approve → deliver: adopted, the pet sold, the others closed', async () => {
      const petId = await createPet(ctx.app, staff);
      const first = await submitted(ctx.app, partner, petId, 'first@example.org');
      const second = await submitted(ctx.app, other, petId, 'second@example.org');
      assert.equal(first.status, 'submitted');
      await acted(ctx.app, staff, first.id, 'review');
      const approved = await acted(ctx.app, staff, first.id, 'approve');
      assert.equal(approved.status, 'approved');
      assert.ok(approved.orderId);
      assert.equal(await petStatusOf(ctx.app, staff, petId), 'pending');
      const order = await ctx.app.inject({
        url: `/v1/store/orders/${approved.orderId}`,
        headers: bearer(staff),
      });
      assert.equal(order.json().account, 'partner-a');
      const early = await ctx.app.inject({
        method: 'POST',
        url: `/v1/store/orders/${approved.orderId}/deliver`,
        headers: bearer(staff),
      });
      assert.equal(early.statusCode, 409, 'the order is placed; deliver needs approved');
      for (const step of ['approve', 'deliver']) {
        const res: { statusCode: number; body: string } = await ctx.app.inject({
          method: 'POST',
          url: `/v1/store/orders/${approved.orderId}/${step}`,
          headers: bearer(staff),
        });
        assert.equal(res.statusCode, 200, res.body);
      }
      assert.equal((await getApplication(ctx.app, staff, first.id)).status, 'adopted');
      const closed = await getApplication(ctx.app, staff, second.id);
      assert.equal(closed.status, 'closed');
      assert.equal(closed.statusReason, 'pet_adopted');
      assert.equal(await petStatusOf(ctx.app, staff, petId), 'sold');
      assertV1Error(
        await submit(ctx.app, partner, newApplication(petId, 'late@example.org')),
        409,
        'pet_not_available',
        'sold',
      );
    });

    test('invalid_transition names the current status; If-Match 412', async () => {
      const petId = await createPet(ctx.app, staff);
      const application = await submitted(ctx.app, partner, petId);
      const res = await act(ctx.app, staff, application.id, 'approve');
      assertV1Error(res, 409, 'invalid_transition', 'approve from submitted');
      assert.match(res.json().message, /submitted/);
      const stale = await act(ctx.app, staff, application.id, 'review', undefined, { 'if-match': '"7"' });
      assertV1Error(stale, 412, 'precondition_failed', 'stale');
      assert.equal(stale.headers.etag, '"1"');
    });
  });
}
