/**
 * PostgreSQL databases for tests: each lives in a schema of its own, so concurrent runs (and suites within a
 * run) share the test database without seeing each other's rows, and closing one drops its schema.
 */
import pg from 'pg';
import { PostgresDatabase } from '../src/db/postgres.js';
import { PG_URL, uniqueName } from './services.js';

export interface TestPostgresOptions {
  /** Reuse a schema (e.g. to open a second instance on the same data); a new unique one by default. */
  schema?: string;
  poolSize?: number;
  timeoutMs?: number;
  /** Extra URL query parameters, e.g. application_name to find this pool's sessions in pg_stat_activity. */
  params?: Record<string, string>;
  /** Drop the schema on close(). Default true; turn off for all but one of several instances sharing it. */
  dropOnClose?: boolean;
}

/** PG_URL pointed at `schema`, with any extra parameters; keeps whatever PG_URL already carries. */
export function postgresUrl(schema: string, params: Record<string, string> = {}): string {
  const url = new URL(PG_URL);
  url.searchParams.set('schema', schema);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.toString();
}

/** Runs one statement on a short-lived connection outside any database (setup, cleanup, fault injection). */
export async function withPostgresClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 5_000 });
  // A dropped connection must fail the awaiting query, not crash the test process.
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function dropSchema(schema: string): Promise<void> {
  // Identifier comes from uniqueName (lower-case letters, digits, _), so quoting is enough.
  await withPostgresClient((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
}

/** A PostgresDatabase in a fresh schema (not yet migrated) whose close() also drops that schema. */
export async function createTestPostgresDatabase(
  options: TestPostgresOptions = {},
): Promise<PostgresDatabase> {
  const schema = options.schema ?? uniqueName('pg');
  const database = new PostgresDatabase(postgresUrl(schema, options.params), {
    poolSize: options.poolSize ?? 10,
    timeoutMs: options.timeoutMs ?? 5_000,
  });
  if (options.dropOnClose === false) return database;
  const close = database.close.bind(database);
  let closing: Promise<void> | undefined;
  database.close = () => {
    // End our pool first: DROP SCHEMA would otherwise wait on locks our own idle sessions might hold.
    closing ??= close().then(() => dropSchema(schema));
    return closing;
  };
  return database;
}
