import { runAsPromise } from '../../db/sqlite.js';
import type {
  CreateEndpointResult,
  EndpointChange,
  EndpointRecord,
  NewEndpoint,
  WebhookRepository,
} from './repository.js';
import { endpointCreation, endpointUpdate } from './decisions.js';
import { ENDPOINT_COLUMNS, isDuplicateUrl, toEndpoint, type EndpointRow } from './rows.js';
import { SqliteDeliveryQueue } from './queue.sqlite.js';

/** Webhook endpoints on SQLite; the delivery queue's methods come from SqliteDeliveryQueue. */
export class SqliteWebhookRepository extends SqliteDeliveryQueue implements WebhookRepository {
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

  createEndpoint(
    accountId: number,
    e: NewEndpoint,
    now: number,
    maxEndpoints: number,
  ): Promise<CreateEndpointResult> {
    // One writer at a time (BEGIN IMMEDIATE): the count and the insert cannot interleave with another's.
    return this.database.write(() =>
      this.db
        .transaction((): CreateEndpointResult => {
          const held = this.db
            .prepare<[number], number>('SELECT count(*) FROM webhook_endpoints WHERE account_id = ?')
            .pluck(true)
            .get(accountId)!;
          const creation = endpointCreation(held, maxEndpoints, e, now);
          if (creation.kind === 'limit') return creation;
          const { row: r } = creation;
          try {
            const row = this.db
              .prepare<unknown[], EndpointRow>(
                `INSERT INTO webhook_endpoints (account_id, url, events, secret, orders_manage, granted_scopes,
                   created_at, updated_at)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${ENDPOINT_COLUMNS}`,
              )
              .get(
                accountId,
                r.url,
                r.events,
                r.secret,
                r.ordersManage,
                r.grantedScopes,
                r.createdAt,
                r.updatedAt,
              )!;
            return { kind: 'created', endpoint: toEndpoint(row) };
          } catch (error) {
            if (isDuplicateUrl(error)) return { kind: 'exists' };
            throw error;
          }
        })
        .immediate(),
    );
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
  ): Promise<EndpointRecord | 'exists' | undefined> {
    const u = endpointUpdate(c, now);
    return this.database.write(() => {
      const update = this.db.prepare<unknown[], EndpointRow>(
        `UPDATE webhook_endpoints SET url = coalesce(?, url), events = coalesce(?, events),
             granted_scopes = coalesce(?, granted_scopes), enabled = coalesce(?, enabled),
             disabled_reason = CASE WHEN ? = 1 THEN ? ELSE disabled_reason END,
             failing_since = CASE WHEN ? = 1 THEN NULL ELSE failing_since END,
             updated_at = ?
           WHERE id = ? AND account_id = ? RETURNING ${ENDPOINT_COLUMNS}`,
      );
      let row: EndpointRow | undefined;
      try {
        row = update.get(
          u.url,
          u.events,
          u.grantedScopes,
          u.enabled,
          u.setReason,
          u.disabledReason,
          u.clearFailingSince,
          u.updatedAt,
          id,
          accountId,
        );
      } catch (error) {
        if (isDuplicateUrl(error)) return 'exists';
        throw error;
      }
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
}
