/**
 * Events for suites: reading the feed through the API, following its Link as a polling client does, and
 * appending rows straight into the outbox (for visibility tests that need another account's order events).
 */
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { Database } from '../../src/db/database.js';
import { PostgresDatabase } from '../../src/db/postgres.js';
import { SqliteDatabase } from '../../src/db/sqlite.js';
import { eventRepository, type NewEvent } from '../../src/modules/events/index.js';
import type { EventType } from '../../src/modules/events/schemas.js';

export interface FeedEvent {
  id: string;
  type: EventType;
  timestamp: string;
  data: { object: Record<string, unknown>; previous: Record<string, unknown>; version: number };
}

export interface FeedPage {
  events: FeedEvent[];
  /** The `rel="next"` URL (path and query), present on every page. */
  next: string;
}

export async function readFeed(app: FastifyInstance, key: string, url = '/v1/events'): Promise<FeedPage> {
  const res = await app.inject({ url, headers: { authorization: `Bearer ${key}` } });
  assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const link = String(res.headers.link ?? '');
  const match = /^<([^>]+)>; rel="next"$/.exec(link);
  assert.ok(match, `${url}: every page carries Link rel="next" (got ${link})`);
  return { events: res.json() as FeedEvent[], next: match[1]! };
}

/** A client polling the feed: each `poll()` follows the last Link and returns what is new since. */
export function feedPoller(app: FastifyInstance, key: string, start = '/v1/events?limit=100') {
  let next = start;
  return {
    async poll(): Promise<FeedEvent[]> {
      const seen: FeedEvent[] = [];
      for (;;) {
        const page = await readFeed(app, key, next);
        next = page.next;
        seen.push(...page.events);
        if (page.events.length === 0) return seen;
      }
    },
  };
}

/** Appends `event` to the outbox in a transaction of its own, as a writer would inside its change's. */
export async function appendEvent(database: Database, event: NewEvent): Promise<void> {
  if (database instanceof SqliteDatabase) {
    const events = database.repository(eventRepository);
    database.db.transaction(() => events.append(event)).immediate();
  } else if (database instanceof PostgresDatabase) {
    const events = database.repository(eventRepository);
    await database.transaction((client) => events.append(client, event));
  } else assert.fail('unknown database');
}
