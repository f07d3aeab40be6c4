import type {
  CreateEndpointResult,
  EndpointChange,
  EndpointRecord,
  NewEndpoint,
  WebhookRepository,
} from './repository.js';
import { endpointCreation, endpointUpdate } from './decisions.js';
import { ENDPOINT_COLUMNS, isDuplicateUrl, toEndpoint, type EndpointRow } from './rows.js';
import { PostgresDeliveryQueue } from './queue.postgres.js';

/** Webhook endpoints on PostgreSQL; the delivery queue's methods come from PostgresDeliveryQueue. */
export class PostgresWebhookRepository extends PostgresDeliveryQueue implements WebhookRepository {
  async createEndpoint(
    accountId: number,
    e: NewEndpoint,
    now: number,
    maxEndpoints: number,
  ): Promise<CreateEndpointResult> {
    try {
      return await this.db.transaction(async (client): Promise<CreateEndpointResult> => {
        // Creations of one account queue on its row, so two cannot both see room for one more.
        await this.accounts.lockAccount(client, accountId);
        const { rows: count } = await client.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM webhook_endpoints WHERE account_id = $1',
          [accountId],
        );
        const creation = endpointCreation(count[0]!.n, maxEndpoints, e, now);
        if (creation.kind === 'limit') return creation;
        const { row: r } = creation;
        const { rows } = await client.query<EndpointRow>(
          `INSERT INTO webhook_endpoints (account_id, url, events, secret, orders_manage, granted_scopes,
             created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${ENDPOINT_COLUMNS}`,
          [accountId, r.url, r.events, r.secret, r.ordersManage, r.grantedScopes, r.createdAt, r.updatedAt],
        );
        return { kind: 'created', endpoint: toEndpoint(rows[0]!) };
      });
    } catch (error) {
      if (isDuplicateUrl(error)) return { kind: 'exists' };
      throw error;
    }
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
  ): Promise<EndpointRecord | 'exists' | undefined> {
    const u = endpointUpdate(c, now);
    let row: EndpointRow | undefined;
    try {
      [row] = await this.db.query<EndpointRow>({
        text: `UPDATE webhook_endpoints SET url = coalesce($1, url), events = coalesce($2, events),
               granted_scopes = coalesce($3, granted_scopes),
               enabled = coalesce($4::integer, enabled),
               disabled_reason = CASE WHEN $5::integer = 1 THEN $6::text ELSE disabled_reason END,
               failing_since = CASE WHEN $7::integer = 1 THEN NULL ELSE failing_since END,
               updated_at = $8
             WHERE id = $9 AND account_id = $10 RETURNING ${ENDPOINT_COLUMNS}`,
        values: [
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
        ],
      });
    } catch (error) {
      if (isDuplicateUrl(error)) return 'exists';
      throw error;
    }
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
}
