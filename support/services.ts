/**
 * Where the external services are (PostgreSQL, Redis) and unique names on them, for the tests, the benchmarks
 * and the chaos runs alike (this folder is what the three share; none of them imports another's).
 */
import { randomBytes } from 'node:crypto';

export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const IN_CI = process.env.CI === 'true';

/** A unique name per test run, for PostgreSQL schemas and Redis key prefixes, so runs never collide. */
export function uniqueName(label: string): string {
  return `t_${label}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

let externalChecked: Promise<boolean> | undefined;

/** True when PostgreSQL and Redis answer; under CI=true, throws instead of returning false. */
export function externalServicesAvailable(): Promise<boolean> {
  externalChecked ??= (async () => {
    const problems: string[] = [];
    try {
      const pg = await import('pg');
      const client = new pg.default.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
    } catch (error) {
      problems.push(`PostgreSQL at ${PG_URL}: ${(error as Error).message}`);
    }
    try {
      const { Redis } = await import('ioredis');
      // No reconnecting and always disconnect: a failed probe left retrying would keep the test run alive.
      const redis = new Redis(REDIS_URL, {
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        connectTimeout: 2000,
        retryStrategy: () => null,
      });
      redis.on('error', () => {});
      try {
        await redis.connect();
        await redis.ping();
      } finally {
        redis.disconnect();
      }
    } catch (error) {
      problems.push(`Redis at ${REDIS_URL}: ${(error as Error).message}`);
    }
    if (problems.length === 0) return true;
    if (IN_CI) throw new Error(`CI=true requires PostgreSQL and Redis:\n${problems.join('\n')}`);
    console.log(`# NOTICE: skipping postgres+redis suites:\n#   ${problems.join('\n#   ')}`);
    return false;
  })();
  return externalChecked;
}
