/**
 * Test harness: the backends every behavioural suite runs against, and an app factory with an
 * injectable clock and real keys minted by the same function the CLI's `keys create` calls (mintKey).
 *
 * Backends: `sqlite+memory` always; `postgres+redis` when PostgreSQL (127.0.0.1:5432/test) and Redis
 * (127.0.0.1:6379) answer. When they do not, that backend is skipped with a printed notice, except under
 * CI=true, where it is mandatory and an unreachable server fails the run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { buildApp, type AppConfig } from '../src/app.js';
import type { Clock } from '../src/clock.js';
import type { Database } from '../src/db/database.js';
import { SqliteDatabase } from '../src/db/sqlite.js';
import { mintKey } from '../src/modules/accounts/mint.js';
import type { Scope } from '../src/modules/accounts/scopes.js';
import {
  accountRepository,
  type AccountInput,
  type AccountRepository,
} from '../src/modules/accounts/repository.js';
import { petRepository, type PetRepository } from '../src/modules/pets/repository.js';
import { MemoryCounterStore } from '../src/ratelimit/memory.js';
import type { CounterStore } from '../src/ratelimit/store.js';
import { externalServicesAvailable } from '../support/services.js';

export { externalServicesAvailable, IN_CI, PG_URL, REDIS_URL, uniqueName } from '../support/services.js';

export interface Backend {
  name: string;
  /** A database on a new, empty store (not yet migrated); close() removes it. */
  createDatabase(): Promise<Database>;
  /** Counters for the database with this installation id (Database.installationId); a random one if omitted. */
  createCounterStore(installationId?: string): Promise<CounterStore>;
}

export const sqliteMemory: Backend = {
  name: 'sqlite+memory',
  async createDatabase() {
    const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-test-'));
    const database = new SqliteDatabase(join(dir, 'test.db'));
    const close = database.close.bind(database);
    database.close = async () => {
      await close();
      rmSync(dir, { recursive: true, force: true });
    };
    return database;
  },
  async createCounterStore() {
    return new MemoryCounterStore();
  },
};

/** The scale-out configuration: each context gets its own PostgreSQL schema and Redis key prefix. */
export const postgresRedis: Backend = {
  name: 'postgres+redis',
  async createDatabase() {
    const { createTestPostgresDatabase } = await import('../support/postgres.js');
    return createTestPostgresDatabase();
  },
  async createCounterStore(installationId) {
    const { createTestRedisStore } = await import('../support/redis.js');
    return createTestRedisStore({ installationId });
  },
};

/** Every backend the behavioural suites must pass on, in this environment. */
export async function backends(): Promise<Backend[]> {
  return (await externalServicesAvailable()) ? [sqliteMemory, postgresRedis] : [sqliteMemory];
}

/** A clock tests move by hand. Starts mid-minute on a fixed day, well before getPet's sunset. */
export class TestClock {
  constructor(public now = Date.UTC(2026, 5, 15, 12, 0, 30)) {}
  readonly fn: Clock = () => this.now;
  advance(ms: number): void {
    this.now += ms;
  }
  set(at: number): void {
    this.now = at;
  }
}

export const defaultTestConfig: AppConfig = {
  unauthenticatedPerMinute: 60,
  banThresholdFactor: 1,
  banSeconds: 900,
  trustProxy: false,
  authFailuresPerMinute: 30,
  corsOrigins: [],
};

export interface TestContext {
  app: FastifyInstance;
  database: Database;
  /** The accounts and pets repositories of `database`. */
  accounts: AccountRepository;
  pets: PetRepository;
  counterStore: CounterStore;
  clock: TestClock;
  /** Creates an account (if new) and a fresh key for it (every scope unless `scopes`); returns the secret. */
  createKey(
    account?: Partial<AccountInput> & { expiresAt?: number | null; scopes?: readonly Scope[] | null },
  ): Promise<{ key: string; id: string }>;
  close(): Promise<void>;
}

export async function createTestContext(
  backend: Backend,
  options: { config?: Partial<AppConfig>; clock?: TestClock } = {},
): Promise<TestContext> {
  const database = await backend.createDatabase();
  await database.migrate();
  const accounts = database.repository(accountRepository);
  const counterStore = await backend.createCounterStore(await database.installationId());
  const clock = options.clock ?? new TestClock();
  const app = await buildApp({
    config: { ...defaultTestConfig, ...options.config },
    database,
    counterStore,
    clock: clock.fn,
  });
  await app.ready();
  let accountCounter = 0;
  return {
    app,
    database,
    accounts,
    pets: database.repository(petRepository),
    counterStore,
    clock,
    async createKey(input = {}) {
      const account = await accounts.upsertAccount(
        {
          name: input.name ?? `account-${++accountCounter}-${randomBytes(3).toString('hex')}`,
          plan: input.plan ?? 'business',
          perMinute: input.perMinute,
          perDay: input.perDay,
        },
        clock.now,
      );
      return mintKey(accounts, account.id, clock.now, input.expiresAt ?? null, input.scopes ?? null);
    },
    async close() {
      await app.close();
      await counterStore.close();
      await database.close();
    },
  };
}

export function bearer(key: string): { authorization: string } {
  return { authorization: `Bearer ${key}` };
}

/** How many pets the database holds, paging through all of them. */
export async function countPets(database: Database): Promise<number> {
  let count = 0;
  let afterId: number | undefined;
  for (;;) {
    const page = await database.repository(petRepository).list({ limit: 1000, afterId });
    count += page.length;
    if (page.length < 1000) return count;
    afterId = page.at(-1)!.id;
  }
}

/** Parses `printRoutes({ commonPrefix: false })` into full paths and their methods. */
export function routerTable(printed: string): { path: string; methods: string[] }[] {
  const out: { path: string; methods: string[] }[] = [];
  const stack: string[] = [];
  for (const line of printed.split('\n')) {
    const match = /^([│ ]*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    stack.length = depth;
    const path = (stack[depth - 1] ?? '') + match[2]!;
    stack[depth] = path;
    if (match[3]) out.push({ path, methods: match[3].split(',').map((m) => m.trim()) });
  }
  return out;
}
