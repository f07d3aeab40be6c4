/**
 * Webhooks carry application events as the feed shows them: to the application's account while a live key
 * and the endpoint's creating key hold applications:read, to every account's endpoint with
 * applications:manage; and registering for them needs applications:read.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { effectiveScopes } from '../src/modules/scopes.js';
import { endpointMay } from '../src/modules/webhooks/decisions.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { assertV1Error } from './support/assertions.js';

test('endpointMay: application.* and applicant.* follow the applications scopes', () => {
  const own = { type: 'application.approved', accountId: 7 };
  const theirs = { type: 'applicant.erased', accountId: 9 };
  const endpoint = (grantedScopes: string[] | null) => ({ accountId: 7, ordersManage: false, grantedScopes });
  const live = (...scopes: string[]) => effectiveScopes(scopes);
  assert.equal(endpointMay(endpoint(null), own, live('applications:read')), true);
  assert.equal(endpointMay(endpoint(null), own, live('orders:manage', 'events:read')), false);
  assert.equal(
    endpointMay(endpoint(['events:read']), own, live('applications:read')),
    false,
    'creating key lacked it',
  );
  assert.equal(endpointMay(endpoint(null), theirs, live('applications:write')), false);
  assert.equal(endpointMay(endpoint(null), theirs, live('applications:manage')), true);
  assert.equal(endpointMay(endpoint(['applications:read']), theirs, live('applications:manage')), false);
});

for (const backend of await backends()) {
  describe(`applications: webhook endpoints [${backend.name}]`, () => {
    let ctx: TestContext;

    before(async () => {
      ctx = await createTestContext(backend, { config: { webhookAllowHosts: ['127.0.0.1'] } });
    });
    after(() => ctx.close());

    test('pointing an endpoint for application events elsewhere needs applications:read', async () => {
      const { key: narrow } = await ctx.createKey({
        name: 'hooks',
        scopes: ['webhooks:write', 'events:read'],
      });
      const { key: reader } = await ctx.createKey({
        name: 'hooks',
        scopes: ['webhooks:write', 'applications:read'],
      });
      // Registering is allowed (what it receives is decided per event); handing its events elsewhere is not.
      const created = await ctx.app.inject({
        method: 'POST',
        url: '/v1/webhook-endpoints',
        headers: bearer(reader),
        payload: { url: 'http://127.0.0.1:9/a', events: ['application.approved', 'applicant.erased'] },
      });
      assert.equal(created.statusCode, 201, created.body);
      const move = (key: string, url: string) =>
        ctx.app.inject({
          method: 'PATCH',
          url: `/v1/webhook-endpoints/${created.json().id}`,
          headers: bearer(key),
          payload: { url },
        });
      const refused = await move(narrow, 'http://127.0.0.1:9/b');
      assertV1Error(refused, 403, 'insufficient_scope', 'no applications:read');
      assert.match(refused.json().message, /applications:read/);
      assert.equal((await move(reader, 'http://127.0.0.1:9/c')).statusCode, 200);
    });
  });
}
