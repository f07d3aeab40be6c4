import type BetterSqlite3 from 'better-sqlite3';
import { runAsPromise, type SqliteDatabase } from '../../db/sqlite.js';
import {
  endpointWants,
  formatEvents,
  roomFor,
  type ClaimedDelivery,
  type ClaimQuery,
  type Completion,
  type DeliveryRecord,
  type EndpointChange,
  type EndpointRecord,
  type NewEndpoint,
  type QueueStats,
  type WebhookRepository,
} from './repository.js';
import {
  DELIVERY_COLUMNS,
  ENDPOINT_COLUMNS,
  newLeaseToken,
  toClaimed,
  toEndpoint,
  type ClaimRow,
  type EndpointRow,
} from './rows.js';

/**
 * The dispatcher's statements: preparing one costs more than running it, and they run several times per
 * turn of the event loop under load.
 */
function prepareDispatch(db: BetterSqlite3.Database) {
  return {
    anyUndispatched: db.prepare<[], number>('SELECT 1 FROM events WHERE dispatched = 0 LIMIT 1').pluck(true),
    undispatched: db.prepare<[number], { seq: number; id: string; type: string; accountId: number | null }>(
      'SELECT seq, id, type, account_id AS accountId FROM events WHERE dispatched = 0 ORDER BY seq LIMIT ?',
    ),
    enabledEndpoints: db.prepare<[], EndpointRow>(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE enabled = 1`,
    ),
    insertDelivery: db.prepare(
      `INSERT OR IGNORE INTO webhook_deliveries (endpoint_id, event_id, event_type, next_attempt_at, created_at)
       VALUES (?, ?, ?, ?, ?)`,
    ),
    markDispatched: db.prepare('UPDATE events SET dispatched = 1 WHERE seq = ?'),
    anyOpenEndpoint: db
      .prepare<[string], number>(
        'SELECT 1 FROM webhook_endpoints WHERE enabled = 1 AND id NOT IN (SELECT value FROM json_each(?)) LIMIT 1',
      )
      .pluck(true),
    due: db.prepare<unknown[], ClaimRow>(
      `SELECT d.id, d.endpoint_id AS endpointId, e.url, e.secret, e.previous_secret AS previousSecret,
         e.previous_expires_at AS previousExpiresAt, d.event_id AS eventId, ev.payload, d.attempts
       FROM webhook_deliveries d
       JOIN webhook_endpoints e ON e.id = d.endpoint_id
       JOIN events ev ON ev.id = d.event_id
       WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until <= ?)
         AND e.enabled = 1 AND d.endpoint_id NOT IN (SELECT value FROM json_each(?))
       ORDER BY d.next_attempt_at, d.id LIMIT ?`,
    ),
    lease: db.prepare('UPDATE webhook_deliveries SET lease_until = ?, lease_token = ? WHERE id = ?'),
    release: db.prepare(
      'UPDATE webhook_deliveries SET lease_until = NULL, lease_token = NULL WHERE id = ? AND lease_token = ?',
    ),
    record: db
      .prepare<unknown[], number>(
        `UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, next_attempt_at = ?, lease_until = NULL,
           lease_token = NULL, last_status_code = ?, last_error = ?, last_attempt_at = ?
         WHERE id = ? AND lease_token = ? RETURNING endpoint_id`,
      )
      .pluck(true),
    // Only an endpoint that was failing is written: a success of a healthy one changes no row.
    streakEnded: db.prepare(
      'UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL',
    ),
    streak: db
      .prepare<[number, number], number>(
        `UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, ?) WHERE id = ?
         RETURNING failing_since`,
      )
      .pluck(true),
    disable: db.prepare(
      'UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE id = ?',
    ),
    failPending: db.prepare(
      `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL,
         last_error = coalesce(last_error, 'endpoint disabled') WHERE endpoint_id = ? AND status = 'pending'`,
    ),
  };
}
type DispatchStatements = ReturnType<typeof prepareDispatch>;

/** Writes go through SqliteDatabase.write with BEGIN IMMEDIATE: one process holds the write lock at a time. */
export class SqliteWebhookRepository implements WebhookRepository {
  private readonly db: BetterSqlite3.Database;

  constructor(private readonly database: SqliteDatabase) {
    this.db = database.db;
  }

  private endpoint(accountId: number | undefined, id: number): EndpointRecord | undefined {
    const row =
      accountId === undefined
        ? this.db
            .prepare<[number], EndpointRow>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ?`)
            .get(id)
        : this.db
            .prepare<[number, number], EndpointRow>(
              `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ? AND account_id = ?`,
            )
            .get(id, accountId);
    return row && toEndpoint(row);
  }

  createEndpoint(accountId: number, e: NewEndpoint, now: number): Promise<EndpointRecord> {
    return this.database.write(() => {
      const row = this.db
        .prepare<unknown[], EndpointRow>(
          `INSERT INTO webhook_endpoints (account_id, url, events, secret, orders_manage, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING ${ENDPOINT_COLUMNS}`,
        )
        .get(accountId, e.url, formatEvents(e.events), e.secret, e.ordersManage ? 1 : 0, now, now)!;
      return toEndpoint(row);
    });
  }

  listEndpoints(q: { accountId?: number; afterId?: number; limit: number }): Promise<EndpointRecord[]> {
    return runAsPromise(() =>
      this.db
        .prepare<[number, number | null, number | null, number], EndpointRow>(
          `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id > ? AND (? IS NULL OR account_id = ?)
           ORDER BY id LIMIT ?`,
        )
        .all(q.afterId ?? 0, q.accountId ?? null, q.accountId ?? null, q.limit)
        .map(toEndpoint),
    );
  }

  getEndpoint(accountId: number | undefined, id: number): Promise<EndpointRecord | undefined> {
    return runAsPromise(() => this.endpoint(accountId, id));
  }

  updateEndpoint(
    accountId: number,
    id: number,
    c: EndpointChange,
    now: number,
  ): Promise<EndpointRecord | undefined> {
    return this.database.write(() => {
      // Re-enabling clears the reason and the failing streak, so the endpoint gets its full 3 days again.
      const enabled = c.enabled === undefined ? null : c.enabled ? 1 : 0;
      const row = this.db
        .prepare<unknown[], EndpointRow>(
          `UPDATE webhook_endpoints SET url = coalesce(?, url), events = coalesce(?, events),
             enabled = coalesce(?, enabled),
             disabled_reason = CASE WHEN ? IS NULL THEN disabled_reason WHEN ? = 1 THEN NULL ELSE 'disabled by the account' END,
             failing_since = CASE WHEN ? = 1 THEN NULL ELSE failing_since END,
             updated_at = ?
           WHERE id = ? AND account_id = ? RETURNING ${ENDPOINT_COLUMNS}`,
        )
        .get(
          c.url ?? null,
          c.events ? formatEvents(c.events) : null,
          enabled,
          enabled,
          enabled,
          enabled,
          now,
          id,
          accountId,
        );
      return row && toEndpoint(row);
    });
  }

  deleteEndpoint(accountId: number, id: number): Promise<boolean> {
    return this.database.write(
      () =>
        this.db.prepare('DELETE FROM webhook_endpoints WHERE id = ? AND account_id = ?').run(id, accountId)
          .changes > 0,
    );
  }

  rotateSecret(
    accountId: number,
    id: number,
    secret: string,
    previousExpiresAt: number,
    now: number,
  ): Promise<EndpointRecord | undefined> {
    return this.database.write(() => {
      const row = this.db
        .prepare<unknown[], EndpointRow>(
          `UPDATE webhook_endpoints SET previous_secret = secret, previous_expires_at = ?, secret = ?, updated_at = ?
           WHERE id = ? AND account_id = ? RETURNING ${ENDPOINT_COLUMNS}`,
        )
        .get(previousExpiresAt, secret, now, id, accountId);
      return row && toEndpoint(row);
    });
  }

  listDeliveries(q: { endpointId: number; afterId?: number; limit: number }): Promise<DeliveryRecord[]> {
    return runAsPromise(() =>
      this.db
        .prepare<[number, number, number], DeliveryRecord>(
          `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = ? AND id > ? ORDER BY id LIMIT ?`,
        )
        .all(q.endpointId, q.afterId ?? 0, q.limit),
    );
  }

  retryDelivery(endpointId: number, deliveryId: number, now: number): Promise<DeliveryRecord | undefined> {
    return this.database.write(() =>
      this.db
        .prepare<[number, number, number], DeliveryRecord>(
          `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?
           WHERE id = ? AND endpoint_id = ? RETURNING ${DELIVERY_COLUMNS}`,
        )
        .get(now, deliveryId, endpointId),
    );
  }

  private prepared: DispatchStatements | undefined;
  /** Prepared on first use, once: the dispatcher runs them several times per turn under load. */
  private get dispatch(): DispatchStatements {
    return (this.prepared ??= prepareDispatch(this.db));
  }

  fanOut(now: number, limit: number): Promise<number> {
    const s = this.dispatch;
    const run = this.db.transaction(() => {
      const events = s.undispatched.all(limit);
      if (events.length === 0) return 0;
      const endpoints = s.enabledEndpoints.all().map(toEndpoint);
      for (const event of events) {
        for (const endpoint of endpoints) {
          if (endpointWants(endpoint, event))
            s.insertDelivery.run(endpoint.id, event.id, event.type, now, now);
        }
        s.markDispatched.run(event.seq);
      }
      return events.length;
    });
    // Most wakes find nothing to fan out: a read answers that without taking the write lock.
    return this.database.write(() => (s.anyUndispatched.get() === undefined ? 0 : run.immediate()));
  }

  claim(q: ClaimQuery): Promise<ClaimedDelivery[]> {
    const s = this.dispatch;
    // Every enabled endpoint at its share: nothing can be claimed, and the due query would read the whole
    // backlog of the full ones to find so.
    if (q.busyEndpoints.length > 0) {
      try {
        if (s.anyOpenEndpoint.get(JSON.stringify(q.busyEndpoints)) === undefined) return Promise.resolve([]);
      } catch (error) {
        return runAsPromise(() => {
          throw error;
        });
      }
    }
    const run = this.db.transaction(() => {
      const token = newLeaseToken();
      const taken = new Map<number, number>();
      const rows = s.due.all(q.now, q.now, JSON.stringify(q.busyEndpoints), q.limit).filter((row) => {
        const n = taken.get(row.endpointId) ?? 0;
        if (n >= roomFor(q, row.endpointId)) return false;
        taken.set(row.endpointId, n + 1);
        return true;
      });
      for (const row of rows) s.lease.run(q.leaseUntil, token, row.id);
      return rows.map((row) => toClaimed(row, token, q.now));
    });
    return this.database.write(() => run.immediate());
  }

  release(id: number, leaseToken: string): Promise<void> {
    return this.database.write(() => {
      this.dispatch.release.run(id, leaseToken);
    });
  }

  completeAll(completions: Completion[], now: number, disableAfterMs: number): Promise<boolean[]> {
    const s = this.dispatch;
    const recordOne = ({ id, leaseToken, outcome }: Completion): boolean => {
      if (outcome.kind === 'succeeded') {
        const endpointId = s.record.get('succeeded', null, outcome.statusCode, null, now, id, leaseToken);
        if (endpointId === undefined) return false;
        s.streakEnded.run(endpointId);
        return true;
      }
      const status = outcome.nextAttemptAt === null ? 'failed' : 'pending';
      const endpointId = s.record.get(
        status,
        outcome.nextAttemptAt,
        outcome.statusCode,
        outcome.error,
        now,
        id,
        leaseToken,
      );
      if (endpointId === undefined) return false;
      const since = s.streak.get(now, endpointId);
      const reason = outcome.gone
        ? 'the receiver answered 410 Gone'
        : since !== null && since !== undefined && now - since >= disableAfterMs
          ? 'deliveries failed for 3 days'
          : null;
      if (reason !== null) {
        s.disable.run(reason, now, endpointId);
        s.failPending.run(endpointId);
      }
      return true;
    };
    const run = this.db.transaction(() => completions.map(recordOne));
    return this.database.write(() => run.immediate());
  }

  stats(): Promise<QueueStats> {
    return runAsPromise(() =>
      this.db
        .prepare<[], QueueStats>(
          `SELECT count(*) AS pending, min(d.created_at) AS oldestCreatedAt FROM webhook_deliveries d
             JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.status = 'pending' AND e.enabled = 1`,
        )
        .get()!,
    );
  }
}
