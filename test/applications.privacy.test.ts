/**
 * Applicants' personal data through the HTTP layer on every backend: events carry none, export gives all,
 * erasure removes it for good (idempotency records included) and retention erases what ended long ago.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Database } from '../src/db/database.js';
import { PostgresDatabase } from '../src/db/postgres.js';
import { SqliteDatabase } from '../src/db/sqlite.js';
import { eraseExpiredApplicants } from '../src/modules/applications/retention.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { assertV1Error } from './support/assertions.js';
import {
  acted,
  createPet,
  getApplication,
  inReview,
  newApplication,
  petStatusOf,
  submit,
  submitted,
} from './support/applications.js';
import { feedPoller } from './support/events.js';

const DAY = 24 * 3600_000;

/** Every text column of the tables that could hold the applicant's data, as one string per row. */
async function storedText(database: Database): Promise<string> {
  const tables = ['applicants', 'applications', 'idempotency_keys', 'events'];
  const parts: string[] = [];
  for (const table of tables) {
    if (database instanceof SqliteDatabase) {
      for (const row of database.db.prepare(`SELECT * FROM ${table}`).all()) parts.push(JSON.stringify(row));
    } else if (database instanceof PostgresDatabase) {
      for (const row of await database.query({ text: `SELECT * FROM ${table}` }))
        parts.push(JSON.stringify(row));
    }
  }
  return parts.join('\n');
}

for (const backend of await backends()) {
  describe(`applications: personal data [${backend.name}]`, () => {
    let ctx: TestContext;
    let staff: string;
    let partner: string;
    let other: string;

    before(async () => {
      ctx = await createTestContext(backend, { config: { maxOpenApplications: 10 } });
      ({ key: staff } = await ctx.createKey({ name: 'staff' }));
      ({ key: partner } = await ctx.createKey({
        name: 'partner-a',
        scopes: ['applications:write', 'events:read'],
      }));
      ({ key: other } = await ctx.createKey({
        name: 'partner-b',
        scopes: ['applications:write', 'events:read'],
      }));
    });
    after(() => ctx.close());

    test('events: one per step, ids and statuses only, to the own account and to managers', async () => {
      const staffFeed = feedPoller(ctx.app, staff);
      const partnerFeed = feedPoller(ctx.app, partner);
      const otherFeed = feedPoller(ctx.app, other);
      await Promise.all([staffFeed.poll(), partnerFeed.poll(), otherFeed.poll()]);
      const petId = await createPet(ctx.app, staff);
      const application = await inReview(ctx.app, staff, partner, petId, 'Events.Person@example.org');
      await ctx.app.inject({
        method: 'PATCH',
        url: `/v1/applications/${application.id}`,
        headers: bearer(partner),
        payload: { answers: { experience: 'UniqueAnswerText' } },
      });
      await acted(ctx.app, staff, application.id, 'request-info', { message: 'More please' });
      await ctx.app.inject({
        method: 'PATCH',
        url: `/v1/applications/${application.id}`,
        headers: bearer(partner),
        payload: { answers: { experience: 'UniqueAnswerText2' } },
      });
      const approved = await acted(ctx.app, staff, application.id, 'approve');
      for (const step of ['approve', 'deliver']) {
        await ctx.app.inject({
          method: 'POST',
          url: `/v1/store/orders/${approved.orderId}/${step}`,
          headers: bearer(staff),
        });
      }
      const ofApplication = (events: { type: string; data: { object: Record<string, unknown> } }[]) =>
        events
          .filter((e) => e.type.startsWith('application.') && e.data.object.id === application.id)
          .map((e) => e.type);
      const expected = [
        'application.submitted',
        'application.in_review',
        'application.needs_info',
        'application.updated',
        'application.in_review',
        'application.approved',
        'application.adopted',
      ];
      const seenByStaff = await staffFeed.poll();
      const seenByPartner = await partnerFeed.poll();
      // The patch in needs_info is application.updated then application.in_review.
      assert.deepEqual(
        ofApplication(seenByStaff).filter((t) => t !== 'application.updated'),
        expected.filter((t) => t !== 'application.updated'),
      );
      assert.deepEqual(ofApplication(seenByPartner), ofApplication(seenByStaff));
      assert.equal(
        ofApplication(await otherFeed.poll()).length,
        0,
        "another account's applications are not shown",
      );
      const text = JSON.stringify(seenByStaff);
      for (const secret of [
        'Events.Person',
        'Ada Lovelace',
        'UniqueAnswerText',
        '7946',
        'Two adults',
        'More please',
      ])
        assert.ok(!text.includes(secret), `events carry no ${secret}`);
      const adopted = seenByStaff.find((e) => e.type === 'application.adopted')!;
      assert.deepEqual(Object.keys(adopted.data.object).sort(), [
        'applicantId',
        'createdAt',
        'formVersion',
        'id',
        'orderId',
        'petId',
        'status',
        'updatedAt',
      ]);
    });

    test('a key without applications:read sees no application events of its account', async () => {
      const { key: feedOnly } = await ctx.createKey({ name: 'partner-a', scopes: ['events:read'] });
      const feed = feedPoller(ctx.app, feedOnly);
      await feed.poll();
      await submitted(ctx.app, partner, await createPet(ctx.app, staff), 'hidden@example.org');
      assert.equal((await feed.poll()).filter((e) => e.type.startsWith('appl')).length, 0);
    });

    test('export: the applicant and every application with answers and history', async () => {
      const one = await submitted(ctx.app, partner, await createPet(ctx.app, staff), 'export@example.org');
      await submitted(ctx.app, partner, await createPet(ctx.app, staff), 'export@example.org');
      const res = await ctx.app.inject({
        url: `/v1/applicants/${one.applicantId}/export`,
        headers: bearer(staff),
      });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.equal(body.applicant.email, 'export@example.org');
      assert.equal(body.applications.length, 2);
      assert.equal(body.applications[0].answers.household, 'Two adults');
      assert.equal(body.applications[0].history[0].status, 'submitted');
      assertV1Error(
        await ctx.app.inject({ url: `/v1/applicants/${one.applicantId}/export`, headers: bearer(partner) }),
        403,
        'insufficient_scope',
        'partner',
      );
    });

    test('erasure: gone for good (idempotency records too), open ones withdrawn, the order cancelled; repeatable', async () => {
      const email = 'erase.me.please@example.org';
      const firstPet = await createPet(ctx.app, staff);
      const body = {
        ...newApplication(firstPet, email),
        applicant: { name: 'Erasable Person', email, phone: '+1 555 0199' },
      };
      const created = await submit(ctx.app, partner, body, { 'idempotency-key': 'erase-key' });
      assert.equal(created.statusCode, 201);
      const { id, applicantId } = created.json();
      const secondPet = await createPet(ctx.app, staff);
      const approvedOne = await inReview(ctx.app, staff, partner, secondPet, email);
      const approved = await acted(ctx.app, staff, approvedOne.id, 'approve');
      await acted(ctx.app, staff, id, 'reject', { reason: 'other', note: 'Note naming Ada' });
      assert.ok((await storedText(ctx.database)).includes(email));

      const erased = await ctx.app.inject({
        method: 'DELETE',
        url: `/v1/applicants/${applicantId}`,
        headers: bearer(staff),
      });
      assert.equal(erased.statusCode, 204, erased.body);
      const applicant = await ctx.app.inject({
        url: `/v1/applicants/${applicantId}`,
        headers: bearer(staff),
      });
      assert.equal(applicant.json().name, null);
      assert.equal(applicant.json().email, null);
      assert.equal(applicant.json().phone, undefined);
      assert.equal(applicant.json().erasedAt, new Date(ctx.clock.now).toISOString());
      const rejected = await getApplication(ctx.app, staff, id);
      assert.equal(rejected.status, 'rejected', 'ended ones keep their status');
      assert.deepEqual(rejected.answers, {});
      const withdrawn = await getApplication(ctx.app, staff, approvedOne.id);
      assert.equal(withdrawn.status, 'withdrawn');
      assert.equal(withdrawn.statusReason, 'erased');
      const order = await ctx.app.inject({
        url: `/v1/store/orders/${approved.orderId}`,
        headers: bearer(staff),
      });
      assert.equal(order.json().status, 'cancelled');
      assert.equal(await petStatusOf(ctx.app, staff, secondPet), 'available');
      const stored = await storedText(ctx.database);
      for (const secret of [email, 'Erasable Person', '555 0199', 'Note naming Ada'])
        assert.ok(!stored.includes(secret), `nothing stored holds ${secret}`);
      // The idempotency record went with it: the same key and body now make a new application.
      const again = await submit(ctx.app, partner, body, { 'idempotency-key': 'erase-key' });
      assert.equal(again.statusCode, 201);
      assert.notEqual(again.json().id, id);
      assert.equal(again.headers['idempotent-replayed'], undefined);
      assert.equal(
        (
          await ctx.app.inject({
            method: 'DELETE',
            url: `/v1/applicants/${applicantId}`,
            headers: bearer(staff),
          })
        ).statusCode,
        204,
        'repeatable',
      );
      assertV1Error(
        await ctx.app.inject({
          method: 'DELETE',
          url: '/v1/applicants/apl_00000000000000000000',
          headers: bearer(staff),
        }),
        404,
        'applicant_not_found',
        'unknown',
      );
    });

    test('retention: applicants whose applications all ended without adoption that long ago are erased', async () => {
      const ended = await submitted(ctx.app, partner, await createPet(ctx.app, staff), 'ended@example.org');
      await acted(ctx.app, partner, ended.id, 'withdraw', {});
      const open = await submitted(ctx.app, partner, await createPet(ctx.app, staff), 'open@example.org');
      const adoptedPet = await createPet(ctx.app, staff);
      const adopted = await inReview(ctx.app, staff, partner, adoptedPet, 'adopted@example.org');
      const approved = await acted(ctx.app, staff, adopted.id, 'approve');
      for (const step of ['approve', 'deliver']) {
        await ctx.app.inject({
          method: 'POST',
          url: `/v1/store/orders/${approved.orderId}/${step}`,
          headers: bearer(staff),
        });
      }
      const now = ctx.clock.now;
      assert.equal(await eraseExpiredApplicants(ctx.database, 365, () => now + 364 * DAY), 0, 'not yet');
      const erased = await eraseExpiredApplicants(ctx.database, 365, () => now + 366 * DAY);
      assert.ok(erased >= 1);
      const applicant = (id: string) =>
        ctx.app.inject({ url: `/v1/applicants/${id}`, headers: bearer(staff) });
      assert.notEqual((await applicant(ended.applicantId)).json().erasedAt, null);
      assert.equal((await applicant(open.applicantId)).json().erasedAt, null, 'an open application keeps it');
      assert.equal((await applicant(adopted.applicantId)).json().erasedAt, null, 'an adoption keeps it');
    });
  });
}
