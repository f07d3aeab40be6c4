/**
 * The counters docs/capacity.md rests on: what the service has asked of its database and Redis. Divided by
 * the requests answered in the same interval (pet_adoption_http_request_duration_seconds_count), they give
 * the cost of a request, which an operator compares with the capacity model. They are totals per instance, not per route:
 * one statement answers the key lookups (or list pages) of every request of an event-loop turn, whatever
 * their routes, so a per-route split would be a guess.
 */
import { Counter, type Registry } from 'prom-client';
import type { Database } from '../db/database.js';
import type { CounterStore } from '../ratelimit/store.js';

export function registerCostMetrics(
  registry: Registry,
  database: Database,
  counterStore: CounterStore,
): void {
  const labels = { backend: database.kind };
  // Read when scraped: the hot path only increments plain numbers (db/costs.ts).
  new Counter({
    name: 'pet_adoption_db_statements_total',
    help: 'SQL statements executed (SQLite: prepared statement runs, without BEGIN/COMMIT; PostgreSQL: queries sent).',
    labelNames: ['backend'] as const,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(labels, database.costs.statements);
    },
  });
  new Counter({
    name: 'pet_adoption_db_round_trips_total',
    help: 'Network round trips to the database (0 on SQLite, which runs in-process).',
    labelNames: ['backend'] as const,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(labels, database.costs.roundTrips);
    },
  });
  new Counter({
    name: 'pet_adoption_redis_commands_total',
    help: 'Commands sent to Redis (one rate-limit script per account and event-loop turn; 0 with in-process counters).',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(counterStore.commandsSent);
    },
  });
}
