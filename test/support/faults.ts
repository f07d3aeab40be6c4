/**
 * The one fault injection for tests: an app over a real database whose repository methods (or the
 * database's own, e.g. `ping`) can be made to fail, looked up on every call, and faults inside a real write
 * (a hook after its real insert, or the database refusing a row), where a failure must roll back. Fault
 * injection, not a mock: every call that is not faulted reaches the real database.
 */
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp, type AppConfig } from '../../src/app.js';
import type { Database, RepositoryFactory } from '../../src/db/database.js';
import { PostgresDatabase } from '../../src/db/postgres.js';
import { SqliteDatabase } from '../../src/db/sqlite.js';
import { mintKey } from '../../src/modules/accounts/mint.js';
import { accountRepository } from '../../src/modules/accounts/repository.js';
import { eventRepository, type NewEvent } from '../../src/modules/events/index.js';
import { orderRepository } from '../../src/modules/orders/repository.js';
import type { PostgresOrderRepository } from '../../src/modules/orders/repository.postgres.js';
import type { SqliteOrderRepository } from '../../src/modules/orders/repository.sqlite.js';
import { petRepository } from '../../src/modules/pets/repository.js';
import type { PostgresPetRepository } from '../../src/modules/pets/repository.postgres.js';
import type { SqlitePetRepository } from '../../src/modules/pets/repository.sqlite.js';
import { defaultTestConfig, TestClock, type Backend } from '../helpers.js';

/**
 * What to break: a repository (by its factory) or the database itself, the method name, and what runs
 * instead (it gets the call's arguments, so a fault may also hold a call and then make it for real).
 */
export type Fault = [
  target: RepositoryFactory<unknown> | 'database',
  method: string,
  fail: (...args: never[]) => Promise<unknown>,
];

export interface FaultyApp {
  app: FastifyInstance;
  /** The real database underneath, for checking what was (not) written. */
  database: Database;
  /** A valid key of a business account. */
  key: string;
  /** The app's clock. */
  clock: TestClock;
  /** Replaces the current faults (none: everything works again). */
  setFaults(faults: Fault[]): void;
  close(): Promise<void>;
}

function bound(target: object, property: string | symbol): unknown {
  const value: unknown = Reflect.get(target, property, target);
  return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
}

export async function faultyApp(
  backend: Backend,
  faults: Fault[] = [],
  config: Partial<AppConfig> = {},
): Promise<FaultyApp> {
  const database = await backend.createDatabase();
  await database.migrate();
  const counterStore = await backend.createCounterStore();
  const clock = new TestClock();
  const accounts = database.repository(accountRepository);
  const account = await accounts.upsertAccount({ name: 'faulty', plan: 'business' }, clock.now);
  const { key } = await mintKey(accounts, account.id, clock.now);

  let current = faults;
  const faultFor = (target: Fault[0], property: string | symbol): Fault[2] | undefined =>
    current.find(([t, method]) => t === target && method === property)?.[2];

  const proxies = new Map<RepositoryFactory<unknown>, unknown>();
  const wrapped = new Proxy(database, {
    get(target, property) {
      if (property === 'repository') {
        return (factory: RepositoryFactory<unknown>) => {
          let proxy = proxies.get(factory);
          if (!proxy) {
            proxy = new Proxy(target.repository(factory) as object, {
              get: (repo, method) => faultFor(factory, method) ?? bound(repo, method),
            });
            proxies.set(factory, proxy);
          }
          return proxy;
        };
      }
      return faultFor('database', property) ?? bound(target, property);
    },
  });
  const app = await buildApp({
    config: { ...defaultTestConfig, ...config },
    database: wrapped,
    counterStore,
    clock: clock.fn,
  });
  await app.ready();
  return {
    app,
    database,
    key,
    clock,
    setFaults(faults) {
      current = faults;
    },
    async close() {
      await app.close();
      await counterStore.close();
      await database.close();
    },
  };
}

/**
 * Makes the next pet creations of `database` that run in a transaction of their own fail inside it, after the
 * pet row and its event have really been inserted, until the returned function is called; a creation for
 * which `error` returns undefined goes through. That is every creation on SQLite, and on PostgreSQL those with
 * an Idempotency-Key: a turn's creations without one are one statement there, reached by refusePetEvents.
 * The app over `database` (or a faultyApp's) uses the same repository instance.
 */
export function failAfterPetInsert(database: Database, error: () => Error | undefined): () => void {
  const { hooks } = database.repository(petRepository) as SqlitePetRepository | PostgresPetRepository;
  hooks.afterInsert = () => {
    const failure = error();
    if (failure) throw failure;
  };
  return () => {
    delete hooks.afterInsert;
  };
}

/**
 * Makes the database itself refuse the event of every pet created with this name (a trigger raising on its
 * insert into events), until the returned function is called. It strikes where a creation's event is
 * written, after the pet's own row, inside the same write: one statement for a turn's creations on
 * PostgreSQL, a savepoint of the turn's transaction on SQLite, a transaction of its own for one run alone.
 */
export async function refusePetEvents(database: Database, name: string): Promise<() => Promise<void>> {
  assert.match(name, /^[A-Za-z0-9-]+$/, 'a name that needs no quoting in SQL or JSON');
  const named = `NEW.payload LIKE '%"name":"${name}"%'`;
  if (database instanceof SqliteDatabase) {
    database.db.exec(`CREATE TRIGGER test_refuse_event BEFORE INSERT ON events WHEN ${named}
      BEGIN SELECT RAISE(ABORT, 'injected: event refused'); END`);
    return async () => {
      database.db.exec('DROP TRIGGER test_refuse_event');
    };
  }
  assert.ok(database instanceof PostgresDatabase, 'unknown database');
  await database.execute({
    text: `CREATE FUNCTION test_refuse_event() RETURNS trigger LANGUAGE plpgsql
        AS $$ BEGIN RAISE EXCEPTION 'injected: event refused'; END $$;
      CREATE TRIGGER test_refuse_event BEFORE INSERT ON events FOR EACH ROW WHEN (${named})
        EXECUTE FUNCTION test_refuse_event()`,
  });
  return async () => {
    await database.execute({
      text: 'DROP TRIGGER test_refuse_event ON events; DROP FUNCTION test_refuse_event()',
    });
  };
}

/**
 * Makes the next pet changes and removals (`pets`) or order placements and actions (`orders`) of `database`
 * fail inside their write transaction, after their rows and events have really been written, until the
 * returned function is called; a write for which `error` returns undefined goes through.
 */
export function failAfterWrite(
  database: Database,
  target: 'pets' | 'orders',
  error: () => Error | undefined,
): () => void {
  const repository: unknown =
    target === 'pets' ? database.repository(petRepository) : database.repository(orderRepository);
  const { hooks } = repository as
    SqlitePetRepository | PostgresPetRepository | SqliteOrderRepository | PostgresOrderRepository;
  hooks.afterWrite = () => {
    const failure = error();
    if (failure) throw failure;
  };
  return () => {
    delete hooks.afterWrite;
  };
}

/**
 * Makes the next events appended through `database`'s event appender (the one every repository of it
 * appends with, inside its own write transaction, after its rows are written) fail with what `error`
 * returns for the event, until the returned function is called; an event for which it returns undefined
 * is appended for real.
 */
export function failEventAppend(
  database: Database,
  error: (event: NewEvent) => Error | undefined,
): () => void {
  const appender = database.repository(eventRepository) as unknown as {
    append: (...args: unknown[]) => unknown;
  };
  const own = Object.hasOwn(appender, 'append');
  const real = appender.append;
  appender.append = (...args: unknown[]) => {
    // SQLite's append(event), PostgreSQL's append(client, event).
    const failure = error(args.at(-1) as NewEvent);
    if (failure) throw failure;
    return real.apply(appender, args);
  };
  return () => {
    if (own) appender.append = real;
    else delete (appender as { append?: unknown }).append;
  };
}
