/**
 * The webhook queue's concurrency guarantees on every backend: two dispatchers on one database (as two
 * instances would be) deliver every event, each exactly once in the normal case (no row claimed twice).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PostgresDatabase } from '../../src/db/postgres.js';
import { SqliteDatabase } from '../../src/db/sqlite.js';
import type { Database } from '../../src/db/database.js';
import { migrationsFor } from '../../src/db/migrations.js';
import { mintKey } from '../../src/modules/accounts/mint.js';
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
      const created = await pair.a.repository(webhookRepository).createEndpoint(
        account.id,
        {
          url,
          events: ['*'],
          secret: `whsec_${Buffer.alloc(24, 7).toString('base64')}`,
          ordersManage: false,
          grantedScopes: ['events:read'],
        },
        T0,
        16,
      );
      assert.equal(created.kind, 'created');
      // What an endpoint receives is decided by its account's live keys.
      await mintKey(pair.a.repository(accountRepository), account.id, T0, null, ['events:read']);
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

  test('endpoints: at most maxEndpoints per account and each URL once, whoever races', async () => {
    const database = await target.fresh();
    const repo = database.repository(webhookRepository);
    const accounts = database.repository(accountRepository);
    const a = await accounts.upsertAccount({ name: 'bounded' }, T0);
    const b = await accounts.upsertAccount({ name: 'other' }, T0);
    const endpoint = (n: number | string) => ({
      url: `https://receiver.example/${n}`,
      events: ['*'],
      secret: `whsec_${Buffer.alloc(24, 7).toString('base64')}`,
      ordersManage: false,
      grantedScopes: [],
    });
    const results = await Promise.all(
      [1, 2, 3, 4, 5].map((n) => repo.createEndpoint(a.id, endpoint(n), T0, 3)),
    );
    assert.deepEqual(results.map((r) => r.kind).sort(), ['created', 'created', 'created', 'limit', 'limit']);
    const same = await Promise.all([1, 2, 3].map(() => repo.createEndpoint(b.id, endpoint('x'), T0, 3)));
    assert.deepEqual(same.map((r) => r.kind).sort(), ['created', 'exists', 'exists']);
    const second = await repo.createEndpoint(b.id, endpoint('y'), T0, 3);
    assert.ok(second.kind === 'created');
    assert.equal(
      await repo.updateEndpoint(b.id, second.endpoint.id, { url: 'https://receiver.example/x' }, T0),
      'exists',
    );
    assert.equal((await repo.createEndpoint(a.id, endpoint('x'), T0, 4)).kind, 'created', 'per account');
  });

  test('liveScopes: what the active keys may use together (revoked and expired keys count for nothing)', async () => {
    const database = await target.fresh();
    const repo = database.repository(webhookRepository);
    const accounts = database.repository(accountRepository);
    const a = await accounts.upsertAccount({ name: 'keys' }, T0);
    assert.deepEqual([...(await repo.liveScopes(a.id, T0))], []);
    await mintKey(accounts, a.id, T0, null, ['orders:manage']);
    const revoked = await mintKey(accounts, a.id, T0, null, ['pets:write']);
    await mintKey(accounts, a.id, T0, T0 + 1000, ['events:read']);
    await accounts.revokeKey(revoked.id, T0);
    assert.deepEqual([...(await repo.liveScopes(a.id, T0))].sort(), [
      'events:read',
      'orders:manage',
      'orders:read',
      'orders:write',
    ]);
    assert.deepEqual([...(await repo.liveScopes(a.id, T0 + 1000))].sort(), [
      'orders:manage',
      'orders:read',
      'orders:write',
    ]);
  });

  test('migration 013 keeps the oldest of duplicate URLs, disables the others, and makes lastError a category', async () => {
    const { a: database, close } = await target.createPair();
    try {
      await database.migrate();
      // Back to the schema before 013, with data an earlier release could hold.
      await sql(database, [
        'DROP INDEX webhook_endpoints_account_url',
        'ALTER TABLE webhook_endpoints DROP COLUMN granted_scopes',
      ]);
      const account = await database.repository(accountRepository).upsertAccount({ name: 'legacy' }, T0);
      const insert = (url: string) =>
        `INSERT INTO webhook_endpoints (account_id, url, events, secret, created_at, updated_at)
         VALUES (${account.id}, '${url}', '*', 'whsec_x', ${T0}, ${T0})`;
      await sql(database, [
        insert('https://a.example/'),
        insert('https://a.example/'),
        insert('https://b.example/'),
      ]);
      const [first, second] =
        database instanceof SqliteDatabase
          ? database.db.prepare<[], { id: number }>('SELECT id FROM webhook_endpoints ORDER BY id').all()
          : await (database as PostgresDatabase).query<{ id: number }>({
              text: 'SELECT id FROM webhook_endpoints ORDER BY id',
            });
      const delivery = (id: number, event: string, error: string) =>
        `INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, status, last_error, created_at)
         VALUES (${first!.id}, '${event}', 'pet.created', 'failed', '${error}', ${T0 + id})`;
      await sql(database, [
        delivery(1, 'evt_1', 'could not resolve x.internal: getaddrinfo ENOTFOUND x.internal'),
        delivery(2, 'evt_2', 'refused: x resolves to 10.1.2.3 (private), not a public address'),
        delivery(3, 'evt_3', 'connect ECONNREFUSED 10.0.0.7:443'),
        delivery(4, 'evt_4', 'the receiver answered 503'),
        delivery(5, 'evt_5', 'no answer within 15000 ms'),
        delivery(6, 'evt_6', 'endpoint disabled'),
      ]);
      // Later migrations are applied already: run 013 itself again, as the upgrade did.
      const backend = database instanceof SqliteDatabase ? 'sqlite' : 'postgres';
      await sql(database, [migrationsFor(backend).find((m) => m.name === 'webhook_bounds')!.sql]);
      const repo = database.repository(webhookRepository);
      const after = await repo.listEndpoints({ limit: 10 });
      assert.deepEqual(
        after.map((e) => [e.url, e.enabled, e.grantedScopes]),
        [
          ['https://a.example/', true, null],
          [`https://a.example/#duplicate-${second!.id}`, false, null],
          ['https://b.example/', true, null],
        ],
      );
      assert.match(after[1]!.disabledReason!, /same URL/);
      assert.deepEqual(
        (await repo.listDeliveries({ endpointId: first!.id, limit: 10 })).map((d) => d.lastError),
        ['dns_failed', 'address_not_allowed', 'connect_failed', 'http_503', 'timeout', 'endpoint_disabled'],
      );
    } finally {
      await close();
    }
  });
});

async function sql(database: Database, statements: string[]): Promise<void> {
  for (const text of statements) {
    if (database instanceof SqliteDatabase) database.db.exec(text);
    else await (database as PostgresDatabase).execute({ text });
  }
}
