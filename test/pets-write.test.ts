/**
 * updatePet, deletePet, ETags and conditional requests (DESIGN 4.2), through HTTP on every backend: merge
 * patch validation, If-Match (412, atomic under concurrency), If-None-Match (304), open orders (409) and
 * Idempotency-Key replays.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { PostgresDatabase } from '../src/db/postgres.js';
import { SqliteDatabase } from '../src/db/sqlite.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { assertRateLimitHeaders, assertV1Error } from './support/assertions.js';
import { insertOrderRow } from './support/order-rows.js';
import { cursorsOf } from './support/cursors.js';

const MERGE_PATCH = { 'content-type': 'application/merge-patch+json' };

for (const backend of await backends()) {
  describe(`pets write [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;
    let orderAccountId: number;
    const auth = () => bearer(key);

    before(async () => {
      ctx = await createTestContext(backend);
      ({ key } = await ctx.createKey());
      orderAccountId = (
        await ctx.accounts.upsertAccount({ name: 'orders-owner', plan: 'business' }, ctx.clock.now)
      ).id;
    });
    after(() => ctx.close());

    const request = (options: InjectOptions) =>
      ctx.app.inject({ ...options, headers: { ...auth(), ...(options.headers as Record<string, string>) } });
    const createPet = async (
      name = 'Rex',
    ): Promise<{ id: number; name: string; categoryId: number; status: string }> => {
      const res = await request({ method: 'POST', url: '/v1/pets', payload: { name, categoryId: 1 } });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.headers.etag, '"1"');
      return res.json();
    };
    const patch = (id: number, payload: unknown, headers: Record<string, string> = {}) =>
      request({
        method: 'PATCH',
        url: `/v1/pets/${id}`,
        headers: { ...MERGE_PATCH, ...headers },
        payload: JSON.stringify(payload),
      });
    const del = (id: number, headers: Record<string, string> = {}) =>
      request({ method: 'DELETE', url: `/v1/pets/${id}`, headers });
    const get = (id: number, headers: Record<string, string> = {}) =>
      request({ url: `/v1/pets/${id}`, headers });

    const insertOrder = (petId: number, status: 'placed' | 'approved' | 'delivered' | 'cancelled') =>
      insertOrderRow(ctx.database, { accountId: orderAccountId, petId, status, now: ctx.clock.now });

    test('PATCH changes the given fields, answers 200 with the Pet shape and the next ETag', async () => {
      const pet = await createPet();
      const res = await patch(pet.id, { name: 'Rexy' });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), { ...pet, name: 'Rexy' });
      assert.equal(res.headers.etag, '"2"');
      assertRateLimitHeaders(res, 'updatePet');
      const both = await patch(pet.id, { categoryId: 2, status: 'sold' });
      assert.deepEqual(both.json(), { id: pet.id, name: 'Rexy', categoryId: 2, status: 'sold' });
      assert.equal(both.headers.etag, '"3"');
      const fetched = await get(pet.id);
      assert.deepEqual(fetched.json(), both.json());
      assert.equal(fetched.headers.etag, '"3"');
    });

    test('PATCH accepts application/json too; other media types are 415', async () => {
      const pet = await createPet();
      const json = await request({ method: 'PATCH', url: `/v1/pets/${pet.id}`, payload: { name: 'Json' } });
      assert.equal(json.statusCode, 200, json.body);
      const text = await request({
        method: 'PATCH',
        url: `/v1/pets/${pet.id}`,
        headers: { 'content-type': 'text/plain' },
        payload: '{"name":"x"}',
      });
      assertV1Error(text, 415, 'unsupported_media_type', 'text/plain');
      // merge-patch+json is for routes that declare it only.
      const post = await request({
        method: 'POST',
        url: '/v1/pets',
        headers: MERGE_PATCH,
        payload: JSON.stringify({ name: 'A', categoryId: 1 }),
      });
      assertV1Error(post, 415, 'unsupported_media_type', 'createPet with merge-patch');
    });

    test('PATCH validation: null, id, unknown fields, empty object, bad values, bad JSON → 400 naming the field', async () => {
      const pet = await createPet();
      const cases: [unknown, string][] = [
        [{ name: null }, 'name'],
        [{ categoryId: null }, 'categoryId'],
        [{ status: null }, 'status'],
        [{ id: 5 }, 'id'],
        [{ name: 'A', color: 'red' }, 'color'],
        [{}, 'body'],
        [{ name: '' }, 'name'],
        [{ name: '   ' }, 'name'],
        [{ categoryId: '2' }, 'categoryId'],
        [{ status: 'adopted' }, 'status'],
        [[], 'body'],
      ];
      for (const [payload, field] of cases) {
        const res = await patch(pet.id, payload);
        const label = JSON.stringify(payload);
        assertV1Error(res, 400, 'validation_failed', label);
        assert.ok(
          (res.json().details as { field: string }[]).some((d) => d.field === field),
          `${label} names ${field}: ${res.body}`,
        );
      }
      const unknownCategory = await patch(pet.id, { categoryId: 999_999 });
      assertV1Error(unknownCategory, 400, 'validation_failed', 'unknown category');
      assert.equal(unknownCategory.json().details[0].field, 'categoryId');
      const badJson = await request({
        method: 'PATCH',
        url: `/v1/pets/${pet.id}`,
        headers: MERGE_PATCH,
        payload: '{"name":',
      });
      assertV1Error(badJson, 400, 'invalid_json', 'bad JSON');
      const poisoned = await request({
        method: 'PATCH',
        url: `/v1/pets/${pet.id}`,
        headers: MERGE_PATCH,
        payload: '{"name":"A","__proto__":{"polluted":true}}',
      });
      assert.equal(poisoned.statusCode, 400, poisoned.body);
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      const empty = await request({ method: 'PATCH', url: `/v1/pets/${pet.id}`, headers: MERGE_PATCH });
      assert.equal(empty.statusCode, 400, empty.body);
      // Nothing changed through all of that.
      const after = await get(pet.id);
      assert.deepEqual(after.json(), pet);
      assert.equal(after.headers.etag, '"1"');
    });

    test('unknown or out-of-range pets → 404 pet_not_found on PATCH and DELETE', async () => {
      assertV1Error(await patch(987_654_321, { name: 'A' }), 404, 'pet_not_found', 'PATCH unknown');
      assertV1Error(await del(987_654_321), 404, 'pet_not_found', 'DELETE unknown');
      assertV1Error(await patch(2 ** 62, { name: 'A' }), 404, 'pet_not_found', 'PATCH huge id');
      assertV1Error(await del(0), 400, 'validation_failed', 'DELETE id 0');
    });

    test('If-Match: current, list or * → 200; stale or weak → 412 with the current ETag, nothing changed', async () => {
      const pet = await createPet();
      assert.equal((await patch(pet.id, { name: 'B' }, { 'if-match': '"1"' })).statusCode, 200);
      assert.equal((await patch(pet.id, { name: 'C' }, { 'if-match': '"7", "2"' })).statusCode, 200);
      assert.equal((await patch(pet.id, { name: 'D' }, { 'if-match': '*' })).statusCode, 200);
      for (const stale of ['"1"', 'W/"4"', '"3", "5"', 'garbage']) {
        const res = await patch(pet.id, { name: 'E' }, { 'if-match': stale });
        assertV1Error(res, 412, 'precondition_failed', `If-Match ${stale}`);
        assert.equal(res.headers.etag, '"4"');
      }
      const res = await del(pet.id, { 'if-match': '"3"' });
      assertV1Error(res, 412, 'precondition_failed', 'DELETE stale');
      assert.equal(res.headers.etag, '"4"');
      assert.equal((await get(pet.id)).json().name, 'D');
      assert.equal((await del(pet.id, { 'if-match': '"4"' })).statusCode, 204);
    });

    test('If-Match is atomic with the write: 10 concurrent PATCHes with the same If-Match → one 200, nine 412', async () => {
      const pet = await createPet();
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => patch(pet.id, { name: `Racer ${i}` }, { 'if-match': '"1"' })),
      );
      const codes = answers.map((r) => r.statusCode).sort();
      assert.deepEqual(codes, [200, ...Array<number>(9).fill(412)], codes.join(','));
      const winner = answers.find((r) => r.statusCode === 200)!;
      const now = await get(pet.id);
      assert.deepEqual(now.json(), winner.json());
      assert.equal(now.headers.etag, '"2"');
    });

    test('If-None-Match on getPet and listPets → 304 without a body, with ETag and rate-limit headers', async () => {
      const pet = await createPet();
      const first = await get(pet.id);
      const etag = String(first.headers.etag);
      const cached = await get(pet.id, { 'if-none-match': etag });
      assert.equal(cached.statusCode, 304);
      assert.equal(cached.body, '');
      assert.equal(cached.headers.etag, etag);
      assertRateLimitHeaders(cached, 'getPet 304');
      assert.equal(
        (await get(pet.id, { 'if-none-match': `"99", W/${etag}` })).statusCode,
        304,
        'weak comparison',
      );
      assert.equal((await get(pet.id, { 'if-none-match': '*' })).statusCode, 304);
      assert.equal((await get(pet.id, { 'if-none-match': '"99"' })).statusCode, 200);
      await patch(pet.id, { name: 'Changed' });
      assert.equal((await get(pet.id, { 'if-none-match': etag })).statusCode, 200, 'stale after a change');

      const url = `/v1/pets?limit=5&cursor=${(await cursorsOf(ctx.database)).issueId({ path: '/v1/pets' }, pet.id - 1)}`;
      const page = await request({ url });
      assert.match(String(page.headers.etag), /^W\/"[^"]+"$/);
      const again = await request({ url, headers: { 'if-none-match': String(page.headers.etag) } });
      assert.equal(again.statusCode, 304);
      assert.equal(again.body, '');
      assert.equal(again.headers.etag, page.headers.etag);
      assertRateLimitHeaders(again, 'listPets 304');
      await patch(pet.id, { name: 'Changed again' });
      const changed = await request({ url, headers: { 'if-none-match': String(page.headers.etag) } });
      assert.equal(changed.statusCode, 200);
      assert.notEqual(changed.headers.etag, page.headers.etag);
    });

    test('a 304 counts against the quota', async () => {
      const { key: small } = await ctx.createKey({ plan: 'enterprise', perMinute: 3, perDay: 1000 });
      const pet = await createPet();
      const etag = String((await get(pet.id)).headers.etag);
      const headers = { ...bearer(small), 'if-none-match': etag };
      const remaining: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await ctx.app.inject({ url: `/v1/pets/${pet.id}`, headers });
        assert.equal(res.statusCode, 304);
        remaining.push(String(res.headers['x-ratelimit-remaining']));
      }
      assert.deepEqual(remaining, ['2', '1', '0']);
      assertV1Error(await ctx.app.inject({ url: `/v1/pets/${pet.id}`, headers }), 429, 'rate_limited', '4th');
    });

    test('open order: status change and DELETE → 409 pet_has_open_order; name and category may change', async () => {
      for (const status of ['placed', 'approved'] as const) {
        const pet = await createPet();
        await insertOrder(pet.id, status);
        assertV1Error(
          await patch(pet.id, { status: 'sold' }),
          409,
          'pet_has_open_order',
          `${status}: status`,
        );
        assertV1Error(await del(pet.id), 409, 'pet_has_open_order', `${status}: delete`);
        const renamed = await patch(pet.id, { name: 'Still here', categoryId: 2, status: 'available' });
        assert.equal(renamed.statusCode, 200, `${status}: same status is no change: ${renamed.body}`);
        assert.equal((await get(pet.id)).json().status, 'available');
      }
      for (const status of ['delivered', 'cancelled'] as const) {
        const pet = await createPet();
        await insertOrder(pet.id, status);
        assert.equal((await patch(pet.id, { status: 'pending' })).statusCode, 200, status);
        assert.equal((await del(pet.id)).statusCode, 204, status);
      }
    });

    test('DELETE → 204 without a body; afterwards 404 and gone from lists; past orders keep their petId', async () => {
      const pet = await createPet();
      await insertOrder(pet.id, 'delivered');
      const res = await del(pet.id);
      assert.equal(res.statusCode, 204);
      assert.equal(res.body, '');
      assertRateLimitHeaders(res, 'deletePet');
      assertV1Error(await get(pet.id), 404, 'pet_not_found', 'get after delete');
      assertV1Error(await del(pet.id), 404, 'pet_not_found', 'delete twice');
      assertV1Error(await patch(pet.id, { name: 'A' }), 404, 'pet_not_found', 'patch after delete');
      const cursor = (await cursorsOf(ctx.database)).issueId({ path: '/v1/pets' }, pet.id - 1);
      const page = (await request({ url: `/v1/pets?limit=100&cursor=${cursor}` })).json() as { id: number }[];
      assert.ok(!page.some((p) => p.id === pet.id), 'not listed');
      const count = async (): Promise<number> => {
        const sql = 'SELECT count(*) AS n FROM orders WHERE pet_id = ';
        if (ctx.database instanceof SqliteDatabase)
          return (ctx.database.db.prepare(`${sql}?`).get(pet.id) as { n: number }).n;
        const [row] = await (ctx.database as PostgresDatabase).query<{ n: string }>({
          text: `${sql}$1`,
          values: [pet.id],
        });
        return Number(row!.n);
      };
      assert.equal(await count(), 1);
    });

    test('Idempotency-Key on PATCH: replay, 422 for another body or another pet, nothing done twice', async () => {
      const pet = await createPet();
      const other = await createPet('Other');
      const headers = { 'idempotency-key': `patch-${pet.id}` };
      const first = await patch(pet.id, { name: 'Once' }, headers);
      assert.equal(first.statusCode, 200);
      assert.equal(first.headers.etag, '"2"');
      await patch(pet.id, { status: 'pending' });
      const again = await patch(pet.id, { name: 'Once' }, headers);
      assert.equal(again.statusCode, 200);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.headers.etag, '"2"');
      assert.equal(again.body, first.body);
      assert.equal((await get(pet.id)).headers.etag, '"3"', 'the replay changed nothing');
      assertV1Error(
        await patch(pet.id, { name: 'Twice' }, headers),
        422,
        'idempotency_key_reused',
        'other body',
      );
      assertV1Error(
        await patch(other.id, { name: 'Once' }, headers),
        422,
        'idempotency_key_reused',
        'other pet',
      );
      // A refused write records nothing: a corrected retry with the same key succeeds.
      const refusedKey = { 'idempotency-key': `refused-${pet.id}` };
      assertV1Error(
        await patch(pet.id, { categoryId: 999_999 }, refusedKey),
        400,
        'validation_failed',
        'refused',
      );
      assert.equal((await patch(pet.id, { categoryId: 2 }, refusedKey)).statusCode, 200);
    });

    test('Idempotency-Key on DELETE: a replay answers 204 again; another pet is 422', async () => {
      const pet = await createPet();
      const other = await createPet('Other');
      const headers = { 'idempotency-key': `delete-${pet.id}` };
      assert.equal((await del(pet.id, headers)).statusCode, 204);
      const again = await del(pet.id, headers);
      assert.equal(again.statusCode, 204);
      assert.equal(again.body, '');
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assertV1Error(await del(other.id, headers), 422, 'idempotency_key_reused', 'other pet');
      assert.equal((await get(other.id)).statusCode, 200);
    });

    test('createPet replays carry the ETag too', async () => {
      const headers = { 'idempotency-key': 'create-etag' };
      const payload = { name: 'Etag', categoryId: 1 };
      const first = await request({ method: 'POST', url: '/v1/pets', headers, payload });
      const again = await request({ method: 'POST', url: '/v1/pets', headers, payload });
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(first.headers.etag, '"1"');
      assert.equal(again.headers.etag, '"1"');
    });

    test('pets:read alone cannot PATCH or DELETE', async () => {
      const pet = await createPet();
      const { key: reader } = await ctx.createKey({ scopes: ['pets:read'] });
      const headers = { ...bearer(reader), ...MERGE_PATCH };
      const res = await ctx.app.inject({
        method: 'PATCH',
        url: `/v1/pets/${pet.id}`,
        headers,
        payload: '{"name":"A"}',
      });
      assertV1Error(res, 403, 'insufficient_scope', 'patch');
      assertV1Error(
        await ctx.app.inject({ method: 'DELETE', url: `/v1/pets/${pet.id}`, headers: bearer(reader) }),
        403,
        'insufficient_scope',
        'delete',
      );
    });
  });
}
