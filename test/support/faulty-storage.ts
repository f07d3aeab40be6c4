/**
 * Fault injection into a real storage, the one copy the suites share: an app over a real database whose
 * storage methods can be made to fail one at a time (every call that is not faulted reaches the database),
 * and faults inside a real write transaction, after its real insert, where a failure must roll back.
 */
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import type { CounterStore } from '../../src/ratelimit/store.js';
import type { PostgresStorage } from '../../src/storage/postgres.js';
import type { SqliteStorage } from '../../src/storage/sqlite.js';
import type { Storage } from '../../src/storage/storage.js';
import { defaultTestConfig, issueKey, TestClock, type Backend } from '../helpers.js';

export type Faults = Partial<Record<keyof Storage, () => Promise<never>>>;

export interface FaultyApp {
  app: FastifyInstance;
  /** The real storage underneath, for checking what was (not) written and for in-transaction faults. */
  storage: Storage;
  key: string;
  /** Storage methods to replace, looked up on every call. */
  faults: Faults;
  close(): Promise<void>;
}

/** The storage as the app sees it: each method is the fault set for it at call time, or the real one. */
export function withFaults(storage: Storage, faults: () => Faults): Storage {
  return new Proxy(storage, {
    get(target, property) {
      const fault = typeof property === 'string' ? faults()[property as keyof Storage] : undefined;
      if (fault) return fault;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** An app over a migrated storage of `backend`, with one business account and its key. */
export async function faultyApp(backend: Backend, initialFaults: Faults = {}): Promise<FaultyApp> {
  const storage = await backend.createStorage();
  await storage.migrate();
  const counterStore: CounterStore = await backend.createCounterStore();
  const clock = new TestClock();
  const account = await storage.upsertAccount({ name: 'faulty', plan: 'business' }, clock.now);
  const { key } = await issueKey(storage, account.id, clock.now);

  const state: FaultyApp = {
    app: undefined as unknown as FastifyInstance,
    storage,
    key,
    faults: initialFaults,
    async close() {
      await state.app.close();
      await counterStore.close();
      await storage.close();
    },
  };
  state.app = await buildApp({
    config: defaultTestConfig,
    storage: withFaults(storage, () => state.faults),
    counterStore,
    clock: clock.fn,
  });
  await state.app.ready();
  return state;
}

/**
 * Makes the next pet creations fail inside their write transaction, after the pet row has really been
 * inserted (on PostgreSQL, the transactional path is the one with an Idempotency-Key), until the returned
 * function is called.
 */
export function failAfterPetInsert(storage: Storage, error: () => Error): () => void {
  const hooks = (storage as SqliteStorage | PostgresStorage).hooks;
  hooks.afterPetInsert = () => {
    throw error();
  };
  return () => {
    delete hooks.afterPetInsert;
  };
}
