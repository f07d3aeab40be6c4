/**
 * `orders list` and `orders cancel` through the built CLI (`node dist/cli.js`), on every backend: orders are
 * placed through the HTTP layer on the same database, then seen and cancelled from the shell.
 * `npm test` builds first; run `npm run build` before running this file alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { Database } from '../src/db/database.js';
import { openDatabase } from '../src/db/index.js';
import { mintKey } from '../src/modules/accounts/mint.js';
import { accountRepository } from '../src/modules/accounts/repository.js';
import type { FastifyInstance } from 'fastify';
import { MemoryCounterStore } from '../src/ratelimit/memory.js';
import { backends, bearer, defaultTestConfig } from './helpers.js';
import { act, newOrder, petStatus } from './support/orders.js';
import { cli, environmentFor, type Environment } from '../support/processes.js';

for (const backend of await backends()) {
  describe(`orders CLI [${backend.name}]`, () => {
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

    test('orders list shows every order with its account; filters by --account and --status; --json', async () => {
      const a = await newOrder(app, partner);
      const b = await newOrder(app, staff);
      await act(app, staff, b.id, 'approve');
      let out = await cli(['orders', 'list'], environment.env);
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, new RegExp(`^\\s*${a.id}\\s+${a.petId}\\s+placed\\s+partner\\s`, 'm'));
      assert.match(out.stdout, new RegExp(`^\\s*${b.id}\\s+${b.petId}\\s+approved\\s+staff\\s`, 'm'));
      out = await cli(['orders', 'list', '--account', 'partner', '--json'], environment.env);
      assert.equal(out.code, 0, out.stderr);
      const listed = JSON.parse(out.stdout) as { id: number; account: string; status: string }[];
      assert.deepEqual(
        listed.map((o) => [o.id, o.account, o.status]),
        [[a.id, 'partner', 'placed']],
      );
      out = await cli(['orders', 'list', '--status', 'approved', '--json'], environment.env);
      assert.deepEqual(
        (JSON.parse(out.stdout) as { id: number }[]).map((o) => o.id),
        [b.id],
      );
      out = await cli(['orders', 'list', '--status', 'lost'], environment.env);
      assert.equal(out.code, 2);
      assert.match(out.stderr, /--status must be one of/);
    });

    test('orders cancel moves the order and its pet back; unknown and final orders exit 1', async () => {
      const order = await newOrder(app, partner);
      await act(app, staff, order.id, 'approve');
      let out = await cli(['orders', 'cancel', String(order.id)], environment.env);
      assert.equal(out.code, 0, out.stderr);
      const printed = JSON.parse(out.stdout);
      assert.equal(printed.id, order.id);
      assert.equal(printed.status, 'cancelled');
      assert.equal(printed.account, 'partner');
      assert.equal(await petStatus(app, staff, order.petId), 'available');
      const seen = await app.inject({ url: `/v1/store/orders/${order.id}`, headers: bearer(partner) });
      assert.equal(seen.json().status, 'cancelled');
      assert.equal(seen.headers.etag, '"3"');

      out = await cli(['orders', 'cancel', String(order.id)], environment.env);
      assert.equal(out.code, 1);
      assert.match(out.stderr, new RegExp(`order ${order.id} is cancelled; it cannot be cancelled`));
      out = await cli(['orders', 'cancel', '987654321'], environment.env);
      assert.equal(out.code, 1);
      assert.match(out.stderr, /no order 987654321/);
      out = await cli(['orders', 'cancel', 'abc'], environment.env);
      assert.equal(out.code, 2);
      assert.equal(out.stdout, '');
    });
  });
}
