/**
 * Nothing stored can break a read, on every backend. Rows an older release could leave behind (written here
 * straight into the tables) never fail a list page: a row that cannot be serialized is left out of it, and
 * migration 022 repairs such rows. The write paths that produced them no longer do: a receiver answering
 * a status outside 100..999 is a failed connection, not a status.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import { sendOnce } from '../src/modules/webhooks/delivery.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { rawQuery, rerunMigration } from './support/raw-sql.js';

const T = Date.UTC(2026, 5, 15, 12, 0, 0);

for (const backend of await backends()) {
  describe(`stored rows [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;

    before(async () => {
      ctx = await createTestContext(backend);
      ({ key } = await ctx.createKey({ name: 'shelter' }));
    });
    after(() => ctx.close());

    const get = (url: string) => ctx.app.inject({ url, headers: bearer(key) });

    test('a delivery row no read accepts is left out of its page, then repaired by the migration', async () => {
      const made = await ctx.app.inject({
        method: 'POST',
        url: '/v1/webhook-endpoints',
        headers: bearer(key),
        payload: { url: 'https://shop.example.com/hooks', events: ['pet.created'] },
      });
      assert.equal(made.statusCode, 201, made.body);
      const endpointId = made.json<{ id: number }>().id;
      const rows: [number | null, string | null][] = [
        [503, 'http_503'], // as this release writes it
        [99, 'http_99'], // a receiver that answered "HTTP/1.1 099"
        [0, 'http_0'], // … "HTTP/1.1 000"
        [null, 'getaddrinfo ENOTFOUND internal.example'], // a message, not a category
      ];
      const ids: number[] = [];
      for (const [i, [code, error]] of rows.entries()) {
        const [row] = await rawQuery<{ id: number }>(
          ctx.database,
          `INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, status, attempts,
             last_status_code, last_error, last_attempt_at, created_at)
           VALUES (?, ?, 'pet.created', 'failed', 1, ?, ?, ?, ?) RETURNING id`,
          [endpointId, `evt_${String(i).padStart(24, '0')}`, code, error, T, T],
        );
        ids.push(Number(row!.id));
      }
      const url = `/v1/webhook-endpoints/${endpointId}/deliveries?limit=100`;
      const page = await get(url);
      assert.equal(page.statusCode, 200, page.body);
      assert.deepEqual(
        page.json<{ id: number }[]>().map((d) => d.id),
        [ids[0]],
        'only the row that fits the read schema is listed',
      );
      const metrics = await ctx.app.inject({ url: '/metrics' });
      assert.match(
        metrics.body,
        /pet_adoption_unreadable_rows_skipped_total\{route="[^"]*deliveries"\} [1-9]/,
      );

      await rerunMigration(ctx.database, '022_rows_fit_read_schemas.sql');
      const repaired = await get(url);
      assert.equal(repaired.statusCode, 200, repaired.body);
      const byId = new Map(
        repaired
          .json<{ id: number; lastStatusCode: number | null; lastError: string }[]>()
          .map((d) => [d.id, d]),
      );
      assert.equal(byId.size, 4, repaired.body);
      assert.deepEqual(
        ids.map((id) => [byId.get(id)!.lastStatusCode, byId.get(id)!.lastError]),
        [
          [503, 'http_503'],
          [null, 'connect_failed'],
          [null, 'connect_failed'],
          [null, 'connect_failed'],
        ],
      );
    });

    test('a listing whose stored profile cannot be read is left out of the page, not the page', async () => {
      const ids: number[] = [];
      for (const name of ['Pixel', 'Pixel']) {
        const pet = await ctx.app.inject({
          method: 'POST',
          url: '/v1/pets',
          headers: bearer(key),
          payload: { name, categoryId: 1 },
        });
        const id = pet.json<{ id: number }>().id;
        ids.push(id);
        const put = await ctx.app.inject({
          method: 'PUT',
          url: `/v1/pets/${id}/profile`,
          headers: bearer(key),
          payload: { breed: 'Beagle', goodWith: { children: true } },
        });
        assert.equal(put.statusCode, 200, put.body);
      }
      // One document cut short (not JSON), one with a value no read accepts (a tristate that is a string).
      await rawQuery(ctx.database, 'UPDATE pet_profiles SET doc = ? WHERE pet_id = ?', [
        '{"breed":"Bea',
        ids[0],
      ]);
      const third = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: bearer(key),
        payload: { name: 'Pixel', categoryId: 1 },
      });
      const thirdId = third.json<{ id: number }>().id;
      await ctx.app.inject({
        method: 'PUT',
        url: `/v1/pets/${thirdId}/profile`,
        headers: bearer(key),
        payload: { breed: 'Beagle' },
      });
      await rawQuery(ctx.database, 'UPDATE pet_profiles SET doc = ? WHERE pet_id = ?', [
        '{"breed":"Beagle","goodWith":{"children":"yes"}}',
        thirdId,
      ]);
      const page = await get('/v1/listings?q=pixel&sort=oldest');
      assert.equal(page.statusCode, 200, page.body);
      assert.deepEqual(
        page.json<{ pet: { id: number } }[]>().map((l) => l.pet.id),
        [ids[1]],
      );
      // The migration empties the profile that is not JSON; its pet is listed again (found by its name).
      await rerunMigration(ctx.database, '022_rows_fit_read_schemas.sql');
      const profile = await get(`/v1/pets/${ids[0]}/profile`);
      assert.equal(profile.statusCode, 200, profile.body);
      assert.deepEqual(Object.keys(profile.json()), ['updatedAt']);
      const again = await get('/v1/listings?q=PIXEL&sort=oldest');
      assert.deepEqual(
        again.json<{ pet: { id: number } }[]>().map((l) => l.pet.id),
        [ids[0], ids[1]],
      );
    });

    test('a profile stored with a lone surrogate reads back, and the migration makes it well-formed', async () => {
      const pet = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: bearer(key),
        payload: { name: 'Rex', categoryId: 1 },
      });
      const petId = pet.json<{ id: number }>().id;
      const put = await ctx.app.inject({
        method: 'PUT',
        url: `/v1/pets/${petId}/profile`,
        headers: bearer(key),
        payload: { breed: 'Collie' },
      });
      assert.equal(put.statusCode, 200, put.body);
      // As an older release stored `{"breed": "Col\ud800lie \\ud800"}`: an escaped lone surrogate, and a
      // backslash followed by the letters "ud800", which is text and stays.
      await rawQuery(ctx.database, 'UPDATE pet_profiles SET doc = ? WHERE pet_id = ?', [
        '{"breed":"Col\\ud800lie \\\\ud800"}',
        petId,
      ]);
      await rerunMigration(ctx.database, '022_rows_fit_read_schemas.sql');
      // A write moves the read version (the page caches are exact): rename the pet and back.
      for (const name of ['Rex2', 'Rex']) {
        await ctx.app.inject({
          method: 'PATCH',
          url: `/v1/pets/${petId}`,
          headers: { ...bearer(key), 'content-type': 'application/merge-patch+json' },
          payload: JSON.stringify({ name }),
        });
      }
      const read = await get(`/v1/pets/${petId}/profile`);
      assert.equal(read.statusCode, 200, read.body);
      assert.equal(read.json<{ breed: string }>().breed, 'Col\ufffdlie \\ud800');
      const listing = await get('/v1/listings?q=rex');
      assert.equal(listing.statusCode, 200, listing.body);
    });

    test('an event stored with a lone surrogate is made well-formed by the migration', async () => {
      const pet = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: bearer(key),
        payload: { name: 'Surrogate', categoryId: 1 },
      });
      const petId = pet.json<{ id: number }>().id;
      const [event] = await rawQuery<{ payload: string }>(
        ctx.database,
        'SELECT payload FROM events ORDER BY seq DESC LIMIT 1',
      );
      assert.match(event!.payload, /"Surrogate"/);
      await rawQuery(ctx.database, 'UPDATE events SET payload = replace(payload, ?, ?)', [
        '"Surrogate"',
        '"Surr\\udc00ogate \\\\ud800"',
      ]);
      await rerunMigration(ctx.database, '022_rows_fit_read_schemas.sql');
      const [after] = await rawQuery<{ payload: string }>(
        ctx.database,
        'SELECT payload FROM events ORDER BY seq DESC LIMIT 1',
      );
      const object = (JSON.parse(after!.payload) as { data: { object: { id: number; name: string } } }).data
        .object;
      assert.equal(object.id, petId);
      assert.equal(object.name, 'Surr\ufffdogate \\ud800');
    });
  });
}

describe('webhook receivers answering a status outside 100..999', () => {
  let server: Server;
  let status = '200';
  before(async () => {
    server = createServer((socket) => {
      socket.once('data', () => socket.end(`HTTP/1.1 ${status} X\r\ncontent-length: 0\r\n\r\n`));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
  });
  after(() => server.close());

  const send = () => {
    const { port } = server.address() as { port: number };
    return sendOnce({
      url: `http://127.0.0.1:${port}/hook`,
      body: '{}',
      headers: {},
      allowHosts: ['127.0.0.1'],
      timeoutMs: 5_000,
    });
  };

  for (const code of ['099', '000', '001']) {
    test(`"${code}" is a failed connection, not a status`, async () => {
      status = code;
      const result = await send();
      assert.equal(result.kind, 'error', JSON.stringify(result));
      assert.equal(result.kind === 'error' && result.category, 'connect_failed');
    });
  }

  test('a status in 100..999 is an answer', async () => {
    status = '600';
    const result = await send();
    assert.deepEqual(result.kind === 'answered' && result.statusCode, 600);
  });
});
