/**
 * `webhooks list` and `webhooks deliveries` through the built CLI (`node dist/cli.js`), on every backend:
 * endpoints are created and a change delivered through the HTTP layer and the dispatcher on the same
 * database, then seen from the shell. Secrets never appear.
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
import { WebhookDispatcher } from '../src/modules/webhooks/dispatcher.js';
import { MemoryCounterStore } from '../src/ratelimit/memory.js';
import { backends, bearer, defaultTestConfig } from './helpers.js';
import { cli, environmentFor, type Environment } from '../support/processes.js';
import { Receiver } from './support/webhooks.js';

const ALLOW = ['127.0.0.1'];

for (const backend of await backends()) {
  describe(`webhooks CLI [${backend.name}]`, () => {
    let environment: Environment;
    let database: Database;
    let app: FastifyInstance;
    let receiver: Receiver;
    let url: string;
    const accounts = new Map<string, { id: number; key: string }>();

    const createEndpoint = async (account: string, events: string[], at = url) => {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/webhook-endpoints',
        headers: bearer(accounts.get(account)!.key),
        payload: { url: at, events },
      });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ id: number; secret: string }>();
    };

    before(async () => {
      environment = await environmentFor(backend);
      database = await openDatabase(loadConfig(environment.env));
      await database.migrate();
      app = await buildApp({
        config: { ...defaultTestConfig, webhookAllowHosts: ALLOW },
        database,
        counterStore: new MemoryCounterStore(),
      });
      receiver = new Receiver();
      url = await receiver.start();
      const repo = database.repository(accountRepository);
      const now = Date.now();
      for (const name of ['staff', 'partner']) {
        const account = await repo.upsertAccount({ name, plan: 'business' }, now);
        accounts.set(name, { id: account.id, key: (await mintKey(repo, account.id, now, null, null)).key });
      }
    });
    after(async () => {
      await app.close();
      await database.close();
      await receiver.close();
      await environment.cleanup();
    });

    test('webhooks list shows every endpoint with its account, never a secret; --account; --json', async () => {
      let out = await cli(['webhooks', 'list'], environment.env);
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, /No webhook endpoints/);

      const staff = await createEndpoint('staff', ['pet.created', 'pet.updated']);
      const partner = await createEndpoint('partner', ['*']);
      out = await cli(['webhooks', 'list'], environment.env);
      assert.equal(out.code, 0, out.stderr);
      const staffId = accounts.get('staff')!.id;
      const partnerId = accounts.get('partner')!.id;
      assert.match(
        out.stdout,
        new RegExp(`^\\s*${staff.id}\\s+${staffId}\\s+yes\\s+pet\\.created,pet\\.updated\\s+${url}$`, 'm'),
      );
      assert.match(
        out.stdout,
        new RegExp(`^\\s*${partner.id}\\s+${partnerId}\\s+yes\\s+\\*\\s+${url}$`, 'm'),
      );
      for (const secret of [staff.secret, partner.secret]) assert.ok(!out.stdout.includes(secret));

      out = await cli(['webhooks', 'list', '--account', 'partner', '--json'], environment.env);
      assert.equal(out.code, 0, out.stderr);
      assert.ok(!out.stdout.includes('whsec_'), 'no secret in the JSON either');
      const listed = JSON.parse(out.stdout) as {
        id: number;
        accountId: number;
        url: string;
        events: string[];
      }[];
      assert.deepEqual(
        listed.map((e) => [e.id, e.accountId, e.url, e.events]),
        [[partner.id, partnerId, url, ['*']]],
      );

      out = await cli(['webhooks', 'list', '--account', 'nobody'], environment.env);
      assert.equal(out.code, 1);
      assert.match(out.stderr, /no account named "nobody"/);
      assert.equal(out.stdout, '');
    });

    test('webhooks deliveries shows an endpoint’s deliveries; unknown or malformed ids fail', async () => {
      // An account has each URL once; the first test's endpoint has `url`.
      const endpoint = await createEndpoint('partner', ['pet.created'], `${url}?deliveries`);
      let out = await cli(['webhooks', 'deliveries', String(endpoint.id)], environment.env);
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, /No deliveries/);

      const pet = await app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: bearer(accounts.get('staff')!.key),
        payload: { name: 'Listed', categoryId: 1 },
      });
      assert.equal(pet.statusCode, 201, pet.body);
      const start = receiver.requests.length;
      const dispatcher = new WebhookDispatcher({ database, allowHosts: ALLOW, pollMs: 1000 });
      await dispatcher.runOnce();
      await dispatcher.stop();
      const eventId = receiver.requests
        .slice(start)
        .map((r) => r.headers['webhook-id'])
        .find((id) => id !== undefined)!;
      assert.ok(eventId, 'the pet.created event was delivered');

      out = await cli(['webhooks', 'deliveries', String(endpoint.id)], environment.env);
      assert.equal(out.code, 0, out.stderr);
      assert.match(
        out.stdout,
        new RegExp(`^\\s*\\d+\\s+succeeded\\s+1\\s+200\\s+-\\s+pet\\.created ${eventId}$`, 'm'),
      );

      out = await cli(['webhooks', 'deliveries', String(endpoint.id), '--json'], environment.env);
      assert.equal(out.code, 0, out.stderr);
      const listed = JSON.parse(out.stdout) as {
        eventId: string;
        eventType: string;
        status: string;
        attempts: number;
        lastStatusCode: number | null;
      }[];
      assert.deepEqual(
        listed.map((d) => [d.eventId, d.eventType, d.status, d.attempts, d.lastStatusCode]),
        [[eventId, 'pet.created', 'succeeded', 1, 200]],
      );

      out = await cli(['webhooks', 'deliveries', '987654321'], environment.env);
      assert.equal(out.code, 1);
      assert.match(out.stderr, /no webhook endpoint 987654321/);
      assert.equal(out.stdout, '');
      out = await cli(['webhooks', 'deliveries', 'abc'], environment.env);
      assert.equal(out.code, 2);
      assert.equal(out.stdout, '');
      out = await cli(['webhooks', 'deliveries'], environment.env);
      assert.equal(out.code, 2);
      assert.match(out.stderr, /exactly one ENDPOINT_ID/);
    });
  });
}
