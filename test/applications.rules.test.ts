/** Applications' rules and bounds through the HTTP layer on every backend. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { assertV1Error } from './support/assertions.js';
import {
  act,
  acted,
  createPet,
  getApplication,
  inReview,
  newApplication,
  petStatusOf,
  submit,
  submitted,
} from './support/applications.js';

for (const backend of await backends()) {
  describe(`applications: rules and bounds [${backend.name}]`, () => {
    let ctx: TestContext;
    let staff: string;
    let partner: string;
    let other: string;

    before(async () => {
      ctx = await createTestContext(backend, { config: { maxOpenApplications: 3 } });
      ({ key: staff } = await ctx.createKey({ name: 'staff' }));
      ({ key: partner } = await ctx.createKey({ name: 'partner-a', scopes: ['applications:write'] }));
      ({ key: other } = await ctx.createKey({ name: 'partner-b', scopes: ['applications:write'] }));
    });
    after(() => ctx.close());

    test('201: Location, strong ETag, the applicant embedded, history; found again by email', async () => {
      const petId = await createPet(ctx.app, staff);
      const res = await submit(ctx.app, partner, newApplication(petId, 'Grace@Example.org'));
      assert.equal(res.statusCode, 201, res.body);
      const body = res.json();
      assert.match(body.id, /^app_[0-9a-f]{20}$/);
      assert.match(body.applicantId, /^apl_[0-9a-f]{20}$/);
      assert.equal(res.headers.location, `/v1/applications/${body.id}`);
      assert.equal(res.headers.etag, '"1"');
      assert.equal(body.status, 'submitted');
      assert.equal(body.formVersion, 1);
      assert.equal(body.applicant.email, 'Grace@Example.org');
      assert.deepEqual(body.applicant.consent, {
        dataProcessing: true,
        at: new Date(ctx.clock.now).toISOString(),
      });
      assert.equal(body.applicant.erasedAt, null);
      assert.equal(body.history.length, 1);
      assert.equal(body.history[0].status, 'submitted');
      const petTwo = await createPet(ctx.app, staff);
      const again = await submit(ctx.app, partner, {
        ...newApplication(petTwo, 'grace@example.ORG'),
        applicant: { name: 'Grace Hopper', email: 'grace@example.ORG' },
      });
      assert.equal(again.statusCode, 201, again.body);
      assert.equal(again.json().applicantId, body.applicantId, 'case-insensitive email finds the applicant');
      assert.equal(again.json().applicant.name, 'Grace Hopper', 'given fields update it');
      assert.equal(again.json().applicant.phone, '+44 20 7946 0000', 'fields not given stay');
      // Another account's applicant with the same email is another person record.
      const theirs = await submit(ctx.app, other, newApplication(petTwo, 'grace@example.org'));
      assert.notEqual(theirs.json().applicantId, body.applicantId);
    });

    test('answers are checked against the form; consent is required; errors name fields, not values', async () => {
      const petId = await createPet(ctx.app, staff);
      const base = newApplication(petId, 'checks@example.org');
      const unknown = await submit(ctx.app, partner, {
        ...base,
        answers: { ...base.answers, 'secret-q': 'x' },
      });
      assertV1Error(unknown, 400, 'validation_failed', 'unknown question');
      assert.ok(unknown.json().details.some((d: { field: string }) => d.field === 'answers.secret-q'));
      const missing = await submit(ctx.app, partner, {
        ...base,
        answers: { home: 'house', 'other-pets': true },
      });
      assertV1Error(missing, 400, 'validation_failed', 'required missing');
      assert.ok(missing.json().details.some((d: { field: string }) => d.field === 'answers.household'));
      const wrong = await submit(ctx.app, partner, {
        ...base,
        answers: { ...base.answers, 'other-pets': 'TopSecretValue' },
      });
      assertV1Error(wrong, 400, 'validation_failed', 'wrong type');
      assert.doesNotMatch(wrong.body, /TopSecretValue/);
      const choice = await submit(ctx.app, partner, {
        ...base,
        answers: { ...base.answers, home: 'castle' },
      });
      assertV1Error(choice, 400, 'validation_failed', 'not an option');
      assertV1Error(
        await submit(ctx.app, partner, { ...base, consent: { dataProcessing: false } }),
        400,
        'consent_required',
        'no consent',
      );
      const badEmail = await submit(ctx.app, partner, {
        ...base,
        applicant: { name: 'X', email: 'HiddenLocal' },
      });
      assertV1Error(badEmail, 400, 'validation_failed', 'bad email');
      assert.doesNotMatch(badEmail.body, /HiddenLocal/);
      assertV1Error(
        await submit(ctx.app, partner, newApplication(987654321)),
        409,
        'pet_not_available',
        'no pet',
      );
    });

    test('one open application per applicant and pet; MAX_OPEN_APPLICATIONS per applicant', async () => {
      const petId = await createPet(ctx.app, staff);
      await submitted(ctx.app, partner, petId, 'bounds@example.org');
      assertV1Error(
        await submit(ctx.app, partner, newApplication(petId, 'BOUNDS@example.org')),
        409,
        'application_exists',
        'second open one',
      );
      await submitted(ctx.app, partner, await createPet(ctx.app, staff), 'bounds@example.org');
      const third = await submitted(ctx.app, partner, await createPet(ctx.app, staff), 'bounds@example.org');
      const limited = await submit(
        ctx.app,
        partner,
        newApplication(await createPet(ctx.app, staff), 'bounds@example.org'),
      );
      assertV1Error(limited, 409, 'open_application_limit', 'fourth with max 3');
      await acted(ctx.app, partner, third.id, 'withdraw', {});
      assert.equal(
        (
          await submit(
            ctx.app,
            partner,
            newApplication(await createPet(ctx.app, staff), 'bounds@example.org'),
          )
        ).statusCode,
        201,
      );
    });

    test('scopes: partners see their own only (404 otherwise); staff actions need manage', async () => {
      const petId = await createPet(ctx.app, staff);
      const mine = await submitted(ctx.app, partner, petId, 'scopes@example.org');
      const seen = await ctx.app.inject({ url: `/v1/applications/${mine.id}`, headers: bearer(other) });
      assertV1Error(seen, 404, 'application_not_found', "another account's");
      assertV1Error(
        await act(ctx.app, other, mine.id, 'withdraw', {}),
        404,
        'application_not_found',
        'withdraw theirs',
      );
      const review = await act(ctx.app, partner, mine.id, 'review');
      assertV1Error(review, 403, 'insufficient_scope', 'review needs manage');
      assert.match(String(review.headers['www-authenticate']), /applications:manage/);
      const list = await ctx.app.inject({ url: '/v1/applications?limit=100', headers: bearer(other) });
      assert.ok(list.json().every((a: { id: string }) => a.id !== mine.id));
      const applicant = await ctx.app.inject({
        url: `/v1/applicants/${mine.applicantId}`,
        headers: bearer(partner),
      });
      assertV1Error(applicant, 403, 'insufficient_scope', 'applicants need manage');
    });

    test('PATCH merges answers and applicant, only in submitted or needs_info; needs_info returns to in_review', async () => {
      const petId = await createPet(ctx.app, staff);
      const created = await submitted(ctx.app, partner, petId, 'patch@example.org');
      const url = `/v1/applications/${created.id}`;
      const patch = (payload: object, key = partner, headers: Record<string, string> = {}) =>
        ctx.app.inject({
          method: 'PATCH',
          url,
          headers: { ...bearer(key), 'content-type': 'application/merge-patch+json', ...headers },
          payload: JSON.stringify(payload),
        });
      const patched = await patch({
        answers: { experience: 'Two cats', 'other-pets': true },
        applicant: { phone: null },
      });
      assert.equal(patched.statusCode, 200, patched.body);
      assert.equal(patched.json().answers.experience, 'Two cats');
      assert.equal(patched.json().answers['other-pets'], true);
      assert.equal(patched.json().answers.household, 'Two adults');
      assert.equal(patched.json().applicant.phone, undefined);
      assert.equal(patched.json().status, 'submitted');
      assert.equal(patched.headers.etag, '"2"');
      assertV1Error(
        await patch({ answers: { household: null } }),
        400,
        'validation_failed',
        'required removed',
      );
      assertV1Error(
        await patch({ answers: {} }, partner, { 'if-match': '"1"' }),
        412,
        'precondition_failed',
        'stale',
      );
      await acted(ctx.app, staff, created.id, 'review');
      assertV1Error(await patch({ answers: { experience: 'x' } }), 409, 'invalid_transition', 'in review');
      const asked = await acted(ctx.app, staff, created.id, 'request-info', {
        message: 'Tell us about the garden.',
      });
      assert.equal(asked.status, 'needs_info');
      const answered = await patch({ answers: { experience: 'A big garden' } });
      assert.equal(answered.statusCode, 200, answered.body);
      assert.equal(answered.json().status, 'in_review');
      assert.equal(answered.json().message, 'Tell us about the garden.');
    });

    test('reject with a reason; withdraw of an approved one cancels its order and frees the pet', async () => {
      const petId = await createPet(ctx.app, staff);
      const one = await inReview(ctx.app, staff, partner, petId, 'reject@example.org');
      const rejected = await acted(ctx.app, staff, one.id, 'reject', {
        reason: 'unsuitable',
        note: 'Small flat',
      });
      assert.equal(rejected.status, 'rejected');
      assert.equal(rejected.statusReason, 'unsuitable');
      assertV1Error(
        await act(ctx.app, staff, one.id, 'reject', { reason: 'other' }),
        409,
        'invalid_transition',
        'final',
      );
      assertV1Error(
        await act(ctx.app, staff, one.id, 'reject', { reason: 'rude' }),
        400,
        'validation_failed',
        'enum',
      );
      const two = await inReview(ctx.app, staff, partner, petId, 'withdraw@example.org');
      const approved = await acted(ctx.app, staff, two.id, 'approve');
      const withdrawn = await acted(ctx.app, partner, two.id, 'withdraw', { reason: 'moved abroad' });
      assert.equal(withdrawn.status, 'withdrawn');
      assert.equal(withdrawn.orderId, approved.orderId);
      const order = await ctx.app.inject({
        url: `/v1/store/orders/${approved.orderId}`,
        headers: bearer(staff),
      });
      assert.equal(order.json().status, 'cancelled');
      assert.equal(await petStatusOf(ctx.app, staff, petId), 'available');
    });

    test('approval needs an available pet; a cancelled order closes the approved application', async () => {
      const { key: buyer } = await ctx.createKey({ name: 'buyer', scopes: ['orders:write'] });
      const petId = await createPet(ctx.app, staff);
      const one = await inReview(ctx.app, staff, partner, petId, 'held@example.org');
      const order = await ctx.app.inject({
        method: 'POST',
        url: '/v1/store/orders',
        headers: bearer(buyer),
        payload: { petId },
      });
      assert.equal(order.statusCode, 201);
      assertV1Error(
        await act(ctx.app, staff, one.id, 'approve'),
        409,
        'pet_not_available',
        'pet held by a direct order',
      );
      assert.equal((await getApplication(ctx.app, staff, one.id)).status, 'in_review', 'nothing changed');
      await ctx.app.inject({
        method: 'POST',
        url: `/v1/store/orders/${order.json().id}/cancel`,
        headers: bearer(buyer),
      });
      const approved = await acted(ctx.app, staff, one.id, 'approve');
      const cancelled = await ctx.app.inject({
        method: 'POST',
        url: `/v1/store/orders/${approved.orderId}/cancel`,
        headers: bearer(staff),
      });
      assert.equal(cancelled.statusCode, 200);
      const closed = await getApplication(ctx.app, staff, one.id);
      assert.equal(closed.status, 'closed');
      assert.equal(closed.statusReason, 'order_cancelled');
    });

    test('deleting the pet closes its open applications (pet_removed)', async () => {
      const petId = await createPet(ctx.app, staff);
      const one = await submitted(ctx.app, partner, petId, 'removed@example.org');
      const two = await inReview(ctx.app, staff, other, petId, 'removed2@example.org');
      const res = await ctx.app.inject({
        method: 'DELETE',
        url: `/v1/pets/${petId}`,
        headers: bearer(staff),
      });
      assert.equal(res.statusCode, 204, res.body);
      for (const id of [one.id, two.id]) {
        const closed = await getApplication(ctx.app, staff, id);
        assert.equal(closed.status, 'closed');
        assert.equal(closed.statusReason, 'pet_removed');
      }
    });
  });
}
