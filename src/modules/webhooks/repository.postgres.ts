import type { PostgresDatabase } from '../../db/postgres.js';
import type { PoolClient } from 'pg';
import {
  endpointWants,
  formatEvents,
  type AttemptOutcome,
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
 * Every instance dispatches: fan-out and claims lock the rows they take with FOR UPDATE SKIP LOCKED, so two
 * dispatchers never take the same event or delivery and never wait for each other.
 */
export class PostgresWebhookRepository implements WebhookRepository {
  constructor(private readonly db: PostgresDatabase) {}

  async createEndpoint(accountId: number, e: NewEndpoint, now: number): Promise<EndpointRecord> {
    const [row] = await this.db.query<EndpointRow>({
      text: `INSERT INTO webhook_endpoints (account_id, url, events, secret, orders_manage, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING ${ENDPOINT_COLUMNS}`,
      values: [accountId, e.url, formatEvents(e.events), e.secret, e.ordersManage ? 1 : 0, now],
    });
    return toEndpoint(row!);
  }

  async listEndpoints(q: { accountId?: number; afterId?: number; limit: number }): Promise<EndpointRecord[]> {
    const rows = await this.db.query<EndpointRow>({
      text: `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id > $1 AND ($2::bigint IS NULL OR account_id = $2)
             ORDER BY id LIMIT $3`,
      values: [q.afterId ?? 0, q.accountId ?? null, q.limit],
    });
    return rows.map(toEndpoint);
  }

  async getEndpoint(accountId: number | undefined, id: number): Promise<EndpointRecord | undefined> {
    const [row] = await this.db.query<EndpointRow>({
      text: `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND ($2::bigint IS NULL OR account_id = $2)`,
      values: [id, accountId ?? null],
    });
    return row && toEndpoint(row);
  }

  async updateEndpoint(
    accountId: number,
    id: number,
    c: EndpointChange,
    now: number,
  ): Promise<EndpointRecord | undefined> {
    const enabled = c.enabled === undefined ? null : c.enabled ? 1 : 0;
    const [row] = await this.db.query<EndpointRow>({
      text: `UPDATE webhook_endpoints SET url = coalesce($1, url), events = coalesce($2, events),
               enabled = coalesce($3::integer, enabled),
               disabled_reason = CASE WHEN $3::integer IS NULL THEN disabled_reason WHEN $3::integer = 1 THEN NULL
                 ELSE 'disabled by the account' END,
               failing_since = CASE WHEN $3::integer = 1 THEN NULL ELSE failing_since END,
               updated_at = $4
             WHERE id = $5 AND account_id = $6 RETURNING ${ENDPOINT_COLUMNS}`,
      values: [c.url ?? null, c.events ? formatEvents(c.events) : null, enabled, now, id, accountId],
    });
    return row && toEndpoint(row);
  }

  async deleteEndpoint(accountId: number, id: number): Promise<boolean> {
    const n = await this.db.execute({
      text: 'DELETE FROM webhook_endpoints WHERE id = $1 AND account_id = $2',
      values: [id, accountId],
    });
    return n > 0;
  }

  async rotateSecret(
    accountId: number,
    id: number,
    secret: string,
    previousExpiresAt: number,
    now: number,
  ): Promise<EndpointRecord | undefined> {
    const [row] = await this.db.query<EndpointRow>({
      text: `UPDATE webhook_endpoints SET previous_secret = secret, previous_expires_at = $1, secret = $2, updated_at = $3
             WHERE id = $4 AND account_id = $5 RETURNING ${ENDPOINT_COLUMNS}`,
      values: [previousExpiresAt, secret, now, id, accountId],
    });
    return row && toEndpoint(row);
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

  fanOut(now: number, limit: number): Promise<number> {
    return this.db.transaction(async (client) => {
      const { rows: events } = await client.query<{
        seq: number;
        id: string;
        type: string;
        accountId: number | null;
      }>(
        `SELECT seq, id, type, account_id AS "accountId" FROM events WHERE dispatched = 0
         ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [limit],
      );
      if (events.length === 0) return 0;
      const { rows } = await client.query<EndpointRow>(
        `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE enabled = 1`,
      );
      const endpoints = rows.map(toEndpoint);
      const endpointIds: number[] = [];
      const eventIds: string[] = [];
      const types: string[] = [];
      for (const event of events) {
        for (const endpoint of endpoints) {
          if (!endpointWants(endpoint, event)) continue;
          endpointIds.push(endpoint.id);
          eventIds.push(event.id);
          types.push(event.type);
        }
      }
      if (endpointIds.length > 0) {
        await client.query(
          `INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, next_attempt_at, created_at)
           SELECT e, i, t, $4, $4 FROM unnest($1::bigint[], $2::text[], $3::text[]) AS x(e, i, t)
           ON CONFLICT (endpoint_id, event_id) DO NOTHING`,
          [endpointIds, eventIds, types, now],
        );
      }
      await client.query('UPDATE events SET dispatched = 1 WHERE seq = ANY($1::bigint[])', [
        events.map((e) => e.seq),
      ]);
      return events.length;
    });
  }

  async claim(q: ClaimQuery): Promise<ClaimedDelivery[]> {
    // Every enabled endpoint at its share: nothing can be claimed, and the due query would read the whole
    // backlog of the full ones to find so.
    if (q.busyEndpoints.length > 0) {
      const open = await this.db.query({
        text: 'SELECT 1 FROM webhook_endpoints WHERE enabled = 1 AND NOT (id = ANY($1::bigint[])) LIMIT 1',
        values: [q.busyEndpoints],
      });
      if (open.length === 0) return [];
    }
    const token = newLeaseToken();
    const rows = await this.db.query<ClaimRow>({
      text: `WITH due AS (
               SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
               WHERE d.status = 'pending' AND d.next_attempt_at <= $1 AND (d.lease_until IS NULL OR d.lease_until <= $1)
                 AND e.enabled = 1 AND NOT (d.endpoint_id = ANY($2::bigint[]))
               ORDER BY d.next_attempt_at, d.id LIMIT $3
               FOR UPDATE OF d SKIP LOCKED
             ), capped AS (
               -- At most the endpoint's room; the rows beyond are unlocked with the statement, not leased.
               SELECT id FROM (
                 SELECT d.id, d.endpoint_id,
                   row_number() OVER (PARTITION BY d.endpoint_id ORDER BY d.next_attempt_at, d.id) AS n
                 FROM webhook_deliveries d JOIN due ON due.id = d.id
               ) r
               WHERE $6::int IS NULL OR r.n <= $6::int - coalesce(($7::jsonb ->> r.endpoint_id::text)::int, 0)
             ), leased AS (
               UPDATE webhook_deliveries w SET lease_until = $4, lease_token = $5 FROM capped WHERE w.id = capped.id
               RETURNING w.id, w.endpoint_id, w.event_id, w.attempts
             )
             SELECT l.id, l.endpoint_id AS "endpointId", e.url, e.secret, e.previous_secret AS "previousSecret",
               e.previous_expires_at AS "previousExpiresAt", l.event_id AS "eventId", ev.payload, l.attempts
             FROM leased l JOIN webhook_endpoints e ON e.id = l.endpoint_id JOIN events ev ON ev.id = l.event_id`,
      values: [
        q.now,
        q.busyEndpoints,
        q.limit,
        q.leaseUntil,
        token,
        q.perEndpoint ?? null,
        JSON.stringify(q.inFlight ?? {}),
      ],
    });
    return rows.map((row) => toClaimed(row, token, q.now));
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
    const { rows } = await client.query<{ endpointId: number }>(
      `UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, next_attempt_at = $2, lease_until = NULL,
         lease_token = NULL, last_status_code = $3, last_error = $4, last_attempt_at = $5
       WHERE id = $6 AND lease_token = $7 RETURNING endpoint_id AS "endpointId"`,
      [
        outcome.nextAttemptAt === null ? 'failed' : 'pending',
        outcome.nextAttemptAt,
        outcome.statusCode,
        outcome.error,
        now,
        c.id,
        c.leaseToken,
      ],
    );
    const endpointId = rows[0]?.endpointId;
    if (endpointId === undefined) return false;
    const { rows: streak } = await client.query<{ since: number }>(
      `UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, $1) WHERE id = $2
       RETURNING failing_since AS since`,
      [now, endpointId],
    );
    const since = streak[0]?.since;
    const reason = outcome.gone
      ? 'the receiver answered 410 Gone'
      : since !== undefined && now - since >= disableAfterMs
        ? 'deliveries failed for 3 days'
        : null;
    if (reason !== null) {
      await client.query(
        'UPDATE webhook_endpoints SET enabled = 0, disabled_reason = $1, updated_at = $2 WHERE id = $3',
        [reason, now, endpointId],
      );
      await client.query(
        `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL,
           last_error = coalesce(last_error, 'endpoint disabled') WHERE endpoint_id = $1 AND status = 'pending'`,
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
