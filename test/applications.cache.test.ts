/**
 * The applications' list pages come from the exact page cache (src/http/page-cache.ts), on every backend:
 * a repeated read costs no query, every write (a submission, an action, an erasure, a change made behind
 * the service's back) is seen by the very next read, and the cache never decides who may read: a page one
 * key's read put there is answered to another only if that key may see it, at the moment it asks.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Database } from '../src/db/database.js';
import type { PostgresDatabase } from '../src/db/postgres.js';
import { applicationStore } from '../src/modules/applications/index.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { assert401, assertV1Error } from './support/assertions.js';
import { acted, createPet, submitted } from './support/applications.js';

interface Listed {
  id: string;
  status: string;
  applicant: { name: string | null; email: string | null };
}

/** Changes an applicant's name behind the service's back (SQLite: through a connection of the test's own). */
async function renameBehindTheService(database: Database, applicantId: string, name: string): Promise<void> {
  if (database.kind === 'sqlite') {
    const { SqliteDatabase } = await import('../src/db/sqlite.js');
    const file = (database as InstanceType<typeof SqliteDatabase>).db.name;
    const other = new SqliteDatabase(file);
    other.db.prepare('UPDATE applicants SET name = ? WHERE id = ?').run(name, applicantId);
    await other.close();
    return;
  }
  // Not through the store: the table's trigger must move the version whoever writes (migration 025).
  await (database as PostgresDatabase).execute({
    text: 'UPDATE applicants SET name = $1 WHERE id = $2',
    values: [name, applicantId],
  });
}

for (const backend of await backends()) {
  describe(`applications: list pages from the page cache [${backend.name}]`, () => {
    let ctx: TestContext;
    let staff: string;
    let partner: string;
    let other: string;
    let lists = 0;

    before(async () => {
      ctx = await createTestContext(backend);
      ({ key: staff } = await ctx.createKey({ name: 'staff' }));
      ({ key: partner } = await ctx.createKey({
        name: 'partner-a',
        scopes: ['applications:write', 'applications:read'],
      }));
      ({ key: other } = await ctx.createKey({ name: 'partner-b', scopes: ['applications:write'] }));
      // Counts the store's list queries: a page answered from the cache makes none.
      const store = ctx.database.repository(applicationStore) as { list: (...args: never[]) => unknown };
      const list = store.list.bind(store);
      store.list = (...args: never[]) => {
        lists++;
        return list(...args);
      };
    });
    after(() => ctx.close());

    const read = async (key: string, url = '/v1/applications?limit=5'): Promise<Listed[]> => {
      const res = await ctx.app.inject({ url, headers: bearer(key) });
      assert.equal(res.statusCode, 200, res.body);
      return res.json<Listed[]>();
    };
    /** Reads the page twice: the second answer must equal the first and cost no query. */
    const readTwice = async (key: string, url?: string): Promise<Listed[]> => {
      const first = await read(key, url);
      const queried = lists;
      assert.deepEqual(await read(key, url), first, 'read twice');
      assert.equal(lists, queried, 'the repeated read was answered without a query');
      return first;
    };

    test('every write is seen by the next read; a repeated read costs no query', async () => {
      const petId = await createPet(ctx.app, staff);
      const a = await submitted(ctx.app, partner, petId, 'cache-a@example.org');
      assert.deepEqual(
        (await readTwice(staff)).map((x) => x.id),
        [a.id],
      );
      const b = await submitted(ctx.app, partner, petId, 'cache-b@example.org');
      assert.deepEqual(
        (await readTwice(staff)).map((x) => x.id),
        [b.id, a.id],
        'a submission',
      );
      await acted(ctx.app, staff, a.id, 'review');
      assert.equal((await readTwice(staff)).find((x) => x.id === a.id)!.status, 'in_review', 'an action');
      await renameBehindTheService(ctx.database, a.applicantId, 'Renamed Elsewhere');
      assert.equal(
        (await readTwice(staff)).find((x) => x.id === a.id)!.applicant.name,
        'Renamed Elsewhere',
        'a change made by another connection',
      );
      const erased = await ctx.app.inject({
        method: 'DELETE',
        url: `/v1/applicants/${b.applicantId}`,
        headers: bearer(staff),
      });
      assert.equal(erased.statusCode, 204, erased.body);
      const after = (await readTwice(staff)).find((x) => x.id === b.id)!;
      assert.deepEqual([after.applicant.name, after.applicant.email], [null, null], 'an erasure');
    });

    test('a cached page is answered only to a key that may read it, as the key stands at that moment', async () => {
      const petId = await createPet(ctx.app, staff);
      const mine = await submitted(ctx.app, partner, petId, 'cache-mine@example.org');
      const theirs = await submitted(ctx.app, other, petId, 'cache-theirs@example.org');
      const url = `/v1/applications?petId=${petId}`;
      // The manager's page (every account's) is cached first; a partner asking the same URL sees its own.
      assert.deepEqual(
        (await readTwice(staff, url)).map((x) => x.id),
        [theirs.id, mine.id],
      );
      assert.deepEqual(
        (await readTwice(partner, url)).map((x) => x.id),
        [mine.id],
        "the partner's own account only",
      );
      // A key without applications:read is refused, page cached or not.
      const { key: petsOnly } = await ctx.createKey({ name: 'staff', scopes: ['pets:read'] });
      assertV1Error(
        await ctx.app.inject({ url, headers: bearer(petsOnly) }),
        403,
        'insufficient_scope',
        'no applications:read',
      );
      // A key revoked after its page was cached is refused.
      const { key: revoked, id } = await ctx.createKey({ name: 'staff' });
      await readTwice(revoked, url);
      assert.ok(await ctx.accounts.revokeKey(id, ctx.clock.now));
      assert401(await ctx.app.inject({ url, headers: bearer(revoked) }), 'revoked_api_key', 'revoked');
    });
  });
}
