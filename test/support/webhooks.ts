/**
 * Webhook test support: events written straight into the outbox (as the change transactions do), and a
 * receiver on 127.0.0.1 that records every request and answers what the test says.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Database } from '../../src/db/database.js';
import type { PostgresDatabase } from '../../src/db/postgres.js';
import type { SqliteDatabase } from '../../src/db/sqlite.js';

/** Appends one event to `events` as E1's writers do; returns its id and the exact payload. */
export async function insertEvent(
  database: Database,
  event: { type: string; accountId?: number | null; createdAt?: number },
): Promise<{ id: string; payload: string }> {
  const id = `evt_${randomBytes(12).toString('hex')}`;
  const createdAt = event.createdAt ?? Date.now();
  const payload = JSON.stringify({
    id,
    type: event.type,
    timestamp: new Date(createdAt).toISOString(),
    data: { object: { id: 1, name: 'Rex' }, previous: {}, version: 1 },
  });
  const values = [id, event.type, event.accountId ?? null, payload, createdAt];
  if (database.kind === 'sqlite') {
    (database as SqliteDatabase).db
      .prepare('INSERT INTO events (id, type, account_id, payload, created_at) VALUES (?, ?, ?, ?, ?)')
      .run(...values);
  } else {
    await (database as PostgresDatabase).execute({
      text: 'INSERT INTO events (id, type, account_id, payload, created_at) VALUES ($1, $2, $3, $4, $5)',
      values,
    });
  }
  return { id, payload };
}

export interface ReceivedRequest {
  headers: Record<string, string>;
  body: string;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  /** Never answer (a hanging receiver). */
  hang?: boolean;
}

export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  /** Answers in order; when empty, 200. */
  readonly answers: Answer[] = [];
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = this.answers.shift() ?? { status: 200 };
      this.requests.push({
        headers: req.headers as Record<string, string>,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      this.server.emit('received');
      if (answer.hang) return;
      res.writeHead(answer.status, answer.headers).end('ok');
    });
  });

  async start(): Promise<string> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  /** Resolves once `count` requests have arrived in all. */
  async waitFor(count: number): Promise<ReceivedRequest[]> {
    while (this.requests.length < count) await once(this.server, 'received');
    return this.requests;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
