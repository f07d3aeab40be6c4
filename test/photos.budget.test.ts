/**
 * What a photo costs the instance and what it leaves behind: the decode budget (its queue and bounds alone,
 * then the 503 an upload gets through the HTTP layer on every backend), and a deleted photo's bytes gone from
 * the SQLite file and its WAL.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import type { SqliteDatabase } from '../src/db/sqlite.js';
import { ApiError } from '../src/http/errors.js';
import { DecodeBudget } from '../src/modules/photos/decode-budget.js';
import { photoRepository } from '../src/modules/photos/repository.js';
import type { PhotoSize } from '../src/modules/photos/schemas.js';
import { backends, bearer, createTestContext, sqliteMemory, type TestContext } from './helpers.js';
import { assertV1Error } from './support/assertions.js';

describe('the decode budget', () => {
  test('holds what fits, queues the rest first come first served, and releases once', async () => {
    const budget = new DecodeBudget(100, 60_000, 4);
    const a = await budget.acquire(60);
    const order: string[] = [];
    const b = budget.acquire(50).then((release) => (order.push('b'), release));
    const c = budget.acquire(10).then((release) => (order.push('c'), release));
    assert.equal(budget.waiting, 2, 'c waits behind b though it would fit: a large decode is not starved');
    a();
    a();
    const releaseB = await b;
    const releaseC = await c;
    assert.deepEqual(order, ['b', 'c']);
    assert.equal(budget.inUse, 60, 'a second release of a changes nothing');
    releaseB();
    releaseC();
    assert.equal(budget.inUse, 0);
    const whole = await budget.acquire(10_000);
    assert.equal(budget.inUse, 100, 'a decode dearer than the budget runs alone');
    whole();
  });

  test('refuses with 503 overloaded and Retry-After past its wait or its queue', async () => {
    const budget = new DecodeBudget(100, 30, 1);
    const held = await budget.acquire(100);
    const waited = budget.acquire(1);
    await assert.rejects(budget.acquire(1), (error: ApiError) => {
      assert.equal(error.code, 'overloaded', 'the queue is full: refused at once');
      assert.equal(error.headers?.['retry-after'], '1');
      return true;
    });
    await assert.rejects(waited, (error: ApiError) => error.code === 'overloaded' && error.status === 503);
    assert.equal(budget.waiting, 0);
    held();
    assert.equal(budget.inUse, 0);
    const now = new DecodeBudget(100, 0, 4);
    const first = await now.acquire(100);
    await assert.rejects(now.acquire(1), (error: ApiError) => error.code === 'overloaded');
    first();
  });
});

for (const backend of await backends()) {
  describe(`uploads beyond the decode budget [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;

    before(async () => {
      ctx = await createTestContext(backend, { config: { photoDecodeBudgetMb: 64, photoDecodeWaitMs: 0 } });
      ({ key } = await ctx.createKey({ name: 'shelter' }));
    });
    after(() => ctx.close());

    test('an upload finding the budget held answers 503 overloaded with Retry-After, and nothing is stored', async () => {
      const pet = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: bearer(key),
        payload: { name: 'Busy', categoryId: 1 },
      });
      const petId = pet.json().id as number;
      const upload = (body: Buffer) =>
        ctx.app.inject({
          method: 'POST',
          url: `/v1/pets/${petId}/photos`,
          headers: { ...bearer(key), 'content-type': 'image/png' },
          payload: body,
        });
      // 5,000 × 5,000 RGB: 75 MB decoded, more than the whole 64 MB budget, so it holds all of it.
      const large = await sharp({ create: { width: 5000, height: 5000, channels: 3, background: '#406080' } })
        .png()
        .toBuffer();
      const small = await sharp({ create: { width: 20, height: 20, channels: 3, background: '#406080' } })
        .png()
        .toBuffer();
      let decoding!: () => void;
      const started = new Promise<void>((resolve) => (decoding = resolve));
      const onDecode = () => decoding();
      subscribe('pet-adoption:photos:decode', onDecode);
      let first;
      try {
        first = upload(large);
        await started;
      } finally {
        unsubscribe('pet-adoption:photos:decode', onDecode);
      }
      const refused = await upload(small);
      assertV1Error(refused, 503, 'overloaded', 'while the large one decodes');
      assert.match(String(refused.headers['retry-after']), /^\d+$/);
      assert.equal((await first).statusCode, 201);
      const list = await ctx.app.inject({ url: `/v1/pets/${petId}/photos`, headers: bearer(key) });
      assert.equal(list.json().length, 1, 'only the large one');
      assert.equal((await upload(small)).statusCode, 201, 'room again once it is done');
    });
  });
}

describe('deleted means gone [sqlite]', () => {
  let ctx: TestContext;
  let key: string;
  before(async () => {
    ctx = await createTestContext(sqliteMemory);
    ({ key } = await ctx.createKey({ name: 'shelter' }));
  });
  after(() => ctx.close());

  test("a deleted photo's bytes are in neither the database file nor its WAL", async () => {
    const db = (ctx.database as SqliteDatabase).db;
    const files = () =>
      Buffer.concat(
        [db.name, `${db.name}-wal`].filter((file) => existsSync(file)).map((file) => readFileSync(file)),
      );
    const pet = await ctx.app.inject({
      method: 'POST',
      url: '/v1/pets',
      headers: bearer(key),
      payload: { name: 'Private', categoryId: 1 },
    });
    const petId = pet.json().id as number;
    const jpeg = await sharp(randomBytes(200 * 150 * 3), { raw: { width: 200, height: 150, channels: 3 } })
      .jpeg()
      .toBuffer();
    const res = await ctx.app.inject({
      method: 'POST',
      url: `/v1/pets/${petId}/photos`,
      headers: { ...bearer(key), 'content-type': 'image/jpeg' },
      payload: jpeg,
    });
    assert.equal(res.statusCode, 201, res.body);
    const photos = ctx.database.repository(photoRepository);
    const markers = await Promise.all(
      ['original', 'small', 'full'].map(async (size) => {
        const bytes = (await photos.file(res.json().id, size as PhotoSize))!;
        const middle = Math.floor(bytes.length / 2);
        return bytes.subarray(middle, middle + 48);
      }),
    );
    db.pragma('wal_checkpoint(TRUNCATE)');
    for (const marker of markers) assert.ok(files().includes(marker), 'the scan finds a stored photo');
    const deleted = await ctx.app.inject({
      method: 'DELETE',
      url: `/v1/pets/${petId}/photos/${res.json().id}`,
      headers: bearer(key),
    });
    assert.equal(deleted.statusCode, 204);
    db.pragma('wal_checkpoint(TRUNCATE)');
    const left = files();
    for (const marker of markers) assert.ok(!left.includes(marker), 'no byte of the deleted photo is left');
  });
});
