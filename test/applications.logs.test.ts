/**
 * Applicant fields never reach the logs, on every backend: the service's own logger configuration, captured,
 * while applications are submitted, refused, changed and erased (a refusal included, since its error names
 * the field, not the value).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { buildApp } from '../src/app.js';
import { mintKey } from '../src/modules/accounts/mint.js';
import { accountRepository } from '../src/modules/accounts/repository.js';
import { loggerOptions } from '../src/server.js';
import { backends, bearer, defaultTestConfig, TestClock } from './helpers.js';
import { createPet, newApplication, submit } from './support/applications.js';

for (const backend of await backends()) {
  describe(`applications: nothing personal in the logs [${backend.name}]`, () => {
    const lines: string[] = [];
    let close: () => Promise<void>;
    let app: Awaited<ReturnType<typeof buildApp>>;
    let key: string;

    before(async () => {
      const database = await backend.createDatabase();
      await database.migrate();
      const counterStore = await backend.createCounterStore(await database.installationId());
      const clock = new TestClock();
      // debug: the most the service would ever write.
      const logger = pino(loggerOptions({ logLevel: 'debug' }), {
        write: (line: string) => void lines.push(line),
      });
      app = await buildApp({ config: defaultTestConfig, database, counterStore, clock: clock.fn, logger });
      await app.ready();
      const accounts = database.repository(accountRepository);
      const account = await accounts.upsertAccount({ name: 'logs', plan: 'business' }, clock.now);
      key = (await mintKey(accounts, account.id, clock.now, null, null)).key;
      close = async () => {
        await app.close();
        await counterStore.close();
        await database.close();
      };
    });
    after(() => close());

    test('submission, refusals, a patch and erasure leave no applicant field in any log line', async () => {
      const petId = await createPet(app, key);
      const body = {
        ...newApplication(petId, 'log.secret.person@example.org'),
        applicant: {
          name: 'Logname Secretperson',
          email: 'log.secret.person@example.org',
          phone: '+1 555 0142',
          address: { line1: '12 Hidden Lane', city: 'Privatetown', postcode: 'PX1 2YZ', country: 'GB' },
        },
      };
      const created = await submit(app, key, body);
      assert.equal(created.statusCode, 201, created.body);
      assert.equal((await submit(app, key, body)).statusCode, 409);
      const badEmail = { ...body, applicant: { ...body.applicant, email: 'not-an-email Logname' } };
      assert.equal((await submit(app, key, badEmail)).statusCode, 400);
      const badAnswer = { ...body, answers: { ...body.answers, household: 12345 } };
      assert.equal((await submit(app, key, badAnswer)).statusCode, 400);
      const patched = await app.inject({
        method: 'PATCH',
        url: `/v1/applications/${created.json().id}`,
        headers: bearer(key),
        payload: { applicant: { name: 'Logname Otherperson' }, answers: { experience: 'Hiddenanswer text' } },
      });
      assert.equal(patched.statusCode, 200, patched.body);
      const erased = await app.inject({
        method: 'DELETE',
        url: `/v1/applicants/${created.json().applicantId}`,
        headers: bearer(key),
      });
      assert.equal(erased.statusCode, 204);
      assert.ok(lines.length > 0, 'the logger wrote');
      const text = lines.join('\n');
      for (const secret of [
        'log.secret',
        'Logname',
        'Secretperson',
        '555 0142',
        'Hidden Lane',
        'Privatetown',
        'PX1',
        'Hiddenanswer',
        'Two adults',
      ])
        assert.ok(!text.includes(secret), `no log line holds ${secret}`);
    });
  });
}
