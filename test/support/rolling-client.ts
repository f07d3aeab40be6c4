/**
 * The rolling-restart client of test/scaleout.test.ts: sequential requests over fresh connections against a
 * changing set of instances, recording every answer, refusal, reset and hang, so a test can check that a
 * restart answered no 5xx and lost no acknowledged write.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/** What the client sees of a created pet. */
export interface Pet {
  id: number;
  name: string;
  categoryId: number;
  status: string;
}

export interface Ack {
  pet: Pet;
  at: number;
}

export interface Lost {
  startedAt: number;
  failedAt: number;
  base: string;
  /** The pet's name when the lost request was a POST, to check whether it was executed anyway. */
  postedName: string | undefined;
  error: string;
}

/**
 * Sequential POSTs and GETs, alternating between instances, each on a connection of its own (no
 * keep-alive, so "refused before it was sent" is unambiguous: connect() failed). A refused request is
 * retried on the next instance; any other failure is recorded as lost, never retried.
 */
export class RollingClient {
  readonly startedAt = performance.now();
  readonly acked: Ack[] = [];
  readonly serverErrors: string[] = [];
  readonly unexpected: string[] = [];
  readonly lost: Lost[] = [];
  readonly hangs: string[] = [];
  refusedRetries = 0;
  unroutable = 0;
  private responses = 0;
  private stopped = false;
  private turn = 0;

  constructor(
    private readonly key: string,
    private readonly bases: string[],
  ) {}

  replace(oldBase: string, newBase: string): void {
    const i = this.bases.indexOf(oldBase);
    assert.ok(i >= 0);
    this.bases[i] = newBase;
  }

  stop(): void {
    this.stopped = true;
  }

  async run(workers: number): Promise<void> {
    await Promise.all(Array.from({ length: workers }, (_, w) => this.worker(w)));
  }

  private async worker(w: number): Promise<void> {
    let lastId: number | undefined;
    for (let i = 0; !this.stopped; i++) {
      const post = i % 2 === 0;
      const name = `rolling ${w}-${i}`;
      const path = post ? '/pets' : lastId ? `/pets/${lastId}` : '/pets?limit=5';
      const first = this.turn++;
      let answered: { base: string; status: number; text: string } | undefined;
      let failed = false;
      for (let attempt = 0; attempt < this.bases.length && !answered && !failed; attempt++) {
        const base = this.bases[(first + attempt) % this.bases.length]!;
        const startedAt = performance.now();
        try {
          const body = post ? { name, categoryId: 1 + (i % 7) } : undefined;
          answered = { base, ...(await rawRequest(base, post ? 'POST' : 'GET', path, this.key, body)) };
        } catch (error) {
          const code = (error as { code?: string }).code;
          // Refused, or reset while connecting: the request was never sent, so it is safe to send elsewhere.
          if (
            code === 'ECONNREFUSED' ||
            (code === 'ECONNRESET' && (error as { syscall?: string }).syscall === 'connect')
          ) {
            this.refusedRetries++;
            continue;
          }
          failed = true;
          const message = `${code ?? ''} ${(error as Error).message}`;
          if (code === 'TIMEOUT') this.hangs.push(`${base}: ${message}`);
          else {
            const postedName = post ? name : undefined;
            this.lost.push({ startedAt, failedAt: performance.now(), base, postedName, error: message });
          }
        }
      }
      if (answered) {
        this.responses++;
        const { base, status, text } = answered;
        if (status >= 500) this.serverErrors.push(`${base} ${status} ${text}`);
        else if (status !== (post ? 201 : 200)) this.unexpected.push(`${base} ${path} ${status} ${text}`);
        else if (post) {
          const pet = JSON.parse(text) as Pet;
          if (pet.name !== name) this.unexpected.push(`${base} created ${text} for ${name}`);
          this.acked.push({ pet, at: performance.now() });
          lastId = pet.id;
        }
      } else if (!failed) {
        this.unroutable++;
        await sleep(20);
      }
    }
  }

  describeLost(l: Lost): string {
    return `${Math.round(l.startedAt - this.startedAt)}-${Math.round(l.failedAt - this.startedAt)} ms ${l.base} ${l.error}`;
  }

  summary(): string {
    return (
      `${this.responses} responses, ${this.acked.length} pets acknowledged, ${this.refusedRetries} refused ` +
      `connections retried elsewhere, ${this.lost.length} reset without an answer ` +
      `(${this.lost.map((l) => this.describeLost(l)).join('; ')}), ${this.serverErrors.length} 5xx, ` +
      `${this.unexpected.length} other unexpected answers, ${this.hangs.length} hangs`
    );
  }
}

/** One request on a fresh connection; rejects with the socket error's code, or TIMEOUT. */
export function rawRequest(
  base: string,
  method: string,
  path: string,
  key: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const url = new URL(base + path);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        agent: false,
        headers: {
          authorization: `Bearer ${key}`,
          connection: 'close',
          ...(payload === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
        },
        timeout: 10_000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () =>
      req.destroy(Object.assign(new Error(`${method} ${path}: no answer in 10 s`), { code: 'TIMEOUT' })),
    );
    req.on('error', reject);
    req.end(payload);
  });
}
