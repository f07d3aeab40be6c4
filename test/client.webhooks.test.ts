/**
 * `client.webhooks.verify` against real deliveries: the service's dispatcher signs and POSTs events to a
 * receiver on 127.0.0.1; the client accepts what arrived and rejects any tampering, including across a
 * secret rotation (two signatures).
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { PetAdoptionClient, verifyWebhook, WebhookVerificationError } from '@pet-adoption/client';
import { WebhookDispatcher } from '../src/modules/webhooks/dispatcher.js';
import { backends, createTestContext, TestClock, type TestContext } from './helpers.js';
import { Receiver } from './support/webhooks.js';

for (const backend of await backends()) {
  describe(`client webhooks.verify on real deliveries [${backend.name}]`, () => {
    let ctx: TestContext;
    let dispatcher: WebhookDispatcher;
    let receiver: Receiver;
    let client: PetAdoptionClient;
    let url: string;

    before(async () => {
      // Signatures carry the real time (receivers refuse timestamps five minutes off): a clock at now.
      ctx = await createTestContext(backend, {
        clock: new TestClock(Date.now()),
        config: { webhookAllowHosts: ['127.0.0.1'] },
      });
      await ctx.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = ctx.app.server.address() as AddressInfo;
      dispatcher = new WebhookDispatcher({ database: ctx.database, allowHosts: ['127.0.0.1'], pollMs: 20 });
      dispatcher.start();
      receiver = new Receiver();
      url = await receiver.start();
      client = new PetAdoptionClient({
        apiKey: (await ctx.createKey()).key,
        baseUrl: `http://127.0.0.1:${port}`,
      });
    });
    after(async () => {
      await dispatcher.stop();
      await receiver.close();
      await ctx.close();
    });

    test('a real delivery verifies; a tampered body, id, timestamp or secret does not', async () => {
      const endpoint = await client.webhookEndpoints.create({ url, events: ['pet.created'] });
      const pet = await client.pets.create({ name: 'Signed', categoryId: 1 });
      const [delivery] = await receiver.waitFor(1);
      const event = client.webhooks.verify(delivery!.body, delivery!.headers, endpoint.secret);
      assert.equal(event.type, 'pet.created');
      assert.equal(event.data.object.id, pet.id);
      assert.equal(event.id, delivery!.headers['webhook-id']);
      // A fetch Headers and bytes work too (a receiver on fetch's Request, say).
      const asFetch = new Headers(delivery!.headers);
      assert.equal(
        verifyWebhook(new TextEncoder().encode(delivery!.body), asFetch, endpoint.secret).id,
        event.id,
      );

      const tampered: [string, () => unknown][] = [
        [
          'body',
          () =>
            client.webhooks.verify(
              delivery!.body.replace('Signed', 'Forged'),
              delivery!.headers,
              endpoint.secret,
            ),
        ],
        [
          'id',
          () =>
            client.webhooks.verify(
              delivery!.body,
              { ...delivery!.headers, 'webhook-id': 'evt_other' },
              endpoint.secret,
            ),
        ],
        [
          'timestamp',
          () =>
            client.webhooks.verify(
              delivery!.body,
              {
                ...delivery!.headers,
                'webhook-timestamp': String(Number(delivery!.headers['webhook-timestamp']) - 1),
              },
              endpoint.secret,
            ),
        ],
        [
          'secret',
          () => client.webhooks.verify(delivery!.body, delivery!.headers, 'whsec_' + btoa('x'.repeat(24))),
        ],
        [
          'signature',
          () =>
            client.webhooks.verify(
              delivery!.body,
              { ...delivery!.headers, 'webhook-signature': 'v1,AAAA' },
              endpoint.secret,
            ),
        ],
      ];
      for (const [what, verify] of tampered)
        assert.throws(verify, WebhookVerificationError, `a tampered ${what} is rejected`);
    });

    test('during a rotation either secret verifies the doubly signed delivery', async () => {
      // One URL once per account: the first test's endpoint has `url`.
      const endpoint = await client.webhookEndpoints.create({
        url: `${url}?rotation`,
        events: ['pet.updated'],
      });
      const rotated = await client.webhookEndpoints.rotateSecret(endpoint.id);
      const pet = await client.pets.create({ name: 'Rotated', categoryId: 1 });
      await client.pets.update(pet.id, { name: 'Rotated twice' });
      const all = await receiver.waitUntil((requests) =>
        requests.some((r) => r.body.includes('Rotated twice')),
      );
      const hit = all.find((r) => r.body.includes('Rotated twice'))!;
      assert.equal(hit.headers['webhook-signature']!.split(' ').length, 2);
      for (const secret of [endpoint.secret, rotated.secret, [rotated.secret, endpoint.secret]])
        assert.equal(client.webhooks.verify(hit.body, hit.headers, secret).type, 'pet.updated');
    });
  });
}
