/**
 * A service of its own for the store-order scenarios: a fresh database (SQLite file, or a PostgreSQL schema
 * with a Redis prefix), demo pets seeded, MAX_OPEN_ORDERS raised so one bench account can hold every order
 * the run places, and the pets that are `available` handed out one per request.
 */
import { FreshRequests, type Load } from './load.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REDIS_URL, uniqueName } from '../../support/services.js';
import { terminate, type Server } from '../../support/processes.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/index.js';
import { mintKey } from '../../src/modules/accounts/mint.js';
import { accountRepository } from '../../src/modules/accounts/repository.js';
import type { Context } from './scenario.js';
import { createKey, logFile, seed, trimLog } from './service.js';

export interface OrdersService {
  server: Server;
  /** A key with every scope (orders:manage included). */
  key: string;
  /** The next of ORDER_ACCOUNTS keys, each its own account, so no account's open orders pile up. */
  nextKey(): string;
  /** The next seeded pet that is still `available` (demo pets cycle available, available, pending, sold). */
  nextAvailablePet(): number;
  /** Order placements, each from the next account on the next available pet, each sent once. */
  placements: FreshRequests;
  /** Further instances on the same database (startOrdersService's `instances` − 1). */
  others: Server[];
  cleanup(): Promise<void>;
}

/**
 * Accounts the placing requests rotate through: one account's orders are serialised (its open-order count),
 * as for a real partner, so the load comes from many, as in production. Enough that each holds a handful of
 * open orders over a run (a SQLite run places ~100,000), as MAX_OPEN_ORDERS's default of 5 would have it:
 * with a few accounts holding a hundred open orders each, every placement counted them all.
 */
export const ORDER_ACCOUNTS = { sqlite: 30_000, postgres: 3_000 } as const;

/** Enterprise accounts with a key each, made in-process the way `keys create` makes them (far faster). */
async function mintAccounts(env: Record<string, string>, count: number): Promise<string[]> {
  const database = await openDatabase(loadConfig(env));
  try {
    const accounts = database.repository(accountRepository);
    const keys: string[] = [];
    const now = Date.now();
    for (let i = 0; i < count; i++) {
      const account = await accounts.upsertAccount(
        { name: `bench-partner-${i}`, plan: 'enterprise', perMinute: 1_000_000_000, perDay: 1_000_000_000 },
        now,
      );
      keys.push((await mintKey(accounts, account.id, now)).key);
    }
    return keys;
  } finally {
    await database.close();
  }
}

export async function startOrdersService(
  ctx: Context,
  backend: 'sqlite' | 'postgres',
  pets: number,
  /** Instances of the service on the one database (and Redis): `server` and `others`. */
  instances = 1,
): Promise<OrdersService> {
  const cleanups: (() => Promise<void>)[] = [];
  const cleanup = async (): Promise<void> => {
    for (const step of cleanups.reverse()) await step().catch((e: Error) => ctx.log(`cleanup: ${e.message}`));
  };
  let env: Record<string, string>;
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-bench-orders-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    env = { DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}` };
  } else {
    const { dropSchema, postgresUrl } = await import('../../support/postgres.js');
    const { deleteKeys } = await import('../../support/redis.js');
    const schema = uniqueName('bench_orders');
    cleanups.push(() => dropSchema(schema));
    cleanups.push(async () => {
      await deleteKeys(REDIS_URL, `${schema}:`);
    });
    env = { DATABASE_URL: postgresUrl(schema), REDIS_URL, REDIS_PREFIX: `${schema}:` };
  }
  Object.assign(env, { LOG_LEVEL: 'info', NODE_OPTIONS: '', MAX_OPEN_ORDERS: '1000000' });
  try {
    const key = await createKey(env, 'bench-orders');
    await seed(env, pets);
    const keys = await mintAccounts(env, ORDER_ACCOUNTS[backend]);
    let nextKey = 0;
    const logName = `service-orders-${backend}`;
    const servers: Server[] = [];
    for (let i = 0; i < instances; i++) {
      const name = i === 0 ? logName : `${logName}-${i + 1}`;
      const server = await ctx.serve(
        `service (orders, ${backend}${i ? `, instance ${i + 1}` : ''})`,
        name,
        env,
      );
      servers.push(server);
      cleanups.push(async () => {
        await terminate(server);
        trimLog(logFile(name));
      });
    }
    let next = 0;
    const nextAvailablePet = (): number => {
      // Ids 1..pets in seeding order; demo pet i (0-based) is available when i % 4 is 0 or 1.
      const i = Math.floor(next / 2) * 4 + (next % 2);
      next++;
      if (i >= pets) throw new Error(`the ${pets} seeded pets have no available one left`);
      return i + 1;
    };
    const nextKeyOf = (): string => keys[nextKey++ % keys.length]!;
    return {
      server: servers[0]!,
      others: servers.slice(1),
      key,
      nextKey: nextKeyOf,
      nextAvailablePet,
      placements: new FreshRequests(() => ({
        method: 'POST',
        path: '/v1/store/orders',
        headers: { authorization: `Bearer ${nextKeyOf()}` },
        body: JSON.stringify({ petId: nextAvailablePet() }),
      })),
      cleanup,
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/**
 * The placeOrder load, on any backend: every request from the next account on the next available pet. The
 * requests come from one FreshRequests per service, so loads on several instances of it never share a pet.
 */
export function placeOrderLoad(s: OrdersService, server: Server = s.server): Load {
  return {
    pid: server.child.pid!,
    url: server.origin,
    headers: { 'content-type': 'application/json' },
    fresh: s.placements,
  };
}

/** Orders placed through the API by the key's account before a listOrders measurement. */
export const LIST_ORDERS = 2_000;

/** startOrdersService, then LIST_ORDERS orders placed through the API (the listOrders scenarios). */
export async function startListOrdersService(
  ctx: Context,
  backend: 'sqlite' | 'postgres',
  pets: number,
): Promise<OrdersService> {
  const s = await startOrdersService(ctx, backend, pets);
  try {
    for (let i = 0; i < LIST_ORDERS; i++) {
      const res = await fetch(`${s.server.origin}/v1/store/orders`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ petId: s.nextAvailablePet() }),
      });
      if (res.status !== 201) throw new Error(`seeding orders: ${res.status} ${await res.text()}`);
    }
    return s;
  } catch (error) {
    await s.cleanup();
    throw error;
  }
}

/** The listOrders load, on any backend: the first page of 20, as a manager (every account's orders). */
export function listOrdersLoad(s: OrdersService): Load {
  return {
    pid: s.server.child.pid!,
    url: `${s.server.origin}/v1/store/orders?limit=20`,
    headers: { authorization: `Bearer ${s.key}` },
  };
}

/** Pets each connection renames in turn (UPDATE_CONNECTIONS × this many distinct pets in all). */
const RENAMED_PER_CONNECTION = 200;
/** Connections the updatePet load gives a list of pets of their own (the bench's 50). */
const UPDATE_CONNECTIONS = 50;
const RENAME_WORDS = ['Biscuit', 'Juniper', 'Pretzel', 'Saffron', 'Waffles', 'Clover', 'Mochi', 'Tansy'];

/**
 * The updatePet load, on any backend: every request renames a pet to a name it does not have, as a user's
 * rename does, so the search words are indexed again each time (a merge patch repeating the current name is
 * not a rename, and costs a fraction of one). Each connection has pets of its own, spread across `pets`, and
 * renames each in turn to one name then to another, the two passes 200 requests apart: no two requests in
 * flight touch one pet (with every connection cycling one shared list, autocannon sent the same pet on all
 * 50 connections at once, and measured the queue on its row lock). wrk sends the lists one after the other.
 */
export function updatePetLoad(pid: number, origin: string, auth: Record<string, string>, pets: number): Load {
  const perClientRequests = Array.from({ length: UPDATE_CONNECTIONS }, (_, c) => {
    const ids = Array.from({ length: RENAMED_PER_CONNECTION }, (_, k) => {
      const n = c * RENAMED_PER_CONNECTION + k;
      return { n, id: 1 + ((n * 7919 + 13) % pets) };
    });
    return [0, 1].flatMap((pass) =>
      ids.map(({ n, id }) => ({
        method: 'PATCH' as const,
        path: `/v1/pets/${id}`,
        body: JSON.stringify({ name: `${RENAME_WORDS[(n + pass) % RENAME_WORDS.length]} ${n}` }),
      })),
    );
  });
  return {
    pid,
    url: origin,
    headers: { ...auth, 'content-type': 'application/merge-patch+json' },
    perClientRequests,
  };
}
