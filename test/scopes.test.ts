/**
 * Scopes (DESIGN 4.1) through the real HTTP layer on every backend: what a key may do is what it was given
 * plus the implications (`write` ⇒ `read`, `orders:manage` ⇒ orders read and write); a missing scope is a
 * 403 that names it. The per-route matrix lives in the security suite.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { effectiveScopes, allScopes } from '../src/modules/accounts/scopes.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';

describe('scope implications', () => {
  test('write implies read of the same resource; orders:manage implies orders read and write', () => {
    assert.deepEqual([...effectiveScopes(['pets:write'])].sort(), ['pets:read', 'pets:write']);
    assert.deepEqual([...effectiveScopes(['orders:manage'])].sort(), [
      'orders:manage',
      'orders:read',
      'orders:write',
    ]);
    assert.deepEqual([...effectiveScopes(['pets:read'])], ['pets:read']);
    assert.deepEqual([...effectiveScopes(null)].sort(), [...allScopes()].sort(), 'null: every scope');
    assert.equal(effectiveScopes([]).size, 0);
  });
});

for (const backend of await backends()) {
  describe(`scopes [${backend.name}]`, () => {
    let ctx: TestContext;
    before(async () => {
      ctx = await createTestContext(backend);
    });
    after(() => ctx.close());

    test('a key without the scope gets 403 insufficient_scope naming it, counted like any request', async () => {
      const { key } = await ctx.createKey({ scopes: ['pets:read'] });
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: bearer(key),
        payload: { name: 'Scoped', categoryId: 1 },
      });
      assert.equal(res.statusCode, 403, res.body);
      const body = res.json();
      assert.deepEqual(body, {
        code: 'insufficient_scope',
        message: body.message,
        status: 403,
      });
      assert.match(body.message, /pets:write/);
      assert.equal(
        res.headers['www-authenticate'],
        'Bearer realm="pet-adoption", error="insufficient_scope", scope="pets:write"',
      );
      assert.match(String(res.headers['x-ratelimit-remaining']), /^\d+$/);
      assert.equal((await ctx.app.inject({ url: '/v1/pets', headers: bearer(key) })).statusCode, 200);
    });

    test('pets:write alone may read pets too; a key with no pets scope may not', async () => {
      const { key: writer } = await ctx.createKey({ scopes: ['pets:write'] });
      assert.equal((await ctx.app.inject({ url: '/v1/pets', headers: bearer(writer) })).statusCode, 200);
      const created = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: bearer(writer),
        payload: { name: 'Written', categoryId: 1 },
      });
      assert.equal(created.statusCode, 201, created.body);
      const { key: eventsOnly } = await ctx.createKey({ scopes: ['events:read'] });
      const denied = await ctx.app.inject({ url: '/v1/categories', headers: bearer(eventsOnly) });
      assert.equal(denied.statusCode, 403);
      assert.match(String(denied.headers['www-authenticate']), /scope="pets:read"/);
    });

    test('a key created without scopes, like every key from before scopes, has every scope', async () => {
      const { key, id } = await ctx.createKey();
      assert.equal((await ctx.app.inject({ url: '/v1/pets', headers: bearer(key) })).statusCode, 200);
      const listed = (await ctx.accounts.listKeys()).find((k) => k.id === id);
      assert.equal(listed?.scopes, null);
      const { id: narrowId } = await ctx.createKey({ scopes: ['orders:write', 'pets:read'] });
      const narrow = (await ctx.accounts.listKeys()).find((k) => k.id === narrowId);
      assert.deepEqual(narrow?.scopes, ['orders:write', 'pets:read']);
    });
  });
}
