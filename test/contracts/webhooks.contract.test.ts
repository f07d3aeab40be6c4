/**
 * The webhook queue's concurrency guarantees on every backend: two dispatchers on one database (as two
 * instances would be) deliver every event, each exactly once in the normal case (no row claimed twice).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { accountRepository } from '../../src/modules/accounts/repository.js';
import { WebhookDispatcher } from '../../src/modules/webhooks/dispatcher.js';
import { webhookRepository } from '../../src/modules/webhooks/repository.js';
import { contractSuite, T0 } from '../support/contract.js';
import { insertEvent, Receiver } from '../support/webhooks.js';

contractSuite('webhooks', (target) => {
  const receiver = new Receiver();
  let url: string;
  before(async () => {
    url = await receiver.start();
  });
  after(() => receiver.close());

  test('two dispatchers on one database deliver each event exactly once', async () => {
    const pair = await target.createPair();
    try {
      await pair.a.migrate();
      const account = await pair.a.repository(accountRepository).upsertAccount({ name: 'hooks' }, T0);
      await pair.a.repository(webhookRepository).createEndpoint(
        account.id,
        {
          url,
          events: ['*'],
          secret: `whsec_${Buffer.alloc(24, 7).toString('base64')}`,
          ordersManage: false,
        },
        T0,
      );
      const ids = new Set<string>();
      for (let i = 0; i < 40; i++) ids.add((await insertEvent(pair.a, { type: 'pet.created' })).id);
      const start = receiver.requests.length;
      const make = (database: typeof pair.a) =>
        new WebhookDispatcher({
          database,
          allowHosts: ['127.0.0.1'],
          pollMs: 10,
          concurrency: 8,
          perEndpoint: 8,
        });
      const dispatchers = [make(pair.a), make(pair.b)];
      // Both run passes side by side until everything is delivered.
      for (let round = 0; receiver.requests.length - start < ids.size && round < 50; round++) {
        await Promise.all(dispatchers.map((d) => d.runOnce()));
      }
      const got = receiver.requests.slice(start).map((r) => r.headers['webhook-id']!);
      assert.equal(got.length, ids.size, 'no duplicate, none missing');
      assert.deepEqual(new Set(got), ids);
      assert.deepEqual(await pair.b.repository(webhookRepository).stats(), {
        pending: 0,
        oldestCreatedAt: null,
      });
      await Promise.all(dispatchers.map((d) => d.stop()));
    } finally {
      await pair.close();
    }
  });
});
