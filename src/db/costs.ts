/**
 * What the service asks of its stores, counted where it is sent, for /metrics (pet_adoption_db_statements_total,
 * pet_adoption_db_round_trips_total, pet_adoption_redis_commands_total) and docs/capacity.md: divided by the
 * requests answered over the same interval they give the cost of a request, which an operator can compare
 * with the capacity model. Plain numbers per database or store object (not prom-client counters on the hot
 * path): an increment is all a statement pays; the registry reads them when scraped.
 */
import type BetterSqlite3 from 'better-sqlite3';

export interface DbCosts {
  /** SQL statements executed (SQLite: prepared statement runs; PostgreSQL: queries sent). */
  statements: number;
  /** Network round trips to the database (PostgreSQL: one per query; SQLite: in-process, none). */
  roundTrips: number;
}

const EXECUTING_METHODS = ['run', 'get', 'all', 'iterate'] as const;

/**
 * Counts every run of every statement prepared on `db` from now on, by giving each statement counting
 * versions of its executing methods (own properties in front of the prototype's; `raw()`/`pluck()` return
 * the same object, so they keep counting). Transactions' own BEGIN/COMMIT run inside better-sqlite3 and are
 * not counted. Written here because better-sqlite3 has no statement hook (its `verbose` option is called
 * with the SQL text of each statement, i.e. it expands the text on every run).
 *
 * With `trace` (tracing is on), each run of `run`, `get` and `all` is also a span of the active request
 * (sqlite-tracing.ts), described once per statement here. Without it a run pays the increment only: tracing
 * costs nothing, not even a test, while it is off. (`iterate` hands back an iterator that runs on after the
 * call, so it is counted but not traced; nothing iterates today.)
 */
export function countSqliteStatements(
  db: BetterSqlite3.Database,
  costs: DbCosts,
  trace?: (sql: string) => (execute: () => unknown) => unknown,
): void {
  const prepare = db.prepare.bind(db) as (source: string) => BetterSqlite3.Statement;
  (db as { prepare: (source: string) => BetterSqlite3.Statement }).prepare = (source) => {
    const statement = prepare(source) as unknown as Record<string, (...args: unknown[]) => unknown>;
    const span = trace?.(source);
    for (const method of EXECUTING_METHODS) {
      const execute = statement[method]!;
      statement[method] =
        span === undefined || method === 'iterate'
          ? function (this: unknown, ...args: unknown[]) {
              costs.statements++;
              return execute.apply(this, args);
            }
          : function (this: unknown, ...args: unknown[]) {
              costs.statements++;
              return span(() => execute.apply(this, args));
            };
    }
    return statement as unknown as BetterSqlite3.Statement;
  };
}
