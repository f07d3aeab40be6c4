/**
 * The Database contract (src/storage/storage.ts), one suite run against every backend: SQLite always,
 * PostgreSQL when it answers (mandatory under CI=true). Backend-specific guarantees that the contract leaves
 * to the implementation (timeouts, pool behaviour, schema isolation) follow in a PostgreSQL-only suite.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import type { Pet, PetStatus } from '../src/modules/pets/schemas.js';
import { PostgresDatabase } from '../src/db/postgres.js';
import { migrationsFor } from '../src/db/migrations.js';
import { SqliteDatabase } from '../src/db/sqlite.js';
import { externalServicesAvailable, sqliteMemory, uniqueName } from './helpers.js';
import {
  createTestPostgresDatabase,
  dropSchema,
  postgresUrl,
  withPostgresClient,
} from './support/postgres.js';
import { type Database, StorageUnavailableError } from '../src/db/database.js';
import { type IdempotencyInput } from '../src/http/idempotency/index.js';
import { idempotencyRepository } from '../src/http/idempotency/repository.js';
import { accountRepository, PLAN_QUOTAS } from '../src/modules/accounts/repository.js';
import { categoryRepository, DEFAULT_CATEGORIES } from '../src/modules/categories/repository.js';
import { type CreatePetResult, demoPet, petRepository } from '../src/modules/pets/repository.js';
import { TcpProxy } from './support/tcp-proxy.js';

const T0 = Date.UTC(2026, 5, 15, 12, 0, 0);
const DAY = 24 * 3600_000;
const STATUSES: PetStatus[] = ['available', 'pending', 'sold'];

interface Target {
  name: 'sqlite' | 'postgres';
  /** A storage on a new, empty database; close() removes the database. */
  create(): Promise<Database>;
  /**
   * Two instances on one new database (as two processes would be), and how to dispose of both; `reopen`
   * opens one more instance on it (the caller closes that one before `close`).
   */
  createPair(): Promise<{ a: Database; b: Database; reopen(): Database; close(): Promise<void> }>;
}

const sqliteTarget: Target = {
  name: 'sqlite',
  create: () => sqliteMemory.createDatabase(),
  async createPair() {
    const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-contract-'));
    const a = new SqliteDatabase(join(dir, 'shared.db'));
    const b = new SqliteDatabase(join(dir, 'shared.db'));
    return {
      a,
      b,
      reopen: () => new SqliteDatabase(join(dir, 'shared.db')),
      async close() {
        await a.close();
        await b.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

const postgresTarget: Target = {
  name: 'postgres',
  create: () => createTestPostgresDatabase(),
  async createPair() {
    const schema = uniqueName('pg');
    const a = await createTestPostgresDatabase({ schema, dropOnClose: false });
    const b = await createTestPostgresDatabase({ schema, dropOnClose: false });
    return {
      a,
      b,
      reopen: () => new PostgresDatabase(postgresUrl(schema), { poolSize: 2, timeoutMs: 5_000 }),
      async close() {
        await a.close();
        await b.close();
        await dropSchema(schema);
      },
    };
  },
};

// Under CI=true this throws when PostgreSQL or Redis is unreachable, failing the file: the suite is mandatory.
const postgresAvailable = await externalServicesAvailable();
const targets: Target[] = postgresAvailable ? [sqliteTarget, postgresTarget] : [sqliteTarget];

function idem(
  accountId: number,
  key: string,
  fingerprint: string,
  now: number,
  retentionMs = DAY,
): IdempotencyInput {
  return { accountId, operation: 'createPet', key, fingerprint, now, notBefore: now - retentionMs };
}

function createdPet(result: CreatePetResult): Pet {
  assert.equal(result.kind, 'created', `expected created, got ${JSON.stringify(result)}`);
  return (result as Extract<CreatePetResult, { kind: 'created' }>).pet;
}

/** Every pet, through the keyset pages a client would walk. */
async function listAll(storage: Database, status?: PetStatus, pageSize = 100): Promise<Pet[]> {
  const all: Pet[] = [];
  for (;;) {
    const page = await storage
      .repository(petRepository)
      .list({ status, afterId: all.at(-1)?.id, limit: pageSize });
    all.push(...page);
    if (page.length < pageSize) return all;
  }
}

/** Lets I/O callbacks and promise chains run, without moving a mocked clock. */
async function settleIo(): Promise<void> {
  for (let i = 0; i < 5; i++) await nextTurn();
}

async function rejectsUnavailable(promise: Promise<unknown>, label: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(
      error instanceof StorageUnavailableError,
      `${label}: expected StorageUnavailableError, got ${String(error)}`,
    );
    return true;
  });
}

for (const target of targets) {
  describe(`storage contract [${target.name}]`, { timeout: 120_000 }, () => {
    const opened: Database[] = [];
    /** A migrated storage on its own database, closed (and removed) after the suite. */
    async function freshStorage(): Promise<Database> {
      const storage = await target.create();
      opened.push(storage);
      await storage.migrate();
      return storage;
    }
    let storage: Database;

    before(async () => {
      storage = await freshStorage();
    });
    after(async () => {
      await Promise.all(opened.map((s) => s.close()));
    });

    describe('migrations', () => {
      test('a new database reports fresh; migrating again changes nothing', async () => {
        const s = await target.create();
        opened.push(s);
        assert.deepEqual(await s.migrate(), { fresh: true });
        const pet = createdPet(
          await s.repository(petRepository).create({ name: 'Keep me', categoryId: 1, status: 'available' }),
        );
        const again = await s.migrate();
        // PostgreSQL answers for this call; SQLite migrates when opened and reports what it found then.
        if (target.name === 'postgres') assert.equal(again.fresh, false);
        assert.deepEqual(await s.repository(categoryRepository).list(), DEFAULT_CATEGORIES);
        assert.deepEqual(await s.repository(petRepository).list({ limit: 100 }), [pet]);
      });

      test('two instances migrating a new database at once: exactly one reports fresh, both work', async () => {
        const { a, b, close } = await target.createPair();
        try {
          const results = await Promise.all([a.migrate(), b.migrate()]);
          assert.equal(results.filter((r) => r.fresh).length, 1, JSON.stringify(results));
          assert.deepEqual(await a.repository(categoryRepository).list(), DEFAULT_CATEGORIES);
          assert.deepEqual(await b.repository(categoryRepository).list(), DEFAULT_CATEGORIES);
          const pet = createdPet(
            await a.repository(petRepository).create({ name: 'Shared', categoryId: 2, status: 'pending' }),
          );
          assert.deepEqual(await b.repository(petRepository).get(pet.id), { pet, version: 1 });
          // Whichever instance won, migrating again from the other is not fresh.
          const loser = results[0]!.fresh ? b : a;
          assert.equal((await loser.migrate()).fresh, false);
        } finally {
          await close();
        }
      });

      test('a database migrated by a newer release is refused, not misread', async () => {
        const { a, b, close } = await target.createPair();
        try {
          await a.migrate();
          const newer = migrationsFor(target.name).length + 1;
          if (a instanceof SqliteDatabase) {
            a.db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(newer, T0);
          } else {
            await (a as PostgresDatabase).execute({
              text: 'INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)',
              values: [newer, T0],
            });
          }
          await assert.rejects(b.migrate(), new RegExp(`schema version ${newer} is newer than this release`));
        } finally {
          await close();
        }
      });

      test('the installation id: written once when instances migrate at once, the same on reopen, its own per database', async () => {
        const { a, b, reopen, close } = await target.createPair();
        try {
          await Promise.all([a.migrate(), b.migrate()]);
          const id = await a.installationId();
          assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
          assert.equal(await b.installationId(), id);
          await b.migrate();
          const again = reopen();
          try {
            await again.migrate();
            assert.equal(await again.installationId(), id);
          } finally {
            await again.close();
          }
          assert.notEqual(await storage.installationId(), id, 'another database has its own id');
        } finally {
          await close();
        }
      });

      test('default categories are seeded in id order', async () => {
        assert.deepEqual(await storage.repository(categoryRepository).list(), DEFAULT_CATEGORIES);
      });
    });

    describe('pets', () => {
      test('createPet returns the pet with a new integer id; getPet finds it', async () => {
        const pet = createdPet(
          await storage
            .repository(petRepository)
            .create({ name: 'Rex', categoryId: 1, status: 'available' }, undefined),
        );
        assert.ok(Number.isSafeInteger(pet.id) && pet.id > 0, `id ${String(pet.id)}`);
        assert.deepEqual(pet, { id: pet.id, name: 'Rex', categoryId: 1, status: 'available' });
        assert.deepEqual(await storage.repository(petRepository).get(pet.id), { pet, version: 1 });
      });

      test('names are stored exactly as given', async () => {
        const name = '  Mr. 🐱 Whiskers — ñandú \'"; DROP TABLE pets; -- ';
        const pet = createdPet(
          await storage.repository(petRepository).create({ name, categoryId: 2, status: 'pending' }),
        );
        assert.equal((await storage.repository(petRepository).get(pet.id))?.pet.name, name);
      });

      test('ids increase with every creation', async () => {
        const ids: number[] = [];
        for (let i = 0; i < 5; i++) {
          ids.push(
            createdPet(
              await storage
                .repository(petRepository)
                .create({ name: `n${i}`, categoryId: 3, status: 'sold' }),
            ).id,
          );
        }
        assert.deepEqual(
          [...ids].sort((x, y) => x - y),
          ids,
        );
        assert.equal(new Set(ids).size, ids.length);
      });

      test('getPet of an unknown id is undefined', async () => {
        assert.equal(await storage.repository(petRepository).get(Number.MAX_SAFE_INTEGER), undefined);
      });

      test('an unknown category is a result, not an error, and creates nothing', async () => {
        const before = await listAll(storage);
        assert.deepEqual(
          await storage
            .repository(petRepository)
            .create({ name: 'Ghost', categoryId: 999, status: 'available' }),
          {
            kind: 'unknown_category',
          },
        );
        assert.deepEqual(
          await storage
            .repository(petRepository)
            .create({ name: 'Ghost', categoryId: Number.MAX_SAFE_INTEGER, status: 'sold' }),
          {
            kind: 'unknown_category',
          },
        );
        assert.deepEqual(await listAll(storage), before);
      });
    });

    describe('listing', () => {
      let s: Database;
      let pets: Pet[];
      before(async () => {
        s = await freshStorage();
        pets = [];
        for (let i = 0; i < 25; i++) {
          const status = STATUSES[i % 3]!;
          pets.push(
            createdPet(
              await s.repository(petRepository).create({ name: `Pet ${i}`, categoryId: (i % 7) + 1, status }),
            ),
          );
        }
      });

      test('ordered by id ascending, at most limit', async () => {
        assert.deepEqual(await s.repository(petRepository).list({ limit: 100 }), pets);
        assert.deepEqual(await s.repository(petRepository).list({ limit: 10 }), pets.slice(0, 10));
        assert.deepEqual(await s.repository(petRepository).list({ limit: 1 }), pets.slice(0, 1));
      });

      test('keyset pages after afterId cover every pet exactly once', async () => {
        for (const size of [1, 7, 25]) assert.deepEqual(await listAll(s, undefined, size), pets);
        const middle = pets[11]!;
        assert.deepEqual(
          await s.repository(petRepository).list({ afterId: middle.id, limit: 5 }),
          pets.slice(12, 17),
        );
        assert.deepEqual(await s.repository(petRepository).list({ afterId: pets.at(-1)!.id, limit: 5 }), []);
        assert.deepEqual(await s.repository(petRepository).list({ afterId: 0, limit: 3 }), pets.slice(0, 3));
      });

      test('status filters, combined with afterId and limit', async () => {
        for (const status of STATUSES) {
          const expected = pets.filter((p) => p.status === status);
          assert.deepEqual(await s.repository(petRepository).list({ status, limit: 100 }), expected);
          assert.deepEqual(await listAll(s, status, 3), expected);
          // afterId need not be a pet of that status.
          const pivot = pets.find((p) => p.status !== status)!;
          assert.deepEqual(
            await s.repository(petRepository).list({ status, afterId: pivot.id, limit: 4 }),
            expected.filter((p) => p.id > pivot.id).slice(0, 4),
          );
        }
      });

      test('pages asked for at the same time each get their own page', async () => {
        const queries = [
          { limit: 5 },
          { status: 'sold' as const, limit: 3 },
          { afterId: pets[11]!.id, limit: 4 },
          { status: 'available' as const, afterId: pets[4]!.id, limit: 100 },
          { afterId: pets.at(-1)!.id, limit: 10 },
          { status: 'pending' as const, afterId: pets.at(-1)!.id, limit: 2 },
          { limit: 5 },
        ];
        const together = await Promise.all(queries.map((q) => s.repository(petRepository).list(q)));
        const alone: Pet[][] = [];
        for (const q of queries) alone.push(await s.repository(petRepository).list(q));
        assert.deepEqual(together, alone);
        assert.deepEqual(together[0], pets.slice(0, 5));
        assert.deepEqual(together[1], pets.filter((p) => p.status === 'sold').slice(0, 3));
        assert.deepEqual(together[2], pets.slice(12, 16));
        assert.deepEqual(
          together[3],
          pets.filter((p) => p.status === 'available' && p.id > pets[4]!.id),
        );
        assert.deepEqual(together[4], []);
        assert.deepEqual(together[5], []);
      });

      test('ids, categoryIds and statuses come back as JSON-ready values', async () => {
        const [first] = await s.repository(petRepository).list({ limit: 1 });
        assert.ok(first);
        assert.equal(typeof first.id, 'number');
        assert.equal(typeof first.categoryId, 'number');
        assert.deepEqual(Object.keys(first).sort(), ['categoryId', 'id', 'name', 'status']);
      });
    });

    describe('seedPets', () => {
      test('inserts demo pets numbered after the existing ones', async () => {
        const s = await freshStorage();
        assert.equal(await s.repository(petRepository).seed(1000, T0), 1000);
        const all = await listAll(s);
        assert.equal(all.length, 1000);
        assert.deepEqual(
          all.map(({ name, categoryId, status }) => ({ name, categoryId, status })),
          Array.from({ length: 1000 }, (_, i) => demoPet(i)),
        );
        assert.equal(await s.repository(petRepository).seed(5, T0), 5);
        const more = await s.repository(petRepository).list({ afterId: all.at(-1)!.id, limit: 100 });
        assert.deepEqual(
          more.map((p) => p.name),
          [1000, 1001, 1002, 1003, 1004].map((i) => demoPet(i).name),
        );
        const sold = await listAll(s, 'sold');
        assert.equal(sold.length, [...all, ...more].filter((p) => p.status === 'sold').length);
        assert.equal(await s.repository(petRepository).seed(0, T0), 0);
      });
    });

    describe('idempotency', () => {
      let accountId: number;
      let otherAccountId: number;
      before(async () => {
        accountId = (await storage.repository(accountRepository).upsertAccount({ name: 'idem-owner' }, T0))
          .id;
        otherAccountId = (
          await storage.repository(accountRepository).upsertAccount({ name: 'idem-other' }, T0)
        ).id;
      });
      const rex = { name: 'Rex', categoryId: 1, status: 'available' as const };

      test('a repeat with the same fingerprint replays the first response and creates nothing', async () => {
        const first = createdPet(
          await storage.repository(petRepository).create(rex, idem(accountId, 'k-replay', 'fp1', T0)),
        );
        const countBefore = (await listAll(storage)).length;
        const again = await storage
          .repository(petRepository)
          .create(rex, idem(accountId, 'k-replay', 'fp1', T0 + 60_000));
        assert.deepEqual(again, { kind: 'replayed', status: 201, body: first });
        assert.equal((await listAll(storage)).length, countBefore);
      });

      test('the same key with another fingerprint is a mismatch', async () => {
        createdPet(
          await storage.repository(petRepository).create(rex, idem(accountId, 'k-mismatch', 'fp1', T0)),
        );
        assert.deepEqual(
          await storage
            .repository(petRepository)
            .create({ ...rex, name: 'Other' }, idem(accountId, 'k-mismatch', 'fp2', T0 + 1)),
          { kind: 'idempotency_mismatch' },
        );
      });

      test('records older than notBefore are ignored and replaced', async () => {
        const first = createdPet(
          await storage.repository(petRepository).create(rex, idem(accountId, 'k-expiry', 'fp1', T0)),
        );
        // Exactly at the boundary the record still counts.
        assert.equal(
          (await storage.repository(petRepository).create(rex, idem(accountId, 'k-expiry', 'fp1', T0 + DAY)))
            .kind,
          'replayed',
        );
        const later = T0 + DAY + 1;
        const second = createdPet(
          await storage.repository(petRepository).create(rex, idem(accountId, 'k-expiry', 'fp2', later)),
        );
        assert.notEqual(second.id, first.id);
        assert.deepEqual(
          await storage.repository(petRepository).create(rex, idem(accountId, 'k-expiry', 'fp2', later + 1)),
          {
            kind: 'replayed',
            status: 201,
            body: second,
          },
        );
      });

      test('keys are per account', async () => {
        const mine = createdPet(
          await storage.repository(petRepository).create(rex, idem(accountId, 'k-shared', 'fp1', T0)),
        );
        const theirs = createdPet(
          await storage.repository(petRepository).create(rex, idem(otherAccountId, 'k-shared', 'fp1', T0)),
        );
        assert.notEqual(mine.id, theirs.id);
      });

      test('an unknown category stores no record, so a corrected retry with the key succeeds', async () => {
        assert.deepEqual(
          await storage
            .repository(petRepository)
            .create({ ...rex, categoryId: 999 }, idem(accountId, 'k-badcat', 'fp1', T0)),
          { kind: 'unknown_category' },
        );
        createdPet(
          await storage.repository(petRepository).create(rex, idem(accountId, 'k-badcat', 'fp2', T0 + 1)),
        );
      });

      test('purgeIdempotency deletes records created before the cutoff only', async () => {
        const old = createdPet(
          await storage.repository(petRepository).create(rex, idem(accountId, 'k-purge-old', 'fp', T0 - 10)),
        );
        const kept = createdPet(
          await storage.repository(petRepository).create(rex, idem(accountId, 'k-purge-kept', 'fp', T0)),
        );
        await storage.repository(idempotencyRepository).purge(T0);
        const retryOld = createdPet(
          await storage.repository(petRepository).create(rex, idem(accountId, 'k-purge-old', 'fp', T0 + 1)),
        );
        assert.notEqual(retryOld.id, old.id);
        assert.deepEqual(
          await storage.repository(petRepository).create(rex, idem(accountId, 'k-purge-kept', 'fp', T0 + 1)),
          {
            kind: 'replayed',
            status: 201,
            body: kept,
          },
        );
      });

      test('20 concurrent requests with one key create exactly one pet', async () => {
        const countBefore = (await listAll(storage)).length;
        const results = await Promise.all(
          Array.from({ length: 20 }, () =>
            storage.repository(petRepository).create(rex, idem(accountId, 'k-race', 'fp', T0)),
          ),
        );
        const created = results.filter((r) => r.kind === 'created');
        assert.equal(created.length, 1, JSON.stringify(results));
        const pet = createdPet(created[0]!);
        for (const r of results) {
          if (r.kind === 'replayed') assert.deepEqual(r.body, pet);
          else assert.ok(r.kind === 'created' || r.kind === 'idempotency_in_progress', JSON.stringify(r));
        }
        assert.equal((await listAll(storage)).length, countBefore + 1);
        // Once the first has committed, every retry replays.
        assert.deepEqual(
          await storage.repository(petRepository).create(rex, idem(accountId, 'k-race', 'fp', T0 + 1)),
          {
            kind: 'replayed',
            status: 201,
            body: pet,
          },
        );
      });

      test('concurrent creations commit independently: one that fails takes none of the others down', async () => {
        const countBefore = (await listAll(storage)).length;
        // A name the database itself refuses (NOT NULL): storage-level input the API would never pass.
        const broken = { ...rex, name: null as unknown as string };
        const settled = await Promise.allSettled([
          storage.repository(petRepository).create(rex),
          storage.repository(petRepository).create({ ...rex, categoryId: 999_999 }),
          storage.repository(petRepository).create(broken),
          storage.repository(petRepository).create(rex, idem(accountId, 'k-batch', 'fp', T0)),
          storage.repository(petRepository).create(rex, idem(accountId, 'k-batch', 'fp', T0)),
          storage.repository(petRepository).create(rex),
        ]);
        assert.equal(settled[2]!.status, 'rejected', 'the broken creation rejects');
        const results = settled.map((r) => (r.status === 'fulfilled' ? r.value : undefined));
        assert.equal(results[1]?.kind, 'unknown_category');
        const created = results.filter((r) => r?.kind === 'created').map((r) => createdPet(r!));
        const sameKey = [results[3], results[4]];
        // One of the two with the same key creates; the other replays it (or, on PostgreSQL, may find it
        // still in progress).
        assert.equal(sameKey.filter((r) => r?.kind === 'created').length, 1, JSON.stringify(sameKey));
        assert.ok(
          sameKey.every(
            (r) => r?.kind === 'created' || r?.kind === 'replayed' || r?.kind === 'idempotency_in_progress',
          ),
          JSON.stringify(sameKey),
        );
        assert.equal(created.length, 3, JSON.stringify(results));
        const all = await listAll(storage);
        assert.equal(all.length, countBefore + 3, 'exactly the acknowledged pets exist');
        for (const pet of created)
          assert.deepEqual((await storage.repository(petRepository).get(pet.id))?.pet, pet);
      });

      test('concurrent requests with different keys all create', async () => {
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            storage.repository(petRepository).create(rex, idem(accountId, `k-many-${i}`, 'fp', T0)),
          ),
        );
        const ids = results.map((r) => createdPet(r).id);
        assert.equal(new Set(ids).size, 20);
      });
    });

    describe('accounts', () => {
      test('a new account defaults to free; the plan changes on upsert and is kept when omitted', async () => {
        const before = await storage.repository(accountRepository).countAccounts();
        const created = await storage.repository(accountRepository).upsertAccount({ name: 'acme' }, T0);
        assert.deepEqual(created, {
          id: created.id,
          name: 'acme',
          plan: 'free',
          ...PLAN_QUOTAS.free,
          banLiftedAt: null,
        });
        assert.ok(Number.isSafeInteger(created.id) && created.id > 0);
        assert.equal(await storage.repository(accountRepository).countAccounts(), before + 1);

        const pro = await storage
          .repository(accountRepository)
          .upsertAccount({ name: 'acme', plan: 'pro' }, T0 + 1);
        assert.deepEqual(pro, { ...created, plan: 'pro', ...PLAN_QUOTAS.pro });
        assert.deepEqual(
          await storage.repository(accountRepository).upsertAccount({ name: 'acme' }, T0 + 2),
          pro,
        );
        assert.deepEqual(await storage.repository(accountRepository).findAccount('acme'), pro);
        assert.equal(await storage.repository(accountRepository).countAccounts(), before + 1);
      });

      test('enterprise quotas are custom and survive upserts that omit them', async () => {
        const ent = await storage
          .repository(accountRepository)
          .upsertAccount({ name: 'bigco', plan: 'enterprise', perMinute: 5000, perDay: 9_000_000 }, T0);
        assert.equal(ent.plan, 'enterprise');
        assert.deepEqual([ent.perMinute, ent.perDay], [5000, 9_000_000]);
        assert.deepEqual(
          await storage.repository(accountRepository).upsertAccount({ name: 'bigco' }, T0),
          ent,
        );
        assert.deepEqual(
          await storage
            .repository(accountRepository)
            .upsertAccount({ name: 'bigco', perDay: 10_000_000 }, T0),
          {
            ...ent,
            perDay: 10_000_000,
          },
        );
        // Leaving enterprise applies the fixed plan's quotas.
        assert.deepEqual(
          await storage.repository(accountRepository).upsertAccount({ name: 'bigco', plan: 'business' }, T0),
          {
            ...ent,
            plan: 'business',
            ...PLAN_QUOTAS.business,
          },
        );
        // Entering enterprise without numbers starts from business quotas.
        const plain = await storage
          .repository(accountRepository)
          .upsertAccount({ name: 'newent', plan: 'enterprise' }, T0);
        assert.deepEqual(
          [plain.perMinute, plain.perDay],
          [PLAN_QUOTAS.business.perMinute, PLAN_QUOTAS.business.perDay],
        );
      });

      test('concurrent upserts of one new account create it once', async () => {
        const results = await Promise.all(
          Array.from({ length: 10 }, () =>
            storage.repository(accountRepository).upsertAccount({ name: 'racer', plan: 'pro' }, T0),
          ),
        );
        assert.equal(new Set(results.map((a) => a.id)).size, 1);
        assert.deepEqual(await storage.repository(accountRepository).findAccount('racer'), results[0]);
      });

      test('findAccount of an unknown name is undefined', async () => {
        assert.equal(await storage.repository(accountRepository).findAccount('nobody-here'), undefined);
      });

      test('liftBan records the time, and answers false for an unknown account', async () => {
        await storage.repository(accountRepository).upsertAccount({ name: 'banned' }, T0);
        assert.equal(await storage.repository(accountRepository).liftBan('banned', T0 + 5), true);
        assert.equal(
          (await storage.repository(accountRepository).findAccount('banned'))?.banLiftedAt,
          T0 + 5,
        );
        assert.equal(await storage.repository(accountRepository).liftBan('nobody-here', T0), false);
      });
    });

    describe('keys', () => {
      let accountId: number;
      before(async () => {
        accountId = (
          await storage.repository(accountRepository).upsertAccount({ name: 'keyholder', plan: 'pro' }, T0)
        ).id;
        await storage.repository(accountRepository).upsertAccount({ name: 'keyless' }, T0);
      });

      test('create, list, find by hash', async () => {
        await storage
          .repository(accountRepository)
          .createKey(accountId, { id: 'key_b', hash: 'hash-b', hint: 'pas_bbb…', expiresAt: null }, T0 + 2);
        await storage
          .repository(accountRepository)
          .createKey(
            accountId,
            { id: 'key_a', hash: 'hash-a', hint: 'pas_aaa…', expiresAt: T0 + DAY, scopes: ['pets:read'] },
            T0 + 1,
          );
        await storage
          .repository(accountRepository)
          .createKey(accountId, { id: 'key_C', hash: 'hash-c', hint: 'pas_ccc…', expiresAt: null }, T0 + 2);
        const listed = await storage.repository(accountRepository).listKeys('keyholder');
        assert.deepEqual(listed, [
          {
            id: 'key_a',
            account: 'keyholder',
            hint: 'pas_aaa…',
            createdAt: T0 + 1,
            expiresAt: T0 + DAY,
            revokedAt: null,
            scopes: ['pets:read'],
          },
          // Same creation time: ordered by id, byte-wise (upper case first).
          {
            id: 'key_C',
            account: 'keyholder',
            hint: 'pas_ccc…',
            createdAt: T0 + 2,
            expiresAt: null,
            revokedAt: null,
            scopes: null,
          },
          {
            id: 'key_b',
            account: 'keyholder',
            hint: 'pas_bbb…',
            createdAt: T0 + 2,
            expiresAt: null,
            revokedAt: null,
            scopes: null,
          },
        ]);
        assert.deepEqual(await storage.repository(accountRepository).listKeys('keyless'), []);
        assert.deepEqual(await storage.repository(accountRepository).listKeys('nobody-here'), []);
        const everything = await storage.repository(accountRepository).listKeys();
        assert.ok(listed.every((k) => everything.some((e) => e.id === k.id)));

        const principal = await storage.repository(accountRepository).findKeyByHash('hash-a');
        assert.deepEqual(principal, {
          keyId: 'key_a',
          expiresAt: T0 + DAY,
          revokedAt: null,
          scopes: new Set(['pets:read']),
          account: await storage.repository(accountRepository).findAccount('keyholder'),
        });
        assert.equal(await storage.repository(accountRepository).findKeyByHash('no-such-hash'), undefined);
      });

      test('findKeyByHash sees plan changes and lifted bans at once', async () => {
        await storage
          .repository(accountRepository)
          .createKey(accountId, { id: 'key_plan', hash: 'hash-plan', hint: 'pas_ppp…', expiresAt: null }, T0);
        await storage
          .repository(accountRepository)
          .upsertAccount({ name: 'keyholder', plan: 'business' }, T0);
        await storage.repository(accountRepository).liftBan('keyholder', T0 + 9);
        const principal = await storage.repository(accountRepository).findKeyByHash('hash-plan');
        assert.equal(principal?.account.plan, 'business');
        assert.equal(principal?.account.perMinute, PLAN_QUOTAS.business.perMinute);
        assert.equal(principal?.account.banLiftedAt, T0 + 9);
      });

      test('concurrent lookups each get their own key, and a revocation by another instance applies to the next one', async () => {
        const { a, b, close } = await target.createPair();
        try {
          await a.migrate();
          await b.migrate();
          const account = await a.repository(accountRepository).upsertAccount({ name: 'pair' }, T0);
          const hashes = Array.from({ length: 10 }, (_, i) => `pair-hash-${i}`);
          for (const [i, hash] of hashes.entries()) {
            await a
              .repository(accountRepository)
              .createKey(account.id, { id: `key_pair_${i}`, hash, hint: 'pas_…', expiresAt: null }, T0);
          }
          const found = await Promise.all(
            [...hashes, 'pair-missing'].map((h) => a.repository(accountRepository).findKeyByHash(h)),
          );
          assert.deepEqual(
            found.map((p) => p?.keyId),
            [...hashes.map((_, i) => `key_pair_${i}`), undefined],
          );
          // Instance a has now seen (and may remember) key 3; b revokes it, as the CLI would.
          assert.equal(await b.repository(accountRepository).revokeKey('key_pair_3', T0 + 5), true);
          const after = await Promise.all(
            hashes.map((h) => a.repository(accountRepository).findKeyByHash(h)),
          );
          assert.deepEqual(
            after.map((p) => p?.revokedAt),
            hashes.map((_, i) => (i === 3 ? T0 + 5 : null)),
          );
        } finally {
          await close();
        }
      });

      test('revokeKey keeps the first revocation time and answers false for unknown keys', async () => {
        await storage
          .repository(accountRepository)
          .createKey(accountId, { id: 'key_rev', hash: 'hash-rev', hint: 'pas_rrr…', expiresAt: null }, T0);
        assert.equal(await storage.repository(accountRepository).revokeKey('key_rev', T0 + 100), true);
        assert.equal(
          (await storage.repository(accountRepository).findKeyByHash('hash-rev'))?.revokedAt,
          T0 + 100,
        );
        assert.equal(await storage.repository(accountRepository).revokeKey('key_rev', T0 + 200), true);
        assert.equal(
          (await storage.repository(accountRepository).findKeyByHash('hash-rev'))?.revokedAt,
          T0 + 100,
        );
        assert.equal(
          (await storage.repository(accountRepository).listKeys('keyholder')).find((k) => k.id === 'key_rev')
            ?.revokedAt,
          T0 + 100,
        );
        assert.equal(await storage.repository(accountRepository).revokeKey('key_nope', T0), false);
      });
    });

    test('ping resolves', async () => {
      await storage.ping();
    });
  });
}

if (!postgresAvailable) {
  // externalServicesAvailable() has printed why; this keeps the skip visible in the test report too.
  describe('storage contract [postgres]', { skip: 'PostgreSQL or Redis unreachable (see notice)' }, () => {});
  describe('postgres storage specifics', { skip: 'PostgreSQL or Redis unreachable (see notice)' }, () => {});
} else {
  describe('postgres storage specifics', { timeout: 60_000 }, () => {
    const opened: Database[] = [];
    async function open(options: Parameters<typeof createTestPostgresDatabase>[0] = {}): Promise<Database> {
      const storage = await createTestPostgresDatabase(options);
      opened.push(storage);
      return storage;
    }
    after(async () => {
      await Promise.all(opened.map((s) => s.close()));
    });

    test('an unreachable server rejects every call with StorageUnavailableError, without waiting for a timeout', async (t) => {
      const storage = new PostgresDatabase('postgres://postgres@127.0.0.1:1/test?schema=nowhere', {
        poolSize: 2,
        timeoutMs: 1000,
      });
      // The clock stands still: every rejection must come from the refused connection itself.
      t.mock.timers.enable({ apis: ['setTimeout'] });
      try {
        const calls: [string, () => Promise<unknown>][] = [
          ['migrate', () => storage.migrate()],
          ['ping', () => storage.ping()],
          ['listPets', () => storage.repository(petRepository).list({ limit: 10 })],
          ['listPets/status', () => storage.repository(petRepository).list({ status: 'sold', limit: 10 })],
          ['getPet', () => storage.repository(petRepository).get(1)],
          [
            'createPet',
            () => storage.repository(petRepository).create({ name: 'x', categoryId: 1, status: 'sold' }),
          ],
          [
            'createPet/idem',
            () =>
              storage
                .repository(petRepository)
                .create({ name: 'x', categoryId: 1, status: 'sold' }, idem(1, 'k', 'f', T0)),
          ],
          ['seedPets', () => storage.repository(petRepository).seed(10, T0)],
          ['upsertAccount', () => storage.repository(accountRepository).upsertAccount({ name: 'a' }, T0)],
          ['findKeyByHash', () => storage.repository(accountRepository).findKeyByHash('h')],
          ['listKeys', () => storage.repository(accountRepository).listKeys()],
          ['purgeIdempotency', () => storage.repository(idempotencyRepository).purge(T0)],
        ];
        await Promise.all(calls.map(([label, call]) => rejectsUnavailable(call(), label)));
      } finally {
        t.mock.timers.reset();
        await storage.close();
      }
    });

    test('a server that accepts connections but never answers times out within the configured bound', async (t) => {
      // Accepts and never answers: a hung server or a black-holed network.
      const silent = await new TcpProxy({ host: '127.0.0.1', port: 1 }, 'silent').start();
      silent.blackhole();
      const storage = new PostgresDatabase(`postgres://postgres@127.0.0.1:${silent.port}/test`, {
        poolSize: 1,
        timeoutMs: 300,
      });
      t.mock.timers.enable({ apis: ['setTimeout'] });
      try {
        const calls = Promise.all([
          rejectsUnavailable(storage.ping(), 'ping'),
          // Queued behind the first for the single connection slot: bounded as well.
          rejectsUnavailable(
            storage
              .repository(petRepository)
              .create({ name: 'x', categoryId: 1, status: 'sold' }, idem(1, 'k', 'f', T0)),
            'createPet',
          ),
          rejectsUnavailable(storage.migrate(), 'migrate'),
        ]);
        await settleIo();
        // Settled once the configured 300 ms have passed on the clock, and not for any other reason.
        t.mock.timers.tick(300);
        await calls;
      } finally {
        t.mock.timers.reset();
        await storage.close();
        silent.close();
      }
    });

    test('slow queries and an exhausted pool answer StorageUnavailableError within the timeout', async (t) => {
      const schema = uniqueName('pg');
      const owner = await open({ schema });
      await owner.migrate();
      const slow = await open({ schema, poolSize: 1, timeoutMs: 500, dropOnClose: false });
      await withPostgresClient(async (client) => {
        // Hold a lock every read of pets must wait for, standing in for a database that stopped answering.
        await client.query('BEGIN');
        await client.query(`LOCK TABLE "${schema}".pets IN ACCESS EXCLUSIVE MODE`);
        t.mock.timers.enable({ apis: ['setTimeout'] });
        try {
          // The first occupies the only connection until the timeout; the second waits for a connection.
          const calls = Promise.all([
            rejectsUnavailable(slow.repository(petRepository).list({ limit: 5 }), 'slow query'),
            rejectsUnavailable(slow.repository(petRepository).get(1), 'pool exhausted'),
          ]);
          await settleIo();
          // Both are answered once the 500 ms budget has passed on the clock (the server's own
          // statement_timeout, on real time, may answer the first earlier: that is within it too).
          t.mock.timers.tick(500);
          await calls;
        } finally {
          t.mock.timers.reset();
          await client.query('ROLLBACK');
        }
      });
      // The storage recovers as soon as the database does.
      assert.deepEqual(await slow.repository(petRepository).list({ limit: 5 }), []);
    });

    test('connections killed by the server do not crash the process; the pool reconnects', async () => {
      const appName = uniqueName('app');
      const storage = await open({ params: { application_name: appName } });
      await storage.migrate();
      // Open several pooled connections, then have the server terminate them while they sit idle.
      await Promise.all(
        Array.from({ length: 5 }, () => storage.repository(petRepository).list({ limit: 1 })),
      );
      const killed = await withPostgresClient(async (client) => {
        const result = await client.query<{ ok: boolean }>(
          'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1',
          [appName],
        );
        return result.rowCount ?? 0;
      });
      assert.ok(killed > 0, 'expected pooled sessions to terminate');
      // A connection may be handed out before its termination notice has arrived: that call may fail, as
      // unavailable and never otherwise, and the connection is discarded. So at most one call per killed
      // connection fails before one succeeds.
      let failures = 0;
      for (;;) {
        try {
          await storage.ping();
          break;
        } catch (error) {
          assert.ok(error instanceof StorageUnavailableError, String(error));
          assert.ok(++failures <= killed, `${failures} failures for ${killed} killed connections`);
        }
      }
      await storage.ping();
      assert.deepEqual(await storage.repository(petRepository).list({ limit: 1 }), []);
    });

    test('schemas isolate data: two storages on one database do not see each other', async () => {
      const a = await open();
      const b = await open();
      await Promise.all([a.migrate(), b.migrate()]);
      const pet = createdPet(
        await a.repository(petRepository).create({ name: 'Only in A', categoryId: 1, status: 'available' }),
      );
      assert.deepEqual(await a.repository(petRepository).list({ limit: 10 }), [pet]);
      assert.deepEqual(await b.repository(petRepository).list({ limit: 10 }), []);
    });

    test('idempotency locks are per schema: the same account id and key in two schemas do not block', async () => {
      const a = await open();
      const b = await open();
      await Promise.all([a.migrate(), b.migrate()]);
      const [accA, accB] = await Promise.all([
        a.repository(accountRepository).upsertAccount({ name: 'same' }, T0),
        b.repository(accountRepository).upsertAccount({ name: 'same' }, T0),
      ]);
      assert.equal(accA.id, accB.id);
      const pet = { name: 'Twin', categoryId: 1, status: 'available' as const };
      for (let i = 0; i < 5; i++) {
        const results = await Promise.all([
          a.repository(petRepository).create(pet, idem(accA.id, `k${i}`, 'fp', T0)),
          b.repository(petRepository).create(pet, idem(accB.id, `k${i}`, 'fp', T0)),
        ]);
        assert.deepEqual(
          results.map((r) => r.kind),
          ['created', 'created'],
        );
      }
    });

    test('a bad schema name in the URL is refused before connecting', () => {
      for (const bad of ['Upper', 'semi;colon', 'has-dash', '1digit', 'x'.repeat(64), '']) {
        assert.throws(
          () =>
            new PostgresDatabase(
              `postgres://postgres@127.0.0.1:5432/test?schema=${encodeURIComponent(bad)}`,
              {
                poolSize: 1,
                timeoutMs: 100,
              },
            ),
          /invalid schema/,
          bad,
        );
      }
    });

    test("bigint ids are parsed to numbers per pool, leaving pg's global parser alone", async () => {
      const storage = await open();
      await storage.migrate();
      assert.equal(await storage.repository(accountRepository).countAccounts(), 0);
      assert.equal(typeof (await storage.repository(accountRepository).countAccounts()), 'number');
      const parse = pg.types.getTypeParser(20) as (value: string) => unknown;
      assert.equal(parse('42'), '42');
    });

    // How fast is a benchmark's business (bench/); here: the million arrive, and deep pages stay cheap.
    test('1,000,000 demo pets seed in one call', { timeout: 120_000 }, async () => {
      const storage = await open();
      await storage.migrate();
      assert.equal(await storage.repository(petRepository).seed(1_000_000, T0), 1_000_000);
      // Deep keyset pages stay cheap.
      const page = await storage
        .repository(petRepository)
        .list({ status: 'pending', afterId: 999_000, limit: 5 });
      assert.deepEqual(
        page.map((p) => p.name),
        page.map((p) => demoPet(p.id - 1).name),
      );
      assert.equal(page.length, 5);
    });
  });
}
