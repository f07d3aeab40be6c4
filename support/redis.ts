/**
 * Redis for tests: counter stores with a unique key prefix each (their keys deleted on close), and
 * redis-server processes of a test's own for outages.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';
import { RedisCounterStore } from '../src/ratelimit/redis.js';
import { REDIS_URL, uniqueName } from './services.js';

export interface TestRedisStoreOptions {
  /**
   * Share another store's prefix and installation id to act as a second instance of the service on the
   * same counters.
   */
  prefix?: string;
  /** The database's installation id (Storage.installationId); a random one by default. */
  installationId?: string;
  url?: string;
  /** The production default (50 ms) unless given. */
  timeoutMs?: number;
  logger?: FastifyBaseLogger;
}

export async function createTestRedisStore(options: TestRedisStoreOptions = {}): Promise<RedisCounterStore> {
  const url = options.url ?? REDIS_URL;
  const prefix = options.prefix ?? `${uniqueName('rl')}:`;
  const store = new RedisCounterStore(url, {
    prefix,
    installationId: options.installationId ?? randomUUID(),
    timeoutMs: options.timeoutMs ?? 50,
    logger: options.logger,
  });
  if (!(await store.ready(5000))) {
    await store.close();
    throw new Error(`Redis at ${url} did not become ready`);
  }
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await deleteKeys(url, prefix);
  };
  return store;
}

/** Deletes every key under `prefix`. */
export async function deleteKeys(url: string, prefix: string): Promise<number> {
  return withClient(url, async (redis) => {
    const keys = await scanKeys(redis, prefix);
    return keys.length > 0 ? redis.unlink(...keys) : 0;
  });
}

/** Keys currently under `prefix`; shows that counting happened in Redis. */
export function listKeys(url: string, prefix: string): Promise<string[]> {
  return withClient(url, (redis) => scanKeys(redis, prefix));
}

async function withClient<T>(url: string, use: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000 });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return await use(redis);
  } finally {
    redis.disconnect();
  }
}

/** SCAN, not KEYS, so a Redis shared with other test runs is never blocked. */
async function scanKeys(redis: Redis, prefix: string): Promise<string[]> {
  const match = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 500);
    cursor = next;
    found.push(...keys);
  } while (cursor !== '0');
  return found;
}

// ---------------------------------------------------------------------------------------------------------
// A redis-server of the test's own, on its own port, that the test kills, hangs and restarts (outages).

const spawned = new Set<ChildProcess>();
// Even if the run dies before its own cleanup runs, never leave a server behind.
process.once('exit', () => {
  for (const child of spawned) child.kill('SIGKILL');
});

export const redisServerInstalled = !spawnSync('redis-server', ['--version']).error;

/** A TCP port nothing listens on (at the moment of asking). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/**
 * Starts redis-server (no persistence: a restart comes back empty) and resolves when it logs that it
 * accepts connections; rejects if it exits first or says nothing within 10 s.
 */
export async function startRedisServer(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
    { stdio: ['ignore', 'pipe', 'ignore'], cwd: tmpdir() },
  );
  spawned.add(child);
  child.once('exit', () => spawned.delete(child));
  try {
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(
        () => reject(new Error(`redis-server on port ${port}: no ready line`)),
        10_000,
      );
      child.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (/Ready to accept connections/.test(output)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server on port ${port} exited (${code}): ${output.slice(-500)}`));
      });
    });
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  // Keep draining its log so a full pipe never blocks it.
  child.stdout!.resume();
  return child;
}

export async function killRedisServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}
