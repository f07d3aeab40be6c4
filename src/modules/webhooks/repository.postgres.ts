import type {
  CreateEndpointResult,
  EndpointChange,
  EndpointRecord,
  NewEndpoint,
  WebhookRepository,
} from './repository.js';
import { formatEvents } from './rows.js';
import { ENDPOINT_COLUMNS, formatGranted, isDuplicateUrl, toEndpoint, type EndpointRow } from './rows.js';
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
        await client.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
        const { rows: count } = await client.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM webhook_endpoints WHERE account_id = $1',
          [accountId],
        );
        if (count[0]!.n >= maxEndpoints) return { kind: 'limit', limit: maxEndpoints };
        const { rows } = await client.query<EndpointRow>(
          `INSERT INTO webhook_endpoints (account_id, url, events, secret, orders_manage, granted_scopes,
             created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING ${ENDPOINT_COLUMNS}`,
          [
            accountId,
            e.url,
            formatEvents(e.events),
            e.secret,
            e.ordersManage ? 1 : 0,
            formatGranted(e.grantedScopes),
            now,
          ],
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
    const enabled = c.enabled === undefined ? null : c.enabled ? 1 : 0;
    let row: EndpointRow | undefined;
    try {
      [row] = await this.db.query<EndpointRow>({
        text: `UPDATE webhook_endpoints SET url = coalesce($1, url), events = coalesce($2, events),
               granted_scopes = coalesce($7, granted_scopes),
               enabled = coalesce($3::integer, enabled),
               disabled_reason = CASE WHEN $3::integer IS NULL THEN disabled_reason WHEN $3::integer = 1 THEN NULL
                 ELSE 'disabled by the account' END,
               failing_since = CASE WHEN $3::integer = 1 THEN NULL ELSE failing_since END,
               updated_at = $4
             WHERE id = $5 AND account_id = $6 RETURNING ${ENDPOINT_COLUMNS}`,
        values: [
          c.url ?? null,
          c.events ? formatEvents(c.events) : null,
          enabled,
          now,
          id,
          accountId,
          formatGranted(c.grantedScopes),
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
