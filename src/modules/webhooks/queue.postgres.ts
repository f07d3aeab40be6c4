/** The webhook delivery queue on PostgreSQL: fan-out, claims, leases, completions and its gauges. */
import type { PostgresDatabase } from '../../db/postgres.js';
import type { PoolClient } from 'pg';
import { accountRepository, type PostgresLiveKeys, type Scope } from '../accounts/index.js';
import { eventRepository, type PostgresEventDispatch } from '../events/index.js';
import type {
  ClaimCandidate,
  AttemptOutcome,
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
 * Every instance dispatches: fan-out and claims lock the rows they take with FOR UPDATE SKIP LOCKED, so two
 * dispatchers never take the same event or delivery and never wait for each other.
 * PostgresWebhookRepository adds the endpoint methods.
 */
export class PostgresDeliveryQueue {
  constructor(protected readonly db: PostgresDatabase) {}

  /** The accounts module's keys, read on this queue's connections (see PostgresLiveKeys). */
  protected get accounts(): PostgresLiveKeys {
    return this.db.repository(accountRepository);
  }

  listDeliveries(q: { endpointId: number; afterId?: number; limit: number }): Promise<DeliveryRecord[]> {
    return this.db.query<DeliveryRecord>({
      text: `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
      values: [q.endpointId, q.afterId ?? 0, q.limit],
    });
  }

  async retryDelivery(
    endpointId: number,
    deliveryId: number,
    now: number,
  ): Promise<DeliveryRecord | undefined> {
    const [row] = await this.db.query<DeliveryRecord>({
      text: `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $1
             WHERE id = $2 AND endpoint_id = $3 RETURNING ${DELIVERY_COLUMNS}`,
      values: [now, deliveryId, endpointId],
    });
    return row;
  }

  async fanOut(now: number, limit: number, maxRows = FAN_OUT_ROWS): Promise<number> {
    // Only events the feed has numbered: the publisher never waits on the rows fan-out locks, and fan-out
    // never skips the rows a pass is numbering. Publishing first keeps a commit's wake enough to send it.
    const events = this.db.repository(eventRepository);
    await events.publish();
    const rowsPerTransaction = Math.max(1, maxRows);
    let done = 0;
    let cursor: FanOutCursor | undefined;
    for (;;) {
      const result = await this.fanOutStep(events, now, limit - done, rowsPerTransaction, cursor);
      done += result.dispatched;
      cursor = result.cursor;
      if (cursor === undefined || done >= limit) return done;
    }
  }

  /** One transaction of a fan-out: at most `maxRows` deliveries (see the contract in repository.ts). */
  private fanOutStep(
    outbox: PostgresEventDispatch,
    now: number,
    want: number,
    maxRows: number,
    cursor: FanOutCursor | undefined,
  ): Promise<{ dispatched: number; cursor: FanOutCursor | undefined }> {
    return this.db.transaction(async (client) => {
      const events = await outbox.undispatched(client, want);
      if (events.length === 0) return { dispatched: 0, cursor: undefined };
      const pages = new Map<number, EndpointRecord[]>();
      const live = new Map<number, ReadonlySet<Scope>>();
      const { accounts } = this;
      const endpointsAfter = async (after: number): Promise<EndpointRecord[]> => {
        let page = pages.get(after);
        if (!page) {
          const { rows } = await client.query<EndpointRow>(
            `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE enabled = 1 AND id > $1 ORDER BY id LIMIT $2`,
            [after, maxRows],
          );
          page = rows.map(toEndpoint);
          const unknown = [...new Set(page.map((e) => e.accountId))].filter((id) => !live.has(id));
          if (unknown.length > 0)
            for (const [id, scopes] of await accounts.liveScopes(client, unknown, now)) live.set(id, scopes);
          pages.set(after, page);
        }
        return page;
      };
      const endpointIds: number[] = [];
      const eventIds: string[] = [];
      const types: string[] = [];
      const dispatched: number[] = [];
      let cut: FanOutCursor | undefined;
      events: for (const event of events) {
        let after = cursor?.eventId === event.id ? cursor.afterEndpoint : 0;
        for (;;) {
          const page = await endpointsAfter(after);
          for (const endpoint of page) {
            if (endpointWants(endpoint, event, live.get(endpoint.accountId)!)) {
              if (endpointIds.length === maxRows) {
                cut = { eventId: event.id, afterEndpoint: after };
                break events;
              }
              endpointIds.push(endpoint.id);
              eventIds.push(event.id);
              types.push(event.type);
            }
            after = endpoint.id;
          }
          if (page.length < maxRows) break;
        }
        dispatched.push(event.seq);
      }
      if (endpointIds.length > 0) {
        await client.query(
          `INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, next_attempt_at, created_at)
           SELECT e, i, t, $4, $4 FROM unnest($1::bigint[], $2::text[], $3::text[]) AS x(e, i, t)
           ON CONFLICT (endpoint_id, event_id) DO NOTHING`,
          [endpointIds, eventIds, types, now],
        );
      }
      await outbox.markDispatched(client, dispatched);
      return { dispatched: dispatched.length, cursor: cut };
    });
  }

  async unauthorized(deliveryIds: number[], now: number): Promise<number[]> {
    if (deliveryIds.length === 0) return [];
    const rows = await this.db.query<AuthorityRow>({
      text: `SELECT d.id::int AS id, d.event_type AS type, ev.account_id AS "eventAccountId",
               e.account_id AS "accountId", e.orders_manage AS "ordersManage", e.granted_scopes AS "grantedScopes"
             FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
             LEFT JOIN events ev ON ev.id = d.event_id
             WHERE d.id = ANY($1::bigint[])`,
      values: [deliveryIds],
    });
    const live = await this.accounts.liveScopes(undefined, [...new Set(rows.map((r) => r.accountId))], now);
    return rows
      .filter(
        (r) =>
          !endpointMay(authorityOf(r), { type: r.type, accountId: r.eventAccountId }, live.get(r.accountId)!),
      )
      .map((r) => r.id);
  }

  async skip(deliveries: { id: number; leaseToken: string }[], _now: number): Promise<void> {
    if (deliveries.length === 0) return;
    await this.db.execute({
      text: `UPDATE webhook_deliveries w SET status = 'failed', next_attempt_at = NULL, lease_until = NULL,
               lease_token = NULL, last_error = '${NOT_AUTHORIZED}'
             FROM unnest($1::bigint[], $2::text[]) AS x(id, token)
             WHERE w.id = x.id AND w.lease_token = x.token`,
      values: [deliveries.map((d) => d.id), deliveries.map((d) => d.leaseToken)],
    });
  }

  async liveScopes(accountId: number, now: number): Promise<ReadonlySet<Scope>> {
    const live = await this.accounts.liveScopes(undefined, [accountId], now);
    return live.get(accountId)!;
  }

  async claim(q: ClaimQuery): Promise<ClaimedDelivery[]> {
    // Each open endpoint's oldest due rows up to its room (its own index range, so no backlog is read
    // past), then the fair choice among them, then the lease of the chosen under a re-check: a row another
    // instance leased meanwhile is left out (the claim takes fewer), a row it holds locked is skipped.
    const candidates = await this.db.query<ClaimCandidate>({
      text: `SELECT d.id, e.id AS "endpointId", e.account_id AS "accountId",
               d.next_attempt_at AS "nextAttemptAt"
             FROM webhook_endpoints e CROSS JOIN LATERAL (
               SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
               WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_attempt_at <= $1
                 AND (d.lease_until IS NULL OR d.lease_until <= $1)
               ORDER BY d.next_attempt_at, d.id
               LIMIT least($3::int, coalesce($4::int - coalesce(($5::jsonb ->> e.id::text)::int, 0), $3::int))
             ) d
             WHERE e.enabled = 1 AND NOT (e.id = ANY($2::bigint[]))
               AND ($6::int IS NULL OR coalesce(($7::jsonb ->> e.account_id::text)::int, 0) < $6::int)`,
      values: [
        q.now,
        q.busyEndpoints,
        q.limit,
        q.perEndpoint ?? null,
        JSON.stringify(q.inFlight ?? {}),
        q.perAccount ?? null,
        JSON.stringify(q.accountInFlight ?? {}),
      ],
    });
    const chosen = fairOrder(q, candidates);
    if (chosen.length === 0) return [];
    const token = newLeaseToken();
    const rows = await this.db.query<ClaimRow>({
      text: `WITH locked AS (
               SELECT d.id FROM webhook_deliveries d
               WHERE d.id = ANY($1::bigint[]) AND d.status = 'pending' AND d.next_attempt_at <= $2
                 AND (d.lease_until IS NULL OR d.lease_until <= $2)
               FOR UPDATE SKIP LOCKED
             ), leased AS (
               UPDATE webhook_deliveries w SET lease_until = $3, lease_token = $4 FROM locked WHERE w.id = locked.id
               RETURNING w.id, w.endpoint_id, w.event_id, w.attempts
             )
             SELECT l.id, l.endpoint_id AS "endpointId", e.account_id AS "accountId", e.url, e.secret,
               e.previous_secret AS "previousSecret", e.previous_expires_at AS "previousExpiresAt",
               l.event_id AS "eventId", ev.payload, l.attempts, ev.traceparent
             FROM leased l JOIN webhook_endpoints e ON e.id = l.endpoint_id JOIN events ev ON ev.id = l.event_id`,
      values: [chosen.map((c) => c.id), q.now, q.leaseUntil, token],
    });
    // In the fair order, which the dispatcher keeps when it starts them.
    const order = new Map(chosen.map((c, i) => [c.id, i]));
    return rows
      .map((row) => toClaimed(row, token, q.now))
      .sort((a, b) => order.get(a.id)! - order.get(b.id)!);
  }

  async release(id: number, leaseToken: string): Promise<void> {
    await this.db.execute({
      text: 'UPDATE webhook_deliveries SET lease_until = NULL, lease_token = NULL WHERE id = $1 AND lease_token = $2',
      values: [id, leaseToken],
    });
  }

  /** Successes, the common case, go in two statements whatever their number; failures one by one. */
  completeAll(completions: Completion[], now: number, disableAfterMs: number): Promise<boolean[]> {
    return this.db.transaction(async (client) => {
      const held = new Set<number>();
      const successes = completions.filter((c) => c.outcome.kind === 'succeeded');
      if (successes.length > 0) {
        const { rows } = await client.query<{ id: number; endpointId: number }>(
          `UPDATE webhook_deliveries w SET status = 'succeeded', attempts = attempts + 1, next_attempt_at = NULL,
             lease_until = NULL, lease_token = NULL, last_status_code = x.code, last_error = NULL, last_attempt_at = $4
           FROM unnest($1::bigint[], $2::text[], $3::int[]) AS x(id, token, code)
           WHERE w.id = x.id AND w.lease_token = x.token
           RETURNING w.id::int AS id, w.endpoint_id AS "endpointId"`,
          [
            successes.map((c) => c.id),
            successes.map((c) => c.leaseToken),
            successes.map((c) => c.outcome.statusCode),
            now,
          ],
        );
        for (const row of rows) held.add(Number(row.id));
        if (rows.length > 0) {
          // Only an endpoint that was failing is written: a success of a healthy one changes no row.
          await client.query(
            `UPDATE webhook_endpoints SET failing_since = NULL
             WHERE id = ANY($1::bigint[]) AND failing_since IS NOT NULL`,
            [[...new Set(rows.map((r) => r.endpointId))]],
          );
        }
      }
      for (const c of completions) {
        if (
          c.outcome.kind === 'failed' &&
          (await this.recordFailure(client, c, c.outcome, now, disableAfterMs))
        ) {
          held.add(c.id);
        }
      }
      return completions.map((c) => held.has(c.id));
    });
  }

  private async recordFailure(
    client: PoolClient,
    c: Completion,
    outcome: Extract<AttemptOutcome, { kind: 'failed' }>,
    now: number,
    disableAfterMs: number,
  ): Promise<boolean> {
    const r = attemptRecord(outcome);
    const { rows } = await client.query<{ endpointId: number }>(
      `UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, next_attempt_at = $2, lease_until = NULL,
         lease_token = NULL, last_status_code = $3, last_error = $4, last_attempt_at = $5
       WHERE id = $6 AND lease_token = $7 RETURNING endpoint_id AS "endpointId"`,
      [r.status, r.nextAttemptAt, r.statusCode, r.error, now, c.id, c.leaseToken],
    );
    const endpointId = rows[0]?.endpointId;
    if (endpointId === undefined) return false;
    const { rows: streak } = await client.query<{ since: number }>(
      `UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, $1) WHERE id = $2
       RETURNING failing_since AS since`,
      [now, endpointId],
    );
    const since = streak[0]?.since;
    const reason = disableReason({ gone: outcome.gone, failingSince: since, now, disableAfterMs });
    if (reason !== null) {
      await client.query(
        'UPDATE webhook_endpoints SET enabled = 0, disabled_reason = $1, updated_at = $2 WHERE id = $3',
        [reason, now, endpointId],
      );
      await client.query(
        `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL,
           last_error = coalesce(last_error, '${ENDPOINT_DISABLED}') WHERE endpoint_id = $1 AND status = 'pending'`,
        [endpointId],
      );
    }
    return true;
  }

  async stats(): Promise<QueueStats> {
    const [row] = await this.db.query<QueueStats>({
      text: `SELECT count(*)::int AS pending, min(d.created_at) AS "oldestCreatedAt" FROM webhook_deliveries d
             JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.status = 'pending' AND e.enabled = 1`,
    });
    return row ?? { pending: 0, oldestCreatedAt: null };
  }
}
