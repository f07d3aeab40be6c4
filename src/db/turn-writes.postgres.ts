import type { PoolClient } from 'pg';
import { StorageUnavailableError } from './database.js';
import { isUnavailable } from './postgres-errors.js';
import type { PostgresDatabase } from './postgres.js';
import { settleAsync, type Settled } from './turn-batch.js';

/**
 * Runs a turn's writes on PostgreSQL (the `run` of a TurnBatch): together in one transaction (`shared`),
 * each answered only after its commit with its own outcome; a write alone (`alone`, its own transaction)
 * when it is the turn's only one.
 *
 * With `key`, only the first write of each key joins the shared transaction, and each later write of a key
 * already in it runs afterwards, alone, in order (for `shared` functions that decide each write against the
 * rows as locked, not as an earlier write of the same turn left them).
 *
 * When the shared transaction fails and rolls back, the write that failed (`shared` records its position
 * in `failed` before throwing) gets its error and the others run again alone, so one failing write never
 * takes the others down. A database that is unreachable or whose commit is in doubt fails them all instead,
 * as it would have failed each alone: running them again could apply a write twice.
 */
export async function sharedThenAlone<I, R>(
  db: PostgresDatabase,
  inputs: I[],
  alone: (input: I) => Promise<R>,
  shared: (client: PoolClient, inputs: I[], failed: Map<number, unknown>) => Promise<R[]>,
  key?: (input: I) => unknown,
): Promise<Settled<R>[]> {
  if (inputs.length === 1) return [await settleAsync(() => alone(inputs[0]!))];
  const seen = new Set<unknown>();
  const together: number[] = [];
  const later: number[] = [];
  inputs.forEach((input, i) => {
    if (key === undefined) together.push(i);
    else if (seen.has(key(input))) later.push(i);
    else {
      seen.add(key(input));
      together.push(i);
    }
  });
  const outcomes: Settled<R>[] = inputs.map(() => ({ error: new Error('not run') }));
  const failed = new Map<number, unknown>();
  try {
    const results = await db.transaction((client) =>
      shared(
        client,
        together.map((i) => inputs[i]!),
        failed,
      ),
    );
    together.forEach((i, k) => (outcomes[i] = { value: results[k]! }));
  } catch (error) {
    if (failed.size === 0 && (error instanceof StorageUnavailableError || isUnavailable(error))) throw error;
    await Promise.all(
      together.map(async (i, k) => {
        outcomes[i] = failed.has(k) ? { error: failed.get(k) } : await settleAsync(() => alone(inputs[i]!));
      }),
    );
  }
  for (const i of later) outcomes[i] = await settleAsync(() => alone(inputs[i]!));
  return outcomes;
}

/**
 * Inside `shared`: runs `hook` (a test seam placed after a write) once for each write that `wrote` says took
 * effect, in order; a throwing one is recorded in `failed` at its position, as sharedThenAlone expects, and
 * rethrown to roll the shared transaction back.
 */
export async function afterEachWrite<T>(
  results: readonly T[],
  wrote: (result: T) => boolean,
  hook: ((client: PoolClient) => void | Promise<void>) | undefined,
  client: PoolClient,
  failed: Map<number, unknown>,
): Promise<void> {
  if (!hook) return;
  for (const [k, result] of results.entries()) {
    if (!wrote(result)) continue;
    try {
      await hook(client);
    } catch (error) {
      failed.set(k, error);
      throw error;
    }
  }
}
