/**
 * Webhook test support: events appended to the outbox (as the change transactions do), and a
 * receiver on 127.0.0.1 that records every request and answers what the test says.
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Database } from '../../src/db/database.js';
import { buildEvent } from '../../src/modules/events/index.js';
import type { EventType } from '../../src/modules/events/schemas.js';
import { appendEvent } from './events.js';

/** Appends one event to the outbox with the events module's own builder and writer; returns its id and payload. */
export async function insertEvent(
  database: Database,
  event: { type: EventType; accountId?: number | null; createdAt?: number },
): Promise<{ id: string; payload: string }> {
  const built = buildEvent(
    event.type,
    { object: { id: 1, name: 'Rex' }, version: 1 },
    event.createdAt ?? Date.now(),
    event.accountId ?? null,
  );
  await appendEvent(database, built);
  return { id: built.id, payload: built.payload };
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
