/**
 * Where the cursors' secret comes from: CURSOR_SECRET, validated like every setting, or one made once and
 * kept in the database, so that every instance on one database reads the cursors any of them issued.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../src/app.js';
import { ConfigError } from '../src/config-parsers.js';
import { loadConfig } from '../src/config.js';
import { secretStore } from '../src/db/secrets.js';
import { MemoryCounterStore } from '../src/ratelimit/memory.js';
import { backends, bearer, createTestContext, defaultTestConfig, type TestContext } from './helpers.js';
import { assertV1Error } from './support/assertions.js';

test('CURSOR_SECRET: 32..1024 characters, refused otherwise without echoing it', () => {
  assert.equal(loadConfig({}).cursorSecret, undefined);
  assert.equal(loadConfig({ CURSOR_SECRET: 'x'.repeat(32) }).cursorSecret, 'x'.repeat(32));
  for (const bad of ['too-short-secret', ' '.repeat(40), `${'y'.repeat(40)} `, 'z'.repeat(1025)]) {
    assert.throws(
      () => loadConfig({ CURSOR_SECRET: bad }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.variable === 'CURSOR_SECRET' &&
        (bad.trim() === '' || !error.message.includes(bad.trim())),
    );
  }
});

for (const backend of await backends()) {
  describe(`the cursors' secret [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;

    before(async () => {
      ctx = await createTestContext(backend);
      ({ key } = await ctx.createKey({ name: 'cursor-secret' }));
      for (let i = 0; i < 3; i++) {
        await ctx.app.inject({
          method: 'POST',
          url: '/v1/pets',
          headers: bearer(key),
          payload: { name: `Paged ${i}`, categoryId: 1 },
        });
      }
    });
    after(() => ctx.close());

    async function otherApp(cursorSecret?: string) {
      const app = await buildApp({
        config: { ...defaultTestConfig, cursorSecret },
        database: ctx.database,
        counterStore: new MemoryCounterStore(),
      });
      await app.ready();
      return app;
    }

    const nextOf = async (app: typeof ctx.app) => {
      const res = await app.inject({ url: '/v1/pets?limit=1', headers: bearer(key) });
      return /<([^>]+)>; rel="next"/.exec(String(res.headers.link))![1]!;
    };

    test('made once and kept: every instance on the database reads the cursors of the others', async () => {
      const first = await ctx.database.repository(secretStore).get('cursor');
      assert.equal(first.length, 32);
      assert.deepEqual(await ctx.database.repository(secretStore).get('cursor'), first, 'the same again');
      const second = await otherApp();
      try {
        const next = await nextOf(ctx.app);
        assert.equal(await nextOf(second), next, 'the same cursor issued by both');
        const res = await second.inject({ url: next, headers: bearer(key) });
        assert.equal(res.statusCode, 200, res.body);
      } finally {
        await second.close();
      }
    });

    test('CURSOR_SECRET set: its cursors only, on every instance that has it', async () => {
      const secret = 'c'.repeat(48);
      const configured = await otherApp(secret);
      const alsoConfigured = await otherApp(secret);
      try {
        const fromDatabaseSecret = await nextOf(ctx.app);
        assertV1Error(
          await configured.inject({ url: fromDatabaseSecret, headers: bearer(key) }),
          400,
          'invalid_cursor',
          "the database secret's cursor",
        );
        const next = await nextOf(configured);
        assert.notEqual(next, fromDatabaseSecret);
        assert.equal((await alsoConfigured.inject({ url: next, headers: bearer(key) })).statusCode, 200);
        assertV1Error(
          await ctx.app.inject({ url: next, headers: bearer(key) }),
          400,
          'invalid_cursor',
          'CURSOR_SECRET cursor without it',
        );
      } finally {
        await configured.close();
        await alsoConfigured.close();
      }
    });
  });
}
