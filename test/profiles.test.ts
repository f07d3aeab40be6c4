/** Pet profiles through the HTTP layer, on every backend: fields, validation, ETag/If-Match, events, idempotency. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { assertV1Error } from './support/assertions.js';

const FULL = {
  description: 'Ruhig und freundlich.\nLoves walks.',
  breed: 'Labrador Retriever',
  sex: 'female',
  ageGroup: 'adult',
  birthDate: '2022-04-01',
  size: 'large',
  colors: ['black', 'white'],
  goodWith: { children: true, dogs: false, cats: null },
  houseTrained: true,
  specialNeeds: null,
  location: { postalCode: '10115', latitude: 52.52, longitude: 13.405 },
};

for (const backend of await backends()) {
  describe(`profiles [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;
    let reader: string;

    before(async () => {
      ctx = await createTestContext(backend);
      ({ key } = await ctx.createKey({ name: 'shelter' }));
      ({ key: reader } = await ctx.createKey({ name: 'reader', scopes: ['pets:read'] }));
    });
    after(() => ctx.close());

    async function newPet(name = 'Rex'): Promise<number> {
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: bearer(key),
        payload: { name, categoryId: 1 },
      });
      assert.equal(res.statusCode, 201, res.body);
      return res.json().id;
    }
    const get = (petId: number | string, headers: Record<string, string> = {}) =>
      ctx.app.inject({ url: `/v1/pets/${petId}/profile`, headers: { ...bearer(reader), ...headers } });
    const put = (petId: number | string, payload: unknown, headers: Record<string, string> = {}) =>
      ctx.app.inject({
        method: 'PUT',
        url: `/v1/pets/${petId}/profile`,
        headers: { ...bearer(key), ...headers },
        payload: payload as object,
      });
    const patch = (petId: number, payload: unknown, headers: Record<string, string> = {}) =>
      ctx.app.inject({
        method: 'PATCH',
        url: `/v1/pets/${petId}/profile`,
        headers: { ...bearer(key), 'content-type': 'application/merge-patch+json', ...headers },
        payload: JSON.stringify(payload),
      });

    test('a pet without a profile answers {updatedAt: null} with ETag "0"; unknown pet 404, bad id 400', async () => {
      const petId = await newPet();
      const res = await get(petId);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), { updatedAt: null });
      assert.equal(res.headers.etag, '"0"');
      assertV1Error(await get(987654321), 404, 'pet_not_found', 'unknown pet');
      assertV1Error(await get('abc'), 400, 'validation_failed', 'malformed id');
    });

    test('PUT stores every field exactly, GET returns it with updatedAt and a strong ETag; 304', async () => {
      const petId = await newPet();
      const res = await put(petId, FULL);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers.etag, '"1"');
      const expected = { ...FULL, updatedAt: new Date(ctx.clock.now).toISOString() };
      assert.deepEqual(res.json(), expected);
      const read = await get(petId);
      assert.deepEqual(read.json(), expected);
      assert.equal(read.headers.etag, '"1"');
      const cached = await get(petId, { 'if-none-match': '"1"' });
      assert.equal(cached.statusCode, 304);
      // The spec's Pet body does not change.
      const pet = await ctx.app.inject({ url: `/v1/pets/${petId}`, headers: bearer(reader) });
      assert.deepEqual(Object.keys(pet.json()).sort(), ['categoryId', 'id', 'name', 'status']);
      // PUT replaces: fields left out are gone; a GET sent back (updatedAt included) is accepted.
      const replaced = await put(petId, { breed: 'Mix', updatedAt: '2000-01-01T00:00:00.000Z' });
      assert.equal(replaced.statusCode, 200, replaced.body);
      assert.deepEqual(replaced.json(), { breed: 'Mix', updatedAt: new Date(ctx.clock.now).toISOString() });
      assert.equal(replaced.headers.etag, '"2"');
    });

    test('validation: every field, unknown fields, coordinates together, birthDate not in the future', async () => {
      const petId = await newPet();
      const bad: [unknown, string][] = [
        [{ description: 'x'.repeat(4001) }, 'description'],
        [{ breed: 'x'.repeat(101) }, 'breed'],
        [{ sex: 'f' }, 'sex'],
        [{ ageGroup: 'old' }, 'ageGroup'],
        [{ birthDate: '2022-13-01' }, 'birthDate'],
        [{ birthDate: '2030-01-01' }, 'birthDate'],
        [{ size: 'huge' }, 'size'],
        [{ colors: ['a', 'b', 'c', 'd'] }, 'colors'],
        [{ colors: ['x'.repeat(31)] }, 'colors/0'],
        [{ goodWith: { children: 'yes' } }, 'goodWith/children'],
        [{ goodWith: { horses: true } }, 'goodWith'],
        [{ houseTrained: 'no' }, 'houseTrained'],
        [{ specialNeeds: 1 }, 'specialNeeds'],
        [{ location: { postalCode: 'x'.repeat(13) } }, 'location/postalCode'],
        [{ location: { latitude: 91, longitude: 0 } }, 'location/latitude'],
        [{ location: { latitude: 0, longitude: -181 } }, 'location/longitude'],
        [{ location: { latitude: 10 } }, 'location.longitude'],
        [{ nickname: 'Rexy' }, 'nickname'],
        [{ breed: null }, 'breed'],
      ];
      for (const [payload, field] of bad) {
        const res = await put(petId, payload);
        assertV1Error(res, 400, 'validation_failed', JSON.stringify(payload));
        assert.ok(
          JSON.stringify(res.json().details ?? res.json().message).includes(field.split('/')[0]!),
          `${JSON.stringify(payload)} names ${field}: ${res.body}`,
        );
      }
      assert.deepEqual((await get(petId)).json(), { updatedAt: null }, 'nothing stored');
      assertV1Error(await put(987654321, { breed: 'Mix' }), 404, 'pet_not_found', 'unknown pet');
    });

    test('PATCH merges (null removes, nested objects merge) and validates the result', async () => {
      const petId = await newPet();
      await put(petId, FULL);
      const res = await patch(petId, {
        breed: null,
        goodWith: { cats: true },
        location: { postalCode: null },
        updatedAt: 'ignored',
      });
      assert.equal(res.statusCode, 200, res.body);
      const rest: Partial<typeof FULL> = { ...FULL };
      delete rest.breed;
      assert.deepEqual(res.json(), {
        ...rest,
        goodWith: { children: true, dogs: false, cats: true },
        location: { latitude: 52.52, longitude: 13.405 },
        updatedAt: new Date(ctx.clock.now).toISOString(),
      });
      assert.equal(res.headers.etag, '"2"');
      const half = await patch(petId, { location: { latitude: null } });
      assertV1Error(half, 400, 'validation_failed', 'one coordinate left');
      assert.equal(half.json().details[0].field, 'location.latitude');
      assertV1Error(await patch(petId, {}), 400, 'validation_failed', 'empty patch');
      assertV1Error(await patch(petId, { sex: 'x' }), 400, 'validation_failed', 'bad value');
      const plain = await ctx.app.inject({
        method: 'PATCH',
        url: `/v1/pets/${petId}/profile`,
        headers: bearer(key),
        payload: { size: 'small' },
      });
      assert.equal(plain.statusCode, 200, 'application/json accepted');
      assert.equal(plain.json().size, 'small');
    });

    test('If-Match: stale 412 with the current ETag; matching and * go through', async () => {
      const petId = await newPet();
      assert.equal((await put(petId, { breed: 'A' }, { 'if-match': '"0"' })).statusCode, 200);
      const stale = await put(petId, { breed: 'B' }, { 'if-match': '"0"' });
      assertV1Error(stale, 412, 'precondition_failed', 'stale');
      assert.equal(stale.headers.etag, '"1"');
      assert.equal((await patch(petId, { breed: 'C' }, { 'if-match': '"1"' })).statusCode, 200);
      assertV1Error(
        await patch(petId, { breed: 'D' }, { 'if-match': '"1"' }),
        412,
        'precondition_failed',
        'x',
      );
      assert.equal((await patch(petId, { breed: 'E' }, { 'if-match': '*' })).statusCode, 200);
      assert.equal((await get(petId)).json().breed, 'E');
    });

    test('Idempotency-Key: a repeat replays, another body 422, nothing written twice', async () => {
      const petId = await newPet();
      const first = await put(petId, { breed: 'Once' }, { 'idempotency-key': 'profile-1' });
      assert.equal(first.statusCode, 200);
      const again = await put(petId, { breed: 'Once' }, { 'idempotency-key': 'profile-1' });
      assert.equal(again.statusCode, 200);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.headers.etag, '"1"');
      assert.deepEqual(again.json(), first.json());
      assert.equal((await get(petId)).headers.etag, '"1"', 'written once');
      assertV1Error(
        await put(petId, { breed: 'Other' }, { 'idempotency-key': 'profile-1' }),
        422,
        'idempotency_key_reused',
        'other body',
      );
    });

    test('scopes: reading needs pets:read, writing pets:write', async () => {
      const petId = await newPet();
      assertV1Error(
        await ctx.app.inject({
          method: 'PUT',
          url: `/v1/pets/${petId}/profile`,
          headers: bearer(reader),
          payload: { breed: 'x' },
        }),
        403,
        'insufficient_scope',
        'reader cannot write',
      );
      const { key: orders } = await ctx.createKey({ name: 'orders-only', scopes: ['orders:read'] });
      assertV1Error(await get(petId, bearer(orders)), 403, 'insufficient_scope', 'no pets:read');
    });

    test('a change writes pet.profile_updated with the profile and the old values; deleting the pet removes it', async () => {
      const petId = await newPet('Evented');
      await put(petId, { breed: 'Beagle', size: 'small' });
      await patch(petId, { size: 'medium' });
      const feed = await ctx.app.inject({
        url: '/v1/events?type=pet.profile_updated&limit=100',
        headers: bearer(key),
      });
      assert.equal(feed.statusCode, 200, feed.body);
      const mine = feed
        .json()
        .filter((e: { data: { object: { id: number } } }) => e.data.object.id === petId);
      assert.equal(mine.length, 2);
      assert.deepEqual(mine[1].data, {
        object: {
          id: petId,
          profile: { breed: 'Beagle', size: 'medium', updatedAt: new Date(ctx.clock.now).toISOString() },
        },
        previous: { size: 'small' },
        version: 2,
      });
      assert.deepEqual(mine[0].data.previous, { breed: null, size: null });
      const del = await ctx.app.inject({ method: 'DELETE', url: `/v1/pets/${petId}`, headers: bearer(key) });
      assert.equal(del.statusCode, 204);
      assertV1Error(await get(petId), 404, 'pet_not_found', 'gone with its pet');
    });
  });
}
