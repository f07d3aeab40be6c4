/**
 * The runner for repository contract suites (test/contracts/<module>.contract.test.ts). A module's contract
 * is written once, as `contractSuite(name, (target) => { ... })`, and runs against every backend: SQLite
 * always, PostgreSQL when it answers (mandatory under CI=true, where an unreachable server fails the file).
 * Guarantees the contract leaves to one implementation (timeouts, pool behaviour, schema isolation) go in
 * `postgresSuite`, in the file of the module they are about. Everything a suite opens is closed, and its
 * database removed, after the suite.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { after, describe } from 'node:test';
import { type Database, StorageUnavailableError } from '../../src/db/database.js';
import { PostgresDatabase } from '../../src/db/postgres.js';
import { SqliteDatabase } from '../../src/db/sqlite.js';
import { externalServicesAvailable, sqliteMemory, uniqueName } from '../helpers.js';
import {
  createTestPostgresDatabase,
  dropSchema,
  postgresUrl,
  type TestPostgresOptions,
} from '../../support/postgres.js';

/** The fixed clock contract suites pass as `now`: repositories take time as an argument, never read it. */
export const T0 = Date.UTC(2026, 5, 15, 12, 0, 0);
export const DAY = 24 * 3600_000;

/** Two instances on one new database, as two processes would be. */
export interface DatabasePair {
  a: Database;
  b: Database;
  /** One more instance on the same database; the caller closes it before `close`. */
  reopen(): Database;
  /** Closes both instances and removes the database. */
  close(): Promise<void>;
}

export interface ContractTarget {
  name: 'sqlite' | 'postgres';
  /** A Database on a new, empty database, not yet migrated; closed and removed after the suite. */
  create(): Promise<Database>;
  /** A migrated Database on a new database of its own; closed and removed after the suite. */
  fresh(): Promise<Database>;
  /** Two instances on one new database (not migrated); the test closes them. */
  createPair(): Promise<DatabasePair>;
}

interface Backend {
  name: ContractTarget['name'];
  create(): Promise<Database>;
  createPair(): Promise<DatabasePair>;
}

const sqliteBackend: Backend = {
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

const postgresBackend: Backend = {
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
// externalServicesAvailable() has printed why; the skipped suites keep it visible in the test report too.
const SKIP_POSTGRES = 'PostgreSQL or Redis unreachable (see notice)';

/**
 * Runs `body` once per backend, inside `describe('<name> contract [<backend>]')`. The body declares its
 * tests (and before hooks) as usual and gets its databases from the target.
 */
export function contractSuite(
  name: string,
  body: (target: ContractTarget) => void,
  options: { timeout?: number } = {},
): void {
  for (const backend of [sqliteBackend, postgresBackend]) {
    const title = `${name} contract [${backend.name}]`;
    if (backend === postgresBackend && !postgresAvailable) {
      describe(title, { skip: SKIP_POSTGRES }, () => {});
      continue;
    }
    describe(title, { timeout: options.timeout ?? 120_000 }, () => {
      const opened: Database[] = [];
      after(async () => {
        await Promise.all(opened.map((d) => d.close()));
      });
      async function create(): Promise<Database> {
        const database = await backend.create();
        opened.push(database);
        return database;
      }
      body({
        name: backend.name,
        create,
        async fresh() {
          const database = await create();
          await database.migrate();
          return database;
        },
        createPair: () => backend.createPair(),
      });
    });
  }
}

export interface PostgresTarget {
  /** A PostgresDatabase in a schema of its own (not migrated), closed after the suite. */
  open(options?: TestPostgresOptions): Promise<Database>;
}

/** PostgreSQL-only guarantees, in `describe('<name> [postgres]')`; skipped visibly when it is unreachable. */
export function postgresSuite(
  name: string,
  body: (target: PostgresTarget) => void,
  options: { timeout?: number } = {},
): void {
  const title = `${name} [postgres]`;
  if (!postgresAvailable) {
    describe(title, { skip: SKIP_POSTGRES }, () => {});
    return;
  }
  describe(title, { timeout: options.timeout ?? 60_000 }, () => {
    const opened: Database[] = [];
    after(async () => {
      await Promise.all(opened.map((d) => d.close()));
    });
    body({
      async open(openOptions = {}) {
        const database = await createTestPostgresDatabase(openOptions);
        opened.push(database);
        return database;
      },
    });
  });
}

/** Lets I/O callbacks and promise chains run, without moving a mocked clock. */
export async function settleIo(): Promise<void> {
  for (let i = 0; i < 5; i++) await nextTurn();
}

export async function rejectsUnavailable(promise: Promise<unknown>, label: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(
      error instanceof StorageUnavailableError,
      `${label}: expected StorageUnavailableError, got ${String(error)}`,
    );
    return true;
  });
}
