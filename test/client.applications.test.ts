/** The client SDK's applications methods (as built) against the real server on a real socket, on every backend. */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { PetAdoptionClient, PetAdoptionError } from '@pet-adoption/client';
import { backends, createTestContext, type TestContext } from './helpers.js';

for (const backend of await backends()) {
  describe(`client SDK: applications [${backend.name}]`, () => {
    let ctx: TestContext;
    let staff: PetAdoptionClient;
    let partner: PetAdoptionClient;

    before(async () => {
      ctx = await createTestContext(backend);
      await ctx.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = ctx.app.server.address() as AddressInfo;
      const baseUrl = `http://127.0.0.1:${port}`;
      staff = new PetAdoptionClient({ apiKey: (await ctx.createKey({ name: 'staff' })).key, baseUrl });
      const { key } = await ctx.createKey({ name: 'partner', scopes: ['applications:write'] });
      partner = new PetAdoptionClient({ apiKey: key, baseUrl });
    });
    after(() => ctx.close());

    test('form, create, list, get, update, every action, applicant get/export/erase', async () => {
      const form = await partner.applications.form.get();
      assert.equal(form.version, 1);
      const put = await staff.applications.form
        .get()
        .then(() => staff.applications.form.put({ questions: form.questions }));
      assert.equal(put.version, 2, 'If-Match from the remembered ETag matched');
      const pet = await staff.pets.create({ name: 'Sdk applied', categoryId: 1 });
      const body = {
        petId: pet.id,
        applicant: { name: 'Sdk Person', email: 'sdk@example.org' },
        answers: { household: 'One', home: 'apartment', 'other-pets': false },
        consent: { dataProcessing: true },
      };
      const created = await partner.applications.create(body);
      assert.equal(created.status, 'submitted');
      const listed = [];
      for await (const application of partner.applications.list({ status: 'submitted' }))
        listed.push(application.id);
      assert.deepEqual(listed, [created.id]);
      const updated = await partner.applications.update(created.id, { answers: { experience: 'Some' } });
      assert.equal(updated.answers.experience, 'Some');
      await staff.applications.get(created.id);
      await staff.applications.review(created.id);
      await staff.applications.requestInfo(created.id, 'Garden?');
      // The partner's remembered ETag is stale after staff's moves: it reads the application again first.
      await partner.applications.get(created.id);
      await partner.applications.update(created.id, { answers: { experience: 'A garden' } });
      await staff.applications.get(created.id);
      const approved = await staff.applications.approve(created.id);
      assert.equal(approved.status, 'approved');
      assert.ok(approved.orderId);
      await partner.applications.get(created.id);
      const withdrawn = await partner.applications.withdraw(created.id, { reason: 'changed plans' });
      assert.equal(withdrawn.status, 'withdrawn');
      const second = await partner.applications.create(body);
      const rejected = await staff.applications.reject(second.id, { reason: 'duplicate' });
      assert.equal(rejected.statusReason, 'duplicate');
      await assert.rejects(
        staff.applications.review(second.id),
        (error: unknown) =>
          error instanceof PetAdoptionError && error.code === 'invalid_transition' && error.status === 409,
      );
      const exported = await staff.applicants.export(created.applicantId);
      assert.equal(exported.applications.length, 2);
      await staff.applicants.erase(created.applicantId);
      const erased = await staff.applicants.get(created.applicantId);
      assert.equal(erased.email, null);
      assert.notEqual(erased.erasedAt, null);
      await assert.rejects(
        partner.applicants.get(created.applicantId),
        (error: unknown) => error instanceof PetAdoptionError && error.code === 'insufficient_scope',
      );
    });
  });
}
