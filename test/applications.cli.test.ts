/**
 * `applications list|show|review|approve|reject` through the built CLI (`node dist/cli.js`), on every
 * backend: applications are submitted through the HTTP layer on the same database, then decided from the shell,
 * and the API sees the CLI's moves (the order an approval placed, the held pet, the events).
 * `npm test` builds first; run `npm run build` before running this file alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { Database } from '../src/db/database.js';
import { openDatabase } from '../src/db/index.js';
import { mintKey } from '../src/modules/accounts/mint.js';
import { accountRepository } from '../src/modules/accounts/repository.js';
import { MemoryCounterStore } from '../src/ratelimit/memory.js';
import { backends, bearer, defaultTestConfig } from './helpers.js';
import { createPet, getApplication, petStatusOf, submitted } from './support/applications.js';
import { cli, environmentFor, type Environment } from '../support/processes.js';

interface Shown {
  id: string;
  petId: number;
  status: string;
  statusReason?: string;
  orderId?: number;
  applicant: { name: string; email: string };
  history: { status: string; by: string | null; reason?: string; note?: string }[];
}

for (const backend of await backends()) {
  describe(`applications CLI [${backend.name}]`, () => {
    let environment: Environment;
    let database: Database;
    let app: FastifyInstance;
    let staff: string;
    let partner: string;

    before(async () => {
      environment = await environmentFor(backend);
      database = await openDatabase(loadConfig(environment.env));
      await database.migrate();
      app = await buildApp({ config: defaultTestConfig, database, counterStore: new MemoryCounterStore() });
      const accounts = database.repository(accountRepository);
      const now = Date.now();
      const mint = async (name: string) => {
        const account = await accounts.upsertAccount({ name, plan: 'business' }, now);
        return (await mintKey(accounts, account.id, now, null, null)).key;
      };
      staff = await mint('staff');
      partner = await mint('partner');
    });
    after(async () => {
      await app.close();
      await database.close();
      await environment.cleanup();
    });

    test('list shows the queue oldest first without personal data; --status, --pet, --account, --json', async () => {
      const petA = await createPet(app, staff);
      const petB = await createPet(app, staff);
      const first = await submitted(app, partner, petA, 'grace@example.org');
      const second = await submitted(app, staff, petB, 'alan@example.org');
      let out = await cli(['applications', 'list'], environment.env);
      assert.equal(out.code, 0, out.stderr);
      const rows = out.stdout.split('\n').filter((line) => line.startsWith('app_'));
      assert.deepEqual(
        rows.map((line) => line.split(/\s+/).slice(0, 3)),
        [
          [first.id, String(petA), 'submitted'],
          [second.id, String(petB), 'submitted'],
        ],
      );
      assert.doesNotMatch(out.stdout, /Ada|example\.org/, 'the list holds no personal data');

      out = await cli(['applications', 'list', '--pet', String(petB), '--json'], environment.env);
      assert.equal(out.code, 0, out.stderr);
      assert.deepEqual(
        (JSON.parse(out.stdout) as Shown[]).map((a) => a.id),
        [second.id],
      );
      out = await cli(['applications', 'list', '--account', 'partner', '--json'], environment.env);
      assert.deepEqual(
        (JSON.parse(out.stdout) as Shown[]).map((a) => [a.id, a.applicant.email]),
        [[first.id, 'grace@example.org']],
      );
      out = await cli(['applications', 'list', '--status', 'in_review,approved', '--json'], environment.env);
      assert.deepEqual(JSON.parse(out.stdout), []);
      out = await cli(['applications', 'list', '--newest', '--json'], environment.env);
      assert.deepEqual(
        (JSON.parse(out.stdout) as Shown[]).map((a) => a.id),
        [second.id, first.id],
      );

      out = await cli(['applications', 'list', '--status', 'lost'], environment.env);
      assert.equal(out.code, 2);
      assert.match(out.stderr, /--status takes a comma list of submitted, in_review/);
      out = await cli(['applications', 'list', '--account', 'nobody'], environment.env);
      assert.equal(out.code, 1);
      assert.match(out.stderr, /no account "nobody"/);
    });

    test('review then approve places the order and holds the pet; show prints the person and the history', async () => {
      const petId = await createPet(app, staff);
      const application = await submitted(app, partner, petId, 'ada@example.org');
      let out = await cli(['applications', 'approve', application.id], environment.env);
      assert.equal(out.code, 1, 'a submitted application is not approved');
      assert.match(
        out.stderr,
        new RegExp(`application ${application.id} is submitted; it cannot be approved`),
      );

      out = await cli(['applications', 'review', application.id], environment.env);
      assert.equal(out.code, 0, out.stderr);
      assert.equal((JSON.parse(out.stdout) as Shown).status, 'in_review');
      out = await cli(['applications', 'approve', application.id], environment.env);
      assert.equal(out.code, 0, out.stderr);
      const approved = JSON.parse(out.stdout) as Shown;
      assert.equal(approved.status, 'approved');
      assert.ok(approved.orderId, 'the approval placed an order');

      // The API sees what the shell did: the order placed for the partner's account, the pet held.
      const seen = await getApplication(app, partner, application.id);
      assert.equal(seen.status, 'approved');
      assert.equal(seen.orderId, approved.orderId);
      const order = await app.inject({
        url: `/v1/store/orders/${approved.orderId}`,
        headers: bearer(partner),
      });
      assert.equal(order.statusCode, 200, order.body);
      assert.equal(order.json().status, 'placed');
      assert.equal(await petStatusOf(app, staff, petId), 'pending');
      const events = await app.inject({ url: '/v1/events?limit=100', headers: bearer(staff) });
      const types = (events.json() as { type: string; data: { object: { id: unknown } } }[])
        .filter((event) => event.data.object.id === application.id)
        .map((event) => event.type);
      assert.deepEqual(types, ['application.submitted', 'application.in_review', 'application.approved']);

      out = await cli(['applications', 'show', application.id], environment.env);
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, /applicant apl_\w+: Ada Lovelace <ada@example\.org>/);
      assert.match(out.stdout, /household: Two adults/);
      assert.match(out.stdout, new RegExp(`order ${approved.orderId}`));
      assert.match(out.stdout, /in_review\s+cli/);
      assert.match(out.stdout, /approved\s+cli/);
      out = await cli(['applications', 'show', application.id, '--json'], environment.env);
      const shown = JSON.parse(out.stdout) as Shown;
      assert.deepEqual(
        shown.history.map((step) => [step.status, step.by]),
        [
          ['submitted', shown.history[0]!.by],
          ['in_review', 'cli'],
          ['approved', 'cli'],
        ],
      );
    });

    test('reject needs a reason, keeps the note; unknown and final applications exit 1', async () => {
      const petId = await createPet(app, staff);
      const application = await submitted(app, partner, petId, 'ada@example.org');
      let out = await cli(['applications', 'reject', application.id], environment.env);
      assert.equal(out.code, 2);
      assert.match(out.stderr, /reject needs --reason, one of unsuitable, incomplete, duplicate, other/);
      out = await cli(
        ['applications', 'reject', application.id, '--reason', 'unsuitable', '--note', 'no garden'],
        environment.env,
      );
      assert.equal(out.code, 0, out.stderr);
      const rejected = JSON.parse(out.stdout) as Shown;
      assert.equal(rejected.status, 'rejected');
      assert.deepEqual(
        [rejected.history.at(-1)!.reason, rejected.history.at(-1)!.note],
        ['unsuitable', 'no garden'],
      );
      assert.equal((await getApplication(app, partner, application.id)).status, 'rejected');

      out = await cli(['applications', 'review', application.id], environment.env);
      assert.equal(out.code, 1);
      assert.match(out.stderr, /is rejected; it cannot be taken into review/);
      const unknown = 'app_00000000000000000000';
      out = await cli(['applications', 'show', unknown], environment.env);
      assert.equal(out.code, 1);
      assert.match(out.stderr, new RegExp(`no application ${unknown}`));
      out = await cli(['applications', 'approve', unknown], environment.env);
      assert.equal(out.code, 1);
      assert.match(out.stderr, new RegExp(`no application ${unknown}`));
      out = await cli(['applications', 'approve', 'abc'], environment.env);
      assert.equal(out.code, 2);
      assert.equal(out.stdout, '');
    });
  });
}
