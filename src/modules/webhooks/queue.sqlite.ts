/** The webhook delivery queue on SQLite: fan-out, claims, leases, completions and its gauges. */
import type BetterSqlite3 from 'better-sqlite3';
import { runAsPromise, type SqliteDatabase } from '../../db/sqlite.js';
import { accountRepository, type Scope, type SqliteLiveKeys } from '../accounts/index.js';
import { eventRepository, type SqliteEventDispatch } from '../events/index.js';
import type {
  ClaimCandidate,
  ClaimedDelivery,
  ClaimQuery,
  Completion,
  DeliveryRecord,
  EndpointRecord,
  QueueStats,
} from './repository.js';
import {
  attemptRecord,
  disableReason,
  ENDPOINT_DISABLED,
  endpointMay,
  endpointWants,
  fairOrder,
  FAN_OUT_ROWS,
  NOT_AUTHORIZED,
  roomFor,
} from './decisions.js';
import {
  authorityOf,
  DELIVERY_COLUMNS,
  ENDPOINT_COLUMNS,
  newLeaseToken,
  toClaimed,
  toEndpoint,
  type AuthorityRow,
  type ClaimRow,
  type EndpointRow,
  type FanOutCursor,
} from './rows.js';

/**
 * The dispatcher's statements: preparing one costs more than running it, and they run several times per
 * turn of the event loop under load.
 */
function prepareDispatch(db: BetterSqlite3.Database) {
  return {
    enabledEndpointsAfter: db.prepare<[number, number], EndpointRow>(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE enabled = 1 AND id > ? ORDER BY id LIMIT ?`,
    ),
    authority: db.prepare<[string], AuthorityRow>(
      `SELECT d.id, d.event_type AS type, ev.account_id AS eventAccountId, e.account_id AS accountId,
         e.orders_manage AS ordersManage, e.granted_scopes AS grantedScopes
       FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
       LEFT JOIN events ev ON ev.id = d.event_id
       WHERE d.id IN (SELECT value FROM json_each(?))`,
    ),
    skip: db.prepare(
      `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, lease_until = NULL,
         lease_token = NULL, last_error = '${NOT_AUTHORIZED}'
       WHERE id = ? AND lease_token = ?`,
    ),
    insertDelivery: db.prepare(
      `INSERT OR IGNORE INTO webhook_deliveries (endpoint_id, event_id, event_type, next_attempt_at, created_at)
       VALUES (?, ?, ?, ?, ?)`,
    ),
    openEndpoints: db.prepare<[string], { id: number; accountId: number }>(
      `SELECT id, account_id AS accountId FROM webhook_endpoints
       WHERE enabled = 1 AND id NOT IN (SELECT value FROM json_each(?))`,
    ),
    // One endpoint's oldest due rows, on its own index range (no other endpoint's backlog is read).
    dueOf: db.prepare<[number, number, number, number], ClaimRow & { nextAttemptAt: number }>(
      `SELECT d.id, d.endpoint_id AS endpointId, e.account_id AS accountId, e.url, e.secret,
         e.previous_secret AS previousSecret, e.previous_expires_at AS previousExpiresAt, d.event_id AS eventId,
         ev.payload, d.attempts, ev.traceparent, d.next_attempt_at AS nextAttemptAt
       FROM webhook_deliveries d INDEXED BY webhook_deliveries_endpoint_due
       JOIN webhook_endpoints e ON e.id = d.endpoint_id
       JOIN events ev ON ev.id = d.event_id
       WHERE d.endpoint_id = ? AND d.status = 'pending' AND d.next_attempt_at <= ?
         AND (d.lease_until IS NULL OR d.lease_until <= ?)
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
         last_error = coalesce(last_error, '${ENDPOINT_DISABLED}') WHERE endpoint_id = ? AND status = 'pending'`,
    ),
  };
}
type DispatchStatements = ReturnType<typeof prepareDispatch>;

/** Writes go through SqliteDatabase.write with BEGIN IMMEDIATE: one process holds the write lock at a time. SqliteWebhookRepository adds the endpoint methods. */
export class SqliteDeliveryQueue {
  protected readonly db: BetterSqlite3.Database;

  constructor(protected readonly database: SqliteDatabase) {
    this.db = database.db;
  }

  /**
   * The events module's outbox and the accounts module's keys, read and marked inside this queue's
   * transactions (one connection); looked up on first use, like the statements.
   */
  private get events(): SqliteEventDispatch {
    return this.database.repository(eventRepository);
  }

  private get accounts(): SqliteLiveKeys {
    return this.database.repository(accountRepository);
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

  /** The transactions of one call come one after another; other writers get the lock between them. */
  async fanOut(now: number, limit: number, maxRows = FAN_OUT_ROWS): Promise<number> {
    const s = this.dispatch;
    const { events: outbox, accounts } = this;
    const rowsPerTransaction = Math.max(1, maxRows);
    const step = this.db.transaction((want: number, cursor: FanOutCursor | undefined) => {
      const events = outbox.undispatched(want);
      const pages = new Map<number, EndpointRecord[]>();
      const live = new Map<number, ReadonlySet<Scope>>();
      const endpointsAfter = (after: number): EndpointRecord[] => {
        let page = pages.get(after);
        if (!page) {
          page = s.enabledEndpointsAfter.all(after, rowsPerTransaction).map(toEndpoint);
          const unknown = [...new Set(page.map((e) => e.accountId))].filter((id) => !live.has(id));
          if (unknown.length > 0) {
            for (const [id, scopes] of accounts.liveScopes(unknown, now)) live.set(id, scopes);
          }
          pages.set(after, page);
        }
        return page;
      };
      let rows = 0;
      let dispatched = 0;
      for (const event of events) {
        let after = cursor?.eventId === event.id ? cursor.afterEndpoint : 0;
        for (;;) {
          const page = endpointsAfter(after);
          for (const endpoint of page) {
            if (endpointWants(endpoint, event, live.get(endpoint.accountId)!)) {
              if (rows === rowsPerTransaction)
                return { dispatched, cursor: { eventId: event.id, afterEndpoint: after } };
              s.insertDelivery.run(endpoint.id, event.id, event.type, now, now);
              rows++;
            }
            after = endpoint.id;
          }
          if (page.length < rowsPerTransaction) break;
        }
        outbox.markDispatched(event.seq);
        dispatched++;
      }
      return { dispatched, cursor: undefined };
    });
    let done = 0;
    let cursor: FanOutCursor | undefined;
    for (;;) {
      // Most wakes find nothing to fan out: a read answers that without taking the write lock.
      const result = await this.database.write(() =>
        outbox.anyUndispatched()
          ? step.immediate(limit - done, cursor)
          : { dispatched: 0, cursor: undefined },
      );
      done += result.dispatched;
      cursor = result.cursor;
      if (cursor === undefined || done >= limit) return done;
    }
  }

  unauthorized(deliveryIds: number[], now: number): Promise<number[]> {
    if (deliveryIds.length === 0) return Promise.resolve([]);
    const s = this.dispatch;
    return runAsPromise(() => {
      const rows = s.authority.all(JSON.stringify(deliveryIds));
      const live = this.accounts.liveScopes([...new Set(rows.map((r) => r.accountId))], now);
      return rows
        .filter(
          (r) =>
            !endpointMay(
              authorityOf(r),
              { type: r.type, accountId: r.eventAccountId },
              live.get(r.accountId)!,
            ),
        )
        .map((r) => r.id);
    });
  }

  skip(deliveries: { id: number; leaseToken: string }[], _now: number): Promise<void> {
    if (deliveries.length === 0) return Promise.resolve();
    const s = this.dispatch;
    const run = this.db.transaction(() => {
      for (const d of deliveries) s.skip.run(d.id, d.leaseToken);
    });
    return this.database.write(() => run.immediate());
  }

  liveScopes(accountId: number, now: number): Promise<ReadonlySet<Scope>> {
    return runAsPromise(() => this.accounts.liveScopes([accountId], now).get(accountId)!);
  }

  claim(q: ClaimQuery): Promise<ClaimedDelivery[]> {
    const s = this.dispatch;
    const run = this.db.transaction(() => {
      const candidates: (ClaimRow & ClaimCandidate)[] = [];
      for (const endpoint of s.openEndpoints.all(JSON.stringify(q.busyEndpoints))) {
        if (q.perAccount !== undefined && (q.accountInFlight?.[endpoint.accountId] ?? 0) >= q.perAccount)
          continue;
        const room = Math.min(q.limit, roomFor(q, endpoint.id));
        if (room > 0) candidates.push(...s.dueOf.all(endpoint.id, q.now, q.now, room));
      }
      const token = newLeaseToken();
      return fairOrder(q, candidates).map((row) => {
        s.lease.run(q.leaseUntil, token, row.id);
        return toClaimed(row, token, q.now);
      });
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
      const r = attemptRecord(outcome);
      const endpointId = s.record.get(r.status, r.nextAttemptAt, r.statusCode, r.error, now, id, leaseToken);
      if (endpointId === undefined) return false;
      if (outcome.kind === 'succeeded') {
        s.streakEnded.run(endpointId);
        return true;
      }
      const since = s.streak.get(now, endpointId);
      const reason = disableReason({ gone: outcome.gone, failingSince: since, now, disableAfterMs });
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
