/** Behaviour of the animal operations and the categories extension, on every backend. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';

for (const backend of await backends()) {
  describe(`pets [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;
    const auth = () => bearer(key);

    before(async () => {
      ctx = await createTestContext(backend);
      ({ key } = await ctx.createKey());
    });
    after(() => ctx.close());

    const create = (payload: unknown, headers: Record<string, string> = {}) =>
      ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: { ...auth(), ...headers },
        payload: payload as object,
      });

    test('createPet answers 201 with the pet, its id and a Location header; status defaults to available', async () => {
      const res = await create({ name: 'Rex', categoryId: 1 });
      assert.equal(res.statusCode, 201);
      const pet = res.json();
      assert.deepEqual(Object.keys(pet).sort(), ['categoryId', 'id', 'name', 'status']);
      assert.equal(pet.name, 'Rex');
      assert.equal(pet.categoryId, 1);
      assert.equal(pet.status, 'available');
      assert.ok(Number.isInteger(pet.id) && pet.id > 0);
      assert.equal(res.headers.location, `/v1/pets/${pet.id}`);

      const fetched = await ctx.app.inject({ url: `/v1/pets/${pet.id}`, headers: auth() });
      assert.equal(fetched.statusCode, 200);
      assert.deepEqual(fetched.json(), pet);
    });

    test('names are stored and returned exactly as sent', async () => {
      const name = '  Mr. 🐱 Whiskers — ñandú  ';
      const res = await create({ name, categoryId: 2, status: 'pending' });
      assert.equal(res.statusCode, 201);
      assert.equal(res.json().name, name);
      const fetched = await ctx.app.inject({ url: `/v1/pets/${res.json().id}`, headers: auth() });
      assert.equal(fetched.json().name, name);
      assert.equal(fetched.json().status, 'pending');
    });

    test('invalid bodies answer 400 with details naming the fields, and create nothing', async () => {
      const before = (await ctx.app.inject({ url: '/v1/pets?limit=100', headers: auth() })).json().length;
      const cases: [unknown, string][] = [
        [{ categoryId: 1 }, 'name'],
        [{ name: 'A' }, 'categoryId'],
        [{ name: '', categoryId: 1 }, 'name'],
        [{ name: '   ', categoryId: 1 }, 'name'],
        [{ name: 'a\u0000b', categoryId: 1 }, 'name'],
        [{ name: 'x'.repeat(101), categoryId: 1 }, 'name'],
        [{ name: 'A', categoryId: '1' }, 'categoryId'],
        [{ name: 'A', categoryId: 1.5 }, 'categoryId'],
        [{ name: 'A', categoryId: 0 }, 'categoryId'],
        [{ name: 'A', categoryId: 999 }, 'categoryId'],
        [{ name: 'A', categoryId: 2 ** 53 }, 'categoryId'],
        [{ name: 'A', categoryId: 1, status: 'adopted' }, 'status'],
        [{ name: 'A', categoryId: 1, id: 5 }, 'id'],
        [{ name: 'A', categoryId: 1, color: 'red' }, 'color'],
      ];
      for (const [payload, field] of cases) {
        const res = await create(payload);
        assert.equal(res.statusCode, 400, JSON.stringify(payload));
        const body = res.json();
        assert.equal(body.code, 'validation_failed');
        assert.equal(body.status, 400);
        assert.ok(
          body.details.some((d: { field: string }) => d.field === field),
          `${JSON.stringify(payload)} → ${JSON.stringify(body.details)}`,
        );
      }
      const afterCount = (await ctx.app.inject({ url: '/v1/pets?limit=100', headers: auth() })).json().length;
      assert.equal(afterCount, before);
    });

    test('a name of exactly 100 characters (code points) is accepted', async () => {
      const res = await create({ name: '🐶'.repeat(100), categoryId: 1 });
      assert.equal(res.statusCode, 201);
    });

    test('listPets pages by cursor in id order, filters by status, and links the next page', async () => {
      const local = await createTestContext(backend);
      try {
        const { key: k } = await local.createKey();
        const statuses = ['available', 'pending', 'sold'] as const;
        const created: number[] = [];
        for (let i = 0; i < 25; i++) {
          const res = await local.app.inject({
            method: 'POST',
            url: '/v1/pets',
            headers: bearer(k),
            payload: { name: `p${i}`, categoryId: 1, status: statuses[i % 3] },
          });
          created.push(res.json().id);
        }
        const first = await local.app.inject({ url: '/v1/pets', headers: bearer(k) });
        assert.equal(first.statusCode, 200);
        assert.equal(first.json().length, 20, 'default limit is 20');
        assert.deepEqual(
          first.json().map((p: { id: number }) => p.id),
          created.slice(0, 20),
        );
        const link = first.headers.link as string;
        const match = /^<([^>]+)>; rel="next"$/.exec(link);
        assert.ok(match, link);
        const second = await local.app.inject({ url: match[1]!, headers: bearer(k) });
        assert.deepEqual(
          second.json().map((p: { id: number }) => p.id),
          created.slice(20),
        );
        assert.equal(second.headers.link, undefined, 'no next link on the last page');

        const seen: number[] = [];
        let url: string | undefined = '/v1/pets?status=pending&limit=3';
        while (url) {
          const page: {
            statusCode: number;
            headers: Record<string, unknown>;
            json(): { id: number; status: string }[];
          } = await local.app.inject({ url, headers: bearer(k) });
          assert.equal(page.statusCode, 200);
          for (const p of page.json()) {
            assert.equal(p.status, 'pending');
            seen.push(p.id);
          }
          url = /^<([^>]+)>/.exec((page.headers.link as string | undefined) ?? '')?.[1];
        }
        assert.deepEqual(
          seen,
          created.filter((_, i) => i % 3 === 1),
        );
      } finally {
        await local.close();
      }
    });

    test('listPets rejects bad limit, status, cursor and unknown parameters with 400', async () => {
      for (const query of [
        'limit=0',
        'limit=101',
        'limit=abc',
        'limit=2.5',
        'limit=-1',
        'status=adopted',
        'offset=5',
      ]) {
        const res = await ctx.app.inject({ url: `/v1/pets?${query}`, headers: auth() });
        assert.equal(res.statusCode, 400, query);
        assert.equal(res.json().code, 'validation_failed', query);
        assert.equal(res.json().status, 400);
      }
      const res = await ctx.app.inject({ url: '/v1/pets?cursor=nope', headers: auth() });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().code, 'invalid_cursor');
      for (const query of ['limit=1', 'limit=100', 'status=sold']) {
        const res = await ctx.app.inject({ url: `/v1/pets?${query}`, headers: auth() });
        assert.equal(res.statusCode, 200, query);
      }
    });

    test('getPet: malformed id is 400, unknown id 404, both with deprecation headers', async () => {
      for (const id of ['abc', '0', '-3', '1.5']) {
        const res = await ctx.app.inject({ url: `/v1/pets/${id}`, headers: auth() });
        assert.equal(res.statusCode, 400, id);
        assert.equal(res.json().code, 'validation_failed');
        assert.equal(res.headers.sunset, 'Thu, 05 Dec 2030 00:00:00 GMT');
      }
      for (const id of ['987654321', '9223372036854775807']) {
        const res = await ctx.app.inject({ url: `/v1/pets/${id}`, headers: auth() });
        assert.equal(res.statusCode, 404, id);
        assert.equal(res.json().code, 'pet_not_found');
        assert.match(String(res.headers.deprecation), /^@\d+$/);
        assert.equal(res.headers.link, '</v1/pets>; rel="successor-version"');
      }
    });

    test('getPet answers 410 gone from the sunset instant on', async () => {
      const pet = (await create({ name: 'Old', categoryId: 1 })).json();
      const saved = ctx.clock.now;
      try {
        ctx.clock.set(Date.UTC(2030, 11, 4, 23, 59, 59, 999));
        assert.equal((await ctx.app.inject({ url: `/v1/pets/${pet.id}`, headers: auth() })).statusCode, 200);
        ctx.clock.set(Date.UTC(2030, 11, 5));
        const res = await ctx.app.inject({ url: `/v1/pets/${pet.id}`, headers: auth() });
        assert.equal(res.statusCode, 410);
        assert.equal(res.json().code, 'gone');
        assert.equal(res.headers.sunset, 'Thu, 05 Dec 2030 00:00:00 GMT');
      } finally {
        ctx.clock.set(saved);
      }
    });

    test('categories list the seeded defaults', async () => {
      const res = await ctx.app.inject({ url: '/v1/categories', headers: auth() });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.json(), [
        { id: 1, name: 'dogs' },
        { id: 2, name: 'cats' },
        { id: 3, name: 'birds' },
        { id: 4, name: 'rabbits' },
        { id: 5, name: 'small mammals' },
        { id: 6, name: 'reptiles' },
        { id: 7, name: 'fish' },
      ]);
    });

    describe('idempotency', () => {
      test('a repeat with the same key and body replays the first response and creates nothing', async () => {
        const idem = { 'idempotency-key': `k-${Math.random()}` };
        const first = await create({ name: 'Once', categoryId: 3 }, idem);
        assert.equal(first.statusCode, 201);
        const again = await create({ name: 'Once', categoryId: 3 }, idem);
        assert.equal(again.statusCode, 201);
        assert.deepEqual(again.json(), first.json());
        assert.equal(again.headers.location, first.headers.location);
        const other = await create({ name: 'Once', categoryId: 3 });
        assert.equal(other.json().id, first.json().id + 1, 'the replay created no pet in between');
      });

      test('the same key with a different body is 422 idempotency_key_reused', async () => {
        const idem = { 'idempotency-key': `k-${Math.random()}` };
        assert.equal((await create({ name: 'A', categoryId: 1 }, idem)).statusCode, 201);
        const res = await create({ name: 'B', categoryId: 1 }, idem);
        assert.equal(res.statusCode, 422);
        assert.equal(res.json().code, 'idempotency_key_reused');
      });

      test('keys are per account', async () => {
        const idem = { 'idempotency-key': `shared-${Math.random()}` };
        const { key: other } = await ctx.createKey();
        const a = await create({ name: 'A', categoryId: 1 }, idem);
        const b = await ctx.app.inject({
          method: 'POST',
          url: '/v1/pets',
          headers: { ...bearer(other), ...idem },
          payload: { name: 'A', categoryId: 1 },
        });
        assert.equal(b.statusCode, 201);
        assert.notEqual(b.json().id, a.json().id);
      });

      test('records expire after 24 hours', async () => {
        const idem = { 'idempotency-key': `k-${Math.random()}` };
        const first = await create({ name: 'A', categoryId: 1 }, idem);
        ctx.clock.advance(24 * 3600 * 1000 + 1000);
        const later = await create({ name: 'A', categoryId: 1 }, idem);
        assert.equal(later.statusCode, 201);
        assert.notEqual(later.json().id, first.json().id);
      });

      test('an invalid Idempotency-Key header is a 400', async () => {
        const res = await create({ name: 'A', categoryId: 1 }, { 'idempotency-key': 'x'.repeat(300) });
        assert.equal(res.statusCode, 400);
        assert.equal(res.json().details[0].field, 'Idempotency-Key');
      });
    });
  });
}
