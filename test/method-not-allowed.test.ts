/**
 * 405 answers are derived from the router after every route exists: a module registered last, a route
 * added to the app before it is ready, or one added by a plugin loaded last still gets them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { MODULES } from '../src/modules/index.js';
import type { ApiModule } from '../src/modules/module.js';
import { defaultTestConfig, sqliteMemory } from './helpers.js';
import { assertV1Error } from './support/assertions.js';

/** A module standing in for the next resource: registered after every real one. */
const widgets: ApiModule = {
  name: 'widgets',
  routes: async (app) => {
    app.get('/widgets', { config: { access: 'public' } }, async () => []);
  },
};

async function withApp(modules: ApiModule[], use: (app: FastifyInstance) => Promise<void>): Promise<void> {
  const database = await sqliteMemory.createDatabase();
  await database.migrate();
  const counterStore = await sqliteMemory.createCounterStore();
  const app = await buildApp({ config: defaultTestConfig, database, counterStore, modules });
  try {
    await use(app);
  } finally {
    await app.close().catch(() => {});
    await counterStore.close();
    await database.close();
  }
}

describe('405 derived after every route exists', () => {
  test('a module registered after the others answers other methods with 405 and Allow', async () => {
    await withApp([...MODULES, widgets], async (app) => {
      await app.ready();
      assert.equal((await app.inject({ url: '/v1/widgets' })).statusCode, 200);
      const res = await app.inject({ method: 'DELETE', url: '/v1/widgets' });
      assertV1Error(res, 405, 'method_not_allowed', 'DELETE /v1/widgets');
      assert.equal(res.headers.allow, 'GET, HEAD');
      // The existing modules keep theirs.
      assert.equal((await app.inject({ method: 'PUT', url: '/v1/pets' })).headers.allow, 'GET, HEAD, POST');
    });
  });

  test('a route added to the app before it is ready gets its 405s too', async () => {
    await withApp(MODULES, async (app) => {
      app.get('/v1/late', { config: { access: 'public' } }, async () => ({ ok: true }));
      await app.ready();
      const res = await app.inject({ method: 'POST', url: '/v1/late' });
      assertV1Error(res, 405, 'method_not_allowed', 'POST /v1/late');
      assert.equal(res.headers.allow, 'GET, HEAD');
    });
  });

  test('a route added by a plugin registered after the modules gets its 405s too', async () => {
    await withApp(MODULES, async (app) => {
      void app.register(async (late) => {
        late.put('/v1/later', { config: { access: 'public' } }, async () => ({ ok: true }));
      });
      await app.ready();
      const res = await app.inject({ method: 'GET', url: '/v1/later?x=1' });
      assertV1Error(res, 405, 'method_not_allowed', 'GET /v1/later');
      assert.equal(res.headers.allow, 'PUT');
      assertV1Error(await app.inject({ url: '/v1/nowhere' }), 404, 'not_found', 'GET /v1/nowhere');
    });
  });
});
